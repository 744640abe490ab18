//! # fairpipe-ffi
//!
//! The wire types of the fairpipe plugin ABI: hand-written `#[repr(C)]` structs, `extern "C"`
//! function pointer types and version constants — nothing else, no dependencies. No Rust trait
//! object, `String`, `Vec` or `Result` crosses the boundary. The host (`fairpipe-core`) and the
//! plugin SDK (`fairpipe-abi`) both build on this crate; a plugin written in another language
//! mirrors these declarations.
//!
//! ## Finding the descriptor
//! A plugin exports one entry function returning a pointer to a static [`FfiPluginDescriptor`].
//! Since ABI 1.2 its symbol is [`ENTRY_SYMBOL_PREFIX`] followed by the plugin crate's name
//! (`fairpipe_plugin_entry_fairpipe_plugin_maft`), so that several plugins can be linked into one
//! executable as built-in methods; a library file `libNAME.so` is searched for
//! `fairpipe_plugin_entry_NAME`. The plain [`ENTRY_SYMBOL`] is still accepted (plugins built for
//! ABI 1.0/1.1, and hand-written plugins in other languages).
//!
//! ## Versions
//! The host reads `abi_major` (the first field, at a fixed offset in every version) before
//! anything else and refuses the plugin when it differs from [`ABI_MAJOR`]. Fields appended in a
//! later minor version are read only when the struct's `struct_size` covers them, so a plugin built
//! for an older minor keeps loading, and a plugin given an older host's context does without.
//!
//! | minor | added |
//! |---|---|
//! | 0 | descriptor, context, callbacks `predict`, `progress`, `should_stop`, `emit` |
//! | 1 | [`FfiCallbacks::report`] and the auditor kind |
//! | 2 | [`FfiContext::last_error`]: the text of the host's last failed callback; per-crate entry symbols; `should_stop` answers the host's budget and interrupts |
//! | 3 | [`FfiContext::gradient`]: P(class 1) and its gradient with respect to every input, for white-box methods |
//! | 4 | [`FfiContext::gradient_cost`]: the model rows one row of a `gradient` call costs against `max_queries` |
//!
//! ## Ownership
//! Whoever allocates, frees: strings a plugin returns through `*mut *mut c_char` out-parameters are
//! released with its [`FfiPluginDescriptor::drop_string`]; everything the host passes in
//! [`FfiContext`] is borrowed for the duration of the call.
#![deny(missing_docs)]

use std::ffi::{c_char, c_void};

/// Major version of the ABI: bumped on any incompatible change. Not the crate version.
pub const ABI_MAJOR: u32 = 1;
/// Minor version: bumped when fields are appended (see the table in the crate docs).
pub const ABI_MINOR: u32 = 4;
/// The plain entry symbol (`extern "C" fn() -> *const FfiPluginDescriptor`), as exported by
/// plugins built for ABI 1.0 and 1.1 and by hand-written plugins.
pub const ENTRY_SYMBOL: &str = "fairpipe_plugin_entry";
/// Prefix of the per-crate entry symbol exported since ABI 1.2: the prefix, then the crate name
/// with `-` as `_` (the library's file stem without `lib`).
pub const ENTRY_SYMBOL_PREFIX: &str = "fairpipe_plugin_entry_";

/// The entry function a plugin exports: returns its static descriptor.
pub type EntryFn = extern "C" fn() -> *const FfiPluginDescriptor;

/// A plugin's entry function vouched for as one: calling it returns a descriptor that satisfies
/// [`checked_descriptor`]'s contract. Safe code cannot make one from an arbitrary `extern "C" fn`:
/// the export macros (`fairpipe_abi::export_generator!`, `export_auditor!`) define one for their
/// crate as `FAIRPIPE_PLUGIN`, and anything else goes through the `unsafe` [`PluginEntry::new`].
/// The safe functions that call an entry (`register_builtin`, the conformance library's
/// `Subject::from_entry` and `assert_conforms`) take this type, not a bare [`EntryFn`].
#[derive(Clone, Copy)]
pub struct PluginEntry(EntryFn);

