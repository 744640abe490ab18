//! The C boundary, plugin side: the only module with `unsafe` code. The export macros generate a
//! plugin's `unsafe extern "C"` functions (with the exact types of [`crate::ffi`]) and its entry
//! symbol; each function goes through [`catch`] (panics caught, errors mapped to a status and a
//! message) and the string and context handling here.
//!
//! Plugin authors only call [`export_generator!`](crate::export_generator) or
//! [`export_auditor!`](crate::export_auditor); the rest is public for the macros' expansion.

use std::ffi::{c_char, CStr, CString};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::addr_of;

use serde_json::Value;

use crate::domain::{Attribute, AttributeKind, Domain};
use crate::ffi::{
    attribute_kind, status, DescribeFn, DropStringFn, FfiCallbacks, FfiContext, FfiPluginDescriptor, GenerateFn, GradientFn, LastErrorFn,
    ValidateFn,
};
use crate::host::{Backend, Host, RunInput};
use crate::sdk::{HostCallError, Method, ParamError, PluginError};

/// Run `f` as a boundary call: a panic becomes [`status::PANIC`] with its message, an error its
/// status and message; [`PluginError::Stopped`] is a normal end ([`status::OK`]).
pub fn catch(f: impl FnOnce() -> Result<(), PluginError>) -> Result<(), (i32, String)> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) | Ok(Err(PluginError::Stopped)) => Ok(()),
        Ok(Err(e)) => Err((error_status(&e), e.to_string())),
        Err(panic) => {
            let what =
                panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
            Err((status::PANIC, format!("the plugin panicked: {what}")))
        }
    }
}

/// The status of an error.
fn error_status(e: &PluginError) -> i32 {
    match e {
        PluginError::InvalidParams(_) => status::INVALID_PARAMS,
        PluginError::InvalidInput(_) => status::INVALID_INPUT,
        PluginError::Compute(_) | PluginError::Host { .. } => status::COMPUTE,
        PluginError::Stopped => status::OK,
    }
}

