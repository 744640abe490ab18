//! The OpenAI-compatible `POST …/chat/completions` client: one keep-alive connection pool shared
//! by the requests in flight, a timeout per request, retries as the [`RetryPolicy`] says on
//! connection errors, timeouts, 429, 5xx and answers that are not JSON (a `Retry-After` header is
//! honoured), the run's budgets (`max_requests`, `max_tokens_total`) checked before every try, and
//! the traffic counted. The API key goes in the `Authorization` header only: never in a message,
//! a figure or the cache.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::blocking::Client as HttpClient;
use serde_json::Value;

use super::error::LlmError;
use crate::model::EndpointIdentity;
use crate::remote::http::{exchange, quote};
use crate::retry::{Failure, GaveUp, RetryPolicy};

/// What a request costs and how it went, over the run.
#[derive(Debug, Default)]
pub struct Counters {
    /// HTTP requests sent (retries included).
    pub requests: AtomicU64,
    /// Tries after a failed one.
    pub retries: AtomicU64,
    /// Prompt tokens, as the server counts them.
    pub prompt_tokens: AtomicU64,
    /// Answer tokens.
    pub completion_tokens: AtomicU64,
    /// Microseconds spent waiting for the server's answers.
    pub waiting_us: AtomicU64,
    /// Microseconds slept between tries (backoff, `Retry-After`).
    pub backoff_us: AtomicU64,
    /// Each answered request's latency, milliseconds.
    pub latencies_ms: Mutex<Vec<f64>>,
    /// The distinct `model` names the answers gave (the model the server says answered).
    pub served_models: Mutex<BTreeSet<String>>,
    /// The distinct `system_fingerprint`s the answers gave (OpenAI's backend configuration).
    pub system_fingerprints: Mutex<BTreeSet<String>>,
}

/// One answer as the server gave it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Reply {
    /// The answer's text.
    pub content: String,
    /// The first answer token's alternatives (token, log-probability), when the server sent them.
    pub top: Option<Vec<(String, f64)>>,
}

/// Why a request gave no answer.
#[derive(Debug, Clone, PartialEq)]
pub enum AskError {
    /// A budget is spent (its key and limit): the run stops rather than send more.
    Budget(String),
    /// The request failed for good (after its retries).
    Failed(String),
}

/// Limits on the run's traffic.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budgets {
    /// Most HTTP requests.
    pub max_requests: Option<u64>,
    /// Most tokens (prompt + answer).
    pub max_tokens: Option<u64>,
}

/// A client bound to one endpoint.
pub struct Client {
    http: HttpClient,
    url: String,
    key: Option<String>,
    retry: RetryPolicy,
    budgets: Budgets,
    /// The traffic so far.
    pub counters: Counters,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is left out on purpose.
        write!(f, "Client({}, {} retries)", self.url, self.retry.retries)
    }
}

/// How long an idle kept-alive connection stays in the pool: under the 5 s after which llama.cpp's
/// server (cpp-httplib), uvicorn (vLLM, MLServer) and Node close an idle connection. A request
/// sent on a connection the server is closing fails ("connection closed before message
/// completed") and is retried, which costs a try and shows in `retries`. A stage that computes
/// for seconds between model calls leaves its connections idle that long.
pub const POOL_IDLE: Duration = Duration::from_secs(4);

impl Client {
    /// A client for `base_url` (`…/v1`; `path`, e.g. `/chat/completions`, is added) with
    /// `concurrency` connections kept alive, trying again as `retry` says. A connection idle for
    /// [`POOL_IDLE`] is closed by the client rather than reused, so that it is not reused at the
    /// moment the server closes it.
    pub fn new(
        base_url: &str,
        path: &str,
        key: Option<String>,
        timeout: Duration,
        retry: RetryPolicy,
        concurrency: usize,
        budgets: Budgets,
    ) -> Result<Client, LlmError> {
        let mut builder = HttpClient::builder()
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .timeout(timeout)
            .pool_max_idle_per_host(concurrency.max(1))
            .pool_idle_timeout(POOL_IDLE)
            .tcp_nodelay(true);
        if base_url.starts_with("http://") {
            builder = builder.tls_built_in_root_certs(false);
        }
        let http = builder.build().map_err(|e| LlmError::HttpClient(e.to_string()))?;
        let url = format!("{}{path}", base_url.trim_end_matches('/'));
        Ok(Client { http, url, key, retry, budgets, counters: Counters::default() })
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Ask with `body` (a chat completion request, serialised); `what` names the request in
    /// messages ("row 12's prompt \"…\"").
    pub fn ask(&self, body: &Bytes, what: &str, want_logprobs: bool) -> Result<Reply, AskError> {
        let once = || {
            self.reserve_request().map_err(Failure::Final)?;
            self.try_once(body, want_logprobs).map_err(|failure| failure.map_final(AskError::Failed))
        };
        let waiting = |wait: Duration| {
            self.counters.retries.fetch_add(1, Ordering::Relaxed);
            self.counters.backoff_us.fetch_add(wait.as_micros() as u64, Ordering::Relaxed);
        };
        self.retry.run(once, waiting).map_err(|gave_up| match gave_up {
            GaveUp::Final(AskError::Budget(budget)) => AskError::Budget(budget),
            GaveUp::Final(AskError::Failed(message)) | GaveUp::Spent(message) => {
                AskError::Failed(self.redacted(format!("{}: {what}: {message}", self.url)))
            }
        })
    }

    /// The budget key that is spent (no request may be sent), if one is.
    pub fn budget_spent(&self) -> Option<&'static str> {
        let c = &self.counters;
        if self.budgets.max_requests.is_some_and(|cap| c.requests.load(Ordering::Relaxed) >= cap) {
            return Some("max_requests");
        }
        let spent = c.prompt_tokens.load(Ordering::Relaxed) + c.completion_tokens.load(Ordering::Relaxed);
        self.budgets.max_tokens.is_some_and(|cap| spent >= cap).then_some("max_tokens_total")
    }

