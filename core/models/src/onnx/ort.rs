//! ONNX models run by ONNX Runtime (through the `ort` crate): scikit-learn Pipelines with ai.onnx.ml
//! operators, tree ensembles, `ZipMap` outputs, string and float64 inputs, several named inputs —
//! whatever tract cannot run or runs slowly.
//!
//! Inputs follow the contract of [`crate::inputs`]; outputs are read and checked by
//! [`crate::outputs`]. A `ZipMap` output is read from the probability tensor under it: the
//! graph is run without the ZipMap (checked to give the same figures at load), so no map per row
//! is built. Each rayon worker gets its own single-threaded session, so a large
//! batch is spread over the cores the same way as for the native models.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fairpipe_abi::domain::Domain;
use ort::session::Session;
use ort::value::{DynMapValueType, DynValue, Tensor, TensorElementType, ValueType};

use crate::error::ModelError;
use crate::inputs::{fixed_batch, plan, DeclaredInput, ElementType, Feeding, InputBatch, InputPlan, InputValues};
use crate::onnx::runtime::Runtime;
pub use crate::outputs::OutputChoice;
use crate::outputs::{choose_output, ClassKey, OutputReader, RawOutput, ReadRule};
use crate::Model;

/// Rows used at load time to choose and check the output.
const PROBE_ROWS: usize = 256;

/// An ONNX model run by ONNX Runtime.
pub struct OrtModel {
    path: PathBuf,
    domain: Domain,
    plan: InputPlan,
    reader: OutputReader,
    batch: Option<usize>,
    sessions: SessionPool,
    runtime: Arc<Runtime>,
    /// The session output fetched and how it is read: the chosen output and `reader`, or the
    /// probability tensor a ZipMap output is made of and its column, when the ZipMap is cut off
    /// (its maps are never built).
    fetch: (String, OutputReader),
}

impl std::fmt::Debug for OrtModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OrtModel({}, output {})", self.path.display(), self.reader.name)
    }
}

impl OrtModel {
    /// Load `path` under `runtime` for rows of `domain` fed as `feeding` says, choose the output
    /// (checked on up to 256 of `probe` rows, row-major) and build one session per rayon worker.
    pub fn load(
        path: &Path,
        runtime: Arc<Runtime>,
        domain: &Domain,
        feeding: &Feeding,
        choice: OutputChoice<'_>,
        probe: &[f64],
    ) -> Result<Self, ModelError> {
        let err = |message: String| ModelError::Onnx { path: path.to_path_buf(), message };
        let mut first = open_session(path, &runtime)?;
        let inputs: Vec<DeclaredInput> = first.inputs().iter().map(|o| declared(o.name(), o.dtype())).collect();
        let input_plan = plan(path, &inputs, domain, feeding)?;
        let batch = fixed_batch(&inputs);
        let width = domain.width();
        let probe_rows = (probe.len() / width.max(1)).min(PROBE_ROWS);
        if probe_rows == 0 {
            return Err(err("no data rows to check the model's output on".into()));
        }
        let probe = &probe[..probe_rows * width];
        let outputs: Vec<(String, ValueType)> = first.outputs().iter().map(|o| (o.name().to_string(), o.dtype().clone())).collect();
        let typed: Vec<(String, ElementType)> = outputs
            .iter()
            .map(|(n, t)| (n.clone(), if let ValueType::Tensor { ty, .. } = t { element_type(*ty) } else { ElementType::Float32 }))
            .collect();
        let names: Vec<&str> = outputs.iter().map(|(n, _)| n.as_str()).collect();
        if let Some(wanted) = choice.name {
            if !names.contains(&wanted) {
                return Err(ModelError::MissingOutput {
                    model: path.display().to_string(),
                    wanted: wanted.to_string(),
                    outputs: format!(
                        "its outputs are {}",
                        outputs.iter().map(|(n, t)| format!("{n} ({})", type_name(t))).collect::<Vec<_>>().join(", ")
                    ),
                });
            }
        }
        // Run the probe rows once, keeping every output.
        let rows_per_run = batch.unwrap_or(probe_rows);
        let mut raw_by_output: Vec<Vec<RawOutput>> = vec![Vec::new(); outputs.len()];
        for start in (0..probe_rows).step_by(rows_per_run.max(1)) {
            let n = rows_per_run.min(probe_rows - start);
            let chunk = &probe[start * width..(start + n) * width];
            let values = run(&mut first, &input_plan, domain, chunk, n, batch, None)?;
            for (slot, value) in raw_by_output.iter_mut().zip(values) {
                slot.push(value);
            }
        }
        let raw: Vec<Option<RawOutput>> = raw_by_output.into_iter().map(concat).collect();
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let reader = choose_output(&file, &typed, &raw, &choice, probe_rows, &|message| err(message))?;
        let mut fetch = (reader.name.clone(), reader.clone());
        // A ZipMap output: run the graph without it and read its probability tensor, if that
        // gives the same figures on the probe rows.
        let chosen = names.iter().position(|n| *n == reader.name);
        let cut = match (&reader.rule, chosen.and_then(|i| raw[i].clone())) {
            (ReadRule::MapEntry(key), Some(maps)) => without_zipmap(path, &reader.name, key).map(|cut| (cut, maps)),
            _ => None,
        };
        let sessions = match cut {
            Some(((bytes, tensor, column), maps)) => {
                let mut session = open_session_bytes(&bytes, path, &runtime)?;
                let column_reader = OutputReader { rule: ReadRule::Column { column }, name: tensor.clone(), ..reader.clone() };
                let mut by_maps = vec![0.0; probe_rows];
                reader.read(maps, &mut by_maps, 0)?;
                let mut by_tensor = vec![0.0; probe_rows];
                let same = run(&mut session, &input_plan, domain, probe, probe_rows, batch, Some(&tensor))
                    .ok()
                    .and_then(|mut v| v.pop())
                    .is_some_and(|raw| column_reader.read(raw, &mut by_tensor, 0).is_ok() && by_maps == by_tensor);
                if same && batch.is_none() {
                    fetch = (tensor, column_reader);
                    SessionPool::with(session, || open_session_bytes(&bytes, path, &runtime))?
                } else {
                    SessionPool::new(first, path, &runtime)?
                }
            }
            None => SessionPool::new(first, path, &runtime)?,
        };
        Ok(OrtModel { path: path.to_path_buf(), domain: domain.clone(), plan: input_plan, reader, batch, sessions, runtime, fetch })
    }

