//! The graphs the tree executor runs: one float input `[N, features]`, tree operators, and the small
//! operators converters put around them (Cast, Identity, ZipMap, ArrayFeatureExtractor, Normalizer,
//! Scaler, and Mul/Add/Sub/Div by a constant). [`Graph::read`] refuses any other graph, naming the
//! first operator (or input, or attribute) it does not cover.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use tract_onnx::pb::{type_proto, ModelProto, NodeProto};
use tract_onnx::prelude::Framework;

use super::attributes::{operator_name, tensor_floats, tensor_ints, Attributes, Uncovered};
use super::ensemble::{ClassLabels, Ensemble, Kind};
use crate::models::model_outputs::ClassKey;

/// A value flowing through the graph for a batch of rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A float tensor, `columns` per row.
    Floats {
        /// Row-major values.
        values: Vec<f32>,
        /// Values per row.
        columns: usize,
    },
    /// An integer tensor.
    Ints {
        /// Row-major values.
        values: Vec<i64>,
        /// Values per row.
        columns: usize,
    },
    /// A string tensor, as indices into a table.
    Texts {
        /// Row-major indices into `table`.
        index: Vec<u32>,
        /// The strings.
        table: Arc<Vec<String>>,
        /// Values per row.
        columns: usize,
    },
    /// A ZipMap's output: one map from class to probability per row, kept as the probabilities
    /// in `keys` order.
    Maps {
        /// Row-major probabilities.
        values: Vec<f32>,
        /// The classes, one per column.
        keys: Arc<Vec<ClassKey>>,
    },
}

/// What each node computes.
#[derive(Debug, Clone)]
enum Op {
    Trees(Box<Ensemble>),
    Identity,
    /// Cast to float (1), int64 (7) or string (8).
    Cast(i64),
    ZipMap(Arc<Vec<ClassKey>>),
    /// Column indices.
    Extract(Vec<usize>),
    Normalize(Norm),
    Scale {
        offset: Vec<f32>,
        scale: Vec<f32>,
    },
    /// Element-wise with a constant broadcast along the row.
    Arithmetic {
        op: Arith,
        constant: Vec<f32>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Norm {
    Max,
    L1,
    L2,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Debug, Clone)]
struct Step {
    op: Op,
    /// Slots read (the first is the data).
    input: usize,
    /// Slots written, in the node's output order (`None`: an output nobody reads).
    outputs: Vec<usize>,
}

/// A graph the tree executor covers.
#[derive(Debug, Clone)]
pub struct Graph {
    steps: Vec<Step>,
    /// The graph's outputs: name and slot.
    outputs: Vec<(String, usize)>,
    slots: usize,
    width: usize,
    trees: usize,
    operators: Vec<String>,
}

impl Graph {
    /// Read the ONNX file at `path` for rows of `width` features.
    pub fn read(path: &Path, width: usize) -> Result<Graph, Uncovered> {
        let proto: ModelProto = tract_onnx::onnx().proto_model_for_path(path).map_err(|e| Uncovered {
            operator: "the file".into(),
            node: String::new(),
            why: format!("not a readable ONNX file: {e:#}"),
        })?;
        Graph::from_proto(&proto, width)
    }