/// Write `message` into a new plugin-owned C string at `*out` (nothing when `out` is null). The
/// host frees it with [`drop_string`].
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
unsafe fn set_string(out: *mut *mut c_char, message: &str) {
    if out.is_null() {
        return;
    }
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: `out` is non-null and writable (the caller's contract).
    unsafe { out.write(c.into_raw()) };
}

/// The status of `result`, its message written to `*out` on failure.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
unsafe fn finish(result: Result<(), (i32, String)>, out: *mut *mut c_char) -> i32 {
    match result {
        Ok(()) => status::OK,
        Err((code, message)) => {
            // SAFETY: the caller's contract.
            unsafe { set_string(out, &message) };
            code
        }
    }
}

/// Parse a NUL-terminated JSON string from the host (null is an empty parameter set).
///
/// # Safety
/// `json` must be null or a valid NUL-terminated string.
unsafe fn parse_json(json: *const c_char) -> Result<Value, PluginError> {
    if json.is_null() {
        return Ok(Value::Null);
    }
    // SAFETY: non-null and NUL-terminated (the caller's contract).
    let text = unsafe { CStr::from_ptr(json) }.to_string_lossy();
    serde_json::from_str(&text).map_err(|e| PluginError::InvalidParams(ParamError::NotJson { reason: e.to_string() }))
}

/// The body of `describe` ([`DescribeFn`]): `M`'s description at `version` as JSON in `*out`.
///
/// # Safety
/// `out` must be null or valid for writing one pointer.
pub unsafe fn describe<M: Method>(out: *mut *mut c_char, version: &str) -> i32 {
    let result = catch(|| {
        let text = crate::sdk::describe::<M>(version)?.to_string();
        // SAFETY: the caller's contract.
        unsafe { set_string(out, &text) };
        Ok(())
    });
    // SAFETY: the caller's contract.
    unsafe { finish(result, out) }
}

/// The body of `validate` ([`ValidateFn`]): check the parameters without running.
///
/// # Safety
/// `params_json` must be null or a valid NUL-terminated string; `error` null or valid for writing
/// one pointer.
pub unsafe fn validate<M: Method>(params_json: *const c_char, error: *mut *mut c_char) -> i32 {
    let result = catch(|| {
        // SAFETY: the caller's contract.
        let value = unsafe { parse_json(params_json) }?;
        crate::sdk::validate::<M>(&value)
    });
    // SAFETY: the caller's contract.
    unsafe { finish(result, error) }
}

/// The body of the run entry (`generate` in the descriptor, [`GenerateFn`]) for both plugin
/// kinds: parse and check the parameters, honour `_inject_panic`, read the context, then run.
///
/// # Safety
/// `ctx` must be null or a context as [`GenerateFn`] describes (of at least the ABI 1.1 size,
/// valid with everything it points to for the whole call); `error` null or valid for writing one
/// pointer.
pub unsafe fn generate<M: Method>(ctx: *const FfiContext, error: *mut *mut c_char) -> i32 {
    let result = catch(|| {
        if ctx.is_null() {
            return Err(PluginError::InvalidInput("null context".into()));
        }
        // SAFETY: `ctx` is non-null; its `params_json` field is in every ABI version.
        let params_json = unsafe { addr_of!((*ctx).params_json).read() };
        // SAFETY: the caller's contract.
        let value = unsafe { parse_json(params_json) }?;
        let params = crate::sdk::prepare::<M>(&value)?;
        // SAFETY: the caller's contract.
        let (input, backend) = unsafe { read_context(ctx) }?;
        let mut host = Host::new(input, Box::new(backend))?;
        M::run(&params, &mut host)
    });
    // SAFETY: the caller's contract.
    unsafe { finish(result, error) }
}

/// Frees a string returned by this plugin ([`DropStringFn`]; null is ignored).
///
/// # Safety
/// `s` must be null or a string this plugin returned and not freed yet.
pub unsafe extern "C" fn drop_string(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: `s` came from `CString::into_raw` in `set_string` (the caller's contract).
        drop(unsafe { CString::from_raw(s) });
    }
}

/// The size of an ABI 1.1 context: everything before `last_error`.
const MINOR_1_CONTEXT_SIZE: usize = std::mem::offset_of!(FfiContext, last_error);

/// Copy what a run needs out of the host's context.
///
/// # Safety
/// `ctx` must be non-null and point to a context as [`GenerateFn`] describes, valid for `'a`.
unsafe fn read_context<'a>(ctx: *const FfiContext) -> Result<(RunInput, FfiBackend<'a>), PluginError> {
    // SAFETY: `struct_size` is the first field in every version (the caller's contract).
    let size = unsafe { addr_of!((*ctx).struct_size).read() };
    if size < MINOR_1_CONTEXT_SIZE {
        return Err(PluginError::InvalidInput(format!(
            "the host's context is {size} bytes, older than ABI 1.1 ({MINOR_1_CONTEXT_SIZE} bytes): upgrade fairpipe"
        )));
    }
    // SAFETY: the context is at least the 1.1 size, so every field before `last_error` is present;
    // `FfiContext` is `Copy`, and these reads copy one field each without creating a reference to
    // the (possibly shorter) whole.
    let (attributes, n_attributes, seeds, rng_seed, budget, gamma, callbacks) = unsafe {
        (
            addr_of!((*ctx).attributes).read(),
            addr_of!((*ctx).n_attributes).read(),
            addr_of!((*ctx).seeds).read(),
            addr_of!((*ctx).rng_seed).read(),
            addr_of!((*ctx).budget).read(),
            addr_of!((*ctx).gamma).read(),
            addr_of!((*ctx).callbacks).read(),
        )
    };
    let last_error = if FfiContext::has_last_error(size) {
        // SAFETY: `struct_size` covers the field.
        Some(unsafe { addr_of!((*ctx).last_error).read() })
    } else {
        None
    };
    let gradient = if FfiContext::has_gradient(size) {
        // SAFETY: `struct_size` covers the field.
        Some(unsafe { addr_of!((*ctx).gradient).read() })
    } else {
        None
    };
    // A minor-3 host does not say what a gradient row costs: one query each, as it documented.
    let gradient_cost = if FfiContext::has_gradient_cost(size) {
        // SAFETY: `struct_size` covers the field.
        unsafe { addr_of!((*ctx).gradient_cost).read() }.max(1)
    } else {
        1
    };
    let attrs = if n_attributes == 0 || attributes.is_null() {
        &[][..]
    } else {
        // SAFETY: the host passes `n_attributes` valid attributes, alive for the call.
        unsafe { std::slice::from_raw_parts(attributes, n_attributes) }
    };
    let mut list = Vec::with_capacity(attrs.len());
    for a in attrs {
        if a.name.is_null() {
            return Err(PluginError::InvalidInput("an attribute has no name".into()));
        }
        list.push(Attribute {
            // SAFETY: names are NUL-terminated strings owned by the host for the call.
            name: unsafe { CStr::from_ptr(a.name) }.to_string_lossy().into_owned(),
            kind: match a.kind {
                attribute_kind::CONTINUOUS => AttributeKind::Continuous,
                attribute_kind::CATEGORICAL => AttributeKind::Categorical { levels: Vec::new() },
                _ => AttributeKind::Integer,
            },
            lower: a.lower,
            upper: a.upper,
            step: a.step,
            protected: a.protected != 0,
        });
    }
    let domain = Domain { attributes: list };
    let seeds = if seeds.rows == 0 || seeds.data.is_null() {
        Vec::new()
    } else if seeds.cols != domain.width() {
        return Err(PluginError::InvalidInput(format!("seeds have {} columns for {} attributes", seeds.cols, domain.width())));
    } else {
        // SAFETY: the host passes rows*cols valid values, alive for the call.
        unsafe { std::slice::from_raw_parts(seeds.data, seeds.rows * seeds.cols) }.to_vec()
    };
    let gamma = if gamma.is_nan() { None } else { Some(gamma) };
    let input = RunInput { domain, seeds, rng_seed, budget, gamma };
    Ok((input, FfiBackend { callbacks, last_error, gradient, gradient_cost, _call: PhantomData }))
}

