//! The safe side of the ABI for plugin authors: implement [`Generator`], call
//! [`export_generator!`](crate::export_generator), and use [`Host`] for everything that crosses
//! the boundary (model queries, cases, budget, cancellation).

use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use serde_json::{json, Map, Value};

use crate::domain::{Attribute, AttributeKind, Domain};
use crate::ffi::{attribute_kind, status, FfiContext};
use crate::variants::{RowCheck, Variants};

/// Key every plugin accepts, for the conformance suite: `true` makes the run panic inside the plugin.
pub const INJECT_PANIC_KEY: &str = "_inject_panic";

/// Why a plugin call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum PluginError {
    /// A parameter is unknown, of the wrong type or out of range.
    InvalidParams(String),
    /// The domain or seeds cannot be worked with.
    InvalidInput(String),
    /// The computation or a host callback failed.
    Compute(String),
    /// The budget is spent or the host asked to stop: not a failure, the run ends normally.
    Stopped,
}

impl PluginError {
    fn status(&self) -> i32 {
        match self {
            PluginError::InvalidParams(_) => status::INVALID_PARAMS,
            PluginError::InvalidInput(_) => status::INVALID_INPUT,
            PluginError::Compute(_) => status::COMPUTE,
            PluginError::Stopped => status::OK,
        }
    }

    fn message(&self) -> String {
        match self {
            PluginError::InvalidParams(m) | PluginError::InvalidInput(m) | PluginError::Compute(m) => m.clone(),
            PluginError::Stopped => "stopped".into(),
        }
    }
}

/// The type of a parameter, with its constraints.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamType {
    /// An integer at least `min`.
    Int {
        /// Smallest accepted value.
        min: i64,
    },
    /// A number within `[min, max]` (`max` may be infinite).
    Float {
        /// Smallest accepted value.
        min: f64,
        /// Largest accepted value.
        max: f64,
    },
    /// `true` or `false`.
    Bool,
    /// One of a list of strings.
    Choice(&'static [&'static str]),
}

/// One parameter of a method.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    /// Key in the pipeline's `params` table.
    pub name: &'static str,
    /// Type and constraints.
    pub ty: ParamType,
    /// Default value.
    pub default: Value,
    /// What it does (and where it comes from in the paper).
    pub doc: &'static str,
}

/// What a plugin says about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Description {
    /// One-paragraph summary, with the paper it implements.
    pub doc: &'static str,
    /// Parameters.
    pub params: Vec<ParamSpec>,
}

impl Description {
    /// The JSON form sent through `describe`.
    pub fn to_json(&self, name: &str, version: &str) -> Value {
        let params: Vec<Value> = self
            .params
            .iter()
            .map(|p| {
                let ty = match p.ty {
                    ParamType::Int { min } => json!({"type": "int", "min": min}),
                    ParamType::Float { min, max } if max.is_finite() => json!({"type": "float", "min": min, "max": max}),
                    ParamType::Float { min, .. } => json!({"type": "float", "min": min}),
                    ParamType::Bool => json!({"type": "bool"}),
                    ParamType::Choice(c) => json!({"type": "choice", "choices": c}),
                };
                json!({"name": p.name, "schema": ty, "default": p.default, "doc": p.doc})
            })
            .collect();
        json!({"name": name, "version": version, "doc": self.doc, "params": params})
    }

