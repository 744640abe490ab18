//! Opening a model with an executor: what a `load_model` stage asks for ([`OpenRequest`]: where
//! the model is, which output, which executor) becomes a [`Model`] over the data's rows, and what
//! opening learned about it ([`Opened`]: the output read, how rows reach it, the executor and how
//! it was checked) — the facts the stage writes into its figures. By place, one private module
//! each: an ONNX file (`onnx`: the native tree and dense executors, tract, ONNX Runtime, and the
//! check against ONNX Runtime), a model server or a program (`remote`), a language model (`llm`)
//! and a model handed over in code (`provided`).
//!
//! A model file saved by a train stage (`.json`) is not opened here: it has no executor to choose
//! and no output to find, and the stage reads it (with the recipe it is retrained from) through
//! [`crate::ModelFile`].

mod llm;
mod onnx;
mod provided;
mod remote;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::agreement::Agreement;
use crate::error::ModelError;
use crate::inputs::Feeding;
use crate::llm::config::LlmConfig;
use crate::llm::offline::AnswerSource;
use crate::model::Model;
use crate::outputs::{Favourable, OutputReader, OutputTransform};
use crate::provided::ProvidedModel;
use crate::remote::http::HttpSettings;
use crate::remote::mlflow::MlflowEndpoint;
use crate::remote::v2::{V2Endpoint, V2Metadata};
use crate::remote::Traffic;
use fairpipe_data::figures::FigureNames;
use fairpipe_data::Dataset;

/// `executor = "auto" | "native" | "tract" | "onnxruntime"`: what runs an ONNX file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, fairpipe_keys::KeyType)]
#[serde(rename_all = "snake_case")]
pub enum Executor {
    /// The native tree executor for a tree ensemble it covers, else ONNX Runtime where the graph
    /// needs it, else the native dense executor when it reproduces tract on the data, else tract.
    #[default]
    Auto,
    /// The native tree executor (a tree ensemble it covers) or the native dense executor (a dense
    /// stack that reproduces tract); any other graph is an error naming what is not covered.
    Native,
    /// Always tract.
    Tract,
    /// Always ONNX Runtime.
    Onnxruntime,
}

impl Executor {
    /// The name a pipeline writes it with.
    pub fn name(self) -> &'static str {
        match self {
            Executor::Auto => "auto",
            Executor::Native => "native",
            Executor::Tract => "tract",
            Executor::Onnxruntime => "onnxruntime",
        }
    }
}

/// Where the model to open is.
pub enum Place {
    /// An ONNX file (a `.json` model saved by a train stage is read by the stage, not opened).
    File(PathBuf),
    /// A model run outside fairpipe: a server or a program.
    Remote(Remote),
    /// A language model behind an OpenAI-compatible endpoint.
    Llm {
        /// The `llm` block.
        config: LlmConfig,
        /// The folder its files (the prompt template, the cache) are relative to.
        dir: PathBuf,
    },
    /// A model handed over in code, bound to the dataset when it is opened.
    Provided(ProvidedModel),
}

/// Where a model run outside fairpipe is.
pub enum Remote {
    /// A KServe V2 server, over HTTP/JSON or (`grpc`) its gRPC port.
    Server {
        /// The server and the model's name on it.
        endpoint: V2Endpoint,
        /// Timeouts, retries, token.
        settings: HttpSettings,
        /// Outputs to ask the server for (empty: its default outputs).
        outputs: Vec<String>,
        /// Whether over gRPC.
        grpc: bool,
        /// The model's metadata, when validation found it ready and read it (opening then asks
        /// the server nothing more); `None`: opening asks.
        seen: Option<V2Metadata>,
    },
    /// An MLflow scoring server.
    Mlflow {
        /// The server.
        endpoint: MlflowEndpoint,
        /// Timeouts, retries, token.
        settings: HttpSettings,
        /// Whether validation found the model loaded (opening then does not ask again).
        seen_ready: bool,
    },
    /// A program started in the pipeline's folder.
    Program {
        /// The program and its arguments.
        argv: Vec<String>,
        /// The folder it starts in.
        dir: PathBuf,
    },
}

