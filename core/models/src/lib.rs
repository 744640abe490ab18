//! # fairpipe-models
//!
//! The models under test and the one batched [`oracle::Oracle`] every stage queries them through.
//! Executors are grouped by what runs the model:
//!
//! - [`native`]: models trained in Rust (the papers' MLP, logistic regression, a CART decision tree,
//!   a random forest, an SVM) and the native dense executor ONNX dense stacks are run with;
//! - [`onnx`]: ONNX files — what the graph declares ([`onnx::facts`]), dense stacks recognised for
//!   the native executor ([`onnx::dense`]), tract ([`onnx::tract`]), ONNX Runtime through `ort`
//!   ([`onnx::ort`]) and finding its library ([`onnx::runtime`]);
//! - [`trees`]: ONNX tree ensembles run natively;
//! - [`remote`]: models behind a KServe V2 or MLflow server, or run as a program;
//! - [`llm`]: a large language model behind an OpenAI-compatible endpoint, a row written into a
//!   prompt.
//!
//! Every client of a server (both above) tries again as one [`retry::RetryPolicy`] says.
//!
//! Beside them: the [`Model`] trait ([`model`]), how encoded rows feed a model's inputs
//! ([`inputs`]) and how P(favourable) is read from its outputs ([`outputs`]), the check that a model
//! agrees with the labels ([`agreement`]), models handed in by an embedding program ([`provided`]),
//! the oracle with its score cache ([`oracle`], [`score_cache`]) and progress lines ([`progress`]).
//! Opening a model with an executor — which executor, which output, checked how — is [`open`],
//! which a `load_model` stage asks with an [`open::OpenRequest`].
//!
//! Invariant: this crate depends on the data layer (`fairpipe-data`) and the plugin SDK only; it
//! knows nothing of stages, pipelines or the runner.
#![deny(missing_docs)]

pub mod agreement;
pub mod error;
pub mod inputs;
pub mod llm;
pub mod model;
pub mod native;
pub mod onnx;
pub mod open;
pub mod oracle;
pub mod outputs;
pub mod progress;
pub mod provided;
pub mod remote;
pub mod retry;
pub mod score_cache;
pub mod testing;
pub mod trees;

pub use error::ModelError;
pub use model::{EndpointIdentity, LlmUsage, Model, RemoteUsage};
pub use native::cart::Tree;
pub use native::logistic::Logistic;
pub use native::mlp::{Mlp, MlpConfig};
pub use native::svm::{Svm, SvmConfig, SvmKernel};
pub use native::zoo::{Fitted, Forest, ModelFile};
pub use onnx::ort::OrtModel;
pub use onnx::tract::OnnxModel;
pub use oracle::Oracle;
pub use remote::RemoteModel;
pub use trees::TreeModel;

use std::sync::Arc;

/// A model read the other way round: P(favourable) = 1 − P(label = 1), for a loaded model whose
/// data has `favourable = 0`.
pub struct Complement(pub Arc<dyn Model>);

impl Model for Complement {
    fn labels_only(&self) -> bool {
        self.0.labels_only()
    }

    /// A rating read the other way round is still on its scale (1 − score is HIGH − rating + LOW).
    fn score_scale(&self) -> Option<[f64; 2]> {
        self.0.score_scale()
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        self.0.as_any()
    }

    fn budget_spent(&self) -> Option<String> {
        self.0.budget_spent()
    }

    fn takes_any_real_input(&self) -> bool {
        self.0.takes_any_real_input()
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

    fn remote_usage(&self) -> Option<crate::RemoteUsage> {
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