    /// Check a parameter object against the specs and fill in defaults.
    pub fn parse(&self, params: &Value) -> Result<Params, PluginError> {
        let empty = Map::new();
        let given = match params {
            Value::Object(m) => m,
            Value::Null => &empty,
            other => return Err(PluginError::InvalidParams(format!("parameters must be a table, found {other}"))),
        };
        let names: Vec<&str> = self.params.iter().map(|p| p.name).collect();
        let mut values = Map::new();
        for (key, value) in given {
            if key == INJECT_PANIC_KEY {
                values.insert(key.clone(), value.clone());
                continue;
            }
            let Some(spec) = self.params.iter().find(|p| p.name == key) else {
                let hint = did_you_mean(key, names.iter().copied()).map(|c| format!(" (did you mean `{c}`?)")).unwrap_or_default();
                return Err(PluginError::InvalidParams(format!("unknown parameter `{key}`{hint}; parameters: {}", names.join(", "))));
            };
            let ok = match spec.ty {
                ParamType::Int { min } => value.as_i64().is_some_and(|v| v >= min),
                ParamType::Float { min, max } => value.as_f64().is_some_and(|v| (min..=max).contains(&v)),
                ParamType::Bool => value.is_boolean(),
                ParamType::Choice(c) => value.as_str().is_some_and(|s| c.contains(&s)),
            };
            if !ok {
                let expected = match spec.ty {
                    ParamType::Int { min } => format!("an integer ≥ {min}"),
                    ParamType::Float { min, max } if max.is_finite() => format!("a number in [{min}, {max}]"),
                    ParamType::Float { min, .. } => format!("a number ≥ {min}"),
                    ParamType::Bool => "true or false".into(),
                    ParamType::Choice(c) => format!("one of {}", c.join(", ")),
                };
                return Err(PluginError::InvalidParams(format!("parameter `{key}` must be {expected}, found {value}")));
            }
            values.insert(key.clone(), value.clone());
        }
        for spec in &self.params {
            values.entry(spec.name.to_string()).or_insert_with(|| spec.default.clone());
        }
        Ok(Params { values })
    }
}

/// The closest candidate to `name` by edit distance, if it is close enough to be a plausible typo
/// (shared by plugins and the host for "did you mean" hints).
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, c)| *d <= (c.len().max(name.len()) / 3).max(2) && *d < c.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Validated parameters with defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    values: Map<String, Value>,
}

impl Params {
    /// An integer parameter (declared in the description).
    pub fn usize(&self, key: &str) -> usize {
        self.values.get(key).and_then(Value::as_i64).unwrap_or(0).max(0) as usize
    }
    /// A number parameter.
    pub fn f64(&self, key: &str) -> f64 {
        self.values.get(key).and_then(Value::as_f64).unwrap_or(0.0)
    }
    /// A boolean parameter.
    pub fn bool(&self, key: &str) -> bool {
        self.values.get(key).and_then(Value::as_bool).unwrap_or(false)
    }
    /// A choice parameter.
    pub fn str(&self, key: &str) -> &str {
        self.values.get(key).and_then(Value::as_str).unwrap_or("")
    }
}

/// A method that searches for discriminatory cases.
pub trait Generator {
    /// Plugin name (`aequitas`, `maft`…): the pipeline's `plugin = "…"`.
    const NAME: &'static str;
    /// Plugin version.
    const VERSION: &'static str;
    /// Parameters and docs.
    fn description() -> Description;
    /// Run: query the model and emit cases through `host` until done or [`PluginError::Stopped`].
    fn generate(params: &Params, host: &mut Host) -> Result<(), PluginError>;
}

/// A method that audits groups rather than searching for individual cases: it receives the data's
/// rows as [`Host::seeds`] and returns one JSON report (schema in the crate README), which the SDK
/// sends to the host.
pub trait Auditor {
    /// Plugin name (`testsgd`…): the pipeline's `plugin = "…"`.
    const NAME: &'static str;
    /// Plugin version.
    const VERSION: &'static str;
    /// Parameters and docs.
    fn description() -> Description;
    /// Run the audit and return the report.
    fn audit(params: &Params, host: &mut Host) -> Result<Value, PluginError>;
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

/// The host as a plugin sees it: domain, seeds, model, case sink, budget.
pub struct Host<'a> {
    ctx: &'a FfiContext,
    /// The input domain (categorical levels are not sent; only their count via the bounds).
    pub domain: Domain,
    /// Protected variants and the verdict rule.
    pub variants: Variants,
    /// Seed rows, row-major.
    pub seeds: Vec<f64>,
    /// Number of seed rows.
    pub n_seeds: usize,
    /// The run's random generator.
    pub rng: Xoshiro256PlusPlus,
    queries: u64,
    iterations: u64,
    generated: u64,
    started: Instant,
}

