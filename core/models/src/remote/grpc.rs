//! The Open Inference Protocol (KServe V2) over gRPC (`protocol = "grpc-v2"`), as KServe,
//! MLServer and Triton serve it (`inference.GRPCInferenceService`): readiness, model metadata,
//! and `ModelInfer` with every input tensor sent as raw little-endian bytes
//! (`raw_input_contents`), so no number is written or parsed as text on either side. Servers
//! answer raw inputs with raw outputs (`raw_output_contents`); typed `contents` are read too.
//!
//! The calls go over HTTP/2 with the same client as the HTTP protocols (timeouts, retries, token).
//! A gRPC status other than OK ends the call with the server's message; UNAVAILABLE and
//! RESOURCE_EXHAUSTED are tried again as connection errors and 429 are.

use prost::Message;
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE, TE};

use super::error::AnswerError;
use super::http::{quote, Http, HttpSettings};
use super::v2::{datatype, element_type, V2Endpoint, V2Metadata};
use super::{Backend, Returned};
use crate::error::ModelError;
use crate::inputs::{DeclaredInput, ElementType, InputBatch, InputValues};
use crate::outputs::RawOutput;
use crate::retry::{grpc_code_is_transient, Failure};

/// The messages of `grpc_service.proto` that fairpipe sends and reads (field numbers as there).
mod proto {
    /// `ModelReadyRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ModelReadyRequest {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub version: String,
    }

    /// `ModelReadyResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ModelReadyResponse {
        #[prost(bool, tag = "1")]
        pub ready: bool,
    }

    /// `ModelMetadataRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ModelMetadataRequest {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub version: String,
    }

    /// `ModelMetadataResponse.TensorMetadata`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TensorMetadata {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub datatype: String,
        #[prost(int64, repeated, tag = "3")]
        pub shape: Vec<i64>,
    }

    /// `ModelMetadataResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ModelMetadataResponse {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, repeated, tag = "2")]
        pub versions: Vec<String>,
        #[prost(string, tag = "3")]
        pub platform: String,
        #[prost(message, repeated, tag = "4")]
        pub inputs: Vec<TensorMetadata>,
        #[prost(message, repeated, tag = "5")]
        pub outputs: Vec<TensorMetadata>,
    }

    /// `InferTensorContents`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InferTensorContents {
        #[prost(bool, repeated, tag = "1")]
        pub bool_contents: Vec<bool>,
        #[prost(int32, repeated, tag = "2")]
        pub int_contents: Vec<i32>,
        #[prost(int64, repeated, tag = "3")]
        pub int64_contents: Vec<i64>,
        #[prost(uint32, repeated, tag = "4")]
        pub uint_contents: Vec<u32>,
        #[prost(uint64, repeated, tag = "5")]
        pub uint64_contents: Vec<u64>,
        #[prost(float, repeated, tag = "6")]
        pub fp32_contents: Vec<f32>,
        #[prost(double, repeated, tag = "7")]
        pub fp64_contents: Vec<f64>,
        #[prost(bytes = "vec", repeated, tag = "8")]
        pub bytes_contents: Vec<Vec<u8>>,
    }

    /// `ModelInferRequest.InferInputTensor`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InferInputTensor {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub datatype: String,
        #[prost(int64, repeated, tag = "3")]
        pub shape: Vec<i64>,
    }

    /// `ModelInferRequest.InferRequestedOutputTensor`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InferRequestedOutputTensor {
        #[prost(string, tag = "1")]
        pub name: String,
    }

    /// `ModelInferRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ModelInferRequest {
        #[prost(string, tag = "1")]
        pub model_name: String,
        #[prost(string, tag = "2")]
        pub model_version: String,
        #[prost(string, tag = "3")]
        pub id: String,
        #[prost(message, repeated, tag = "5")]
        pub inputs: Vec<InferInputTensor>,
        #[prost(message, repeated, tag = "6")]
        pub outputs: Vec<InferRequestedOutputTensor>,
        #[prost(bytes = "vec", repeated, tag = "7")]
        pub raw_input_contents: Vec<Vec<u8>>,
    }

    /// `ModelInferResponse.InferOutputTensor`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InferOutputTensor {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub datatype: String,
        #[prost(int64, repeated, tag = "3")]
        pub shape: Vec<i64>,
        #[prost(message, optional, tag = "5")]
        pub contents: Option<InferTensorContents>,
    }

    /// `ModelInferResponse`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ModelInferResponse {
        #[prost(string, tag = "1")]
        pub model_name: String,
        #[prost(string, tag = "2")]
        pub model_version: String,
        #[prost(string, tag = "3")]
        pub id: String,
        #[prost(message, repeated, tag = "5")]
        pub outputs: Vec<InferOutputTensor>,
        #[prost(bytes = "vec", repeated, tag = "6")]
        pub raw_output_contents: Vec<Vec<u8>>,
    }
}

