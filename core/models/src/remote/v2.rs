//! The Open Inference Protocol (KServe V2) over HTTP, as KServe, MLServer and Triton speak it:
//! readiness, model metadata, and `infer` requests built from the model-input contract.

use serde_json::Value;

use super::error::{AnswerError, EndpointError};
use super::http::{Http, HttpSettings};
use super::{Backend, Returned};
use crate::error::ModelError;
use crate::inputs::{DeclaredInput, ElementType, InputBatch, InputValues};
use crate::outputs::RawOutput;

/// One model on a V2 server.
#[derive(Debug, Clone)]
pub struct V2Endpoint {
    /// The server's base URL, without a trailing slash (`http://host:8080`).
    pub base: String,
    /// The model's name.
    pub model: String,
}

/// What the metadata endpoint says about a model.
#[derive(Debug, Clone, PartialEq)]
pub struct V2Metadata {
    /// Declared inputs (MLServer's scikit-learn runtime lists none).
    pub inputs: Vec<DeclaredInput>,
    /// Declared outputs with their element types.
    pub outputs: Vec<(String, ElementType)>,
}

impl V2Endpoint {
    /// From `url` and an optional model name: `http://host:port/v2/models/NAME` names the model
    /// itself; a bare server URL needs `model`.
    pub fn parse(url: &str, model: Option<&str>) -> Result<Self, EndpointError> {
        let trimmed = url.trim_end_matches('/');
        if !(trimmed.starts_with("http://") || trimmed.starts_with("https://")) {
            return Err(EndpointError::NotHttp { url: url.to_string() });
        }
        let (base, from_url) = match trimmed.find("/v2/models/") {
            Some(at) => {
                let rest = &trimmed[at + "/v2/models/".len()..];
                let name = rest.split('/').next().unwrap_or_default();
                (trimmed[..at].to_string(), (!name.is_empty()).then(|| name.to_string()))
            }
            None => (trimmed.to_string(), None),
        };
        let model = match (model, from_url) {
            (Some(m), Some(u)) if m != u => return Err(EndpointError::ModelDiffers { given: m.to_string(), in_url: u }),
            (Some(m), _) => m.to_string(),
            (None, Some(u)) => u,
            (None, None) => return Err(EndpointError::NoModel),
        };
        Ok(V2Endpoint { base, model })
    }

    /// The model's own URL.
    pub fn model_url(&self) -> String {
        format!("{}/v2/models/{}", self.base, self.model)
    }

    /// Wait for nothing: ask whether the model is ready (`GET /v2/models/NAME/ready`).
    pub fn ready(&self, http: &Http) -> Result<(), ModelError> {
        http.get_ok(&format!("{}/ready", self.model_url()))
    }

    /// The model's metadata (`GET /v2/models/NAME`).
    pub fn metadata(&self, http: &Http) -> Result<V2Metadata, ModelError> {
        let url = self.model_url();
        let value = http.get_json(&url)?;
        read_metadata(&value).map_err(|e| e.at(url))
    }

    /// Score one batch: `POST /v2/models/NAME/infer` with `inputs`, asking for `outputs` (the
    /// server's default outputs when empty). Returns every output returned, by name.
    pub fn infer(&self, http: &Http, inputs: &[InputBatch], outputs: &[String], rows: usize) -> Result<Returned, ModelError> {
        let url = format!("{}/infer", self.model_url());
        let answer = http.post_json_text(&url, request_body(inputs, outputs))?;
        read_infer_answer(&answer, rows).map_err(|e| e.at(url))
    }
}

/// A model on a V2 server, connected: the [`Backend`] of a `url` model.
pub struct V2Backend {
    endpoint: V2Endpoint,
    http: Http,
    outputs: Vec<String>,
}

impl V2Backend {
    /// Connect: check that the model is ready (an error naming the URL otherwise) and read its
    /// metadata, unless they were `seen` already (when the pipeline was validated: the server is
    /// not asked twice). `outputs` are the outputs every request asks for (empty: the server's
    /// default).
    pub fn connect(
        endpoint: V2Endpoint,
        settings: HttpSettings,
        outputs: Vec<String>,
        seen: Option<V2Metadata>,
    ) -> Result<(Self, V2Metadata), ModelError> {
        let http = Http::new(settings, &endpoint.base)?;
        let metadata = match seen {
            Some(metadata) => metadata,
            None => {
                endpoint.ready(&http).map_err(|e| match e {
                    ModelError::Remote { url, message } => {
                        ModelError::Remote { url, message: format!("the model is not ready: {message}") }
                    }
                    other => other,
                })?;
                endpoint.metadata(&http)?
            }
        };
        Ok((V2Backend { endpoint, http, outputs }, metadata))
    }
}

impl Backend for V2Backend {
    fn location(&self) -> String {
        self.endpoint.model_url()
    }