impl<'a> Host<'a> {
    /// Wrap a context.
    ///
    /// # Safety
    /// `ctx` must be a valid context whose pointers live for `'a`, as the host guarantees during a
    /// `generate` call.
    pub unsafe fn from_ffi(ctx: &'a FfiContext) -> Result<Self, PluginError> {
        if ctx.struct_size < std::mem::size_of::<FfiContext>() {
            return Err(PluginError::InvalidInput("the host's context is older than this plugin's ABI".into()));
        }
        // SAFETY: the host passes `n_attributes` valid attributes.
        let attrs = unsafe { std::slice::from_raw_parts(ctx.attributes, ctx.n_attributes) };
        let attributes = attrs
            .iter()
            .map(|a| Attribute {
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
            })
            .collect();
        let domain = Domain { attributes };
        if domain.protected_indices().is_empty() {
            return Err(PluginError::InvalidInput("the domain has no protected attribute".into()));
        }
        let seeds = if ctx.seeds.rows == 0 || ctx.seeds.data.is_null() {
            Vec::new()
        } else {
            if ctx.seeds.cols != domain.width() {
                return Err(PluginError::InvalidInput(format!("seeds have {} columns for {} attributes", ctx.seeds.cols, domain.width())));
            }
            // SAFETY: the host passes rows*cols valid values.
            unsafe { std::slice::from_raw_parts(ctx.seeds.data, ctx.seeds.rows * ctx.seeds.cols) }.to_vec()
        };
        let gamma = if ctx.gamma.is_nan() { None } else { Some(ctx.gamma) };
        Ok(Host {
            variants: Variants::new(&domain, gamma),
            domain,
            n_seeds: ctx.seeds.rows,
            seeds,
            rng: Xoshiro256PlusPlus::seed_from_u64(ctx.rng_seed),
            ctx,
            queries: 0,
            iterations: 0,
            generated: 0,
            started: Instant::now(),
        })
    }

    /// Seed row `i`.
    pub fn seed(&self, i: usize) -> &[f64] {
        let w = self.domain.width();
        &self.seeds[i * w..(i + 1) * w]
    }

    /// Number of seeds the budget allows.
    pub fn seed_limit(&self) -> usize {
        match self.ctx.budget.max_seeds {
            0 => self.n_seeds,
            m => self.n_seeds.min(m as usize),
        }
    }

    /// P(class 1) for each row of `x`; [`PluginError::Stopped`] once the query budget is spent.
    pub fn predict(&mut self, x: &[f64]) -> Result<Vec<f64>, PluginError> {
        let cols = self.domain.width();
        let rows = x.len() / cols;
        let max = self.ctx.budget.max_queries;
        if max > 0 && self.queries + rows as u64 > max {
            return Err(PluginError::Stopped);
        }
        let mut out = vec![0.0; rows];
        let code = (self.ctx.callbacks.predict)(self.ctx.callbacks.ctx, x.as_ptr(), rows, cols, out.as_mut_ptr());
        if code != status::OK {
            return Err(PluginError::Compute(format!("the host's predict failed with status {code}")));
        }
        self.queries += rows as u64;
        Ok(out)
    }

    /// Check rows (row-major) for discrimination in one batched model call.
    pub fn check(&mut self, rows: &[f64]) -> Result<Vec<RowCheck>, PluginError> {
        let scores = self.scores(rows)?;
        Ok(self.variants.verdicts(&scores))
    }

    /// Score each row of `rows` and all its protected variants in one model call: per row,
    /// `[f(x), f(x with combination 0), f(x with combination 1), …]`, concatenated.
    pub fn scores(&mut self, rows: &[f64]) -> Result<Vec<f64>, PluginError> {
        let mut batch = Vec::new();
        self.variants.batch(rows, &mut batch);
        self.predict(&batch)
    }

    /// Emit a case: `row` and its counterpart combination from a [`RowCheck`].
    pub fn emit(&mut self, row: &[f64], verdict: &RowCheck, origin: u32) -> Result<(), PluginError> {
        let counterpart = self.variants.variant(row, verdict.counterpart);
        let code = (self.ctx.callbacks.emit)(
            self.ctx.callbacks.ctx,
            row.as_ptr(),
            counterpart.as_ptr(),
            row.len(),
            verdict.p,
            verdict.p_counterpart,
            origin,
        );
        if code != status::OK {
            return Err(PluginError::Compute(format!("the host's emit failed with status {code}")));
        }
        Ok(())
    }

