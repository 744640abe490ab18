//! The graphs the tree executor runs: one float input `[N, features]`, tree operators
//! (`TreeEnsembleClassifier`, `TreeEnsembleRegressor`, opset 5's `TreeEnsemble`), and the small
//! operators converters put around them (Cast, Identity, ZipMap, ArrayFeatureExtractor, Gather of
//! columns, Concat, Reshape, ArgMax, Normalizer, Scaler, LabelEncoder, OneHotEncoder, and
//! Mul/Add/Sub/Div by a constant). [`Graph::read`] refuses any other graph, naming the first
//! operator (or input, or attribute) it does not cover.
//!
//! Every value is held as `[N, columns]`, row-major. At read time each value's element type and
//! dimensions after the batch are followed, and an operator is covered only where it acts on each
//! row alone (Concat and Gather along a row, a Reshape keeping the batch dimension), so that the
//! row-major data is what ONNX Runtime computes.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use tract_onnx::pb::{type_proto, ModelProto, NodeProto};

use super::attributes::{operator_name, tensor_floats, tensor_ints, Attributes, Uncovered};
use super::encoders::{f32_to_i64, LabelEncoder, OneHotEncoder};
use super::ensemble::{ClassLabels, Ensemble, Kind};
use super::value::{Elem, RunError, Value};
use crate::outputs::ClassKey;

/// A value's element type and its dimensions after the batch dimension.
#[derive(Debug, Clone, PartialEq)]
struct Meta {
    elem: Elem,
    dims: Vec<usize>,
}

