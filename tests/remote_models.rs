//! Models behind a server: a real MLServer (scikit-learn runtime) serving the logistic
//! regression of `tests/fixtures/remote/census-lr/` (made by its `make_census_lr.py` on the bundled
//! census data) is audited over KServe V2 HTTP, and the audit equals the audit of the same
//! parameters run in-process (`census-lr.fairpipe.json`): same probabilities, same accuracy, same
//! estimate, same cases found and verified. Faults are tested against `toy_v2_server.py`, a small
//! real HTTP server (503s then 200, 503 for ever, named inputs).
//!
//! MLServer is found through `FAIRPIPE_MLSERVER` (the `mlserver` executable) or on PATH; without
//! it the MLServer test fails with the pip command, never passes silently.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

pub(crate) const INSTALL: &str = "python3 -m venv ~/.venvs/mlserver && ~/.venvs/mlserver/bin/pip install mlserver==1.7.1 mlserver-sklearn==1.7.1 scikit-learn==1.9.1, then FAIRPIPE_MLSERVER=~/.venvs/mlserver/bin/mlserver";

pub(crate) fn fixtures() -> PathBuf {
    root().join("tests/fixtures/remote")
}

/// A port nothing listens on right now.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `N` distinct free ports: each held until all are chosen (one at a time, the system may hand
/// out a port just released again: MLServer once got its HTTP port as its gRPC port too, and
/// exited with "address already in use").
pub(crate) fn free_ports<const N: usize>() -> [u16; N] {
    let held: Vec<TcpListener> = (0..N).map(|_| TcpListener::bind("127.0.0.1:0").unwrap()).collect();
    std::array::from_fn(|i| held[i].local_addr().unwrap().port())
}

/// A server process, killed when dropped.
/// Started in its own process group (MLflow's server runs uvicorn as a child), all of which is
/// killed when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) port: u16,
    /// MLServer's Prometheus port (0 for the other servers).
    pub(crate) metrics_port: u16,
    /// MLServer's gRPC port (0 for the other servers).
    pub(crate) grpc_port: u16,
    pub(crate) log: PathBuf,
    pub(crate) _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Server {
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v2/models/census-lr", self.port)
    }

    /// Kill the server and everything it started (its process group), now.
    pub(crate) fn kill(&mut self) {
        let _ = Command::new("kill").arg("-KILL").arg("--").arg(format!("-{}", self.child.id())).stderr(Stdio::null()).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Wait until `GET …/ready` answers 200 (or the process dies: its log in the panic).
    pub(crate) fn wait_ready(self, limit: Duration) -> Self {
        self.wait_for("/v2/models/census-lr/ready", limit)
    }

    /// Wait until `GET path` answers 200 (or the process dies: its log in the panic).
    pub(crate) fn wait_for(mut self, path: &str, limit: Duration) -> Self {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the server exited ({status}):\n{}", std::fs::read_to_string(&self.log).unwrap_or_default());
            }
            if http_status(self.port, path) == Some(200) {
                return self;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("the server was not ready after {limit:?}:\n{}", std::fs::read_to_string(&self.log).unwrap_or_default());
    }
}

/// The status of `GET path` on 127.0.0.1:`port`, by hand (one request, no client library).
pub(crate) fn http_status(port: u16, path: &str) -> Option<u16> {
    http_get(port, path)?.split_whitespace().nth(1)?.parse().ok()
}

/// The whole answer (status line, headers, body) to `GET path` on 127.0.0.1:`port`.
pub(crate) fn http_get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
}

pub(crate) fn mlserver_executable() -> PathBuf {
    if let Some(path) = std::env::var_os("FAIRPIPE_MLSERVER") {
        return PathBuf::from(path);
    }
    let found = std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|p| p.join("mlserver")).find(|p| p.is_file()));
    found.unwrap_or_else(|| panic!("MLServer is not installed (neither FAIRPIPE_MLSERVER nor `mlserver` on PATH): {INSTALL}"))
}

