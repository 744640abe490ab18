//! The one retry policy against a real server: a scripted HTTP/1.1 server on a local port
//! answers 503 or 429 (with or without `Retry-After`) before 200, and both clients that speak
//! HTTP — a model server's ([`Http`]: KServe V2, MLflow) and the LLM endpoint's ([`Client`]) —
//! are seen to try again as their policy says, count what they should, and name the tries when
//! they give up.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fairpipe_models::llm::client::{AskError, Budgets, Client};
use fairpipe_models::remote::http::{Http, HttpSettings};
use fairpipe_models::retry::RetryPolicy;
use fairpipe_models::ModelError;

/// One scripted answer: status line, extra headers, body.
type Answer = (&'static str, &'static str, &'static str);

/// A server answering each request with the next of `script` (the last one once the script runs
/// out), one request per connection; its URL and the requests it saw.
fn serve(script: Vec<Answer>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&seen);
    let script = Mutex::new(script);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let n = counted.fetch_add(1, Ordering::SeqCst);
            let script = script.lock().unwrap();
            let (status, headers, body) = script[n.min(script.len() - 1)];
            let answer = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{headers}\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (url, seen)
}

const UNAVAILABLE: Answer = ("503 Service Unavailable", "", r#"{"error": "warming up"}"#);

/// A model server's client with `retries` and a short backoff.
fn http(url: &str, retries: u32) -> Http {
    let retry = RetryPolicy { first_backoff: Duration::from_millis(10), ..RetryPolicy::MODEL_SERVER.with_retries(retries) };
    Http::new(HttpSettings { retry, ..HttpSettings::default() }, url).unwrap()
}

#[test]
fn a_model_server_answering_503_is_asked_again_until_it_answers() {
    let (url, seen) = serve(vec![UNAVAILABLE, UNAVAILABLE, ("200 OK", "", r#"{"ready": true}"#)]);
    let answer = http(&url, 3).get_json(&format!("{url}/v2/models/m")).unwrap();
    assert_eq!(answer["ready"], true);
    assert_eq!(seen.load(Ordering::SeqCst), 3);
}

#[test]
fn a_model_server_that_keeps_failing_is_named_with_its_status_body_and_tries() {
    let (url, seen) = serve(vec![UNAVAILABLE]);
    let target = format!("{url}/v2/models/m/infer");
    let e = http(&url, 2).post_json(&target, &serde_json::json!({})).unwrap_err();
    assert!(matches!(&e, ModelError::Remote { url, .. } if *url == target), "{e:?}");
    let said = e.to_string();
    assert!(
        said.contains("HTTP 503 Service Unavailable; the response starts \"{\\\"error\\\": \\\"warming up\\\"}\" (after 3 tries)"),
        "{said}"
    );
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    // A 4xx is the server's final word: one try.
    let (url, seen) = serve(vec![("404 Not Found", "", "no such model")]);
    let e = http(&url, 3).get_ok(&format!("{url}/v2/models/m/ready")).unwrap_err().to_string();
    assert!(e.ends_with("HTTP 404 Not Found; the response starts \"no such model\""), "{e}");
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

#[test]
fn a_model_servers_retry_after_is_not_waited_for() {
    let (url, seen) = serve(vec![("503 Service Unavailable", "Retry-After: 30\r\n", "busy"), ("200 OK", "", "{}")]);
    let started = Instant::now();
    http(&url, 1).get_ok(&url).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "waited {:?}", started.elapsed());
    assert_eq!(seen.load(Ordering::SeqCst), 2);
}

const REPLY: &str = r#"{"choices": [{"message": {"content": "yes"}}], "usage": {"prompt_tokens": 7, "completion_tokens": 1}}"#;

/// An LLM client of `url` with `retries` from a 10 ms backoff.
fn llm(url: &str, retries: u32) -> Client {
    let retry = RetryPolicy { first_backoff: Duration::from_millis(10), ..RetryPolicy::LLM.with_retries(retries) };
    Client::new(&format!("{url}/v1"), "/chat/completions", None, Duration::from_secs(10), retry, 1, Budgets::default()).unwrap()
}

#[test]
fn an_llm_endpoints_retry_after_is_honoured_and_its_retries_counted() {
    let (url, seen) = serve(vec![
        ("429 Too Many Requests", "Retry-After: 0.3\r\n", "slow down"),
        UNAVAILABLE,
        ("200 OK", "", "not JSON"),
        ("200 OK", "", REPLY),
    ]);
    let client = llm(&url, 5);
    let reply = client.ask(&Bytes::from_static(b"{}"), "row 1's prompt", false).unwrap();
    assert_eq!(reply.content, "yes");
    assert_eq!(seen.load(Ordering::SeqCst), 4);
    let counters = &client.counters;
    assert_eq!(counters.requests.load(Ordering::SeqCst), 4);
    assert_eq!(counters.retries.load(Ordering::SeqCst), 3);
    // 0.3 s asked for, then 20 ms and 40 ms of backoff (the second and third retries').
    assert_eq!(counters.backoff_us.load(Ordering::SeqCst), 360_000);
    assert_eq!(counters.prompt_tokens.load(Ordering::SeqCst), 7);
}

#[test]
fn an_llm_endpoint_that_keeps_failing_names_the_request_and_the_tries() {
    let (url, seen) = serve(vec![("500 Internal Server Error", "", "oops")]);
    let e = llm(&url, 2).ask(&Bytes::from_static(b"{}"), "row 1's prompt", false).unwrap_err();
    let expected =
        format!("{url}/v1/chat/completions: row 1's prompt: HTTP 500 Internal Server Error; the response starts \"oops\" (after 3 tries)");
    assert_eq!(e, AskError::Failed(expected));
    assert_eq!(seen.load(Ordering::SeqCst), 3);
}
