//! The fuzzers' corpus as regression tests: every input kept in `fuzz/corpus/<target>/` (the seeds,
//! what libFuzzer kept over its runs, minimised, and any finding once fixed) goes through the same
//! reader as under the fuzzer (`fairpipe::fuzzing`), built with this suite's overflow checks. A
//! panic names the file.

use std::path::Path;

/// How many inputs each target's corpus held when it was checked in (`ls fuzz/corpus/TARGET | wc
/// -l`): the replay fails when a corpus holds fewer, so deleted inputs are noticed. Raise a floor
/// when inputs are added.
const CORPUS_FLOORS: &[(&str, usize)] =
    &[("pipeline_toml", 343), ("csv_scan", 34), ("onnx_graph", 273), ("v2_json", 180), ("mlflow_json", 162), ("grpc_v2", 161)];

#[test]
fn every_corpus_input_gets_an_answer_from_its_reader_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut counts = Vec::new();
    for (target, run) in fairpipe::fuzzing::TARGETS {
        let dir = root.join(target);
        let mut files: Vec<_> =
            std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).map(|entry| entry.unwrap().path()).collect();
        files.sort();
        for file in &files {
            let bytes = std::fs::read(file).unwrap();
            if std::panic::catch_unwind(|| run(&bytes)).is_err() {
                panic!("fuzz target `{target}` panics on {} (replay: docs/fuzzing.md)", file.display());
            }
        }
        counts.push((target, files.len()));
    }
    let targets: Vec<&str> = counts.iter().map(|(t, _)| **t).collect();
    assert_eq!(targets, CORPUS_FLOORS.iter().map(|(t, _)| *t).collect::<Vec<_>>(), "a floor per target, in TARGETS' order");
    for ((target, n), (_, floor)) in counts.iter().zip(CORPUS_FLOORS) {
        assert!(n >= floor, "fuzz/corpus/{target} holds {n} inputs, fewer than the {floor} checked in");
    }
}
