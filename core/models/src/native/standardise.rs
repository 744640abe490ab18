//! Per-feature standardisation learnt from training rows, applied inside a model so that it takes
//! encoded rows as they are (logistic regression, the MLP and the SVM share it).

use ndarray::{Array1, Array2, ArrayView2, Axis};
use serde::{Deserialize, Serialize};

use crate::error::ModelError;

/// z = (x − mean) / scale per feature; a constant feature keeps scale 1. Serialised as the two
/// fields `mean` and `scale` (flattened into the model that holds it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Standardiser {
    mean: Array1<f64>,
    scale: Array1<f64>,
}

impl Standardiser {
    /// The mean and population standard deviation of each column of `x`.
    pub fn fit(x: ArrayView2<f64>) -> Result<Self, ModelError> {
        let mean = x.mean_axis(Axis(0)).ok_or_else(|| ModelError::Train("no training rows".into()))?;
        let scale = x.std_axis(Axis(0), 0.0).mapv(|s| if s > 1e-12 { s } else { 1.0 });
        Ok(Standardiser { mean, scale })
    }

    /// The identity on `width` features.
    pub fn identity(width: usize) -> Self {
        Standardiser { mean: Array1::zeros(width), scale: Array1::ones(width) }
    }

    /// `x` standardised.
    pub fn apply(&self, x: ArrayView2<f64>) -> Array2<f64> {
        (&x - &self.mean) / &self.scale
    }

    /// Per-feature scales (a gradient with respect to z divided by them is one with respect to x).
    pub fn scale(&self) -> &Array1<f64> {
        &self.scale
    }

    /// Number of features.
    pub fn width(&self) -> usize {
        self.mean.len()
    }
}
