//! Models under test: trained natively (MLP, logistic regression, decision tree) or loaded (ONNX).

pub mod dense;
pub mod logistic;
pub mod mlp;
pub mod onnx;
pub mod onnx_dense;
pub mod tree;

pub use logistic::Logistic;
pub use mlp::{Mlp, MlpConfig};
pub use onnx::OnnxModel;
pub use tree::Tree;

use std::sync::Arc;

use crate::error::ModelError;
use crate::oracle::Model;

/// A model read the other way round: P(favourable) = 1 − P(label = 1), for a loaded model whose
/// data has `favourable = 0`.
pub struct Complement(pub Arc<dyn Model>);

impl Model for Complement {
    fn n_features(&self) -> usize {
        self.0.n_features()
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        self.0.predict_into(x, out)?;
        out.iter_mut().for_each(|p| *p = 1.0 - *p);
        Ok(())
    }

    fn describe(&self) -> String {
        format!("{}, read as 1 - p (favourable label 0)", self.0.describe())
    }
}
