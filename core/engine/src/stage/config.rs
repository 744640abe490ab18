//! Phase two of reading a pipeline: each stage's typed config, read by serde from the spanned
//! values of phase one through [`super::config_de`], checked further by
//! [`StageConfig::validate`] through [`Checks`] (problems located by key), then instantiated.

use std::fmt::Display;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::error::Result;
use crate::stage::config_de::{read_all, DeError, DeProblem};
pub use crate::stage::config_fields::fields_of;
use crate::stage::kind::{StageEnv, StageKind, StageTable};
use crate::stage::problems::Problems;
use crate::stage::Stage;
use crate::suggest::hint;
use fairpipe_data::toml_spans::{Sp, Val};

/// Checks on a stage's config values beyond their types, each problem located at its key.
pub struct Checks<'p, 'a> {
    problems: &'p mut Problems,
    table: &'p StageTable<'a>,
    env: &'p StageEnv,
}

impl<'p, 'a> Checks<'p, 'a> {
    /// Checks recording into `problems`, locating keys in `table`, resolving paths as `env` says.
    pub fn new(problems: &'p mut Problems, table: &'p StageTable<'a>, env: &'p StageEnv) -> Self {
        Checks { problems, table, env }
    }

    /// The folder relative paths resolve against.
    pub fn dir(&self) -> &Path {
        &self.env.dir
    }

    /// The pipeline's own plugin folders (`[pipeline] plugin_path`).
    pub fn plugin_path(&self) -> &[std::path::PathBuf] {
        &self.env.plugin_path
    }

    /// The stage's name.
    pub fn stage(&self) -> &str {
        self.table.name
    }

    /// Span of `key`'s value, or of the stage header when the key is absent.
    pub fn span(&self, key: &str) -> Range<usize> {
        self.table.entries.iter().find(|(k, _)| k.v == key).map(|(_, v)| v.span.clone()).unwrap_or(self.table.header.clone())
    }

    /// Span of item `index` of list `key` (a single value counts as a one-item list).
    pub fn item_span(&self, key: &str, index: usize) -> Range<usize> {
        match self.table.entries.iter().find(|(k, _)| k.v == key).map(|(_, v)| v) {
            Some(Sp { v: Val::Array(items), span }) => items.get(index).map(|i| i.span.clone()).unwrap_or(span.clone()),
            Some(v) => v.span.clone(),
            None => self.table.header.clone(),
        }
    }

    /// Span of key `key` itself in nested table `table` (e.g. a column override), or of `table`.
    pub fn nested_key_span(&self, table: &str, key: &str) -> Range<usize> {
        match self.table.entries.iter().find(|(k, _)| k.v == table).map(|(_, v)| v) {
            Some(Sp { v: Val::Table(entries), span }) => {
                entries.iter().find(|(k, _)| k.v == key).map(|(k, _)| k.span.clone()).unwrap_or(span.clone())
            }
            Some(v) => v.span.clone(),
            None => self.table.header.clone(),
        }
    }

    /// Whether `key` is written in the table.
    pub fn has(&self, key: &str) -> bool {
        self.table.entries.iter().any(|(k, _)| k.v == key)
    }

    /// Record `message` (prefixed with the stage) at `span`.
    pub fn at(&mut self, span: &Range<usize>, message: impl Display) {
        let text = format!("stage `{}`: {message}", self.table.name);
        self.problems.at(span, text);
    }

    /// Record `message` at `key`'s value.
    pub fn problem(&mut self, key: &str, message: impl Display) {
        let span = self.span(key);
        self.at(&span, message);
    }

    /// A required key the config could not do without.
    pub fn missing(&mut self, key: &str, what: &str) {
        let span = self.table.header.clone();
        self.at(&span, format!("missing `{key}` ({what})"));
    }

    /// `value` of `key` must be at least `min`.
    pub fn at_least(&mut self, key: &str, value: usize, min: usize) {
        if value < min {
            self.problem(key, format!("`{key}` must be at least {min}, found {value}"));
        }
    }

    /// `value` of `key` must be at most `max` (a documented limit, [`crate::limits`]).
    pub fn at_most(&mut self, key: &str, value: u128, max: u128) {
        if value > max {
            self.problem(key, format!("`{key}` must be at most {max}, found {value} (the limits are listed in docs/cli.md)"));
        }
    }

    /// `value` of `key` must lie in `[min, max]`.
    pub fn within(&mut self, key: &str, value: f64, min: f64, max: f64) {
        // NaN is outside every range.
        if !(min..=max).contains(&value) {
            self.problem(key, format!("`{key}` must lie in [{min}, {max}], found {value}"));
        }
    }

    /// `path` of `key`, resolved against the pipeline's folder; a problem when it does not exist
    /// or is a folder.
    pub fn existing_file(&mut self, key: &str, path: &Path) -> PathBuf {
        let resolved = self.env.dir.join(path);
        if !resolved.exists() {
            self.problem(key, format!("`{key}`: no such file {} (paths are relative to the pipeline file)", resolved.display()));
        } else if resolved.is_dir() {
            self.problem(key, format!("`{key}`: {} is a folder, not a file", resolved.display()));
        }
        resolved
    }

    /// `path` of `key`, resolved against the pipeline's folder, as a file the run will write: not
    /// a folder, and inside a folder that exists or can be created (no file in the way).
    pub fn writable_file(&mut self, key: &str, path: &Path) -> PathBuf {
        let resolved = self.env.dir.join(path);
        if resolved.is_dir() {
            self.problem(key, format!("`{key}`: {} is a folder; give a file name", resolved.display()));
            return resolved;
        }
        let mut ancestor = resolved.parent();
        while let Some(a) = ancestor {
            if a.as_os_str().is_empty() {
                break;
            }
            if a.exists() {
                if !a.is_dir() {
                    self.problem(key, format!("`{key}`: {} is a file, so {} cannot be written", a.display(), resolved.display()));
                } else if a.metadata().map(|m| m.permissions().readonly()).unwrap_or(false) {
                    self.problem(key, format!("`{key}`: the folder {} is read-only", a.display()));
                }
                break;
            }
            ancestor = a.parent();
        }
        resolved
    }
}