/// The gRPC service every V2 server implements.
const SERVICE: &str = "inference.GRPCInferenceService";

/// A model on a V2 gRPC server, connected: the [`Backend`] of a `protocol = "grpc-v2"` model.
pub struct GrpcBackend {
    endpoint: V2Endpoint,
    http: Http,
    outputs: Vec<String>,
    headers: HeaderMap,
}

impl GrpcBackend {
    /// Connect: check that the model is ready (an error naming the server and the model
    /// otherwise) and read its metadata, unless they were `seen` already (when the pipeline was
    /// validated: the server is not asked twice). `outputs` are the outputs every request asks
    /// for (empty: the server's default).
    pub fn connect(
        endpoint: V2Endpoint,
        settings: HttpSettings,
        outputs: Vec<String>,
        seen: Option<V2Metadata>,
    ) -> Result<(Self, V2Metadata), ModelError> {
        let http = Http::new_http2(settings, &endpoint.base)?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        headers.insert(TE, HeaderValue::from_static("trailers"));
        let backend = GrpcBackend { endpoint, http, outputs, headers };
        if let Some(metadata) = seen {
            return Ok((backend, metadata));
        }
        let ready: proto::ModelReadyResponse = backend
            .call("ModelReady", &proto::ModelReadyRequest { name: backend.endpoint.model.clone(), version: String::new() })
            .map_err(|e| match e {
                ModelError::Remote { url, message } if message.contains("gRPC status") => {
                    ModelError::Remote { url, message: format!("the model is not ready: {message}") }
                }
                ModelError::Remote { url, message } => ModelError::Remote {
                    url,
                    message: format!(
                        "the model is not ready: {message}; is this the server's gRPC port (MLServer's default is 8081, KServe's and Triton's 8001)?"
                    ),
                },
                other => other,
            })?;
        if !ready.ready {
            return Err(ModelError::Remote {
                url: backend.location(),
                message: "the model is not ready: the server says it is loaded but not ready".into(),
            });
        }
        let metadata: proto::ModelMetadataResponse =
            backend.call("ModelMetadata", &proto::ModelMetadataRequest { name: backend.endpoint.model.clone(), version: String::new() })?;
        Ok((backend, metadata_of(metadata)))
    }

    /// One unary call: `request` framed, `POST {base}/inference.GRPCInferenceService/{method}`,
    /// the answer's status checked and its message decoded.
    fn call<Q: Message, A: Message + Default>(&self, method: &str, request: &Q) -> Result<A, ModelError> {
        self.call_framed(method, frame(request, &[]))
    }

    /// One unary call with its request already framed.
    fn call_framed<A: Message + Default>(&self, method: &str, body: Vec<u8>) -> Result<A, ModelError> {
        let url = format!("{}/{SERVICE}/{method}", self.endpoint.base);
        self.http.post_bytes(&url, &self.headers, body, |headers, bytes| {
            if let Some(code) = headers.get("grpc-status").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u32>().ok()) {
                if code != 0 {
                    let message = headers.get("grpc-message").and_then(|v| v.to_str().ok()).map(percent_decode).unwrap_or_default();
                    let said = format!("gRPC status {code} ({}): {}", code_name(code), quote(&message));
                    return Err(if grpc_code_is_transient(code) { Failure::retryable(said) } else { Failure::Final(said) });
                }
            }
            decode_body(method, bytes).map_err(|e| Failure::Final(e.to_string()))
        })
    }
}