    /// Read `proto` for rows of `width` features.
    pub fn from_proto(proto: &ModelProto, width: usize) -> Result<Graph, Uncovered> {
        let whole = |why: String| Uncovered { operator: "the graph".into(), node: String::new(), why };
        let graph = proto.graph.as_ref().ok_or_else(|| whole("the file holds no graph".into()))?;
        let constants: HashMap<&str, &tract_onnx::pb::TensorProto> = graph.initializer.iter().map(|t| (t.name.as_str(), t)).collect();
        let inputs: Vec<_> = graph.input.iter().filter(|i| !constants.contains_key(i.name.as_str())).collect();
        let [input] = inputs.as_slice() else {
            return Err(whole(format!("it has {} inputs; the tree executor reads one float tensor", inputs.len())));
        };
        match input.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(type_proto::Value::TensorType(t)) if t.elem_type == 1 => {
                use tract_onnx::pb::tensor_shape_proto::dimension::Value as Dim;
                let dims: Vec<Option<i64>> = t
                    .shape
                    .as_ref()
                    .map(|s| s.dim.iter().map(|d| if let Some(Dim::DimValue(v)) = d.value { Some(v) } else { None }).collect())
                    .unwrap_or_default();
                match dims.as_slice() {
                    [] | [_, None] => {}
                    [_, Some(w)] if *w == width as i64 => {}
                    [_, Some(w)] => {
                        return Err(whole(format!("its input {} takes {w} features; the data has {width}", input.name)));
                    }
                    _ => return Err(whole(format!("its input {} has shape {dims:?}, not [N, {width}]", input.name))),
                }
            }
            _ => return Err(whole(format!("its input {} is not a float32 tensor", input.name))),
        }
        let mut slot_of: HashMap<String, usize> = HashMap::new();
        slot_of.insert(input.name.clone(), 0);
        let mut slots = 1;
        let mut steps = Vec::new();
        let mut operators = Vec::new();
        let mut trees = 0;
        for node in &graph.node {
            let a = Attributes::of(node);
            let data = node.input.first().ok_or_else(|| a.uncovered("it has no input"))?;
            let input = *slot_of.get(data).ok_or_else(|| a.uncovered(format!("its input {data} is not computed before it")))?;
            let constant = |k: usize| node.input.get(k).and_then(|name| constants.get(name.as_str()).copied());
            let op = op_of(node, &a, &constant)?;
            if let Op::Trees(e) = &op {
                trees += e.trees();
                if e.layout.max_feature >= width {
                    return Err(a.uncovered(format!("it reads feature {} of {width}", e.layout.max_feature)));
                }
            }
            if !matches!(op, Op::Extract(_) | Op::Arithmetic { .. }) && node.input.len() > 1 {
                return Err(a.uncovered(format!("it has {} inputs", node.input.len())));
            }
            let mut outputs = Vec::new();
            for name in &node.output {
                slot_of.insert(name.clone(), slots);
                outputs.push(slots);
                slots += 1;
            }
            let name = operator_name(node);
            if !operators.contains(&name) {
                operators.push(name);
            }
            steps.push(Step { op, input, outputs });
        }
        let mut outputs = Vec::new();
        for output in &graph.output {
            let slot = *slot_of.get(&output.name).ok_or_else(|| whole(format!("its output {} is not computed", output.name)))?;
            outputs.push((output.name.clone(), slot));
        }
        if trees == 0 {
            return Err(whole("it holds no tree ensemble".into()));
        }
        Ok(Graph { steps, outputs, slots, width, trees, operators })
    }

