//! The [`Model`] trait every executor implements (native networks and trees, tract, ONNX Runtime,
//! a model behind a server or run as a program), and what a remote one reports ([`RemoteUsage`]).
//! A leaf: the oracle and every executor import it; it imports neither.

use serde::{Deserialize, Serialize};

use crate::error::ModelError;

/// A binary classifier: maps encoded rows to the probability of class 1.
pub trait Model: Send + Sync {
    /// Number of input features.
    fn n_features(&self) -> usize;
    /// Write P(class 1) of each row of `x` (row-major, `out.len()` rows) into `out`.
    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError>;
    /// Short description for summaries ("mlp 12-64-32-16-8-4-2", "onnx census.onnx").
    fn describe(&self) -> String;
    /// What a model behind a server sent and how fast it was answered; `None` for a model run in
    /// this process.
    fn remote_usage(&self) -> Option<RemoteUsage> {
        None
    }

    /// Whether the model gives labels only (its output is a class, read as P(favourable) of 0 or
    /// 1): AUC, calibration, probability thresholds and gradient-guided searches then have nothing
    /// to read.
    fn labels_only(&self) -> bool {
        false
    }

    /// The rating scale `[low, high]` when the model's score is a rating read as
    /// (rating − low) / (high − low) (an LLM asked for a rating: `answers.scale`), not a
    /// probability; `check` and `estimate` then report its paired change in the scale's units.
    fn score_scale(&self) -> Option<[f64; 2]> {
        None
    }

    /// The model as `Any`, for a stage that needs one concrete kind of model (`pairwise` asks an
    /// `LlmModel` for choices between two candidates, by `downcast_ref`); `None` (the default)
    /// for a model no stage asks more of than its scores.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }

    /// Whether the model's answers are placeholders: an LLM whose requests are written down, not
    /// sent (`fairpipe llm plan`, and the cost line before a live run). A stage that stops asking
    /// on what the answers say (`precision`) then asks up to its cap, so that the plan holds every
    /// request the live run may send.
    fn answers_are_placeholders(&self) -> bool {
        false
    }

    /// The budget key (`"max_requests"`, `"max_tokens_total"`) a model behind a metered endpoint
    /// has spent, once it can send no more requests: a search that meets it ends early with
    /// `stopped_by` naming it. `None` for every other model.
    fn budget_spent(&self) -> Option<String> {
        None
    }

    /// Whether the model reads each input as the real number it is, so that a value between two
    /// category levels, or past an attribute's bounds, is an input it scores like any other: a
    /// network or tree ensemble run here over the encoded vector (native, tract, ONNX Runtime with
    /// float inputs). Such a model is shown what a search asks about as it is, as the searches'
    /// reference codes show theirs (MAFT's zero-order gradient probes a category's code at
    /// `x + h`). `false` (the default) for a model that reads categories by name or rounds its
    /// inputs (a Python model with string categories, a served model, an LLM, integer inputs):
    /// the host holds every row a search asks about to the domain before such a model sees it.
    fn takes_any_real_input(&self) -> bool {
        false
    }

    /// Whether [`Model::gradient_into`] computes the exact gradient (a network or a linear model
    /// run in this process); the oracle takes finite differences of any other model.
    fn has_exact_gradient(&self) -> bool {
        false
    }

    /// P(class 1) of each row of `x` into `out` and its exact gradient with respect to each input
    /// into `grad` (row-major, as `x`). Called only when [`Model::has_exact_gradient`].
    fn gradient_into(&self, _x: &[f64], _out: &mut [f64], _grad: &mut [f64]) -> Result<(), ModelError> {
        Err(ModelError::Inference(format!("{} has no exact gradient", self.describe())))
    }

    /// Whether a large batch should be cut into chunks scored on several threads (a model run
    /// here); a model behind a server batches and overlaps its own requests, and wants the whole
    /// batch in one call.
    fn wants_thread_chunks(&self) -> bool {
        true
    }

    /// Rows a call should carry to use the model well, if it has a preference: a model behind a
    /// server asks for a request's `batch_size`, more when its `concurrency` exceeds the threads
    /// calling at once. Callers that can merge their work (the host's checks, the estimate's
    /// trials) size their calls by it ([`Oracle::rows_per_call`]); the answers do not depend on it.
    fn rows_per_call(&self) -> Option<usize> {
        None
    }

    /// For a network or linear model run in this process: the multiply-adds scoring one row
    /// takes (a dense layer of `n_in × n_out` weights counts `n_in · n_out`). `None` for every
    /// other model (ONNX Runtime, tract, trees, SVMs, a server or a command), whose cost per row
    /// is not known here. The generate stage's `cache = "auto"` reads it: on such a model the score
    /// cache is used only while enough rows repeat to pay for its look-ups
    /// ([`crate::score_cache::CacheSwitch`]).
    fn multiply_adds_per_row(&self) -> Option<u64> {
        None
    }
}

/// What a remote model sent and how fast it was answered (the `remote` figures of `load_model`
/// in `summary.json`, counted over the whole run).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RemoteUsage {
    /// HTTP requests sent to score rows (the load-time probe included).
    pub requests: u64,
    /// Rows sent in them.
    pub rows_sent: u64,
    /// Rows asked for by the stages.
    pub rows_asked: u64,
    /// Rows answered from the run's cache instead of the server.
    pub cache_hits: u64,
    /// Request latency percentiles, milliseconds.
    pub latency_ms_p50: f64,
    /// 95th percentile.
    pub latency_ms_p95: f64,
    /// 99th percentile.
    pub latency_ms_p99: f64,
    /// Rows per request.
    pub batch_size: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// For an LLM behind an OpenAI-compatible endpoint: prompts, tokens, cache hits, retries and
    /// unparsed answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmUsage>,
}