impl PluginEntry {
    /// Vouch for `entry`.
    ///
    /// # Safety
    /// `entry` must meet the contract of [`checked_descriptor`]: it returns null or a pointer to a
    /// descriptor that stays valid and unchanged for the rest of the process, led by the `u32`
    /// major and minor versions and, when its major is [`ABI_MAJOR`], laid out as
    /// [`FfiPluginDescriptor`] with valid function pointers and static NUL-terminated strings.
    pub const unsafe fn new(entry: EntryFn) -> PluginEntry {
        PluginEntry(entry)
    }

    /// Call the entry and check its descriptor ([`checked_descriptor`]).
    pub fn descriptor(self) -> Result<&'static FfiPluginDescriptor, DescriptorError> {
        // SAFETY: a `PluginEntry` is made only by the export macros or by the caller of the
        // `unsafe` `new`, who vouch for `checked_descriptor`'s contract.
        unsafe { checked_descriptor(self.0) }
    }
}

impl std::fmt::Debug for PluginEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PluginEntry({:p})", self.0 as *const ())
    }
}

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
    /// [`super::FfiCallbacks::report`].
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
    /// `rows * cols` values (may be null when `rows` is 0).
    pub data: *const f64,
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
}

/// Limits of one run; 0 means unlimited.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
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

/// Scores `rows` rows of `cols` features at `x` into `out` (one P(class 1) per row). Returns a
/// status; on failure the message is available through [`FfiContext::last_error`].
///
/// The caller passes `rows * cols` readable values at `x` and room for `rows` values at `out`.
pub type PredictFn = unsafe extern "C" fn(ctx: *mut c_void, x: *const f64, rows: usize, cols: usize, out: *mut f64) -> i32;
/// Reports progress: `done` of `total` units (total 0 when unknown).
pub type ProgressFn = unsafe extern "C" fn(ctx: *mut c_void, done: u64, total: u64);
/// Returns 1 when the host asks the plugin to stop (its wall-time budget is spent or the user
/// interrupted the run); the plugin then ends its run normally with what it found.
pub type ShouldStopFn = unsafe extern "C" fn(ctx: *mut c_void) -> u32;
/// Emits one candidate case: instance and counterpart (`cols` readable values each), their
/// probabilities and the method-defined origin code (e.g. global/local). Returns a status.
pub type EmitFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    instance: *const f64,
    counterpart: *const f64,
    cols: usize,
    p: f64,
    p_counterpart: f64,
    origin: u32,
) -> i32;
/// Sends an auditor's report: one NUL-terminated JSON document, copied by the host. Returns a status.
pub type ReportFn = unsafe extern "C" fn(ctx: *mut c_void, json: *const c_char) -> i32;
/// Copies the UTF-8 message of the host's last failed callback in this run into `out` (at most
/// `capacity` bytes, no NUL added) and returns the message's full length in bytes (0: no message).
/// A plugin calls it with a larger buffer when the length exceeds `capacity`. Since minor 2.
pub type LastErrorFn = unsafe extern "C" fn(ctx: *mut c_void, out: *mut u8, capacity: usize) -> usize;

/// Writes, for each of `rows` rows of `cols` features at `x`, P(class 1) into `p` (`rows` values)
/// and its gradient with respect to each feature into `grad` (`rows * cols` values, row-major).
/// The host computes the gradient exactly when the model under test allows it (a dense network
/// run natively, logistic regression) and by central finite differences otherwise. Returns a
/// status; on failure the message is available through [`FfiContext::last_error`]. Since minor 3.
///
/// The caller passes `rows * cols` readable values at `x`, room for `rows` values at `p` and for
/// `rows * cols` values at `grad`.
pub type GradientFn = unsafe extern "C" fn(ctx: *mut c_void, x: *const f64, rows: usize, cols: usize, p: *mut f64, grad: *mut f64) -> i32;

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

