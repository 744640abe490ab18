//! What describes a stage kind: its name, documentation, inputs, keys and how it is configured.
//! Both the registry (which lists the kinds) and every stage file (which describes its own kind)
//! import these types; neither imports the other's internals.

use std::ops::Range;
use std::path::PathBuf;

use crate::stage::meaning::{Meaning, StageFigures};
use crate::stage::problems::Problems;
use crate::stage::summary::StageSummary;
use crate::stage::{ArtifactKind, Stage};
use fairpipe_data::toml_spans::{Sp, Val};

/// One key of a stage kind's configuration (its typed config struct has a field of this name),
/// as its config's `#[derive(StageKeys)]` describes it ([`crate::stage::keys`], the
/// `fairpipe-keys` crate).
pub use fairpipe_keys::KeyDoc;

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
    /// Whether the pipeline has a model stage (a stage whose output is a model): without one no
    /// counterpart of a row is ever made, so what only matters to counterparts (a load's proxy
    /// warnings) is not said.
    pub audits_a_model: bool,
}

/// Whether stages of `kinds` include a model stage ([`StageEnv::audits_a_model`]).
pub fn audits_a_model<'a>(mut kinds: impl Iterator<Item = &'a StageKind>) -> bool {
    kinds.any(|k| k.output == ArtifactKind::Model)
}

impl std::fmt::Debug for StageEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageEnv")
            .field("dir", &self.dir)
            .field("seed", &self.seed)
            .field("plugin_path", &self.plugin_path)
            .field("kinds", &self.kinds.iter().map(|k| k.name).collect::<Vec<_>>())
            .field("audits_a_model", &self.audits_a_model)
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

/// What a figures struct writes (its names and their shapes, `#[derive(FigureNames)]`), from the
/// data floor (`fairpipe_data::figures`), where the models crate's figures derive it too.
pub use fairpipe_data::figures::{FigureName, FigureNames, Shape};

/// The figures a stage kind writes into its entry of `summary.json`, read from the kind's figures
/// struct (its `#[derive(FigureNames)]`): the gate checks a condition's names against them at
/// validate, and a sweep compares its combinations on the `compared` ones.
#[derive(Clone, Copy)]
pub struct FigureDoc {
    /// The top-level names its figures struct serializes (a flattened struct's included), with
    /// their shapes: the struct's [`FigureNames::figure_names`].
    pub names: fn() -> Vec<FigureName>,
    /// Whether a plugin adds figures of its own (so a name outside `names` may exist): the
    /// struct's [`FigureNames::OPEN`].
    pub open: bool,
    /// The figures a sweep's comparison has a column of (`STAGE.FIGURE`, `--best`).
    pub compared: &'static [&'static str],
    /// Reads the `compared` figures, in that order, from one of the kind's entries (`null` for
    /// one the entry lacks).
    pub compare: fn(&StageSummary) -> Vec<serde_json::Value>,
    /// What the figures mean to the verdict: the struct's [`StageFigures`].
    pub meaning: Meaning,
    /// The figures struct's type, so that a reader asks for a kind's stages by the type of their
    /// figures (the report's `stages.of::<VerifyFigures>()`), not by the kind's name.
    pub struct_type: fn() -> std::any::TypeId,
}

impl FigureDoc {
    /// The figures of a kind whose figures struct is `F`, which a sweep does not compare (set
    /// `compared` and `compare` over this for one it does).
    pub const fn of<F: FigureNames + StageFigures>() -> FigureDoc {
        FigureDoc {
            names: F::figure_names,
            open: F::OPEN,
            compared: &[],
            compare: compare_none,
            meaning: Meaning::of::<F>(),
            struct_type: std::any::TypeId::of::<F>,
        }
    }