/// What an LLM under test was asked and what it cost (`remote.llm` of `load_model` in
/// `summary.json`, counted over the whole run). The API key is never part of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmUsage {
    /// The chat completions endpoint.
    pub endpoint: String,
    /// The endpoint's base URL as the pipeline gives it (`…/v1`).
    #[serde(default)]
    pub base_url: String,
    /// The model's name on the server.
    pub model: String,
    /// How P(favourable) is read: "logprobs", "samples" or "labels".
    pub scores: String,
    /// HTTP requests sent (retries included).
    pub requests: u64,
    /// Requests the server answered (each a prompt, or one sample of it).
    pub prompts_sent: u64,
    /// Rows the stages asked the model for.
    pub rows_asked: u64,
    /// Requests answered from the persistent response cache.
    pub cache_hits: u64,
    /// Requests answered from this run's earlier answers (identical prompts are asked once).
    pub repeats: u64,
    /// Tries after a failed one (429, 5xx, timeouts, connection errors, answers not JSON).
    pub retries: u64,
    /// Distinct prompts whose answers were neither class (scored 0.5 up to `max_unparsed`).
    pub unparsed: u64,
    /// Prompt tokens, as the server counted them.
    pub prompt_tokens: u64,
    /// Answer tokens, as the server counted them.
    pub completion_tokens: u64,
    /// Seconds spent waiting on the server, summed over requests.
    pub waiting_s: f64,
    /// Seconds slept between tries (backoff and `Retry-After`).
    pub backoff_s: f64,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// The response cache file, if any.
    pub cache: Option<String>,
    /// Whether an API key was sent (read from `llm.api_key_env`; the key itself is never written).
    pub api_key_used: bool,
    /// Answers read from the `--responses` file instead of a server (0 without one).
    #[serde(default)]
    pub from_responses: u64,
    /// The distinct `model` names the server's answers gave (the model that says it answered;
    /// empty when every answer came from a cache or a responses file).
    #[serde(default)]
    pub served_models: Vec<String>,
    /// The distinct `system_fingerprint`s of the answers (OpenAI's backend configuration; a
    /// change between runs means the model behind the name changed). Empty when the server sends
    /// none.
    #[serde(default)]
    pub system_fingerprints: Vec<String>,
    /// Whether the response cache holds answers stored while the endpoint said something else of
    /// its model than it says now: answers read from it may be another model's (warned of).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cache_from_another_model: bool,
    /// What the endpoint said of its model before the first prompt ([`EndpointIdentity`]);
    /// absent for a plan and for a `--responses` run, which reach no server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<EndpointIdentity>,
    /// With `llm.validity`: does the logprob score match the answers sampled at the deployed
    /// temperature?
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<Validity>,
    /// With `llm.price`: what this run's answers cost, `prompt_tokens` and `completion_tokens` at
    /// that price (answers from the cache or a responses file cost nothing here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// The logprob score against sampled answers (`remote.llm.validity`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    /// Prompts compared (the data's rows, evenly spaced).
    pub prompts: u64,
    /// Answers sampled per prompt.
    pub samples: u32,
    /// Their temperature.
    pub temperature: f64,
    /// Mean over the prompts of |logprob P(favourable) − the sampled answers' favourable share|.
    pub mean_abs_difference: f64,
    /// The largest such difference.
    pub max_abs_difference: f64,
    /// Requests the samples took (beside the run's own, which `requests` counts).
    pub requests: u64,
}

/// Past this mean |difference| the logprob score is warned of as not the deployment's.
pub const VALIDITY_WARNING: f64 = 0.05;

/// What an OpenAI-compatible endpoint says of the model it serves, asked once before the run's
/// first prompt: `GET …/models` (the model's entry: `id`, `owned_by` and llama.cpp's `meta`, its
/// parameters, size and context) and llama.cpp's `GET /props` (`model_path`, `build_info`,
/// `total_slots`, `chat_template`). A part a server does not offer is absent, and `unavailable`
/// says why; the run's trail keeps its SHA-256, which `fairpipe verify-run` asks for again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointIdentity {
    /// The model's entry of `GET …/models`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<serde_json::Value>,
    /// llama.cpp's `GET /props`, the keys above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub props: Option<serde_json::Value>,
    /// The parts that could not be read, and why ("GET …/props: HTTP 404").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<String>,
}

impl EndpointIdentity {
    /// Whether the endpoint said anything of its model.
    pub fn is_known(&self) -> bool {
        self.model.is_some() || self.props.is_some()
    }

    /// The SHA-256 (lower-case hex) of what the endpoint said: its `/models` entry and `/props`
    /// as canonical JSON (keys sorted at every level, whatever serde_json's features); `None`
    /// when it said nothing. The trail keeps it, `verify-run` compares it, and the response cache
    /// records it for each endpoint that stored answers.
    pub fn hash(&self) -> Option<String> {
        use sha2::{Digest, Sha256};
        fn canonical(v: &serde_json::Value) -> serde_json::Value {
            match v {
                serde_json::Value::Object(map) => {
                    let sorted: std::collections::BTreeMap<&String, serde_json::Value> =
                        map.iter().map(|(k, v)| (k, canonical(v))).collect();
                    serde_json::to_value(sorted).unwrap_or_default()
                }
                serde_json::Value::Array(items) => serde_json::Value::Array(items.iter().map(canonical).collect()),
                other => other.clone(),
            }
        }
        self.is_known().then(|| {
            let both = serde_json::json!({"model": self.model.as_ref().map(canonical), "props": self.props.as_ref().map(canonical)});
            Sha256::digest(both.to_string().as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
        })
    }
}