impl Backend for GrpcBackend {
    fn location(&self) -> String {
        format!("{} (gRPC) model {}", self.endpoint.base, self.endpoint.model)
    }

    fn executor(&self) -> String {
        format!("kserve v2 grpc {} model {}", self.endpoint.base, self.endpoint.model)
    }

    fn infer(&self, inputs: &[InputBatch], rows: usize) -> Result<Returned, ModelError> {
        let (request, raw) = infer_request(&self.endpoint.model, inputs, &self.outputs);
        let answer: proto::ModelInferResponse = self.call_framed("ModelInfer", frame(&request, &raw))?;
        read_answer(answer, rows).map_err(|e| e.at(self.location()))
    }
}

/// The outputs of a `ModelInfer` answer's body (one framed gRPC message) for `rows` rows.
pub fn read_infer_body(body: &[u8], rows: usize) -> Result<Returned, AnswerError> {
    read_answer(decode_body("ModelInfer", body)?, rows)
}

/// The model's metadata from a `ModelMetadata` answer's body (one framed gRPC message).
pub fn read_metadata_body(body: &[u8]) -> Result<V2Metadata, AnswerError> {
    decode_body("ModelMetadata", body).map(metadata_of)
}

/// The one message of the answer to `method`, decoded.
fn decode_body<A: Message + Default>(method: &str, body: &[u8]) -> Result<A, AnswerError> {
    A::decode(unframe(body)?).map_err(|e| AnswerError::NotTheResponse { method: method.to_string(), message: e.to_string() })
}

/// A `ModelMetadata` answer as the inputs and outputs it declares.
fn metadata_of(metadata: proto::ModelMetadataResponse) -> V2Metadata {
    let inputs =
        metadata.inputs.into_iter().map(|t| DeclaredInput { ty: element_type(&t.datatype), name: t.name, shape: t.shape }).collect();
    let outputs = metadata.outputs.into_iter().map(|t| (t.name, element_type(&t.datatype))).collect();
    V2Metadata { inputs, outputs }
}

/// A `ModelInfer` request without its raw contents, and the values of each input, which
/// [`frame`] writes as `raw_input_contents` straight into the request body; the outputs asked for
/// by name.
fn infer_request<'a>(model: &str, inputs: &'a [InputBatch], outputs: &[String]) -> (proto::ModelInferRequest, Vec<&'a InputValues>) {
    let tensors = inputs
        .iter()
        .map(|batch| proto::InferInputTensor {
            name: batch.name.clone(),
            datatype: datatype(&batch.values).into(),
            shape: batch.shape.iter().map(|&d| d as i64).collect(),
        })
        .collect();
    let request = proto::ModelInferRequest {
        model_name: model.to_string(),
        model_version: String::new(),
        id: String::new(),
        inputs: tensors,
        outputs: outputs.iter().map(|name| proto::InferRequestedOutputTensor { name: name.clone() }).collect(),
        raw_input_contents: Vec::new(),
    };
    (request, inputs.iter().map(|batch| &batch.values).collect())
}

/// The length of a tensor's raw bytes: numbers little-endian, each text as a 4-byte
/// little-endian length and its UTF-8 bytes.
fn raw_len(values: &InputValues) -> usize {
    match values {
        InputValues::Float32(v) => v.len() * 4,
        InputValues::Float64(v) => v.len() * 8,
        InputValues::Int64(v) => v.len() * 8,
        InputValues::Int32(v) => v.len() * 4,
        InputValues::Float16(v) => v.len() * 2,
        InputValues::String(v) => v.iter().map(|s| s.len() + 4).sum(),
    }
}

