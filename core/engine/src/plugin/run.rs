//! Running a plugin: the context and callbacks the host hands it, and what comes back. Every
//! callback catches its own panics and returns a status; its error text is kept for the plugin's
//! `last_error` call. `should_stop` answers 1 once the wall-time budget is spent or the user has
//! interrupted the run ([`crate::interrupt`]).

use std::borrow::Cow;
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use fairpipe_abi::domain::{AttributeKind, Domain};
use fairpipe_abi::variants::Link;
use fairpipe_ffi::{self as ffi, status, FfiAttribute, FfiBudget, FfiCallbacks, FfiContext, FfiMatrix};

use super::{take_string, Plugin, PluginHostError};
use crate::oracle::Oracle;

/// One case a plugin emitted.
#[derive(Debug, Clone, PartialEq)]
pub struct EmittedCase {
    /// The instance.
    pub instance: Vec<f64>,
    /// Its counterpart.
    pub counterpart: Vec<f64>,
    /// The plugin's P(class 1) for the instance (not trusted).
    pub p: f64,
    /// The plugin's P(class 1) for the counterpart (not trusted).
    pub p_counterpart: f64,
    /// Method-defined origin code.
    pub origin: u32,
    /// Seconds since the run started.
    pub at_s: f64,
}

/// What a plugin run produced.
#[derive(Debug, Clone, Default)]
pub struct GenerateOutput {
    /// Emitted cases, in order.
    pub cases: Vec<EmittedCase>,
    /// Test inputs generated, as the plugin reported.
    pub generated: u64,
    /// An auditor's report (JSON), when the plugin sent one.
    pub report: Option<serde_json::Value>,
    /// Whether the host told the plugin to stop (its wall-time budget was spent).
    pub stopped_by_host: bool,
    /// The model's budget that ended the search (`"max_requests"`, `"max_tokens_total"` of an
    /// LLM), when one did ([`crate::models::Model::budget_spent`]): the search's cases so far
    /// are kept.
    pub budget: Option<String>,
    /// What the plugin's `predict` calls did: rows asked for, rows sent to the model, rows
    /// answered by the oracle's score cache ([`crate::score_cache`]).
    pub tally: crate::oracle::CacheTally,
    /// What the plugin's `gradient` calls did, when it made any.
    pub gradient: Option<GradientUse>,
    /// Rows the plugin asked the model about (`predict` or `gradient`) that lay outside the
    /// domain and were held to it before the model saw them ([`held_to_domain`]); always 0 for a
    /// model that takes any real input, which sees every row as asked.
    pub held: u64,
}

/// A plugin's use of the `gradient` callback (ABI 1.3) in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GradientUse {
    /// How the gradients were computed.
    pub method: crate::oracle::GradientMethod,
    /// Rows whose gradient the plugin asked for.
    pub rows: u64,
    /// Model rows evaluated for them (the rows themselves when exact; 1 + 2·width per row by
    /// finite differences).
    pub model_rows: u64,
}

/// Limits and seeds of a run.
#[derive(Debug, Clone)]
pub struct RunSpec<'a> {
    /// Plugin parameters (a JSON object).
    pub params: &'a serde_json::Value,
    /// Seed rows, row-major.
    pub seeds: &'a [f64],
    /// Random seed.
    pub rng_seed: u64,
    /// Budget.
    pub budget: FfiBudget,
    /// γ, or `None` to compare labels.
    pub gamma: Option<f64>,
}

/// Seconds a plugin has to return once it has been asked to stop (its `max_seconds` spent, or
/// Ctrl-C); past them the run ends with [`PluginHostError::Unresponsive`] and the plugin's call is
/// abandoned on its thread.
pub const GRACE_SECONDS: f64 = 2.0;

