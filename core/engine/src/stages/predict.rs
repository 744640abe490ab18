//! `predict`: the model's probability of the favourable label and its predicted label for every
//! row of a split, beside the row's decoded columns, so a user can hold fairpipe's view of their
//! model against their own.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::estimate::MODEL_INPUT;
use super::options::Rows;
use crate::error::Result;
use crate::output::TableBuilder;
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{FigureDoc, FigureNames, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput};

/// The `predict` stage kind.
pub const KIND: StageKind = StageKind {
    name: "predict",
    doc: "Score the rows of a split: writes each row's decoded columns, its label, `probability` (of the favourable label) and `prediction` (the predicted label, as the data writes it), as CSV and Parquet.",
    inputs: MODEL_INPUT,
    output: ArtifactKind::Model,
    keys: PredictConfig::keys,
    tag: None,
    example: "[stages.predictions]\nkind = \"predict\"\nmodel = \"model\"\nsplit = \"test\"",
    configure: configure::<PredictConfig>,
    fields: fields_of::<PredictConfig>,
    read: read_debug::<PredictConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::LeftOut,
    figures: FigureDoc::of::<PredictFigures>(),
};

/// The `predict` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct PredictConfig {
    /// Rows to score.
    pub split: Rows,
    /// Probability above which the favourable label is predicted.
    #[key(ty = "number in [0, 1]")]
    pub threshold: f64,
}

impl Default for PredictConfig {
    fn default() -> Self {
        PredictConfig { split: Rows::All, threshold: 0.5 }
    }
}

impl StageConfig for PredictConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        c.within("threshold", self.threshold, 0.0, 1.0);
    }

    fn instantiate(self, _facts: (), _env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(self))
    }
}

/// Figures of a `predict` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct PredictFigures {
    /// Rows scored.
    pub rows: usize,
    /// Rows predicted favourable.
    pub predicted_favourable: usize,
    /// Mean probability of the favourable label.
    pub mean_probability: f64,
}

/// Figures the verdict does not read.
impl StageFigures for PredictFigures {
    const HEADLINE: &'static [&'static str] = &["rows"];
}

impl Stage for PredictConfig {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let data = &model.data;
        let rows: Vec<usize> = match self.split.split() {
            Some(split) => data.rows_in(split),
            None => (0..data.len()).collect(),
        };
        let width = data.domain.width();
        let x: Vec<f64> = rows.iter().flat_map(|&r| data.x.row(r).to_vec()).collect();
        let before = model.oracle.rows();
        let p = model.oracle.predict_proba(&x)?;
        let label = |favourable: bool| data.label_values[usize::from(favourable)].clone();
        let predictions: Vec<String> = p.iter().map(|&q| label(q > self.threshold)).collect();
        let figures = PredictFigures {
            rows: rows.len(),
            predicted_favourable: p.iter().filter(|&&q| q > self.threshold).count(),
            mean_probability: p.iter().sum::<f64>() / p.len().max(1) as f64,
        };
        let table = TableBuilder::new()
            .i64("row", rows.iter().map(|&r| r as i64).collect())
            .decoded(&data.domain, &x, "", None)
            .str(&data.label_name, rows.iter().map(|&r| label(data.y[r] == 1)).collect())
            .f64("probability", p)
            .str("prediction", predictions)
            .build("")?;
        debug_assert_eq!(x.len(), rows.len() * width);
        Ok(StageOutput {
            artifact: Artifact::Model(Arc::clone(&model)),
            figures: Arc::new(figures),
            tables: vec![table],
            model_queries: model.oracle.rows() - before,
        })
    }
}