/// The real host's callbacks, valid for the run call `'a`.
struct FfiBackend<'a> {
    callbacks: FfiCallbacks,
    last_error: Option<LastErrorFn>,
    gradient: Option<GradientFn>,
    /// Model rows one gradient row costs ([`FfiContext::gradient_cost`]).
    gradient_cost: u64,
    _call: PhantomData<&'a FfiContext>,
}

impl FfiBackend<'_> {
    /// The host's message for a callback that returned `code`.
    fn message(&self, code: i32) -> String {
        let Some(last_error) = self.last_error else { return format!("status {code}") };
        let mut buf = vec![0u8; 256];
        // SAFETY: `buf` has `buf.len()` writable bytes; `callbacks.ctx` is the host's context for
        // this call.
        let mut len = unsafe { last_error(self.callbacks.ctx, buf.as_mut_ptr(), buf.len()) };
        if len > buf.len() {
            buf.resize(len, 0);
            // SAFETY: as above, with the larger buffer.
            len = unsafe { last_error(self.callbacks.ctx, buf.as_mut_ptr(), buf.len()) };
        }
        buf.truncate(len.min(buf.len()));
        if buf.is_empty() {
            format!("status {code}")
        } else {
            String::from_utf8_lossy(&buf).into_owned()
        }
    }

    /// `Ok` for [`status::OK`], else the host's refusal with its message.
    fn status(&self, code: i32) -> Result<(), HostCallError> {
        if code == status::OK {
            Ok(())
        } else {
            Err(HostCallError::Refused(self.message(code)))
        }
    }
}

