//! What can be wrong with a model server's URL ([`EndpointError`]) or with its answer
//! ([`AnswerError`]): the remote protocols' errors, each turned into a [`ModelError::Remote`]
//! naming the URL where a request was made.

use crate::error::ModelError;

/// A `url` (and `model`) that does not name a model on a server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// Not an `http://` or `https://` URL.
    #[error("{url:?} is not an http:// or https:// URL")]
    NotHttp {
        /// The URL as given.
        url: String,
    },
    /// `model` names another model than the URL does.
    #[error("`model = {given:?}` differs from the model named in the URL ({in_url:?})")]
    ModelDiffers {
        /// The `model` key's value.
        given: String,
        /// The model the URL names.
        in_url: String,
    },
    /// Neither `model` nor the URL names the model.
    #[error("name the model: `model = \"NAME\"`, or a URL ending /v2/models/NAME")]
    NoModel,
}

/// An answer from a model server (KServe V2 over HTTP or gRPC, MLflow) or a model program that
/// fairpipe cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// A JSON answer has no list of outputs (`outputs`, `predictions`).
    #[error("the answer has no {key}: {start}")]
    NoOutputs {
        /// What is missing (`"outputs" list`, `"predictions"`).
        key: &'static str,
        /// The answer's start.
        start: String,
    },
    /// An entry of a metadata list has no name.
    #[error("metadata: an entry of \"{list}\" has no name: {entry}")]
    UnnamedTensor {
        /// The list (`inputs`, `outputs`).
        list: String,
        /// The entry.
        entry: String,
    },
    /// MLflow's `predictions` mixes records and plain values.
    #[error("\"predictions\" mixes records and values: {start}")]
    MixedRecords {
        /// The answer's start.
        start: String,
    },
    /// MLflow's `predictions` is neither a list nor an object.
    #[error("\"predictions\" is neither a list nor an object: {start}")]
    PredictionsNotListed {
        /// The start of `predictions`.
        start: String,
    },
    /// An output is not a list with one value per row.
    #[error("output {name:?} is not a list (one value per row)")]
    NotAList {
        /// The output.
        name: String,
    },
    /// An output's rows are lists of different lengths.
    #[error("output {name:?}: rows of different lengths")]
    RaggedRows {
        /// The output.
        name: String,
    },
    /// An output's list has another length than the batch.
    #[error("output {name:?} has {found} values for a batch of {rows} rows")]
    BatchLength {
        /// The output.
        name: String,
        /// Values in the list.
        found: usize,
        /// Rows sent.
        rows: usize,
    },
    /// An output holds another number of values than its rows and shape call for.
    #[error("output {name:?} holds {found} values for {rows} rows (shape {shape})")]
    ValueCount {
        /// The output.
        name: String,
        /// Values it holds.
        found: usize,
        /// Rows sent.
        rows: usize,
        /// Its shape, as the server gave it (`[2, 2]`).
        shape: String,
    },
    /// An output's shape has more values than a `usize` counts.
    #[error("output {name:?}: its shape {shape} counts more values than a computer can hold")]
    ShapeOverflow {
        /// The output.
        name: String,
        /// Its shape (`[2, 4294967296, 4294967296]`).
        shape: String,
    },
    /// An output's shape has a negative dimension.
    #[error("output {name:?}: its shape {shape} has a negative dimension ({dimension})")]
    NegativeDimension {
        /// The output.
        name: String,
        /// Its shape.
        shape: String,
        /// The first negative dimension.
        dimension: i64,
    },
    /// A value that should be a number is not.
    #[error("output {name:?}: {value} is not a number")]
    NotANumber {
        /// The output.
        name: String,
        /// The value, as JSON.
        value: String,
    },
    /// A value that should be an integer is not.
    #[error("output {name:?}: {value} is not an integer")]
    NotAnInteger {
        /// The output.
        name: String,
        /// The value, as JSON.
        value: String,
    },
    /// An output's datatype is not one fairpipe reads.
    #[error("output {name:?} has datatype {datatype}, which fairpipe does not read")]
    UnreadDatatype {
        /// The output.
        name: String,
        /// Its datatype.
        datatype: String,
    },
    /// A gRPC output with neither typed nor raw contents.
    #[error("output {name:?} has neither contents nor raw contents")]
    NoContents {
        /// The output.
        name: String,
    },
    /// A gRPC output whose typed contents are of another type than its datatype.
    #[error("output {name:?}: its contents do not match its datatype {datatype}")]
    ContentsMismatch {
        /// The output.
        name: String,
        /// Its datatype.
        datatype: String,
    },
    /// A gRPC output's raw bytes are not a whole number of values.
    #[error("output {name:?}: {bytes} raw bytes are not a whole number of {datatype} values")]
    RawLength {
        /// The output.
        name: String,
        /// Bytes received.
        bytes: usize,
        /// Its datatype.
        datatype: String,
    },
    /// A gRPC output's raw texts (length, bytes) stop before their end.
    #[error("output {name:?}: its raw BYTES are cut short")]
    RawTextsCut {
        /// The output.
        name: String,
    },
    /// A gRPC output's raw bytes are of a datatype fairpipe does not read.
    #[error("output {name:?}: datatype {datatype} is not read by fairpipe")]
    RawDatatype {
        /// The output.
        name: String,
        /// Its datatype.
        datatype: String,
    },
    /// An empty gRPC answer without a status: most likely not a gRPC port.
    #[error(
        "the server sent an empty answer and no gRPC status in its headers (its status, in the HTTP/2 trailers, is not readable here); is this a gRPC port?"
    )]
    NotGrpc,
    /// A gRPC answer shorter than a message header.
    #[error("the answer is {bytes} bytes, shorter than a gRPC message header")]
    ShortHeader {
        /// Bytes received.
        bytes: usize,
    },
    /// A compressed gRPC message.
    #[error("the answer is compressed; fairpipe asks for and reads uncompressed gRPC messages")]
    Compressed,
    /// A gRPC message shorter than its header says.
    #[error("the answer is cut short: {got} of {len} message bytes")]
    CutShort {
        /// Message bytes received.
        got: usize,
        /// Message bytes announced.
        len: usize,
    },
    /// A gRPC message that is not the answer to the call.
    #[error("the answer to {method} is not a {method} response: {message}")]
    NotTheResponse {
        /// The call (`ModelInfer`).
        method: String,
        /// What the decoder said.
        message: String,
    },
}

impl AnswerError {
    /// The error as the answer from `url` (or the model program `url` names).
    pub fn at(self, url: impl Into<String>) -> ModelError {
        ModelError::Remote { url: url.into(), message: self.to_string() }
    }
}
