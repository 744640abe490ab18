//! What every stage that produces a model (`train`, `load_model`, `retrain`) reports about it: the
//! model wrapped as an oracle, with its accuracy on the dataset's splits.

use crate::stage::kind::FigureNames;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::data::{Dataset, Split};
use crate::error::Result;
use crate::models::Model;
use crate::models::Recipe;
use crate::oracle::Oracle;
use crate::stage::{nan_if_null, ModelArtifact};

/// Figures of a model stage (output-contract names).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct ModelFigures {
    /// The model, described.
    pub model: String,
    /// Accuracy on the train split.
    #[serde(deserialize_with = "nan_if_null")]
    pub accuracy_train: f64,
    /// Accuracy on the test split.
    #[serde(deserialize_with = "nan_if_null")]
    pub accuracy_test: f64,
    /// Test rows predicted correctly.
    pub correct_test: usize,
    /// Test rows.
    pub total_test: usize,
}

/// Wrap `model` (trained by `recipe`, when fairpipe trained it) and measure it on `data`'s splits;
/// returns the artifact, its figures and the model rows scored.
pub fn model_output(model: Arc<dyn Model>, data: Arc<Dataset>, recipe: Option<Recipe>) -> Result<(ModelArtifact, ModelFigures, u64)> {
    let (artifact, figures, queries, _) = model_output_scored(model, data, recipe)?;
    Ok((artifact, figures, queries))
}

/// The model's P(favourable) on the labelled rows it was measured on, and their labels (train
/// rows, then test rows).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scored {
    /// P(favourable) per row.
    pub scores: Vec<f64>,
    /// The row's class (1 = favourable).
    pub labels: Vec<u8>,
}

/// As [`model_output`], also returning the scores the accuracies were computed from (for
/// `load_model`'s check that the model agrees with the labels better than chance).
pub fn model_output_scored(
    model: Arc<dyn Model>,
    data: Arc<Dataset>,
    recipe: Option<Recipe>,
) -> Result<(ModelArtifact, ModelFigures, u64, Scored)> {
    let oracle = Oracle::new(model);
    let described = oracle.model().describe();
    let mut scored = Scored::default();
    let mut measure = |split: Split| -> Result<(f64, usize, usize)> {
        let (x, y) = data.subset(split);
        let flat: Vec<f64> = x.iter().copied().collect();
        let p = oracle.predict_proba(&flat)?;
        let correct = p.iter().zip(&y).filter(|(p, y)| u8::from(**p > 0.5) == **y).count();
        let accuracy = if y.is_empty() { f64::NAN } else { correct as f64 / y.len() as f64 };
        scored.scores.extend_from_slice(&p);
        scored.labels.extend_from_slice(&y);
        Ok((accuracy, correct, y.len()))
    };
    let (accuracy_train, _, _) = measure(Split::Train)?;
    let (accuracy_test, correct_test, total_test) = measure(Split::Test)?;
    let figures = ModelFigures { model: described, accuracy_train, accuracy_test, correct_test, total_test };
    let queries = oracle.rows();
    Ok((ModelArtifact { oracle, data, recipe }, figures, queries, scored))
}
