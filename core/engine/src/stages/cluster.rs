//! `cluster`: k-means over a dataset's rows; seeds taken round robin across clusters.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::cluster::cluster_seeds;
use crate::data::Split;
use crate::error::Result;
use crate::output::TableBuilder;
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::{KeyType, StageKeys};
use crate::stage::kind::{FigureDoc, FigureNames, InputDoc, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{Artifact, ArtifactKind, Inputs, SeedsArtifact, Stage, StageContext, StageOutput};

/// The `cluster` stage kind.
pub const KIND: StageKind = StageKind {
    name: "cluster",
    doc: "k-means over the dataset's training rows; seeds are taken round robin across clusters (SG §3.2, MAFT Algorithm 3).",
    inputs: &[InputDoc { role: "data", accepts: &[ArtifactKind::Dataset], required: true, doc: "the dataset whose rows are clustered" }],
    output: ArtifactKind::Seeds,
    keys: ClusterConfig::keys,
    tag: None,
    example: "[stages.seeds]\nkind = \"cluster\"\ndata = \"data\"\nk = 4\nseeds = 1000",
    configure: configure::<ClusterConfig>,
    fields: fields_of::<ClusterConfig>,
    read: read_debug::<ClusterConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::LeftOut,
    figures: FigureDoc::of::<ClusterFigures>(),
};

/// `split = "train" | "all"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, KeyType)]
#[serde(rename_all = "snake_case")]
pub enum ClusterRows {
    /// The train split.
    #[default]
    Train,
    /// Every row.
    All,
}

/// The `cluster` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterConfig {
    /// Number of clusters.
    pub k: usize,
    /// Number of seeds to emit.
    pub seeds: usize,
    /// k-means iteration limit.
    pub max_iterations: u64,
    /// Rows to cluster.
    pub split: ClusterRows,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig { k: 4, seeds: 1000, max_iterations: 300, split: ClusterRows::Train }
    }
}

impl StageConfig for ClusterConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        c.at_least("k", self.k, 1);
        c.at_least("seeds", self.seeds, 1);
        c.at_least("max_iterations", self.max_iterations.min(usize::MAX as u64) as usize, 1);
        c.at_most("k", self.k as u128, crate::limits::MAX_CLUSTERS as u128);
        c.at_most("seeds", self.seeds as u128, crate::limits::MAX_SEEDS as u128);
        c.at_most("max_iterations", u128::from(self.max_iterations), u128::from(crate::limits::MAX_ITERATIONS));
    }

    fn instantiate(self, _facts: (), _env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(self))
    }
}

/// Figures of a `cluster` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct ClusterFigures {
    /// Clusters found.
    pub clusters: usize,
    /// Rows per cluster.
    pub cluster_sizes: Vec<usize>,
    /// Seeds emitted.
    pub seeds: usize,
}

/// Figures the verdict does not read.
impl StageFigures for ClusterFigures {
    const HEADLINE: &'static [&'static str] = &["seeds"];
}

impl Stage for ClusterConfig {
    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let data = inputs.dataset("data")?;
        let x = if self.split == ClusterRows::All { data.x.clone() } else { data.subset(Split::Train).0 };
        if self.k > x.nrows() {
            return Err(crate::error::StageError::AboveAvailable {
                key: "k",
                value: self.k,
                what: "the rows to cluster",
                available: x.nrows(),
            }
            .into());
        }
        if self.seeds > x.nrows() {
            ctx.warn(format!("seeds = {} asked, but there are only {} rows; {} seeds are emitted", self.seeds, x.nrows(), x.nrows()));
        }
        let seeds = cluster_seeds(&x, self.k, self.seeds, self.max_iterations, ctx.seed)?;
        let figures =
            ClusterFigures { clusters: seeds.cluster_sizes.len(), cluster_sizes: seeds.cluster_sizes.clone(), seeds: seeds.rows.nrows() };
        let flat: Vec<f64> = seeds.rows.iter().copied().collect();
        let table = TableBuilder::new()
            .i64("cluster", seeds.cluster.iter().map(|&c| c as i64).collect())
            .decoded(&data.domain, &flat, "", None)
            .build("")?;
        Ok(StageOutput {
            artifact: Artifact::Seeds(Arc::new(SeedsArtifact { seeds, data })),
            figures: Arc::new(figures),
            tables: vec![table],
            model_queries: 0,
        })
    }
}