/// The host's side of one run, behind the callbacks' opaque `ctx`. Owned (the oracle and the
/// progress bar are shared handles), so the plugin's thread can outlive a call the host abandons.
struct HostState {
    oracle: Oracle,
    width: usize,
    /// The domain every row the plugin asks about is held to ([`held_to_domain`]), for a model
    /// that does not take any real input; `None` for one that does
    /// ([`crate::oracle::Model::takes_any_real_input`]), which is shown each row as asked.
    hold: Option<Domain>,
    /// Rows held to the domain so far.
    held: AtomicU64,
    /// Columns changed with their protected attribute (a load stage's `linked`): every row the
    /// plugin asks about or emits is made to agree with them ([`with_links`]).
    links: Vec<Link>,
    cases: Mutex<Vec<EmittedCase>>,
    report: Mutex<Option<String>>,
    last_error: Mutex<String>,
    generated: AtomicU64,
    /// The inputs the plugin expects to generate, when it says (the `progress` callback's
    /// `total`; 0: not said).
    total: AtomicU64,
    asked: AtomicU64,
    scored: AtomicU64,
    hits: AtomicU64,
    gradient_rows: AtomicU64,
    gradient_model_rows: AtomicU64,
    stopped_by_host: AtomicBool,
    max_seconds: f64,
    started: Instant,
    progress: indicatif::ProgressBar,
}

impl HostState {
    /// Whether the host asks the plugin to stop: its wall-time budget is spent or the user
    /// interrupted the run.
    fn stop_requested(&self) -> bool {
        let out_of_time = self.max_seconds > 0.0 && self.started.elapsed().as_secs_f64() >= self.max_seconds;
        out_of_time || crate::interrupt::requested() || self.oracle.model().budget_spent().is_some()
    }

    /// `x` as the model is to see it: held to the domain unless the model takes any real input,
    /// with the rows held counted.
    fn as_model_sees<'a>(&self, x: &'a [f64]) -> Cow<'a, [f64]> {
        let Some(domain) = &self.hold else { return Cow::Borrowed(x) };
        let (input, held) = held_to_domain(domain, x);
        self.held.fetch_add(held, Ordering::Relaxed);
        input
    }

    /// Remember `message` for the plugin's `last_error` call and return `code`.
    fn fail(&self, code: i32, message: impl Into<String>) -> i32 {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = message.into();
        code
    }
}

/// `x` (rows of the domain's width, row-major) held to `domain`, so that a model that reads
/// categories by name or rounds its inputs (one that does not
/// [take any real input](crate::oracle::Model::takes_any_real_input)) never sees a value outside
/// it whatever a plugin proposes (a search's gradient probe one level past a category's last, or
/// between two levels): each value is clamped into its attribute's bounds, and a category's
/// onto its nearest level. Integer and continuous values inside the bounds are left as they are (a
/// plugin may probe between grid points). Borrowed when every row already lies in the domain; the
/// count is the rows that did not.
pub fn held_to_domain<'a>(domain: &Domain, x: &'a [f64]) -> (Cow<'a, [f64]>, u64) {
    let hold = |a: &fairpipe_abi::domain::Attribute, v: f64| -> f64 {
        if v.is_nan() || a.lower.is_nan() || a.upper.is_nan() || a.lower > a.upper {
            return v;
        }
        match a.kind {
            AttributeKind::Categorical { .. } => a.clip(v),
            _ => v.clamp(a.lower, a.upper),
        }
    };
    let width = domain.width();
    if width == 0 {
        return (Cow::Borrowed(x), 0);
    }
    let outside = |row: &[f64]| row.iter().zip(&domain.attributes).any(|(&v, a)| hold(a, v).to_bits() != v.to_bits());
    if !x.chunks_exact(width).any(outside) {
        return (Cow::Borrowed(x), 0);
    }
    let mut held = x.to_vec();
    let mut count = 0;
    for row in held.chunks_exact_mut(width) {
        if outside(row) {
            count += 1;
            for (v, a) in row.iter_mut().zip(&domain.attributes) {
                *v = hold(a, *v);
            }
        }
    }
    (Cow::Owned(held), count)
}