    /// `message` with the API key, should a server have echoed it, replaced.
    fn redacted(&self, message: String) -> String {
        match &self.key {
            Some(key) if !key.is_empty() && message.contains(key.as_str()) => message.replace(key.as_str(), "[the API key]"),
            _ => message,
        }
    }

    /// Count one more request, unless a budget is spent (the count is reserved atomically, so
    /// requests in flight together never pass `max_requests`; tokens are known only once answered,
    /// so `max_tokens_total` is checked before each request).
    fn reserve_request(&self) -> Result<(), AskError> {
        if let Some(cap) = self.budgets.max_tokens {
            let spent = self.counters.prompt_tokens.load(Ordering::Relaxed) + self.counters.completion_tokens.load(Ordering::Relaxed);
            if spent >= cap {
                return Err(AskError::Budget(format!("max_tokens_total = {cap} reached ({spent} tokens spent)")));
            }
        }
        let cap = self.budgets.max_requests.unwrap_or(u64::MAX);
        self.counters
            .requests
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |sent| (sent < cap).then_some(sent + 1))
            .map(|_| ())
            .map_err(|_| AskError::Budget(format!("max_requests = {cap} reached")))
    }

    /// One request and its answer, timed (and counted as answered when it is).
    fn try_once(&self, body: &Bytes, want_logprobs: bool) -> Result<Reply, Failure> {
        let request = self.http.post(&self.url).header(reqwest::header::CONTENT_TYPE, "application/json").body(body.clone());
        let started = Instant::now();
        let result = exchange(request, self.key.as_deref(), |_, body| self.read(body, want_logprobs));
        let elapsed = started.elapsed();
        self.counters.waiting_us.fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
        if result.is_ok() {
            self.counters.latencies_ms.lock().unwrap_or_else(|p| p.into_inner()).push(elapsed.as_secs_f64() * 1000.0);
        }
        result
    }

    /// A 2xx answer: its text, the first token's alternatives, the tokens counted, and who
    /// answered.
    fn read(&self, body: &[u8], want_logprobs: bool) -> Result<Reply, Failure> {
        let (reply, usage, served) =
            read_reply(body, want_logprobs)
                .map_err(|e| if e.retryable { Failure::retryable(e.message) } else { Failure::Final(e.message) })?;
        if let Some((prompt, completion)) = usage {
            self.counters.prompt_tokens.fetch_add(prompt, Ordering::Relaxed);
            self.counters.completion_tokens.fetch_add(completion, Ordering::Relaxed);
        }
        let keep = |set: &Mutex<BTreeSet<String>>, value: Option<String>| {
            if let Some(v) = value.filter(|v| !v.is_empty()) {
                set.lock().unwrap_or_else(|p| p.into_inner()).insert(v);
            }
        };
        keep(&self.counters.served_models, served.model);
        keep(&self.counters.system_fingerprints, served.system_fingerprint);
        Ok(reply)
    }

    /// What the endpoint at `base_url` (`…/v1`) says of the model `model` it serves, asked once
    /// with a short timeout: `GET …/models` (the entry whose `id` is `model`, else the only one;
    /// its `id`, `owned_by` and llama.cpp's `meta`, not `created`, which some servers set to the
    /// time of asking) and llama.cpp's `GET /props` beside `/v1` (`model_path`, `build_info`,
    /// `total_slots`, `chat_template`). A part the server does not offer is absent and said so in
    /// `unavailable`; nothing here fails the run.
    pub fn identity(&self, base_url: &str, model: &str) -> EndpointIdentity {
        let base = base_url.trim_end_matches('/');
        let root = base.strip_suffix("/v1").unwrap_or(base);
        let mut identity = EndpointIdentity::default();
        match self.get_json(&format!("{base}/models")) {
            Ok(list) => {
                let entries = list.get("data").and_then(Value::as_array).cloned().unwrap_or_default();
                let entry = entries.iter().find(|e| e.get("id").and_then(Value::as_str) == Some(model)).or(match &entries[..] {
                    [only] => Some(only),
                    _ => None,
                });
                match entry {
                    Some(e) => identity.model = Some(Value::Object(picked(e, &["id", "owned_by", "meta"]))),
                    None => identity.unavailable.push(format!("GET {base}/models lists no model `{model}`")),
                }
            }
            Err(why) => identity.unavailable.push(format!("GET {base}/models: {why}")),
        }
        match self.get_json(&format!("{root}/props")) {
            Ok(props) => {
                let kept = picked(&props, &["model_path", "build_info", "total_slots", "chat_template"]);
                if !kept.is_empty() {
                    identity.props = Some(Value::Object(kept));
                }
            }
            Err(why) => identity.unavailable.push(format!("GET {root}/props: {why}")),
        }
        identity
    }

    /// `GET url` as JSON, within [`IDENTITY_TIMEOUT`], with the API key when there is one.
    fn get_json(&self, url: &str) -> Result<Value, String> {
        let mut request = self.http.get(url).timeout(IDENTITY_TIMEOUT);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().map_err(|e| self.redacted(e.to_string()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("HTTP {}", status.as_u16()));
        }
        let text = response.text().map_err(|e| e.to_string())?;
        serde_json::from_str(&text).map_err(|e| format!("not JSON ({e})"))
    }
}

