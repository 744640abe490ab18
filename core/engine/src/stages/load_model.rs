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
use crate::models::inputs::{Feeding, InputPlan};
use crate::models::llm::config::{LlmConfig, ScoreFrom};
use crate::models::llm::LlmModel;
use crate::models::onnx::facts::{graph_facts, GraphFacts};
use crate::models::onnx::ort::OutputChoice;
use crate::models::onnx::runtime::{install_advice, runtime};
use crate::models::outputs::{ClassKey, Favourable, OutputTransform};
use crate::models::provided::ProvidedModel;
use crate::models::remote::command::CommandBackend;
use crate::models::remote::grpc::GrpcBackend;
use crate::models::remote::http::{Http, HttpSettings};
use crate::models::remote::mlflow::{declared_inputs, MlflowBackend, MlflowEndpoint};
use crate::models::remote::v2::{V2Backend, V2Endpoint};
use crate::models::remote::{Backend, RemoteModel, Traffic};
use crate::models::trees::Graph as TreeGraph;
use crate::models::Model;
use crate::models::{Complement, ModelFile, OnnxModel, OrtModel, TreeModel};
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::{KeyType, StageKeys};
use crate::stage::kind::{compare_as, FigureDoc, FigureNames, StageEnv, StageKind};
use crate::stage::{Artifact, ArtifactKind, ColumnProblem, Inputs, Stage, StageContext, StageOutput};
use crate::suggest::hint;

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

impl KeyType for OutputTransform {
    fn text() -> String {
        crate::stage::keys::choices::<Self>()
    }
}

/// `executor = "auto" | "native" | "tract" | "onnxruntime"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, KeyType)]
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
    3
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
    /// a prompt template: llm = { base_url = "http://127.0.0.1:8080/v1", model = "NAME", prompt =
    /// "prompts/credit.j2", answers = { favourable = ["yes", "Yes"], unfavourable = ["no", "No"]
    /// } }, with optional system, names (per protected column and value, first names for {{ name
    /// }}), scores ("logprobs" | "samples" | "labels"), temperature, samples, top_logprobs (20),
    /// max_tokens (1), seed, api_key_env, concurrency (8), timeout_s (60), retries (5), backoff_s
    /// (0.5), max_requests, max_tokens_total, max_unparsed (0), cache ("llm-cache.sqlite"; "" for
    /// none). See docs/llm-audits.md.
    #[serde(default)]
    #[key(ty = "table", default = "one of path, url, command and llm")]
    pub llm: Option<LlmConfig>,
    /// A model handed over in code instead of `path`, `url` or `command` (library use, e.g. a
    /// Python object's `predict_proba`; not in TOML): bound to the dataset when the stage runs.
    #[serde(skip)]
    pub provided: Option<ProvidedModel>,
    /// What validation read of an ONNX file's graph about its outputs: `Some(why)` when it gives
    /// labels only (kept for [`Stage::labels_only_before_run`]).
    #[serde(skip)]
    labels_only: std::sync::OnceLock<Option<String>>,
    /// The ONNX graph's input names as validation read them (kept for
    /// [`Stage::check_features`]).
    #[serde(skip)]
    graph_inputs: std::sync::OnceLock<Vec<String>>,
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
            labels_only: std::sync::OnceLock::new(),
            graph_inputs: std::sync::OnceLock::new(),
        }
    }

    /// A config for a model handed over in code ([`LoadModelConfig::provided`]).
    pub fn provided(model: ProvidedModel) -> Self {
        LoadModelConfig { path: None, provided: Some(model), ..LoadModelConfig::new("") }
    }
}