/// `x` (rows of `width` values) made to agree with `links` ([`Link::apply`]): a plugin builds its
/// counterparts without knowing the links (the ABI does not carry them), so the host makes every
/// row it is asked about or handed a person who could exist (`sex` set to Female has `Husband`
/// made `Wife`) before the model sees it. Borrowed when there are no links.
pub fn with_links<'a>(links: &[Link], width: usize, x: Cow<'a, [f64]>) -> Cow<'a, [f64]> {
    if links.is_empty() {
        return x;
    }
    let mut rows = x.into_owned();
    Link::apply_all(links, &mut rows, width);
    Cow::Owned(rows)
}

/// Run `f` on the host state behind `ctx`, turning a panic into [`status::PANIC`] with its text.
///
/// # Safety
/// `ctx` must be the `HostState` pointer the host put into the context of the running call.
unsafe fn with_state(ctx: *mut c_void, f: impl FnOnce(&HostState) -> i32) -> i32 {
    // SAFETY: guaranteed by the caller: the state outlives the plugin call that uses it.
    let state = unsafe { &*(ctx as *const HostState) };
    catch_unwind(AssertUnwindSafe(|| f(state))).unwrap_or_else(|panic| {
        let what =
            panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
        state.fail(status::PANIC, format!("the host panicked: {what}"))
    })
}

/// The `predict` callback: score rows with the model under test, through its score cache.
///
/// # Safety
/// `ctx` is the running call's host state; `x` points at `rows * cols` values and `out` at room
/// for `rows` values (the ABI's contract for [`ffi::PredictFn`]).
unsafe extern "C" fn host_predict(ctx: *mut c_void, x: *const f64, rows: usize, cols: usize, out: *mut f64) -> i32 {
    let body = |state: &HostState| {
        if cols != state.width {
            return state.fail(status::INVALID_INPUT, format!("predict: rows of {cols} values for a domain of {} attributes", state.width));
        }
        if rows == 0 {
            return status::OK;
        }
        if x.is_null() || out.is_null() {
            return state.fail(status::INVALID_INPUT, "predict: null buffer");
        }
        let Some(len) = rows.checked_mul(cols) else { return state.fail(status::INVALID_INPUT, "predict: rows × cols overflows") };
        // SAFETY: the plugin passes rows*cols readable inputs and room for rows outputs.
        let (input, output) = unsafe { (std::slice::from_raw_parts(x, len), std::slice::from_raw_parts_mut(out, rows)) };
        let input = with_links(&state.links, state.width, state.as_model_sees(input));
        match state.oracle.predict_proba_cached_into(&input, output) {
            Ok(tally) => {
                state.asked.fetch_add(tally.asked, Ordering::Relaxed);
                state.scored.fetch_add(tally.scored, Ordering::Relaxed);
                state.hits.fetch_add(tally.hits, Ordering::Relaxed);
                status::OK
            }
            Err(e) => state.fail(status::COMPUTE, format!("predict: {e}")),
        }
    };
    // SAFETY: `ctx` is the running call's state (the ABI's contract).
    unsafe { with_state(ctx, body) }
}

/// The `gradient` callback (ABI 1.3): P(class 1) and its gradient, exact or by finite differences
/// ([`Oracle::gradient_into`]); not through the score cache.
///
/// # Safety
/// `ctx` is the running call's host state; `x` points at `rows * cols` values, `p` at room for
/// `rows` values and `grad` at room for `rows * cols` (the ABI's contract for [`ffi::GradientFn`]).
unsafe extern "C" fn host_gradient(ctx: *mut c_void, x: *const f64, rows: usize, cols: usize, p: *mut f64, grad: *mut f64) -> i32 {
    let body = |state: &HostState| {
        if cols != state.width {
            return state
                .fail(status::INVALID_INPUT, format!("gradient: rows of {cols} values for a domain of {} attributes", state.width));
        }
        if rows == 0 {
            return status::OK;
        }
        if x.is_null() || p.is_null() || grad.is_null() {
            return state.fail(status::INVALID_INPUT, "gradient: null buffer");
        }
        let Some(len) = rows.checked_mul(cols) else { return state.fail(status::INVALID_INPUT, "gradient: rows × cols overflows") };
        // SAFETY: the plugin passes rows*cols readable inputs, room for rows probabilities and
        // for rows*cols gradients.
        let (input, p, grad) = unsafe {
            (std::slice::from_raw_parts(x, len), std::slice::from_raw_parts_mut(p, rows), std::slice::from_raw_parts_mut(grad, len))
        };
        let input = with_links(&state.links, state.width, state.as_model_sees(input));
        match state.oracle.gradient_into(&input, p, grad) {
            Ok(model_rows) => {
                state.gradient_rows.fetch_add(rows as u64, Ordering::Relaxed);
                state.gradient_model_rows.fetch_add(model_rows, Ordering::Relaxed);
                status::OK
            }
            Err(e) => state.fail(status::COMPUTE, format!("gradient: {e}")),
        }
    };
    // SAFETY: `ctx` is the running call's state (the ABI's contract).
    unsafe { with_state(ctx, body) }
}

