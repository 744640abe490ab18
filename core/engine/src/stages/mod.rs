//! The stage kinds, one module per kind (its config, its run and its figures), plus the helpers
//! several kinds share: [`options`] (shared config pieces), [`model_output`] (what a model stage
//! reports) and [`mitigate`] (TestSGD's mitigation, used by `retrain`).

pub mod bias_audit;
pub mod check;
pub mod check_text;
pub mod cluster;
pub mod estimate;
pub mod generate;
pub mod group_metrics;
pub mod group_score;
pub mod group_score_text;
pub mod label_value;
pub mod linked;
pub mod load;
pub mod load_model;
pub mod load_text;
pub mod load_text_model;
pub mod mitigate;
pub mod model_output;
pub mod options;
pub mod predict;
pub mod retrain;
pub mod retrain_text;
pub mod train;
pub mod train_text;
pub mod verify;
