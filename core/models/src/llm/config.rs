//! The `llm = { … }` block of a `load_model` stage: where the model is, how a row becomes a
//! prompt, which answers are which class, how P(favourable) is read, and what the run may spend.

use std::collections::BTreeMap;
use std::path::PathBuf;

use fairpipe_keys::{KeyType, StageKeys};
use serde::{Deserialize, Serialize};

/// How P(favourable) is read from the model's answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, KeyType)]
#[serde(rename_all = "snake_case")]
pub enum ScoreFrom {
    /// The first answer token's `top_logprobs`: the mass of the favourable answers over that of
    /// favourable + unfavourable ones (discrim-eval's normalisation).
    #[default]
    Logprobs,
    /// `samples` answers at `temperature`, P = favourable / (favourable + unfavourable) answers.
    Samples,
    /// One answer's first word: a label (P = 0 or 1); the model gives labels only.
    Labels,
}

impl ScoreFrom {
    /// Its name as written in the pipeline.
    pub fn name(self) -> &'static str {
        match self {
            ScoreFrom::Logprobs => "logprobs",
            ScoreFrom::Samples => "samples",
            ScoreFrom::Labels => "labels",
        }
    }
}

/// Which OpenAI-compatible API the requests use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, KeyType)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `POST …/chat/completions`: the system message and the prompt as messages.
    #[default]
    Chat,
    /// `POST …/completions` (text completion, where the server has it): the system message, a
    /// blank line and the prompt as one `prompt` text, `logprobs` = the alternatives asked for.
    Completions,
}

impl Api {
    /// The path added to `base_url`.
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/chat/completions",
            Api::Completions => "/completions",
        }
    }
}

/// The answers read as each class, or the scale of a rating.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields)]
pub struct Answers {
    /// Answers (tokens or first words) meaning the favourable outcome, e.g. ["yes", "Yes"],
    /// compared exactly after trimming.
    #[serde(default)]
    pub favourable: Vec<String>,
    /// Answers meaning the unfavourable outcome, e.g. ["no", "No"].
    #[serde(default)]
    pub unfavourable: Vec<String>,
    /// A rating instead of a yes/no answer: the whole numbers from LOW to HIGH, e.g. [0, 10] or
    /// [1, 5]. The model's score is the expected rating (over the first token's `top_logprobs`
    /// that are a number of the scale, or the mean of the sampled answers' first numbers), read
    /// as (rating − LOW) / (HIGH − LOW): a rating above the middle of the scale is the favourable
    /// decision, and `check` and `estimate` report `score_shift` in the scale's units.
    #[serde(default)]
    pub scale: Option<[i64; 2]>,
}

impl Answers {
    /// The scale as (low, high), when the answers are a rating.
    pub fn scale(&self) -> Option<(i64, i64)> {
        self.scale.map(|[low, high]| (low, high))
    }
}

/// What an endpoint charges, per million tokens, in any one currency (the costs reported are in
/// it): `price = { prompt = 0.15, completion = 0.60 }`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million prompt tokens.
    pub prompt: f64,
    /// Per million answer (completion) tokens.
    pub completion: f64,
}

impl Price {
    /// The cost of `prompt_tokens` and `completion_tokens` at this price.
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        (prompt_tokens as f64 * self.prompt + completion_tokens as f64 * self.completion) / 1e6
    }
}

/// Ratings past this are refused (a scale of a few numbers is what the rating designs ask).
pub const MAX_SCALE: i64 = 100;

fn default_top_logprobs() -> u32 {
    20
}
fn default_max_tokens() -> u32 {
    1
}
fn default_samples() -> u32 {
    1
}
fn default_concurrency() -> usize {
    8
}
fn default_timeout() -> f64 {
    60.0
}
fn default_retries() -> u32 {
    crate::retry::RetryPolicy::LLM.retries
}
fn default_backoff() -> f64 {
    crate::retry::RetryPolicy::LLM.first_backoff.as_secs_f64()
}
fn default_cache() -> Option<PathBuf> {
    Some(PathBuf::from("llm-cache.sqlite"))
}