    /// Send an auditor's report to the host.
    pub fn report(&mut self, report: &Value) -> Result<(), PluginError> {
        let json = CString::new(report.to_string()).map_err(|_| PluginError::Compute("the report contains a NUL byte".into()))?;
        let code = (self.ctx.callbacks.report)(self.ctx.callbacks.ctx, json.as_ptr());
        if code != status::OK {
            return Err(PluginError::Compute(format!("the host's report failed with status {code}")));
        }
        Ok(())
    }

    /// Count `n` generated test inputs (reported to the host as progress).
    pub fn count_generated(&mut self, n: u64) {
        self.generated += n;
        (self.ctx.callbacks.progress)(self.ctx.callbacks.ctx, self.generated, 0);
    }

    /// Count one iteration; [`PluginError::Stopped`] when the iteration or time budget is spent or
    /// the host asks to stop.
    pub fn tick(&mut self) -> Result<(), PluginError> {
        self.iterations += 1;
        if self.should_stop() {
            return Err(PluginError::Stopped);
        }
        Ok(())
    }

    /// Whether to stop now (host request, iteration or time budget).
    pub fn should_stop(&self) -> bool {
        let b = self.ctx.budget;
        (b.max_iterations > 0 && self.iterations >= b.max_iterations)
            || (b.max_seconds > 0.0 && self.started.elapsed().as_secs_f64() >= b.max_seconds)
            || (self.ctx.callbacks.should_stop)(self.ctx.callbacks.ctx) != 0
    }

    /// Model rows scored so far.
    pub fn queries(&self) -> u64 {
        self.queries
    }
}

/// Write `message` into a plugin-owned C string at `*out` (if `out` is not null).
fn set_string(out: *mut *mut c_char, message: &str) {
    if out.is_null() {
        return;
    }
    let c = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: the caller passes a valid out-pointer; the string is freed by `drop_string`.
    unsafe { *out = c.into_raw() };
}

/// Run `f` at the boundary: catch panics, map errors to a status and a message in `*error`.
pub fn guard(error: *mut *mut c_char, f: impl FnOnce() -> Result<(), PluginError>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) | Ok(Err(PluginError::Stopped)) => status::OK,
        Ok(Err(e)) => {
            set_string(error, &e.message());
            e.status()
        }
        Err(panic) => {
            let what =
                panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
            set_string(error, &format!("the plugin panicked: {what}"));
            status::PANIC
        }
    }
}

/// Parse a NUL-terminated JSON string from the host.
///
/// # Safety
/// `json` must be null or a valid NUL-terminated string.
pub unsafe fn parse_json(json: *const c_char) -> Result<Value, PluginError> {
    if json.is_null() {
        return Ok(Value::Null);
    }
    // SAFETY: guaranteed by the caller.
    let text = unsafe { CStr::from_ptr(json) }.to_string_lossy();
    serde_json::from_str(&text).map_err(|e| PluginError::InvalidParams(format!("parameters are not valid JSON: {e}")))
}

/// The body of the exported `describe`.
pub fn describe_impl(out: *mut *mut c_char, name: &str, version: &str, description: fn() -> Description) -> i32 {
    guard(out, || {
        set_string(out, &description().to_json(name, version).to_string());
        Ok(())
    })
}

/// The body of the exported `validate`.
// The pointers follow the ABI's contract (see the crate README): these are the boundary itself.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn validate_impl(params_json: *const c_char, error: *mut *mut c_char, description: fn() -> Description) -> i32 {
    guard(error, || {
        // SAFETY: the host passes a NUL-terminated string.
        let value = unsafe { parse_json(params_json) }?;
        description().parse(&value).map(|_| ())
    })
}

/// The body of the exported run entry (`generate` in the descriptor) for both plugin kinds: parse
/// and check the parameters, honour `_inject_panic`, wrap the context, then `run`.
// The pointers follow the ABI's contract (see the crate README): these are the boundary itself.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn run_impl(
    ctx: *const FfiContext,
    error: *mut *mut c_char,
    description: fn() -> Description,
    run: impl FnOnce(&Params, &mut Host) -> Result<(), PluginError>,
) -> i32 {
    guard(error, || {
        if ctx.is_null() {
            return Err(PluginError::InvalidInput("null context".into()));
        }
        // SAFETY: the host passes a valid context for the duration of the call.
        let ctx = unsafe { &*ctx };
        // SAFETY: as above.
        let value = unsafe { parse_json(ctx.params_json) }?;
        let params = description().parse(&value)?;
        if value.get(INJECT_PANIC_KEY).and_then(Value::as_bool) == Some(true) {
            panic!("injected panic ({INJECT_PANIC_KEY} = true)");
        }
        // SAFETY: as above.
        let mut host = unsafe { Host::from_ffi(ctx) }?;
        run(&params, &mut host)
    })
}

