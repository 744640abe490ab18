//! Finding and starting ONNX Runtime (`libonnxruntime.so`), which the `ort` crate loads at run time
//! (its `load-dynamic` feature: nothing is linked or downloaded when fairpipe is built).
//!
//! The library is looked for, in order: the path the pipeline gives (the `load_model` stage's
//! `onnxruntime` key, a file or a folder), the `ORT_DYLIB_PATH` environment variable, then the
//! `capi/` folder of the `onnxruntime` package of the `python3` on `PATH` (where `pip install
//! onnxruntime` puts it). The first library found is loaded once per process and its version
//! checked: `ort` needs ONNX Runtime 1.24 or newer.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use ort::environment::Environment;

/// The one command that installs the runtime, quoted in every message that needs it.
pub const INSTALL_HINT: &str = "pip install onnxruntime";

/// A loaded ONNX Runtime.
#[derive(Debug)]
pub struct Runtime {
    /// The library file loaded.
    pub path: PathBuf,
    /// Where the path came from ("the pipeline", "ORT_DYLIB_PATH", "python3's onnxruntime package").
    pub found_by: &'static str,
    /// The runtime's version ("1.32.0").
    pub version: String,
    environment: Environment,
}

impl Runtime {
    /// The environment sessions are created under.
    pub fn environment(&self) -> &Environment {
        &self.environment
    }
}

/// Why ONNX Runtime could not be started.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct RuntimeError {
    /// What was tried and what to do.
    pub message: String,
}

static LOADED: Mutex<Option<Arc<Runtime>>> = Mutex::new(None);

/// The process's ONNX Runtime, loading it on first use from `given` (a file or a folder) or the
/// places listed in the module docs. Later calls return the runtime already loaded.
pub fn runtime(given: Option<&Path>) -> Result<Arc<Runtime>, RuntimeError> {
    let mut loaded = LOADED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(runtime) = loaded.as_ref() {
        return Ok(Arc::clone(runtime));
    }
    let mut tried = Vec::new();
    let candidates: Vec<(Option<PathBuf>, &'static str)> = vec![
        (given.map(Path::to_path_buf), "the load_model stage's `onnxruntime` key"),
        (std::env::var_os("ORT_DYLIB_PATH").map(PathBuf::from), "ORT_DYLIB_PATH"),
        (python_package_dir(), "python3's onnxruntime package"),
    ];
    for (candidate, found_by) in candidates {
        let Some(candidate) = candidate else { continue };
        let Some(file) = library_in(&candidate) else {
            tried.push(format!("{found_by}: {} has no libonnxruntime.so", candidate.display()));
            // A path given explicitly that does not hold the library is an error, not a hint.
            if found_by != "python3's onnxruntime package" {
                return Err(RuntimeError { message: format!("{}; {}", tried.join("; "), install_advice()) });
            }
            continue;
        };
        let runtime = start(&file, found_by)?;
        let runtime = Arc::new(runtime);
        *loaded = Some(Arc::clone(&runtime));
        return Ok(runtime);
    }
    if tried.is_empty() {
        tried.push("no path in the pipeline, ORT_DYLIB_PATH unset, and python3 has no onnxruntime package".into());
    }
    Err(RuntimeError { message: format!("ONNX Runtime not found ({}); {}", tried.join("; "), install_advice()) })
}

/// How a user gets the runtime.
pub fn install_advice() -> String {
    format!(
        "install it with `{INSTALL_HINT}` (fairpipe then finds it through python3), or point the ORT_DYLIB_PATH environment variable or the load_model stage's key `onnxruntime = \"PATH\"` at its libonnxruntime.so"
    )
}

fn start(file: &Path, found_by: &'static str) -> Result<Runtime, RuntimeError> {
    let builder = ort::init_from(file).map_err(|e| RuntimeError {
        message: format!("cannot load ONNX Runtime from {} (found by {found_by}): {e}; {}", file.display(), install_advice()),
    })?;
    let environment = builder
        .with_name("fairpipe")
        .build()
        .map_err(|e| RuntimeError { message: format!("ONNX Runtime from {} failed to start: {e}", file.display()) })?;
    let version = version_of(file);
    Ok(Runtime { path: file.to_path_buf(), found_by, version, environment })
}

/// The runtime's version, read from its build information ("git-branch=rel-1.32.0") or else from
/// the file name (`libonnxruntime.so.1.32.0`).
fn version_of(file: &Path) -> String {
    let info = ort::info();
    if let Some(branch) = info.split(',').find_map(|part| part.trim().strip_prefix("git-branch=rel-")) {
        return branch.trim().to_string();
    }
    file.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("libonnxruntime.so."))
        .map(str::to_string)
        .unwrap_or_else(|| "unknown".into())
}

/// `path` itself when it is a file, else the newest `libonnxruntime.so*` in the folder `path` or
/// in its `capi/` subfolder.
fn library_in(path: &Path) -> Option<PathBuf> {
    if path.is_file() {
        return Some(path.to_path_buf());
    }
    for dir in [path.to_path_buf(), path.join("capi")] {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libonnxruntime.so")))
            .collect();
        found.sort();
        if let Some(last) = found.pop() {
            return Some(last);
        }
    }
    None
}

/// The folder of python3's `onnxruntime` package, if python3 runs and has it.
fn python_package_dir() -> Option<PathBuf> {
    let output = Command::new("python3")
        .args(["-c", "import os, onnxruntime; print(os.path.dirname(onnxruntime.__file__))"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let dir = PathBuf::from(text.trim());
    dir.is_dir().then_some(dir)
}

#[cfg(test)]
mod tests {
    /// The advice names the places that really work: the environment variable and the key of the
    /// `load_model` stage (there is no `[pipeline] onnxruntime`).
    #[test]
    fn the_install_advice_names_the_load_model_key() {
        let advice = super::install_advice();
        assert!(advice.contains("ORT_DYLIB_PATH") && advice.contains("load_model stage's key `onnxruntime = \"PATH\"`"), "{advice}");
        assert!(!advice.contains("[pipeline]"), "{advice}");
    }
}
