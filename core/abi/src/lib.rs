//! # fairpipe-abi
//!
//! The SDK a fairpipe method plugin is written against, on top of the C ABI's wire types
//! (re-exported as [`ffi`] from `fairpipe-ffi`).
//!
//! A plugin implements [`sdk::Generator`] (or [`sdk::Auditor`]) with a typed parameter struct
//! ([`sdk::PluginParams`]), exports it with [`export_generator!`] (or [`export_auditor!`]), and
//! talks to the host only through [`sdk::Host`]: model queries, emitted cases, budget and
//! cancellation. Its unit tests run it against a closure as the model with
//! [`testing::MockHost`], no engine needed.
//!
//! ```
//! use fairpipe_abi::sdk::{at_least, origin, Generator, Host, ParamError, PluginError, PluginParams};
//! use serde::{Deserialize, Serialize};
//!
//! /// Parameters of `mine`.
//! #[derive(Debug, Clone, Serialize, Deserialize)]
//! #[serde(default, deny_unknown_fields)]
//! pub struct Params {
//!     /// Inputs to draw.
//!     pub samples: usize,
//! }
//! impl Default for Params {
//!     fn default() -> Self {
//!         Params { samples: 1000 }
//!     }
//! }
//! impl PluginParams for Params {
//!     const DOCS: &'static [(&'static str, &'static str)] = &[("samples", "inputs to draw")];
//!     fn check(&self) -> Result<(), ParamError> {
//!         at_least("samples", self.samples, 1)
//!     }
//! }
//!
//! /// The `mine` generator.
//! pub struct Mine;
//! impl Generator for Mine {
//!     const NAME: &'static str = "mine";
//!     const DOC: &'static str = "Uniform random sampling, checked in one batch.";
//!     type Params = Params;
//!     fn generate(params: &Params, host: &mut Host) -> Result<(), PluginError> {
//!         let rows = host.domain.sample_rows(&mut host.rng, params.samples);
//!         for (row, v) in rows.chunks_exact(host.domain.width()).zip(host.check(&rows)?) {
//!             if v.discriminatory {
//!                 host.emit(row, &v, origin::GLOBAL)?;
//!             }
//!         }
//!         Ok(())
//!     }
//! }
//! fairpipe_abi::export_generator!(Mine);
//! ```
//!
//! Modules: [`sdk`] (what an author uses), [`domain`] and [`variants`] (the input domain and the
//! discrimination verdict, shared with the host), [`gradient`] (finite differences for models
//! without an exact gradient), [`testing`] (the mock host), [`export`] (the C
//! boundary: the only module with `unsafe` code).
#![deny(missing_docs)]

/// The C ABI's wire types (the `fairpipe-ffi` crate).
pub use fairpipe_ffi as ffi;

pub mod domain;
pub mod error;
pub mod export;
pub mod gradient;
mod host;
mod params;
pub mod sdk;
mod sink;
pub mod testing;
pub mod variants;
