//! The contract every stage implements, below the runner: the stage kinds and their documented
//! keys ([`kind`]), the typed config and its located problems ([`config`], [`config_de`],
//! [`problems`]; the spanned values they read come from `fairpipe_data::toml_spans`), what flows between stages ([`artifact`]) and the [`Stage`] trait
//! with its context. A stage author works here and in `stages/`; the runner (`crate::run`) calls
//! the stages and is never imported from here.

pub mod artifact;
pub mod config;
pub mod config_de;
pub mod config_fields;
pub mod keys;
pub mod kind;
pub mod meaning;
pub mod problems;
pub mod summary;
pub mod verdict;

use std::collections::BTreeMap;
use std::sync::Arc;

use indicatif::ProgressBar;
use serde_json::{Map, Value};

pub use artifact::{
    Artifact, ArtifactKind, CasesArtifact, GroupMetricRow, GroupMetricsArtifact, GroupScoreRow, GroupsArtifact, ModelArtifact,
    SeedsArtifact, TextGroupsArtifact, TextModelArtifact, TextsArtifact,
};

use crate::data::Dataset;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::models::llm::offline::AnswerSource;
use crate::output::Table;
/// The serde helper stage figures use for numbers written as `null`.
pub use crate::serde_nan::nan_if_null;

/// The artifacts a stage reads, by role.
#[derive(Debug, Default)]
pub struct Inputs {
    /// Role → artifact.
    pub by_role: BTreeMap<String, Artifact>,
}

impl Inputs {
    fn get(&self, role: &str) -> Result<&Artifact> {
        self.by_role.get(role).ok_or_else(|| Error::Internal(format!("input `{role}` is not connected")))
    }

    /// The dataset connected as `role`.
    pub fn dataset(&self, role: &str) -> Result<Arc<Dataset>> {
        match self.get(role)? {
            Artifact::Dataset(d) => Ok(d.clone()),
            other => Err(Error::Internal(format!("input `{role}` is {}, not a dataset", other.kind().name()))),
        }
    }

    /// The model connected as `role`.
    pub fn model(&self, role: &str) -> Result<Arc<ModelArtifact>> {
        match self.get(role)? {
            Artifact::Model(m) => Ok(m.clone()),
            other => Err(Error::Internal(format!("input `{role}` is {}, not a model", other.kind().name()))),
        }
    }

    /// The cases connected as `role`, if any.
    pub fn optional_cases(&self, role: &str) -> Result<Option<Arc<CasesArtifact>>> {
        match self.by_role.get(role) {
            None => Ok(None),
            Some(Artifact::Cases(c)) => Ok(Some(c.clone())),
            Some(other) => Err(Error::Internal(format!("input `{role}` is {}, not cases", other.kind().name()))),
        }
    }

    /// The texts connected as `role`, if any.
    pub fn optional_texts(&self, role: &str) -> Result<Option<Arc<TextsArtifact>>> {
        match self.by_role.get(role) {
            None => Ok(None),
            Some(Artifact::Texts(t)) => Ok(Some(t.clone())),
            Some(other) => Err(Error::Internal(format!("input `{role}` is {}, not texts", other.kind().name()))),
        }
    }

    /// The group scores connected as `role`, if any.
    pub fn optional_groups(&self, role: &str) -> Result<Option<Arc<GroupsArtifact>>> {
        match self.by_role.get(role) {
            None => Ok(None),
            Some(Artifact::Groups(g)) => Ok(Some(g.clone())),
            Some(other) => Err(Error::Internal(format!("input `{role}` is {}, not group scores", other.kind().name()))),
        }
    }

    /// The seeds connected as `role`, if connected.
    pub fn seeds(&self, role: &str) -> Result<Option<Arc<SeedsArtifact>>> {
        match self.by_role.get(role) {
            None => Ok(None),
            Some(Artifact::Seeds(s)) => Ok(Some(s.clone())),
            Some(other) => Err(Error::Internal(format!("input `{role}` is {}, not seeds", other.kind().name()))),
        }
    }
}

impl Inputs {
    /// The texts connected as `role`.
    pub fn texts(&self, role: &str) -> Result<Arc<TextsArtifact>> {
        match self.get(role)? {
            Artifact::Texts(t) => Ok(t.clone()),
            other => Err(Error::Internal(format!("input `{role}` is {}, not texts", other.kind().name()))),
        }
    }

    /// The text model connected as `role`.
    pub fn text_model(&self, role: &str) -> Result<Arc<TextModelArtifact>> {
        match self.get(role)? {
            Artifact::TextModel(m) => Ok(m.clone()),
            other => Err(Error::Internal(format!("input `{role}` is {}, not a text model", other.kind().name()))),
        }
    }

    /// The text group scores connected as `role`.
    pub fn text_groups(&self, role: &str) -> Result<Arc<TextGroupsArtifact>> {
        match self.get(role)? {
            Artifact::TextGroups(g) => Ok(g.clone()),
            other => Err(Error::Internal(format!("input `{role}` is {}, not text group scores", other.kind().name()))),
        }
    }

