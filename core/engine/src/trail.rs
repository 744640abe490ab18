//! The audit trail every run writes into `summary.json` (`trail`): what exactly was audited — the
//! SHA-256 of each input file (the pipeline file, and every file a stage key of type `path` or a
//! `command` names: data, codes, models, plugin libraries, model programs), fairpipe's version and
//! the git commit it was built from, the seed, the platform, the executor of each model and the
//! pipeline's own text — and [`verify`], which recomputes the hashes later (`fairpipe verify-run`)
//! and names each file that changed.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One input file of a run and its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrailFile {
    /// The stage whose key names the file (empty for the pipeline file itself).
    pub stage: String,
    /// The key (`path`, `codes`, `command`; `pipeline` for the pipeline file).
    pub key: String,
    /// The file, as an absolute path.
    pub path: PathBuf,
    /// The file relative to the pipeline file's folder (`data/census.csv`, `../x.csv`), so that a
    /// run folder handed over with its inputs verifies where they are now ([`verify`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative: Option<PathBuf>,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its SHA-256, in lower-case hex.
    pub sha256: String,
}

/// A run's audit trail (`summary.json`'s `trail`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trail {
    /// The version of fairpipe that ran.
    pub fairpipe_version: String,
    /// The git commit the binary was built from, when it was built from a git checkout.
    pub git_commit: Option<String>,
    /// The run seed.
    pub seed: u64,
    /// Operating system and architecture (`linux x86_64`).
    pub platform: String,
    /// Every input file with its hash.
    pub inputs: Vec<TrailFile>,
    /// Each model stage's executor (and the model as it describes itself).
    pub executors: BTreeMap<String, String>,
    /// Each model stage behind an LLM endpoint: what the endpoint said of the model it serves
    /// (its SHA-256) and the fingerprints its answers gave; `verify-run` asks the endpoint again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, EndpointTrail>,
    /// The pipeline file's text (empty for a pipeline made in code).
    pub pipeline: String,
}

/// An LLM endpoint a model stage audited, as the trail keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointTrail {
    /// The endpoint's base URL (`…/v1`).
    pub base_url: String,
    /// The model named in the pipeline.
    pub model: String,
    /// The SHA-256 of what the endpoint said of that model before the first prompt
    /// ([`fairpipe_models::EndpointIdentity::hash`]); absent when it said nothing (no `/models` entry, no `/props`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_sha256: Option<String>,
    /// The `system_fingerprint`s of its answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system_fingerprints: Vec<String>,
    /// The `model` names of its answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub served_models: Vec<String>,
}

impl EndpointTrail {
    /// The trail's entry for an LLM's usage over a run.
    pub fn of(usage: &fairpipe_models::LlmUsage) -> EndpointTrail {
        EndpointTrail {
            base_url: usage.base_url.clone(),
            model: usage.model.clone(),
            identity_sha256: usage.identity.as_ref().and_then(fairpipe_models::EndpointIdentity::hash),
            system_fingerprints: usage.system_fingerprints.clone(),
            served_models: usage.served_models.clone(),
        }
    }
}

/// What [`verify_endpoints`] found of one endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointCheck {
    /// It says the same of its model.
    Same(String, EndpointTrail),
    /// It says something else now: the recorded entry and the SHA-256 now.
    Changed(String, EndpointTrail, String),
    /// It could not be asked, or said nothing then or now: the reason.
    NotAsked(String, EndpointTrail, String),
}

impl std::fmt::Display for EndpointCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EndpointCheck::Same(stage, e) => write!(f, "ok       {} model {} ({stage}): identity sha256 {}", e.base_url, e.model, e.identity_sha256.as_deref().unwrap_or("")),
            EndpointCheck::Changed(stage, e, now) => write!(
                f,
                "CHANGED  {} model {} ({stage}): the endpoint's identity sha256 was {}, is now {now}: the model behind the name is not the one audited",
                e.base_url,
                e.model,
                e.identity_sha256.as_deref().unwrap_or("")
            ),
            EndpointCheck::NotAsked(stage, e, why) => write!(f, "UNKNOWN  {} model {} ({stage}): {why}", e.base_url, e.model),
        }
    }
}

/// Ask every LLM endpoint of `trail` what it serves now ([`fairpipe_models::llm::client::identity_of`])
/// and compare with what it said when the run audited it.
pub fn verify_endpoints(trail: &Trail) -> Vec<EndpointCheck> {
    trail
        .endpoints
        .iter()
        .map(|(stage, e)| {
            let Some(then) = &e.identity_sha256 else {
                return EndpointCheck::NotAsked(
                    stage.clone(),
                    e.clone(),
                    "the endpoint said nothing of its model when audited (no `/models` entry, no `/props`)".into(),
                );
            };
            let now = fairpipe_models::llm::client::identity_of(&e.base_url, &e.model);
            match now.hash() {
                Some(hash) if &hash == then => EndpointCheck::Same(stage.clone(), e.clone()),
                Some(hash) => EndpointCheck::Changed(stage.clone(), e.clone(), hash),
                None => EndpointCheck::NotAsked(stage.clone(), e.clone(), format!("cannot ask it now ({})", now.unavailable.join("; "))),
            }
        })
        .collect()
}

