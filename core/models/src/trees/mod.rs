//! The native tree-ensemble executor (`executor = "native-trees"` in the summary): ONNX graphs made
//! of `TreeEnsembleClassifier` / `TreeEnsembleRegressor` / `TreeEnsemble` and the small operators converters put
//! around them, run in this process without ONNX Runtime, with ONNX Runtime's labels and
//! probabilities (its floating-point order; see [`ensemble`]).
//!
//! One job per file: [`attributes`] reads a node's attributes, [`opset5`] reads opset 5's
//! `TreeEnsemble` into the older operators' form, [`layout`] lays the trees out flat and walks rows
//! through them, [`ensemble`] combines the leaves as ONNX Runtime does, [`encoders`] computes
//! `LabelEncoder` and `OneHotEncoder`, [`value`] holds the values between operators, [`graph`] runs the operators of a covered graph and names
//! the first one it does not cover. [`TreeModel`]
//! is the [`Model`]: it reads P(favourable) from the chosen output with the same rules as the
//! ONNX Runtime executor ([`choose_output`]).

pub mod attributes;
pub mod encoders;
pub mod ensemble;
pub mod graph;
pub mod layout;
pub mod opset5;
pub mod value;

use std::path::{Path, PathBuf};

use rayon::prelude::*;

pub use attributes::Uncovered;
pub use graph::Graph;
pub use value::{RunError, Value};

use crate::error::ModelError;
use crate::inputs::ElementType;
use crate::outputs::{choose_output, ClassKey, OutputChoice, OutputReader, RawOutput, ReadRule};
use crate::Model;

/// Rows used at load time to choose and check the output.
const PROBE_ROWS: usize = 256;

/// Rows per task when a batch is spread over the cores.
const CHUNK: usize = 1024;

/// A tree model run natively.
pub struct TreeModel {
    path: PathBuf,
    graph: Graph,
    /// The output read, by position in the graph's outputs.
    output: usize,
    reader: OutputReader,
}

impl std::fmt::Debug for TreeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TreeModel({}, output {})", self.path.display(), self.reader.name)
    }
}

impl TreeModel {
    /// Load the covered graph `graph` (read from `path`) and choose its output as the ONNX Runtime
    /// executor does, on up to 256 of `probe` rows (row-major, the graph's width).
    pub fn load(path: &Path, graph: Graph, choice: OutputChoice<'_>, probe: &[f64]) -> Result<Self, ModelError> {
        let err = |message: String| ModelError::Onnx { path: path.to_path_buf(), message };
        let width = graph.width();
        let rows = (probe.len() / width.max(1)).min(PROBE_ROWS);
        if rows == 0 {
            return Err(err("no data rows to check the model's output on".into()));
        }
        let names = graph.output_names();
        let all: Vec<usize> = (0..names.len()).collect();
        let values = graph.run(to_f32(&probe[..rows * width]), rows, &all).map_err(|e| err(e.to_string()))?;
        let typed: Vec<(String, ElementType)> = names.iter().cloned().zip(values.iter().map(element_type)).collect();
        if let Some(wanted) = choice.name {
            if !names.iter().any(|n| n == wanted) {
                return Err(ModelError::MissingOutput {
                    model: path.display().to_string(),
                    wanted: wanted.to_string(),
                    outputs: format!("its outputs are {}", names.join(", ")),
                });
            }
        }
        let raw: Vec<Option<RawOutput>> = values.iter().map(|v| Some(raw_output(v, rows, true))).collect();
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let mut reader = choose_output(&file, &typed, &raw, &choice, rows, &|message| err(message))?;
        let output = names.iter().position(|n| *n == reader.name).unwrap_or(0);
        // A ZipMap is read as its probability columns (no map per row).
        if let (ReadRule::MapEntry(key), Value::Maps { keys, .. }) = (&reader.rule, &values[output]) {
            let column = keys.iter().position(|k| k == key).ok_or_else(|| err(format!("the ZipMap has no class {key}")))?;
            reader.rule = ReadRule::Column { column };
        }
        Ok(TreeModel { path: path.to_path_buf(), graph, output, reader })
    }

    /// The output read.
    pub fn output_name(&self) -> &str {
        &self.reader.name
    }

