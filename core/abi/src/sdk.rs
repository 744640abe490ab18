//! What a plugin author writes against: implement [`Generator`] (or [`Auditor`]) with a typed
//! [`PluginParams`] struct, call [`export_generator!`](crate::export_generator) (or
//! [`export_auditor!`](crate::export_auditor)), and use [`Host`] for everything that crosses the
//! boundary (model queries, cases, budget, cancellation) and [`CaseSink`] for the usual
//! bookkeeping.

use std::marker::PhantomData;

use serde_json::Value;

pub use crate::error::{HostCall, HostCallError, ParamError, PluginError};
pub use crate::host::Host;
pub use crate::params::{at_least, did_you_mean, in_range, PluginParams, INJECT_PANIC_KEY};
pub use crate::sink::{row_key, CaseSink, RowKey};
pub use crate::variants::RowCheck;

/// A method that searches for discriminatory cases.
pub trait Generator {
    /// Plugin name (`aequitas`, `maft`…): the pipeline's `plugin = "…"`.
    const NAME: &'static str;
    /// One-paragraph summary, with the paper it implements (`fairpipe list` shows it).
    const DOC: &'static str;
    /// Whether the method reads the model's probabilities themselves (their gradient, a
    /// threshold on them), so that it cannot run on a model that gives labels only: the host then
    /// refuses the pipeline at validate, naming the methods that can run. Published as
    /// `needs_scores` in the plugin's `describe` document. False by default: a method that decides
    /// by the label (P > 0.5) alone runs on any model.
    const NEEDS_SCORES: bool = false;
    /// The parameters, parsed and checked before [`Generator::generate`] is called.
    type Params: PluginParams;
    /// Run: query the model and emit cases through `host` until done or [`PluginError::Stopped`].
    fn generate(params: &Self::Params, host: &mut Host) -> Result<(), PluginError>;
}

/// A method that audits groups rather than searching for individual cases: it receives the data's
/// rows as [`Host::seeds`] and returns one JSON report (schema in the crate README), which the SDK
/// sends to the host.
pub trait Auditor {
    /// Plugin name (`testsgd`…): the pipeline's `plugin = "…"`.
    const NAME: &'static str;
    /// One-paragraph summary, with the paper it implements.
    const DOC: &'static str;
    /// Whether the method reads the model's probabilities themselves (see
    /// [`Generator::NEEDS_SCORES`]); false by default.
    const NEEDS_SCORES: bool = false;
    /// The parameters, parsed and checked before [`Auditor::audit`] is called.
    type Params: PluginParams;
    /// Run the audit and return the report.
    fn audit(params: &Self::Params, host: &mut Host) -> Result<Value, PluginError>;
}

/// Where cases come from (the `origin` code of an emitted case).
pub mod origin {
    /// Found by the global (exploration) phase.
    pub const GLOBAL: u32 = 0;
    /// Found by the local (exploitation) phase.
    pub const LOCAL: u32 = 1;
    /// A seed itself.
    pub const SEED: u32 = 2;
}

/// A generator or an auditor seen through one interface: what the export macros and
/// [`crate::testing::MockHost`] run.
pub trait Method {
    /// Plugin name.
    const NAME: &'static str;
    /// Summary.
    const DOC: &'static str;
    /// One of [`crate::ffi::kind`].
    const KIND: u32;
    /// Whether it needs the model's probabilities (see [`Generator::NEEDS_SCORES`]).
    const NEEDS_SCORES: bool = false;
    /// The parameters.
    type Params: PluginParams;
    /// Run with parsed parameters (an auditor's report is sent to the host).
    fn run(params: &Self::Params, host: &mut Host) -> Result<(), PluginError>;
}

/// A [`Generator`] as a [`Method`].
pub struct AsGenerator<T>(PhantomData<T>);

impl<T: Generator> Method for AsGenerator<T> {
    const NAME: &'static str = T::NAME;
    const DOC: &'static str = T::DOC;
    const KIND: u32 = crate::ffi::kind::GENERATOR;
    const NEEDS_SCORES: bool = T::NEEDS_SCORES;
    type Params = T::Params;
    fn run(params: &Self::Params, host: &mut Host) -> Result<(), PluginError> {
        T::generate(params, host)
    }
}

/// An [`Auditor`] as a [`Method`].
pub struct AsAuditor<T>(PhantomData<T>);

impl<T: Auditor> Method for AsAuditor<T> {
    const NAME: &'static str = T::NAME;
    const DOC: &'static str = T::DOC;
    const KIND: u32 = crate::ffi::kind::AUDITOR;
    const NEEDS_SCORES: bool = T::NEEDS_SCORES;
    type Params = T::Params;
    fn run(params: &Self::Params, host: &mut Host) -> Result<(), PluginError> {
        let report = T::audit(params, host)?;
        host.report(&report)
    }
}

/// Parse and check `params` (a JSON object) for `M`, and honour `_inject_panic`: the first half of
/// every run, through the C boundary or the mock host.
pub(crate) fn prepare<M: Method>(params: &Value) -> Result<M::Params, PluginError> {
    let (parsed, inject) = crate::params::parse::<M::Params>(params)?;
    if inject {
        panic!("injected panic ({INJECT_PANIC_KEY} = true)");
    }
    Ok(parsed)
}

/// Check `params` for `M` without running (the `validate` entry).
pub(crate) fn validate<M: Method>(params: &Value) -> Result<(), PluginError> {
    crate::params::parse::<M::Params>(params).map(|_| ()).map_err(PluginError::from)
}

/// The `describe` document of `M` at `version`: name, version, doc, parameters, and
/// `needs_scores` ([`Method::NEEDS_SCORES`]; a host reads its absence, from a plugin built before
/// it existed, as false).
pub fn describe<M: Method>(version: &str) -> Result<Value, PluginError> {
    let mut document =
        crate::params::describe_json::<M::Params>(M::NAME, version, M::DOC).map_err(|e| PluginError::InvalidInput(e.to_string()))?;
    if let Value::Object(map) = &mut document {
        map.insert("needs_scores".into(), Value::Bool(M::NEEDS_SCORES));
    }
    Ok(document)
}
