//! `load_model`: load a model under test from an ONNX file (run natively, by tract or by ONNX
//! Runtime), from a model file saved by `train`, behind an inference server (KServe V2, MLflow), or
//! as a program (`command`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::model_output::{model_output_scored, ModelFigures};
use super::train::DATA_INPUT;
use crate::data::Dataset;
use crate::error::{Error, ModelError, Result, StageError};
use crate::models::agreement::{Agreement, Verdict};
use crate::models::inputs::ElementType;
use crate::models::llm::config::{LlmConfig, ScoreFrom};
use crate::models::onnx::facts::{graph_facts, GraphFacts};
use crate::models::onnx::runtime::{install_advice, runtime};
use crate::models::open::{OpenRequest, Opened, Place, Remote};
use crate::models::outputs::OutputTransform;
use crate::models::provided::ProvidedModel;
use crate::models::remote::grpc::GrpcBackend;
use crate::models::remote::http::{Http, HttpSettings};
use crate::models::remote::mlflow::MlflowEndpoint;
use crate::models::remote::v2::{V2Endpoint, V2Metadata};
use crate::models::remote::Traffic;
use crate::models::retry::RetryPolicy;
use crate::models::trees::Graph as TreeGraph;
use crate::models::Model;
use crate::models::{Complement, ModelFile};
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::{KeyType, StageKeys};
use crate::stage::kind::{compare_as, FigureDoc, FigureNames, StageEnv, StageKind};
use crate::stage::meaning::{InRun, StageFigures};
use crate::stage::{Artifact, ArtifactKind, ColumnProblem, Inputs, LabelUse, Stage, StageContext, StageOutput};
use crate::suggest::hint;

/// `executor = "auto" | "native" | "tract" | "onnxruntime"` (opening a model is the models
/// crate's, [`crate::models::open`]).
pub use crate::models::open::Executor;

/// The `load_model` stage kind.
pub const KIND: StageKind = StageKind {
    name: "load_model",
    doc: "Load a model under test from an ONNX file, from a model file saved by a train stage (which can be retrained), or run where it lives: behind a model server speaking the Open Inference Protocol (KServe V2: KServe, MLServer, Triton; `url`) or MLflow's scoring protocol (`protocol = \"mlflow\"`), or as a program reading batches on stdin (`command`). ONNX models are run natively (plain dense graphs, once they reproduce tract), by tract (tensor graphs), or by ONNX Runtime (scikit-learn Pipelines, tree ensembles, ZipMap outputs, string, float64 or several named inputs). Inputs follow the model-input contract (docs/models.md); the probability of the favourable label is found among the outputs and checked. Reports train and test accuracy on the dataset.",
    inputs: DATA_INPUT,
    output: ArtifactKind::Model,
    keys: LoadModelConfig::keys,
    tag: None,
    example: "[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"models/census.onnx\"",
    configure: configure::<LoadModelConfig>,
    fields: fields_of::<LoadModelConfig>,
    read: read_debug::<LoadModelConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::Runs,
    figures: FigureDoc {
        compared: &["accuracy_test"],
        compare: compare_figures,
        ..FigureDoc::of::<LoadModelFigures>()
    },
};

/// The figures a sweep compares a `load_model` stage on (`FigureDoc::compared`).
fn compare_figures(entry: &crate::stage::summary::StageSummary) -> Vec<serde_json::Value> {
    use serde_json::Value;
    compare_as::<LoadModelFigures>(entry, 1, |f| vec![Value::from(f.model.accuracy_test)])
}

/// `protocol = "v2" | "grpc-v2" | "mlflow"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, KeyType)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// The Open Inference Protocol (KServe V2) over HTTP/JSON.
    #[default]
    V2,
    /// The Open Inference Protocol over gRPC, the tensors sent as raw bytes (KServe's name for it).
    #[serde(rename = "grpc-v2")]
    GrpcV2,
    /// MLflow's scoring server (`POST /invocations`, `dataframe_split`).
    Mlflow,
}

fn default_batch_size() -> usize {
    1024
}
fn default_concurrency() -> usize {
    4
}
fn default_connect_timeout() -> f64 {
    5.0
}
fn default_timeout() -> f64 {
    60.0
}
fn default_retries() -> u32 {
    RetryPolicy::MODEL_SERVER.retries
}

