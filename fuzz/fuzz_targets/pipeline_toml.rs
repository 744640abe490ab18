//! The pipeline reader: TOML text (phase one), the `[pipeline]` header, each stage's typed config
//! through its kind's deserializer and `validate`, and the plan (`Pipeline::parse`). Validation
//! only: nothing runs.
//!
//! `parse` validates the files and servers a pipeline names (a data file's header, an ONNX graph,
//! a plugin library, a model server's readiness). So that the fuzzer never reads, loads or
//! connects to anything, the pipeline is parsed as if read from a folder that does not exist, and
//! an input whose strings (values or keys, after TOML's escapes) hold `/` or `\` is skipped: every
//! path then resolves inside the missing folder (so is found missing) and no URL can be written.
//! What is fuzzed is everything up to those reads: the TOML reader, the spans, every key's
//! deserializer and check, the did-you-mean hints, gate conditions and the graph.
//!
//! The body is `fairpipe::fuzzing::pipeline_toml`, which the test suite also replays the corpus through.
#![no_main]

use std::sync::Once;

static INIT: Once = Once::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // No plugin folder from the environment: plugin names resolve to the built-in methods.
    INIT.call_once(|| std::env::remove_var("FAIRPIPE_PLUGIN_PATH"));
    fairpipe::fuzzing::pipeline_toml(data)
});