impl Place {
    /// Where the model is, for messages: its file, server, command, endpoint or description.
    pub fn location(&self) -> String {
        match self {
            Place::File(path) => path.display().to_string(),
            Place::Remote(Remote::Server { endpoint, .. }) => endpoint.base.clone(),
            Place::Remote(Remote::Mlflow { endpoint, .. }) => endpoint.base.clone(),
            Place::Remote(Remote::Program { argv, .. }) => format!("command {argv:?}"),
            Place::Llm { config, .. } => config.base_url.clone(),
            Place::Provided(provided) => provided.0.describe(),
        }
    }
}

/// What to open, and how.
pub struct OpenRequest {
    /// Where the model is.
    pub place: Place,
    /// The output holding the probabilities; `None`: the first that reads as probabilities.
    pub output: Option<String>,
    /// How an output of logits is turned into probabilities.
    pub transform: OutputTransform,
    /// The model's own class that is the data's favourable label; `None`: the class named like
    /// the data's favourable label, else class 1.
    pub favourable_class: Option<i64>,
    /// Which data column feeds which of the model's named inputs (inputs not listed: the column
    /// of their own name).
    pub inputs: BTreeMap<String, String>,
    /// What runs an ONNX file.
    pub executor: Executor,
    /// ONNX Runtime's library (or its folder); `None`: `ORT_DYLIB_PATH`, then python3's package.
    pub onnxruntime: Option<PathBuf>,
    /// How rows are sent to a server or a program.
    pub traffic: Traffic,
}

/// What opening a model learned about it, written into the `load_model` stage's figures (the
/// names and skip rules are `summary.json`'s). `agreement` is the stage's: it measures it once the
/// model is open (opening leaves it `None`), and it sits here to keep the figures' order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct Opened {
    /// The ONNX output read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// How P(favourable) is read from it ("column 1", "ZipMap entry \">50K\"", "labels only").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_read: Option<String>,
    /// Whether the model gives labels only (no probabilities: AUC, calibration and
    /// probability-gradient searches are then not meaningful).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels_only: Option<bool>,
    /// Whether the favourable class was assumed to be the model's class 1 (integer classes, text
    /// labels in the data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub favourable_class_assumed: Option<bool>,
    /// The model's classes when it has three or more: the audit then reads P(favourable) of the
    /// class named like the data's favourable label, against the rest of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_classes: Option<Vec<String>>,
    /// Whether the audit is the favourable class against the rest (a model of three or more
    /// classes), said also as a warning at the top of the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub favourable_vs_rest: Option<bool>,
    /// How rows reach the model ("one float32 input …", "13 named inputs (raw columns)").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_contract: Option<String>,
    /// How the model's scores agree with the data's labels (train and test rows): accuracy and
    /// AUC with DeLong's 95% interval. A model read the wrong way round is refused (its
    /// favourable class assumed) or warned of (named). Measured by the stage, not by opening.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreement: Option<Agreement>,
    /// Feature columns the model does not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unused_features: Option<Vec<String>>,
    /// Rows the native executor was checked against tract on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_checked_rows: Option<usize>,
    /// Largest |P_native − P_tract| on them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_max_abs_diff: Option<f64>,
    /// Labels that differ between the two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_label_flips: Option<usize>,
    /// The executor that runs the model (ONNX): "native dense …", "tract", "onnxruntime 1.32.0".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<String>,
    /// Why ONNX Runtime runs it (the parts tract cannot run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor_reason: Option<String>,
    /// How the executor compared with onnxruntime on the data (auto, when onnxruntime is installed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_check: Option<String>,
    /// Rows compared with onnxruntime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_checked_rows: Option<usize>,
    /// Largest |P − P_onnxruntime| on them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_max_abs_diff: Option<f64>,
    /// The ONNX Runtime library loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onnxruntime_path: Option<String>,
    /// A model server's inputs: "listed by the server's metadata", or what was assumed when the
    /// metadata lists none (MLServer's scikit-learn runtime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_inputs: Option<String>,
}