/// The `load_model` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields)]
pub struct LoadModelConfig {
    /// An .onnx file, or a .json model saved by a train stage, relative to the pipeline file.
    #[serde(default)]
    #[key(default = "one of path, url, command and llm")]
    pub path: Option<PathBuf>,
    /// A model behind a model server: http(s)://host:port, or …/v2/models/NAME (KServe V2), or
    /// …/invocations (MLflow).
    #[serde(default)]
    #[key(default = "one of path, url, command and llm")]
    pub url: Option<String>,
    /// A model run as a program, e.g. ["python3", "model.py"] (in the pipeline's folder):
    /// started once, a JSON line per batch on stdin, a JSON line of outputs back
    /// (docs/remote-models.md).
    #[serde(default)]
    #[key(default = "one of path, url, command and llm")]
    pub command: Option<Vec<String>>,
    /// The server's protocol: v2 (the Open Inference Protocol of KServe, MLServer and Triton,
    /// over HTTP/JSON), grpc-v2 (the same over gRPC with the tensors as raw bytes: url = the gRPC
    /// port, e.g. http://host:8081; the fastest) or mlflow (MLflow's scoring server: POST
    /// /invocations, the data's columns by name).
    #[serde(default)]
    pub protocol: Protocol,
    /// The model's name on the server.
    #[serde(default)]
    #[key(default = "the name in the URL")]
    pub model: Option<String>,
    /// Outputs to ask the server for, e.g. ["predict_proba"] (MLServer's scikit-learn runtime
    /// returns labels unless asked).
    #[serde(default)]
    #[key(default = "[] (the server's default outputs)")]
    pub outputs: Vec<String>,
    /// Most rows per request (rows asked for at the same time are merged up to it).
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
    /// Requests in flight at once for the whole model, whatever calls it (a command: one).
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Seconds allowed to connect.
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_s: f64,
    /// Seconds allowed for one request.
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Tries after the first on a connection error, 429 or 5xx (exponential backoff with jitter).
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Environment variable holding a bearer token (the token itself never goes in the
    /// pipeline).
    #[serde(default)]
    #[key(default = "no token")]
    pub token_env: Option<String>,
    /// Most rows the run may send to the server; the run fails rather than send more.
    #[serde(default)]
    #[key(default = "no cap")]
    pub max_queries: Option<u64>,
    /// The model's output holding the probabilities (a [N,2] or [N,1] tensor, a ZipMap, or
    /// labels).
    #[serde(default)]
    #[key(default = "the first output that reads as probabilities (names with \"prob\" first, labels last)")]
    pub output: Option<String>,
    /// Turn an output of logits into probabilities; without it, values outside [0, 1] or rows
    /// not summing to 1 are refused.
    #[serde(default)]
    pub output_transform: OutputTransform,
    /// The model's own class (0, 1, …: its column, ZipMap key or label) that is the data's
    /// favourable label, for a model whose classes are numbered while the data's label is text —
    /// e.g. 0 when its column 0 holds P(favourable).
    #[serde(default)]
    #[key(default = "the model's class named like the data's favourable label, else class 1")]
    pub favourable_class: Option<i64>,
    /// Which data column feeds which of the model's named inputs, for exports whose input names
    /// differ from the columns: inputs = { edu_num = "educational-num" } (inputs not listed keep
    /// their own name); the names are checked against the model's inputs when the pipeline is
    /// validated and against the data's columns when it runs. Numeric inputs of any type ONNX
    /// Runtime takes (float32, float64, float16, int64, int32) get the encoded features cast to
    /// it, once a check shows the cast loses nothing the model reads.
    #[serde(default)]
    #[key(ty = "table", default = "each named input from the column of its own name")]
    pub inputs: BTreeMap<String, String>,
    /// auto: the native tree executor (native-trees) for tree ensembles it covers
    /// (TreeEnsembleClassifier/Regressor with Cast, Identity, ZipMap, ArrayFeatureExtractor,
    /// Normalizer, Scaler, Add/Sub/Mul/Div by a constant, on one float input), held against ONNX
    /// Runtime when it is installed; ONNX Runtime for other ai.onnx.ml operators,
    /// string/float64/several inputs, sequence or map outputs, or what tract refuses; else tract,
    /// replaced by the native dense executor once it reproduces tract on every row of the data
    /// (no label change, |dp| <= 1e-5). native: the native tree or dense executor, an error
    /// naming the operator it does not cover.
    #[serde(default)]
    pub executor: Executor,
    /// libonnxruntime.so (or the folder holding it) to load, relative to the pipeline file.
    #[serde(default)]
    #[key(default = "ORT_DYLIB_PATH, then python3's onnxruntime package")]
    pub onnxruntime: Option<PathBuf>,
    /// A large language model behind an OpenAI-compatible endpoint, asked about each row through
    /// a prompt template: its keys are the llm.* lines below. See docs/llm-audits.md.
    #[serde(default)]
    #[key(nested, ty = "table", default = "one of path, url, command and llm")]
    pub llm: Option<LlmConfig>,
    /// A model handed over in code instead of `path`, `url` or `command` (library use, e.g. a
    /// Python object's `predict_proba`; not in TOML): bound to the dataset when the stage runs.
    #[serde(skip)]
    pub provided: Option<ProvidedModel>,
}

/// Why a model server's HTTP settings cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum HttpSettingsError {
    /// A time that is not a positive number of seconds.
    #[error("`{key}` must be a positive number of seconds, not {value}")]
    NotPositive {
        /// The key.
        key: &'static str,
        /// Its value.
        value: f64,
    },
    /// `token_env` names a variable that is not set.
    #[error("`token_env`: the environment variable {0} is not set")]
    TokenUnset(String),
}

