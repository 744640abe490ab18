//! Models handed to the engine by the program that embeds it (the Python package's in-process
//! `predict_proba` objects): a `load_model` stage given a [`ProvidedModel`] instead of a `path`,
//! `url` or `command` asks it for a [`Model`] once it knows the dataset, because the program
//! needs the data's columns, categories and favourable label to call its model the way it was
//! fitted.

use std::sync::Arc;

use crate::error::ModelError;
use crate::oracle::Model;
use fairpipe_data::data::Dataset;

/// A model that becomes callable once the dataset it is audited on is known.
pub trait ModelSource: Send + Sync {
    /// Short description for messages before the model is bound ("Python HistGradientBoostingClassifier").
    fn describe(&self) -> String;

    /// The model for `data`: its rows arrive encoded as `data.x`'s (categories as level
    /// numbers), and it answers P(favourable) per row (class 1 of `data.y`).
    fn bind(&self, data: &Dataset) -> Result<BoundModel, ModelError>;
}

/// A [`ModelSource`] bound to a dataset: the model and what the `load_model` stage reports
/// about it.
pub struct BoundModel {
    /// The model.
    pub model: Arc<dyn Model>,
    /// Indices of the dataset's attributes the model reads (a protected one it does not read is
    /// refused by the stage).
    pub read: Vec<usize>,
    /// How rows reach the model ("a pandas DataFrame of 13 columns as fitted (feature_names_in_)").
    pub input_contract: String,
    /// How P(favourable) is read from its answer ("column 1 of predict_proba, classes_ [0, 1]").
    pub output_read: String,
    /// Whether the favourable class was assumed to be the model's class 1.
    pub favourable_class_assumed: bool,
}

/// A model source given to a `load_model` stage in code (the engine's `LoadModelConfig::provided`).
/// Two are equal when they are the same object.
#[derive(Clone)]
pub struct ProvidedModel(pub Arc<dyn ModelSource>);

impl std::fmt::Debug for ProvidedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ProvidedModel({})", self.0.describe())
    }
}

impl PartialEq for ProvidedModel {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