impl Backend for FfiBackend<'_> {
    fn predict(&mut self, x: &[f64], cols: usize, out: &mut [f64]) -> Result<(), HostCallError> {
        debug_assert_eq!(x.len(), out.len() * cols);
        // SAFETY: `x` holds `out.len() * cols` values and `out` room for `out.len()`; the host's
        // context and callbacks are valid for the run (`'a`).
        let code = unsafe { (self.callbacks.predict)(self.callbacks.ctx, x.as_ptr(), out.len(), cols, out.as_mut_ptr()) };
        self.status(code)
    }

    fn has_gradient(&self) -> bool {
        self.gradient.is_some()
    }

    fn gradient_cost(&self, _cols: usize) -> u64 {
        self.gradient_cost
    }

    fn gradient(&mut self, x: &[f64], cols: usize, p: &mut [f64], grad: &mut [f64]) -> Result<(), HostCallError> {
        let Some(gradient) = self.gradient else { return Err(HostCallError::NoGradient) };
        debug_assert_eq!(x.len(), p.len() * cols);
        debug_assert_eq!(x.len(), grad.len());
        // SAFETY: `x` holds `p.len() * cols` values, `p` room for `p.len()` and `grad` for
        // `x.len()`; the host's context and callbacks are valid for the run (`'a`).
        let code = unsafe { gradient(self.callbacks.ctx, x.as_ptr(), p.len(), cols, p.as_mut_ptr(), grad.as_mut_ptr()) };
        self.status(code)
    }

    fn emit(&mut self, instance: &[f64], counterpart: &[f64], p: f64, p_counterpart: f64, origin: u32) -> Result<(), HostCallError> {
        debug_assert_eq!(instance.len(), counterpart.len());
        // SAFETY: both rows hold `instance.len()` values; context and callbacks valid for the run.
        let code = unsafe {
            (self.callbacks.emit)(self.callbacks.ctx, instance.as_ptr(), counterpart.as_ptr(), instance.len(), p, p_counterpart, origin)
        };
        self.status(code)
    }

    fn report(&mut self, json: &str) -> Result<(), HostCallError> {
        let json = CString::new(json).map_err(|_| HostCallError::NulInReport)?;
        // SAFETY: `json` is NUL-terminated and outlives the call; context and callbacks valid.
        let code = unsafe { (self.callbacks.report)(self.callbacks.ctx, json.as_ptr()) };
        self.status(code)
    }

    fn progress(&mut self, done: u64) {
        // SAFETY: context and callbacks valid for the run.
        unsafe { (self.callbacks.progress)(self.callbacks.ctx, done, 0) }
    }

    fn should_stop(&mut self) -> bool {
        // SAFETY: context and callbacks valid for the run.
        unsafe { (self.callbacks.should_stop)(self.callbacks.ctx) != 0 }
    }
}

/// A plugin's static descriptor with the strings it points to.
pub struct Exported {
    descriptor: FfiPluginDescriptor,
    _name: CString,
    _version: CString,
}

impl Exported {
    /// The descriptor of `M` at `version` with the given entry functions.
    pub fn new<M: Method>(version: &str, describe: DescribeFn, validate: ValidateFn, generate: GenerateFn, drop: DropStringFn) -> Self {
        let name = CString::new(M::NAME).unwrap_or_default();
        let version = CString::new(version).unwrap_or_default();
        let descriptor = FfiPluginDescriptor {
            abi_major: crate::ffi::ABI_MAJOR,
            abi_minor: crate::ffi::ABI_MINOR,
            struct_size: std::mem::size_of::<FfiPluginDescriptor>(),
            // The CStrings' buffers do not move when `Exported` does.
            name: name.as_ptr(),
            version: version.as_ptr(),
            kind: M::KIND,
            describe,
            validate,
            generate,
            drop_string: drop,
        };
        Exported { descriptor, _name: name, _version: version }
    }

    /// The descriptor.
    pub fn descriptor(&self) -> *const FfiPluginDescriptor {
        &self.descriptor
    }
}

/// Export a [`Generator`](crate::sdk::Generator) as a fairpipe plugin: defines its `extern "C"`
/// functions and the entry function `fairpipe_plugin_entry` at the crate root, exported as the
/// symbol `fairpipe_plugin_entry_<crate name>`, and `FAIRPIPE_PLUGIN`, that entry as a
/// [`PluginEntry`](crate::ffi::PluginEntry). The plugin's version is its crate's version.
#[macro_export]
macro_rules! export_generator {
    ($ty:ty) => {
        $crate::__export_plugin!($crate::sdk::AsGenerator<$ty>);
    };
}

/// Export an [`Auditor`](crate::sdk::Auditor) as a fairpipe plugin (see
/// [`export_generator!`](crate::export_generator)).
#[macro_export]
macro_rules! export_auditor {
    ($ty:ty) => {
        $crate::__export_plugin!($crate::sdk::AsAuditor<$ty>);
    };
}

