//! The wire types of the plugin ABI: hand-written `#[repr(C)]` structs and `extern "C"` function
//! pointers only — no Rust trait objects, `String`, `Vec` or `Result` cross the boundary.
//!
//! A plugin exports one symbol, [`ENTRY_SYMBOL`], a function returning a pointer to a static
//! [`FfiPluginDescriptor`]. The host reads `abi_major` (the first field, at a fixed offset in every
//! version) before anything else and refuses the plugin when it differs from [`ABI_MAJOR`]. Fields
//! appended in later minor versions are read only when `struct_size` covers them.

use std::ffi::{c_char, c_void};

/// Major version of the ABI: bumped on any incompatible change. Not the crate version.
pub const ABI_MAJOR: u32 = 1;
/// Minor version: bumped when fields are appended. 1 added [`FfiCallbacks::report`] (auditors).
pub const ABI_MINOR: u32 = 1;
/// Name of the exported entry function (`extern "C" fn() -> *const FfiPluginDescriptor`).
pub const ENTRY_SYMBOL: &[u8] = b"fairpipe_plugin_entry";

/// Status codes returned by every `extern "C"` function.
pub mod status {
    /// Success.
    pub const OK: i32 = 0;
    /// The parameters are invalid (unknown key, wrong type, out of range).
    pub const INVALID_PARAMS: i32 = 1;
    /// The input (domain, seeds) cannot be worked with.
    pub const INVALID_INPUT: i32 = 2;
    /// The computation failed (including a failed host callback).
    pub const COMPUTE: i32 = 3;
    /// The plugin panicked; the panic was caught at the boundary.
    pub const PANIC: i32 = 4;
}

/// What a plugin does.
pub mod kind {
    /// Generates individual discriminatory cases from seeds.
    pub const GENERATOR: u32 = 1;
    /// Audits groups: receives the data's rows as `seeds` and sends one JSON report through
    /// [`super::FfiCallbacks::report`] (schema in the crate README).
    pub const AUDITOR: u32 = 2;
}

/// Attribute kinds in [`FfiAttribute::kind`].
pub mod attribute_kind {
    /// Whole numbers on a grid.
    pub const INTEGER: u32 = 0;
    /// Real numbers.
    pub const CONTINUOUS: u32 = 1;
    /// Level indices.
    pub const CATEGORICAL: u32 = 2;
}

/// One attribute of the domain. Strings are NUL-terminated and owned by the host for the call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FfiAttribute {
    /// Column name.
    pub name: *const c_char,
    /// One of [`attribute_kind`].
    pub kind: u32,
    /// 1 when protected.
    pub protected: u32,
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
    /// Grid step.
    pub step: f64,
}

/// A row-major `f64` matrix borrowed for the duration of a call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FfiMatrix {
    /// `rows * cols` values.
    pub data: *const f64,
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
}

/// Limits of one run; 0 means unlimited.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FfiBudget {
    /// Seeds to use at most.
    pub max_seeds: u64,
    /// Iterations (method-defined) at most.
    pub max_iterations: u64,
    /// Model rows to score at most.
    pub max_queries: u64,
    /// Wall-clock seconds at most.
    pub max_seconds: f64,
}

/// Scores `rows` rows of `cols` features into `out` (one P(class 1) per row). Returns a status.
pub type PredictFn = extern "C" fn(ctx: *mut c_void, x: *const f64, rows: usize, cols: usize, out: *mut f64) -> i32;
/// Reports progress: `done` of `total` units (total 0 when unknown).
pub type ProgressFn = extern "C" fn(ctx: *mut c_void, done: u64, total: u64);
/// Returns 1 when the host asks the plugin to stop.
pub type ShouldStopFn = extern "C" fn(ctx: *mut c_void) -> u32;
/// Emits one candidate case: instance, counterpart (`cols` values each), their probabilities and the
/// method-defined origin code (e.g. global/local). Returns a status.
pub type EmitFn = extern "C" fn(
    ctx: *mut c_void,
    instance: *const f64,
    counterpart: *const f64,
    cols: usize,
    p: f64,
    p_counterpart: f64,
    origin: u32,
) -> i32;

/// Sends an auditor's report: one NUL-terminated JSON document, copied by the host. Returns a status.
pub type ReportFn = extern "C" fn(ctx: *mut c_void, json: *const c_char) -> i32;

/// Host functions a plugin may call, with the host's opaque context.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FfiCallbacks {
    /// Passed back to every callback.
    pub ctx: *mut c_void,
    /// The model.
    pub predict: PredictFn,
    /// Progress reporting.
    pub progress: ProgressFn,
    /// Cancellation.
    pub should_stop: ShouldStopFn,
    /// Case collection.
    pub emit: EmitFn,
    /// Report collection (auditors; since minor 1).
    pub report: ReportFn,
}

/// Everything a plugin run receives. Borrowed for the duration of the `generate` call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FfiContext {
    /// `size_of::<FfiContext>()` as the host compiled it.
    pub struct_size: usize,
    /// Attributes, `n_attributes` of them.
    pub attributes: *const FfiAttribute,
    /// Number of attributes.
    pub n_attributes: usize,
    /// Seed rows (may have 0 rows).
    pub seeds: FfiMatrix,
    /// The plugin's parameters as a JSON object (NUL-terminated).
    pub params_json: *const c_char,
    /// Seed of the plugin's random generator.
    pub rng_seed: u64,
    /// Limits.
    pub budget: FfiBudget,
    /// γ of Aequitas Definition 4.1; NaN to compare labels.
    pub gamma: f64,
    /// Host callbacks.
    pub callbacks: FfiCallbacks,
}

/// Describe: writes the parameter schema and docs (JSON) into `*out`; the string is owned by the
/// plugin and released with `drop_string`.
pub type DescribeFn = extern "C" fn(out: *mut *mut c_char) -> i32;
/// Validate parameters (JSON object) without running; on failure writes a message into `*error`.
pub type ValidateFn = extern "C" fn(params_json: *const c_char, error: *mut *mut c_char) -> i32;
/// Run the method; on failure writes a message into `*error`.
pub type GenerateFn = extern "C" fn(ctx: *const FfiContext, error: *mut *mut c_char) -> i32;
/// Release a string the plugin allocated.
pub type DropStringFn = extern "C" fn(s: *mut c_char);

/// The descriptor a plugin's entry symbol returns. `abi_major` stays the first field in every version.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FfiPluginDescriptor {
    /// [`ABI_MAJOR`] the plugin was built with.
    pub abi_major: u32,
    /// [`ABI_MINOR`] the plugin was built with.
    pub abi_minor: u32,
    /// `size_of::<FfiPluginDescriptor>()` as the plugin compiled it.
    pub struct_size: usize,
    /// Plugin name (static, NUL-terminated).
    pub name: *const c_char,
    /// Plugin version (static, NUL-terminated).
    pub version: *const c_char,
    /// One of [`kind`].
    pub kind: u32,
    /// Parameter schema and docs.
    pub describe: DescribeFn,
    /// Parameter validation.
    pub validate: ValidateFn,
    /// The run (a generator's search, an auditor's audit).
    pub generate: GenerateFn,
    /// Frees strings the plugin returned.
    pub drop_string: DropStringFn,
}

// SAFETY: the descriptor holds only pointers to static strings and function pointers.
unsafe impl Sync for FfiPluginDescriptor {}
// SAFETY: as above.
unsafe impl Send for FfiPluginDescriptor {}