    fn executor(&self) -> String {
        format!("kserve v2 {}", self.endpoint.model_url())
    }

    fn infer(&self, inputs: &[InputBatch], rows: usize) -> Result<Returned, ModelError> {
        self.endpoint.infer(&self.http, inputs, &self.outputs, rows)
    }
}

/// A model's metadata from the answer to `GET /v2/models/NAME` (an entry without a name is an
/// error; a missing list is empty).
pub fn read_metadata(value: &Value) -> Result<V2Metadata, AnswerError> {
    let tensors = |key: &str| -> Result<Vec<(String, ElementType, Vec<i64>)>, AnswerError> {
        let Some(list) = value.get(key).and_then(Value::as_array) else { return Ok(Vec::new()) };
        list.iter()
            .map(|t| {
                let name = t
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| AnswerError::UnnamedTensor { list: key.to_string(), entry: t.to_string() })?;
                let ty = t.get("datatype").and_then(Value::as_str).map(element_type).unwrap_or(ElementType::Float32);
                let shape =
                    t.get("shape").and_then(Value::as_array).map(|s| s.iter().filter_map(Value::as_i64).collect()).unwrap_or_default();
                Ok((name.to_string(), ty, shape))
            })
            .collect()
    };
    let inputs = tensors("inputs")?.into_iter().map(|(name, ty, shape)| DeclaredInput { name, ty, shape }).collect();
    let outputs = tensors("outputs")?.into_iter().map(|(name, ty, _)| (name, ty)).collect();
    Ok(V2Metadata { inputs, outputs })
}

/// The outputs of the answer to an `infer` request for `rows` rows, by name: each output's values
/// (flat or nested by row) checked against the rows and its shape and read by its datatype.
pub fn read_infer_answer(answer: &Value, rows: usize) -> Result<Returned, AnswerError> {
    let list = answer
        .get("outputs")
        .and_then(Value::as_array)
        .ok_or_else(|| AnswerError::NoOutputs { key: "\"outputs\" list", start: start(answer) })?;
    let mut result = Vec::with_capacity(list.len());
    for t in list {
        let name = t.get("name").and_then(Value::as_str).unwrap_or("").to_string();
        let datatype = t.get("datatype").and_then(Value::as_str).unwrap_or("");
        let shape: Vec<usize> = t
            .get("shape")
            .and_then(Value::as_array)
            .map(|s| s.iter().filter_map(Value::as_u64).map(|d| d as usize).collect())
            .unwrap_or_default();
        let mut flat: Vec<&Value> = Vec::with_capacity(rows);
        flatten(t.get("data").unwrap_or(&Value::Null), &mut flat);
        let Some(columns) = shape.get(1..).unwrap_or_default().iter().try_fold(1usize, |n, &d| n.checked_mul(d)) else {
            return Err(AnswerError::ShapeOverflow { name, shape: format!("{shape:?}") });
        };
        let columns = columns.max(1);
        if rows.checked_mul(columns) != Some(flat.len()) {
            return Err(AnswerError::ValueCount { name, found: flat.len(), rows, shape: format!("{shape:?}") });
        }
        let ty = element_type(datatype);
        let raw = match &ty {
            ElementType::Float32 | ElementType::Float64 | ElementType::Float16 => RawOutput::Floats {
                values: flat
                    .iter()
                    .map(|v| v.as_f64().ok_or_else(|| AnswerError::NotANumber { name: name.clone(), value: v.to_string() }))
                    .collect::<Result<_, _>>()?,
                columns,
            },
            ElementType::Int64 | ElementType::Int32 => RawOutput::IntLabels(
                flat.iter()
                    .map(|v| v.as_i64().ok_or_else(|| AnswerError::NotAnInteger { name: name.clone(), value: v.to_string() }))
                    .collect::<Result<_, _>>()?,
            ),
            ElementType::String => {
                RawOutput::TextLabels(flat.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).collect())
            }
            ElementType::Other(other) => return Err(AnswerError::UnreadDatatype { name, datatype: other.clone() }),
        };
        result.push((name, ty, raw));
    }
    Ok(result)
}

/// A V2 datatype as an element type.
pub fn element_type(datatype: &str) -> ElementType {
    match datatype.to_ascii_uppercase().as_str() {
        "FP32" | "FP16" => ElementType::Float32,
        "FP64" => ElementType::Float64,
        "INT64" | "UINT64" => ElementType::Int64,
        "INT32" | "INT16" | "INT8" | "UINT32" | "UINT16" | "UINT8" | "BOOL" => ElementType::Int32,
        "BYTES" => ElementType::String,
        other => ElementType::Other(other.to_string()),
    }
}

/// The V2 datatype of a tensor of `values`.
pub fn datatype(values: &InputValues) -> &'static str {
    match values {
        InputValues::Float32(_) => "FP32",
        InputValues::Float64(_) => "FP64",
        InputValues::Int64(_) => "INT64",
        InputValues::Int32(_) => "INT32",
        InputValues::Float16(_) => "FP16",
        InputValues::String(_) => "BYTES",
    }
}

