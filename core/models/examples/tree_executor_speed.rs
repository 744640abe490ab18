//! The native tree executor alone (`trees::graph::Graph::run`, every output asked for) on one ONNX
//! export and rows of f32 from a `.npy` file (`scripts/bench_tree_peers.py` writes census as
//! `target/tree-peers/rows32.npy`), on the calling thread. Built only on request, so that the test
//! and lint builds do not link it:
//!
//! ```sh
//! cargo build --release --locked --workspace --features fairpipe-models/bench-tools --example tree_executor_speed
//! ```
//!
//! `tree_executor_speed MODEL ROWS.npy BATCH SECONDS`: passes over all the rows in calls of
//! `BATCH` rows, repeated for `SECONDS` of the thread's CPU time, three rounds; prints each
//! round's rows per CPU second and the best. `SECONDS` = 0 runs `PASSES` (environment, default 1)
//! calls on the first `BATCH` rows and prints nothing: a fixed amount of work whose instructions
//! `valgrind --tool=callgrind` counts (`scripts/bench_tree_executor_ab.py`).

use fairpipe_models::trees::graph::Graph;
use std::path::Path;
use std::process::ExitCode;

/// The CPU time the calling thread has run, in seconds (Linux: `/proc/thread-self/schedstat`).
fn thread_cpu() -> Result<f64, String> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").map_err(|e| format!("/proc/thread-self/schedstat: {e}"))?;
    let ns: f64 = text.split_whitespace().next().and_then(|t| t.parse().ok()).ok_or("/proc/thread-self/schedstat: no run time")?;
    Ok(ns / 1e9)
}

/// A little-endian f32 `.npy` file's values (its header skipped).
fn read_npy(path: &str) -> Result<Vec<f32>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    if bytes.len() < 10 || &bytes[1..6] != b"NUMPY" {
        return Err(format!("{path}: not a .npy file"));
    }
    let header = u16::from_le_bytes([bytes[8], bytes[9]]) as usize + 10;
    if !String::from_utf8_lossy(&bytes[10..header.min(bytes.len())]).contains("'<f4'") {
        return Err(format!("{path}: expected little-endian float32 ('<f4') values"));
    }
    Ok(bytes[header..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

fn run(args: &[String]) -> Result<(), String> {
    let [_, model, npy, batch, seconds] = args else {
        return Err("usage: tree_executor_speed MODEL.onnx ROWS.npy BATCH SECONDS".into());
    };
    let batch: usize = batch.parse().map_err(|_| format!("BATCH: expected a number of rows, not {batch}"))?;
    let seconds: f64 = seconds.parse().map_err(|_| format!("SECONDS: expected a number, not {seconds}"))?;
    let x = read_npy(npy)?;
    // Census as the bench scripts code it: 12 features a row.
    let width = 12;
    let rows = x.len() / width;
    let graph = Graph::read(Path::new(model), width).map_err(|e| format!("{model}: {e}"))?;
    let all: Vec<usize> = (0..graph.output_names().len()).collect();
    let batch = batch.clamp(1, rows);
    if seconds == 0.0 {
        let passes: usize = std::env::var("PASSES").ok().and_then(|p| p.parse().ok()).unwrap_or(1);
        for _ in 0..passes {
            std::hint::black_box(graph.run(x[..batch * width].to_vec(), batch, &all).map_err(|e| e.to_string())?);
        }
        return Ok(());
    }
    let mut best = 0.0f64;
    for _ in 0..3 {
        let start = thread_cpu()?;
        let mut done = 0usize;
        while thread_cpu()? - start < seconds {
            for from in (0..rows).step_by(batch) {
                let n = batch.min(rows - from);
                std::hint::black_box(graph.run(x[from * width..(from + n) * width].to_vec(), n, &all).map_err(|e| e.to_string())?);
                done += n;
            }
        }
        let rate = done as f64 / (thread_cpu()? - start);
        best = best.max(rate);
        println!("round: {rate:.0} rows per CPU second");
    }
    println!("best: {best:.0}");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tree_executor_speed: {message}");
            ExitCode::FAILURE
        }
    }
}