    /// The cases connected as `role`.
    pub fn cases(&self, role: &str) -> Result<Arc<CasesArtifact>> {
        match self.get(role)? {
            Artifact::Cases(c) => Ok(c.clone()),
            other => Err(Error::Internal(format!("input `{role}` is {}, not cases", other.kind().name()))),
        }
    }
}

/// Per-run facts a stage may use.
pub struct StageContext {
    /// The stage's name.
    pub name: String,
    /// The stage's own seed, derived from the pipeline seed and the stage name.
    pub seed: u64,
    /// Progress display (hidden when stdout is not a terminal).
    pub progress: ProgressBar,
    /// Files the stage asks to be written (path, contents) — written with the results, atomically,
    /// only when the whole run succeeds.
    pub files: std::sync::Mutex<Vec<(std::path::PathBuf, Vec<u8>)>>,
    /// What the stage warned of (printed at once, and kept for `summary.json`).
    pub warnings: crate::warnings::Warnings,
    /// Where a language model opened by the stage answers from: the run's
    /// [`crate::run::Pipeline::llm_answers`].
    pub llm_answers: AnswerSource,
}

impl StageContext {
    /// The context of stage `name` with its `seed`, no progress display, no files asked for, no
    /// warnings yet and language models answered live (for running a stage from code).
    pub fn new(name: &str, seed: u64) -> Self {
        StageContext {
            name: name.to_string(),
            seed,
            progress: ProgressBar::hidden(),
            files: Default::default(),
            warnings: crate::warnings::Warnings::with_prefix(format!("stage `{name}`: ")),
            llm_answers: AnswerSource::Live,
        }
    }

    /// State a warning: printed on standard error now, and in `summary.json` with the stage.
    pub fn warn(&self, message: impl Into<String>) {
        self.warnings.warn(message);
    }

    /// Ask for `contents` to be written to `path` when the run succeeds.
    pub fn write_later(&self, path: std::path::PathBuf, contents: Vec<u8>) {
        self.files.lock().unwrap_or_else(|e| e.into_inner()).push((path, contents));
    }
}

/// What a stage returns.
pub struct StageOutput {
    /// Handed to later stages.
    pub artifact: Artifact,
    /// The stage's figures (its `*Figures` struct) for `summary.json`.
    pub figures: Arc<dyn summary::Figures>,
    /// Result tables, written as CSV and Parquet.
    pub tables: Vec<Table>,
    /// Model rows scored by the stage.
    pub model_queries: u64,
}

/// One configured stage, ready to run.
pub trait Stage: Send + Sync {
    /// Run on the given inputs.
    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput>;

    /// Checks made as soon as the dataset this stage's audit descends from is loaded, before the
    /// stages in between (training, say) run: the protected combinations and the model rows the
    /// audit will need, refused past their limits with the figure and the fix, warned of past a
    /// tenth (into `warnings`, which the stage keeps when it runs). None by default.
    fn preflight(&self, _data: &Dataset, _warnings: &crate::warnings::Warnings) -> Result<()> {
        Ok(())
    }

    /// The keys of this stage that read the probabilities of the model connected as `model`,
    /// not only its labels ([`ScoreNeed`]): refused on a model that gives labels only, at validate
    /// when that is known then ([`Stage::labels_only_before_run`]), else before the stage runs.
    /// None by default.
    fn score_needs(&self) -> Vec<ScoreNeed> {
        Vec::new()
    }

    /// For a stage producing a model: `Some(why)` when the model is known, before anything runs,
    /// to give labels only (a `load_model` of an ONNX file whose outputs are all labels), `why`
    /// saying how that is known. `None` (the default) when it gives probabilities or is known
    /// only when it runs.
    fn labels_only_before_run(&self) -> Option<String> {
        None
    }

    /// For a stage producing a dataset: its feature columns when they are known before anything
    /// runs (a `load` stage reading a CSV file's header). `None` (the default) otherwise.
    fn features_before_run(&self) -> Option<Vec<String>> {
        None
    }

    /// For a stage producing a dataset: its label column, when that is known before anything runs
    /// (a `load` stage: `Some(Some(label))`, or `Some(None)` when it reads no label). `None` (the
    /// default) when it is not known.
    fn label_before_run(&self) -> Option<Option<String>> {
        None
    }

    /// What this stage reads the label of its `data` input for ([`LabelUse`]): a dataset with no
    /// label is then refused, before anything runs when that is known ([`Stage::label_before_run`]).
    /// `None` (the default): the stage reads no label.
    fn reads_label(&self) -> Option<LabelUse> {
        None
    }

    /// What this stage finds wrong, before anything runs, with the feature columns `features` of
    /// the dataset connected as `data` (a model input no column feeds), each at the key to change;
    /// `label` is that dataset's label column when known. None by default.
    fn check_features(&self, _features: &[String], _label: Option<&str>) -> Vec<ColumnProblem> {
        Vec::new()
    }

    /// How many independent pieces the stage's work splits into ([`crate::pieces`]): blocks of
    /// an estimate's trials, blocks of a search's seeds. 0 (the default): the stage does not
    /// split, and a sharded run computes it whole.
    fn pieces(&self) -> usize {
        0
    }