    /// The shape of the kind's top-level figure `name`; `None` when its struct writes no such name.
    pub fn shape(&self, name: &str) -> Option<Shape> {
        (self.names)().into_iter().find(|f| f.name == name).map(|f| f.shape)
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

/// What `fairpipe llm plan` (the requests of an LLM audit written ahead, for a provider's batch
/// interface) does with a stage of a kind, and whether a run from a responses file can hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfflinePlan {
    /// It runs in the plan: it asks the model nothing, or only about rows fixed before the run
    /// (the data's, or drawn with the seed).
    Runs,
    /// It searches adaptively: its questions depend on the answers, so no plan can list them and
    /// a run from a responses file is refused.
    Adaptive,
    /// The plan leaves it out.
    LeftOut,
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
    /// The keys of its typed config, documented: the config's `StageKeys::keys`.
    pub keys: fn() -> &'static [KeyDoc],
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
    /// What an LLM audit's offline plan does with it.
    pub offline_plan: OfflinePlan,
    /// The figures it writes into `summary.json`.
    pub figures: FigureDoc,
}

impl StageKind {
    /// Every key the kind accepts: inputs, then configuration keys.
    pub fn all_keys(&self) -> Vec<&'static str> {
        self.inputs.iter().map(|i| i.role).chain((self.keys)().iter().map(|p| p.name)).collect()
    }

    /// The documentation of key `name`.
    pub fn key(&self, name: &str) -> Option<&'static KeyDoc> {
        (self.keys)().iter().find(|k| k.name == name)
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
        s.push_str(&fairpipe_keys::reference((self.keys)()));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::{FigureName, FigureNames, Shape};
    use serde::Serialize;
    use serde_json::{Map, Value};
    use std::collections::BTreeMap;

    #[derive(Serialize, FigureNames)]
    struct Inner {
        #[serde(rename = "inner_count")]
        count: usize,
        tags: Vec<String>,
    }

    #[derive(Serialize, FigureNames)]
    struct Example {
        rate: f64,
        #[serde(rename = "label_text")]
        label: Option<String>,
        #[serde(skip)]
        cache: u64,
        #[serde(skip_serializing, default)]
        hidden: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bounds: Option<[f64; 2]>,
        table: BTreeMap<String, f64>,
        #[serde(flatten)]
        inner: Inner,
        #[serde(flatten)]
        extra: Map<String, Value>,
    }

    #[derive(Serialize, FigureNames)]
    struct Closed {
        ok: bool,
        #[serde(flatten)]
        inner: Inner,
    }

    #[derive(Serialize, FigureNames)]
    struct Nested {
        #[serde(flatten)]
        example: Example,
    }

    fn names<F: FigureNames>() -> Vec<(&'static str, Shape)> {
        F::figure_names().into_iter().map(|FigureName { name, shape }| (name, shape)).collect()
    }

    fn open<F: FigureNames>() -> bool {
        F::OPEN
    }

    /// The derive follows serde's `rename`, `skip`, `skip_serializing` and `flatten` (a struct's
    /// names in its place, a map opening the kind), and the names are those serde writes.
    #[test]
    fn the_derive_gives_the_names_serde_writes_with_their_shapes() {
        use Shape::*;
        let expected =
            vec![("rate", Number), ("label_text", Text), ("bounds", List), ("table", Object), ("inner_count", Number), ("tags", List)];
        assert_eq!(names::<Example>(), expected);
        assert!(open::<Example>());
        assert_eq!(names::<Closed>(), vec![("ok", Number), ("inner_count", Number), ("tags", List)]);
        assert!(!open::<Closed>() && !open::<Inner>());
        assert_eq!(names::<Nested>(), expected);
        assert!(open::<Nested>(), "a flattened struct that is open opens its owner");

        // Against serde itself: the keys it writes (the flattened map empty) are the names, and
        // each value has the shape named.
        let example = Example {
            rate: 0.5,
            label: Some("x".into()),
            cache: 1,
            hidden: "h".into(),
            bounds: Some([0.0, 1.0]),
            table: BTreeMap::new(),
            inner: Inner { count: 2, tags: vec![] },
            extra: Map::new(),
        };
        let Value::Object(written) = serde_json::to_value(&example).unwrap() else { panic!("an object") };
        assert!(example.cache == 1 && example.hidden == "h", "kept in the struct, not written");
        let mut keys: Vec<&str> = written.keys().map(String::as_str).collect();
        let mut named: Vec<&str> = expected.iter().map(|(n, _)| *n).collect();
        keys.sort_unstable();
        named.sort_unstable();
        assert_eq!(keys, named);
        for (name, shape) in &expected {
            let seen = match &written[*name] {
                Value::Number(_) | Value::Bool(_) => Number,
                Value::String(_) => Text,
                Value::Array(_) => List,
                _ => Object,
            };
            assert_eq!(seen, *shape, "{name}");
        }
    }
}
