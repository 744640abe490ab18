//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

pub mod compare;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Record that test `test` is skipped on this machine, and why: a line in the file named by
/// `FAIRPIPE_SKIPPED_LOG` (scripts/test.sh sets it and counts these lines as skipped, not passed,
/// in its closing line), and on stderr. The caller returns after it.
pub fn skip(test: &str, why: &str) {
    eprintln!("SKIPPED: {test}: {why}");
    if let Some(log) = std::env::var_os("FAIRPIPE_SKIPPED_LOG") {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&log).expect("FAIRPIPE_SKIPPED_LOG opens");
        writeln!(file, "{test}: {why}").expect("FAIRPIPE_SKIPPED_LOG is written");
    }
}

/// A CSV file without quoted commas as rows of column → cell (quotes around a cell dropped); a row
/// whose number of cells is not the header's fails, naming its line.
pub fn read_csv(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let cells = |l: &str| -> Vec<String> { l.split(',').map(|s| s.trim_matches('"').to_string()).collect() };
    let header = cells(lines.next().unwrap_or_else(|| panic!("{}: empty", path.display())));
    lines
        .enumerate()
        .map(|(i, l)| {
            let row = cells(l);
            assert_eq!(row.len(), header.len(), "{}:{}: {} cells under a header of {}", path.display(), i + 2, row.len(), header.len());
            header.iter().cloned().zip(row).collect()
        })
        .collect()
}

/// The smallest of `xs`, failing on an empty list or on a value that is not finite (NaN or
/// infinite), which `f64::min` in a fold would pass over silently.
pub fn finite_min(xs: &[f64]) -> f64 {
    finite(xs).fold(f64::INFINITY, f64::min)
}

/// The largest of `xs`, failing as [`finite_min`] does.
pub fn finite_max(xs: &[f64]) -> f64 {
    finite(xs).fold(f64::NEG_INFINITY, f64::max)
}