/// MLServer 1.7.1 serving census-lr on free ports (`parallel_workers = 0`: its parallel workers
/// fail to load a scikit-learn model here).
pub(crate) fn start_mlserver() -> Server {
    let executable = mlserver_executable();
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("census-lr");
    std::fs::create_dir(&model).unwrap();
    for file in ["model.joblib", "model-settings.json"] {
        std::fs::copy(fixtures().join("census-lr").join(file), model.join(file)).unwrap();
    }
    let [port, metrics_port, grpc_port] = free_ports::<3>();
    let settings = serde_json::json!({
        "host": "127.0.0.1", "http_port": port, "grpc_port": grpc_port, "metrics_port": metrics_port,
        "parallel_workers": 0, "debug": false,
    });
    std::fs::write(dir.path().join("settings.json"), settings.to_string()).unwrap();
    let log = dir.path().join("mlserver.log");
    let out = std::fs::File::create(&log).unwrap();
    let child = Command::new(&executable)
        .arg("start")
        .arg(dir.path())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}; {INSTALL}", executable.display()));
    Server { child, port, metrics_port, grpc_port, log, _dir: dir }.wait_ready(Duration::from_secs(120))
}

/// `toy_v2_server.py` in `mode` on a free port.
pub(crate) fn start_toy(mode: &str) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = dir.path().join("toy.log");
    let out = std::fs::File::create(&log).unwrap();
    let child = Command::new("python3")
        .arg(fixtures().join("toy_v2_server.py"))
        .arg(port.to_string())
        .arg(mode)
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("python3");
    Server { child, port, metrics_port: 0, grpc_port: 0, log, _dir: dir }.wait_ready(Duration::from_secs(20))
}

/// The census data, the model stage's `model_keys`, a predict of the test split and `stages`.
pub(crate) fn pipeline(model_keys: &str, stages: &str) -> String {
    format!(
        r#"[pipeline]
name = "remote"
seed = 11

{data_stage}
[stages.model]
kind = "load_model"
data = "data"
{model_keys}

[stages.scores]
kind = "predict"
model = "model"
split = "test"
{stages}
"#,
        data_stage = census_data_stage(),
    )
}

pub(crate) const AUDIT: &str = r#"
[stages.estimate]
kind = "estimate"
model = "model"
trials = 2
samples = 500

[stages.seeds]
kind = "cluster"
data = "data"
k = 2
seeds = 20

[stages.search]
kind = "generate"
model = "model"
seeds = "seeds"
plugin = "aequitas"
params = { global_iterations = 20, local_iterations = 50 }

[stages.verified]
kind = "verify"
cases = "search"
"#;

pub(crate) fn in_process() -> String {
    format!("path = \"{}\"", fixtures().join("census-lr.fairpipe.json").display())
}