impl StageConfig for LoadModelConfig {
    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, checks: &mut Checks<'_, '_>) {
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
            self.validate_remote(url, checks);
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
        let _ = self.labels_only.set(facts.labels_only(&file, self.output.as_deref()));
        let _ = self.graph_inputs.set(facts.inputs.iter().map(|i| i.name.clone()).collect());
        let needs = match facts {
            _ if self.executor == Executor::Onnxruntime => vec!["executor = \"onnxruntime\"".to_string()],
            mut facts if self.executor == Executor::Auto => {
                if !self.inputs.is_empty() {
                    facts.needs_onnxruntime.push("the `inputs` map".into());
                }
                facts.needs_onnxruntime
            }
            _ => return,
        };
        if needs.is_empty() {
            return;
        }
        if let Err(e) = runtime(self.onnxruntime.as_ref().map(|p| checks.dir().join(p)).as_deref()) {
            checks.problem(
                "path",
                format!("{}: {} needs ONNX Runtime, which is not available: {}", path.display(), needs.join(", "), e.message),
            );
        }
    }

    fn instantiate(self, env: &StageEnv) -> Result<Box<dyn Stage>> {
        let traffic = Traffic { batch_size: self.batch_size, concurrency: self.concurrency, max_rows: self.max_queries };
        let remote = match (&self.url, &self.command) {
            (Some(url), _) => {
                let fail = |message: String| ModelError::Remote { url: url.clone(), message };
                let settings = self.http_settings().map_err(fail)?;
                let place = match self.protocol {
                    Protocol::V2 | Protocol::GrpcV2 => Place::Server {
                        endpoint: V2Endpoint::parse(url, self.model.as_deref()).map_err(fail)?,
                        settings,
                        outputs: self.outputs.clone(),
                        grpc: self.protocol == Protocol::GrpcV2,
                    },
                    Protocol::Mlflow => Place::Mlflow { endpoint: MlflowEndpoint::parse(url).map_err(fail)?, settings },
                };
                Some(Remote { place, traffic })
            }
            (None, Some(argv)) => Some(Remote { place: Place::Program { argv: argv.clone(), dir: env.dir.clone() }, traffic }),
            (None, None) => None,
        };
        Ok(Box::new(LoadModel {
            path: env.dir.join(self.path.as_deref().unwrap_or(Path::new(""))),
            provided: self.provided,
            remote,
            output: self.output,
            transform: self.output_transform,
            favourable_class: self.favourable_class,
            inputs: self.inputs,
            executor: self.executor,
            onnxruntime: self.onnxruntime.map(|p| env.dir.join(p)),
            labels_only: self.labels_only.into_inner().flatten().or_else(|| llm_labels_only(self.llm.as_ref())),
            llm: self.llm.map(|llm| (llm, env.dir.clone())),
            graph_inputs: self.graph_inputs.into_inner(),
        }))
    }
}

impl LoadModelConfig {
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
    fn http_settings(&self) -> std::result::Result<HttpSettings, String> {
        let seconds = |key: &str, s: f64| {
            if s.is_finite() && s > 0.0 {
                Ok(Duration::from_secs_f64(s))
            } else {
                Err(format!("`{key}` must be a positive number of seconds, not {s}"))
            }
        };
        let token = match &self.token_env {
            Some(var) => Some(std::env::var(var).map_err(|_| format!("`token_env`: the environment variable {var} is not set"))?),
            None => None,
        };
        Ok(HttpSettings {
            connect_timeout: seconds("connect_timeout_s", self.connect_timeout_s)?,
            request_timeout: seconds("timeout_s", self.timeout_s)?,
            retries: self.retries,
            token,
            ..HttpSettings::default()
        })
    }

    /// The keys of a model server, and the server itself: an unreachable server or a model that is
    /// not ready is found here, before any search.
    fn validate_remote(&self, url: &str, checks: &mut Checks<'_, '_>) {
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
            Err(message) => return checks.problem(if message.starts_with("`token_env`") { "token_env" } else { "url" }, message),
        };
        // One try: validation says whether the server is there, without waiting through retries.
        let one_try = HttpSettings { retries: 0, ..settings };
        let ready = match self.protocol {
            Protocol::V2 | Protocol::GrpcV2 => match V2Endpoint::parse(url, self.model.as_deref()) {
                Ok(endpoint) if self.protocol == Protocol::GrpcV2 => GrpcBackend::connect(endpoint, one_try, Vec::new()).map(|_| ()),
                Ok(endpoint) => Http::new(one_try, &endpoint.base).and_then(|http| endpoint.ready(&http)),
                Err(message) => return checks.problem("url", message),
            },
            Protocol::Mlflow => match MlflowEndpoint::parse(url) {
                Ok(endpoint) => Http::new(one_try, &endpoint.base).and_then(|http| endpoint.ready(&http)),
                Err(message) => return checks.problem("url", message),
            },
        };
        if let Err(e) = ready {
            checks.problem("url", format!("the model server does not answer as ready: {e}"));
        }
    }
}

/// Figures of a `load_model` stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct LoadModelFigures {
    /// The recipe's algorithm, for a saved fairpipe model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
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
    /// favourable class assumed) or warned of (named).
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
    /// A model server's traffic over the whole run (filled in when the run ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<crate::models::RemoteUsage>,
    /// The model's accuracy.
    #[serde(flatten)]
    pub model: ModelFigures,
}

