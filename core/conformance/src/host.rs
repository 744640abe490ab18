//! The suite's own small host: the callbacks a plugin calls during a run, over a closure model,
//! with switches to make it ask the plugin to stop or make the model fail.

use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use fairpipe_ffi::{status, FfiAttribute, FfiCallbacks, FfiContext, FfiMatrix, FfiPluginDescriptor};
use serde_json::Value;

use crate::planted::{Case, Setup};

/// The message of the model failure [`StopPolicy::FailPredict`] injects.
pub const PREDICT_FAILURE: &str = "conformance: the model server is down";

/// How the host behaves during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopPolicy {
    /// Never ask to stop; the model works.
    Never,
    /// Answer every `should_stop` with 1.
    Always,
    /// Fail every `predict` with [`PREDICT_FAILURE`].
    FailPredict,
}

/// What a run returned.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The plugin's status.
    pub status: i32,
    /// Its error message (empty on success).
    pub message: String,
    /// Cases emitted.
    pub cases: Vec<Case>,
    /// An auditor's report.
    pub report: Option<Value>,
    /// Model rows scored.
    pub rows_scored: u64,
}

struct State<'a> {
    setup: &'a Setup,
    policy: StopPolicy,
    cases: Mutex<Vec<Case>>,
    report: Mutex<Option<String>>,
    last_error: Mutex<String>,
    rows: AtomicU64,
}

/// # Safety
/// `ctx` is the running call's `State`.
unsafe fn state<'a>(ctx: *mut c_void) -> &'a State<'a> {
    // SAFETY: guaranteed by the caller.
    unsafe { &*(ctx as *const State) }
}

/// # Safety
/// The ABI's contract for `predict`.
unsafe extern "C" fn predict(ctx: *mut c_void, x: *const f64, rows: usize, cols: usize, out: *mut f64) -> i32 {
    // SAFETY: `ctx` is this run's state.
    let s = unsafe { state(ctx) };
    let fail = |m: String| {
        *s.last_error.lock().unwrap_or_else(|e| e.into_inner()) = m;
        status::COMPUTE
    };
    if s.policy == StopPolicy::FailPredict {
        return fail(PREDICT_FAILURE.into());
    }
    if cols != s.setup.attributes.len() || (rows > 0 && (x.is_null() || out.is_null())) {
        return fail(format!("predict: {rows} rows of {cols} values for {} attributes", s.setup.attributes.len()));
    }
    if rows == 0 {
        return status::OK;
    }
    // SAFETY: the plugin passes rows*cols readable values and room for rows results.
    let (input, output) = unsafe { (std::slice::from_raw_parts(x, rows * cols), std::slice::from_raw_parts_mut(out, rows)) };
    match catch_unwind(AssertUnwindSafe(|| {
        for (row, o) in input.chunks_exact(cols).zip(output.iter_mut()) {
            *o = (s.setup.model)(row);
        }
    })) {
        Ok(()) => {
            s.rows.fetch_add(rows as u64, Ordering::Relaxed);
            status::OK
        }
        Err(_) => fail("the model panicked".into()),
    }
}

/// # Safety
/// The ABI's contract for `gradient`: central differences of the model (the suite's models have no
/// exact gradient), steps of 10⁻³·max(1, |x|).
unsafe extern "C" fn gradient(ctx: *mut c_void, x: *const f64, rows: usize, cols: usize, p: *mut f64, grad: *mut f64) -> i32 {
    // SAFETY: `ctx` is this run's state.
    let s = unsafe { state(ctx) };
    if s.policy == StopPolicy::FailPredict {
        *s.last_error.lock().unwrap_or_else(|e| e.into_inner()) = PREDICT_FAILURE.into();
        return status::COMPUTE;
    }
    if cols != s.setup.attributes.len() || (rows > 0 && (x.is_null() || p.is_null() || grad.is_null())) {
        *s.last_error.lock().unwrap_or_else(|e| e.into_inner()) = format!("gradient: {rows} rows of {cols} values");
        return status::INVALID_INPUT;
    }
    if rows == 0 {
        return status::OK;
    }
    // SAFETY: the plugin passes rows*cols readable values, room for rows probabilities and for
    // rows*cols gradients.
    let (input, p, grad) = unsafe {
        (
            std::slice::from_raw_parts(x, rows * cols),
            std::slice::from_raw_parts_mut(p, rows),
            std::slice::from_raw_parts_mut(grad, rows * cols),
        )
    };
    let model = &s.setup.model;
    for ((row, p), g) in input.chunks_exact(cols).zip(p.iter_mut()).zip(grad.chunks_exact_mut(cols)) {
        *p = model(row);
        let mut probe = row.to_vec();
        for (i, gi) in g.iter_mut().enumerate() {
            let h = 1e-3 * row[i].abs().max(1.0);
            probe[i] = row[i] + h;
            let up = model(&probe);
            probe[i] = row[i] - h;
            let down = model(&probe);
            probe[i] = row[i];
            *gi = (up - down) / (2.0 * h);
        }
    }
    s.rows.fetch_add((rows * (1 + 2 * cols)) as u64, Ordering::Relaxed);
    status::OK
}

