//! The LLM client's speed (issue 46) against the planted OpenAI-compatible server of
//! tests/llm_server.rs, run as a child process of this benchmark (`--serve`) so that the CPU time
//! measured here is the client's alone:
//!
//! - fairpipe's `LlmModel` scoring `FAIRPIPE_LLM_BENCH_ROWS` (default 3000) distinct prompts, the
//!   response cache off, at concurrency 1, 8 and 32: requests per second (wall) and the client
//!   process's CPU time (user + system, /proc/self/stat) per request;
//! - the `openai` Python client (`AsyncOpenAI` + `asyncio.gather`, bounded by a semaphore) doing
//!   the same requests to the same server (scripts/bench_llm_openai.py, run with
//!   `FAIRPIPE_LLM_PYTHON`, default ~/.cache/fairpipe/openai-venv/bin/python);
//! - the response cache's hit path: `ResponseCache::get` on an SQLite file holding 10,000 answers
//!   (look-ups per second), and a fresh model answering every prompt from that file.
//!
//! Printed as `name value unit` lines. `cargo build --workspace --all-targets` builds it (dev
//! profile); run `target/debug/deps/llm-HASH` (scripts/bench-llm.sh does, and records `uptime`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use fairpipe_core::domain::{Attribute, Domain};
use fairpipe_core::models::llm::cache::ResponseCache;
use fairpipe_core::models::llm::client::Reply;
use fairpipe_core::models::llm::config::LlmConfig;
use fairpipe_core::models::llm::LlmModel;
use fairpipe_core::oracle::Model;

#[path = "../tests/llm_server.rs"]
#[allow(dead_code)]
mod llm_server;

const TEMPLATE: &str =
    "Applicant: income={{ income }}; years={{ years }}; sex={{ sex }}.\nShould the loan be approved? Answer yes or no.\n";

/// Income 0..=99999, years 0..=9, sex: distinct prompts for as many rows as a run needs.
fn domain() -> Domain {
    Domain {
        attributes: vec![
            Attribute::integer("income", 0.0, 99_999.0, false),
            Attribute::integer("years", 0.0, 9.0, false),
            Attribute::categorical("sex", vec!["Female".into(), "Male".into()], true),
        ],
    }
}

/// `n` rows whose prompts differ, starting at income `from`.
fn rows(n: usize, from: usize) -> Vec<f64> {
    (0..n).flat_map(|k| [(from + k / 20) as f64, (k % 10) as f64, ((k / 10) % 2) as f64]).collect()
}

fn model(dir: &Path, base_url: &str, concurrency: usize, cache: &str) -> LlmModel {
    let text = format!(
        r#"base_url = "{base_url}"
model = "planted"
prompt = "prompt.j2"
answers = {{ favourable = ["yes", "Yes"], unfavourable = ["no", "No"] }}
concurrency = {concurrency}
cache = "{cache}"
"#
    );
    let config: LlmConfig = toml::from_str(&text).expect("the llm block");
    LlmModel::load(&config, dir, &domain(), None, &Default::default()).expect("the model")
}

/// The process's CPU time (user + system), seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn serve() {
    let server = llm_server::Planted::start();
    println!("{}", server.port);
    // Until the parent closes our standard input.
    let mut line = String::new();
    while std::io::stdin().read_line(&mut line).map(|n| n > 0).unwrap_or(false) {}
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--serve") {
        serve();
        return;
    }
    let n: usize = std::env::var("FAIRPIPE_LLM_BENCH_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(3000);
    let mut child = Command::new(std::env::current_exe().expect("this program"))
        .arg("--serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the planted server");
    let mut port = String::new();
    BufReader::new(child.stdout.take().expect("its output")).read_line(&mut port).expect("its port");
    let base_url = format!("http://127.0.0.1:{}/v1", port.trim());
    let dir = tempfile::tempdir().expect("a folder");
    std::fs::write(dir.path().join("prompt.j2"), TEMPLATE).expect("the template");
    println!("rows {n} prompts");

    for (k, concurrency) in [1usize, 8, 32].into_iter().enumerate() {
        let model = model(dir.path(), &base_url, concurrency, "");
        let x = rows(n, (k + 1) * 10_000);
        let mut out = vec![0.0; n];
        let (cpu, wall) = (cpu_seconds(), Instant::now());
        model.predict_into(&x, &mut out).expect("the answers");
        let (wall, cpu) = (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        let usage = model.llm_usage();
        assert_eq!(usage.requests as usize, n, "one request per prompt");
        println!("fairpipe c{concurrency} requests_per_s {:.0}", n as f64 / wall);
        println!("fairpipe c{concurrency} cpu_us_per_request {:.1}", cpu / n as f64 * 1e6);
        let python = std::env::var("FAIRPIPE_LLM_PYTHON")
            .unwrap_or_else(|_| format!("{}/.cache/fairpipe/openai-venv/bin/python", std::env::var("HOME").unwrap_or_default()));
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/bench_llm_openai.py");
        let done = Command::new(&python)
            .arg(&script)
            .args([&base_url, &concurrency.to_string(), &n.to_string(), &((k + 1) * 10_000 + 5_000).to_string()])
            .output();
        match done {
            Ok(done) if done.status.success() => print!("{}", String::from_utf8_lossy(&done.stdout)),
            Ok(done) => println!("openai c{concurrency} failed: {}", String::from_utf8_lossy(&done.stderr).trim()),
            Err(e) => println!("openai c{concurrency} not run ({python}: {e})"),
        }
    }

    // The cache's hit path.
    let path = dir.path().join("hits.sqlite");
    let cache = ResponseCache::open(&path).expect("the cache");
    let reply = Reply { content: "Yes".into(), top: Some(vec![("Yes".into(), -0.2), ("No".into(), -1.8), ("Maybe".into(), -2.3)]) };
    let keys: Vec<u128> = (0..10_000u128).map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)).collect();
    for key in &keys {
        cache.put(*key, &reply).expect("a put");
    }
    let lookups = 200_000;
    let started = Instant::now();
    let mut found = 0;
    for i in 0..lookups {
        found += usize::from(cache.get(keys[i % keys.len()]).expect("a get").is_some());
    }
    let elapsed = started.elapsed().as_secs_f64();
    assert_eq!(found, lookups);
    println!("cache get_per_s {:.0}", lookups as f64 / elapsed);
    // A fresh model answering every prompt from the file a first one filled.
    let filled = model(dir.path(), &base_url, 8, "warm.sqlite");
    let x = rows(n, 90_000);
    let mut out = vec![0.0; n];
    filled.predict_into(&x, &mut out).expect("the answers");
    let warm = model(dir.path(), &base_url, 8, "warm.sqlite");
    let started = Instant::now();
    warm.predict_into(&x, &mut out).expect("the answers");
    let elapsed = started.elapsed().as_secs_f64();
    let usage = warm.llm_usage();
    assert_eq!((usage.requests, usage.cache_hits as usize), (0, n));
    println!("cache model_rows_per_s {:.0}", n as f64 / elapsed);
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
}