impl HttpSettingsError {
    /// The key the problem is shown at: the variable's at `token_env`, a time's at the server's
    /// `url` (as before).
    fn key(&self) -> &'static str {
        match self {
            HttpSettingsError::TokenUnset(_) => "token_env",
            HttpSettingsError::NotPositive { .. } => "url",
        }
    }
}

/// What validating a `load_model` stage learned, handed to the stage it builds so nothing is read
/// or asked twice.
#[derive(Debug, Default)]
pub struct LoadModelFacts {
    /// What the ONNX file's graph says of its outputs: `Some(why)` when it gives labels only
    /// (for [`Stage::labels_only_before_run`]).
    labels_only: Option<String>,
    /// The ONNX graph's input names (for [`Stage::check_features`]).
    graph_inputs: Option<Vec<String>>,
    /// The model server as validation found it, ready: opening the model asks it nothing more.
    server: Option<ServerSeen>,
}

/// A model server validation found ready.
#[derive(Debug)]
enum ServerSeen {
    /// A KServe V2 model (HTTP or gRPC) and the metadata it gave.
    V2(V2Metadata),
    /// An MLflow scoring server with its model loaded.
    MlflowReady,
}

impl LoadModelConfig {
    /// A config loading `path` with the default output and executor.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        LoadModelConfig {
            path: Some(path.into()),
            url: None,
            command: None,
            protocol: Protocol::V2,
            model: None,
            outputs: Vec::new(),
            batch_size: default_batch_size(),
            concurrency: default_concurrency(),
            connect_timeout_s: default_connect_timeout(),
            timeout_s: default_timeout(),
            retries: default_retries(),
            token_env: None,
            max_queries: None,
            output: None,
            output_transform: OutputTransform::None,
            favourable_class: None,
            inputs: BTreeMap::new(),
            executor: Executor::Auto,
            onnxruntime: None,
            llm: None,
            provided: None,
        }
    }

    /// A config for a model handed over in code ([`LoadModelConfig::provided`]).
    pub fn provided(model: ProvidedModel) -> Self {
        LoadModelConfig { path: None, provided: Some(model), ..LoadModelConfig::new("") }
    }
}

impl StageConfig for LoadModelConfig {
    type Facts = LoadModelFacts;

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, checks: &mut Checks<'_, '_>) -> LoadModelFacts {
        let mut facts = LoadModelFacts::default();
        self.check(checks, &mut facts);
        facts
    }

    fn instantiate(self, facts: LoadModelFacts, env: &StageEnv) -> Result<Box<dyn Stage>> {
        let labels_only = facts.labels_only.or_else(|| llm_labels_only(self.llm.as_ref()));
        let place = if let Some(provided) = self.provided {
            Place::Provided(provided)
        } else if let Some(config) = self.llm {
            Place::Llm { config, dir: env.dir.clone() }
        } else if let Some(url) = &self.url {
            let fail = |message: String| ModelError::Remote { url: url.clone(), message };
            let settings = self.http_settings().map_err(|e| fail(e.to_string()))?;
            Place::Remote(match self.protocol {
                Protocol::V2 | Protocol::GrpcV2 => Remote::Server {
                    endpoint: V2Endpoint::parse(url, self.model.as_deref()).map_err(|e| fail(e.to_string()))?,
                    settings,
                    outputs: self.outputs.clone(),
                    grpc: self.protocol == Protocol::GrpcV2,
                    seen: match &facts.server {
                        Some(ServerSeen::V2(metadata)) => Some(metadata.clone()),
                        _ => None,
                    },
                },
                Protocol::Mlflow => Remote::Mlflow {
                    endpoint: MlflowEndpoint::parse(url).map_err(|e| fail(e.to_string()))?,
                    settings,
                    seen_ready: matches!(facts.server, Some(ServerSeen::MlflowReady)),
                },
            })
        } else if let Some(argv) = self.command {
            Place::Remote(Remote::Program { argv, dir: env.dir.clone() })
        } else {
            Place::File(env.dir.join(self.path.as_deref().unwrap_or(Path::new(""))))
        };
        Ok(Box::new(LoadModel {
            request: OpenRequest {
                place,
                output: self.output,
                transform: self.output_transform,
                favourable_class: self.favourable_class,
                inputs: self.inputs,
                executor: self.executor,
                onnxruntime: self.onnxruntime.map(|p| env.dir.join(p)),
                traffic: Traffic { batch_size: self.batch_size, concurrency: self.concurrency, max_rows: self.max_queries },
            },
            labels_only,
            graph_inputs: facts.graph_inputs,
        }))
    }
}