/// What the endpoint at `base_url` says now of model `model` ([`Client::identity`]), asked
/// without an API key (`fairpipe verify-run`).
pub fn identity_of(base_url: &str, model: &str) -> EndpointIdentity {
    match Client::new(base_url, "", None, IDENTITY_TIMEOUT, RetryPolicy::LLM.with_retries(0), 1, Budgets::default()) {
        Ok(client) => client.identity(base_url, model),
        Err(e) => EndpointIdentity { unavailable: vec![e.to_string()], ..EndpointIdentity::default() },
    }
}

/// The members `keys` of JSON object `value` that it has.
fn picked(value: &Value, keys: &[&str]) -> serde_json::Map<String, Value> {
    keys.iter().filter_map(|k| Some((k.to_string(), value.get(*k)?.clone()))).collect()
}

/// How long the endpoint's identity may take to answer ([`Client::identity`]).
const IDENTITY_TIMEOUT: Duration = Duration::from_secs(10);

/// What an answer says of the model behind the endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServedBy {
    /// The answer's `model`: the name the server answered as.
    pub model: Option<String>,
    /// OpenAI's `system_fingerprint`: the backend configuration that answered.
    pub system_fingerprint: Option<String>,
}

/// Tokens a completion's `usage` counts: (prompt, completion).
pub type Usage = (u64, u64);

/// Why an answer's body cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ReadError {
    /// Whether trying again may help (a body that is not JSON).
    pub retryable: bool,
    /// What is wrong.
    pub message: String,
}

/// A chat (or text) completion's body read: its answer and first token's alternatives, the
/// tokens its `usage` counts (prompt, completion) and who answered ([`ServedBy`]). An error says
/// whether trying again may help (a body that is not JSON) and what is wrong.
pub fn read_reply(body: &[u8], want_logprobs: bool) -> Result<(Reply, Option<Usage>, ServedBy), ReadError> {
    let text = String::from_utf8_lossy(body);
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| ReadError { retryable: true, message: format!("the response is not JSON ({e}); it starts {:?}", quote(&text)) })?;
    let usage = value.get("usage").map(|usage| {
        let count = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        (count("prompt_tokens"), count("completion_tokens"))
    });
    let choice = value
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| ReadError { retryable: false, message: format!("the answer has no `choices[0]`; it starts {:?}", quote(&text)) })?;
    // A chat answer's `message.content`, a text completion's `text`.
    let content = choice.pointer("/message/content").or_else(|| choice.get("text")).and_then(Value::as_str).unwrap_or_default().to_string();
    // The chat format (`logprobs.content[0].top_logprobs`: a list of {token, logprob}), or a text
    // completion's (`logprobs.top_logprobs[0]`: an object token → logprob).
    let top = match choice.pointer("/logprobs/content/0/top_logprobs").and_then(Value::as_array) {
        Some(list) => {
            Some(list.iter().filter_map(|t| Some((t.get("token")?.as_str()?.to_string(), t.get("logprob")?.as_f64()?))).collect::<Vec<_>>())
        }
        None => choice
            .pointer("/logprobs/top_logprobs/0")
            .and_then(Value::as_object)
            .map(|map| map.iter().filter_map(|(token, logprob)| Some((token.clone(), logprob.as_f64()?))).collect()),
    };
    if want_logprobs && top.as_ref().is_none_or(Vec::is_empty) {
        return Err(ReadError {
            retryable: false,
            message: format!(
                "the answer has no `choices[0].logprobs.content[0].top_logprobs` (chat) or `choices[0].logprobs.top_logprobs[0]` (completions) (the server may not give logprobs: set `llm.scores = \"samples\"` or \"labels\"); it starts {:?}",
                quote(&text)
            ),
        });
    }
    let text_of = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let served = ServedBy { model: text_of("model"), system_fingerprint: text_of("system_fingerprint") };
    Ok((Reply { content, top }, usage, served))
}
