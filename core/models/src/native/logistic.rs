//! Logistic regression fitted with linfa-logistic (L-BFGS), kept as plain parameters.

use linfa::prelude::*;
use linfa_logistic::LogisticRegression;
use ndarray::{Array1, Array2, ArrayView2};
use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::native::standardise::Standardiser;
use crate::Model;

/// A fitted logistic regression over standardised inputs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Logistic {
    weights: Array1<f64>,
    intercept: f64,
    #[serde(flatten)]
    standardiser: Standardiser,
}

impl Logistic {
    /// Fit on `x`, `y` (classes 0/1) with at most `max_iterations` L-BFGS steps and L2 penalty `alpha`.
    pub fn train(x: &Array2<f64>, y: &[u8], max_iterations: u64, alpha: f64) -> Result<Self, ModelError> {
        let standardiser = Standardiser::fit(x.view())?;
        let z = standardiser.apply(x.view());
        let targets: Array1<usize> = y.iter().map(|&v| v as usize).collect();
        if targets.iter().all(|&t| t == targets[0]) {
            return Err(ModelError::Train("the training labels hold a single class".into()));
        }
        let data = linfa::Dataset::new(z, targets);
        let fitted = LogisticRegression::default()
            .max_iterations(max_iterations)
            .alpha(alpha)
            .fit(&data)
            .map_err(|e| ModelError::Train(e.to_string()))?;
        // linfa's probability is that of its "positive" class: flip it when that class is 0.
        let sign = if fitted.labels().pos.class == 1 { 1.0 } else { -1.0 };
        Ok(Logistic { weights: fitted.params().mapv(|w| sign * w), intercept: sign * fitted.intercept(), standardiser })
    }

    /// P(class 1) per row.
    pub fn predict(&self, x: ArrayView2<f64>) -> Array1<f64> {
        let z = self.standardiser.apply(x);
        (z.dot(&self.weights) + self.intercept).mapv(|v| 1.0 / (1.0 + (-v).exp()))
    }
}

impl Model for Logistic {
    /// The encoded vector, read as numbers: any real input is scored.
    fn takes_any_real_input(&self) -> bool {
        true
    }

    fn n_features(&self) -> usize {
        self.weights.len()
    }

    fn multiply_adds_per_row(&self) -> Option<u64> {
        // Standardising and the dot product: two per input.
        Some(2 * self.weights.len() as u64)
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let view = ArrayView2::from_shape((out.len(), self.weights.len()), x).map_err(|e| ModelError::Inference(e.to_string()))?;
        out.iter_mut().zip(self.predict(view)).for_each(|(o, p)| *o = p);
        Ok(())
    }

    fn has_exact_gradient(&self) -> bool {
        true
    }

    /// ∂p/∂xᵢ = p(1 − p)·wᵢ / scaleᵢ.
    fn gradient_into(&self, x: &[f64], out: &mut [f64], grad: &mut [f64]) -> Result<(), ModelError> {
        let width = self.weights.len();
        if grad.len() != x.len() {
            return Err(ModelError::Width { expected: width, found: grad.len() / out.len().max(1) });
        }
        self.predict_into(x, out)?;
        let slope_per_unit: Vec<f64> = self.weights.iter().zip(self.standardiser.scale()).map(|(w, s)| w / s).collect();
        for (g, &p) in grad.chunks_exact_mut(width).zip(out.iter()) {
            for (gi, &w) in g.iter_mut().zip(&slope_per_unit) {
                *gi = p * (1.0 - p) * w;
            }
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("logistic regression ({} features)", self.weights.len())
    }
}