/// The `progress` callback.
///
/// # Safety
/// `ctx` is the running call's host state.
unsafe extern "C" fn host_progress(ctx: *mut c_void, done: u64, total: u64) {
    let body = |state: &HostState| {
        state.generated.store(done, Ordering::Relaxed);
        state.total.store(total, Ordering::Relaxed);
        status::OK
    };
    // SAFETY: `ctx` is the running call's state.
    unsafe { with_state(ctx, body) };
}

/// The `report` callback: an auditor's JSON report, copied.
///
/// # Safety
/// `ctx` is the running call's host state; `json` is null or a NUL-terminated string.
unsafe extern "C" fn host_report(ctx: *mut c_void, json: *const c_char) -> i32 {
    let body = |state: &HostState| {
        if json.is_null() {
            return state.fail(status::INVALID_INPUT, "report: null string");
        }
        // SAFETY: the plugin passes a NUL-terminated string, copied here.
        let text = unsafe { CStr::from_ptr(json) }.to_string_lossy().into_owned();
        *state.report.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
        status::OK
    };
    // SAFETY: `ctx` is the running call's state.
    unsafe { with_state(ctx, body) }
}

/// The `should_stop` callback: 1 once the wall-time budget is spent or the user interrupted.
///
/// # Safety
/// `ctx` is the running call's host state.
unsafe extern "C" fn host_should_stop(ctx: *mut c_void) -> u32 {
    let body = |state: &HostState| {
        if state.stop_requested() {
            state.stopped_by_host.store(true, Ordering::Relaxed);
            return 1;
        }
        0
    };
    // SAFETY: `ctx` is the running call's state.
    let stop = unsafe { with_state(ctx, body) };
    u32::from(stop != 0)
}

/// The `emit` callback: one candidate case, copied.
///
/// # Safety
/// `ctx` is the running call's host state; `instance` and `counterpart` point at `cols` values each.
unsafe extern "C" fn host_emit(
    ctx: *mut c_void,
    instance: *const f64,
    counterpart: *const f64,
    cols: usize,
    p: f64,
    q: f64,
    origin: u32,
) -> i32 {
    let body = |state: &HostState| {
        if cols != state.width {
            return state.fail(status::INVALID_INPUT, format!("emit: rows of {cols} values for a domain of {} attributes", state.width));
        }
        if instance.is_null() || counterpart.is_null() {
            return state.fail(status::INVALID_INPUT, "emit: null row");
        }
        // SAFETY: the plugin passes `cols` readable values for each row.
        let (a, b) = unsafe { (std::slice::from_raw_parts(instance, cols), std::slice::from_raw_parts(counterpart, cols)) };
        let case = EmittedCase {
            instance: with_links(&state.links, cols, Cow::Borrowed(a)).into_owned(),
            counterpart: with_links(&state.links, cols, Cow::Borrowed(b)).into_owned(),
            p,
            p_counterpart: q,
            origin,
            at_s: state.started.elapsed().as_secs_f64(),
        };
        state.cases.lock().unwrap_or_else(|e| e.into_inner()).push(case);
        status::OK
    };
    // SAFETY: `ctx` is the running call's state.
    unsafe { with_state(ctx, body) }
}

