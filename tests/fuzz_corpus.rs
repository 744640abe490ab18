//! The fuzzers' corpus as regression tests: every input kept in `fuzz/corpus/<target>/` (the seeds,
//! what libFuzzer kept over its runs, minimised, and any finding once fixed) goes through the same
//! reader as under the fuzzer (`fairpipe::fuzzing`), built with this suite's overflow checks. A
//! panic names the file.

use std::path::Path;

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
    for (target, n) in &counts {
        assert!(*n >= 5, "fuzz/corpus/{target} holds only {n} inputs");
    }
}