/// Everything a plugin run receives. Borrowed for the duration of the run call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FfiContext {
    /// `size_of::<FfiContext>()` as the host compiled it: fields past it are absent.
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
    /// The message of the host's last failed callback (since minor 2; called with
    /// `callbacks.ctx`). Present when `struct_size` covers it.
    pub last_error: LastErrorFn,
    /// The model's gradient (since minor 3; called with `callbacks.ctx`). Present when
    /// `struct_size` covers it.
    pub gradient: GradientFn,
    /// Model rows the host evaluates for each row of a `gradient` call: 1 when the gradient is
    /// exact, `1 + 2·cols` when it is taken by central finite differences. The host counts them
    /// all among the rows asked, so a plugin counts as many against `budget.max_queries` (since
    /// minor 4; present when `struct_size` covers it — a minor-3 host's gradient rows count one
    /// each).
    pub gradient_cost: u64,
}

impl FfiContext {
    /// Whether a context of `struct_size` bytes has the [`FfiContext::last_error`] field.
    pub fn has_last_error(struct_size: usize) -> bool {
        struct_size >= std::mem::offset_of!(FfiContext, last_error) + std::mem::size_of::<LastErrorFn>()
    }

    /// Whether a context of `struct_size` bytes has the [`FfiContext::gradient`] field.
    pub fn has_gradient(struct_size: usize) -> bool {
        struct_size >= std::mem::offset_of!(FfiContext, gradient) + std::mem::size_of::<GradientFn>()
    }

    /// Whether a context of `struct_size` bytes has the [`FfiContext::gradient_cost`] field.
    pub fn has_gradient_cost(struct_size: usize) -> bool {
        struct_size >= std::mem::offset_of!(FfiContext, gradient_cost) + std::mem::size_of::<u64>()
    }
}

/// Describe: writes the plugin's name, version, doc and parameter docs (a JSON object) into
/// `*out`; the string is owned by the plugin and released with `drop_string`.
///
/// The caller passes a valid, writable `out`.
pub type DescribeFn = unsafe extern "C" fn(out: *mut *mut c_char) -> i32;
/// Validates parameters (a NUL-terminated JSON object) without running; on failure writes a
/// message into `*error` (released with `drop_string`).
pub type ValidateFn = unsafe extern "C" fn(params_json: *const c_char, error: *mut *mut c_char) -> i32;
/// Runs the method; on failure writes a message into `*error` (released with `drop_string`).
///
/// The caller passes a context valid for the whole call. Its callbacks are thread-safe: the plugin
/// may call `predict` and `emit` from several threads during the call, never after it returns.
pub type GenerateFn = unsafe extern "C" fn(ctx: *const FfiContext, error: *mut *mut c_char) -> i32;
/// Releases a string the plugin allocated (null is ignored).
pub type DropStringFn = unsafe extern "C" fn(s: *mut c_char);

/// The descriptor a plugin's entry function returns. `abi_major` stays the first field in every
/// version.
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

// SAFETY: the descriptor holds only pointers to static, immutable strings and function pointers,
// which any thread may read.
unsafe impl Sync for FfiPluginDescriptor {}
// SAFETY: as above.
unsafe impl Send for FfiPluginDescriptor {}

/// The entry symbols a plugin library file may export, in the order a host tries them: the
/// per-crate symbol its file name implies (`libNAME.so` → `fairpipe_plugin_entry_NAME`, ABI ≥
/// 1.2), then the plain [`ENTRY_SYMBOL`] of older and hand-written plugins.
pub fn entry_symbols(file_name: &str) -> [String; 2] {
    let stem = file_name.strip_prefix(std::env::consts::DLL_PREFIX).unwrap_or(file_name);
    let stem = stem.strip_suffix(std::env::consts::DLL_SUFFIX).unwrap_or(stem).replace('-', "_");
    [format!("{ENTRY_SYMBOL_PREFIX}{stem}"), ENTRY_SYMBOL.to_string()]
}

/// Why a host refuses what an entry function returned, before reading anything but the versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DescriptorError {
    /// The entry function returned null.
    Null,
    /// The plugin was built for another ABI major (its major and minor).
    OtherMajor(u32, u32),
    /// The descriptor is smaller than this ABI's (its `struct_size`).
    TooSmall(usize),
}

