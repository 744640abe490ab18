//! fairpipe's end-to-end tests as one test binary (each file is a module), so Polars, tract and
//! the engine are linked once: real pipelines through the CLI, the plugins through both their
//! built-in and library forms, and the model zoo.
//!
//! The plugin libraries must be built first (`cargo build --workspace --all-targets`): the
//! conformance suite loads each built-in's cdylib too.

mod common;

mod architecture;
mod bad_input;
mod bias_audit;
mod budgets;
mod cli;
mod conformance;
mod deploy;
mod domain_hold;
mod external_plugin;
mod fairlearn;
mod fuzz_corpus;
mod fuzz_mutate;
mod gate;
mod group_metrics;
mod hidden_intersectional;
mod init;
mod label_only;
mod linked;
mod llm_coverage;
mod llm_llama;
mod llm_planted;
mod llm_server;
mod maft_gradient;
mod model_exports;
mod model_inputs;
mod model_speed;
mod model_trust;
mod model_zoo;
mod multiclass;
mod onnx_outputs;
mod pipelines;
mod planted_bias;
mod plugins_planted;
mod properties;
mod published_figures;
mod remote_faults;
mod remote_mlflow;
mod remote_models;
mod report_browser;
mod retrain;
mod robust_output;
mod score_cache;
mod search_floors;
mod situation_testing;
mod sweeps;
mod text_audit;
mod tree_executor;
mod verdicts;
mod wheel;
mod white_box;
