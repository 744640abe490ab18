//! What describes a stage kind: its name, documentation, inputs, keys and how it is configured.
//! Both the registry (which lists the kinds) and every stage file (which describes its own kind)
//! import these types; neither imports the other's internals.

use std::ops::Range;
use std::path::PathBuf;

use crate::stage::problems::Problems;
use crate::stage::summary::StageSummary;
use crate::stage::{ArtifactKind, Stage};
use fairpipe_data::toml_spans::{Sp, Val};

/// One key of a stage kind's configuration (its typed config struct has a field of this name).
#[derive(Debug, Clone, Copy)]
pub struct KeyDoc {
    /// TOML key.
    pub name: &'static str,
    /// Expected type.
    pub ty: &'static str,
    /// Default value ("required" when there is none).
    pub default: &'static str,
    /// What it does.
    pub doc: &'static str,
    /// The values of the kind's tag key (e.g. `algorithm`) under which the key applies; empty when
    /// it applies to every variant.
    pub only: &'static [&'static str],
}

impl KeyDoc {
    /// A key that applies to every variant.
    pub const fn new(name: &'static str, ty: &'static str, default: &'static str, doc: &'static str) -> Self {
        KeyDoc { name, ty, default, doc, only: &[] }
    }

    /// The same key, applying only under the tag values `only`.
    pub const fn only(self, only: &'static [&'static str]) -> Self {
        KeyDoc { only, ..self }
    }
}

/// One input of a stage kind: a TOML key whose value names another stage.
#[derive(Debug, Clone, Copy)]
pub struct InputDoc {
    /// TOML key, e.g. `data` or `model`.
    pub role: &'static str,
    /// Artifact kinds the input accepts.
    pub accepts: &'static [ArtifactKind],
    /// Whether the input must be connected.
    pub required: bool,
    /// What it is for.
    pub doc: &'static str,
}

/// One stage's table as read from the pipeline file: its name, its keys (without `kind` and the
/// inputs) and where it is.
pub struct StageTable<'a> {
    /// The stage's name.
    pub name: &'a str,
    /// Span of the stage's name in its table header, for problems about the stage as a whole.
    pub header: Range<usize>,
    /// The configuration keys, in file order.
    pub entries: Vec<&'a (Sp<String>, Sp<Val>)>,
}

/// What configuring a stage may use besides its table.
#[derive(Clone)]
pub struct StageEnv {
    /// The folder relative paths resolve against (the pipeline file's).
    pub dir: PathBuf,
    /// The stage's seed.
    pub seed: u64,
    /// Folders searched for plugin libraries before `FAIRPIPE_PLUGIN_PATH` (`[pipeline]
    /// plugin_path`, resolved against the pipeline file's folder).
    pub plugin_path: Vec<PathBuf>,
    /// Every stage kind the runner knows (its registry), so that an unknown key can be named as
    /// another kind's; the contract never imports the runner.
    pub kinds: &'static [StageKind],
}

impl std::fmt::Debug for StageEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageEnv")
            .field("dir", &self.dir)
            .field("seed", &self.seed)
            .field("plugin_path", &self.plugin_path)
            .field("kinds", &self.kinds.iter().map(|k| k.name).collect::<Vec<_>>())
            .finish()
    }
}

/// Reads, validates and instantiates one stage from its table, recording problems; `None` when
/// the table has problems.
pub type ConfigureFn = fn(&'static StageKind, &StageTable<'_>, &StageEnv, &mut Problems) -> Option<Box<dyn Stage>>;

/// Lists a config type's fields as `(variant, field)` pairs (variant `None` for keys of every
/// variant), for the test that keeps [`StageKind::keys`] and the config struct in step.
pub type FieldsFn = fn() -> Vec<(Option<&'static str>, &'static str)>;

