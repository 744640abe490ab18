//! A text classifier exported to ONNX with one string input (a scikit-learn `TfidfVectorizer` +
//! `LogisticRegression` through skl2onnx, say), run by ONNX Runtime: one single-threaded session
//! per rayon worker, texts in batches, the output holding P(favourable) chosen as for any ONNX
//! model ([`crate::models::outputs::choose_output`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ort::session::Session;
use ort::value::{Tensor, TensorElementType, ValueType};
use rayon::prelude::*;

use super::classifier::TextClassifier;
use crate::error::ModelError;
use crate::models::onnx::ort::{concat, element_type, extract, open_session, truncate, type_name, SessionPool};
use crate::models::onnx::runtime::Runtime;
use crate::models::outputs::{choose_output, OutputChoice, OutputReader, RawOutput};

/// Texts per ONNX Runtime call.
const BATCH: usize = 512;
/// Texts the output is chosen on.
const PROBE: usize = 256;

/// An ONNX text classifier run by ONNX Runtime.
pub struct OrtTextModel {
    path: PathBuf,
    input: String,
    /// Whether the input is `[N, 1]` (else `[N]`).
    column: bool,
    reader: OutputReader,
    /// Position of the chosen output among the session's outputs.
    output_index: usize,
    sessions: SessionPool,
    runtime: Arc<Runtime>,
}

impl OrtTextModel {
    /// Load `path` under `runtime`: it must take one string input (`[N, 1]` or `[N]`); the output
    /// is chosen on `probe` texts (at most 256 of them).
    pub fn load(path: &Path, runtime: Arc<Runtime>, choice: OutputChoice<'_>, probe: &[&str]) -> Result<Self, ModelError> {
        let err = |message: String| ModelError::Onnx { path: path.to_path_buf(), message };
        let mut first = open_session(path, &runtime)?;
        let inputs: Vec<(String, ValueType)> = first.inputs().iter().map(|i| (i.name().to_string(), i.dtype().clone())).collect();
        let column = match inputs.as_slice() {
            [(_, ValueType::Tensor { ty: TensorElementType::String, shape, .. })] if shape.len() == 2 && shape[1] == 1 => true,
            [(_, ValueType::Tensor { ty: TensorElementType::String, shape, .. })] if shape.len() == 1 => false,
            _ => {
                let found = inputs.iter().map(|(n, t)| format!("{n} ({})", type_name(t))).collect::<Vec<_>>().join(", ");
                return Err(err(format!("a text model takes one string input of shape [N, 1] or [N]; this one takes {found}")));
            }
        };
        let input = inputs[0].0.clone();
        let probe = &probe[..probe.len().min(PROBE)];
        if probe.is_empty() {
            return Err(err("no texts to check the model's output on".into()));
        }
        let outputs: Vec<(String, ValueType)> = first.outputs().iter().map(|o| (o.name().to_string(), o.dtype().clone())).collect();
        if let Some(wanted) = choice.name {
            if !outputs.iter().any(|(n, _)| n == wanted) {
                let list = outputs.iter().map(|(n, t)| format!("{n} ({})", type_name(t))).collect::<Vec<_>>().join(", ");
                return Err(err(format!("no output named {wanted:?}; its outputs are {list}")));
            }
        }
        let typed: Vec<(String, crate::models::inputs::ElementType)> = outputs
            .iter()
            .map(|(n, t)| {
                let ty = if let ValueType::Tensor { ty, .. } = t { element_type(*ty) } else { crate::models::inputs::ElementType::Float32 };
                (n.clone(), ty)
            })
            .collect();
        let raw: Vec<Option<RawOutput>> = run_texts(&mut first, &input, column, probe)?.into_iter().map(|r| concat(vec![r])).collect();
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let reader = choose_output(&file, &typed, &raw, &choice, probe.len(), &|message| err(message))?;
        let output_index = outputs.iter().position(|(n, _)| *n == reader.name).unwrap_or(0);
        let sessions = SessionPool::new(first, path, &runtime)?;
        Ok(OrtTextModel { path: path.to_path_buf(), input, column, reader, output_index, sessions, runtime })
    }

    /// How the output is read.
    pub fn reader(&self) -> &OutputReader {
        &self.reader
    }
}

/// Every output of `session` for `texts`, cut to their number.
fn run_texts(session: &mut Session, input: &str, column: bool, texts: &[&str]) -> Result<Vec<RawOutput>, ModelError> {
    let shape: Vec<i64> = if column { vec![texts.len() as i64, 1] } else { vec![texts.len() as i64] };
    let owned: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    let tensor = Tensor::from_string_array((shape, owned.as_slice())).map_err(|e| ModelError::Inference(format!("input {input}: {e}")))?;
    let names: Vec<String> = session.outputs().iter().map(|o| o.name().to_string()).collect();
    let outputs =
        session.run(vec![(input.to_string(), tensor.into_dyn())]).map_err(|e| ModelError::Inference(format!("ONNX Runtime: {e}")))?;
    names.iter().map(|name| Ok(truncate(extract(name, &outputs[name.as_str()])?, texts.len()))).collect()
}

impl TextClassifier for OrtTextModel {
    fn predict_texts(&self, texts: &[&str], out: &mut [f64]) -> Result<(), ModelError> {
        if texts.len() != out.len() {
            return Err(ModelError::Inference(format!("{} texts for {} outputs", texts.len(), out.len())));
        }
        texts.par_chunks(BATCH).zip(out.par_chunks_mut(BATCH)).try_for_each(|(chunk, o)| {
            let raw = {
                let mut session = self.sessions.get();
                run_texts(&mut session, &self.input, self.column, chunk)?
            };
            let value = raw
                .into_iter()
                .nth(self.output_index)
                .ok_or_else(|| ModelError::Inference(format!("output {} missing", self.reader.name)))?;
            self.reader.read(value, o, 0)
        })
    }

    fn describe(&self) -> String {
        format!(
            "onnx {} (string input {}, output {}, ONNX Runtime {})",
            self.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
            self.input,
            self.reader.name,
            self.runtime.version
        )
    }
}