/// `predict`'s probability column, in row order.
pub(crate) fn probabilities(out: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(out.join("scores.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "probability").expect("a probability column");
    lines.map(|l| l.split(',').nth(at).unwrap().parse::<f64>().unwrap()).collect()
}

/// Run `pipeline` into a fresh folder: the summary and predict's probabilities.
pub(crate) fn run(text: &str) -> (serde_json::Value, Vec<f64>) {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "p.toml", text);
    let out = dir.path().join("out");
    let summary = run_pipeline(&file, &out, &[]);
    let p = probabilities(&out);
    (summary, p)
}

/// The figures that must not depend on where the model runs.
pub(crate) fn audit_figures(summary: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    let stages = &summary["stages"];
    let mut figures = vec![
        ("model.accuracy_train".to_string(), stages["model"]["accuracy_train"].clone()),
        ("model.accuracy_test".to_string(), stages["model"]["accuracy_test"].clone()),
        ("estimate.rate".to_string(), stages["estimate"]["rate"].clone()),
        ("search.generated".to_string(), stages["search"]["generated"].clone()),
        ("search.emitted".to_string(), stages["search"]["emitted"].clone()),
        ("verified.confirmed".to_string(), stages["verified"]["confirmed"].clone()),
        ("verified.discriminatory".to_string(), stages["verified"]["discriminatory"].clone()),
    ];
    for (name, value) in &figures {
        assert!(!value.is_null(), "{name} missing from the summary: {stages}");
    }
    figures.sort_by(|a, b| a.0.cmp(&b.0));
    figures
}

#[test]
fn a_model_served_by_mlserver_is_audited_as_the_same_model_in_process() {
    let server = start_mlserver();
    let remote_keys = format!("url = \"{}\"\noutputs = [\"predict_proba\"]\nbatch_size = 512\nconcurrency = 2", server.url());
    let (remote, remote_p) = run(&pipeline(&remote_keys, AUDIT));
    let (local, local_p) = run(&pipeline(&in_process(), AUDIT));
    // scikit-learn's predict_proba and fairpipe's logistic regression on the same parameters.
    assert_eq!(remote_p.len(), 9769, "the bundled census test split");
    compare::assert_close("p_mlserver against p_in_process", &remote_p, &local_p, 1e-9);
    assert_eq!(audit_figures(&remote), audit_figures(&local), "same seed, same model: same audit");
    let model = &remote["stages"]["model"];
    assert_eq!(model["output"], "predict_proba");
    assert_eq!(model["input_contract"], "one float64 input input-0[N,12] (encoded features)", "{model}");
    assert!(model["remote_inputs"].as_str().unwrap().contains("lists no inputs"), "{model}");
    // Traffic over the whole run: load_model scores every row for its accuracy, so predict's test
    // rows are all answered from the cache; nothing is sent twice.
    let usage = &model["remote"];
    let asked = usage["rows_asked"].as_u64().unwrap();
    let sent = usage["rows_sent"].as_u64().unwrap();
    let hits = usage["cache_hits"].as_u64().unwrap();
    assert!(hits >= 9769, "predict's rows come from the cache: {usage}");
    assert!(sent + hits >= asked && sent < asked, "{usage}");
    assert!(usage["requests"].as_u64().unwrap() >= sent / 512, "{usage}");
    let p50 = usage["latency_ms_p50"].as_f64().unwrap();
    let p99 = usage["latency_ms_p99"].as_f64().unwrap();
    assert!(p50 > 0.0 && p50 <= p99, "{usage}");
    assert_eq!(local["stages"]["model"].get("remote"), None, "an in-process model has no traffic figures");
}

#[test]
fn a_model_served_over_grpc_with_raw_tensors_is_audited_as_the_same_model_in_process() {
    let server = start_mlserver();
    let grpc = format!("http://127.0.0.1:{}", server.grpc_port);
    let keys = format!(
        "url = \"{grpc}\"\nprotocol = \"grpc-v2\"\nmodel = \"census-lr\"\noutputs = [\"predict_proba\"]\nbatch_size = 512\nconcurrency = 2"
    );
    let (remote, remote_p) = run(&pipeline(&keys, AUDIT));
    let (local, local_p) = run(&pipeline(&in_process(), AUDIT));
    assert_eq!(remote_p.len(), 9769, "the bundled census test split");
    // Raw FP64 bytes both ways: the very numbers, not a decimal rendering of them.
    compare::assert_close("p_mlserver_grpc against p_in_process", &remote_p, &local_p, 1e-9);
    assert_eq!(audit_figures(&remote), audit_figures(&local), "same seed, same model: same audit");
    let model = &remote["stages"]["model"];
    assert_eq!(model["output"], "predict_proba");
    assert_eq!(model["executor"], format!("kserve v2 grpc {grpc} model census-lr"), "{model}");
    let usage = &model["remote"];
    assert!(usage["cache_hits"].as_u64().unwrap() >= 9769, "{usage}");
    assert!(usage["requests"].as_u64().unwrap() >= usage["rows_sent"].as_u64().unwrap() / 512, "{usage}");
    // A model the server does not have: the server's own gRPC status, named, at validate.
    let dir = tempfile::tempdir().unwrap();
    let wrong = pipeline(&format!("url = \"{grpc}\"\nprotocol = \"grpc-v2\"\nmodel = \"no-such-model\""), "");
    let file = write(dir.path(), "p.toml", &wrong);
    let (ok, _, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    assert!(!ok);
    assert!(stderr.contains("ModelReady") && stderr.contains("gRPC status") && stderr.contains("no-such-model"), "{stderr}");
    // The HTTP port is not a gRPC port: said so, not a decoding error.
    let http = pipeline(&format!("url = \"http://127.0.0.1:{}\"\nprotocol = \"grpc-v2\"\nmodel = \"census-lr\"", server.port), "");
    let file = write(dir.path(), "http.toml", &http);
    let (ok, _, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    assert!(!ok && stderr.contains("http.toml:") && stderr.contains("ModelReady"), "{stderr}");
}

#[test]
fn named_inputs_from_the_metadata_get_the_columns_by_name() {
    let server = start_toy("named");
    let keys = format!("url = \"{}\"\noutputs = [\"predict_proba\"]", server.url());
    let (remote, remote_p) = run(&pipeline(&keys, ""));
    let (_, local_p) = run(&pipeline(&in_process(), ""));
    compare::assert_close("p_mlserver (raw columns) against p_in_process", &remote_p, &local_p, 1e-9);
    assert_eq!(remote["stages"]["model"]["input_contract"], "12 named inputs (raw columns)");
    assert_eq!(remote["stages"]["model"]["remote_inputs"], "listed by the server's metadata");
}

#[test]
fn server_503s_are_retried_with_backoff_and_the_answers_kept() {
    let log = toy_audit_matches_in_process("flaky", 2);
    assert!(log.matches("\" 503 ").count() >= 2 && log.contains("\" 200 "), "the server saw retries:\n{log}");
}

#[test]
fn an_answer_cut_short_is_asked_again_and_the_results_kept() {
    let log = toy_audit_matches_in_process("cut", 1);
    assert!(log.contains("cut an answer short"), "the server cut an answer:\n{log}");
}

/// An audit of the toy server in `mode` (with `retries`) gives the in-process audit's
/// probabilities; the server's log.
fn toy_audit_matches_in_process(mode: &str, retries: u32) -> String {
    let server = start_toy(mode);
    let keys = format!("url = \"{}\"\nretries = {retries}\nbatch_size = 4096", server.url());
    let (_, remote_p) = run(&pipeline(&keys, ""));
    let (_, local_p) = run(&pipeline(&in_process(), ""));
    compare::assert_close("p_mlserver against p_in_process", &remote_p, &local_p, 1e-9);
    std::fs::read_to_string(&server.log).unwrap()
}

#[test]
fn a_server_that_keeps_failing_ends_the_run_naming_url_status_and_body() {
    let server = start_toy("down");
    let dir = tempfile::tempdir().unwrap();
    let keys = format!("url = \"{}\"\nretries = 1", server.url());
    let file = write(dir.path(), "p.toml", &pipeline(&keys, ""));
    let out = dir.path().join("out");
    let stderr = run_failing(&file, &out);
    assert!(stderr.contains(&format!("{}/infer", server.url())), "{stderr}");
    assert!(stderr.contains("503") && stderr.contains("model overloaded"), "{stderr}");
    assert!(stderr.contains("after 2 tries"), "{stderr}");
    assert!(!out.join("summary.json").exists(), "nothing partial written");
}

#[test]
fn an_unreachable_server_is_found_by_validate() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/v2/models/census-lr", free_port());
    let file = write(dir.path(), "p.toml", &pipeline(&format!("url = \"{url}\""), ""));
    let (ok, _, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    assert!(!ok);
    assert!(stderr.contains(&url) && stderr.contains("cannot connect"), "{stderr}");
    assert!(stderr.contains("p.toml:"), "the problem is located in the pipeline: {stderr}");
}

#[test]
fn path_and_url_together_or_neither_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let both = write(dir.path(), "both.toml", &pipeline(&format!("{}\nurl = \"http://127.0.0.1:1/v2/models/m\"", in_process()), ""));
    let (ok, _, stderr) = fairpipe(&["validate", both.to_str().unwrap()]);
    assert!(!ok && stderr.contains("not both"), "{stderr}");
    let neither = write(dir.path(), "neither.toml", &pipeline("", ""));
    let (ok, _, stderr) = fairpipe(&["validate", neither.to_str().unwrap()]);
    assert!(!ok && stderr.contains("say where the model is"), "{stderr}");
}

/// The Python next to MLServer's executable (its venv has scikit-learn and joblib).
pub(crate) fn mlserver_python() -> PathBuf {
    let python = mlserver_executable().with_file_name("python");
    assert!(python.exists(), "no python beside {}: {INSTALL}", mlserver_executable().display());
    python
}

#[test]
fn a_model_run_as_a_program_is_audited_as_the_same_model_in_process() {
    // The README's example program, serving the same scikit-learn model from the joblib file.
    let program = fixtures().join("model_program.py");
    let keys = format!("command = [\"{}\", \"{}\"]\nbatch_size = 2048", mlserver_python().display(), program.display());
    let (remote, remote_p) = run(&pipeline(&keys, AUDIT));
    let (local, local_p) = run(&pipeline(&in_process(), AUDIT));
    compare::assert_close("p_program against p_in_process", &remote_p, &local_p, 1e-9);
    assert_eq!(audit_figures(&remote), audit_figures(&local));
    let model = &remote["stages"]["model"];
    assert!(model["executor"].as_str().unwrap().starts_with("command "), "{model}");
    assert!(model["remote"]["cache_hits"].as_u64().unwrap() >= 9769, "{model}");
}

#[test]
fn a_program_that_fails_shows_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let keys = r#"command = ["python3", "-c", "import sys; sys.stderr.write('boom: no model file here\\n'); sys.exit(3)"]"#;
    let file = write(dir.path(), "p.toml", &pipeline(keys, ""));
    let out = dir.path().join("out");
    let stderr = run_failing(&file, &out);
    assert!(stderr.contains("command python3 -c"), "{stderr}");
    assert!(stderr.contains("boom: no model file here"), "its stderr is shown: {stderr}");
    assert!(!out.join("summary.json").exists());
}

/// Run `text` with `FAIRPIPE_CACHE_ROWS` set to `rows`; the summary and the probabilities.
fn run_with_cache_rows(text: &str, rows: &str) -> (bool, String, Option<(serde_json::Value, Vec<f64>)>) {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "p.toml", text);
    let out = dir.path().join("out");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"])
        .env("FAIRPIPE_CACHE_ROWS", rows)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        return (false, stderr, None);
    }
    let summary = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    (true, stderr, Some((summary, probabilities(&out))))
}