impl OpenRequest {
    /// Open the model for `data`'s rows, with what was learned about it. A model that does not
    /// read a protected column, an output it lacks, a class it does not have or an executor that
    /// cannot run it is refused here. `answers`: where a language model's answers come from (the
    /// run's choice; other models ignore it).
    pub fn open(&self, data: &Dataset, answers: &AnswerSource) -> Result<(Arc<dyn Model>, Opened), ModelError> {
        let mut opened = Opened::default();
        let model = match &self.place {
            Place::File(path) => onnx::open(self, path, data, &mut opened)?,
            Place::Llm { config, dir } => llm::open(config, dir, answers, data, &mut opened)?,
            Place::Provided(provided) => provided::open(provided, data, &mut opened)?,
            Place::Remote(remote) => remote::open(self, remote, data, &mut opened)?,
        };
        Ok((model, opened))
    }

    /// The favourable class as the model is asked for it: the model's own class when
    /// `favourable_class` names it, else the data's favourable label (matched by name).
    fn favourable(&self, data: &Dataset) -> Favourable {
        match self.favourable_class {
            Some(class) => Favourable { label: class.to_string(), is_zero: class == 0, code: None },
            None => Favourable { label: data.label_values[1].clone(), is_zero: data.label_flipped, code: data.label_code },
        }
    }

    /// How the data's rows feed the model's inputs: the `inputs` map and the columns with codes.
    fn feeding(&self, data: &Dataset) -> Feeding {
        Feeding { inputs: self.inputs.clone(), coded: data.coded.clone() }
    }
}

/// Record a model of three or more classes (`model_classes`, `favourable_vs_rest`).
fn versus_rest(opened: &mut Opened, reader: &OutputReader) {
    if !reader.classes.is_empty() {
        opened.model_classes = Some(reader.classes.iter().map(ToString::to_string).collect());
        opened.favourable_vs_rest = Some(true);
    }
}

/// What the output reader learned: the output, how it is read, whether labels only, whether the
/// favourable class was assumed, the classes of a model of three or more.
fn read_output(opened: &mut Opened, output: &str, reader: &OutputReader) {
    opened.output = Some(output.to_string());
    opened.output_read = Some(reader.describe());
    opened.labels_only = Some(reader.labels_only());
    opened.favourable_class_assumed = Some(reader.assumed_class);
    versus_rest(opened, reader);
}

/// The feature columns of `data` the model does not read (`None` when it reads them all).
fn unused_features(data: &Dataset, read: &[usize]) -> Option<Vec<String>> {
    let unused: Vec<String> =
        (0..data.domain.width()).filter(|i| !read.contains(i)).map(|i| data.domain.attributes[i].name.clone()).collect();
    (!unused.is_empty()).then_some(unused)
}

/// A model that does not read a protected column cannot discriminate on it, and every search
/// would report nothing: refuse it rather than print a clean result.
fn check_protected_read(path: &Path, data: &Dataset, read: &[usize]) -> Result<(), ModelError> {
    let unread: Vec<&str> = data
        .domain
        .protected_indices()
        .into_iter()
        .filter(|i| !read.contains(i))
        .map(|i| data.domain.attributes[i].name.as_str())
        .collect();
    if unread.is_empty() {
        return Ok(());
    }
    Err(ModelError::Onnx {
        path: path.to_path_buf(),
        message: format!(
            "the model reads no input for the protected column(s) {unread:?}, so no test could find discrimination on them; protect columns the model reads, or check the input names"
        ),
    })
}

/// [`check_protected_read`] for a model that is no file (a server, a program, a model handed
/// over in code): its refusal names `location`.
fn check_protected_read_at(location: &str, data: &Dataset, read: &[usize]) -> Result<(), ModelError> {
    check_protected_read(Path::new(location), data, read).map_err(|e| match e {
        ModelError::Onnx { message, .. } => ModelError::Remote { url: location.to_string(), message },
        other => other,
    })
}