/// # Safety
/// The ABI's contract for `progress`.
unsafe extern "C" fn progress(_ctx: *mut c_void, _done: u64, _total: u64) {}

/// # Safety
/// The ABI's contract for `should_stop`.
unsafe extern "C" fn should_stop(ctx: *mut c_void) -> u32 {
    // SAFETY: `ctx` is this run's state.
    u32::from(unsafe { state(ctx) }.policy == StopPolicy::Always)
}

/// # Safety
/// The ABI's contract for `emit`.
unsafe extern "C" fn emit(
    ctx: *mut c_void,
    instance: *const f64,
    counterpart: *const f64,
    cols: usize,
    p: f64,
    q: f64,
    origin: u32,
) -> i32 {
    // SAFETY: `ctx` is this run's state.
    let s = unsafe { state(ctx) };
    if instance.is_null() || counterpart.is_null() {
        return status::INVALID_INPUT;
    }
    // SAFETY: the plugin passes `cols` readable values per row.
    let (a, b) = unsafe { (std::slice::from_raw_parts(instance, cols), std::slice::from_raw_parts(counterpart, cols)) };
    let case = Case { instance: a.to_vec(), counterpart: b.to_vec(), p, p_counterpart: q, origin };
    s.cases.lock().unwrap_or_else(|e| e.into_inner()).push(case);
    status::OK
}

/// # Safety
/// The ABI's contract for `report`.
unsafe extern "C" fn report(ctx: *mut c_void, json: *const c_char) -> i32 {
    // SAFETY: `ctx` is this run's state.
    let s = unsafe { state(ctx) };
    if json.is_null() {
        return status::INVALID_INPUT;
    }
    // SAFETY: a NUL-terminated string, copied.
    let text = unsafe { CStr::from_ptr(json) }.to_string_lossy().into_owned();
    *s.report.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
    status::OK
}

/// # Safety
/// The ABI's contract for `last_error`.
unsafe extern "C" fn last_error(ctx: *mut c_void, out: *mut u8, capacity: usize) -> usize {
    // SAFETY: `ctx` is this run's state.
    let message = unsafe { state(ctx) }.last_error.lock().unwrap_or_else(|e| e.into_inner()).clone();
    // SAFETY: the plugin passes null or room for `capacity` bytes, apart from our message.
    unsafe { fairpipe_ffi::copy_message(&message, out, capacity) }
}

/// Run the plugin of `descriptor` once.
pub(crate) fn run(descriptor: &'static FfiPluginDescriptor, setup: &Setup, params: &Value, rng_seed: u64, policy: StopPolicy) -> RunResult {
    let names: Vec<CString> = setup.attributes.iter().map(|a| CString::new(a.name.clone()).unwrap_or_default()).collect();
    let attributes: Vec<FfiAttribute> = setup
        .attributes
        .iter()
        .zip(&names)
        .map(|(a, n)| FfiAttribute {
            name: n.as_ptr(),
            kind: a.kind,
            protected: u32::from(a.protected),
            lower: a.lower,
            upper: a.upper,
            step: a.step,
        })
        .collect();
    let params = CString::new(params.to_string()).unwrap_or_default();
    let state = State {
        setup,
        policy,
        cases: Mutex::new(Vec::new()),
        report: Mutex::new(None),
        last_error: Mutex::new(String::new()),
        rows: AtomicU64::new(0),
    };
    let width = setup.attributes.len();
    let ctx = FfiContext {
        struct_size: std::mem::size_of::<FfiContext>(),
        attributes: attributes.as_ptr(),
        n_attributes: attributes.len(),
        seeds: FfiMatrix { data: setup.seeds.as_ptr(), rows: setup.seeds.len() / width.max(1), cols: width },
        params_json: params.as_ptr(),
        rng_seed,
        budget: setup.budget,
        gamma: setup.gamma.unwrap_or(f64::NAN),
        callbacks: FfiCallbacks { ctx: &state as *const State as *mut c_void, predict, progress, should_stop, emit, report },
        last_error,
        gradient,
        // This host's gradient is always by central differences.
        gradient_cost: 1 + 2 * width as u64,
    };
    let mut error: *mut c_char = std::ptr::null_mut();
    // SAFETY: the context and everything it points at live until the call returns.
    let code = unsafe { (descriptor.generate)(&ctx, &mut error) };
    let message = if error.is_null() {
        String::new()
    } else {
        // SAFETY: the plugin's NUL-terminated message, released once by its own allocator.
        unsafe {
            let text = CStr::from_ptr(error).to_string_lossy().into_owned();
            (descriptor.drop_string)(error);
            text
        }
    };
    let report = state.report.lock().unwrap_or_else(|e| e.into_inner()).as_deref().and_then(|t| serde_json::from_str(t).ok());
    RunResult {
        status: code,
        message,
        cases: state.cases.into_inner().unwrap_or_else(|e| e.into_inner()),
        report,
        rows_scored: state.rows.load(Ordering::Relaxed),
    }
}
