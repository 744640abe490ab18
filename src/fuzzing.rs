//! The bodies of the fuzz targets (`fuzz/`): each feeds bytes fairpipe did not write to one of its
//! readers, as a user's file or a model server would. The fuzz crate calls them under libFuzzer;
//! the test suite replays the checked-in corpus (`fuzz/corpus/<target>/`) through them, so every
//! input the fuzzer kept, and every finding, stays a regression test. A panic is a finding: the
//! readers must answer with an error. How to run the fuzzer: docs/fuzzing.md.

use std::path::Path;
use std::sync::Once;

use fairpipe_core::models::remote::{grpc, mlflow, parse_json, v2};
use fairpipe_core::run::Pipeline;
use fairpipe_core::toml_spans::{self, Val};

/// One fuzz target's body: fed any bytes, it must return (whatever the reader answered).
pub type Target = fn(&[u8]);

/// Every target, by the name of its folder in `fuzz/corpus/` and its binary in `fuzz/`.
pub const TARGETS: &[(&str, Target)] = &[
    ("pipeline_toml", pipeline_toml),
    ("csv_scan", csv_scan),
    ("onnx_graph", onnx_graph),
    ("v2_json", v2_json),
    ("mlflow_json", mlflow_json),
    ("grpc_v2", grpc_v2),
];

/// A folder that does not exist: the relative paths of a fuzzed pipeline resolve inside it.
const PIPELINE_FILE: &str = "/nonexistent-fairpipe-fuzz/pipeline.toml";

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

static BUILTINS: Once = Once::new();

/// The pipeline reader: TOML text, the `[pipeline]` header, each stage's typed config through its
/// kind's deserializer and checks, gate conditions and the plan (`Pipeline::parse`); nothing runs.
///
/// `parse` looks at what a pipeline names (a data file's header, an ONNX graph, a plugin library,
/// a model server). So that nothing is read, loaded or contacted, the text is parsed as if read
/// from a folder that does not exist, and an input whose strings (keys or values, after TOML's
/// escapes) hold `/` or `\` is skipped: every path then resolves inside the missing folder and no
/// URL can be written. Plugin names resolve to the built-in methods.
pub fn pipeline_toml(data: &[u8]) {
    BUILTINS.call_once(|| {
        let _ = crate::register_builtins();
    });
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(root) = toml_spans::parse(text) {
        if names_a_path(&root.v) {
            return;
        }
    }
    // A syntax error must come back as a located problem too; formatting it must not panic.
    if let Err(e) = Pipeline::parse(Path::new(PIPELINE_FILE), text, None) {
        let _ = e.to_string();
    }
}

/// The CSV pre-scan of a data file's bytes; the first byte picks the separator (`,` `;` tab `|`).
pub fn csv_scan(data: &[u8]) {
    let Some((&pick, bytes)) = data.split_first() else { return };
    let separator = [b',', b';', b'\t', b'|'][usize::from(pick % 4)];
    if let Err(e) = fairpipe_core::csv_check::scan_bytes(Path::new("fuzz.csv"), bytes, separator) {
        let _ = e.to_string();
    }
}

/// What `load_model` reads of an ONNX file's bytes before any executor runs.
pub fn onnx_graph(data: &[u8]) {
    match fairpipe_core::models::onnx::facts::graph_facts_from_bytes(Path::new("fuzz.onnx"), data) {
        Ok(facts) => {
            let _ = format!("{facts:?}");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// A KServe V2 server's JSON metadata and `infer` answers (the body; the first byte is the
/// batch's row count), read as fairpipe reads them (`parse_json` accepts Python's bare `NaN`).
pub fn v2_json(data: &[u8]) {
    let Some((&rows, body)) = data.split_first() else { return };
    let Ok(value) = parse_json(&String::from_utf8_lossy(body)) else { return };
    let _ = v2::read_metadata(&value);
    let _ = v2::read_infer_answer(&value, usize::from(rows));
}

/// An MLflow scoring server's answer (the body; the first byte is the batch's row count).
pub fn mlflow_json(data: &[u8]) {
    let Some((&rows, body)) = data.split_first() else { return };
    let Ok(value) = parse_json(&String::from_utf8_lossy(body)) else { return };
    let _ = mlflow::predictions(&value, usize::from(rows));
}

/// A V2 gRPC `ModelInfer` or `ModelMetadata` answer's body and a `grpc-message` header (the first
/// byte is the batch's row count).
pub fn grpc_v2(data: &[u8]) {
    let Some((&rows, body)) = data.split_first() else { return };
    let _ = grpc::read_infer_body(body, usize::from(rows));
    let _ = grpc::read_metadata_body(body);
    let _ = grpc::percent_decode(&String::from_utf8_lossy(body));
}