/// Frees a string returned by this plugin.
// The pointers follow the ABI's contract (see the crate README): these are the boundary itself.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub extern "C" fn drop_string_impl(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: `s` came from `CString::into_raw` in this library.
        drop(unsafe { CString::from_raw(s) });
    }
}

/// Export a [`Generator`] as a fairpipe plugin: defines the entry symbol and its descriptor.
#[macro_export]
macro_rules! export_generator {
    ($ty:ty) => {
        $crate::__export_plugin!($ty, $crate::sdk::Generator, $crate::ffi::kind::GENERATOR, |p, h| {
            <$ty as $crate::sdk::Generator>::generate(p, h)
        });
    };
}

/// Export an [`Auditor`] as a fairpipe plugin: defines the entry symbol and its descriptor.
#[macro_export]
macro_rules! export_auditor {
    ($ty:ty) => {
        $crate::__export_plugin!($ty, $crate::sdk::Auditor, $crate::ffi::kind::AUDITOR, |p, h| {
            let report = <$ty as $crate::sdk::Auditor>::audit(p, h)?;
            h.report(&report)
        });
    };
}

/// The shared body of [`export_generator!`] and [`export_auditor!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __export_plugin {
    ($ty:ty, $tr:path, $kind:expr, $run:expr) => {
        extern "C" fn __fairpipe_describe(out: *mut *mut ::std::ffi::c_char) -> i32 {
            $crate::sdk::describe_impl(out, <$ty as $tr>::NAME, <$ty as $tr>::VERSION, <$ty as $tr>::description)
        }
        extern "C" fn __fairpipe_validate(p: *const ::std::ffi::c_char, e: *mut *mut ::std::ffi::c_char) -> i32 {
            $crate::sdk::validate_impl(p, e, <$ty as $tr>::description)
        }
        extern "C" fn __fairpipe_generate(c: *const $crate::ffi::FfiContext, e: *mut *mut ::std::ffi::c_char) -> i32 {
            $crate::sdk::run_impl(c, e, <$ty as $tr>::description, $run)
        }
        static __FAIRPIPE_DESCRIPTOR: ::std::sync::OnceLock<$crate::ffi::FfiPluginDescriptor> = ::std::sync::OnceLock::new();
        static __FAIRPIPE_NAME: ::std::sync::OnceLock<::std::ffi::CString> = ::std::sync::OnceLock::new();
        static __FAIRPIPE_VERSION: ::std::sync::OnceLock<::std::ffi::CString> = ::std::sync::OnceLock::new();
        /// The plugin's entry function, exported as `fairpipe_plugin_entry_<crate name>` so that
        /// several plugins can be linked into one executable.
        #[unsafe(export_name = concat!("fairpipe_plugin_entry_", env!("CARGO_CRATE_NAME")))]
        pub extern "C" fn fairpipe_plugin_entry() -> *const $crate::ffi::FfiPluginDescriptor {
            let name = __FAIRPIPE_NAME.get_or_init(|| ::std::ffi::CString::new(<$ty as $tr>::NAME).unwrap_or_default());
            let version = __FAIRPIPE_VERSION.get_or_init(|| ::std::ffi::CString::new(<$ty as $tr>::VERSION).unwrap_or_default());
            __FAIRPIPE_DESCRIPTOR.get_or_init(|| $crate::ffi::FfiPluginDescriptor {
                abi_major: $crate::ffi::ABI_MAJOR,
                abi_minor: $crate::ffi::ABI_MINOR,
                struct_size: ::std::mem::size_of::<$crate::ffi::FfiPluginDescriptor>(),
                name: name.as_ptr(),
                version: version.as_ptr(),
                kind: $kind,
                describe: __fairpipe_describe,
                validate: __fairpipe_validate,
                generate: __fairpipe_generate,
                drop_string: $crate::sdk::drop_string_impl,
            })
        }
    };
}
