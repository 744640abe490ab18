//! What every stage that produces a model (`train`, `load_model`, `retrain`) reports about it: the
//! model wrapped as an oracle, with its accuracy on the dataset's splits.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::data::{Dataset, Split};
use crate::error::Result;
use crate::models::Recipe;
use crate::oracle::{accuracy, Model, Oracle};
use crate::pipeline::stage::{nan_if_null, ModelArtifact};

/// Figures of a model stage (DESIGN.md contract names).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    let oracle = Oracle::new(model);
    let described = oracle.model().describe();
    let (x_train, y_train) = data.subset(Split::Train);
    let (accuracy_train, _) = accuracy(&oracle, &x_train, &y_train)?;
    let (x_test, y_test) = data.subset(Split::Test);
    let (accuracy_test, correct_test) = accuracy(&oracle, &x_test, &y_test)?;
    let figures = ModelFigures { model: described, accuracy_train, accuracy_test, correct_test, total_test: y_test.len() };
    let queries = oracle.rows();
    Ok((ModelArtifact { oracle, data, recipe }, figures, queries))
}