    /// The graph's output names.
    pub fn output_names(&self) -> Vec<String> {
        self.outputs.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Trees in all its ensembles.
    pub fn trees(&self) -> usize {
        self.trees
    }

    /// The operators it uses, in graph order ("ai.onnx.ml.TreeEnsembleClassifier", …).
    pub fn operators(&self) -> &[String] {
        &self.operators
    }

    /// Features per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Run `rows` rows of `x` (row-major f32) and return the outputs at positions `wanted`
    /// (positions in [`Graph::output_names`]), computing only what they need.
    pub fn run(&self, x: Vec<f32>, rows: usize, wanted: &[usize]) -> Result<Vec<Value>, String> {
        let mut needed = vec![false; self.slots];
        for &w in wanted {
            needed[self.outputs[w].1] = true;
        }
        let mut live = vec![false; self.steps.len()];
        for (i, step) in self.steps.iter().enumerate().rev() {
            if step.outputs.iter().any(|&o| needed[o]) {
                live[i] = true;
                needed[step.input] = true;
            }
        }
        let mut values: Vec<Option<Value>> = vec![None; self.slots];
        values[0] = Some(Value::Floats { values: x, columns: self.width });
        for (step, _) in self.steps.iter().zip(&live).filter(|(_, l)| **l) {
            let input = values[step.input].as_ref().ok_or("an input was not computed")?;
            let results = apply(&step.op, input, rows)?;
            for (slot, value) in step.outputs.iter().zip(results) {
                values[*slot] = Some(value);
            }
        }
        wanted.iter().map(|&w| values[self.outputs[w].1].clone().ok_or_else(|| "an output was not computed".to_string())).collect()
    }
}

fn op_of<'a>(
    node: &NodeProto,
    a: &Attributes<'_>,
    constant: &dyn Fn(usize) -> Option<&'a tract_onnx::pb::TensorProto>,
) -> Result<Op, Uncovered> {
    let ml = node.domain == "ai.onnx.ml";
    let default = node.domain.is_empty() || node.domain == "ai.onnx";
    Ok(match (node.op_type.as_str(), ml, default) {
        ("TreeEnsembleClassifier" | "TreeEnsembleRegressor", true, _) => Op::Trees(Box::new(Ensemble::from_node(node)?)),
        ("Identity", _, true) => Op::Identity,
        ("Cast", _, true) => match a.int("to", 0) {
            to @ (1 | 7 | 8) => Op::Cast(to),
            other => return Err(a.uncovered(format!("cast to element type {other} (only float, int64 and string are covered)"))),
        },
        ("ZipMap", true, _) => {
            let strings = a.strings("classlabels_strings");
            let keys: Vec<ClassKey> = if strings.is_empty() {
                a.ints("classlabels_int64s").into_iter().map(ClassKey::Int).collect()
            } else {
                strings.into_iter().map(ClassKey::Text).collect()
            };
            Op::ZipMap(Arc::new(keys))
        }
        ("ArrayFeatureExtractor", true, _) => {
            let indices = constant(1).and_then(tensor_ints).ok_or_else(|| a.uncovered("its indices are not a constant integer tensor"))?;
            let indices =
                indices.into_iter().map(|i| usize::try_from(i).map_err(|_| a.uncovered(format!("index {i}")))).collect::<Result<_, _>>()?;
            Op::Extract(indices)
        }
        ("Normalizer", true, _) => Op::Normalize(match a.string("norm", "MAX").as_str() {
            "MAX" => Norm::Max,
            "L1" => Norm::L1,
            "L2" => Norm::L2,
            other => return Err(a.uncovered(format!("norm {other:?}"))),
        }),
        ("Scaler", true, _) => Op::Scale { offset: a.floats("offset"), scale: a.floats("scale") },
        (name @ ("Add" | "Sub" | "Mul" | "Div"), _, true) => {
            let op = match name {
                "Add" => Arith::Add,
                "Sub" => Arith::Sub,
                "Mul" => Arith::Mul,
                _ => Arith::Div,
            };
            let constant_first = constant(0).is_some();
            let c = constant(if constant_first { 0 } else { 1 })
                .and_then(tensor_floats)
                .ok_or_else(|| a.uncovered("its second operand is not a constant float tensor"))?;
            if constant_first {
                return Err(a.uncovered("a constant first operand"));
            }
            Op::Arithmetic { op, constant: c }
        }
        _ => return Err(a.uncovered("the tree executor does not run it")),
    })
}

fn columns_of(value: &Value, rows: usize) -> usize {
    match value {
        Value::Floats { columns, .. } | Value::Ints { columns, .. } | Value::Texts { columns, .. } => *columns,
        Value::Maps { keys, .. } => keys.len().max(usize::from(rows == 0)),
    }
}

