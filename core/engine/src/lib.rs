//! # fairpipe-core
//!
//! The engine of fairpipe, a toolkit that tests machine-learning classifiers for discrimination:
//! the input [`domain`], the Polars [`data`] layer, [`models`] behind one batched [`oracle::Oracle`],
//! the discrimination [`check`], the Aequitas [`estimate`], k-means seed selection ([`cluster`]) and
//! the TOML [`pipeline`] runner.
//!
//! ```no_run
//! use fairpipe_core::pipeline::Pipeline;
//! let pipeline = Pipeline::load("pipelines/census-estimate.toml".as_ref(), None)?;
//! let report = pipeline.run("out/census".as_ref(), false)?;
//! println!("{}", report.summary["stages"]["estimate"]["rate"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod check;
pub mod cluster;
pub mod data;
pub mod error;
pub mod estimate;
pub mod group_rule;
pub mod interrupt;
pub mod models;
pub mod oracle;
pub mod output;
pub mod pipeline;
pub mod plugin;
pub mod report;
pub mod stages;

pub use error::{Error, Result};
pub use fairpipe_abi::domain;
