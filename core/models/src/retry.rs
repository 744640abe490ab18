//! The one retry policy of every client that talks to a server (KServe V2 over HTTP and gRPC,
//! MLflow, the LLM endpoint): how often and how long to wait ([`RetryPolicy`], with its defaults
//! in one place), what each protocol says is worth another try ([`http_status_is_transient`],
//! [`grpc_code_is_transient`]; a connection error always is), and the loop that tries
//! ([`RetryPolicy::run`]).

use std::time::Duration;

use rand::Rng;
use reqwest::StatusCode;

/// How a client tries again after a failure worth another try: exponential backoff (doubled each
/// time, capped), optional jitter, and a server's `Retry-After` honoured or not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Tries after the first one.
    pub retries: u32,
    /// Wait before the first retry; doubled for each retry after it.
    pub first_backoff: Duration,
    /// Longest wait between two tries (the doubled backoff's, and a `Retry-After`'s).
    pub max_backoff: Duration,
    /// At most this share of the wait is added at random (0.5: up to 50% more), so that clients
    /// which failed together do not all try again together; 0: none.
    pub jitter: f64,
    /// Whether a server's `Retry-After` (in seconds) replaces the backoff when it gives one.
    pub honour_retry_after: bool,
}

/// Longest wait between two tries, and the longest `Retry-After` honoured: five minutes.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

impl RetryPolicy {
    /// A model server's (KServe V2 over HTTP or gRPC, MLflow; the `load_model` keys' defaults):
    /// 3 retries, from 200 ms doubled, with up to 50% jitter; `Retry-After` is not read.
    pub const MODEL_SERVER: RetryPolicy = RetryPolicy {
        retries: 3,
        first_backoff: Duration::from_millis(200),
        max_backoff: MAX_BACKOFF,
        jitter: 0.5,
        honour_retry_after: false,
    };

    /// An LLM endpoint's (the `llm` block's defaults): 5 retries, from 0.5 s doubled, no jitter;
    /// a `Retry-After` of up to five minutes is honoured.
    pub const LLM: RetryPolicy = RetryPolicy {
        retries: 5,
        first_backoff: Duration::from_millis(500),
        max_backoff: MAX_BACKOFF,
        jitter: 0.0,
        honour_retry_after: true,
    };

    /// This policy with `retries` tries after the first.
    pub fn with_retries(self, retries: u32) -> RetryPolicy {
        RetryPolicy { retries, ..self }
    }

    /// The wait after failed try number `attempt` (0: the first try): the server's `retry_after`
    /// when the policy honours it, else the first backoff doubled `attempt` times with its jitter;
    /// never more than `max_backoff`.
    pub fn wait(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after.filter(|_| self.honour_retry_after) {
            return after.min(self.max_backoff);
        }
        let base = self.first_backoff.saturating_mul(1u32 << attempt.min(16)).min(self.max_backoff);
        let jitter = if self.jitter > 0.0 { rand::thread_rng().gen_range(0.0..self.jitter) } else { 0.0 };
        (base + base.mul_f64(jitter)).min(self.max_backoff)
    }

    /// `once` tried until it succeeds, fails for good, or the retries are spent; before each wait
    /// `waiting` is told how long it will be (the LLM client counts retries and time slept).
    pub fn run<T, E>(&self, mut once: impl FnMut() -> Result<T, Failure<E>>, mut waiting: impl FnMut(Duration)) -> Result<T, GaveUp<E>> {
        let mut attempt = 0u32;
        loop {
            let (message, retry_after) = match once() {
                Ok(value) => return Ok(value),
                Err(Failure::Final(e)) => return Err(GaveUp::Final(e)),
                Err(Failure::Retryable { message, retry_after }) => (message, retry_after),
            };
            if attempt >= self.retries {
                let tries = attempt + 1;
                return Err(GaveUp::Spent(format!("{message} (after {tries} tr{})", if tries == 1 { "y" } else { "ies" })));
            }
            let wait = self.wait(attempt, retry_after);
            waiting(wait);
            std::thread::sleep(wait);
            attempt += 1;
        }
    }
}

/// Why one try failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure<E = String> {
    /// Worth another try: a connection error, or what the protocol's rule calls transient.
    Retryable {
        /// What went wrong.
        message: String,
        /// The wait the server asked for (`Retry-After`), if it did.
        retry_after: Option<Duration>,
    },
    /// Not worth another try: the server's final word, or the caller's reason to stop.
    Final(E),
}