/// Rows on which tract (or the native executor) is compared with onnxruntime.
const REFERENCE_CHECK_ROWS: usize = 20_000;

/// Largest probability difference accepted between an executor and onnxruntime.
const REFERENCE_TOLERANCE: f64 = 1e-5;

/// Where a remote model runs.
enum Place {
    /// A KServe V2 server, over HTTP/JSON or (`grpc`) its gRPC port.
    Server { endpoint: V2Endpoint, settings: HttpSettings, outputs: Vec<String>, grpc: bool },
    /// An MLflow scoring server.
    Mlflow { endpoint: MlflowEndpoint, settings: HttpSettings },
    /// A program started in the pipeline's folder.
    Program { argv: Vec<String>, dir: PathBuf },
}

/// A model run outside fairpipe, and how rows are sent to it.
struct Remote {
    place: Place,
    traffic: Traffic,
}

struct LoadModel {
    path: PathBuf,
    provided: Option<ProvidedModel>,
    remote: Option<Remote>,
    output: Option<String>,
    transform: OutputTransform,
    favourable_class: Option<i64>,
    inputs: BTreeMap<String, String>,
    executor: Executor,
    onnxruntime: Option<PathBuf>,
    /// `Some(why)` when validation found the model's outputs to be labels only.
    labels_only: Option<String>,
    /// The ONNX graph's input names, when validation read them.
    graph_inputs: Option<Vec<String>>,
    /// A language model, and the pipeline's folder its files are relative to.
    llm: Option<(LlmConfig, PathBuf)>,
}

impl Stage for LoadModel {
    fn labels_only_before_run(&self) -> Option<String> {
        self.labels_only.clone()
    }

