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