impl LoadModelConfig {
    /// Every check of [`StageConfig::validate`], what was learned on the way put in `learned`.
    fn check(&self, checks: &mut Checks<'_, '_>, learned: &mut LoadModelFacts) {
        let mut resolved = None;
        if self.provided.is_some() {
            if self.path.is_some() || self.url.is_some() || self.command.is_some() {
                checks.problem("path", "a model handed over in code replaces `path`, `url` and `command`; give none of them");
            }
            return;
        }
        let given: Vec<&str> =
            [("path", self.path.is_some()), ("url", self.url.is_some()), ("command", self.command.is_some()), ("llm", self.llm.is_some())]
                .iter()
                .filter(|(_, g)| *g)
                .map(|(k, _)| *k)
                .collect();
        if given.len() > 1 {
            checks.problem(
                given[1],
                format!(
                    "give one of `path` (a model file), `url` (a model server), `command` (a program) and `llm` (a language model), not both {}",
                    given.join(" and ")
                ),
            );
        } else if let Some(path) = &self.path {
            resolved = Some(checks.existing_file("path", path));
        } else if let Some(url) = &self.url {
            learned.server = self.validate_remote(url, checks);
        } else if let Some(llm) = &self.llm {
            validate_llm(llm, checks);
        } else if let Some(argv) = &self.command {
            if argv.is_empty() {
                checks.problem("command", "`command` is empty: give the program and its arguments, e.g. [\"python3\", \"model.py\"]");
            }
        } else {
            checks.problem(
                "path",
                "say where the model is: `path = \"model.onnx\"` (a file), `url = \"http://…\"` (a KServe V2 server), `command = [\"python3\", \"model.py\"]` (a program) or `llm = { base_url = \"http://…/v1\", … }` (a language model)",
            );
        }
        if let Some(class) = self.favourable_class {
            if class < 0 {
                checks
                    .problem("favourable_class", format!("`favourable_class` is one of the model's classes, numbered from 0, not {class}"));
            }
            if self.path.as_ref().is_some_and(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"))) {
                checks.problem(
                    "favourable_class",
                    "`favourable_class` is for a model made elsewhere; a model saved by a train stage already reads its data's favourable label",
                );
            }
        }
        if !self.inputs.is_empty() && (self.command.is_some() || self.protocol == Protocol::Mlflow) {
            checks.problem(
                "inputs",
                "`inputs` maps a model's named inputs to columns; a command or an MLflow server receives every column by its own name",
            );
        }
        if self.protocol == Protocol::Mlflow && self.url.is_none() {
            checks.problem("protocol", "`protocol` is the protocol of a model server: give its `url`");
        }
        if let Some(lib) = &self.onnxruntime {
            if !checks.dir().join(lib).exists() {
                checks.problem("onnxruntime", format!("{} does not exist; {}", lib.display(), install_advice()));
                return;
            }
        }
        // A model that only ONNX Runtime runs is refused here, before any stage runs, when the
        // runtime cannot be found.
        let Some(path) = resolved else { return };
        let saved = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if saved && !self.inputs.is_empty() {
            checks.problem(
                "inputs",
                "`inputs` maps an exported model's named inputs; a model saved by a train stage reads the features it was trained on",
            );
        }
        if !path.is_file() || saved {
            return;
        }
        let facts = match graph_facts(&path) {
            Ok(facts) => facts,
            Err(e) => {
                checks.problem("path", e);
                return;
            }
        };
        self.check_input_names(checks, &facts);
        self.check_output_name(checks, &facts);
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        learned.labels_only = facts.labels_only(&file, self.output.as_deref());
        learned.graph_inputs = Some(facts.inputs.iter().map(|i| i.name.clone()).collect());
        let mut needs = match self.executor {
            Executor::Onnxruntime => vec!["executor = \"onnxruntime\"".to_string()],
            Executor::Auto => {
                let mut needs = facts.needs_onnxruntime.clone();
                if !self.inputs.is_empty() {
                    needs.push("the `inputs` map".into());
                }
                needs
            }
            _ => return,
        };
        if needs.is_empty() {
            return;
        }
        // `auto` runs a tree ensemble that the native tree executor covers without ONNX Runtime
        // (read for the width its input declares; where it declares none, the data's width
        // decides when the model is opened).
        if self.executor == Executor::Auto && self.inputs.is_empty() && needs.iter().any(|n| n.contains("TreeEnsemble")) {
            let Some(width) = declared_width(&facts) else { return };
            match TreeGraph::read(&path, width) {
                Ok(_) => return,
                Err(uncovered) => needs.push(format!("(the native tree executor does not cover {uncovered})")),
            }
        }
        if let Err(e) = runtime(self.onnxruntime.as_ref().map(|p| checks.dir().join(p)).as_deref()) {
            checks.problem(
                "path",
                format!("{}: {} needs ONNX Runtime, which is not available: {}", path.display(), needs.join(", "), e.message),
            );
        }
    }