    /// The graph's named inputs against the data's feature columns, as the input plan matches
    /// them when the model loads ([`crate::models::inputs::plan`]): a column the `inputs`
    /// map names that is no feature, a named input no column of its name feeds.
    fn check_features(&self, features: &[String]) -> Vec<ColumnProblem> {
        use crate::models::inputs::normalised;
        let Some(graph) = &self.graph_inputs else { return Vec::new() };
        let names: Vec<String> = features.iter().map(|f| normalised(f)).collect();
        if graph.len() == 1 && self.inputs.is_empty() && !names.contains(&normalised(&graph[0])) {
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
            .filter_map(|input| match self.inputs.get(input) {
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
        let mut figures = LoadModelFigures::default();
        // An output the model lacks is the `output` key's to fix; a model answering NaN or
        // infinity is named by its file (server, command) and located at the key naming it (a
        // model object given in code names itself).
        let keyed = |e: Error| match e {
            Error::Model(ModelError::MissingOutput { .. }) => StageError::contradicts("output", e),
            Error::Model(ModelError::NotFinite { .. }) if self.provided.is_none() => {
                StageError::cannot(self.location_key(), format!("{}: {e}", self.location()))
            }
            other => other,
        };
        let (model, recipe): (Arc<dyn Model>, _) = if let Some(provided) = &self.provided {
            (load_provided(provided, &data, &mut figures)?, None)
        } else if let Some((llm, dir)) = &self.llm {
            (load_llm(llm, dir, &data, &mut figures)?, None)
        } else if let Some(remote) = &self.remote {
            (self.load_remote(remote, &data, &mut figures).map_err(keyed)?, None)
        } else if self.path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            let file = ModelFile::load(&self.path, &data.domain)?;
            figures.algorithm = Some(file.recipe.name().to_string());
            let model = file.model.into_model();
            let model: Arc<dyn Model> = if data.label_flipped { Arc::new(Complement(model)) } else { model };
            (model, Some(file.recipe))
        } else {
            (self.load_onnx(&data, &mut figures).map_err(keyed)?, None)
        };
        let (artifact, model_figures, model_queries, scored) = model_output_scored(model, Arc::clone(&data), recipe).map_err(keyed)?;
        figures.model = model_figures;
        if figures.favourable_vs_rest == Some(true) {
            ctx.warn(format!(
                "the model has {} classes ({}): the audit reads P({:?}) and judges that class against the rest",
                figures.model_classes.as_ref().map_or(0, Vec::len),
                figures.model_classes.as_deref().unwrap_or_default().join(", "),
                data.label_values[1]
            ));
        }
        let agreement = Agreement::measure(&scored.scores, &scored.labels);
        self.judge_agreement(ctx, &data, &agreement, &figures)?;
        figures.agreement = Some(agreement);
        Ok(StageOutput { artifact: Artifact::Model(Arc::new(artifact)), figures: Arc::new(figures), tables: Vec::new(), model_queries })
    }
}

impl LoadModel {
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

    /// The key naming where the model is: `path`, `url` or `command`.
    fn location_key(&self) -> &'static str {
        match self.remote.as_ref().map(|r| &r.place) {
            Some(Place::Server { .. } | Place::Mlflow { .. }) => "url",
            Some(Place::Program { .. }) => "command",
            None => "path",
        }
    }

    /// Where the model is, for messages: its file, server or command.
    fn location(&self) -> String {
        match self.remote.as_ref().map(|r| &r.place) {
            Some(Place::Server { endpoint, .. }) => endpoint.base.clone(),
            Some(Place::Mlflow { endpoint, .. }) => endpoint.base.clone(),
            Some(Place::Program { argv, .. }) => format!("command {argv:?}"),
            None => match &self.llm {
                Some((llm, _)) => llm.base_url.clone(),
                None => self.path.display().to_string(),
            },
        }
    }

    /// Refuse a model that agrees with the labels below chance when its favourable class was
    /// assumed (its classes are numbered, the data's label is text): it is then almost surely
    /// read the wrong way round, and every figure of the audit would be flipped. When the class
    /// was named (`favourable_class`, ZipMap keys, string labels, 0/1 labels), warn instead: the
    /// model may be that bad, but the audit should say so at the top.
    fn judge_agreement(&self, ctx: &StageContext, data: &Dataset, agreement: &Agreement, figures: &LoadModelFigures) -> Result<()> {
        let verdict = agreement.verdict();
        if verdict == Verdict::Fine {
            return Ok(());
        }
        let favourable = &data.label_values[1];
        let read = figures.output_read.as_deref().unwrap_or("its output");
        // With 0/1 labels (or the label's codes declared) the data's and the model's classes are
        // matched by number, so naming the other label favourable flips both sides and changes
        // nothing: only text labels without codes offer it.
        let text_labels = data.label_code.is_none() && data.label_values.iter().any(|v| v.parse::<f64>().is_err());
        let other_label = (text_labels && !data.label_values[0].starts_with("not ")).then(|| data.label_values[0].clone());
        let assumed = figures.favourable_class_assumed == Some(true);
        let class_fix = match self.favourable_class {
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
            return Err(crate::error::Error::Invalid(format!("{}: refused: {message}", self.location())));
        }
        ctx.warn(message);
        Ok(())
    }

    /// Connect to the model server and choose its output on the data's first rows.
    fn load_remote(&self, remote: &Remote, data: &Dataset, figures: &mut LoadModelFigures) -> Result<Arc<dyn Model>> {
        let favourable = self.favourable(data);
        let rows: Vec<f64> = data.x.iter().take(256 * data.domain.width()).copied().collect();
        let choice = OutputChoice { name: self.output.as_deref(), transform: self.transform, favourable, classes: Vec::new() };
        let (backend, declared): (Box<dyn Backend>, _) = match &remote.place {
            Place::Server { endpoint, settings, outputs, grpc: false } => {
                let (backend, metadata) = V2Backend::connect(endpoint.clone(), settings.clone(), outputs.clone())?;
                (Box::new(backend) as Box<dyn Backend>, metadata.inputs)
            }
            Place::Server { endpoint, settings, outputs, grpc: true } => {
                let (backend, metadata) = GrpcBackend::connect(endpoint.clone(), settings.clone(), outputs.clone())?;
                (Box::new(backend) as Box<dyn Backend>, metadata.inputs)
            }
            Place::Mlflow { endpoint, settings } => {
                let backend = MlflowBackend::connect(endpoint.clone(), settings.clone())?;
                (Box::new(backend) as Box<dyn Backend>, declared_inputs(&data.domain, &data.coded))
            }
            Place::Program { argv, dir } => {
                let columns = data.domain.attributes.iter().map(|a| a.name.clone()).collect();
                (Box::new(CommandBackend::start(argv, dir, columns)?) as Box<dyn Backend>, Vec::new())
            }
        };
        let location = backend.location();
        let model = RemoteModel::load(backend, declared, remote.traffic.clone(), &data.domain, &self.feeding(data), choice, &rows)?;
        let read = model.input_plan().attributes_read(data.domain.width());
        check_protected_read(Path::new(&location), data, &read).map_err(|e| match e {
            ModelError::Onnx { message, .. } => ModelError::Remote { url: location.clone(), message },
            other => other,
        })?;
        figures.output = Some(model.output_name().to_string());
        figures.output_read = Some(model.reader().describe());
        figures.labels_only = Some(model.reader().labels_only());
        figures.favourable_class_assumed = Some(model.reader().assumed_class);
        versus_rest(figures, model.reader());
        figures.input_contract = Some(model.input_plan().describe());
        figures.remote_inputs = Some(if matches!(remote.place, Place::Mlflow { .. }) {
            format!("the data's {} columns by name (dataframe_split)", data.domain.width())
        } else if model.metadata_lists_inputs() {
            "listed by the server's metadata".into()
        } else if matches!(remote.place, Place::Program { .. }) {
            format!("a JSON line of the encoded rows ({} columns) per batch", data.domain.width())
        } else {
            format!(
                "the server's metadata lists no inputs: one FP64 input \"input-0\" [N,{}] assumed (the encoded features)",
                data.domain.width()
            )
        });
        figures.executor = Some(model.executor());
        Ok(Arc::new(model))
    }

    /// Load the ONNX model with the executor chosen (see [`Executor`]).
    fn load_onnx(&self, data: &Dataset, figures: &mut LoadModelFigures) -> Result<Arc<dyn Model>> {
        let mut facts = graph_facts(&self.path)?;
        if !self.inputs.is_empty() {
            // Only ONNX Runtime's input plan follows the map.
            facts.needs_onnxruntime.push("the `inputs` map".into());
        }
        let favourable = self.favourable(data);
        let rows: Vec<f64> = data.x.iter().copied().collect();
        let mut needs = facts.needs_onnxruntime.join(", ");
        // A tree ensemble: the native tree executor when it covers the graph.
        if matches!(self.executor, Executor::Auto | Executor::Native) && !facts.needs_onnxruntime.is_empty() && self.inputs.is_empty() {
            match TreeGraph::read(&self.path, data.domain.width()) {
                Ok(graph) => return self.load_trees(data, favourable, &facts, graph, &rows, figures),
                Err(uncovered) if self.executor == Executor::Native => {
                    return Err(ModelError::Onnx {
                        path: self.path.clone(),
                        message: format!(
                            "executor = \"native\" cannot run it: the native tree executor does not cover {uncovered}; use executor = \"auto\" or \"onnxruntime\""
                        ),
                    }
                    .into());
                }
                Err(uncovered) if facts.needs_onnxruntime.iter().any(|n| n.contains("TreeEnsemble")) => {
                    needs = format!("{needs} (the native tree executor does not cover {uncovered})");
                }
                Err(_) => {}
            }
        }
        match self.executor {
            Executor::Onnxruntime => return self.load_ort(data, favourable, &facts, &rows, figures, "executor = \"onnxruntime\""),
            Executor::Auto if !facts.needs_onnxruntime.is_empty() => {
                return self.load_ort(data, favourable, &facts, &rows, figures, &needs);
            }
            Executor::Native | Executor::Tract if !facts.needs_onnxruntime.is_empty() => {
                return Err(ModelError::Onnx {
                    path: self.path.clone(),
                    message: format!(
                        "executor = \"{}\" cannot run {needs}; use executor = \"onnxruntime\" (or \"auto\")",
                        self.executor_name()
                    ),
                }
                .into());
            }
            _ => {}
        }
        let mut model = match OnnxModel::load(&self.path, data.domain.width(), self.output.as_deref()) {
            Ok(model) => model,
            Err(refused) if self.executor == Executor::Auto => {
                let reason = format!("a graph that tract refuses ({refused})");
                return self.load_ort(data, favourable, &facts, &rows, figures, &reason);
            }
            Err(refused) => return Err(refused.into()),
        };
        let probe = &rows[..rows.len().min(256 * data.domain.width())];
        model.read_output_as(&favourable, self.transform, probe)?;
        model.refuse_hidden_nan(&rows[..rows.len().min(REFERENCE_CHECK_ROWS * data.domain.width())])?;
        figures.output = Some(model.output_name().to_string());
        figures.output_read = Some(model.reader().describe());
        figures.favourable_class_assumed = Some(model.reader().assumed_class);
        versus_rest(figures, model.reader());
        figures.input_contract = Some(format!("one float32 input [N,{}] (encoded features)", data.domain.width()));
        if self.executor != Executor::Tract {
            match model.verify_native(&rows)? {
                Some(check) => {
                    figures.native_checked_rows = Some(check.rows);
                    figures.native_max_abs_diff = Some(check.max_abs_diff);
                    figures.native_label_flips = Some(check.label_flips);
                    if self.executor == Executor::Native && !check.used {
                        return Err(ModelError::Onnx {
                            path: self.path.clone(),
                            message: format!(
                                "executor = \"native\": the native dense executor does not reproduce tract on the data ({} label flips, max |dp| {:e}); use \"auto\" or \"tract\"",
                                check.label_flips, check.max_abs_diff
                            ),
                        }
                        .into());
                    }
                }
                None if self.executor == Executor::Native => {
                    return Err(ModelError::Onnx {
                        path: self.path.clone(),
                        message: "executor = \"native\": the graph is not a plain stack of dense layers; use \"auto\" or \"tract\"".into(),
                    }
                    .into());
                }
                None => {}
            }
        }
        figures.executor = Some(model.executor());
        if self.executor == Executor::Auto {
            let executor = model.executor();
            if let Some(reference) =
                self.check_against_onnxruntime(data, &model, model.output_name(), &executor, favourable, facts.classes, &rows, figures)?
            {
                return Ok(reference);
            }
        }
        Ok(Arc::new(model))
    }

    /// Where ONNX Runtime is installed, hold tract's (or the native executor's) probabilities
    /// against it on the data's rows: a graph that tract runs differently (seen: `Sqrt` of a
    /// negative number, NaN in onnxruntime, a number in tract) is then run by ONNX Runtime, and
    /// its NaN refused, instead of audited on tract's figures. `None` keeps `model`.
    #[allow(clippy::too_many_arguments)]
    fn check_against_onnxruntime(
        &self,
        data: &Dataset,
        model: &dyn Model,
        output: &str,
        executor: &str,
        favourable: Favourable,
        classes: Vec<crate::models::outputs::ClassKey>,
        rows: &[f64],
        figures: &mut LoadModelFigures,
    ) -> Result<Option<Arc<dyn Model>>> {
        let Ok(runtime) = runtime(self.onnxruntime.as_deref()) else {
            figures.reference_check = Some("not made: ONNX Runtime is not installed".into());
            return Ok(None);
        };
        let choice = OutputChoice { name: Some(output), transform: self.transform, favourable, classes };
        let reference = match OrtModel::load(&self.path, runtime, &data.domain, &self.feeding(data), choice, rows) {
            Ok(reference) => reference,
            Err(e @ ModelError::NotFinite { .. }) => return Err(e.into()),
            Err(e) => {
                figures.reference_check = Some(format!("not made: onnxruntime cannot run it ({e})"));
                return Ok(None);
            }
        };
        let width = data.domain.width();
        let n = (rows.len() / width.max(1)).min(REFERENCE_CHECK_ROWS);
        let rows = &rows[..n * width];
        let mut ours = vec![0.0; n];
        model.predict_into(rows, &mut ours)?;
        let mut theirs = vec![0.0; n];
        reference.predict_into(rows, &mut theirs)?;
        let max_abs_diff =
            ours.iter().zip(&theirs).map(|(a, b)| (a - b).abs()).fold(0.0, |m: f64, d| if d.is_nan() || d > m { d } else { m }); // a NaN on one side is a difference
        let flips = ours.iter().zip(&theirs).filter(|(a, b)| (**a > 0.5) != (**b > 0.5)).count();
        figures.reference_checked_rows = Some(n);
        figures.reference_max_abs_diff = Some(max_abs_diff);
        if flips == 0 && max_abs_diff <= REFERENCE_TOLERANCE {
            figures.reference_check = Some(format!("{executor} reproduces onnxruntime {}", reference.runtime().version));
            return Ok(None);
        }
        figures.reference_check = Some(format!(
            "{executor} differs from onnxruntime {} ({flips} label flips, max |dp| {max_abs_diff:e}): onnxruntime runs it",
            reference.runtime().version
        ));
        figures.executor = Some(reference.executor());
        figures.executor_reason =
            Some(format!("{}'s probabilities differ from onnxruntime's", executor.split(' ').next().unwrap_or(executor)));
        figures.onnxruntime_path = Some(reference.runtime().path.display().to_string());
        figures.native_checked_rows = None;
        figures.native_max_abs_diff = None;
        figures.native_label_flips = None;
        Ok(Some(Arc::new(reference)))
    }

    fn load_ort(
        &self,
        data: &Dataset,
        favourable: Favourable,
        facts: &GraphFacts,
        rows: &[f64],
        figures: &mut LoadModelFigures,
        reason: &str,
    ) -> Result<Arc<dyn Model>> {
        let runtime = runtime(self.onnxruntime.as_deref()).map_err(|e| ModelError::RuntimeMissing {
            path: self.path.clone(),
            reason: reason.to_string(),
            message: e.message,
        })?;
        self.refuse_numbered_class(facts)?;
        let choice = OutputChoice { name: self.output.as_deref(), transform: self.transform, favourable, classes: facts.classes.clone() };
        let model = OrtModel::load(&self.path, runtime, &data.domain, &self.feeding(data), choice, rows)?;
        let read = model.input_plan().attributes_read(data.domain.width());
        check_protected_read(&self.path, data, &read)?;
        check_known_categories(&self.path, data, model.input_plan(), facts)?;
        let unused: Vec<String> =
            (0..data.domain.width()).filter(|i| !read.contains(i)).map(|i| data.domain.attributes[i].name.clone()).collect();
        figures.output = Some(model.output_name().to_string());
        figures.output_read = Some(model.reader().describe());
        figures.labels_only = Some(model.reader().labels_only());
        figures.favourable_class_assumed = Some(model.reader().assumed_class);
        versus_rest(figures, model.reader());
        figures.input_contract = Some(model.input_plan().describe());
        figures.unused_features = (!unused.is_empty()).then_some(unused);
        figures.executor = Some(model.executor());
        figures.executor_reason = Some(reason.to_string());
        figures.onnxruntime_path = Some(model.runtime().path.display().to_string());
        Ok(Arc::new(model))
    }

    /// `favourable_class` names a numbered class: refused for a model that names its classes by
    /// text (they are matched to the data's label by name).
    fn refuse_numbered_class(&self, facts: &GraphFacts) -> std::result::Result<(), ModelError> {
        if let Some(class) = self.favourable_class {
            if facts.classes.iter().any(|c| matches!(c, ClassKey::Text(_))) {
                let names: Vec<String> = facts.classes.iter().map(ToString::to_string).collect();
                return Err(ModelError::Onnx {
                    path: self.path.clone(),
                    message: format!(
                        "`favourable_class = {class}` names a numbered class, but the model names its classes [{}] and they are matched to the data's label by name: leave `favourable_class` out, and set `favourable` on the load stage to the one that is favourable",
                        names.join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// Load a tree ensemble the native tree executor covers, and hold it against ONNX Runtime on
    /// the data's rows when ONNX Runtime is installed: with `auto`, a difference hands the model
    /// to ONNX Runtime; with `native`, it is an error.
    fn load_trees(
        &self,
        data: &Dataset,
        favourable: Favourable,
        facts: &GraphFacts,
        graph: TreeGraph,
        rows: &[f64],
        figures: &mut LoadModelFigures,
    ) -> Result<Arc<dyn Model>> {
        self.refuse_numbered_class(facts)?;
        let operators = graph.operators().join(", ");
        let choice = OutputChoice {
            name: self.output.as_deref(),
            transform: self.transform,
            favourable: favourable.clone(),
            classes: facts.classes.clone(),
        };
        let model = TreeModel::load(&self.path, graph, choice, rows)?;
        figures.output = Some(model.output_name().to_string());
        figures.output_read = Some(model.reader().describe());
        figures.labels_only = Some(model.reader().labels_only());
        figures.favourable_class_assumed = Some(model.reader().assumed_class);
        versus_rest(figures, model.reader());
        figures.input_contract = Some(format!("one float32 input [N,{}] (encoded features)", data.domain.width()));
        let executor = model.executor();
        figures.executor = Some(executor.clone());
        figures.executor_reason = Some(format!("the native tree executor covers every operator of the graph ({operators})"));
        let reference =
            self.check_against_onnxruntime(data, &model, model.output_name(), &executor, favourable, facts.classes.clone(), rows, figures)?;
        match reference {
            Some(_) if self.executor == Executor::Native => Err(ModelError::Onnx {
                path: self.path.clone(),
                message: format!(
                    "executor = \"native\": {}; use executor = \"auto\" or \"onnxruntime\"",
                    figures.reference_check.clone().unwrap_or_default()
                ),
            }
            .into()),
            Some(reference) => Ok(reference),
            None => Ok(Arc::new(model)),
        }
    }

    fn executor_name(&self) -> &'static str {
        match self.executor {
            Executor::Auto => "auto",
            Executor::Native => "native",
            Executor::Tract => "tract",
            Executor::Onnxruntime => "onnxruntime",
        }
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
    llm.filter(|l| l.scores == ScoreFrom::Labels).map(|_| {
        "`llm.scores = \"labels\"` reads the first word of one answer as a label (set `llm.scores = \"logprobs\"` or \"samples\" for probabilities)".to_string()
    })
}

/// Load a language model for the data's rows (its template checked on the first row).
fn load_llm(llm: &LlmConfig, dir: &Path, data: &Dataset, figures: &mut LoadModelFigures) -> Result<Arc<dyn Model>> {
    let first: Vec<f64> = data.x.rows().into_iter().next().map(|r| r.to_vec()).unwrap_or_default();
    let model = LlmModel::load(llm, dir, &data.domain, (!first.is_empty()).then_some(first.as_slice()))?;
    figures.output_read = Some(match llm.scores {
        ScoreFrom::Logprobs => "P(favourable): the favourable answers' share of the first answer token's top_logprobs".to_string(),
        ScoreFrom::Samples => format!("P(favourable): the favourable share of {} sampled answers", llm.samples),
        ScoreFrom::Labels => "labels only: the first word of one answer".to_string(),
    });
    figures.labels_only = Some(llm.scores == ScoreFrom::Labels);
    figures.favourable_class_assumed = Some(false);
    figures.input_contract = Some(format!("each row rendered into a prompt by {}", llm.prompt.display()));
    figures.executor = Some(model.describe());
    Ok(Arc::new(model))
}

/// Bind a model handed over in code to the dataset, refusing one that does not read a protected
/// column.
fn load_provided(provided: &ProvidedModel, data: &Dataset, figures: &mut LoadModelFigures) -> Result<Arc<dyn Model>> {
    let bound = provided.0.bind(data)?;
    let described = provided.0.describe();
    check_protected_read(Path::new(&described), data, &bound.read).map_err(|e| match e {
        ModelError::Onnx { message, .. } => ModelError::Remote { url: described.clone(), message },
        other => other,
    })?;
    let unused: Vec<String> =
        (0..data.domain.width()).filter(|i| !bound.read.contains(i)).map(|i| data.domain.attributes[i].name.clone()).collect();
    figures.output_read = Some(bound.output_read);
    figures.labels_only = Some(false);
    figures.favourable_class_assumed = Some(bound.favourable_class_assumed);
    figures.input_contract = Some(bound.input_contract);
    figures.unused_features = (!unused.is_empty()).then_some(unused);
    figures.executor = Some(described);
    Ok(bound.model)
}

/// Record a model of three or more classes in its figures (`model_classes`, `favourable_vs_rest`).
fn versus_rest(figures: &mut LoadModelFigures, reader: &crate::models::outputs::OutputReader) {
    if !reader.classes.is_empty() {
        figures.model_classes = Some(reader.classes.iter().map(ToString::to_string).collect());
        figures.favourable_vs_rest = Some(true);
    }
}

/// A string input whose model knows a fixed list of categories (a `OneHotEncoder` ignores an
/// unknown one, a `LabelEncoder` turns it into −1): a data category outside that list would be
/// scored as something else, silently. Refuse it.
fn check_known_categories(path: &Path, data: &Dataset, plan: &InputPlan, facts: &GraphFacts) -> std::result::Result<(), ModelError> {
    let InputPlan::Named(feeds) = plan else { return Ok(()) };
    for feed in feeds {
        let Some(known) = facts.categories.get(&feed.input) else { continue };
        let attribute = &data.domain.attributes[feed.attribute];
        let fairpipe_abi::domain::AttributeKind::Categorical { levels } = &attribute.kind else { continue };
        let unknown: Vec<&String> = levels.iter().filter(|l| !known.contains(l)).collect();
        if !unknown.is_empty() {
            return Err(ModelError::Onnx {
                path: path.to_path_buf(),
                message: format!(
                    "column {:?} has categories the model's input {} does not know: {unknown:?} (it knows {known:?}); it would score them as something else. Remove those rows from the data, or map them to known categories",
                    attribute.name, feed.input
                ),
            });
        }
    }
    Ok(())
}

/// A model that does not read a protected column cannot discriminate on it, and every search
/// would report nothing: refuse it rather than print a clean result.
fn check_protected_read(path: &Path, data: &Dataset, read: &[usize]) -> std::result::Result<(), ModelError> {
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

#[cfg(test)]
mod tests {
    /// ONNX Runtime's install advice (in the models crate) names this stage's key, which exists.
    #[test]
    fn the_onnxruntime_advice_names_a_key_of_this_stage() {
        assert!(crate::models::onnx::runtime::install_advice().contains("load_model stage's key `onnxruntime = \"PATH\"`"));
        assert!(super::KIND.key("onnxruntime").is_some());
    }
}