/// A tensor's raw bytes appended to `out` (see [`raw_len`]).
fn write_raw(values: &InputValues, out: &mut Vec<u8>) {
    match values {
        InputValues::Float32(v) => write_numbers(v, out, |x, out| out.extend_from_slice(&x.to_le_bytes())),
        InputValues::Float64(v) => write_numbers(v, out, |x, out| out.extend_from_slice(&x.to_le_bytes())),
        InputValues::Int64(v) => write_numbers(v, out, |x, out| out.extend_from_slice(&x.to_le_bytes())),
        InputValues::Int32(v) => write_numbers(v, out, |x, out| out.extend_from_slice(&x.to_le_bytes())),
        InputValues::Float16(v) => write_numbers(v, out, |x, out| out.extend_from_slice(&x.to_le_bytes())),
        InputValues::String(v) => {
            for text in v {
                out.extend_from_slice(&(text.len() as u32).to_le_bytes());
                out.extend_from_slice(text.as_bytes());
            }
        }
    }
}

/// Numbers appended little-endian: their memory as it is on a little-endian machine (one copy
/// of the whole tensor), else each number by `one`.
fn write_numbers<T: bytemuck::Pod>(values: &[T], out: &mut Vec<u8>, one: impl Fn(&T, &mut Vec<u8>)) {
    if cfg!(target_endian = "little") {
        out.extend_from_slice(bytemuck::cast_slice(values));
    } else {
        values.iter().for_each(|x| one(x, out));
    }
}

/// The outputs of an answer for `rows` rows: the raw contents belong, in order, to the outputs
/// that carry no typed contents.
fn read_answer(answer: proto::ModelInferResponse, rows: usize) -> Result<Returned, AnswerError> {
    let mut raw = answer.raw_output_contents.into_iter();
    let mut result = Vec::with_capacity(answer.outputs.len());
    for tensor in answer.outputs {
        let name = tensor.name;
        if let Some(d) = tensor.shape.iter().find(|&&d| d < 0) {
            return Err(AnswerError::NegativeDimension { name, shape: format!("{:?}", tensor.shape), dimension: *d });
        }
        let Some(columns) = tensor.shape.get(1..).unwrap_or_default().iter().try_fold(1usize, |n, &d| n.checked_mul(d as usize)) else {
            return Err(AnswerError::ShapeOverflow { name, shape: format!("{:?}", tensor.shape) });
        };
        let columns = columns.max(1);
        let values = match tensor.contents.filter(|c| !is_empty(c)) {
            Some(contents) => typed_values(&contents),
            None => {
                let bytes = raw.next().ok_or_else(|| AnswerError::NoContents { name: name.clone() })?;
                raw_values(&name, &tensor.datatype, &bytes)?
            }
        };
        if rows.checked_mul(columns) != Some(values.len()) {
            return Err(AnswerError::ValueCount { name, found: values.len(), rows, shape: format!("{:?}", tensor.shape) });
        }
        let ty = element_type(&tensor.datatype);
        let raw_output = match (&ty, values) {
            (ElementType::Float32 | ElementType::Float64, Values::Numbers(values)) => RawOutput::Floats { values, columns },
            (ElementType::Int64 | ElementType::Int32, Values::Integers(labels)) => RawOutput::IntLabels(labels),
            (ElementType::String, Values::Texts(labels)) => RawOutput::TextLabels(labels),
            (ElementType::Other(other), _) => return Err(AnswerError::UnreadDatatype { name, datatype: other.clone() }),
            (_, _) => return Err(AnswerError::ContentsMismatch { name, datatype: tensor.datatype }),
        };
        result.push((name, ty, raw_output));
    }
    Ok(result)
}

/// Values of one output tensor.
enum Values {
    Numbers(Vec<f64>),
    Integers(Vec<i64>),
    Texts(Vec<String>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::Numbers(v) => v.len(),
            Values::Integers(v) => v.len(),
            Values::Texts(v) => v.len(),
        }
    }
}

fn is_empty(c: &proto::InferTensorContents) -> bool {
    c.bool_contents.is_empty()
        && c.int_contents.is_empty()
        && c.int64_contents.is_empty()
        && c.uint_contents.is_empty()
        && c.uint64_contents.is_empty()
        && c.fp32_contents.is_empty()
        && c.fp64_contents.is_empty()
        && c.bytes_contents.is_empty()
}