fn apply(op: &Op, input: &Value, rows: usize) -> Result<Vec<Value>, String> {
    let floats = |what: &str| match input {
        Value::Floats { values, columns } => Ok((values.clone(), *columns)),
        Value::Ints { values, columns } => Ok((values.iter().map(|&v| v as f32).collect(), *columns)),
        _ => Err(format!("{what} needs a number tensor")),
    };
    Ok(match op {
        Op::Identity => vec![input.clone()],
        Op::Trees(ensemble) => {
            let Value::Floats { values, columns } = input else { return Err("a tree ensemble needs a float tensor".into()) };
            if ensemble.layout.max_feature >= *columns {
                return Err(format!("the tree ensemble reads feature {} of {columns}", ensemble.layout.max_feature));
            }
            let scored = ensemble.run(values, *columns, rows);
            let n = ensemble.outputs;
            let scores = Value::Floats { values: scored.scores, columns: n };
            match &ensemble.kind {
                Kind::Classifier { labels: ClassLabels::Ints(_), .. } => vec![Value::Ints { values: scored.labels, columns: 1 }, scores],
                Kind::Classifier { labels: ClassLabels::Texts(names), .. } => vec![
                    Value::Texts { index: scored.labels.iter().map(|&i| i as u32).collect(), table: Arc::new(names.clone()), columns: 1 },
                    scores,
                ],
                Kind::Regressor { .. } => vec![scores],
            }
        }
        Op::Cast(to) => vec![match (to, input) {
            (1, Value::Floats { .. }) | (7, Value::Ints { .. }) | (8, Value::Texts { .. }) => input.clone(),
            (1, Value::Ints { values, columns }) => Value::Floats { values: values.iter().map(|&v| v as f32).collect(), columns: *columns },
            (7, Value::Floats { values, columns }) => Value::Ints { values: values.iter().map(|&v| v as i64).collect(), columns: *columns },
            (8, Value::Ints { values, columns }) => {
                let mut table: Vec<String> = Vec::new();
                let mut index = Vec::with_capacity(values.len());
                for v in values {
                    let text = v.to_string();
                    let at = table.iter().position(|t| *t == text).unwrap_or_else(|| {
                        table.push(text);
                        table.len() - 1
                    });
                    index.push(at as u32);
                }
                Value::Texts { index, table: Arc::new(table), columns: *columns }
            }
            (to, _) => return Err(format!("cast of this value to element type {to}")),
        }],
        Op::ZipMap(keys) => {
            let (values, columns) = floats("ZipMap")?;
            if columns != keys.len() {
                return Err(format!("ZipMap of {columns} columns with {} classes", keys.len()));
            }
            vec![Value::Maps { values, keys: Arc::clone(keys) }]
        }
        Op::Extract(indices) => {
            let columns = columns_of(input, rows);
            if let Some(i) = indices.iter().find(|&&i| i >= columns) {
                return Err(format!("ArrayFeatureExtractor index {i} of {columns} columns"));
            }
            let pick = |r: usize| indices.iter().map(move |&i| r * columns + i);
            vec![match input {
                Value::Floats { values, .. } => {
                    Value::Floats { values: (0..rows).flat_map(pick).map(|k| values[k]).collect(), columns: indices.len() }
                }
                Value::Ints { values, .. } => {
                    Value::Ints { values: (0..rows).flat_map(pick).map(|k| values[k]).collect(), columns: indices.len() }
                }
                Value::Texts { index, table, .. } => Value::Texts {
                    index: (0..rows).flat_map(pick).map(|k| index[k]).collect(),
                    table: Arc::clone(table),
                    columns: indices.len(),
                },
                Value::Maps { .. } => return Err("ArrayFeatureExtractor of a map".into()),
            }]
        }
        Op::Normalize(norm) => {
            let (mut values, columns) = floats("Normalizer")?;
            for row in values.chunks_exact_mut(columns.max(1)) {
                normalize(*norm, row);
            }
            vec![Value::Floats { values, columns }]
        }
        Op::Scale { offset, scale } => {
            let (mut values, columns) = floats("Scaler")?;
            let at = |v: &Vec<f32>, j: usize| if v.len() == 1 { v[0] } else { v.get(j).copied().unwrap_or(0.0) };
            for row in values.chunks_exact_mut(columns.max(1)) {
                for (j, v) in row.iter_mut().enumerate() {
                    *v = (*v - at(offset, j)) * at(scale, j);
                }
            }
            vec![Value::Floats { values, columns }]
        }
        Op::Arithmetic { op, constant, .. } => {
            let Value::Floats { values, columns } = input else { return Err("arithmetic needs a float tensor".into()) };
            let columns = *columns;
            if constant.len() != 1 && constant.len() != columns {
                return Err(format!("a constant of {} values against {columns} columns", constant.len()));
            }
            let mut values = values.clone();
            for row in values.chunks_exact_mut(columns.max(1)) {
                for (j, v) in row.iter_mut().enumerate() {
                    let c = if constant.len() == 1 { constant[0] } else { constant[j] };
                    *v = match op {
                        Arith::Add => *v + c,
                        Arith::Sub => *v - c,
                        Arith::Mul => *v * c,
                        Arith::Div => *v / c,
                    };
                }
            }
            vec![Value::Floats { values, columns }]
        }
    })
}

/// ONNX Runtime's Normalizer on one row, in f32.
fn normalize(norm: Norm, row: &mut [f32]) {
    match norm {
        Norm::Max => {
            // std::max(max, v): v only when max < v.
            let max = row.iter().fold(f32::MIN, |m, &v| if m < v { v } else { m });
            if max != 0.0 {
                row.iter_mut().for_each(|v| *v /= max);
            }
        }
        Norm::L1 => {
            let mut sum = 0.0f32;
            row.iter().for_each(|v| sum += v.abs());
            if sum != 0.0 {
                row.iter_mut().for_each(|v| *v /= sum);
            }
        }
        Norm::L2 => {
            let mut sum = 0.0f32;
            row.iter().for_each(|v| sum += v * v);
            if sum != 0.0 {
                row.iter_mut().for_each(|v| {
                    let root = (*v * *v / sum).sqrt();
                    *v = if *v < 0.0 { -root } else { root };
                });
            }
        }
    }
}