impl std::fmt::Display for DescriptorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DescriptorError::Null => write!(f, "the entry function returned no descriptor"),
            DescriptorError::OtherMajor(major, minor) => {
                write!(f, "plugin ABI version {major}.{minor} does not match the host's {ABI_MAJOR}.{ABI_MINOR}")
            }
            DescriptorError::TooSmall(size) => {
                write!(f, "descriptor is {size} bytes, expected at least {}", std::mem::size_of::<FfiPluginDescriptor>())
            }
        }
    }
}

/// Call `entry` and check its descriptor the way every host must: the major first (reading
/// nothing else before it), then the size; the descriptor is static.
///
/// # Safety
/// `entry` must be a fairpipe plugin entry function: it returns null or a pointer to a descriptor
/// that stays valid and unchanged for the rest of the process, whose first two fields are the
/// `u32` major and minor versions, and which, when its major is [`ABI_MAJOR`], has the layout of
/// [`FfiPluginDescriptor`] with valid function pointers and static NUL-terminated strings.
pub unsafe fn checked_descriptor(entry: EntryFn) -> Result<&'static FfiPluginDescriptor, DescriptorError> {
    let ptr = entry();
    if ptr.is_null() {
        return Err(DescriptorError::Null);
    }
    // SAFETY: the caller guarantees the two u32 versions lead the descriptor in every ABI version.
    let (major, minor) = unsafe { ((*ptr).abi_major, (*ptr).abi_minor) };
    if major != ABI_MAJOR {
        return Err(DescriptorError::OtherMajor(major, minor));
    }
    // SAFETY: same major, so the caller guarantees this layout, static for the process.
    let descriptor: &'static FfiPluginDescriptor = unsafe { &*ptr };
    if descriptor.struct_size < std::mem::size_of::<FfiPluginDescriptor>() {
        return Err(DescriptorError::TooSmall(descriptor.struct_size));
    }
    Ok(descriptor)
}

/// What a host's [`LastErrorFn`] does with its message: copy at most `capacity` bytes of it to
/// `out` (no NUL added) and return its full length in bytes.
///
/// # Safety
/// `out` must be null or writable for `capacity` bytes, not overlapping `message`.
pub unsafe fn copy_message(message: &str, out: *mut u8, capacity: usize) -> usize {
    let n = message.len().min(capacity);
    if !out.is_null() && n > 0 {
        // SAFETY: the caller passes room for `capacity` ≥ n bytes, apart from `message`.
        unsafe { std::ptr::copy_nonoverlapping(message.as_ptr(), out, n) };
    }
    message.len()
}

#[cfg(test)]
mod helpers {
    use super::*;