    /// The `inputs` map's keys against the ONNX model's inputs (did-you-mean), each at its own
    /// `inputs.NAME`; a column named twice.
    fn check_input_names(&self, checks: &mut Checks<'_, '_>, facts: &GraphFacts) {
        let names: Vec<&str> = facts.inputs.iter().map(|i| i.name.as_str()).collect();
        for (i, (input, column)) in self.inputs.iter().enumerate() {
            let span = checks.nested_key_span("inputs", input);
            if !names.contains(&input.as_str()) {
                checks.at(&span, format!("the model has no input {input:?}{}; its inputs: {}", hint(input, &names), names.join(", ")));
            }
            if self.inputs.values().take(i).any(|c| c == column) {
                checks.at(&span, format!("column {column:?} is mapped to two inputs; each input takes its own column"));
            }
        }
    }

    /// The `output` key against the ONNX model's outputs (did-you-mean).
    fn check_output_name(&self, checks: &mut Checks<'_, '_>, facts: &GraphFacts) {
        let Some(wanted) = &self.output else { return };
        let names: Vec<&str> = facts.outputs.iter().map(|o| o.name.as_str()).collect();
        if !names.contains(&wanted.as_str()) {
            checks.problem("output", format!("no output named {wanted:?}{}; its outputs: {}", hint(wanted, &names), names.join(", ")));
        }
    }

    /// The HTTP settings, the token read from `token_env` (an error names the variable, never a
    /// value).
    fn http_settings(&self) -> std::result::Result<HttpSettings, HttpSettingsError> {
        let seconds = |key: &'static str, s: f64| {
            if s.is_finite() && s > 0.0 {
                Ok(Duration::from_secs_f64(s))
            } else {
                Err(HttpSettingsError::NotPositive { key, value: s })
            }
        };
        let token = match &self.token_env {
            Some(var) => Some(std::env::var(var).map_err(|_| HttpSettingsError::TokenUnset(var.clone()))?),
            None => None,
        };
        Ok(HttpSettings {
            connect_timeout: seconds("connect_timeout_s", self.connect_timeout_s)?,
            request_timeout: seconds("timeout_s", self.timeout_s)?,
            retry: RetryPolicy::MODEL_SERVER.with_retries(self.retries),
            token,
        })
    }

    /// The keys of a model server, and the server itself: an unreachable server or a model that is
    /// not ready is found here, before any search. A V2 model's metadata is read here too, so the
    /// run asks the server once: what is returned is handed to the stage as it opens the model.
    fn validate_remote(&self, url: &str, checks: &mut Checks<'_, '_>) -> Option<ServerSeen> {
        if self.batch_size == 0 {
            checks.problem("batch_size", "`batch_size` must be at least 1");
        }
        if self.concurrency == 0 {
            checks.problem("concurrency", "`concurrency` must be at least 1");
        }
        if self.max_queries == Some(0) {
            checks.problem("max_queries", "`max_queries` must be at least 1 (leave it out for no cap)");
        }
        if self.protocol == Protocol::Mlflow {
            // MLflow's scoring server serves one model and answers with what its predict returns.
            if self.model.is_some() {
                checks.problem("model", "`model` is for protocol = \"v2\"; an MLflow scoring server serves one model at its URL");
            }
            if !self.outputs.is_empty() {
                checks.problem(
                    "outputs",
                    "`outputs` is for protocol = \"v2\"; an MLflow server returns what the model's predict returns (save a scikit-learn model with pyfunc_predict_fn=\"predict_proba\" for probabilities)",
                );
            }
        }
        let settings = match self.http_settings() {
            Ok(settings) => settings,
            Err(e) => {
                checks.problem(e.key(), e);
                return None;
            }
        };
        // One try: validation says whether the server is there, without waiting through retries.
        let one_try = HttpSettings { retry: settings.retry.with_retries(0), ..settings };
        let ready = match self.protocol {
            Protocol::V2 | Protocol::GrpcV2 => match V2Endpoint::parse(url, self.model.as_deref()) {
                Ok(endpoint) if self.protocol == Protocol::GrpcV2 => {
                    GrpcBackend::connect(endpoint, one_try, Vec::new(), None).map(|(_, metadata)| ServerSeen::V2(metadata))
                }
                Ok(endpoint) => Http::new(one_try, &endpoint.base).and_then(|http| {
                    endpoint.ready(&http)?;
                    endpoint.metadata(&http).map(ServerSeen::V2)
                }),
                Err(message) => {
                    checks.problem("url", message);
                    return None;
                }
            },
            Protocol::Mlflow => match MlflowEndpoint::parse(url) {
                Ok(endpoint) => Http::new(one_try, &endpoint.base).and_then(|http| endpoint.ready(&http)).map(|()| ServerSeen::MlflowReady),
                Err(message) => {
                    checks.problem("url", message);
                    return None;
                }
            },
        };
        ready.map_err(|e| checks.problem("url", format!("the model server does not answer as ready: {e}"))).ok()
    }
}