    /// The output read.
    pub fn output_name(&self) -> &str {
        &self.reader.name
    }

    /// How the output is read.
    pub fn reader(&self) -> &OutputReader {
        &self.reader
    }

    /// How rows reach the model.
    pub fn input_plan(&self) -> &InputPlan {
        &self.plan
    }

    /// The fixed batch size the model declares, if any.
    pub fn fixed_batch(&self) -> Option<usize> {
        self.batch
    }

    /// "onnxruntime 1.32.0".
    pub fn executor(&self) -> String {
        format!("onnxruntime {}", self.runtime.version)
    }

    /// The runtime library used.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
}

/// Every output of the model at `path` for the rows of `x` (row-major f64, `width` features, fed
/// as its one float32 input `[N, width]`), in its output order, read as [`OrtModel`] reads them:
/// how the native tree executor is held against ONNX Runtime.
pub fn raw_outputs(path: &Path, runtime: &Runtime, x: &[f64], width: usize) -> Result<Vec<(String, RawOutput)>, ModelError> {
    let mut session = open_session(path, runtime)?;
    let rows = x.len() / width.max(1);
    let input = session.inputs().first().map(|i| i.name().to_string()).unwrap_or_default();
    let values: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let tensor =
        Tensor::from_array((vec![rows, width], values)).map_err(|e| ModelError::Inference(format!("input {input}: {e}")))?.into_dyn();
    let names: Vec<String> = session.outputs().iter().map(|o| o.name().to_string()).collect();
    let outputs = session.run(vec![(input, tensor)]).map_err(|e| ModelError::Inference(format!("ONNX Runtime: {e}")))?;
    names.iter().map(|name| Ok((name.clone(), extract(name, &outputs[name.as_str()])?))).collect()
}

/// A single-threaded ONNX Runtime session of `path` under `runtime`.
pub fn open_session(path: &Path, runtime: &Runtime) -> Result<Session, ModelError> {
    Session::builder(runtime.environment())
        .and_then(|b| b.with_intra_threads(1).map_err(|e| e.into()))
        .and_then(|mut b| b.commit_from_file(path))
        .map_err(|e| ModelError::Onnx {
            path: path.to_path_buf(),
            message: format!("ONNX Runtime {} cannot load it: {e}", runtime.version),
        })
}