/// Read the trail of `out_dir/summary.json`.
pub fn read_trail(out_dir: &Path) -> Result<Trail, VerifyError> {
    let path = out_dir.join("summary.json");
    let problem = |message: String| VerifyError::Summary { path: path.clone(), message };
    let text = std::fs::read_to_string(&path).map_err(|e| problem(format!("cannot read: {e}")))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| problem(format!("not JSON: {e}")))?;
    let trail = json.get("trail").ok_or_else(|| problem("no `trail`: the run was made by a fairpipe without audit trails".into()))?;
    Trail::deserialize(trail).map_err(|e| problem(format!("`trail` does not read: {e}")))
}

/// `path` relative to folder `base` (both made absolute, `..` where `path` is outside it); `None`
/// when they share nothing but the root (or a drive), where a relative path would mean nothing.
pub fn relative(path: &Path, base: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (path, base) = (abs(path), abs(base));
    fn normal(p: &Path) -> Vec<Component<'_>> {
        p.components().filter(|c| !matches!(c, Component::CurDir)).collect()
    }
    let (p, b) = (normal(&path), normal(&base));
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common <= 1 {
        return None;
    }
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c.as_os_str());
    }
    Some(out)
}

/// The git commit of the program running the engine, set once by its entry point.
static GIT_COMMIT: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Record the git commit the program was built from, for every later run's trail. The command
/// line and the Python module call it at start (`fairpipe::record_build_commit`, from the top
/// crate's `build.rs`), so that the engine itself is not rebuilt at every commit; a program
/// embedding the engine may call it with its own. The first call wins; an empty string is none.
pub fn set_git_commit(commit: &str) {
    let _ = GIT_COMMIT.set(commit.to_string());
}

/// The git commit recorded by [`set_git_commit`], if any.
pub fn git_commit() -> Option<String> {
    GIT_COMMIT.get().filter(|c| !c.is_empty()).cloned()
}

/// The platform fairpipe runs on.
pub fn platform() -> String {
    format!("{} {}", std::env::consts::OS, std::env::consts::ARCH)
}

/// The SHA-256 (lower-case hex) and size of file `path`.
pub fn sha256_file(path: &Path) -> std::io::Result<(String, u64)> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        hasher.update(&buffer[..n]);
    }
    let hex: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok((hex, bytes))
}

/// The entry of file `path` named by `key` of `stage`, with its path relative to the pipeline
/// file's folder `base` when there is one; `None` when it is no readable file (a folder, a plugin
/// named rather than a library, a program found on the search path).
pub fn entry(stage: &str, key: &str, path: &Path, base: Option<&Path>) -> Option<TrailFile> {
    if !path.is_file() {
        return None;
    }
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let (sha256, bytes) = sha256_file(&path).ok()?;
    let relative = base.and_then(|b| relative(&path, b));
    Some(TrailFile { stage: stage.to_string(), key: key.to_string(), path, relative, bytes, sha256 })
}

/// The files the stages of pipeline `text` (in folder `dir`) name: for each stage, the string
/// value of each key in `path_keys(kind)`, and each item of a `command` list that is a file in
/// `dir`, resolved against `dir`.
pub fn named_files(text: &str, dir: &Path, path_keys: impl Fn(&str) -> Vec<&'static str>) -> Vec<(String, String, PathBuf)> {
    let Ok(root) = text.parse::<toml::Table>() else { return Vec::new() };
    let Some(stages) = root.get("stages").and_then(toml::Value::as_table) else { return Vec::new() };
    let mut out = Vec::new();
    for (name, stage) in stages {
        let Some(table) = stage.as_table() else { continue };
        let Some(kind) = table.get("kind").and_then(toml::Value::as_str) else { continue };
        for key in path_keys(kind) {
            if let Some(value) = table.get(key).and_then(toml::Value::as_str) {
                out.push((name.clone(), key.to_string(), dir.join(value)));
            }
        }
        if let Some(items) = table.get("command").and_then(toml::Value::as_array) {
            for item in items.iter().filter_map(toml::Value::as_str) {
                let path = dir.join(item);
                if !item.is_empty() && path.is_file() {
                    out.push((name.clone(), "command".to_string(), path));
                }
            }
        }
    }
    out
}

/// What [`verify`] found of one input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileCheck {
    /// Unchanged.
    Same(TrailFile),
    /// Its hash (or size) differs: the recorded entry and the hash now.
    Changed(TrailFile, String),
    /// It cannot be read any more.
    Missing(TrailFile, String),
}

impl FileCheck {
    /// Whether the file is still the one audited.
    pub fn ok(&self) -> bool {
        matches!(self, FileCheck::Same(_))
    }
}