/// Figures of a `load_model` stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct LoadModelFigures {
    /// The recipe's algorithm, for a saved fairpipe model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
    /// What opening the model learned (its output, inputs and executor) and how it agrees with
    /// the labels.
    #[serde(flatten)]
    pub opened: Opened,
    /// A model server's traffic over the whole run (filled in when the run ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<crate::models::RemoteUsage>,
    /// The model's accuracy.
    #[serde(flatten)]
    pub model: ModelFigures,
}

/// A model stage's line under its figures: what runs the model (the ONNX executor chosen, or the
/// model itself: a server, a program, a model in process) and which of its classes was taken as
/// the data's favourable label, and how: `runs on: native dense …; favourable: ">50K", read as
/// column 1`, with a note when the favourable class was assumed (numbered classes, no class named
/// like the label).
impl StageFigures for LoadModelFigures {
    const HEADLINE: &'static [&'static str] = &["accuracy_train", "accuracy_test"];

    const MODEL_STAGE: bool = true;

    fn model_line(&self, at: &InRun<'_>) -> Option<String> {
        let runs_on = self.opened.executor.as_deref().unwrap_or(&self.model.model);
        let favourable = at.in_order().find_map(|stage| (stage.meaning().favourable_label)(stage.entry));
        let mut line = format!("runs on: {runs_on}");
        match (favourable, self.opened.output_read.as_deref()) {
            (Some(label), Some(read)) => line.push_str(&format!("; favourable: {label:?}, read as {read}")),
            (Some(label), None) => line.push_str(&format!("; favourable: {label:?}")),
            (None, Some(read)) => line.push_str(&format!("; P(favourable) read as {read}")),
            (None, None) => {}
        }
        if self.opened.favourable_class_assumed == Some(true) {
            line.push_str(" (assumed: no class of the model is named like the label; `favourable_class` chooses another)");
        }
        Some(line)
    }
}

struct LoadModel {
    /// What to open and how (a `.json` model saved by a train stage, at `Place::File`, is read by
    /// the stage itself).
    request: OpenRequest,
    /// `Some(why)` when validation found the model's outputs to be labels only.
    labels_only: Option<String>,
    /// The ONNX graph's input names, when validation read them.
    graph_inputs: Option<Vec<String>>,
}

impl Stage for LoadModel {
    fn labels_only_before_run(&self) -> Option<String> {
        self.labels_only.clone()
    }

    fn reads_label(&self) -> Option<LabelUse> {
        Some(LabelUse {
            key: None,
            why: "a model's favourable class is the data's favourable label value, and its accuracy is read against the label: give the load stage `label` (the outcome column) and `favourable`".into(),
        })
    }