/// The body of an `infer` request: the input tensors and the outputs asked for, written straight
/// from the batches (no intermediate JSON tree: this runs once per request over every value).
fn request_body(inputs: &[InputBatch], outputs: &[String]) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Tensor<'a> {
        name: &'a str,
        shape: &'a [usize],
        datatype: &'static str,
        data: Data<'a>,
    }
    #[derive(serde::Serialize)]
    #[serde(untagged)]
    enum Data<'a> {
        F32(&'a [f32]),
        F64(&'a [f64]),
        I64(&'a [i64]),
        I32(&'a [i32]),
        Text(&'a [String]),
        Numbers(Vec<f32>),
    }
    #[derive(serde::Serialize)]
    struct Output<'a> {
        name: &'a str,
    }
    #[derive(serde::Serialize)]
    struct Request<'a> {
        inputs: Vec<Tensor<'a>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        outputs: Vec<Output<'a>>,
    }
    let tensors = inputs
        .iter()
        .map(|batch| {
            let data = match &batch.values {
                InputValues::Float32(v) => Data::F32(v),
                InputValues::Float64(v) => Data::F64(v),
                InputValues::Int64(v) => Data::I64(v),
                InputValues::Int32(v) => Data::I32(v),
                InputValues::Float16(v) => Data::Numbers(v.iter().map(|&b| half::f16::from_bits(b).to_f32()).collect()),
                InputValues::String(v) => Data::Text(v),
            };
            Tensor { name: &batch.name, shape: &batch.shape, datatype: datatype(&batch.values), data }
        })
        .collect();
    let request = Request { inputs: tensors, outputs: outputs.iter().map(|n| Output { name: n }).collect() };
    // Serialising plain slices, strings and numbers cannot fail.
    serde_json::to_vec(&request).unwrap_or_default()
}

/// V2 servers may send `data` flat or nested by row.
fn flatten<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Array(items) => items.iter().for_each(|v| flatten(v, out)),
        Value::Null => {}
        other => out.push(other),
    }
}

fn start(value: &Value) -> String {
    let text = value.to_string();
    text.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_name_comes_from_the_url_or_the_key() {
        let e = V2Endpoint::parse("http://127.0.0.1:8080/v2/models/census-lr/", None).unwrap();
        assert_eq!((e.base.as_str(), e.model.as_str()), ("http://127.0.0.1:8080", "census-lr"));
        let e = V2Endpoint::parse("https://host", Some("m")).unwrap();
        assert_eq!(e.model_url(), "https://host/v2/models/m");
        assert!(V2Endpoint::parse("http://host", None).unwrap_err().to_string().contains("name the model"));
        assert!(V2Endpoint::parse("http://host/v2/models/a", Some("b")).unwrap_err().to_string().contains("differs"));
        assert!(V2Endpoint::parse("ftp://host", Some("b")).unwrap_err().to_string().contains("not an http"));
    }

    #[test]
    fn answers_read_flat_or_nested_and_checked_against_the_rows() {
        let answer = serde_json::json!({"outputs": [
            {"name": "predict_proba", "datatype": "FP64", "shape": [2, 2], "data": [[0.75, 0.25], [0.125, 0.875]]},
            {"name": "label", "datatype": "BYTES", "shape": [2], "data": [">50K", "<=50K"]},
        ]});
        let returned = read_infer_answer(&answer, 2).unwrap();
        assert_eq!(returned[0].2, RawOutput::Floats { values: vec![0.75, 0.25, 0.125, 0.875], columns: 2 });
        assert_eq!(returned[1].2, RawOutput::TextLabels(vec![">50K".into(), "<=50K".into()]));
        assert!(read_infer_answer(&answer, 3).unwrap_err().to_string().contains("holds 4 values for 3 rows"));
        let metadata =
            serde_json::json!({"inputs": [{"name": "x", "datatype": "FP64", "shape": [-1, 12]}], "outputs": [{"datatype": "FP64"}]});
        assert!(read_metadata(&metadata).unwrap_err().to_string().contains("an entry of \"outputs\" has no name"));
    }

    #[test]
    fn a_shape_counting_more_values_than_fit_in_memory_is_refused() {
        // Regression (fuzzing, issue 36): the product of the dimensions overflowed (a panic in
        // debug builds, a wrapped column count in release ones).
        let answer = serde_json::json!({"outputs": [{"name": "p", "datatype": "FP64", "shape": [2, 4294967296u64, 4294967296u64], "data": [0.5, 0.5]}]});
        let e = read_infer_answer(&answer, 2).unwrap_err().to_string();
        assert!(e.contains("output \"p\": its shape [2, 4294967296, 4294967296] counts more values than a computer can hold"), "{e}");
    }
}
