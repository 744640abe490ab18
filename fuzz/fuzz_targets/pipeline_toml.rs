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
#![no_main]

use std::path::Path;
use std::sync::Once;

use fairpipe_core::run::Pipeline;
use fairpipe_core::stage::toml_spans::{self, Val};
use libfuzzer_sys::fuzz_target;

/// A folder that does not exist: relative paths resolve inside it.
const FILE: &str = "/nonexistent-fairpipe-fuzz/pipeline.toml";

/// Whether any key or string value of `v` holds a path separator.
fn names_a_path(v: &Val) -> bool {
    let bad = |s: &str| s.contains('/') || s.contains('\\');
    match v {
        Val::Str(s) => bad(s),
        Val::Array(items) => items.iter().any(|i| names_a_path(&i.v)),
        Val::Table(entries) => entries.iter().any(|(k, v)| bad(&k.v) || names_a_path(&v.v)),
        _ => false,
    }
}

static INIT: Once = Once::new();

fuzz_target!(|data: &[u8]| {
    INIT.call_once(|| {
        // No plugin folder from the environment; the built-in methods answer plugin names.
        std::env::remove_var("FAIRPIPE_PLUGIN_PATH");
        let _ = fairpipe::register_builtins();
    });
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(root) = toml_spans::parse(text) else {
        // A syntax error must still come back as a located problem.
        let _ = Pipeline::parse(Path::new(FILE), text, None).map(|_| ()).map_err(|e| e.to_string());
        return;
    };
    if names_a_path(&root.v) {
        return;
    }
    match Pipeline::parse(Path::new(FILE), text, None) {
        Ok(_) => {}
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
