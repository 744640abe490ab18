//! A model server's security and faults, end to end against a real MLServer: the bearer
//! token of `token_env` reaches the server and nothing else; `https://` with a certificate the
//! system trusts (`SSL_CERT_FILE`) works and an untrusted one is refused; `max_queries` stops the run
//! before it sends more; a server killed during an audit ends the run with an error naming it.
//! `gate_proxy.py` (standard library) stands in front of MLServer to check the header and to speak
//! TLS.

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::remote_models::{fixtures, free_port, http_get, in_process, pipeline, probabilities, start_mlserver, start_toy, Server};

const TOKEN_VAR: &str = "FAIRPIPE_TEST_MODEL_TOKEN";

/// `fairpipe args` with `set` added to its environment and `unset` removed.
fn fairpipe_env(args: &[&str], set: &[(&str, &str)], unset: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fairpipe"));
    command.args(args).current_dir(root());
    for (k, v) in set {
        command.env(k, v);
    }
    for k in unset {
        command.env_remove(k);
    }
    command.output().expect("run fairpipe")
}

fn run_args<'a>(file: &'a Path, out: &'a Path) -> Vec<&'a str> {
    vec!["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]
}

/// `gate_proxy.py` on a free port in front of `upstream`, with `args` and `env`.
fn start_proxy(upstream: u16, args: &[&str], env: &[(&str, &str)]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = dir.path().join("proxy.log");
    let out = std::fs::File::create(&log).unwrap();
    let mut command = Command::new("python3");
    command.arg(fixtures().join("gate_proxy.py")).arg(port.to_string()).arg(upstream.to_string()).args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.stdout(out.try_clone().unwrap()).stderr(out).stdin(Stdio::null()).process_group(0).spawn().expect("python3");
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the proxy exited ({status}): {}", std::fs::read_to_string(&log).unwrap_or_default());
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the proxy did not listen");
        std::thread::sleep(Duration::from_millis(100));
    }
    Server { child, port, metrics_port: 0, grpc_port: 0, log, _dir: dir }
}

/// Every file under `dir`, read as bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    found
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn the_token_reaches_the_server_as_a_bearer_header_and_appears_nowhere_else() {
    let mlserver = start_mlserver();
    let secret = "fp-test-token-5b0e1c7a";
    let proxy = start_proxy(mlserver.port, &["--token-env", "GATE_TOKEN"], &[("GATE_TOKEN", secret)]);
    let url = format!("http://127.0.0.1:{}/v2/models/census-lr", proxy.port);
    let dir = tempfile::tempdir().unwrap();
    let text = pipeline(&format!("url = \"{url}\"\noutputs = [\"predict_proba\"]\ntoken_env = \"{TOKEN_VAR}\"\nretries = 0"), "");
    let file = write(dir.path(), "p.toml", &text);

    // The right token: the audit runs, every request carried it, and it is written nowhere.
    let out = dir.path().join("out");
    let ran = fairpipe_env(&run_args(&file, &out), &[(TOKEN_VAR, secret)], &[]);
    let (stdout, stderr) = (String::from_utf8_lossy(&ran.stdout), String::from_utf8_lossy(&ran.stderr));
    assert!(ran.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.contains(secret) && !stderr.contains(secret), "the token is printed:\n{stdout}\n{stderr}");
    for (path, bytes) in files(&out) {
        assert!(!contains(&bytes, secret), "the token is written in {}", path.display());
    }
    let (_, local_p) = {
        let local = dir.path().join("local");
        let file = write(dir.path(), "local.toml", &pipeline(&in_process(), ""));
        let summary = run_pipeline(&file, &local, &[]);
        (summary, probabilities(&local))
    };
    compare::assert_close("p through the proxy against p_in_process", &probabilities(&out), &local_p, 1e-9);
    let log = std::fs::read_to_string(&proxy.log).unwrap();
    let infer: Vec<&str> = log.lines().filter(|l| l.starts_with("POST /v2/models/census-lr/infer")).collect();
    assert!(!infer.is_empty(), "{log}");
    assert!(log.lines().filter(|l| l.starts_with("GET") || l.starts_with("POST")).all(|l| l.ends_with("200 auth=ok")), "{log}");
    // The served model is probed once per run: validation asks whether the model is ready and
    // for its metadata, and opening the model asks neither again (it was validated three times,
    // then asked twice whether it was ready).
    let asked = |request: &str| log.lines().filter(|l| l.starts_with(request)).count();
    assert_eq!(asked("GET /v2/models/census-lr/ready "), 1, "{log}");
    assert_eq!(asked("GET /v2/models/census-lr "), 1, "{log}");

    // A wrong token: refused by the server (401, not retried); the message names the URL and the
    // status, never the token sent.
    let wrong = "fp-wrong-token-93d2";
    let out = dir.path().join("wrong");
    let failed = fairpipe_env(&run_args(&file, &out), &[(TOKEN_VAR, wrong)], &[]);
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&url) && stderr.contains("401"), "{stderr}");
    assert!(!stderr.contains(wrong) && !String::from_utf8_lossy(&failed.stdout).contains(wrong), "{stderr}");
    assert!(!out.exists(), "nothing written");

    // No such variable: found at validate, at the key's place, naming the variable.
    let failed = fairpipe_env(&["validate", file.to_str().unwrap()], &[], &[TOKEN_VAR]);
    let stderr = String::from_utf8_lossy(&failed.stderr);
    let line = text.lines().position(|l| l.starts_with("token_env")).unwrap() + 1;
    assert!(!failed.status.success());
    assert!(stderr.contains(&format!("p.toml:{line}:")) && stderr.contains(&format!("{TOKEN_VAR} is not set")), "{stderr}");
}