/// One stage kind's typed config: read by serde from the stage's table, checked, then turned into
/// the stage that runs.
pub trait StageConfig: DeserializeOwned {
    /// What validation learned that building the stage needs, handed to
    /// [`instantiate`](Self::instantiate) so nothing is read twice: an ONNX graph's facts, a model
    /// server found ready with its metadata. `()` for a kind that learns nothing; the default
    /// value means "not validated" (a stage built without validation finds it out itself).
    type Facts: Default;

    /// The kind this is the config of.
    fn kind() -> &'static StageKind;

    /// Check what needs no model run (ranges, files, columns, plugins, a server's readiness),
    /// recording problems, and return what was learned on the way.
    fn validate(&self, _checks: &mut Checks<'_, '_>) -> Self::Facts {
        Self::Facts::default()
    }

    /// Build the stage from what [`validate`](Self::validate) learned; called only on a config
    /// it found no problem in.
    fn instantiate(self, facts: Self::Facts, env: &StageEnv) -> Result<Box<dyn Stage>>;
}

/// Validate `config` (problems recorded in `checks`) and, when it adds none, build its stage from
/// what validation learned: `None` when validation found a problem.
pub fn validate_and_build<C: StageConfig>(config: C, mut checks: Checks<'_, '_>) -> Option<Result<Box<dyn Stage>>> {
    let before = checks.problems.len();
    let facts = config.validate(&mut checks);
    let env = checks.env;
    (checks.problems.len() == before).then(|| config.instantiate(facts, env))
}

/// " (a key of `load_text`)" when up to three other stage kinds take `key` (a text column given to
/// `load`, say), else "".
fn kinds_with_key(all: &[StageKind], key: &str) -> String {
    let kinds: Vec<String> = all.iter().filter(|k| k.all_keys().contains(&key)).map(|k| format!("`{}`", k.name)).collect();
    if kinds.is_empty() || kinds.len() > 3 {
        return String::new();
    }
    format!(" (a key of {})", kinds.join(" and "))
}

/// Render a read error of stage `table` of kind `kind` into a located problem.
fn report(kind: &StageKind, kinds: &[StageKind], table: &StageTable<'_>, e: &DeError, problems: &mut Problems) {
    let span = e.span.clone().unwrap_or(table.header.clone());
    let message = match (&e.problem, e.variant.as_deref()) {
        (DeProblem::UnknownKey { key, .. }, variant) if !e.key.as_deref().unwrap_or("").contains('.') => {
            match (kind.key(key), variant, kind.tag) {
                (Some(doc), Some((_, value)), Some(tag)) if !doc.only.is_empty() => format!(
                    "key `{key}` belongs to {tag} = {}, but this stage has {tag} = \"{value}\"",
                    doc.only.iter().map(|o| format!("\"{o}\"")).collect::<Vec<_>>().join(" or ")
                ),
                _ => {
                    let accepted = kind.all_keys();
                    let mut near = hint(key, &accepted);
                    if near.is_empty() {
                        near = kinds_with_key(kinds, key);
                    }
                    format!("unknown key `{key}`{near}; accepted keys: {}", accepted.join(", "))
                }
            }
        }
        (DeProblem::MissingKey(key), _) => match kind.key(key) {
            Some(doc) => format!("missing `{key}` ({})", doc.doc),
            None => format!("missing `{key}`"),
        },
        _ => e.describe(),
    };
    problems.at(&span, format!("stage `{}`: {message}", table.name));
}

/// The [`StageKind::read`] of a kind whose config is `C`.
pub fn read_debug<C: StageConfig + std::fmt::Debug>(table: &StageTable<'_>) -> Option<String> {
    let (config, _) = read_all::<C>(&table.entries, table.header.clone());
    config.map(|c| format!("{c:?}"))
}

/// Read stage `table`'s config of type `C`, every read error reported to `problems` (located in
/// the file); `None` when a key could not be read. Nothing is validated: the caller may change
/// the config first (give a `load` stage a frame) and then [`StageConfig::validate`] it.
pub fn read_config<C: StageConfig>(table: &StageTable<'_>, env: &StageEnv, problems: &mut Problems) -> Option<C> {
    let (config, errors) = read_all::<C>(&table.entries, table.header.clone());
    for e in &errors {
        report(C::kind(), env.kinds, table, e, problems);
    }
    config.filter(|_| errors.is_empty())
}

/// The [`StageKind::configure`] of a kind whose config is `C`.
pub fn configure<C: StageConfig>(
    kind: &'static StageKind,
    table: &StageTable<'_>,
    env: &StageEnv,
    problems: &mut Problems,
) -> Option<Box<dyn Stage>> {
    let (config, errors) = read_all::<C>(&table.entries, table.header.clone());
    for e in &errors {
        report(kind, env.kinds, table, e, problems);
    }
    // Check what could be read even when some keys could not, so every problem shows at once.
    let config = config?;
    let before = problems.len();
    let facts = config.validate(&mut Checks::new(problems, table, env));
    if problems.len() > before || !errors.is_empty() {
        return None;
    }
    match config.instantiate(facts, env) {
        Ok(stage) => Some(stage),
        Err(e) => {
            problems.at(&table.header, format!("stage `{}`: {e}", table.name));
            None
        }
    }
}