/// The typed contents of an output (only one list is filled).
fn typed_values(c: &proto::InferTensorContents) -> Values {
    if !c.fp64_contents.is_empty() {
        Values::Numbers(c.fp64_contents.clone())
    } else if !c.fp32_contents.is_empty() {
        Values::Numbers(c.fp32_contents.iter().map(|&x| f64::from(x)).collect())
    } else if !c.int64_contents.is_empty() {
        Values::Integers(c.int64_contents.clone())
    } else if !c.int_contents.is_empty() {
        Values::Integers(c.int_contents.iter().map(|&x| i64::from(x)).collect())
    } else if !c.uint64_contents.is_empty() {
        Values::Integers(c.uint64_contents.iter().map(|&x| x as i64).collect())
    } else if !c.uint_contents.is_empty() {
        Values::Integers(c.uint_contents.iter().map(|&x| i64::from(x)).collect())
    } else if !c.bool_contents.is_empty() {
        Values::Integers(c.bool_contents.iter().map(|&x| i64::from(x)).collect())
    } else {
        Values::Texts(c.bytes_contents.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect())
    }
}

/// Raw little-endian bytes of the output `name`, a tensor of `datatype`.
fn raw_values(name: &str, datatype: &str, bytes: &[u8]) -> Result<Values, AnswerError> {
    /// The values, unless the bytes are not a whole number of them.
    fn fixed<const N: usize, T>(bytes: &[u8], read: impl Fn([u8; N]) -> T) -> Option<Vec<T>> {
        (bytes.len() % N == 0).then(|| bytes.chunks_exact(N).map(|c| read(c.try_into().unwrap_or([0; N]))).collect())
    }
    let whole = || AnswerError::RawLength { name: name.to_string(), bytes: bytes.len(), datatype: datatype.to_string() };
    Ok(match datatype.to_ascii_uppercase().as_str() {
        "FP64" => Values::Numbers(fixed(bytes, f64::from_le_bytes).ok_or_else(whole)?),
        "FP32" => Values::Numbers(fixed(bytes, |b| f64::from(f32::from_le_bytes(b))).ok_or_else(whole)?),
        "INT64" => Values::Integers(fixed(bytes, i64::from_le_bytes).ok_or_else(whole)?),
        "UINT64" => Values::Integers(fixed(bytes, |b| u64::from_le_bytes(b) as i64).ok_or_else(whole)?),
        "INT32" => Values::Integers(fixed(bytes, |b| i64::from(i32::from_le_bytes(b))).ok_or_else(whole)?),
        "UINT32" => Values::Integers(fixed(bytes, |b| i64::from(u32::from_le_bytes(b))).ok_or_else(whole)?),
        "INT16" => Values::Integers(fixed(bytes, |b| i64::from(i16::from_le_bytes(b))).ok_or_else(whole)?),
        "UINT16" => Values::Integers(fixed(bytes, |b| i64::from(u16::from_le_bytes(b))).ok_or_else(whole)?),
        "INT8" => Values::Integers(fixed(bytes, |b: [u8; 1]| i64::from(b[0] as i8)).ok_or_else(whole)?),
        "UINT8" | "BOOL" => Values::Integers(fixed(bytes, |b: [u8; 1]| i64::from(b[0])).ok_or_else(whole)?),
        "BYTES" => {
            let mut texts = Vec::new();
            let mut at = 0;
            while at < bytes.len() {
                let len = bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
                let text = len.and_then(|len| bytes.get(at + 4..at + 4 + len));
                let Some(text) = text else { return Err(AnswerError::RawTextsCut { name: name.to_string() }) };
                texts.push(String::from_utf8_lossy(text).into_owned());
                at += 4 + text.len();
            }
            Values::Texts(texts)
        }
        other => return Err(AnswerError::RawDatatype { name: name.to_string(), datatype: other.to_string() }),
    })
}

/// `ModelInferRequest.raw_input_contents`: field 7, length-delimited.
const RAW_INPUT_CONTENTS_KEY: u8 = (7 << 3) | 2;

