//! The runner, above the stages: a pipeline is a TOML file of named stages forming a DAG.
//! [`Pipeline::load`] reads and validates the whole file, every problem located as
//! `file:line:col` (`parse.rs`); [`Pipeline::run`] executes the stages in dependency order
//! (`execute.rs`) and writes the results, all or nothing (`write.rs`). The stage kinds it knows are
//! listed in [`registry`]; pipelines made in code go through [`builder`].

pub mod builder;
mod execute;
mod parse;
pub mod registry;
mod replace;
mod write;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::{KeyPlace, Result};
use crate::output::Table;
use crate::stage::summary::Figures;
use crate::stage::Stage;

// What the CLI and the Python package read of the stage contract, named through the runner (they
// never reach into `crate::stage`; `tests/architecture.rs` checks it).
pub use crate::stage::kind::{OfflinePlan, StageKind};
pub use crate::stage::summary::Summary;
pub use crate::stage::{Artifact, ArtifactKind};

pub(crate) use execute::PieceMode;
pub(crate) use parse::{parse_root, read_text, topological_order, written_seed};
pub use replace::Replacement;

/// A validated stage, ready to run.
pub struct PlannedStage {
    /// The stage's name (its key under `[stages]`).
    pub name: String,
    /// Its kind.
    pub kind: &'static StageKind,
    /// Role → name of the stage it reads.
    pub inputs: BTreeMap<String, String>,
    /// The configured stage.
    pub stage: Box<dyn Stage>,
    /// Where its keys are in the pipeline file (empty for a pipeline made in code).
    pub places: StagePlaces,
}

/// Where a stage's keys are in the pipeline file: a run-time refusal that names a key
/// ([`crate::error::StageError`]) is shown with the key's `file:line:col`, or with the stage's
/// own place when the key is not written (add it there).
#[derive(Debug, Clone, Default)]
pub struct StagePlaces {
    /// The stage's name in its table header.
    pub header: Option<KeyPlace>,
    /// Each written key's place.
    pub keys: BTreeMap<String, KeyPlace>,
}

impl StagePlaces {
    /// The place of key `key`: where it is written, else the stage's header (`None` for a
    /// pipeline made in code).
    pub fn of(&self, key: &str) -> Option<KeyPlace> {
        self.keys.get(key).cloned().or_else(|| self.header.clone().map(|h| KeyPlace { key: key.to_string(), written: false, ..h }))
    }
}

/// A validated pipeline, stages in execution order.
pub struct Pipeline {
    /// The pipeline file.
    pub file: PathBuf,
    /// The pipeline's TOML text as read (empty for a pipeline built in code).
    pub text: String,
    /// `[pipeline] name`, or the file stem.
    pub name: String,
    /// The run seed.
    pub seed: u64,
    /// `[pipeline] out`, resolved against the file's folder, if given.
    pub out: Option<PathBuf>,
    /// `[pipeline] report`: whether `report.html` is written (default true).
    pub report: bool,
    /// `[pipeline] plugin_path`: folders searched for plugin libraries, resolved against the
    /// file's folder, before `FAIRPIPE_PLUGIN_PATH` and the executable's folder.
    pub plugin_path: Vec<PathBuf>,
    /// Stages in dependency order.
    pub stages: Vec<PlannedStage>,
    /// `[gate] conditions` (and `--gate`): checked after the run, results in `summary.json`'s
    /// `gate` section.
    pub gate: Vec<crate::gate::Condition>,
    /// `[pipeline.verdict]`: the thresholds that grade the verdicts (`summary.json`'s `verdicts`).
    pub verdict: crate::verdict::Thresholds,
    /// Where this run's language models answer from (a server unless the caller says otherwise:
    /// `fairpipe llm plan` records, `fairpipe run --responses` reads a file). An option of this
    /// run alone.
    pub llm_answers: crate::models::llm::offline::AnswerSource,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The summary written to `summary.json`.
    pub summary: Summary,
    /// Every file written.
    pub files: Vec<PathBuf>,
}

/// A stable 64-bit seed for stage `name` under pipeline seed `seed` (FNV-1a, then SplitMix64).
pub fn stage_seed(seed: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = h ^ seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A finished run, in memory.
pub struct Run {
    /// What `summary.json` holds.
    pub summary: Summary,
    /// Result tables by stage name.
    pub tables: Vec<(String, Table)>,
    /// Files stages asked to write (path, contents), e.g. a saved model.
    pub extra_files: Vec<(PathBuf, Vec<u8>)>,
    /// What each stage produced, by stage name.
    pub artifacts: BTreeMap<String, Artifact>,
}

impl Run {
    /// Stage `stage`'s typed figures, e.g. `run.figures::<EstimateFigures>("estimate")`.
    pub fn figures<F: Figures + serde::de::DeserializeOwned + Clone>(&self, stage: &str) -> Result<F> {
        Ok(self.summary.figures(stage)?)
    }

    /// Stage `stage`'s result table, if it has one.
    pub fn table(&self, stage: &str) -> Option<&polars::prelude::DataFrame> {
        self.tables.iter().find(|(s, _)| s == stage).map(|(_, t)| &t.frame)
    }
}

impl RunReport {
    /// Stage `stage`'s typed figures, e.g. `report.figures::<EstimateFigures>("estimate")`.
    pub fn figures<F: Figures + serde::de::DeserializeOwned + Clone>(&self, stage: &str) -> Result<F> {
        Ok(self.summary.figures(stage)?)
    }
}