/// The `last_error` callback (ABI 1.2): the text of the last failed callback.
///
/// # Safety
/// `ctx` is the running call's host state; `out` is null or has room for `capacity` bytes.
unsafe extern "C" fn host_last_error(ctx: *mut c_void, out: *mut u8, capacity: usize) -> usize {
    // SAFETY: `ctx` is the running call's state (read without `with_state`: it returns a length).
    let state = unsafe { &*(ctx as *const HostState) };
    let message = state.last_error.lock().unwrap_or_else(|e| e.into_inner()).clone();
    // SAFETY: the plugin passes null or room for `capacity` bytes, apart from our message.
    unsafe { ffi::copy_message(&message, out, capacity) }
}

/// What a search's progress line shows: a bar against its budget — the model rows asked
/// (`max_queries`) or the seconds spent (`max_seconds`) — or, without either, a bar of the inputs
/// generated when the plugin says how many it expects (the `progress` callback's `total`), else
/// the counts so far.
enum Shown {
    /// Model rows asked, of this many.
    Queries(u64),
    /// Seconds spent, of this many.
    Seconds(f64),
    /// Counts only.
    Counts,
}

impl Shown {
    /// The measure for `budget`, the bar started on `progress`.
    fn new(budget: &FfiBudget, progress: &indicatif::ProgressBar) -> Shown {
        if budget.max_queries > 0 {
            crate::progress::start(progress, budget.max_queries, "model rows of max_queries");
            Shown::Queries(budget.max_queries)
        } else if budget.max_seconds > 0.0 {
            crate::progress::start(progress, budget.max_seconds.ceil() as u64, "s of max_seconds");
            Shown::Seconds(budget.max_seconds)
        } else {
            Shown::Counts
        }
    }

    /// Show where the run behind `state` is.
    fn update(&self, state: &HostState) {
        let progress = &state.progress;
        if progress.is_hidden() {
            return;
        }
        let (generated, asked) = (state.generated.load(Ordering::Relaxed), state.asked.load(Ordering::Relaxed));
        match *self {
            Shown::Queries(max) => {
                progress.set_position(asked.min(max));
                progress.set_message(format!("model rows of max_queries; {generated} inputs generated"));
            }
            Shown::Seconds(max) => {
                progress.set_position(state.started.elapsed().as_secs_f64().min(max) as u64);
                progress.set_message(format!("s of max_seconds; {generated} inputs generated, {asked} model rows"));
            }
            Shown::Counts => match state.total.load(Ordering::Relaxed) {
                0 => progress.set_message(format!("{generated} inputs generated, {asked} model rows")),
                total => {
                    if progress.length() != Some(total) {
                        crate::progress::start(progress, total, "inputs generated");
                    }
                    progress.set_position(generated.min(total));
                }
            },
        }
    }
}

impl Plugin {
    /// Ask the plugin to check `params` without running.
    pub fn validate(&self, params: &serde_json::Value) -> Result<(), PluginHostError> {
        let json = CString::new(params.to_string()).unwrap_or_default();
        let mut error: *mut c_char = std::ptr::null_mut();
        let descriptor = self.descriptor();
        // SAFETY: `validate` is the plugin's function; the JSON is NUL-terminated and `error` a
        // valid place for its message.
        let code = unsafe { (descriptor.validate)(json.as_ptr(), &mut error) };
        // SAFETY: `error` is null or a string the plugin just allocated.
        let message = unsafe { take_string(descriptor, error) };
        match code {
            status::OK => Ok(()),
            status::PANIC => Err(PluginHostError::Failed { plugin: self.name.clone(), what: "panic".into(), message }),
            _ => Err(PluginHostError::InvalidParams { plugin: self.name.clone(), message }),
        }
    }

    /// Run the plugin against `oracle` over `domain`: a generator emits cases, an auditor sends a
    /// report (and receives the data's rows as `spec.seeds`). A run the user interrupts (SIGINT)
    /// returns [`PluginHostError::Interrupted`]; one cut by its time budget returns what it found, with
    /// [`GenerateOutput::stopped_by_host`] set.
    pub fn generate(
        &self,
        oracle: &Oracle,
        domain: &Domain,
        spec: &RunSpec,
        progress: &indicatif::ProgressBar,
    ) -> Result<GenerateOutput, PluginHostError> {
        self.generate_linked(oracle, domain, &[], spec, progress)
    }