fn finite(xs: &[f64]) -> impl Iterator<Item = f64> + '_ {
    assert!(!xs.is_empty(), "the smallest or largest of no values");
    xs.iter().enumerate().map(move |(i, &x)| {
        assert!(x.is_finite(), "value {i} of {} is not finite: {x}", xs.len());
        x
    })
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run the fairpipe binary with `args`; returns (success, stdout, stderr).
pub fn fairpipe(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fairpipe")).args(args).current_dir(root()).output().expect("run fairpipe");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Run a pipeline into `out`, asserting success; returns the parsed summary.json.
pub fn run_pipeline(pipeline: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"];
    args.extend_from_slice(extra);
    let (ok, stdout, stderr) = fairpipe(&args);
    assert!(ok, "{} failed:\n{stdout}\n{stderr}", pipeline.display());
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// One run of a bundled pipeline as written (`fairpipe run FILE --out DIR --quiet`, no other
/// argument): its output folder and summary.json.
pub struct BundledRun {
    /// The run's output folder (kept until the test binary ends).
    pub out: tempfile::TempDir,
    /// Its summary.json.
    pub summary: serde_json::Value,
}

/// The run of bundled pipeline `file` as written, made once per test binary and shared by every
/// test that reads it (the first to ask runs it; one asking meanwhile waits): the suite ran
/// census-full-audit, census-estimate and others several times over, each identically, and the
/// test run is CPU-bound on 2 cores (issue 58). A test must only read the folder.
pub fn bundled_run(file: &Path) -> std::sync::Arc<BundledRun> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Runs = Mutex<HashMap<PathBuf, Arc<OnceLock<Arc<BundledRun>>>>>;
    static RUNS: OnceLock<Runs> = OnceLock::new();
    let key = file.canonicalize().unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let cell = RUNS.get_or_init(Default::default).lock().unwrap().entry(key.clone()).or_default().clone();
    cell.get_or_init(|| {
        let out = tempfile::tempdir().unwrap();
        let summary = run_pipeline(&key, out.path(), &[]);
        Arc::new(BundledRun { out, summary })
    })
    .clone()
}

/// Run a pipeline into `out` with rayon's worker count set to `threads` (RAYON_NUM_THREADS),
/// asserting success; returns the parsed summary.json.
pub fn run_pipeline_threads(pipeline: &Path, out: &Path, threads: usize) -> serde_json::Value {
    let out_text = out.to_str().unwrap();
    let result = Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", pipeline.to_str().unwrap(), "--out", out_text, "--quiet"])
        .env("RAYON_NUM_THREADS", threads.to_string())
        .current_dir(root())
        .output()
        .expect("run fairpipe");
    assert!(result.status.success(), "{} failed with {threads} threads:\n{}", pipeline.display(), String::from_utf8_lossy(&result.stderr));
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// Remove every timing (keys ending in `_s`, `per_second` or `time_share`) from a summary,
/// recursively.
pub fn without_timings(v: &mut serde_json::Value) {
    if let Some(map) = v.as_object_mut() {
        map.retain(|k, _| !(k.ends_with("_s") || k.ends_with("per_second") || k.ends_with("time_share")));
        for value in map.values_mut() {
            without_timings(value);
        }
    }
}

/// Run a pipeline into `out`, asserting that it fails; returns its stderr.
pub fn run_failing(pipeline: &Path, out: &Path) -> String {
    let (ok, stdout, stderr) = fairpipe(&["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(!ok, "{} passed:\n{stdout}", pipeline.display());
    stderr
}

/// Write `text` as a pipeline file in `dir` (next to copies of nothing: paths inside point at the
/// bundled data through absolute paths).
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `text` (a bundled pipeline) with its `"data/…"` and `"models/…"` paths made absolute, to run
/// from another folder.
pub fn with_bundled_paths(text: &str) -> String {
    let abs = |rel: &str| format!("{:?}", bundled(rel));
    let mut out = text.to_string();
    for rel in ["data/census.csv", "data/census.codes.toml", "models/census.onnx"] {
        out = out.replace(&format!("\"{rel}\""), &abs(rel));
    }
    out
}

/// Absolute path of a bundled file under `pipelines/`.
pub fn bundled(rel: &str) -> String {
    root().join("pipelines").join(rel).to_string_lossy().into_owned()
}

/// The folder cargo built the plugin libraries into (the test binary sits in its `deps/`).
pub fn plugin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    exe.parent().and_then(Path::parent).expect("target/<profile>").to_path_buf()
}

/// The built-in plugin `name` (the form linked into the `fairpipe` binary).
pub fn plugin(name: &str) -> &'static fairpipe_core::plugin::Plugin {
    fairpipe::register_builtins().expect("the built-ins register");
    fairpipe_core::plugin::builtin(name).unwrap_or_else(|| panic!("no built-in plugin `{name}`"))
}

/// The library form of plugin `name` (its cdylib, built by `cargo build --workspace`).
pub fn library(name: &str) -> &'static fairpipe_core::plugin::Plugin {
    let path = plugin_dir().join(fairpipe_core::plugin::library_file_name(name));
    fairpipe_core::plugin::load_path(&path).unwrap_or_else(|e| panic!("{name}: {e} (run cargo build --workspace first)"))
}

/// The `[stages.data]` table that loads the bundled census data (absolute paths; the papers'
/// codes, protected `gender`, the papers' split column), for pipelines written by the tests.
pub fn census_data_stage() -> String {
    format!(
        "[stages.data]\nkind = \"load\"\npath = \"{}\"\ncodes = \"{}\"\nlabel = \"income\"\nfavourable = \">50K\"\nprotected = [\"gender\"]\ndrop = [\"row\"]\nsplit_column = \"split\"\n",
        bundled("data/census.csv"),
        bundled("data/census.codes.toml")
    )
}

/// The bundled census data as the papers encode and split it, `gender` protected.
pub fn census_data() -> fairpipe_core::data::Dataset {
    use fairpipe_core::data::{load, LoadSpec, SplitSpec};
    let mut spec = LoadSpec::new(root().join("pipelines/data/census.csv"), "income");
    spec.codes = Some(fairpipe_core::codes::read(&root().join("pipelines/data/census.codes.toml")).expect("the census codes"));
    spec.favourable = Some(">50K".into());
    spec.protected = vec!["gender".into()];
    spec.drop = vec!["row".into()];
    spec.split = SplitSpec::Column("split".into());
    load(&spec).unwrap()
}

/// `n` with a comma between thousands, as the docs write counts.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
