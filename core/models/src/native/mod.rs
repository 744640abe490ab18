//! Models trained in Rust — the papers' MLP ([`mlp`]), logistic regression ([`logistic`]), a CART
//! decision tree ([`cart`]), a random forest and the model file that saves any of them ([`zoo`]),
//! an SVM ([`svm`]) — with the standardisation they share ([`standardise`]), and the native dense
//! executor that runs ONNX dense stacks ([`dense`]).

pub mod cart;
pub mod dense;
pub mod logistic;
pub mod mlp;
pub mod standardise;
pub mod svm;
pub mod zoo;