/// The shared body of [`export_generator!`](crate::export_generator) and
/// [`export_auditor!`](crate::export_auditor).
#[doc(hidden)]
#[macro_export]
macro_rules! __export_plugin {
    ($method:ty) => {
        /// The descriptor's `describe` (`fairpipe_abi::ffi::DescribeFn`).
        ///
        /// # Safety
        /// `out` is null or valid for writing one pointer.
        unsafe extern "C" fn __fairpipe_describe(out: *mut *mut ::std::ffi::c_char) -> i32 {
            // SAFETY: this function's contract is `describe`'s.
            unsafe { $crate::export::describe::<$method>(out, ::core::env!("CARGO_PKG_VERSION")) }
        }

        /// The descriptor's `validate` (`fairpipe_abi::ffi::ValidateFn`).
        ///
        /// # Safety
        /// As `fairpipe_abi::export::validate`.
        unsafe extern "C" fn __fairpipe_validate(p: *const ::std::ffi::c_char, e: *mut *mut ::std::ffi::c_char) -> i32 {
            // SAFETY: this function's contract is `validate`'s.
            unsafe { $crate::export::validate::<$method>(p, e) }
        }

        /// The descriptor's `generate` (`fairpipe_abi::ffi::GenerateFn`).
        ///
        /// # Safety
        /// As `fairpipe_abi::export::generate`.
        unsafe extern "C" fn __fairpipe_generate(c: *const $crate::ffi::FfiContext, e: *mut *mut ::std::ffi::c_char) -> i32 {
            // SAFETY: this function's contract is `generate`'s.
            unsafe { $crate::export::generate::<$method>(c, e) }
        }

        static __FAIRPIPE_EXPORTED: ::std::sync::OnceLock<$crate::export::Exported> = ::std::sync::OnceLock::new();

        /// The plugin's entry function: its static descriptor. Exported as the symbol
        /// `fairpipe_plugin_entry_<crate name>`.
        #[unsafe(export_name = ::core::concat!("fairpipe_plugin_entry_", ::core::env!("CARGO_CRATE_NAME")))]
        pub extern "C" fn fairpipe_plugin_entry() -> *const $crate::ffi::FfiPluginDescriptor {
            __FAIRPIPE_EXPORTED
                .get_or_init(|| {
                    $crate::export::Exported::new::<$method>(
                        ::core::env!("CARGO_PKG_VERSION"),
                        __fairpipe_describe,
                        __fairpipe_validate,
                        __fairpipe_generate,
                        $crate::export::drop_string,
                    )
                })
                .descriptor()
        }

        /// This crate's entry function, vouched for: what `register_builtin`, the conformance
        /// library's `Subject::from_entry` and `assert_conforms` take.
        pub const FAIRPIPE_PLUGIN: $crate::ffi::PluginEntry =
            // SAFETY: `fairpipe_plugin_entry` above returns the static descriptor `Exported`
            // builds, led by the ABI versions and laid out as `FfiPluginDescriptor`.
            unsafe { $crate::ffi::PluginEntry::new(fairpipe_plugin_entry) };
    };
}

#[cfg(test)]
mod tests {
    //! The boundary exercised as the host does: through the descriptor of a generator exported with
    //! the macro, with a hand-built context and callbacks.

    use std::ffi::c_void;

    use serde::{Deserialize, Serialize};
    use serde_json::json;

    use super::*;
    use crate::ffi::{FfiAttribute, FfiBudget, FfiMatrix};
    use crate::sdk::{at_least, origin, Generator, PluginParams};
    use crate::variants::RowCheck;

    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct DemoParams {
        samples: usize,
        fail: bool,
        gradient: bool,
    }

    impl Default for DemoParams {
        fn default() -> Self {
            DemoParams { samples: 20, fail: false, gradient: false }
        }
    }