    #[test]
    fn entry_symbols_follow_the_file_name() {
        let file = format!("{}fairpipe_plugin_my-method{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
        assert_eq!(entry_symbols(&file), ["fairpipe_plugin_entry_fairpipe_plugin_my_method", "fairpipe_plugin_entry"]);
    }

    #[test]
    fn copy_message_truncates_and_reports_the_full_length() {
        let mut buf = [0u8; 4];
        // SAFETY: `buf` has room for 4 bytes.
        assert_eq!(unsafe { copy_message("model down", buf.as_mut_ptr(), buf.len()) }, 10);
        assert_eq!(&buf, b"mode");
        // SAFETY: null is allowed.
        assert_eq!(unsafe { copy_message("x", std::ptr::null_mut(), 0) }, 1);
    }

    #[test]
    fn descriptors_are_checked_major_first() {
        extern "C" fn null() -> *const FfiPluginDescriptor {
            std::ptr::null()
        }
        // SAFETY: returns null, which is allowed.
        assert_eq!(unsafe { checked_descriptor(null) }.unwrap_err(), DescriptorError::Null);
        assert!(DescriptorError::OtherMajor(2, 7).to_string().contains("plugin ABI version 2.7 does not match the host's"));
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod layout {
    //! The wire layout on 64-bit targets, pinned: a change here is an ABI change and needs a
    //! version bump (a new major when an existing offset moves).
    use std::mem::{align_of, offset_of, size_of};

    use super::*;

    #[test]
    fn attribute() {
        assert_eq!(size_of::<FfiAttribute>(), 40);
        assert_eq!(align_of::<FfiAttribute>(), 8);
        assert_eq!(offset_of!(FfiAttribute, name), 0);
        assert_eq!(offset_of!(FfiAttribute, kind), 8);
        assert_eq!(offset_of!(FfiAttribute, protected), 12);
        assert_eq!(offset_of!(FfiAttribute, lower), 16);
        assert_eq!(offset_of!(FfiAttribute, upper), 24);
        assert_eq!(offset_of!(FfiAttribute, step), 32);
    }

    #[test]
    fn matrix_and_budget() {
        assert_eq!(size_of::<FfiMatrix>(), 24);
        assert_eq!(offset_of!(FfiMatrix, rows), 8);
        assert_eq!(offset_of!(FfiMatrix, cols), 16);
        assert_eq!(size_of::<FfiBudget>(), 32);
        assert_eq!(offset_of!(FfiBudget, max_iterations), 8);
        assert_eq!(offset_of!(FfiBudget, max_queries), 16);
        assert_eq!(offset_of!(FfiBudget, max_seconds), 24);
    }

    #[test]
    fn callbacks() {
        assert_eq!(size_of::<FfiCallbacks>(), 48);
        assert_eq!(offset_of!(FfiCallbacks, ctx), 0);
        assert_eq!(offset_of!(FfiCallbacks, predict), 8);
        assert_eq!(offset_of!(FfiCallbacks, progress), 16);
        assert_eq!(offset_of!(FfiCallbacks, should_stop), 24);
        assert_eq!(offset_of!(FfiCallbacks, emit), 32);
        assert_eq!(offset_of!(FfiCallbacks, report), 40);
    }

    #[test]
    fn context_appends_last_error_gradient_and_its_cost_after_the_minor_1_fields() {
        assert_eq!(offset_of!(FfiContext, struct_size), 0);
        assert_eq!(offset_of!(FfiContext, attributes), 8);
        assert_eq!(offset_of!(FfiContext, n_attributes), 16);
        assert_eq!(offset_of!(FfiContext, seeds), 24);
        assert_eq!(offset_of!(FfiContext, params_json), 48);
        assert_eq!(offset_of!(FfiContext, rng_seed), 56);
        assert_eq!(offset_of!(FfiContext, budget), 64);
        assert_eq!(offset_of!(FfiContext, gamma), 96);
        assert_eq!(offset_of!(FfiContext, callbacks), 104);
        // Minor 1 ended here (152 bytes); minor 2 appends one function pointer.
        assert_eq!(offset_of!(FfiContext, last_error), 152);
        assert!(!FfiContext::has_last_error(152));
        assert!(FfiContext::has_last_error(160));
        // Minor 2 ended here (160 bytes); minor 3 appends the gradient.
        assert_eq!(offset_of!(FfiContext, gradient), 160);
        assert!(!FfiContext::has_gradient(160));
        assert!(FfiContext::has_gradient(168));
        // Minor 3 ended here (168 bytes); minor 4 appends the gradient's cost in rows.
        assert_eq!(offset_of!(FfiContext, gradient_cost), 168);
        assert_eq!(size_of::<FfiContext>(), 176);
        assert!(!FfiContext::has_gradient_cost(168));
        assert!(FfiContext::has_gradient_cost(176));
    }

    #[test]
    fn descriptor() {
        assert_eq!(offset_of!(FfiPluginDescriptor, abi_major), 0);
        assert_eq!(offset_of!(FfiPluginDescriptor, abi_minor), 4);
        assert_eq!(offset_of!(FfiPluginDescriptor, struct_size), 8);
        assert_eq!(offset_of!(FfiPluginDescriptor, name), 16);
        assert_eq!(offset_of!(FfiPluginDescriptor, version), 24);
        assert_eq!(offset_of!(FfiPluginDescriptor, kind), 32);
        assert_eq!(offset_of!(FfiPluginDescriptor, describe), 40);
        assert_eq!(offset_of!(FfiPluginDescriptor, validate), 48);
        assert_eq!(offset_of!(FfiPluginDescriptor, generate), 56);
        assert_eq!(offset_of!(FfiPluginDescriptor, drop_string), 64);
        assert_eq!(size_of::<FfiPluginDescriptor>(), 72);
    }
}
