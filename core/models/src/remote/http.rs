//! A blocking HTTP client for model servers: connect and request timeouts, retries as the
//! [`RetryPolicy`] says (on connection errors, 429 and 5xx, and what a protocol on top calls
//! transient, e.g. gRPC's UNAVAILABLE), and errors that name the URL, the status and the start of
//! the response body (never the token). [`exchange`], one request and its answer read, is the LLM
//! client's too.

use std::time::Duration;

use bytes::Bytes;
use reqwest::blocking::{Client, RequestBuilder};
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::ModelError;
use crate::retry::{http_status_is_transient, Failure, GaveUp, RetryPolicy};

/// How the client talks to a server.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    /// Time allowed to open a connection.
    pub connect_timeout: Duration,
    /// Time allowed for one request, answer included.
    pub request_timeout: Duration,
    /// When and how long to wait before another try (on a connection error, 429 or 5xx).
    pub retry: RetryPolicy,
    /// A bearer token (read from the environment variable the pipeline names).
    pub token: Option<String>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(60),
            retry: RetryPolicy::MODEL_SERVER,
            token: None,
        }
    }
}

/// Characters of a response body quoted in an error.
const BODY_QUOTE: usize = 300;

/// A client bound to one server's settings.
pub struct Http {
    client: Client,
    settings: HttpSettings,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is left out on purpose.
        write!(
            f,
            "Http(connect {:?}, request {:?}, {} retries)",
            self.settings.connect_timeout, self.settings.request_timeout, self.settings.retry.retries
        )
    }
}

impl Http {
    /// A client with `settings` for the server at `base` (its URL: a plain `http://` server needs
    /// no certificates, so the system's are not loaded for it).
    pub fn new(settings: HttpSettings, base: &str) -> Result<Self, ModelError> {
        Self::build(settings, base, false)
    }

    /// A client with `settings` for `base` that speaks HTTP/2 only (gRPC): over `http://` without
    /// an upgrade ("prior knowledge"), over `https://` chosen by ALPN.
    pub fn new_http2(settings: HttpSettings, base: &str) -> Result<Self, ModelError> {
        Self::build(settings, base, true)
    }

    fn build(settings: HttpSettings, base: &str, http2_only: bool) -> Result<Self, ModelError> {
        let mut builder = Client::builder().connect_timeout(settings.connect_timeout).timeout(settings.request_timeout);
        if http2_only {
            builder = builder.http2_prior_knowledge();
        }
        if base.starts_with("http://") {
            // Parsing the system's root certificates costs about 10 ms of CPU per client.
            builder = builder.tls_built_in_root_certs(false);
        }
        let client = builder.build().map_err(|e| ModelError::Inference(format!("cannot build the HTTP client: {e}")))?;
        Ok(Http { client, settings })
    }

    /// `GET url`, its JSON body.
    pub fn get_json(&self, url: &str) -> Result<Value, ModelError> {
        self.send(url, || self.client.get(url))
    }

    /// `GET url`: whether it answers 200 (after retries on connection errors, 429 and 5xx).
    pub fn get_ok(&self, url: &str) -> Result<(), ModelError> {
        self.send(url, || self.client.get(url)).map(|_| ())
    }

    /// `POST url` with a JSON body, its JSON answer.
    pub fn post_json(&self, url: &str, body: &Value) -> Result<Value, ModelError> {
        self.send(url, || self.client.post(url).json(body))
    }

    /// `POST url` with a JSON body already serialised (`body`: UTF-8 JSON text), its JSON answer.
    pub fn post_json_text(&self, url: &str, body: Vec<u8>) -> Result<Value, ModelError> {
        // Shared by every try, not copied.
        let body = Bytes::from(body);
        self.send(url, || self.client.post(url).header(reqwest::header::CONTENT_TYPE, "application/json").body(body.clone()))
    }

    /// `POST url` with `headers` and a binary `body`; the answer (status 2xx, its headers and body)
    /// is read by `read`, which says whether a failure it finds is worth another try.
    pub fn post_bytes<T>(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: Vec<u8>,
        read: impl Fn(&HeaderMap, &[u8]) -> Result<T, Failure>,
    ) -> Result<T, ModelError> {
        // Shared by every try, not copied.
        let body = Bytes::from(body);
        self.retrying(url, || self.try_once(self.client.post(url).headers(headers.clone()).body(body.clone()), &read))
    }

    /// `request` sent until it succeeds, fails for good, or the retries are spent; its JSON answer.
    fn send(&self, url: &str, request: impl Fn() -> RequestBuilder) -> Result<Value, ModelError> {
        self.retrying(url, || self.try_once(request(), |_, bytes| json(bytes)))
    }

    /// `once` tried as the settings' [`RetryPolicy`] says; an error names `url`.
    fn retrying<T>(&self, url: &str, once: impl Fn() -> Result<T, Failure>) -> Result<T, ModelError> {
        self.settings.retry.run(once, |_| {}).map_err(|gave_up| {
            let message = match gave_up {
                GaveUp::Final(message) | GaveUp::Spent(message) => message,
            };
            ModelError::Remote { url: url.to_string(), message }
        })
    }

    /// One request (with the token) and its answer (see [`exchange`]).
    fn try_once<T>(&self, builder: RequestBuilder, read: impl FnOnce(&HeaderMap, &[u8]) -> Result<T, Failure>) -> Result<T, Failure> {
        exchange(builder, self.settings.token.as_deref(), read)
    }
}

/// One request sent (with `token` as a bearer token) and its answer read whole: a 2xx answer's
/// headers and body go to `read`; a connection error or a body cut short is worth another try, and
/// so is a status HTTP's rule calls transient (429, 5xx: with the server's `Retry-After`); any
/// other status is final.
pub fn exchange<T>(
    mut builder: RequestBuilder,
    token: Option<&str>,
    read: impl FnOnce(&HeaderMap, &[u8]) -> Result<T, Failure>,
) -> Result<T, Failure> {
    if let Some(token) = token {
        builder = builder.bearer_auth(token);
    }
    let response = builder.send().map_err(|e| Failure::retryable(transport(&e)))?;
    let status = response.status();
    let headers = response.headers().clone();
    // A body cut short (the server died while answering) is a connection error: retried.
    let body = response.bytes().map_err(|e| Failure::retryable(format!("cannot read the response ({status}): {}", transport(&e))))?;
    if !status.is_success() {
        let message = format!("HTTP {status}; the response starts {:?}", quote(&String::from_utf8_lossy(&body)));
        return Err(if http_status_is_transient(status) {
            Failure::Retryable { message, retry_after: retry_after(&headers) }
        } else {
            Failure::Final(message)
        });
    }
    read(&headers, &body)
}

/// `Retry-After` in seconds (an HTTP date is not read: the backoff applies).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let seconds: f64 = text.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(1e9)))
}

/// A JSON answer (an empty one: null).
fn json(body: &[u8]) -> Result<Value, Failure> {
    let text = String::from_utf8_lossy(body);
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    super::parse_json(&text).map_err(|e| Failure::Final(format!("the response is not JSON ({e}); it starts {:?}", quote(&text))))
}

/// A transport error, said plainly (reqwest's own text repeats the URL; the chain holds the cause).
pub fn transport(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    let mut cause = String::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    if cause.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {cause}")
    }
}

/// The start of a response body or a server's message.
pub fn quote(text: &str) -> String {
    let mut end = text.len().min(BODY_QUOTE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end < text.len() {
        format!("{}…", &text[..end])
    } else {
        text.to_string()
    }
}