    /// The graph's named inputs against the data's feature columns, as the input plan matches
    /// them when the model loads ([`crate::models::inputs::plan`]): a column the `inputs`
    /// map names that is no feature, a named input no column of its name feeds.
    fn check_features(&self, features: &[String], _label: Option<&str>) -> Vec<ColumnProblem> {
        use crate::models::inputs::normalised;
        let Some(graph) = &self.graph_inputs else { return Vec::new() };
        let names: Vec<String> = features.iter().map(|f| normalised(f)).collect();
        if graph.len() == 1 && self.request.inputs.is_empty() && !names.contains(&normalised(&graph[0])) {
            return Vec::new(); // one input of encoded features, not fed by name
        }
        let candidates: Vec<&str> = features.iter().map(String::as_str).collect();
        let listed = format!(
            "the model's inputs are [{}]; the data's {} feature columns are [{}]",
            graph.join(", "),
            features.len(),
            features.join(", ")
        );
        graph
            .iter()
            .filter_map(|input| match self.request.inputs.get(input) {
                Some(column) if !features.contains(column) => Some(ColumnProblem {
                    key: "inputs",
                    nested: Some(input.clone()),
                    message: format!(
                        "`inputs` maps model input {input:?} to column {column:?}, which is not a feature column{}; {listed}",
                        hint(column, &candidates)
                    ),
                }),
                None if !names.contains(&normalised(input)) => Some(ColumnProblem {
                    key: "inputs",
                    nested: None,
                    message: format!(
                        "model input {input} has no feature column of that name{}; map it to one with `inputs = {{ {input:?} = \"column\" }}` on the load_model stage; {listed}",
                        hint(input, &candidates)
                    ),
                }),
                _ => None,
            })
            .collect()
    }

    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let data = inputs.dataset("data")?;
        self.reads_label().map_or(Ok(()), |u| u.check(&data))?;
        let mut figures = LoadModelFigures::default();
        let provided = matches!(self.request.place, Place::Provided(_));
        // An output the model lacks is the `output` key's to fix; a model answering NaN or
        // infinity is named by its file (server, command) and located at the key naming it (a
        // model object given in code names itself).
        let keyed = |e: Error| match e {
            Error::Model(ModelError::MissingOutput { .. }) => StageError::contradicts("output", e),
            Error::Model(ModelError::NotFinite { .. }) if !provided => {
                StageError::cannot(self.location_key(), format!("{}: {e}", self.request.place.location()))
            }
            other => other,
        };
        let (model, recipe): (Arc<dyn Model>, _) = match &self.request.place {
            Place::File(path) if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) => {
                let file = ModelFile::load(path, &data.domain)?;
                figures.algorithm = Some(file.recipe.name().to_string());
                let model = file.model.into_model();
                let model: Arc<dyn Model> = if data.label_flipped { Arc::new(Complement(model)) } else { model };
                (model, Some(file.recipe))
            }
            // A model handed over in code or a language model names itself in its errors.
            Place::Provided(_) | Place::Llm { .. } => {
                let (model, opened) = self.request.open(&data, &ctx.llm_answers)?;
                figures.opened = opened;
                (model, None)
            }
            Place::File(_) | Place::Remote(_) => {
                let (model, opened) = self.request.open(&data, &ctx.llm_answers).map_err(|e| keyed(e.into()))?;
                figures.opened = opened;
                (model, None)
            }
        };
        let (artifact, model_figures, model_queries, scored) = model_output_scored(model, Arc::clone(&data), recipe).map_err(keyed)?;
        figures.model = model_figures;
        let opened = &figures.opened;
        if opened.favourable_vs_rest == Some(true) {
            ctx.warn(format!(
                "the model has {} classes ({}): the audit reads P({:?}) and judges that class against the rest",
                opened.model_classes.as_ref().map_or(0, Vec::len),
                opened.model_classes.as_deref().unwrap_or_default().join(", "),
                data.label_values[1]
            ));
        }
        let agreement = Agreement::measure(&scored.scores, &scored.labels);
        self.judge_agreement(ctx, &data, &agreement, opened)?;
        figures.opened.agreement = Some(agreement);
        Ok(StageOutput { artifact: Artifact::Model(Arc::new(artifact)), figures: Arc::new(figures), tables: Vec::new(), model_queries })
    }
}