/// The `llm` block. Its keys are described here once (`#[derive(StageKeys)]`): the stage
/// reference lists them under `load_model`'s `llm`, and `fairpipe list --markdown llm` prints the
/// block docs/llm-audits.md holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// The OpenAI-compatible API's base, e.g. `http://127.0.0.1:8080/v1` (`/chat/completions` is
    /// added).
    pub base_url: String,
    /// The model's name as the server knows it.
    pub model: String,
    /// The prompt template (minijinja), relative to the pipeline file.
    pub prompt: PathBuf,
    /// `"chat"` (`/chat/completions`, the default) or `"completions"` (`/completions`).
    #[serde(default)]
    pub api: Api,
    /// A system message sent before every prompt.
    #[serde(default)]
    pub system: Option<String>,
    /// Which answers are which class.
    #[key(nested, ty = "table")]
    pub answers: Answers,
    /// Per protected column, per value, a list of first names a template can use (`{{ name }}`)
    /// instead of stating the value: { COLUMN = { VALUE = ["Name", …], … } }.
    #[serde(default)]
    pub names: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// How P(favourable) is read.
    #[serde(default)]
    pub scores: ScoreFrom,
    /// Sampling temperature.
    #[serde(default)]
    #[key(default = "0 (samples: 1)")]
    pub temperature: Option<f64>,
    /// Answers per prompt for `scores = "samples"` (at least 2).
    #[serde(default = "default_samples")]
    pub samples: u32,
    /// Alternatives asked for in `top_logprobs` (1–20).
    #[serde(default = "default_top_logprobs")]
    pub top_logprobs: u32,
    /// Tokens the model may answer with.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// A seed sent with each request (samples: seed + k for the k-th sample).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Environment variable holding the API key (sent as a bearer token; never written anywhere).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Requests in flight at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Seconds allowed for one request.
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// Tries after the first on a connection error, a timeout, 429 or 5xx.
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Seconds before the first retry (doubled each time), unless the server says `Retry-After`.
    #[serde(default = "default_backoff")]
    pub backoff_s: f64,
    /// Most requests the run may send; the run stops rather than send more.
    #[serde(default)]
    pub max_requests: Option<u64>,
    /// Most tokens (prompt + answer, as the server counts them) the run may spend.
    #[serde(default)]
    pub max_tokens_total: Option<u64>,
    /// Answers that are neither class the run tolerates (scored 0.5 and counted); past it the run
    /// stops naming the prompts.
    #[serde(default)]
    pub max_unparsed: u64,
    /// The response cache (SQLite), relative to the pipeline file; `""`: none.
    #[serde(default = "default_cache")]
    pub cache: Option<PathBuf>,
    /// Does the score match the deployment? This many of the data's rows (evenly spaced) are
    /// also asked `validity_samples` times at `validity_temperature`, and the logprob P(favourable)
    /// is compared with the favourable share of those answers (`remote.llm.validity`; warned when
    /// the mean |difference| passes 0.05). Only with `scores = "logprobs"`.
    #[serde(default)]
    pub validity: Option<u32>,
    /// Answers sampled per prompt for `validity`.
    #[serde(default = "default_validity_samples")]
    pub validity_samples: u32,
    /// The temperature the model is deployed at, for `validity`'s samples.
    #[serde(default = "default_validity_temperature")]
    pub validity_temperature: f64,
    /// Keep every answer to the ones the prompt expects: each request carries llama.cpp's
    /// `grammar` field, a GBNF allowing exactly the favourable and unfavourable answers, the
    /// scale's numbers, or a pairwise prompt's two labels (a llama.cpp server; OpenAI's API has no
    /// such field). It shapes the answers `scores = "samples"` and `"labels"` read; llama.cpp's
    /// `top_logprobs` come from before the grammar, so a logprob score is the same with or without.
    #[serde(default)]
    pub grammar: bool,
    /// What the endpoint charges per million tokens, e.g. `{ prompt = 0.15, completion = 0.60 }`:
    /// the cost line before a live run gives the most the run's planned requests cost, and
    /// `remote.llm.cost` what its answers' `usage` cost.
    #[serde(default)]
    #[key(nested, ty = "table", default = "none")]
    pub price: Option<Price>,
}

fn default_validity_samples() -> u32 {
    10
}
fn default_validity_temperature() -> f64 {
    1.0
}

impl LlmConfig {
    /// The temperature sent: the one given, else 1 for samples and 0 otherwise.
    pub fn temperature(&self) -> f64 {
        self.temperature.unwrap_or(if self.scores == ScoreFrom::Samples { 1.0 } else { 0.0 })
    }

    /// Requests per prompt.
    pub fn samples_per_prompt(&self) -> u32 {
        if self.scores == ScoreFrom::Samples {
            self.samples.max(1)
        } else {
            1
        }
    }