    /// [`Plugin::generate`] with `links`: every row the plugin asks the model about, and every
    /// case it emits, is made to agree with them first ([`with_links`]), so a search whose own
    /// counterparts change the protected attribute alone is answered about the linked ones.
    pub fn generate_linked(
        &self,
        oracle: &Oracle,
        domain: &Domain,
        links: &[Link],
        spec: &RunSpec,
        progress: &indicatif::ProgressBar,
    ) -> Result<GenerateOutput, PluginHostError> {
        let names: Vec<CString> = domain.attributes.iter().map(|a| CString::new(a.name.replace('\0', " ")).unwrap_or_default()).collect();
        let kinds: Vec<(u32, u32, f64, f64, f64)> = domain
            .attributes
            .iter()
            .map(|a| {
                let kind = match a.kind {
                    AttributeKind::Integer => ffi::attribute_kind::INTEGER,
                    AttributeKind::Continuous => ffi::attribute_kind::CONTINUOUS,
                    AttributeKind::Categorical { .. } => ffi::attribute_kind::CATEGORICAL,
                };
                (kind, u32::from(a.protected), a.lower, a.upper, a.step)
            })
            .collect();
        let params = CString::new(spec.params.to_string()).unwrap_or_default();
        let state = std::sync::Arc::new(HostState {
            oracle: oracle.clone(),
            width: domain.width(),
            hold: (!oracle.model().takes_any_real_input()).then(|| domain.clone()),
            held: AtomicU64::new(0),
            links: links.to_vec(),
            cases: Mutex::new(Vec::new()),
            report: Mutex::new(None),
            last_error: Mutex::new(String::new()),
            generated: AtomicU64::new(0),
            total: AtomicU64::new(0),
            asked: AtomicU64::new(0),
            scored: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            gradient_rows: AtomicU64::new(0),
            gradient_model_rows: AtomicU64::new(0),
            stopped_by_host: AtomicBool::new(false),
            max_seconds: spec.budget.max_seconds,
            started: Instant::now(),
            progress: progress.clone(),
        });
        let seeds = spec.seeds.to_vec();
        let (width, rng_seed, budget, gamma) = (domain.width(), spec.rng_seed, spec.budget, spec.gamma);
        // What one gradient row costs in model rows (counted in `queries_asked`), so that the
        // plugin holds `max_queries` to the rows the model evaluates.
        let gradient_cost = match oracle.gradient_method() {
            crate::oracle::GradientMethod::Exact => 1,
            crate::oracle::GradientMethod::FiniteDifferences => 1 + 2 * width as u64,
        };
        let descriptor = self.descriptor();
        // The call runs on its own thread, which owns everything the context points at, so a
        // plugin that does not return when asked to stop can be abandoned.
        let (tx, rx) = std::sync::mpsc::channel::<(i32, String)>();
        let thread_state = std::sync::Arc::clone(&state);
        let spawned = std::thread::Builder::new().name(format!("plugin {}", self.name)).spawn(move || {
            let attributes: Vec<FfiAttribute> = kinds
                .iter()
                .zip(&names)
                .map(|(&(kind, protected, lower, upper, step), n)| FfiAttribute { name: n.as_ptr(), kind, protected, lower, upper, step })
                .collect();
            let ctx = FfiContext {
                struct_size: std::mem::size_of::<FfiContext>(),
                attributes: attributes.as_ptr(),
                n_attributes: attributes.len(),
                seeds: FfiMatrix { data: seeds.as_ptr(), rows: seeds.len() / width.max(1), cols: width },
                params_json: params.as_ptr(),
                rng_seed,
                budget,
                gamma: gamma.unwrap_or(f64::NAN),
                callbacks: FfiCallbacks {
                    ctx: std::sync::Arc::as_ptr(&thread_state) as *mut c_void,
                    predict: host_predict,
                    progress: host_progress,
                    should_stop: host_should_stop,
                    emit: host_emit,
                    report: host_report,
                },
                last_error: host_last_error,
                gradient: host_gradient,
                gradient_cost,
            };
            let mut error: *mut c_char = std::ptr::null_mut();
            // SAFETY: the context and everything it points at (attributes, names, seeds,
            // parameters, the host state behind the callbacks) are owned by this thread and live
            // until the call returns; `error` is a valid place for the plugin's message.
            let code = unsafe { (descriptor.generate)(&ctx, &mut error) };
            // SAFETY: `error` is null or a string the plugin just allocated.
            let message = unsafe { take_string(descriptor, error) };
            let _ = tx.send((code, message));
        });
        if let Err(e) = spawned {
            return Err(PluginHostError::Failed {
                plugin: self.name.clone(),
                what: "compute error".into(),
                message: format!("cannot start its thread: {e}"),
            });
        }
        let shown = Shown::new(&spec.budget, progress);
        let mut asked_to_stop: Option<Instant> = None;
        let (code, message) = loop {
            shown.update(&state);
            match rx.recv_timeout(std::time::Duration::from_millis(25)) {
                Ok(done) => break done,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(PluginHostError::Failed {
                        plugin: self.name.clone(),
                        what: "panic".into(),
                        message: "its thread ended without returning".into(),
                    })
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if !state.stop_requested() {
                        continue;
                    }
                    let since = *asked_to_stop.get_or_insert_with(Instant::now);
                    if since.elapsed().as_secs_f64() >= GRACE_SECONDS {
                        let why = if crate::interrupt::requested() {
                            "the run was interrupted".to_string()
                        } else if let Some(budget) = oracle.model().budget_spent() {
                            format!("the model's {budget} budget was spent")
                        } else {
                            format!("its max_seconds budget of {} s was spent", state.max_seconds)
                        };
                        return Err(PluginHostError::Unresponsive { plugin: self.name.clone(), why, grace: GRACE_SECONDS });
                    }
                }
            }
        };
        if crate::interrupt::requested() {
            return Err(PluginHostError::Interrupted { plugin: self.name.clone() });
        }
        // A search whose model ran out of budget ends there, whatever the plugin made of the
        // refused call: its cases so far stand.
        let budget = oracle.model().budget_spent();
        if code != status::OK && budget.is_none() {
            let what = match code {
                status::PANIC => "panic",
                status::INVALID_PARAMS => "invalid parameters",
                status::INVALID_INPUT => "invalid input",
                _ => "compute error",
            };
            return Err(PluginHostError::Failed { plugin: self.name.clone(), what: what.into(), message });
        }
        let stopped_by_host = state.stopped_by_host.load(Ordering::Relaxed);
        let cases = std::mem::take(&mut *state.cases.lock().unwrap_or_else(|e| e.into_inner()));
        let report = match state.report.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(text) => Some(serde_json::from_str(&text).map_err(|e| PluginHostError::Failed {
                plugin: self.name.clone(),
                what: "invalid report".into(),
                message: format!("the report is not valid JSON: {e}"),
            })?),
            None => None,
        };
        let tally = crate::oracle::CacheTally {
            asked: state.asked.load(Ordering::Relaxed),
            scored: state.scored.load(Ordering::Relaxed),
            hits: state.hits.load(Ordering::Relaxed),
        };
        let gradient_rows = state.gradient_rows.load(Ordering::Relaxed);
        let gradient = (gradient_rows > 0).then(|| GradientUse {
            method: oracle.gradient_method(),
            rows: gradient_rows,
            model_rows: state.gradient_model_rows.load(Ordering::Relaxed),
        });
        let held = state.held.load(Ordering::Relaxed);
        Ok(GenerateOutput {
            cases,
            generated: state.generated.load(Ordering::Relaxed),
            report,
            stopped_by_host: stopped_by_host || budget.is_some(),
            budget,
            tally,
            gradient,
            held,
        })
    }
}