    /// Compute piece `piece` (< [`Stage::pieces`]) alone.
    fn run_piece(&self, _ctx: &StageContext, _inputs: &Inputs, piece: usize) -> Result<crate::pieces::Piece> {
        Err(Error::Internal(format!("this stage does not split into pieces (asked for piece {piece})")))
    }

    /// The stage's output from all its pieces, in piece order: what [`Stage::run`] gives.
    fn combine(&self, _ctx: &StageContext, _inputs: &Inputs, _pieces: Vec<crate::pieces::Piece>) -> Result<StageOutput> {
        Err(Error::Internal("this stage does not split into pieces".into()))
    }
}

/// A key of a stage's config that reads the model's probabilities, not only its labels (a method
/// following their gradient, a threshold on them; see [`Stage::score_needs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreNeed {
    /// The key to change.
    pub key: &'static str,
    /// What reads the probabilities: "plugin `maft` (it follows their gradient)".
    pub what: String,
    /// What runs on labels only instead: "methods that run on labels only: aequitas, …".
    pub instead: String,
}

impl ScoreNeed {
    /// The refusal when the model stage `model` gives labels only (`why`: how that is known).
    pub fn refusal(&self, model: &str, why: &str) -> String {
        format!("{} needs the model's probabilities, but stage `{model}` gives labels only ({why}); {}", self.what, self.instead)
    }
}

/// What a stage reads the label of its `data` input for ([`Stage::reads_label`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LabelUse {
    /// The key to change, when one lets the stage do without a label (`bias_audit`'s `column`);
    /// `None`: give the load stage a `label`.
    pub key: Option<&'static str>,
    /// What the label is read for, and what to write instead.
    pub why: String,
}

impl LabelUse {
    /// The refusal of a dataset read with no label, said the same before the run and in it.
    pub fn refusal(&self, data_stage: &str) -> String {
        format!("{}; the load stage `{data_stage}` reads no label (it has no `label` key)", self.why)
    }

    /// Refuse `data` when it has no label (the check the run makes when validation could not).
    pub fn check(&self, data: &Dataset) -> Result<()> {
        if data.labelled {
            return Ok(());
        }
        Err(crate::error::StageError::cannot(self.key.unwrap_or("data"), format!("{}; the data was read with no label", self.why)))
    }
}

/// A problem with the data's feature columns found before anything runs ([`Stage::check_features`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnProblem {
    /// The key to change (or to add).
    pub key: &'static str,
    /// A key inside that table to point at (`inputs.NAME`), when there is one.
    pub nested: Option<String>,
    /// What is wrong, with the columns there are.
    pub message: String,
}

/// `domain` with its protected attributes replaced by the columns `names`, when given: one trained
/// model can be audited for gender in one stage and for race or age in the next.
/// Past a tenth of the limit on protected combinations a warning goes to `warnings`.
pub fn with_protected(domain: &Domain, names: Option<&[String]>, warnings: &crate::warnings::Warnings) -> Result<Domain> {
    let Some(names) = names else {
        crate::limits::check_protected_combinations(domain, warnings).map_err(|e| crate::error::StageError::contradicts("protected", e))?;
        return Ok(domain.clone());
    };
    let columns: Vec<&str> = domain.attributes.iter().map(|a| a.name.as_str()).collect();
    for name in names {
        if !columns.contains(&name.as_str()) {
            return Err(crate::error::StageError::cannot(
                "protected",
                format!(
                    "protected attribute `{name}` is not a feature column{}; features: {}",
                    crate::suggest::hint(name, &columns),
                    columns.join(", ")
                ),
            ));
        }
    }
    let mut out = domain.clone();
    for a in &mut out.attributes {
        a.protected = names.contains(&a.name);
    }
    crate::limits::check_protected_combinations(&out, warnings).map_err(|e| crate::error::StageError::contradicts("protected", e))?;
    Ok(out)
}

/// The names of `domain`'s protected attributes, in column order.
pub fn protected_names(domain: &Domain) -> Vec<String> {
    domain.protected_indices().into_iter().map(|i| domain.attributes[i].name.clone()).collect()
}

/// The model's domain (with the `protected` override) and the rows of `split` (all when `None`),
/// row-major: what an auditing stage looks at.
/// Warnings go to `warnings` (see [`with_protected`]).
pub fn audited_rows(
    model: &ModelArtifact,
    protected: Option<&[String]>,
    split: Option<crate::data::Split>,
    warnings: &crate::warnings::Warnings,
) -> Result<(Domain, Vec<f64>)> {
    let domain = with_protected(&model.data.domain, protected, warnings)?;
    let x = match split {
        Some(s) => model.data.subset(s).0,
        None => model.data.x.clone(),
    };
    Ok((domain, x.iter().copied().collect()))
}

/// A stage's typed figures as the object `summary.json` holds (an empty object if they do not
/// serialize to one).
pub fn figures_map<T: serde::Serialize>(figures: &T) -> Map<String, Value> {
    match serde_json::to_value(figures) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}