#[test]
fn the_run_cache_of_a_remote_model_is_bounded_by_fairpipe_cache_rows() {
    let server = start_toy("plain");
    let keys = format!("url = \"{}\"\nbatch_size = 4096", server.url());
    let text = pipeline(&keys, AUDIT);
    let (_, _, default) = run_with_cache_rows(&text, "1000000");
    let (_, _, small) = run_with_cache_rows(&text, "64");
    let (_, _, none) = run_with_cache_rows(&text, "0");
    let (default, default_p) = default.expect("default cache");
    let (small, small_p) = small.expect("64-row cache");
    let (none, none_p) = none.expect("no cache");
    // The cache changes what is sent, never what is found.
    assert_eq!(default_p, small_p);
    assert_eq!(default_p, none_p);
    assert_eq!(audit_figures(&default), audit_figures(&small));
    assert_eq!(audit_figures(&default), audit_figures(&none));
    let usage = |s: &serde_json::Value, key: &str| s["stages"]["model"]["remote"][key].as_u64().unwrap();
    let asked = usage(&default, "rows_asked");
    // (FAIRPIPE_CACHE_ROWS bounds the plugins' caches too: with a smaller one, or none, more of a
    // search's repeats reach the model.)
    assert!(usage(&small, "rows_asked") >= asked && usage(&none, "rows_asked") >= usage(&small, "rows_asked"));
    // Without a cache every row asked for is sent, besides the 256 rows of the load-time probe.
    assert_eq!(usage(&none, "rows_sent"), usage(&none, "rows_asked") + 256, "without a cache every row asked for is sent");
    assert_eq!(usage(&none, "cache_hits"), 0);
    // predict's 9,769 test rows were all scored by load_model: the full cache answers them, a
    // 64-row one has forgotten most of them (it still joins rows repeated within one call).
    let (sent_default, sent_small) = (usage(&default, "rows_sent"), usage(&small, "rows_sent"));
    assert!(
        sent_default + 9769 / 2 <= sent_small && sent_small <= asked,
        "sent: default {sent_default}, 64 rows {sent_small}, asked {asked}"
    );
    let (ok, stderr, _) = run_with_cache_rows(&text, "lots");
    assert!(!ok && stderr.contains("FAIRPIPE_CACHE_ROWS") && stderr.contains("\"lots\""), "{stderr}");
}