/// A gRPC message on the wire: not compressed (0), its length (4 bytes, big-endian), the message,
/// then `raw` written as `raw_input_contents` entries (a protobuf message may carry its fields in
/// any order), each tensor's values written once, straight into the body.
fn frame(message: &impl Message, raw: &[&InputValues]) -> Vec<u8> {
    let raw_fields: usize = raw.iter().map(|v| 1 + prost::encoding::encoded_len_varint(raw_len(v) as u64) + raw_len(v)).sum();
    let len = message.encoded_len() + raw_fields;
    let mut body = Vec::with_capacity(5 + len);
    body.push(0);
    body.extend_from_slice(&(len as u32).to_be_bytes());
    // Encoding into a Vec grows it as needed: it cannot run out of room.
    let _ = message.encode(&mut body);
    for values in raw {
        body.push(RAW_INPUT_CONTENTS_KEY);
        prost::encoding::encode_varint(raw_len(values) as u64, &mut body);
        write_raw(values, &mut body);
    }
    body
}

/// The one message of a unary answer.
fn unframe(body: &[u8]) -> Result<&[u8], AnswerError> {
    if body.is_empty() {
        return Err(AnswerError::NotGrpc);
    }
    if body.len() < 5 {
        return Err(AnswerError::ShortHeader { bytes: body.len() });
    }
    if body[0] != 0 {
        return Err(AnswerError::Compressed);
    }
    let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    body.get(5..5 + len).ok_or(AnswerError::CutShort { got: body.len() - 5, len })
}