    /// Every problem with the block, as (key under `llm`, message).
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        let mut say = |key: &'static str, message: String| problems.push((key, message));
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            say("base_url", format!("`llm.base_url` must start with http:// or https://, not {:?}", self.base_url));
        }
        if self.model.trim().is_empty() {
            say("model", "`llm.model` is empty: give the model's name as the server knows it".into());
        }
        if self.validity.is_some() {
            if self.scores != ScoreFrom::Logprobs {
                say("validity", "`llm.validity` compares the logprob score with sampled answers: it needs `scores = \"logprobs\"`".into());
            }
            if self.validity == Some(0) || self.validity_samples < 2 {
                say("validity", "`llm.validity` needs at least 1 prompt and `validity_samples` at least 2".into());
            }
            if !(self.validity_temperature > 0.0 && self.validity_temperature <= 2.0) {
                say(
                    "validity_temperature",
                    format!(
                        "`llm.validity_temperature` is a sampling temperature above 0 and at most 2, not {}",
                        self.validity_temperature
                    ),
                );
            }
        }
        match self.answers.scale {
            Some([low, high]) => {
                if !self.answers.favourable.is_empty() || !self.answers.unfavourable.is_empty() {
                    say("answers", "`llm.answers` gives a `scale` and yes/no answers: a rating has no favourable or unfavourable words (leave them out), a yes/no question no scale".into());
                }
                if !(0 <= low && low < high && high <= MAX_SCALE) {
                    say("answers", format!("`llm.answers.scale = [{low}, {high}]`: give the lowest and highest rating, whole numbers with 0 <= LOW < HIGH <= {MAX_SCALE}, e.g. [0, 10] or [1, 5]"));
                }
            }
            None if self.answers.favourable.is_empty() || self.answers.unfavourable.is_empty() => {
                say(
                    "answers",
                    "`llm.answers` needs at least one favourable and one unfavourable answer, or a rating's `scale = [LOW, HIGH]`".into(),
                );
            }
            None => {}
        }
        for answer in &self.answers.favourable {
            if self.answers.unfavourable.iter().any(|u| u.trim() == answer.trim()) {
                say("answers", format!("{answer:?} is both a favourable and an unfavourable answer"));
            }
            if answer.trim().is_empty() {
                say("answers", "an answer is empty".into());
            }
        }
        if self.concurrency == 0 {
            say("concurrency", "`llm.concurrency` must be at least 1".into());
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            say("timeout_s", format!("`llm.timeout_s` must be a positive number of seconds, not {}", self.timeout_s));
        }
        if !(self.backoff_s.is_finite() && self.backoff_s >= 0.0) {
            say("backoff_s", format!("`llm.backoff_s` must be a number of seconds, not {}", self.backoff_s));
        }
        if let Some(t) = self.temperature {
            if !(t.is_finite() && (0.0..=2.0).contains(&t)) {
                say("temperature", format!("`llm.temperature` must be between 0 and 2, not {t}"));
            }
        }
        match self.scores {
            ScoreFrom::Samples if self.samples < 2 => {
                say("samples", "`llm.scores = \"samples\"` estimates P(favourable) by frequency: give `samples` of 2 or more".into())
            }
            ScoreFrom::Samples if self.temperature() == 0.0 => say(
                "temperature",
                "`llm.scores = \"samples\"` at temperature 0 asks the same answer every time: give a temperature above 0".into(),
            ),
            ScoreFrom::Logprobs | ScoreFrom::Labels if self.samples != 1 => {
                say("samples", format!("`llm.samples` is for `scores = \"samples\"` (now {:?})", self.scores.name()))
            }
            _ => {}
        }
        if self.scores == ScoreFrom::Logprobs && !(1..=20).contains(&self.top_logprobs) {
            say("top_logprobs", format!("`llm.top_logprobs` must be between 1 and 20 (OpenAI's limit), not {}", self.top_logprobs));
        }
        if let Some(price) = self.price {
            if !(price.prompt.is_finite() && price.prompt >= 0.0 && price.completion.is_finite() && price.completion >= 0.0) {
                say(
                    "price",
                    format!(
                        "`llm.price` is what a million prompt and completion tokens cost, two numbers of 0 or more, not {{ prompt = {}, completion = {} }}",
                        price.prompt, price.completion
                    ),
                );
            }
        }
        if self.max_tokens == 0 {
            say("max_tokens", "`llm.max_tokens` must be at least 1".into());
        }
        // A rating read from the answer's text needs room for its longest number: a tokenizer
        // that splits digits answers "10" as "1" then "0", and one token would read it as 1.
        if let (Some((_, high)), ScoreFrom::Samples | ScoreFrom::Labels) = (self.answers.scale(), self.scores) {
            let digits = high.to_string().len() as u32;
            if self.max_tokens < digits {
                say(
                    "max_tokens",
                    format!(
                        "`llm.max_tokens = {}` cannot hold the rating {high} when a tokenizer splits its digits (\"{high}\" would be read as its first digit): give `max_tokens = {digits}` or more",
                        self.max_tokens
                    ),
                );
            }
        }
        if self.max_requests == Some(0) {
            say("max_requests", "`llm.max_requests` must be at least 1 (leave it out for no cap)".into());
        }
        if self.max_tokens_total == Some(0) {
            say("max_tokens_total", "`llm.max_tokens_total` must be at least 1 (leave it out for no cap)".into());
        }
        if let Some(var) = &self.api_key_env {
            if std::env::var_os(var).is_none() {
                say("api_key_env", format!("`llm.api_key_env`: the environment variable {var} is not set"));
            }
        }
        problems
    }
}