impl<E> Failure<E> {
    /// A failure worth another try, the server having asked for no wait.
    pub fn retryable(message: impl Into<String>) -> Self {
        Failure::Retryable { message: message.into(), retry_after: None }
    }

    /// The same failure with its final reason made by `f`.
    pub fn map_final<F>(self, f: impl FnOnce(E) -> F) -> Failure<F> {
        match self {
            Failure::Retryable { message, retry_after } => Failure::Retryable { message, retry_after },
            Failure::Final(e) => Failure::Final(f(e)),
        }
    }
}

/// Why [`RetryPolicy::run`] gave no value.
#[derive(Debug, Clone, PartialEq)]
pub enum GaveUp<E = String> {
    /// A try failed for good.
    Final(E),
    /// Every try allowed failed in a way worth another: the last one's message with the tries
    /// counted ("HTTP 503 …; the response starts … (after 4 tries)").
    Spent(String),
}

/// HTTP's rule (KServe V2 over HTTP, MLflow, the LLM endpoint): 429 and 5xx are worth another try;
/// any other status is the server's final word.
pub fn http_status_is_transient(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

/// gRPC's rule (KServe V2 over gRPC): UNAVAILABLE (14) and RESOURCE_EXHAUSTED (8) are worth
/// another try, as connection errors and 429 are; any other status is the server's final word.
pub fn grpc_code_is_transient(code: u32) -> bool {
    matches!(code, 14 | 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_with_its_jitter_and_is_capped() {
        let policy = RetryPolicy::MODEL_SERVER;
        for attempt in 0..3 {
            let base = Duration::from_millis(200 << attempt);
            let wait = policy.wait(attempt, None);
            assert!(wait >= base && wait < base.mul_f64(1.5), "attempt {attempt}: {wait:?}");
        }
        assert_eq!(policy.wait(30, None), MAX_BACKOFF);
        let llm = RetryPolicy::LLM;
        assert_eq!(llm.wait(2, None), Duration::from_secs(2));
        assert_eq!(llm.wait(2, Some(Duration::from_secs(1))), Duration::from_secs(1));
        assert_eq!(llm.wait(0, Some(Duration::from_secs(3600))), MAX_BACKOFF);
        let deaf = RetryPolicy { honour_retry_after: false, ..llm };
        assert_eq!(deaf.wait(0, Some(Duration::from_secs(7))), Duration::from_millis(500));
    }

    #[test]
    fn tries_stop_at_success_a_final_failure_or_the_retries_spent() {
        let quick = RetryPolicy { first_backoff: Duration::from_millis(1), ..RetryPolicy::LLM.with_retries(2) };
        let mut tries = 0;
        let mut waits = Vec::new();
        let ok: Result<u32, GaveUp> = quick.run(
            || {
                tries += 1;
                if tries < 3 {
                    Err(Failure::retryable("HTTP 503"))
                } else {
                    Ok(tries)
                }
            },
            |wait| waits.push(wait),
        );
        assert_eq!(ok, Ok(3));
        assert_eq!(waits, [Duration::from_millis(1), Duration::from_millis(2)]);
        let spent: Result<(), GaveUp> = quick.run(|| Err(Failure::retryable("HTTP 500")), |_| {});
        assert_eq!(spent, Err(GaveUp::Spent("HTTP 500 (after 3 tries)".into())));
        let once: Result<(), GaveUp> = quick.with_retries(0).run(|| Err(Failure::retryable("cannot connect")), |_| {});
        assert_eq!(once, Err(GaveUp::Spent("cannot connect (after 1 try)".into())));
        let mut tries = 0;
        let final_: Result<(), GaveUp<&str>> = quick.run(
            || {
                tries += 1;
                Err(Failure::Final("HTTP 400"))
            },
            |_| {},
        );
        assert_eq!((final_, tries), (Err(GaveUp::Final("HTTP 400")), 1));
    }

    #[test]
    fn each_protocol_names_what_is_transient() {
        assert!(http_status_is_transient(StatusCode::TOO_MANY_REQUESTS));
        assert!(http_status_is_transient(StatusCode::SERVICE_UNAVAILABLE));
        assert!(!http_status_is_transient(StatusCode::BAD_REQUEST));
        assert!(!http_status_is_transient(StatusCode::NOT_FOUND));
        assert!(grpc_code_is_transient(14) && grpc_code_is_transient(8));
        assert!(!grpc_code_is_transient(5) && !grpc_code_is_transient(3));
    }
}