/// Reads a stage table into the kind's typed config (serde alone, no checks) and writes it out
/// with `Debug`; `None` when the table does not read. The test that holds every documented default
/// ([`KeyDoc::default`]) to the config's real one compares a table without the key with a table
/// setting it to the documented value.
pub type ReadFn = fn(&StageTable<'_>) -> Option<String>;

/// The figures a stage kind writes into its entry of `summary.json`, declared in the kind's own
/// file: the gate checks a condition's names against them at validate, and a sweep compares its
/// combinations on the `compared` ones.
#[derive(Clone, Copy)]
pub struct FigureDoc {
    /// The top-level names its figures struct serializes (a flattened struct's included); a test
    /// holds them against the struct.
    pub names: &'static [&'static str],
    /// Whether a plugin adds figures of its own (so a name outside `names` may exist).
    pub open: bool,
    /// The figures a sweep's comparison has a column of (`STAGE.FIGURE`, `--best`).
    pub compared: &'static [&'static str],
    /// Reads the `compared` figures, in that order, from one of the kind's entries (`null` for
    /// one the entry lacks).
    pub compare: fn(&StageSummary) -> Vec<serde_json::Value>,
}

impl FigureDoc {
    /// The figures `names` of a kind that a sweep does not compare.
    pub const fn named(names: &'static [&'static str], open: bool) -> FigureDoc {
        FigureDoc { names, open, compared: &[], compare: compare_none }
    }
}

/// The `compare` of a kind that a sweep does not compare.
fn compare_none(_: &StageSummary) -> Vec<serde_json::Value> {
    Vec::new()
}

/// The `compared` figures of an entry read as `F` by `read`; `n` nulls when its figures do not
/// read as `F`.
pub fn compare_as<F: crate::stage::summary::Figures + serde::de::DeserializeOwned + Clone>(
    entry: &StageSummary,
    n: usize,
    read: impl Fn(&F) -> Vec<serde_json::Value>,
) -> Vec<serde_json::Value> {
    entry.figures::<F>().map(|f| read(&f)).unwrap_or_else(|_| vec![serde_json::Value::Null; n])
}

/// A stage kind.
#[derive(Clone, Copy)]
pub struct StageKind {
    /// The `kind = "..."` name (a snake_case verb or noun).
    pub name: &'static str,
    /// One-paragraph description.
    pub doc: &'static str,
    /// Inputs by role.
    pub inputs: &'static [InputDoc],
    /// What it produces.
    pub output: ArtifactKind,
    /// The keys of its typed config, documented.
    pub keys: &'static [KeyDoc],
    /// The key whose value picks the config's variant (`algorithm`, `strategy`), if any.
    pub tag: Option<&'static str>,
    /// A TOML example.
    pub example: &'static str,
    /// Reads its config from a stage table and builds the stage.
    pub configure: ConfigureFn,
    /// Its config's fields.
    pub fields: FieldsFn,
    /// Its config as read from a table, written out.
    pub read: ReadFn,
    /// The figures it writes into `summary.json`.
    pub figures: FigureDoc,
}

impl StageKind {
    /// Every key the kind accepts: inputs, then configuration keys.
    pub fn all_keys(&self) -> Vec<&'static str> {
        self.inputs.iter().map(|i| i.role).chain(self.keys.iter().map(|p| p.name)).collect()
    }

    /// The documentation of key `name`.
    pub fn key(&self, name: &str) -> Option<&'static KeyDoc> {
        self.keys.iter().find(|k| k.name == name)
    }

    /// The kind's entry in the stage reference (`fairpipe list`, README).
    pub fn reference(&self) -> String {
        use std::fmt::Write as _;
        let mut s = format!("{}\n  {}\n", self.name, self.doc);
        for input in self.inputs {
            let accepts: Vec<&str> = input.accepts.iter().map(|a| a.name()).collect();
            let _ = writeln!(
                s,
                "  input  {:<16} {} ({}){}",
                input.role,
                input.doc,
                accepts.join(" or "),
                if input.required { "" } else { ", optional" }
            );
        }
        for key in self.keys {
            let _ = writeln!(s, "  param  {:<16} {:<22} default {:<12} {}", key.name, key.ty, key.default, key.doc);
        }
        s
    }
}