    impl PluginParams for DemoParams {
        const DOCS: &'static [(&'static str, &'static str)] = &[
            ("samples", "inputs to draw"),
            ("fail", "fail with a compute error"),
            ("gradient", "ask for the gradients of the samples and emit those whose first component exceeds 0.5"),
        ];
        fn check(&self) -> Result<(), ParamError> {
            at_least("samples", self.samples, 1)
        }
    }

    struct Demo;

    impl Generator for Demo {
        const NAME: &'static str = "demo";
        const DOC: &'static str = "A demo generator: uniform samples, emitted when discriminatory.";
        type Params = DemoParams;
        fn generate(params: &DemoParams, host: &mut Host) -> Result<(), PluginError> {
            if params.fail {
                return Err(PluginError::Compute("asked to fail".into()));
            }
            let rows = host.domain.sample_rows(&mut host.rng, params.samples);
            if params.gradient {
                let (p, grad) = host.gradient(&rows)?;
                let width = host.domain.width();
                for ((row, &p), g) in rows.chunks_exact(width).zip(&p).zip(grad.chunks_exact(width)) {
                    if g[0] > 0.5 {
                        host.emit(row, &RowCheck { discriminatory: true, p, counterpart: 0, p_counterpart: p }, origin::GLOBAL)?;
                    }
                }
                return Ok(());
            }
            for (row, v) in rows.chunks_exact(host.domain.width()).zip(host.check(&rows)?) {
                if v.discriminatory {
                    host.emit(row, &v, origin::GLOBAL)?;
                }
            }
            Ok(())
        }
    }

    crate::export_generator!(Demo);

    /// The host side of the test: what the callbacks saw.
    #[derive(Default)]
    struct TestHost {
        fail_predict: bool,
        emitted: usize,
        predicted_rows: usize,
        gradient_rows: usize,
    }

    unsafe extern "C" fn predict(ctx: *mut c_void, x: *const f64, rows: usize, cols: usize, out: *mut f64) -> i32 {
        // SAFETY: `ctx` is the test's `TestHost`, exclusively ours during the call.
        let host = unsafe { &mut *ctx.cast::<TestHost>() };
        if host.fail_predict {
            return status::COMPUTE;
        }
        // SAFETY: the plugin passes rows*cols values and room for rows results.
        let (x, out) = unsafe { (std::slice::from_raw_parts(x, rows * cols), std::slice::from_raw_parts_mut(out, rows)) };
        for (o, r) in out.iter_mut().zip(x.chunks_exact(cols)) {
            *o = if r[0] + 2.0 * r[1] >= 6.0 { 0.9 } else { 0.1 };
        }
        host.predicted_rows += rows;
        status::OK
    }

    /// An "exact" gradient of (1, 2) at every row, P = 0.5.
    unsafe extern "C" fn gradient(ctx: *mut c_void, _x: *const f64, rows: usize, cols: usize, p: *mut f64, grad: *mut f64) -> i32 {
        // SAFETY: as in `predict`.
        let host = unsafe { &mut *ctx.cast::<TestHost>() };
        // SAFETY: the plugin passes room for rows probabilities and rows*cols gradients.
        let (p, grad) = unsafe { (std::slice::from_raw_parts_mut(p, rows), std::slice::from_raw_parts_mut(grad, rows * cols)) };
        p.fill(0.5);
        for g in grad.chunks_exact_mut(cols) {
            g.copy_from_slice(&[1.0, 2.0]);
        }
        host.gradient_rows += rows;
        status::OK
    }

    unsafe extern "C" fn progress(_ctx: *mut c_void, _done: u64, _total: u64) {}

    unsafe extern "C" fn should_stop(_ctx: *mut c_void) -> u32 {
        0
    }

    unsafe extern "C" fn emit(ctx: *mut c_void, x: *const f64, y: *const f64, cols: usize, _p: f64, _q: f64, _origin: u32) -> i32 {
        // SAFETY: as in `predict`.
        let host = unsafe { &mut *ctx.cast::<TestHost>() };
        // SAFETY: the plugin passes `cols` values per row.
        let (x, y) = unsafe { (std::slice::from_raw_parts(x, cols), std::slice::from_raw_parts(y, cols)) };
        assert_eq!(x[0], y[0]);
        host.emitted += 1;
        status::OK
    }

    unsafe extern "C" fn report(_ctx: *mut c_void, _json: *const c_char) -> i32 {
        status::OK
    }

    unsafe extern "C" fn last_error(_ctx: *mut c_void, out: *mut u8, capacity: usize) -> usize {
        let message = "the model server answered 503 ".repeat(20);
        // SAFETY: the plugin passes `capacity` writable bytes.
        unsafe { crate::ffi::copy_message(&message, out, capacity) }
    }

    fn descriptor() -> &'static FfiPluginDescriptor {
        // SAFETY: the entry returns a pointer to a static descriptor.
        unsafe { &*fairpipe_plugin_entry() }
    }

    /// Take a plugin-owned string.
    fn take(s: *mut c_char) -> String {
        assert!(!s.is_null());
        // SAFETY: a NUL-terminated string the plugin returned, freed right after.
        let text = unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned();
        // SAFETY: returned by this plugin, not freed yet.
        unsafe { (descriptor().drop_string)(s) };
        text
    }

    /// Run the demo plugin through its descriptor: (status, error message, host record).
    fn run(params: serde_json::Value, host: TestHost, struct_size: usize) -> (i32, String, TestHost) {
        let mut host = host;
        let names = [c"a", c"sex"];
        let attributes: Vec<FfiAttribute> = names
            .iter()
            .enumerate()
            .map(|(i, n)| FfiAttribute {
                name: n.as_ptr(),
                kind: attribute_kind::INTEGER,
                protected: u32::from(i == 1),
                lower: 0.0,
                upper: if i == 1 { 1.0 } else { 10.0 },
                step: 1.0,
            })
            .collect();
        let params = CString::new(params.to_string()).unwrap();
        let ctx = FfiContext {
            struct_size,
            attributes: attributes.as_ptr(),
            n_attributes: attributes.len(),
            seeds: FfiMatrix { data: std::ptr::null(), rows: 0, cols: 2 },
            params_json: params.as_ptr(),
            rng_seed: 3,
            budget: FfiBudget::default(),
            gamma: f64::NAN,
            callbacks: FfiCallbacks { ctx: (&mut host as *mut TestHost).cast(), predict, progress, should_stop, emit, report },
            last_error,
            gradient,
            gradient_cost: 1,
        };
        let mut error: *mut c_char = std::ptr::null_mut();
        // SAFETY: a complete context, valid for the call; `error` is writable.
        let code = unsafe { (descriptor().generate)(&ctx, &mut error) };
        let message = if error.is_null() { String::new() } else { take(error) };
        (code, message, host)
    }

    #[test]
    fn the_descriptor_names_the_plugin_its_crate_version_and_the_abi() {
        let d = descriptor();
        assert_eq!((d.abi_major, d.abi_minor, d.kind), (crate::ffi::ABI_MAJOR, crate::ffi::ABI_MINOR, crate::ffi::kind::GENERATOR));
        assert_eq!(d.struct_size, std::mem::size_of::<FfiPluginDescriptor>());
        // SAFETY: static NUL-terminated strings of the descriptor.
        let (name, version) = unsafe { (CStr::from_ptr(d.name), CStr::from_ptr(d.version)) };
        assert_eq!((name.to_str().unwrap(), version.to_str().unwrap()), ("demo", env!("CARGO_PKG_VERSION")));
        assert_eq!(fairpipe_plugin_entry(), fairpipe_plugin_entry(), "one static descriptor");
        // The vouched-for entry the macro defines checks out to the same descriptor.
        let checked = FAIRPIPE_PLUGIN.descriptor().expect("the export's entry passes the host's checks");
        assert!(std::ptr::eq(checked, d));
    }

    #[test]
    fn describe_returns_the_json_document() {
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: `out` is writable.
        assert_eq!(unsafe { (descriptor().describe)(&mut out) }, status::OK);
        let d: serde_json::Value = serde_json::from_str(&take(out)).unwrap();
        assert_eq!(d["name"], "demo");
        assert_eq!(d["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(d["doc"], Demo::DOC);
        assert_eq!(d["params"][0], json!({"name": "samples", "schema": {"type": "int"}, "default": 20, "doc": "inputs to draw"}));
        assert_eq!(d["params"][1]["default"], false);
    }

    #[test]
    fn validate_returns_a_status_and_a_message() {
        let check = |params: &str| {
            let json = CString::new(params).unwrap();
            let mut error: *mut c_char = std::ptr::null_mut();
            // SAFETY: a NUL-terminated string and a writable out-pointer.
            let code = unsafe { (descriptor().validate)(json.as_ptr(), &mut error) };
            (code, if error.is_null() { String::new() } else { take(error) })
        };
        assert_eq!(check(r#"{"samples": 3, "_inject_panic": true}"#), (status::OK, String::new()));
        assert_eq!(
            check(r#"{"sample": 3}"#),
            (status::INVALID_PARAMS, "unknown parameter `sample` (did you mean `samples`?); parameters: samples, fail, gradient".into())
        );
        assert_eq!(check(r#"{"samples": 0}"#), (status::INVALID_PARAMS, "parameter `samples` must be ≥ 1, found 0".into()));
        let (code, message) = check("{not json");
        assert_eq!(code, status::INVALID_PARAMS);
        assert!(message.starts_with("parameters are not valid JSON"), "{message}");
        // SAFETY: null parameters are allowed; a null error pointer is ignored.
        assert_eq!(unsafe { (descriptor().validate)(std::ptr::null(), std::ptr::null_mut()) }, status::OK);
    }

    #[test]
    fn generate_runs_the_method_against_the_callbacks() {
        let (code, message, host) = run(json!({"samples": 200}), TestHost::default(), std::mem::size_of::<FfiContext>());
        assert_eq!((code, message.as_str()), (status::OK, ""));
        assert_eq!(host.predicted_rows, 200 * 3);
        assert!(host.emitted > 0);
    }

    #[test]
    fn errors_and_panics_come_back_as_a_status_and_a_message() {
        let size = std::mem::size_of::<FfiContext>();
        let (code, message, _) = run(json!({"fail": true}), TestHost::default(), size);
        assert_eq!((code, message.as_str()), (status::COMPUTE, "asked to fail"));
        let (code, message, host) = run(json!({"_inject_panic": true}), TestHost::default(), size);
        assert_eq!(code, status::PANIC);
        assert!(message.contains("the plugin panicked: injected panic"), "{message}");
        assert_eq!(host.predicted_rows, 0);
        // SAFETY: a null context is refused, not read.
        let code = unsafe { (descriptor().generate)(std::ptr::null(), std::ptr::null_mut()) };
        assert_eq!(code, status::INVALID_INPUT);
    }

    #[test]
    fn a_failed_callback_carries_the_hosts_message_when_the_context_has_it() {
        let failing = || TestHost { fail_predict: true, ..TestHost::default() };
        let (code, message, _) = run(json!({}), failing(), std::mem::size_of::<FfiContext>());
        assert_eq!(code, status::COMPUTE);
        let expected = format!("the host's predict failed: {}", "the model server answered 503 ".repeat(20));
        assert_eq!(message, expected, "the whole message, longer than the first buffer");
        // An ABI 1.1 host's context ends before `last_error`.
        let (code, message, _) = run(json!({}), failing(), MINOR_1_CONTEXT_SIZE);
        assert_eq!((code, message.as_str()), (status::COMPUTE, "the host's predict failed: status 3"));
        let (code, message, _) = run(json!({}), failing(), MINOR_1_CONTEXT_SIZE - 8);
        assert_eq!(code, status::INVALID_INPUT);
        assert!(message.contains("older than ABI 1.1"), "{message}");
    }

    #[test]
    fn gradients_come_from_the_host_or_from_finite_differences_under_an_older_host() {
        let (code, message, host) = run(json!({"samples": 30, "gradient": true}), TestHost::default(), std::mem::size_of::<FfiContext>());
        assert_eq!((code, message.as_str()), (status::OK, ""));
        assert_eq!((host.gradient_rows, host.predicted_rows, host.emitted), (30, 0, 30), "one gradient call, every row's (1, 2) seen");
        // An ABI 1.2 host's context ends before `gradient`: the SDK scores x and x ± h·e_i.
        let minor_2 = std::mem::offset_of!(FfiContext, gradient);
        let (code, message, host) = run(json!({"samples": 30, "gradient": true}), TestHost::default(), minor_2);
        assert_eq!((code, message.as_str()), (status::OK, ""));
        assert_eq!((host.gradient_rows, host.predicted_rows), (0, 30 * 5));
        assert!(host.emitted < 30, "the step model is flat almost everywhere: {} rows with a slope", host.emitted);
    }

    #[test]
    fn catch_maps_stopped_to_ok() {
        assert_eq!(catch(|| Err(PluginError::Stopped)), Ok(()));
        assert_eq!(catch(|| Err(PluginError::InvalidInput("x".into()))), Err((status::INVALID_INPUT, "x".into())));
        assert_eq!(catch(|| panic!("boom {}", 1)), Err((status::PANIC, "the plugin panicked: boom 1".into())));
    }
}