    /// How the output is read.
    pub fn reader(&self) -> &OutputReader {
        &self.reader
    }

    /// "native-trees (200 trees: ai.onnx.ml.TreeEnsembleClassifier, ai.onnx.ml.ZipMap)".
    pub fn executor(&self) -> String {
        format!("native-trees ({} trees: {})", self.graph.trees(), self.graph.operators().join(", "))
    }

    fn predict_chunk(&self, x: &[f64], out: &mut [f64], first_row: usize) -> Result<(), ModelError> {
        let rows = out.len();
        let mut values = self.graph.run(to_f32(x), rows, &[self.output]).map_err(|e| ModelError::Inference(e.to_string()))?;
        let value = values.pop().ok_or_else(|| ModelError::Inference("no output".into()))?;
        self.reader.read(raw_output(&value, rows, false), out, first_row)
    }
}

/// Every output of `graph` for the rows of `x` (row-major f64, cast to f32 as fed to ONNX
/// Runtime), in the graph's output order, in the form the ONNX Runtime executor reads them (a
/// ZipMap as one sorted map per row).
pub fn raw_outputs(graph: &Graph, x: &[f64]) -> Result<Vec<(String, RawOutput)>, RunError> {
    let rows = x.len() / graph.width().max(1);
    let names = graph.output_names();
    let all: Vec<usize> = (0..names.len()).collect();
    let values = graph.run(to_f32(x), rows, &all)?;
    Ok(names.into_iter().zip(values.iter().map(|v| raw_output(v, rows, true))).collect())
}

fn to_f32(x: &[f64]) -> Vec<f32> {
    x.iter().map(|&v| v as f32).collect()
}

fn element_type(value: &Value) -> ElementType {
    match value {
        Value::Floats { .. } | Value::Maps { .. } => ElementType::Float32,
        Value::Ints { .. } => ElementType::Int64,
        Value::Texts { .. } => ElementType::String,
    }
}

/// A value as the ONNX Runtime executor returns it: a one-column integer or string tensor as
/// labels, a ZipMap as maps (`maps`) or as its probability columns.
fn raw_output(value: &Value, rows: usize, maps: bool) -> RawOutput {
    match value {
        Value::Floats { values, columns } => {
            RawOutput::Floats { values: values.iter().map(|&v| f64::from(v)).collect(), columns: *columns }
        }
        Value::Ints { values, columns: 1 } => RawOutput::IntLabels(values.clone()),
        Value::Ints { values, columns } => RawOutput::Floats { values: values.iter().map(|&v| v as f64).collect(), columns: *columns },
        Value::Texts { index, table, .. } => RawOutput::TextLabels(index.iter().map(|&i| table[i as usize].clone()).collect()),
        Value::Maps { values, keys } if maps => {
            let columns = keys.len().max(1);
            let mut order: Vec<usize> = (0..keys.len()).collect();
            order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
            RawOutput::Maps(
                (0..rows)
                    .map(|r| order.iter().map(|&k| (keys[k].clone(), f64::from(values[r * columns + k]))).collect::<Vec<(ClassKey, f64)>>())
                    .collect(),
            )
        }
        Value::Maps { values, keys } => RawOutput::Floats { values: values.iter().map(|&v| f64::from(v)).collect(), columns: keys.len() },
    }
}

impl Model for TreeModel {
    /// The encoded vector, read as numbers: any real input is scored.
    fn takes_any_real_input(&self) -> bool {
        true
    }

    fn labels_only(&self) -> bool {
        self.reader.labels_only()
    }

    fn n_features(&self) -> usize {
        self.graph.width()
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let width = self.graph.width();
        if x.len() != out.len() * width {
            return Err(ModelError::Width { expected: width, found: x.len() / out.len().max(1) });
        }
        if out.len() < 2 * CHUNK {
            return self.predict_chunk(x, out, 0);
        }
        out.par_chunks_mut(CHUNK)
            .zip(x.par_chunks(CHUNK * width))
            .enumerate()
            .try_for_each(|(i, (out, x))| self.predict_chunk(x, out, i * CHUNK))
    }

    fn describe(&self) -> String {
        format!(
            "onnx {} (output {}, {}, {})",
            self.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
            self.reader.name,
            self.reader.describe(),
            self.executor()
        )
    }
}