/// A single-threaded session of the model `bytes` (a rewritten `path`).
fn open_session_bytes(bytes: &[u8], path: &Path, runtime: &Runtime) -> Result<Session, ModelError> {
    Session::builder(runtime.environment())
        .and_then(|b| b.with_intra_threads(1).map_err(|e| e.into()))
        .and_then(|mut b| b.commit_from_memory(bytes))
        .map_err(|e| ModelError::Onnx {
            path: path.to_path_buf(),
            message: format!("ONNX Runtime {} cannot load it without its ZipMap: {e}", runtime.version),
        })
}

/// The model at `path` with the ZipMap that computes `output` cut off: its bytes, the name of
/// the probability tensor the ZipMap read (now the only output), and the column of `key` in it.
/// `None` when `output` is not a ZipMap of a float tensor, or `key` is not among its classes.
fn without_zipmap(path: &Path, output: &str, key: &ClassKey) -> Option<(Vec<u8>, String, usize)> {
    use prost::Message;
    use tract_onnx::pb::{type_proto, TypeProto, ValueInfoProto};
    // External tensors inlined: the session is given bytes, with no folder to find them in.
    let mut proto = super::external::read_model(path).ok()?;
    let graph = proto.graph.as_mut()?;
    let at = graph.node.iter().position(|n| n.op_type == "ZipMap" && n.output.first().is_some_and(|o| o == output))?;
    let node = graph.node.remove(at);
    let tensor = node.input.first()?.clone();
    let attribute = |name: &str| node.attribute.iter().find(|a| a.name == name);
    let column = match key {
        ClassKey::Int(i) => attribute("classlabels_int64s")?.ints.iter().position(|v| v == i)?,
        ClassKey::Text(t) => attribute("classlabels_strings")?.strings.iter().position(|v| v.as_slice() == t.as_bytes())?,
    };
    let float =
        TypeProto { value: Some(type_proto::Value::TensorType(type_proto::Tensor { elem_type: 1, shape: None })), ..Default::default() };
    graph.output = vec![ValueInfoProto { name: tensor.clone(), r#type: Some(float), ..Default::default() }];
    Some((proto.encode_to_vec(), tensor, column))
}

/// One single-threaded session per rayon worker (the first one already open), so that a large
/// batch is scored on every core without the sessions' own thread pools competing.
pub struct SessionPool(Vec<Mutex<Session>>);

impl SessionPool {
    /// `first` and as many more sessions of `path` as rayon has workers.
    pub fn new(first: Session, path: &Path, runtime: &Runtime) -> Result<Self, ModelError> {
        Self::with(first, || open_session(path, runtime))
    }

    /// `first` and as many more sessions made by `open` as rayon has workers.
    fn with(first: Session, open: impl Fn() -> Result<Session, ModelError>) -> Result<Self, ModelError> {
        let mut sessions = vec![Mutex::new(first)];
        for _ in 1..rayon::current_num_threads().max(1) {
            sessions.push(Mutex::new(open()?));
        }
        Ok(SessionPool(sessions))
    }

    /// A free session, starting from the calling worker's own.
    pub fn get(&self) -> std::sync::MutexGuard<'_, Session> {
        let n = self.0.len();
        let start = rayon::current_thread_index().unwrap_or(0) % n;
        for offset in 0..n {
            if let Ok(guard) = self.0[(start + offset) % n].try_lock() {
                return guard;
            }
        }
        self.0[start].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Model for OrtModel {
    /// One float input taking the encoded vector, or named float inputs with categories fed
    /// their codes ([`InputPlan::takes_any_real_input`]).
    fn takes_any_real_input(&self) -> bool {
        self.plan.takes_any_real_input(&self.domain)
    }

    fn labels_only(&self) -> bool {
        self.reader.labels_only()
    }

    fn n_features(&self) -> usize {
        self.domain.width()
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let width = self.domain.width();
        let rows = out.len();
        let per_run = self.batch.unwrap_or(rows.max(1));
        let mut session = self.sessions.get();
        for start in (0..rows).step_by(per_run) {
            let n = per_run.min(rows - start);
            let chunk = &x[start * width..(start + n) * width];
            let (fetch, reader) = &self.fetch;
            let mut values = run(&mut session, &self.plan, &self.domain, chunk, n, self.batch, Some(fetch))?;
            let raw = values.pop().ok_or_else(|| ModelError::Inference(format!("output {fetch} missing")))?;
            reader.read(raw, &mut out[start..start + n], start)?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "onnx {} (output {}, {}, onnxruntime {})",
            self.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
            self.reader.name,
            self.reader.describe(),
            self.runtime.version
        )
    }
}

/// Run `rows` rows through `session` and return its outputs (only `only`, when given), each cut to
/// `rows` rows. Rows are padded with copies of the first to a fixed batch size.
fn run(
    session: &mut Session,
    plan: &InputPlan,
    domain: &Domain,
    x: &[f64],
    rows: usize,
    fixed: Option<usize>,
    only: Option<&str>,
) -> Result<Vec<RawOutput>, ModelError> {
    let width = domain.width();
    let padded_rows = fixed.map_or(rows, |b| b.max(rows));
    let padded: Vec<f64>;
    let x = if padded_rows > rows {
        padded = x.iter().copied().chain((rows..padded_rows).flat_map(|_| x[..width].iter().copied())).collect();
        &padded[..]
    } else {
        x
    };
    let batches = plan.batch(domain, x, padded_rows);
    let mut inputs: Vec<(String, DynValue)> = Vec::with_capacity(batches.len());
    for batch in batches {
        inputs.push((batch.name.clone(), to_value(batch)?));
    }
    let names: Vec<String> = session.outputs().iter().map(|o| o.name().to_string()).collect();
    let outputs = session.run(inputs).map_err(|e| ModelError::Inference(format!("ONNX Runtime: {e}")))?;
    let mut result = Vec::new();
    for name in &names {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let value = &outputs[name.as_str()];
        result.push(truncate(extract(name, value)?, rows));
    }
    Ok(result)
}

fn to_value(batch: InputBatch) -> Result<DynValue, ModelError> {
    let err = |e: ort::Error| ModelError::Inference(format!("input {}: {e}", batch.name));
    let shape = batch.shape.clone();
    Ok(match batch.values {
        InputValues::Float32(v) => Tensor::from_array((shape, v)).map_err(err)?.into_dyn(),
        InputValues::Float64(v) => Tensor::from_array((shape, v)).map_err(err)?.into_dyn(),
        InputValues::Int64(v) => Tensor::from_array((shape, v)).map_err(err)?.into_dyn(),
        InputValues::Int32(v) => Tensor::from_array((shape, v)).map_err(err)?.into_dyn(),
        InputValues::Float16(v) => {
            Tensor::from_array((shape, v.into_iter().map(half::f16::from_bits).collect::<Vec<_>>())).map_err(err)?.into_dyn()
        }
        InputValues::String(v) => Tensor::from_string_array((shape, v.as_slice())).map_err(err)?.into_dyn(),
    })
}

/// An output value as a [`RawOutput`].
pub fn extract(name: &str, value: &DynValue) -> Result<RawOutput, ModelError> {
    let err = |e: ort::Error| ModelError::Inference(format!("output {name}: {e}"));
    match value.dtype() {
        ValueType::Tensor { ty, shape, .. } => {
            let columns = if shape.len() >= 2 { shape[1..].iter().product::<i64>().max(1) as usize } else { 1 };
            match ty {
                TensorElementType::Float32 => {
                    let (_, v) = value.try_extract_tensor::<f32>().map_err(err)?;
                    Ok(RawOutput::Floats { values: v.iter().map(|&x| f64::from(x)).collect(), columns })
                }
                TensorElementType::Float64 => {
                    let (_, v) = value.try_extract_tensor::<f64>().map_err(err)?;
                    Ok(RawOutput::Floats { values: v.to_vec(), columns })
                }
                TensorElementType::Int64 => {
                    let (_, v) = value.try_extract_tensor::<i64>().map_err(err)?;
                    Ok(RawOutput::IntLabels(v.to_vec()))
                }
                TensorElementType::Int32 => {
                    let (_, v) = value.try_extract_tensor::<i32>().map_err(err)?;
                    Ok(RawOutput::IntLabels(v.iter().map(|&x| i64::from(x)).collect()))
                }
                TensorElementType::String => {
                    let (_, v) = value.try_extract_strings().map_err(err)?;
                    Ok(RawOutput::TextLabels(v))
                }
                other => Err(ModelError::Inference(format!("output {name} has element type {other:?}, which fairpipe does not read"))),
            }
        }
        ValueType::Sequence(inner) if matches!(**inner, ValueType::Map { .. }) => {
            let ValueType::Map { key, .. } = &**inner else { unreachable!("matched above") };
            let maps = value.try_extract_sequence::<DynMapValueType>().map_err(err)?;
            let mut rows = Vec::with_capacity(maps.len());
            for map in maps {
                let entries: Vec<(ClassKey, f64)> = match key {
                    TensorElementType::Int64 => map
                        .try_extract_key_values::<i64, f32>()
                        .map_err(err)?
                        .into_iter()
                        .map(|(k, v)| (ClassKey::Int(k), f64::from(v)))
                        .collect(),
                    TensorElementType::String => map
                        .try_extract_key_values::<String, f32>()
                        .map_err(err)?
                        .into_iter()
                        .map(|(k, v)| (ClassKey::Text(k), f64::from(v)))
                        .collect(),
                    other => return Err(ModelError::Inference(format!("output {name} maps {other:?} keys, which fairpipe does not read"))),
                };
                let mut entries = entries;
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                rows.push(entries);
            }
            Ok(RawOutput::Maps(rows))
        }
        other => Err(ModelError::Inference(format!("output {name} is {}, which fairpipe does not read", type_name(other)))),
    }
}

/// `raw` cut to its first `rows` rows (a batch padded to a fixed size).
pub fn truncate(raw: RawOutput, rows: usize) -> RawOutput {
    match raw {
        RawOutput::Floats { mut values, columns } => {
            values.truncate(rows * columns);
            RawOutput::Floats { values, columns }
        }
        RawOutput::IntLabels(mut v) => {
            v.truncate(rows);
            RawOutput::IntLabels(v)
        }
        RawOutput::TextLabels(mut v) => {
            v.truncate(rows);
            RawOutput::TextLabels(v)
        }
        RawOutput::Maps(mut v) => {
            v.truncate(rows);
            RawOutput::Maps(v)
        }
    }
}

/// Join the outputs of several probe runs (one per fixed-size batch).
pub fn concat(parts: Vec<RawOutput>) -> Option<RawOutput> {
    let mut parts = parts.into_iter();
    let mut joined = parts.next()?;
    for part in parts {
        joined = match (joined, part) {
            (RawOutput::Floats { mut values, columns }, RawOutput::Floats { values: more, .. }) => {
                values.extend(more);
                RawOutput::Floats { values, columns }
            }
            (RawOutput::IntLabels(mut a), RawOutput::IntLabels(b)) => {
                a.extend(b);
                RawOutput::IntLabels(a)
            }
            (RawOutput::TextLabels(mut a), RawOutput::TextLabels(b)) => {
                a.extend(b);
                RawOutput::TextLabels(a)
            }
            (RawOutput::Maps(mut a), RawOutput::Maps(b)) => {
                a.extend(b);
                RawOutput::Maps(a)
            }
            (first, _) => first,
        };
    }
    Some(joined)
}

fn declared(name: &str, ty: &ValueType) -> DeclaredInput {
    match ty {
        ValueType::Tensor { ty, shape, .. } => DeclaredInput { name: name.to_string(), ty: element_type(*ty), shape: shape.to_vec() },
        other => DeclaredInput { name: name.to_string(), ty: ElementType::Other(type_name(other)), shape: Vec::new() },
    }
}

/// The model-input contract's element type of an ONNX Runtime tensor type.
pub fn element_type(ty: TensorElementType) -> ElementType {
    match ty {
        TensorElementType::Float32 => ElementType::Float32,
        TensorElementType::Float64 => ElementType::Float64,
        TensorElementType::Int64 => ElementType::Int64,
        TensorElementType::Int32 => ElementType::Int32,
        TensorElementType::Float16 => ElementType::Float16,
        TensorElementType::String => ElementType::String,
        other => ElementType::Other(format!("{other:?}").to_lowercase()),
    }
}

/// A value type in words, for messages ("float tensor [N,2]", "a sequence of …").
pub fn type_name(ty: &ValueType) -> String {
    match ty {
        ValueType::Tensor { ty, shape, .. } => {
            let dims: Vec<String> = shape.iter().map(|d| if *d < 0 { "N".into() } else { d.to_string() }).collect();
            format!("{} tensor [{}]", element_type(*ty), dims.join(","))
        }
        ValueType::Sequence(inner) => format!("a sequence of {}", type_name(inner)),
        ValueType::Map { key, value } => format!("map {} → {}", element_type(*key), element_type(*value)),
        ValueType::Optional(inner) => format!("an optional {}", type_name(inner)),
    }
}