/// A certificate authority and a certificate for 127.0.0.1 signed by it, made with openssl.
fn make_certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl (apt-get install openssl)");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=fairpipe test CA",
    ]);
    openssl(&["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"]);
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
    (dir.join("ca.pem"), dir.join("server.pem"), dir.join("server.key"))
}

#[test]
fn https_works_with_a_trusted_certificate_and_an_untrusted_one_is_refused() {
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = make_certificates(certs.path());
    let mlserver = start_mlserver();
    let proxy = start_proxy(mlserver.port, &["--tls", cert.to_str().unwrap(), key.to_str().unwrap()], &[]);
    let url = format!("https://127.0.0.1:{}/v2/models/census-lr", proxy.port);
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "p.toml", &pipeline(&format!("url = \"{url}\"\noutputs = [\"predict_proba\"]\nretries = 0"), ""));

    // Trusted through SSL_CERT_FILE (read by rustls-native-certs in place of the system's store).
    let out = dir.path().join("out");
    let ran = fairpipe_env(&run_args(&file, &out), &[("SSL_CERT_FILE", ca.to_str().unwrap())], &["SSL_CERT_DIR"]);
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    let local = dir.path().join("local");
    run_pipeline(&write(dir.path(), "local.toml", &pipeline(&in_process(), "")), &local, &[]);
    compare::assert_close("p through the proxy against p_in_process", &probabilities(&out), &probabilities(&local), 1e-9);
    let log = std::fs::read_to_string(&proxy.log).unwrap();
    assert!(log.contains("POST /v2/models/census-lr/infer 200"), "the rows went over TLS:\n{log}");

    // The system's own store does not know the test CA: refused at validate, saying why.
    let refused = fairpipe_env(&["validate", file.to_str().unwrap()], &[], &["SSL_CERT_FILE", "SSL_CERT_DIR"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(stderr.contains(&url) && stderr.contains("certificate"), "{stderr}");
    assert!(stderr.contains("UnknownIssuer"), "the reason is the issuer: {stderr}");
}

#[test]
fn max_queries_stops_the_run_before_it_sends_more_and_keeps_the_previous_output() {
    let server = start_toy("vector");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let base = format!("url = \"{}\"\nbatch_size = 256", server.url());
    run_pipeline(&write(dir.path(), "ok.toml", &pipeline(&base, "")), &out, &[]);
    let before = files(&out);
    let scored = || -> Vec<u64> {
        let log = std::fs::read_to_string(&server.log).unwrap();
        log.lines().filter_map(|l| l.strip_prefix("scored ")?.strip_suffix(" rows")?.parse().ok()).collect()
    };
    let earlier = scored().len();
    // load_model scores every data row (48,842) for its accuracy: far more than 1,000.
    let capped = write(dir.path(), "capped.toml", &pipeline(&format!("{base}\nmax_queries = 1000"), ""));
    let failed = fairpipe_env(&run_args(&capped, &out), &[], &[]);
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("max_queries = 1000") && stderr.contains(&server.url()), "{stderr}");
    assert_eq!(files(&out), before, "the previous output is untouched");
    // The cap is on rows sent: the server scored at most 1,000 rows in this run.
    let sent: u64 = scored()[earlier..].iter().sum();
    assert!(sent > 0 && sent <= 1000, "the capped run sent {sent} rows");
}

/// MLServer's count of answered infer requests (its Prometheus metrics).
fn answered(server: &Server) -> u64 {
    let Some(text) = http_get(server.metrics_port, "/metrics") else { return 0 };
    text.lines()
        .find(|l| l.starts_with("model_infer_request_success_total{"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

#[test]
fn a_server_killed_during_an_audit_ends_the_run_naming_it_and_writes_nothing() {
    let mut server = start_mlserver();
    let dir = tempfile::tempdir().unwrap();
    let keys = format!("url = \"{}\"\noutputs = [\"predict_proba\"]\nretries = 1\nconcurrency = 1", server.url());
    // A search long enough to be cut: many seeds, many iterations, small requests.
    let search = r#"
[stages.seeds]
kind = "cluster"
data = "data"
k = 2
seeds = 200

[stages.search]
kind = "generate"
model = "model"
seeds = "seeds"
plugin = "aequitas"
params = { global_iterations = 2000, local_iterations = 2000 }
"#;
    let file = write(dir.path(), "p.toml", &pipeline(&keys, search));
    let out = dir.path().join("out");
    let mut run = Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(run_args(&file, &out))
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run fairpipe");
    // load_model's scoring of the data takes about 48 requests of 1,024 rows; past 80 answered
    // requests the search is under way.
    let started = Instant::now();
    while answered(&server) < 80 {
        if let Ok(Some(status)) = run.try_wait() {
            panic!("the audit ended ({status}) before the server could be killed: make the search longer");
        }
        if started.elapsed() > Duration::from_secs(300) {
            let _ = run.kill();
            panic!("the audit sent fewer than 80 requests in 300 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    server.kill();
    let ended = run.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&ended.stderr);
    assert_eq!(ended.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("{}/infer", server.url())), "the error names the URL: {stderr}");
    assert!(stderr.contains("cannot connect") && stderr.contains("after 2 tries"), "{stderr}");
    assert!(!out.exists(), "nothing partial written");
}