impl LoadModel {
    /// The key naming where the model is: `path`, `url` or `command`.
    fn location_key(&self) -> &'static str {
        match &self.request.place {
            Place::Remote(Remote::Program { .. }) => "command",
            Place::Remote(_) => "url",
            _ => "path",
        }
    }

    /// Refuse a model that agrees with the labels below chance when its favourable class was
    /// assumed (its classes are numbered, the data's label is text): it is then almost surely
    /// read the wrong way round, and every figure of the audit would be flipped. When the class
    /// was named (`favourable_class`, ZipMap keys, string labels, 0/1 labels), warn instead: the
    /// model may be that bad, but the audit should say so at the top.
    fn judge_agreement(&self, ctx: &StageContext, data: &Dataset, agreement: &Agreement, opened: &Opened) -> Result<()> {
        let verdict = agreement.verdict();
        if verdict == Verdict::Fine {
            return Ok(());
        }
        let favourable = &data.label_values[1];
        let read = opened.output_read.as_deref().unwrap_or("its output");
        // With 0/1 labels (or the label's codes declared) the data's and the model's classes are
        // matched by number, so naming the other label favourable flips both sides and changes
        // nothing: only text labels without codes offer it.
        let text_labels = data.label_code.is_none() && data.label_values.iter().any(|v| v.parse::<f64>().is_err());
        let other_label = (text_labels && !data.label_values[0].starts_with("not ")).then(|| data.label_values[0].clone());
        let assumed = opened.favourable_class_assumed == Some(true);
        let class_fix = match self.request.favourable_class {
            Some(class @ (0 | 1)) => format!("set `favourable_class = {}` on this stage (now {class})", 1 - class),
            Some(class) => format!("set `favourable_class` on this stage to the model's favourable class (now {class})"),
            None => "set `favourable_class = 0` on this stage (the model's class 0 is then read as the favourable label)".to_string(),
        };
        let label_fix = other_label
            .map(|other| {
                format!(
                    "; if instead the data's favourable label is wrong, set `favourable = {other:?}` on the load stage that reads {}",
                    data.path.display()
                )
            })
            .unwrap_or_default();
        let strength = match verdict {
            Verdict::Below => "below chance",
            _ => "worse than chance (not significantly: its AUC's interval reaches 0.5)",
        };
        let how = if assumed {
            format!(
                "P({favourable:?}) read as {read}: the model's class 1 was assumed to be the favourable label, as the model does not name its classes"
            )
        } else {
            format!("P({favourable:?}) read as {read}")
        };
        let message = format!(
            "the model agrees with the data's labels {strength}: {} ({how}); read this way every figure of the audit is that of the opposite class. If the model's classes are the other way round, {class_fix}{label_fix}",
            agreement.describe()
        );
        if assumed && verdict == Verdict::Below {
            return Err(crate::error::Error::Invalid(format!("{}: refused: {message}", self.request.place.location())));
        }
        ctx.warn(message);
        Ok(())
    }
}

/// The `llm` block's keys, each problem at its own `llm.KEY`, and its template file.
fn validate_llm(llm: &LlmConfig, checks: &mut Checks<'_, '_>) {
    for (key, message) in llm.problems() {
        let span = checks.nested_key_span("llm", key);
        checks.at(&span, message);
    }
    if !checks.dir().join(&llm.prompt).is_file() {
        let span = checks.nested_key_span("llm", "prompt");
        checks.at(&span, format!("the prompt template {} does not exist (paths are relative to the pipeline file)", llm.prompt.display()));
    }
}

/// `Some(why)` for an `llm` block that reads labels only.
fn llm_labels_only(llm: Option<&LlmConfig>) -> Option<String> {
    llm.filter(|l| l.scores == ScoreFrom::Labels && l.answers.scale.is_none()).map(|_| {
        "`llm.scores = \"labels\"` reads the first word of one answer as a label (set `llm.scores = \"logprobs\"` or \"samples\" for probabilities)".to_string()
    })
}

/// The row width the ONNX graph's input declares, for reading it as the native tree executor
/// would: `None` for one float input whose width is left open (the data's width decides); 0 where
/// the input is not one float tensor (the tree executor refuses it at any width).
fn declared_width(facts: &GraphFacts) -> Option<usize> {
    match facts.inputs.as_slice() {
        [one] if one.ty == ElementType::Float32 => match one.shape.as_slice() {
            [_, w] if *w >= 0 => Some(*w as usize),
            _ => None,
        },
        _ => Some(0),
    }
}

#[cfg(test)]
mod tests {
    /// ONNX Runtime's install advice (in the models crate) names this stage's key, which exists.
    #[test]
    fn the_onnxruntime_advice_names_a_key_of_this_stage() {
        assert!(crate::models::onnx::runtime::install_advice().contains("load_model stage's key `onnxruntime = \"PATH\"`"));
        assert!(super::KIND.key("onnxruntime").is_some());
    }
}
