//! What flows between stages ([`Artifact`]s) and what a stage implements ([`Stage`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use indicatif::ProgressBar;
use serde_json::{Map, Value};

use crate::cluster::Seeds;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::estimate::Estimate;
use crate::oracle::Oracle;
use crate::output::Table;

/// The kinds of artifact a stage can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArtifactKind {
    /// A loaded dataset.
    Dataset,
    /// A model under test (with the dataset it was trained or evaluated on).
    Model,
    /// Seed rows.
    Seeds,
    /// A discrimination estimate.
    Estimate,
    /// Checked discriminatory cases.
    Cases,
}

impl ArtifactKind {
    /// Lower-case name for messages.
    pub fn name(self) -> &'static str {
        match self {
            ArtifactKind::Dataset => "a dataset",
            ArtifactKind::Model => "a model",
            ArtifactKind::Seeds => "seeds",
            ArtifactKind::Estimate => "an estimate",
            ArtifactKind::Cases => "cases",
        }
    }
}

/// A model under test, ready to query.
#[derive(Debug, Clone)]
pub struct ModelArtifact {
    /// The batched, counting model.
    pub oracle: Oracle,
    /// The dataset the model was trained or evaluated on (its domain is the model's input domain).
    pub data: Arc<Dataset>,
}

/// Seed rows with the dataset they came from.
#[derive(Debug, Clone)]
pub struct SeedsArtifact {
    /// The seeds.
    pub seeds: Seeds,
    /// Their dataset.
    pub data: Arc<Dataset>,
}

/// Discriminatory cases: instances and their counterparts, encoded.
#[derive(Debug, Clone)]
pub struct CasesArtifact {
    /// Instances, row-major.
    pub instances: Vec<f64>,
    /// Counterparts, row-major.
    pub counterparts: Vec<f64>,
    /// The model they were checked against.
    pub model: Arc<ModelArtifact>,
}

/// What a stage hands to the stages that read it.
#[derive(Debug, Clone)]
pub enum Artifact {
    /// A dataset.
    Dataset(Arc<Dataset>),
    /// A model.
    Model(Arc<ModelArtifact>),
    /// Seeds.
    Seeds(Arc<SeedsArtifact>),
    /// An estimate.
    Estimate(Arc<Estimate>),
    /// Cases.
    Cases(Arc<CasesArtifact>),
}

impl Artifact {
    /// The artifact's kind.
    pub fn kind(&self) -> ArtifactKind {
        match self {
            Artifact::Dataset(_) => ArtifactKind::Dataset,
            Artifact::Model(_) => ArtifactKind::Model,
            Artifact::Seeds(_) => ArtifactKind::Seeds,
            Artifact::Estimate(_) => ArtifactKind::Estimate,
            Artifact::Cases(_) => ArtifactKind::Cases,
        }
    }
}

/// The artifacts a stage reads, by role.
#[derive(Debug, Default)]
pub struct Inputs {
    /// Role → artifact.
    pub by_role: BTreeMap<String, Artifact>,
}

impl Inputs {
    fn get(&self, role: &str) -> Result<&Artifact> {
        self.by_role.get(role).ok_or_else(|| Error::Invalid(format!("input `{role}` is not connected")))
    }

    /// The dataset connected as `role`.
    pub fn dataset(&self, role: &str) -> Result<Arc<Dataset>> {
        match self.get(role)? {
            Artifact::Dataset(d) => Ok(d.clone()),
            other => Err(Error::Invalid(format!("input `{role}` is {}, not a dataset", other.kind().name()))),
        }
    }

    /// The model connected as `role`.
    pub fn model(&self, role: &str) -> Result<Arc<ModelArtifact>> {
        match self.get(role)? {
            Artifact::Model(m) => Ok(m.clone()),
            other => Err(Error::Invalid(format!("input `{role}` is {}, not a model", other.kind().name()))),
        }
    }

    /// The seeds connected as `role`, if connected.
    pub fn seeds(&self, role: &str) -> Result<Option<Arc<SeedsArtifact>>> {
        match self.by_role.get(role) {
            None => Ok(None),
            Some(Artifact::Seeds(s)) => Ok(Some(s.clone())),
            Some(other) => Err(Error::Invalid(format!("input `{role}` is {}, not seeds", other.kind().name()))),
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
}

/// What a stage returns.
pub struct StageOutput {
    /// Handed to later stages.
    pub artifact: Artifact,
    /// Figures for `summary.json`.
    pub figures: Map<String, Value>,
    /// Result tables, written as CSV and Parquet.
    pub tables: Vec<Table>,
    /// Model rows scored by the stage.
    pub model_queries: u64,
}

/// One configured stage, ready to run.
pub trait Stage: Send + Sync {
    /// Run on the given inputs.
    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput>;
}

/// Insert `value` as `key` into a figures map (a small helper for stage code).
pub fn put(figures: &mut Map<String, Value>, key: &str, value: impl Into<Value>) {
    figures.insert(key.to_string(), value.into());
}
