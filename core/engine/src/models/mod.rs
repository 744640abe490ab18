//! Models under test: trained natively (MLP, logistic regression, decision tree, random forest,
//! SVM) or loaded (ONNX, run natively — dense networks and tree ensembles —, by tract or by ONNX
//! Runtime).

pub mod agreement;
pub mod dense;
pub mod llm;
pub mod logistic;
pub mod mlp;
pub mod model;
pub mod model_inputs;
pub mod model_outputs;
pub mod onnx;
pub mod onnx_dense;
pub mod onnx_graph;
pub mod onnx_runtime;
pub mod ort_model;
pub mod provided;
pub mod remote;
pub mod standardise;
pub mod svm;
pub mod tree;
pub mod trees;
pub mod zoo;

pub use logistic::Logistic;
pub use mlp::{Mlp, MlpConfig};
pub use model::{LlmUsage, Model, RemoteUsage};
pub use onnx::OnnxModel;
pub use ort_model::OrtModel;
pub use remote::RemoteModel;
pub use svm::{Svm, SvmConfig, SvmKernel};
pub use tree::Tree;
pub use trees::TreeModel;
pub use zoo::{Fitted, Forest, ModelFile};

use std::sync::Arc;

use crate::error::ModelError;

/// A model read the other way round: P(favourable) = 1 − P(label = 1), for a loaded model whose
/// data has `favourable = 0`.
pub struct Complement(pub Arc<dyn Model>);

impl Model for Complement {
    fn labels_only(&self) -> bool {
        self.0.labels_only()
    }

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

    fn remote_usage(&self) -> Option<crate::models::RemoteUsage> {
        self.0.remote_usage()
    }

    fn wants_thread_chunks(&self) -> bool {
        self.0.wants_thread_chunks()
    }

    fn rows_per_call(&self) -> Option<usize> {
        self.0.rows_per_call()
    }

    fn multiply_adds_per_row(&self) -> Option<u64> {
        self.0.multiply_adds_per_row()
    }

    fn has_exact_gradient(&self) -> bool {
        self.0.has_exact_gradient()
    }

    fn gradient_into(&self, x: &[f64], out: &mut [f64], grad: &mut [f64]) -> Result<(), ModelError> {
        self.0.gradient_into(x, out, grad)?;
        out.iter_mut().for_each(|p| *p = 1.0 - *p);
        grad.iter_mut().for_each(|g| *g = -*g);
        Ok(())
    }
}

/// How a model was trained: enough to train it again on augmented data (the `retrain` stage).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "algorithm", rename_all = "lowercase")]
pub enum Recipe {
    /// The papers' MLP.
    Mlp(MlpConfig),
    /// Logistic regression.
    Logistic {
        /// Optimiser iteration limit.
        max_iterations: u64,
        /// L2 penalty.
        alpha: f64,
    },
    /// Decision tree.
    Tree {
        /// Depth limit.
        max_depth: usize,
    },
    /// Random forest: bagged decision trees on random feature subsets.
    Forest {
        /// Number of trees.
        trees: usize,
        /// Depth limit of each tree.
        max_depth: usize,
        /// Seed of the bootstrap samples and feature subsets.
        seed: u64,
        /// Features each tree sees (`None`: the default share, see [`Forest::train`]).
        #[serde(default)]
        max_features: Option<usize>,
    },
    /// Support vector classifier (C-SVC).
    Svm(SvmConfig),
}

impl Recipe {
    /// Train a fresh model on `x`, `y`.
    pub fn fit(&self, x: &ndarray::Array2<f64>, y: &[u8]) -> Result<Fitted, ModelError> {
        self.fit_shown(x, y, &indicatif::ProgressBar::hidden())
    }

    /// [`Recipe::fit`], showing an MLP's epochs on `progress`.
    pub fn fit_shown(&self, x: &ndarray::Array2<f64>, y: &[u8], progress: &indicatif::ProgressBar) -> Result<Fitted, ModelError> {
        Ok(match self {
            Recipe::Mlp(config) => {
                crate::progress::start(progress, config.epochs as u64, "epochs");
                Fitted::Mlp(Mlp::train_shown(x, y, config, progress)?)
            }
            Recipe::Logistic { max_iterations, alpha } => Fitted::Logistic(Logistic::train(x, y, *max_iterations, *alpha)?),
            Recipe::Tree { max_depth } => Fitted::Tree(Tree::train(x, y, Some(*max_depth))?),
            Recipe::Forest { trees, max_depth, seed, max_features } => {
                Fitted::Forest(Forest::train(x, y, *trees, *max_depth, *max_features, *seed)?)
            }
            Recipe::Svm(config) => Fitted::Svm(Svm::train(x, y, config)?),
        })
    }

    /// Train a fresh model on training rows `x[..original]` augmented with the rows after them
    /// (the `retrain` stage): as [`Recipe::fit`], except that an SVM keeps its original
    /// subsample and adds the added rows to it.
    pub fn fit_augmented(&self, x: &ndarray::Array2<f64>, y: &[u8], original: usize) -> Result<Fitted, ModelError> {
        match self {
            Recipe::Svm(config) => Ok(Fitted::Svm(Svm::train_augmented(x, y, original, config)?)),
            _ => self.fit(x, y),
        }
    }

    /// "mlp", "logistic", "tree", "forest", "svm".
    pub fn name(&self) -> &'static str {
        match self {
            Recipe::Mlp(_) => "mlp",
            Recipe::Logistic { .. } => "logistic",
            Recipe::Tree { .. } => "tree",
            Recipe::Forest { .. } => "forest",
            Recipe::Svm(_) => "svm",
        }
    }
}
