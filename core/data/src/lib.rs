//! # fairpipe-data
//!
//! The bottom floor of fairpipe's engine: what a pipeline reads before any model runs. A data file
//! (CSV or Parquet, through Polars) becomes a [`Dataset`] over a [`Domain`] ([`data`]); declared
//! category codes ([`codes`]); the CSV pre-scan that names a broken row's line and column
//! ([`csv_check`]); "did you mean" hints ([`suggest`]); the TOML reader that keeps every
//! value's byte span so later problems are reported as `file:line:col` ([`toml_spans`]); and the
//! `FigureNames` trait a figures struct derives ([`figures`]), here so the models' figures derive
//! it too.
//!
//! Invariant: this crate knows nothing of models, stages or the runner; it depends only on the
//! plugin SDK (for the [`Domain`] shared with plugins), Polars and `fairpipe-derive`.
#![deny(missing_docs)]

pub mod codes;
pub mod csv_check;
pub mod data;
pub mod error;
pub mod figures;
pub mod suggest;
pub mod toml_spans;

pub use data::Dataset;
pub use error::{ConfigProblem, DataError};
pub use fairpipe_abi::domain;
pub use fairpipe_abi::domain::Domain;
