//! `fairpipe model-speed` (src/speed.rs), which scripts/bench_tree_peers.py times fairpipe's tree
//! executors with: the rows it says it scored are the data file's, in batches, and the predictions
//! it wrote are the model's — the native tree executor's in batches of 1,000 on two threads equal,
//! bit for bit, ONNX Runtime's in one call on one thread. A bad column is named.
//!
//! Needs ONNX Runtime (scripts/test.sh provisions it through ORT_DYLIB_PATH), as tree_executor.rs.

use serde_json::Value;

use crate::common::{compare, fairpipe, root};

const MODEL: &str = "tests/fixtures/onnx/trees/lightgbm_categorical.onnx";

/// `model-speed` of MODEL on the census rows with `args` added: its JSON line and its predictions.
fn speed(args: &[&str], predictions: &std::path::Path) -> (Value, Vec<f64>) {
    let mut all = vec![
        "model-speed",
        MODEL,
        "pipelines/data/census.csv",
        "--label",
        "income",
        "--favourable",
        ">50K",
        "--codes",
        "pipelines/data/census.codes.toml",
        "--drop",
        "row,split",
        "--seconds",
        "0",
        "--json",
        "--predictions",
        predictions.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let (ok, stdout, stderr) = fairpipe(&all);
    assert!(ok, "model-speed {args:?}: {stdout}{stderr}");
    let line: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let text = std::fs::read_to_string(predictions).unwrap();
    (line, text.lines().map(|l| l.parse::<f64>().unwrap_or_else(|e| panic!("{l}: {e}"))).collect())
}

#[test]
fn model_speed_counts_the_rows_and_writes_the_models_predictions() {
    let rows = std::fs::read_to_string(root().join("pipelines/data/census.csv")).unwrap().lines().skip(1).count();
    let dir = tempfile::tempdir().unwrap();
    let (native, ours) = speed(&["--executor", "native", "--batch", "1000", "--threads", "2"], &dir.path().join("native.p"));
    let (ort, theirs) = speed(&["--executor", "onnxruntime", "--threads", "1"], &dir.path().join("ort.p"));
    for (line, batch) in [(&native, 1000), (&ort, rows)] {
        assert_eq!(line["rows"].as_u64(), Some(rows as u64), "{line}");
        assert_eq!(line["batch"].as_u64(), Some(batch as u64), "{line}");
        // --seconds 0: one pass over the rows.
        assert_eq!((line["passes"].as_u64(), line["rows_scored"].as_u64()), (Some(1), Some(rows as u64)), "{line}");
        let (wall, per_s) = (line["wall_s"].as_f64().unwrap(), line["rows_per_s"].as_f64().unwrap());
        assert!(wall > 0.0 && (per_s * wall - rows as f64).abs() < 1e-6 * rows as f64, "{line}");
    }
    assert!(native["executor"].as_str().unwrap().contains("native"), "{native}");
    assert!(ort["executor"].as_str().unwrap().contains("onnxruntime"), "{ort}");
    assert_eq!(ours.len(), rows);
    compare::assert_bits_equal("model-speed native (batches of 1,000, 2 threads) against onnxruntime", &ours, &theirs);
    // P(>50K) of a real model: neither constant nor out of [0, 1].
    assert!(ours.iter().all(|p| (0.0..=1.0).contains(p)) && ours.iter().any(|p| *p > 0.5) && ours.iter().any(|p| *p < 0.5));
}

#[test]
fn model_speed_names_a_missing_column() {
    let (ok, _, stderr) =
        fairpipe(&["model-speed", MODEL, "pipelines/data/census.csv", "--label", "incomes", "--drop", "row,split", "--seconds", "0"]);
    assert!(!ok && stderr.contains("incomes") && stderr.contains("census.csv"), "{stderr}");
}
