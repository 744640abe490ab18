//! The models' error: building, loading or running a model failed ([`ModelError`]).

use std::path::PathBuf;

/// Building, loading or running a model failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The ONNX file could not be loaded or optimised.
    #[error("{path}: cannot load ONNX model: {message}")]
    Onnx {
        /// The model file.
        path: PathBuf,
        /// What tract said.
        message: String,
    },
    /// The model's input width differs from the data's feature count.
    #[error("model expects {expected} input features but the data has {found}")]
    Width {
        /// What the model takes.
        expected: usize,
        /// What the data provides.
        found: usize,
    },
    /// The `output` key names an output the model does not have.
    #[error("{model}: no output named {wanted:?}; {outputs}")]
    MissingOutput {
        /// The model file or endpoint.
        model: String,
        /// The output asked for.
        wanted: String,
        /// The outputs it has ("its outputs are …"), and how to ask for one.
        outputs: String,
    },
    /// Running the model failed.
    #[error("model inference failed: {0}")]
    Inference(String),
    /// A model behind a URL could not be reached, refused a request or answered in a form
    /// fairpipe cannot read.
    #[error("{url}: {message}")]
    Remote {
        /// The endpoint (never with a token).
        url: String,
        /// What went wrong: the status and the start of the response body, or the transport error.
        message: String,
    },
    /// Training failed.
    #[error("training failed: {0}")]
    Train(String),
    /// A model returned NaN or an infinite value.
    #[error("model output {output} is {value} for row {row}{}: a model that returns NaN or infinity cannot be audited; check the row's values against the model's training data (a missing value, a category or range it never saw)", features_of(.features))]
    NotFinite {
        /// The output read.
        output: String,
        /// The row's position in the batch scored.
        row: usize,
        /// The value returned.
        value: f64,
        /// The row's encoded features, when known.
        features: Vec<f64>,
    },
    /// An output read as probabilities holds something else (logits, scores).
    #[error("model output {output} does not hold probabilities: {problem} at row {row} ({values:?}); {fix}")]
    NotProbabilities {
        /// The output read.
        output: String,
        /// The row's position in the batch scored.
        row: usize,
        /// The row's values.
        values: Vec<f64>,
        /// What is wrong with them.
        problem: String,
        /// What to set instead.
        fix: String,
    },
    /// ONNX Runtime is needed but cannot be started.
    #[error("{path}: {reason} needs ONNX Runtime, which is not available: {message}")]
    RuntimeMissing {
        /// The model file.
        path: PathBuf,
        /// Which operator, input or output needs it.
        reason: String,
        /// What was tried, and the install command.
        message: String,
    },
    /// A saved model could not be read or written.
    #[error("{path}: {message}")]
    File {
        /// The model file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// " (features [1, 2, 3])" when the features are known.
fn features_of(features: &[f64]) -> String {
    if features.is_empty() {
        String::new()
    } else {
        format!(" (encoded features {features:?})")
    }
}
