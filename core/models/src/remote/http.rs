//! A blocking HTTP client for model servers: connect and request timeouts, retries with
//! exponential backoff and jitter on connection errors, 429 and 5xx (and what a protocol on top
//! says is worth another try, e.g. gRPC's UNAVAILABLE), and errors that name the URL, the status and
//! the start of the response body (never the token).

use std::time::Duration;

use bytes::Bytes;
use rand::Rng;
use reqwest::blocking::{Client, RequestBuilder};
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde_json::Value;

use crate::error::ModelError;

/// How the client talks to a server.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    /// Time allowed to open a connection.
    pub connect_timeout: Duration,
    /// Time allowed for one request, answer included.
    pub request_timeout: Duration,
    /// Tries after the first one on a connection error, 429 or 5xx.
    pub retries: u32,
    /// Wait before the first retry; doubled each time, with up to 50% jitter added.
    pub backoff: Duration,
    /// A bearer token (read from the environment variable the pipeline names).
    pub token: Option<String>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(60),
            retries: 3,
            backoff: Duration::from_millis(200),
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
            self.settings.connect_timeout, self.settings.request_timeout, self.settings.retries
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

    /// `once` tried until it succeeds, fails for good, or the retries are spent (waiting with
    /// exponential backoff and jitter between tries).
    fn retrying<T>(&self, url: &str, once: impl Fn() -> Result<T, Failure>) -> Result<T, ModelError> {
        let err = |message: String| ModelError::Remote { url: url.to_string(), message };
        let mut attempt = 0u32;
        loop {
            let failure = match once() {
                Ok(value) => return Ok(value),
                Err(Failure::Final(message)) => return Err(err(message)),
                Err(Failure::Retryable(message)) => message,
            };
            if attempt >= self.settings.retries {
                let tries = attempt + 1;
                return Err(err(format!("{failure} (after {tries} tr{})", if tries == 1 { "y" } else { "ies" })));
            }
            std::thread::sleep(self.backoff(attempt));
            attempt += 1;
        }
    }

    /// One request (with the token) and its answer, read whole; a 2xx answer's headers and body
    /// go to `read`.
    fn try_once<T>(&self, mut builder: RequestBuilder, read: impl Fn(&HeaderMap, &[u8]) -> Result<T, Failure>) -> Result<T, Failure> {
        if let Some(token) = &self.settings.token {
            builder = builder.bearer_auth(token);
        }
        let response = builder.send().map_err(|e| Failure::Retryable(transport(&e)))?;
        let status = response.status();
        let headers = response.headers().clone();
        // A body cut short (the server died while answering) is a connection error: retried.
        let body = response.bytes().map_err(|e| Failure::Retryable(format!("cannot read the response ({status}): {}", transport(&e))))?;
        if !status.is_success() {
            let message = format!("HTTP {status}; the response starts {:?}", quote(&String::from_utf8_lossy(&body)));
            return Err(if retryable(status) { Failure::Retryable(message) } else { Failure::Final(message) });
        }
        read(&headers, &body)
    }

    /// Exponential backoff with up to 50% jitter.
    fn backoff(&self, attempt: u32) -> Duration {
        let base = self.settings.backoff.saturating_mul(1u32 << attempt.min(16));
        let jitter = rand::thread_rng().gen_range(0.0..0.5);
        base + base.mul_f64(jitter)
    }
}

/// A JSON answer (an empty one: null).
fn json(body: &[u8]) -> Result<Value, Failure> {
    let text = String::from_utf8_lossy(body);
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    super::parse_json(&text).map_err(|e| Failure::Final(format!("the response is not JSON ({e}); it starts {:?}", quote(&text))))
}

/// Why one try failed.
pub enum Failure {
    /// Worth another try: a connection error, 429 or 5xx.
    Retryable(String),
    /// The server's final word.
    Final(String),
}

/// Connection errors, 429 and 5xx are retried; other statuses are the server's final word.
fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
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
