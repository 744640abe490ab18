//! # fairpipe-core
//!
//! The engine of fairpipe, a toolkit that tests machine-learning classifiers for discrimination:
//! the input [`domain`], the Polars [`data`] layer, [`models`] behind one batched [`oracle::Oracle`],
//! the discrimination [`check`], the Aequitas [`estimate`], k-means seed selection ([`cluster`]),
//! the contract every stage implements ([`stage`]), the stage kinds themselves ([`stages`]) and the
//! runner that reads a TOML pipeline and calls them ([`run`]). `ARCHITECTURE.md` at the
//! repository's root maps the layers.
//!
//! A pipeline is usually a TOML file:
//!
//! ```no_run
//! use fairpipe_core::run::Pipeline;
//! use fairpipe_core::stages::estimate::EstimateFigures;
//! let pipeline = Pipeline::load("pipelines/census-estimate.toml".as_ref(), None)?;
//! let report = pipeline.run("out/census".as_ref(), false)?;
//! println!("{}", report.figures::<EstimateFigures>("estimate")?.rate);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! It can as well be built in code, over a Polars `DataFrame` already in memory, and its typed
//! figures read back (each stage kind's config and figures live in [`stages`]). The standard audit
//! — group metrics, an estimate, a check of the real rows and a search — is one [`preset`], the
//! one Python's `audit` and `fairpipe init` write:
//!
//! ```
//! use fairpipe_core::preset::{standard_estimate, ModelStage, StandardAudit};
//! use fairpipe_core::stages::{estimate::*, group_metrics::*, load::{LabelValue, LoadConfig}, load_model::LoadModelConfig};
//! use polars::prelude::*;
//!
//! let bundled = concat!(env!("CARGO_MANIFEST_DIR"), "/../../pipelines");
//! let frame = CsvReadOptions::default()
//!     .try_into_reader_with_file_path(Some(format!("{bundled}/data/census.csv").into()))?
//!     .finish()?;
//! let mut data = LoadConfig::from_frame(frame, "income", &["gender"]);
//! data.drop = vec!["row".into()];
//! data.split_column = Some("split".into());
//! // The papers' integer codes for the category names, which the bundled model was trained on.
//! data.codes = Some(format!("{bundled}/data/census.codes.toml").into());
//! data.favourable = Some(LabelValue::Text(">50K".into()));
//! let model = LoadModelConfig::new(format!("{bundled}/models/census.onnx"));
//! let mut audit = StandardAudit::new("census", data, ModelStage::Load(model));
//! // A smaller estimate than the standard 100 x 1,000 inputs, for a quick doctest.
//! audit.estimate = Some(EstimateConfig { trials: 10, samples: 200, ..standard_estimate() });
//! let run = audit.builder().build()?.execute(false)?;
//! let estimate: EstimateFigures = run.figures("estimate")?;
//! let metrics: GroupMetricsFigures = run.figures("group_metrics")?;
//! assert!((0.0..=1.0).contains(&estimate.rate));
//! assert!(metrics.groups.iter().any(|g| g.attributes == "gender"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

// `#[derive(StageKeys)]` and `#[derive(KeyType)]` name the engine `::fairpipe_core`, inside it as
// well as outside.
extern crate self as fairpipe_core;

pub mod association;
pub mod check;
pub mod cluster;
pub mod cluster_keys;
pub mod clustered;
pub mod error;
pub mod estimate;
pub mod fairness;
pub mod flip_sequence;
pub mod gate;
pub mod group_rule;
pub mod grouping;
pub mod interrupt;
pub mod limits;
pub mod logit_shift;
pub mod numbers;
pub mod output;
pub mod pieces;
pub mod plugin;
pub mod preset;
pub mod report;
pub mod run;
pub mod sequential;
pub mod serde_nan;
pub mod stage;
pub mod stage_lines;
pub mod stages;
pub mod staging;
pub mod stats;
pub mod sweep;
pub mod text;
pub mod trail;
pub mod verdict;
pub mod warnings;

pub use error::{Error, Result};
pub use fairpipe_abi::domain;
// The floors below the engine, re-exported under the module names the engine's own code and its
// users name them by: the data layer (`fairpipe-data`) and the models with their oracle
// (`fairpipe-models`).
pub use fairpipe_data::{codes, csv_check, data, suggest, toml_spans};
pub use fairpipe_models as models;
pub use fairpipe_models::{oracle, progress, score_cache};