/// A `grpc-message` header's text (percent-encoded), decoded.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 3 <= bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// gRPC's name for a status code.
fn code_name(code: u32) -> &'static str {
    match code {
        1 => "CANCELLED",
        2 => "UNKNOWN",
        3 => "INVALID_ARGUMENT",
        4 => "DEADLINE_EXCEEDED",
        5 => "NOT_FOUND",
        6 => "ALREADY_EXISTS",
        7 => "PERMISSION_DENIED",
        8 => "RESOURCE_EXHAUSTED",
        9 => "FAILED_PRECONDITION",
        10 => "ABORTED",
        11 => "OUT_OF_RANGE",
        12 => "UNIMPLEMENTED",
        13 => "INTERNAL",
        14 => "UNAVAILABLE",
        15 => "DATA_LOSS",
        16 => "UNAUTHENTICATED",
        _ => "unknown code",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_framed_and_unframed() {
        let request = proto::ModelReadyRequest { name: "census-lr".into(), version: String::new() };
        let body = frame(&request, &[]);
        assert_eq!(body[0], 0);
        assert_eq!(u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize, body.len() - 5);
        let back = proto::ModelReadyRequest::decode(unframe(&body).unwrap()).unwrap();
        assert_eq!(back, request);
        assert!(unframe(&[]).unwrap_err().to_string().contains("gRPC port"));
        assert!(unframe(&body[..body.len() - 1]).unwrap_err().to_string().contains("cut short"));
        assert_eq!(unframe(&[1, 0, 0, 0, 0]), Err(AnswerError::Compressed));
    }

    #[test]
    fn inputs_go_as_little_endian_bytes_and_texts_with_their_lengths() {
        let inputs = vec![
            InputBatch { name: "x".into(), shape: vec![2, 1], values: InputValues::Float64(vec![1.5, -2.0]) },
            InputBatch { name: "sex".into(), shape: vec![2, 1], values: InputValues::String(vec!["Male".into(), "".into()]) },
        ];
        let (request, raw) = infer_request("m", &inputs, &["predict_proba".into()]);
        // What the server decodes from the body: the raw contents written after the other fields.
        let body = frame(&request, &raw);
        let decoded = proto::ModelInferRequest::decode(unframe(&body).unwrap()).unwrap();
        assert_eq!(decoded.model_name, "m");
        assert_eq!(decoded.inputs[0].datatype, "FP64");
        assert_eq!(decoded.inputs[1].datatype, "BYTES");
        assert_eq!(decoded.inputs[1].shape, vec![2, 1]);
        assert_eq!(decoded.raw_input_contents[0], [1.5f64.to_le_bytes(), (-2.0f64).to_le_bytes()].concat());
        assert_eq!(decoded.raw_input_contents[1], [&4u32.to_le_bytes()[..], b"Male", &0u32.to_le_bytes()].concat());
        assert_eq!(decoded.outputs[0].name, "predict_proba");
        assert!(matches!(raw_values("sex", "BYTES", &decoded.raw_input_contents[1]).unwrap(), Values::Texts(t) if t == ["Male", ""]));
    }

    #[test]
    fn raw_outputs_are_read_in_order_and_checked_against_the_rows() {
        let proba: Vec<u8> = [0.25f64, 0.75, 0.5, 0.5].iter().flat_map(|x| x.to_le_bytes()).collect();
        let labels: Vec<u8> = [1i64, 0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let answer = proto::ModelInferResponse {
            outputs: vec![
                proto::InferOutputTensor { name: "predict_proba".into(), datatype: "FP64".into(), shape: vec![2, 2], contents: None },
                proto::InferOutputTensor { name: "predict".into(), datatype: "INT64".into(), shape: vec![2, 1], contents: None },
            ],
            raw_output_contents: vec![proba.clone(), labels],
            ..Default::default()
        };
        let returned = read_answer(answer.clone(), 2).unwrap();
        assert_eq!(returned[0].2, RawOutput::Floats { values: vec![0.25, 0.75, 0.5, 0.5], columns: 2 });
        assert_eq!(returned[1].2, RawOutput::IntLabels(vec![1, 0]));
        assert!(read_answer(answer, 3).unwrap_err().to_string().contains("holds 4 values for 3 rows"));
        let typed = proto::ModelInferResponse {
            outputs: vec![proto::InferOutputTensor {
                name: "label".into(),
                datatype: "BYTES".into(),
                shape: vec![1],
                contents: Some(proto::InferTensorContents { bytes_contents: vec![b">50K".to_vec()], ..Default::default() }),
            }],
            ..Default::default()
        };
        assert_eq!(read_answer(typed, 1).unwrap()[0].2, RawOutput::TextLabels(vec![">50K".into()]));
        let e = raw_values("p", "FP64", &proba[..7]).err().unwrap().to_string();
        assert_eq!(e, "output \"p\": 7 raw bytes are not a whole number of FP64 values");
    }

    #[test]
    fn a_negative_or_overflowing_shape_is_refused() {
        // Regression (fuzzing, issue 36): a dimension product that overflowed, or a negative
        // dimension cast to a huge column count, panicked in debug builds.
        let answer = |shape: Vec<i64>| proto::ModelInferResponse {
            outputs: vec![proto::InferOutputTensor { name: "p".into(), datatype: "FP64".into(), shape, contents: None }],
            raw_output_contents: vec![[0.5f64, 0.25].iter().flat_map(|x| x.to_le_bytes()).collect()],
            ..Default::default()
        };
        let e = read_answer(answer(vec![2, i64::MAX, 4]), 2).unwrap_err().to_string();
        assert!(e.contains("counts more values than a computer can hold"), "{e}");
        let e = read_answer(answer(vec![2, -3]), 2).unwrap_err().to_string();
        assert!(e.contains("output \"p\": its shape [2, -3] has a negative dimension (-3)"), "{e}");
        // The same answer framed, as the fuzz target and a server send it.
        let body = frame(&answer(vec![2, 1]), &[]);
        assert_eq!(read_infer_body(&body, 2).unwrap()[0].2, RawOutput::Floats { values: vec![0.5, 0.25], columns: 1 });
        assert!(read_metadata_body(&body[..3]).unwrap_err().to_string().contains("shorter than a gRPC message header"));
    }

    #[test]
    fn status_messages_are_percent_decoded() {
        assert_eq!(percent_decode("Model%20census%20not%20found"), "Model census not found");
        assert_eq!(percent_decode("100%"), "100%");
    }
}