/// What each node computes.
#[derive(Debug, Clone)]
enum Op {
    Trees(Box<Ensemble>),
    /// Identity, and a Reshape that keeps each row's values in order.
    Identity,
    /// Cast to float (1), int64 (7) or string (8).
    Cast(i64),
    ZipMap(Arc<Vec<ClassKey>>),
    /// Column indices (ArrayFeatureExtractor, Gather along the row).
    Extract(Vec<usize>),
    /// Each row's values of every input, one after the other.
    Concat,
    /// The position of each row's largest value (its first).
    ArgMax,
    Label(Box<LabelEncoder>),
    OneHot(Box<OneHotEncoder>),
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
    /// Slots read.
    inputs: Vec<usize>,
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
        let proto: ModelProto = crate::onnx::external::read_model(path).map_err(|e| Uncovered {
            operator: "the file".into(),
            node: String::new(),
            why: match e {
                crate::error::ModelError::Onnx { message, .. } => message,
                other => other.to_string(),
            },
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
        let ml_opset = proto.opset_import.iter().find(|o| o.domain == "ai.onnx.ml").map_or(1, |o| o.version);
        let mut slot_of: HashMap<String, usize> = HashMap::new();
        slot_of.insert(input.name.clone(), 0);
        let mut metas = vec![Meta { elem: Elem::Float, dims: vec![width] }];
        let mut steps = Vec::new();
        let mut operators = Vec::new();
        let mut trees = 0;
        for node in &graph.node {
            let a = Attributes::of(node);
            // The values it reads (computed before it), by position among its inputs; the other
            // inputs are constants.
            let mut data = Vec::new();
            for (k, name) in node.input.iter().enumerate() {
                if let Some(&slot) = slot_of.get(name) {
                    data.push((k, slot));
                } else if !name.is_empty() && !constants.contains_key(name.as_str()) {
                    return Err(a.uncovered(format!("its input {name} is not computed before it")));
                }
            }
            let concat = node.op_type == "Concat" && (node.domain.is_empty() || node.domain == "ai.onnx");
            match data.as_slice() {
                [] => return Err(a.uncovered("it reads no computed value")),
                [(0, _)] => {}
                [(k, _)] => return Err(a.uncovered(format!("its input {k} is computed and its first is a constant"))),
                _ if concat => {}
                _ => return Err(a.uncovered(format!("it reads {} computed values", data.len()))),
            }
            let inputs: Vec<usize> = data.iter().map(|&(_, slot)| slot).collect();
            let metas_in: Vec<&Meta> = inputs.iter().map(|&slot| &metas[slot]).collect();
            let constant = |k: usize| node.input.get(k).and_then(|name| constants.get(name.as_str()).copied());
            let (op, produced) = op_of(node, &a, &constant, &metas_in, ml_opset)?;
            if let Op::Trees(e) = &op {
                trees += e.trees();
            }
            if node.output.len() > produced.len() {
                return Err(a.uncovered(format!("it has {} outputs", node.output.len())));
            }
            let mut outputs = Vec::new();
            for (name, meta) in node.output.iter().zip(produced) {
                slot_of.insert(name.clone(), metas.len());
                outputs.push(metas.len());
                metas.push(meta);
            }
            let name = operator_name(node);
            if !operators.contains(&name) {
                operators.push(name);
            }
            steps.push(Step { op, inputs, outputs });
        }
        let slots = metas.len();
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
    pub fn run(&self, x: Vec<f32>, rows: usize, wanted: &[usize]) -> Result<Vec<Value>, RunError> {
        let mut needed = vec![false; self.slots];
        for &w in wanted {
            needed[self.outputs[w].1] = true;
        }
        let mut live = vec![false; self.steps.len()];
        for (i, step) in self.steps.iter().enumerate().rev() {
            if step.outputs.iter().any(|&o| needed[o]) {
                live[i] = true;
                step.inputs.iter().for_each(|&input| needed[input] = true);
            }
        }
        let mut values: Vec<Option<Value>> = vec![None; self.slots];
        values[0] = Some(Value::Floats { values: x, columns: self.width });
        for (step, _) in self.steps.iter().zip(&live).filter(|(_, l)| **l) {
            let inputs =
                step.inputs.iter().map(|&i| values[i].as_ref().ok_or(RunError::NotComputed("input"))).collect::<Result<Vec<_>, _>>()?;
            let results = apply(&step.op, &inputs, rows)?;
            for (slot, value) in step.outputs.iter().zip(results) {
                values[*slot] = Some(value);
            }
        }
        wanted.iter().map(|&w| values[self.outputs[w].1].clone().ok_or(RunError::NotComputed("output"))).collect()
    }
}

/// The operator of `node` reading values `input`, and the element type and dimensions of each of
/// its outputs; `ml_opset` is the graph's ai.onnx.ml opset.
fn op_of<'a>(
    node: &NodeProto,
    a: &Attributes<'_>,
    constant: &dyn Fn(usize) -> Option<&'a tract_onnx::pb::TensorProto>,
    input: &[&Meta],
    ml_opset: i64,
) -> Result<(Op, Vec<Meta>), Uncovered> {
    let ml = node.domain == "ai.onnx.ml";
    let default = node.domain.is_empty() || node.domain == "ai.onnx";
    let first = input[0];
    let same = |elem: Elem| vec![Meta { elem, dims: first.dims.clone() }];
    // A row of values (`[N, C]`): what tree operators and row-wise selections read.
    let row = || match first.dims.as_slice() {
        [columns] => Ok(*columns),
        dims => Err(a.uncovered(format!("its input has dimensions [N, {dims:?}], not [N, C]"))),
    };
    let numbers = |what: &str| match first.elem {
        Elem::Float | Elem::Int => Ok(()),
        other => Err(a.uncovered(format!("{what} of a {other:?} value"))),
    };
    Ok(match (node.op_type.as_str(), ml, default) {
        (kind @ ("TreeEnsembleClassifier" | "TreeEnsembleRegressor" | "TreeEnsemble"), true, _) => {
            let columns = row()?;
            if first.elem != Elem::Float {
                return Err(a.uncovered(format!("its input is {:?}, not float", first.elem)));
            }
            let ensemble = if kind == "TreeEnsemble" { Ensemble::from_opset5(node)? } else { Ensemble::from_node(node)? };
            if ensemble.layout.max_feature >= columns {
                return Err(a.uncovered(format!("it reads feature {} of {columns}", ensemble.layout.max_feature)));
            }
            let scores = Meta { elem: Elem::Float, dims: vec![ensemble.outputs] };
            let metas = match &ensemble.kind {
                Kind::Classifier { labels, .. } => {
                    let elem = if matches!(labels, ClassLabels::Texts(_)) { Elem::Text } else { Elem::Int };
                    vec![Meta { elem, dims: vec![] }, scores]
                }
                Kind::Regressor { .. } => vec![scores],
            };
            (Op::Trees(Box::new(ensemble)), metas)
        }
        ("Identity", _, true) => (Op::Identity, same(first.elem)),
        ("Cast", _, true) => match a.int("to", 0) {
            1 => (Op::Cast(1), same(Elem::Float)),
            7 => (Op::Cast(7), same(Elem::Int)),
            8 => (Op::Cast(8), same(Elem::Text)),
            other => return Err(a.uncovered(format!("cast to element type {other} (only float, int64 and string are covered)"))),
        },
        ("ZipMap", true, _) => {
            let strings = a.strings("classlabels_strings");
            let keys: Vec<ClassKey> = if strings.is_empty() {
                a.ints("classlabels_int64s").into_iter().map(ClassKey::Int).collect()
            } else {
                strings.into_iter().map(ClassKey::Text).collect()
            };
            let n = keys.len();
            (Op::ZipMap(Arc::new(keys)), vec![Meta { elem: Elem::Map, dims: vec![n] }])
        }
        ("ArrayFeatureExtractor", true, _) => {
            let columns = row()?;
            let indices = constant(1).and_then(tensor_ints).ok_or_else(|| a.uncovered("its indices are not a constant integer tensor"))?;
            let indices = indices
                .into_iter()
                .map(|i| {
                    usize::try_from(i).ok().filter(|&i| i < columns).ok_or_else(|| a.uncovered(format!("index {i} of {columns} columns")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let n = indices.len();
            (Op::Extract(indices), vec![Meta { elem: first.elem, dims: vec![n] }])
        }
        ("Gather", _, true) => {
            let columns = row()?;
            if a.int("axis", 0) != 1 && a.int("axis", 0) != -1 {
                return Err(a.uncovered(format!("axis {} (only columns, axis 1, are covered)", a.int("axis", 0))));
            }
            let tensor = constant(1).ok_or_else(|| a.uncovered("its indices are not a constant"))?;
            let indices = tensor_ints(tensor).ok_or_else(|| a.uncovered("its indices are not integers"))?;
            let indices = indices
                .into_iter()
                .map(|i| {
                    let at = if i < 0 { i + columns as i64 } else { i };
                    usize::try_from(at).ok().filter(|&i| i < columns).ok_or_else(|| a.uncovered(format!("index {i} of {columns} columns")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            // Indices of shape [k] give [N, k]; a scalar index drops the axis.
            let dims = match tensor.dims.as_slice() {
                [] => vec![],
                [k] => vec![*k as usize],
                other => return Err(a.uncovered(format!("indices of shape {other:?}"))),
            };
            (Op::Extract(indices), vec![Meta { elem: first.elem, dims }])
        }
        ("Concat", _, true) => {
            let rank = first.dims.len() as i64 + 1;
            let axis = a.int("axis", 0);
            let axis = if axis < 0 { axis + rank } else { axis };
            if axis <= 0 || axis >= rank {
                return Err(
                    a.uncovered(format!("axis {} of a value of {rank} dimensions (only axes within a row are covered)", a.int("axis", 0)))
                );
            }
            let k = (axis - 1) as usize;
            // Along a row only when the dimensions before the axis are all 1.
            if first.dims[..k].iter().any(|&d| d != 1) {
                return Err(a.uncovered(format!("axis {axis} of dimensions [N, {:?}]", first.dims)));
            }
            let mut dims = first.dims.clone();
            dims[k] = 0;
            for m in input {
                let fits = m.elem == first.elem
                    && m.dims.len() == first.dims.len()
                    && m.dims.iter().zip(&first.dims).enumerate().all(|(j, (x, y))| j == k || x == y);
                if !fits || !matches!(m.elem, Elem::Float | Elem::Int) {
                    return Err(a.uncovered(format!("inputs of {:?} [N, {:?}] and {:?} [N, {:?}]", first.elem, first.dims, m.elem, m.dims)));
                }
                dims[k] += m.dims[k];
            }
            (Op::Concat, vec![Meta { elem: first.elem, dims }])
        }
        ("Reshape", _, true) => {
            let shape = constant(1).and_then(tensor_ints).ok_or_else(|| a.uncovered("its shape is not a constant integer tensor"))?;
            let size: usize = first.dims.iter().product();
            // The batch dimension kept (-1 or 0 first), the rest resolved against a row's size.
            let Some((&batch, rest)) = shape.split_first() else { return Err(a.uncovered("an empty shape")) };
            let mut dims = Vec::new();
            let mut infer = None;
            for (j, &d) in rest.iter().enumerate() {
                match d {
                    0 if a.int("allowzero", 0) == 0 => {
                        dims.push(*first.dims.get(j).ok_or_else(|| a.uncovered(format!("shape {shape:?}")))?);
                    }
                    -1 if infer.is_none() && batch == 0 => {
                        infer = Some(j);
                        dims.push(1);
                    }
                    d if d > 0 => dims.push(d as usize),
                    _ => return Err(a.uncovered(format!("shape {shape:?} (the batch dimension must stay first)"))),
                }
            }
            if !(batch == -1 || batch == 0 && a.int("allowzero", 0) == 0) {
                return Err(a.uncovered(format!("shape {shape:?} (the batch dimension must stay first)")));
            }
            let known: usize = dims.iter().product();
            if let Some(j) = infer {
                if known == 0 || size % known != 0 {
                    return Err(a.uncovered(format!("shape {shape:?} of rows of {size} values")));
                }
                dims[j] = size / known;
            } else if known != size {
                return Err(a.uncovered(format!("shape {shape:?} of rows of {size} values")));
            }
            (Op::Identity, vec![Meta { elem: first.elem, dims }])
        }
        ("ArgMax", _, true) => {
            row()?;
            if first.elem != Elem::Float {
                return Err(a.uncovered(format!("ArgMax of a {:?} value", first.elem)));
            }
            if !matches!(a.int("axis", 0), 1 | -1) || a.int("select_last_index", 0) != 0 {
                return Err(a.uncovered("only the first largest value along a row (axis 1) is covered"));
            }
            let dims = if a.int("keepdims", 1) != 0 { vec![1] } else { vec![] };
            (Op::ArgMax, vec![Meta { elem: Elem::Int, dims }])
        }
        ("LabelEncoder", true, _) => {
            let (encoder, elem) = LabelEncoder::read(node, first.elem, ml_opset)?;
            (Op::Label(Box::new(encoder)), same(elem))
        }
        ("OneHotEncoder", true, _) => {
            if first.dims.len() > 1 || first.elem == Elem::Map {
                return Err(a.uncovered(format!("its input has dimensions [N, {:?}]", first.dims)));
            }
            let encoder = OneHotEncoder::read(node)?;
            let mut dims = first.dims.clone();
            dims.push(encoder.count);
            (Op::OneHot(Box::new(encoder)), vec![Meta { elem: Elem::Float, dims }])
        }
        ("Normalizer", true, _) => {
            numbers("Normalizer")?;
            let norm = match a.string("norm", "MAX").as_str() {
                "MAX" => Norm::Max,
                "L1" => Norm::L1,
                "L2" => Norm::L2,
                other => return Err(a.uncovered(format!("norm {other:?}"))),
            };
            (Op::Normalize(norm), same(Elem::Float))
        }
        ("Scaler", true, _) => {
            numbers("Scaler")?;
            (Op::Scale { offset: a.floats("offset"), scale: a.floats("scale") }, same(Elem::Float))
        }
        (name @ ("Add" | "Sub" | "Mul" | "Div"), _, true) => {
            let op = match name {
                "Add" => Arith::Add,
                "Sub" => Arith::Sub,
                "Mul" => Arith::Mul,
                _ => Arith::Div,
            };
            let c = constant(1).and_then(tensor_floats).ok_or_else(|| a.uncovered("its second operand is not a constant float tensor"))?;
            if first.elem != Elem::Float {
                return Err(a.uncovered(format!("arithmetic on a {:?} value", first.elem)));
            }
            (Op::Arithmetic { op, constant: c }, same(Elem::Float))
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

fn apply(op: &Op, inputs: &[&Value], rows: usize) -> Result<Vec<Value>, RunError> {
    let input = inputs[0];
    let floats = |what: &'static str| match input {
        Value::Floats { values, columns } => Ok((values.clone(), *columns)),
        Value::Ints { values, columns } => Ok((values.iter().map(|&v| v as f32).collect(), *columns)),
        _ => Err(RunError::NeedsNumbers(what)),
    };
    Ok(match op {
        Op::Identity => vec![input.clone()],
        Op::Trees(ensemble) => {
            let Value::Floats { values, columns } = input else { return Err(RunError::NeedsFloats("a tree ensemble")) };
            if ensemble.layout.max_feature >= *columns {
                return Err(RunError::FeatureOutOfRange { feature: ensemble.layout.max_feature, columns: *columns });
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
            (7, Value::Floats { values, columns }) => {
                Value::Ints { values: values.iter().map(|&v| f32_to_i64(v)).collect(), columns: *columns }
            }
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
            (to, _) => return Err(RunError::Cast(*to)),
        }],
        Op::ZipMap(keys) => {
            let (values, columns) = floats("ZipMap")?;
            if columns != keys.len() {
                return Err(RunError::ZipMapClasses { columns, classes: keys.len() });
            }
            vec![Value::Maps { values, keys: Arc::clone(keys) }]
        }
        Op::Extract(indices) => {
            let columns = columns_of(input, rows);
            if let Some(i) = indices.iter().find(|&&i| i >= columns) {
                return Err(RunError::ExtractorIndex { index: *i, columns });
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
                Value::Maps { .. } => return Err(RunError::OfAMap("ArrayFeatureExtractor")),
            }]
        }
        Op::Concat => vec![concat(inputs, rows)?],
        Op::ArgMax => {
            let Value::Floats { values, columns } = input else { return Err(RunError::NeedsFloats("ArgMax")) };
            let best = values
                .chunks_exact((*columns).max(1))
                .map(|row| (1..row.len()).fold(0, |best, k| if row[k] > row[best] { k } else { best }) as i64)
                .collect();
            vec![Value::Ints { values: best, columns: 1 }]
        }
        Op::Label(encoder) => vec![encoder.apply(input)?],
        Op::OneHot(encoder) => vec![encoder.apply(input)?],
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
            let Value::Floats { values, columns } = input else { return Err(RunError::NeedsFloats("arithmetic")) };
            let columns = *columns;
            if constant.len() != 1 && constant.len() != columns {
                return Err(RunError::ConstantWidth { values: constant.len(), columns });
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

/// Each row's values of every input, one input after the other (inputs of one element type,
/// numbers).
fn concat(inputs: &[&Value], rows: usize) -> Result<Value, RunError> {
    fn rows_of<T: Copy>(parts: &[(&Vec<T>, usize)], rows: usize) -> (Vec<T>, usize) {
        let columns: usize = parts.iter().map(|p| p.1).sum();
        let mut out = Vec::with_capacity(rows * columns);
        for r in 0..rows {
            for (values, c) in parts {
                out.extend_from_slice(&values[r * c..(r + 1) * c]);
            }
        }
        (out, columns)
    }
    let floats: Option<Vec<(&Vec<f32>, usize)>> =
        inputs.iter().map(|v| if let Value::Floats { values, columns } = v { Some((values, *columns)) } else { None }).collect();
    if let Some(parts) = floats {
        let (values, columns) = rows_of(&parts, rows);
        return Ok(Value::Floats { values, columns });
    }
    let ints: Option<Vec<(&Vec<i64>, usize)>> =
        inputs.iter().map(|v| if let Value::Ints { values, columns } = v { Some((values, *columns)) } else { None }).collect();
    match ints {
        Some(parts) => {
            let (values, columns) = rows_of(&parts, rows);
            Ok(Value::Ints { values, columns })
        }
        None => Err(RunError::ConcatTypes),
    }
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