impl std::fmt::Display for FileCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = |t: &TrailFile| if t.stage.is_empty() { t.key.clone() } else { format!("{}.{}", t.stage, t.key) };
        match self {
            FileCheck::Same(t) => write!(f, "ok       {} ({}) sha256 {}", t.path.display(), at(t), t.sha256),
            FileCheck::Changed(t, now) => {
                write!(f, "CHANGED  {} ({}): sha256 was {}, is now {now}", t.path.display(), at(t), t.sha256)
            }
            FileCheck::Missing(t, why) => write!(f, "MISSING  {} ({}): {why}", t.path.display(), at(t)),
        }
    }
}

/// Why a run's folder cannot be verified.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// `summary.json` cannot be read or parsed.
    #[error("{path}: {message}")]
    Summary {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// How many folders up from a run folder [`verify`] looks for the pipeline file of a moved bundle.
const BUNDLE_DEPTH: usize = 6;

/// Recompute the hash of every input recorded in `out_dir/summary.json`'s trail. Each input is
/// looked for, relative to the pipeline file's folder as recorded, in `inputs` when given (where
/// the inputs are now); else in the nearest folder above the run folder that holds the pipeline
/// file under its recorded name (a bundle moved whole: the pipeline, its inputs and the run folder
/// inside it; one holding the same file is preferred), then at its absolute path as recorded.
/// Each check names the path read.
pub fn verify(out_dir: &Path, inputs: Option<&Path>) -> Result<Vec<FileCheck>, VerifyError> {
    let trail = read_trail(out_dir)?;
    // The pipeline file's folder now: given, or the nearest folder above the run folder holding
    // the pipeline file (the same file first, else one of its name).
    let moved_base = || -> Option<PathBuf> {
        let pipeline = trail.inputs.iter().find(|t| t.stage.is_empty() && t.key == "pipeline")?;
        let name = pipeline.relative.as_ref()?;
        let start = std::path::absolute(out_dir).ok()?;
        let above: Vec<&Path> = start.ancestors().skip(1).take(BUNDLE_DEPTH).collect();
        let same = |dir: &Path| sha256_file(&dir.join(name)).is_ok_and(|(hash, _)| hash == pipeline.sha256);
        let found = above.iter().find(|d| same(d)).or_else(|| above.iter().find(|d| d.join(name).is_file()));
        found.map(|d| d.to_path_buf())
    };
    let base = inputs.map(Path::to_path_buf).or_else(moved_base);
    Ok(trail
        .inputs
        .into_iter()
        .map(|mut t| {
            let laid_out = match (&base, &t.relative) {
                (Some(b), Some(r)) => Some(b.join(r)),
                (Some(b), None) if inputs.is_some() => t.path.file_name().map(|n| b.join(n)),
                _ => None,
            };
            let at = match laid_out {
                Some(p) if inputs.is_some() || p.is_file() => p,
                _ => t.path.clone(),
            };
            t.path = at;
            match sha256_file(&t.path) {
                Ok((hash, _)) if hash == t.sha256 => FileCheck::Same(t),
                Ok((hash, _)) => FileCheck::Changed(t, hash),
                Err(e) => {
                    let hint = if inputs.is_some() { "" } else { " (a run folder moved apart from its inputs: `fairpipe verify-run OUT --inputs DIR`, DIR holding the pipeline file's folder's files)" };
                    FileCheck::Missing(t, format!("{e}{hint}"))
                }
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha256_and_one_changed_byte_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.csv");
        std::fs::write(&file, b"hello world").unwrap();
        // The standard's test vector.
        assert_eq!(sha256_file(&file).unwrap(), ("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9".into(), 11));
        let trail = Trail { inputs: vec![entry("data", "path", &file, None).unwrap()], ..Trail::default() };
        std::fs::write(dir.path().join("summary.json"), serde_json::json!({ "trail": trail }).to_string()).unwrap();
        assert!(verify(dir.path(), None).unwrap().iter().all(FileCheck::ok));
        std::fs::write(&file, b"hello worle").unwrap();
        let checks = verify(dir.path(), None).unwrap();
        assert!(matches!(&checks[0], FileCheck::Changed(t, _) if t.path.ends_with("a.csv")), "{checks:?}");
        assert!(checks[0].to_string().starts_with("CHANGED") && checks[0].to_string().contains("data.path"));
    }

    #[test]
    fn path_keys_and_command_files_are_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("m.py"), "").unwrap();
        let text = "[stages.d]\nkind = \"load\"\npath = \"x.csv\"\n[stages.m]\nkind = \"load_model\"\ncommand = [\"python3\", \"m.py\"]\n";
        let found = named_files(text, dir.path(), |k| if k == "load" { vec!["path", "codes"] } else { vec![] });
        assert_eq!(
            found,
            vec![("d".into(), "path".into(), dir.path().join("x.csv")), ("m".into(), "command".into(), dir.path().join("m.py"))]
        );
    }
}
