//! # fairpipe-conformance
//!
//! The plugin conformance suite as a library, for this workspace's tests and for plugin authors
//! outside it (a dev-dependency; it needs neither the engine nor Polars). It drives a plugin
//! through its C entry function — exactly the boundary the host uses — with a small host of its
//! own whose model is a closure, and checks the rules every fairpipe method must keep:
//!
//! 1. the descriptor: this ABI major, a full-size struct, a name and a version;
//! 2. `describe`: a JSON object whose name is the descriptor's, a doc, and for every parameter a
//!    doc and a default that passes the plugin's own validation;
//! 3. an unknown parameter is refused as invalid parameters, with a "did you mean" for a typo;
//! 4. an injected panic (`_inject_panic = true`) comes back as a panic status with its message,
//!    and the plugin still runs afterwards;
//! 5. the same seed gives the same cases (or the same groups in its report), another seed other
//!    cases;
//! 6. every case a generator emits is real: the counterpart differs from the instance only in
//!    protected attributes, and the model's labels for the two differ (or their probabilities by
//!    more than γ) — checked here, independently of the plugin's own check;
//! 7. `should_stop` is honoured: told to stop, the plugin ends normally after scoring fewer rows
//!    than a full run;
//! 8. a failing model call ends the run with an error that carries the host's message (ABI ≥ 1.2).
//! 9. `max_queries` is kept: given half the rows a plain run scored, the run ends normally having
//!    scored at most that many model rows, gradient rows counted at what they cost (ABI ≥ 1.4).
//!
//! ```no_run
//! // In a plugin crate's tests (the plugin's rlib exports its entry function):
//! // fairpipe_conformance::assert_conforms(my_plugin::FAIRPIPE_PLUGIN);
//! ```

#![deny(missing_docs)]

mod error;
mod host;
mod planted;
#[cfg(test)]
mod selftest;

use std::ffi::{c_char, CStr, CString};
use std::path::Path;

use fairpipe_ffi::{self as ffi, status, EntryFn, FfiBudget, FfiPluginDescriptor, PluginEntry};
use serde_json::{json, Value};

pub use error::SubjectError;
pub use host::{RunResult, StopPolicy, PREDICT_FAILURE};
pub use planted::Case;
pub use planted::{AttributeSpec, ModelFn, Setup};

/// A plugin under test: its descriptor, read through its entry function.
#[derive(Debug, Clone, Copy)]
pub struct Subject {
    descriptor: &'static FfiPluginDescriptor,
}

impl Subject {
    /// A plugin linked into this program, by its entry (as the plugin's rlib exports it:
    /// `my_plugin::FAIRPIPE_PLUGIN`).
    pub fn from_entry(entry: PluginEntry) -> Result<Subject, SubjectError> {
        let descriptor = entry.descriptor()?;
        Ok(Subject { descriptor })
    }

    /// A plugin library file (loaded once and never unloaded), found by its per-crate entry
    /// symbol (`fairpipe_plugin_entry_<file stem>`) or the plain one.
    pub fn from_library(path: &Path) -> Result<Subject, SubjectError> {
        // SAFETY: loading a plugin library runs its initialisers; the caller names a fairpipe
        // plugin. The library is leaked so every pointer taken from it stays valid.
        let library: &'static libloading::Library = Box::leak(Box::new(
            unsafe { libloading::Library::new(path) }
                .map_err(|e| SubjectError::Load { path: path.to_path_buf(), reason: e.to_string() })?,
        ));
        let file_name = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
        for symbol in ffi::entry_symbols(file_name) {
            // SAFETY: fairpipe entry symbols have the ABI's `EntryFn` type.
            if let Ok(entry) = unsafe { library.get::<EntryFn>(symbol.as_bytes()) } {
                // SAFETY: a fairpipe entry symbol names a plugin entry function (the caller names
                // a fairpipe plugin library), which returns its static descriptor.
                return Subject::from_entry(unsafe { PluginEntry::new(*entry) });
            }
        }
        Err(SubjectError::NoEntrySymbol { path: path.to_path_buf() })
    }

    /// The plugin's name.
    pub fn name(&self) -> String {
        if self.descriptor.name.is_null() {
            return String::new();
        }
        // SAFETY: the descriptor's name is a static NUL-terminated string (checked non-null).
        unsafe { CStr::from_ptr(self.descriptor.name) }.to_string_lossy().into_owned()
    }

    /// Whether the plugin is an auditor (a report) rather than a generator (cases).
    pub fn is_auditor(&self) -> bool {
        self.descriptor.kind == ffi::kind::AUDITOR
    }

    /// The plugin's `describe` JSON.
    pub fn describe(&self) -> Result<Value, SubjectError> {
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: the plugin's own function with a valid out-pointer.
        let code = unsafe { (self.descriptor.describe)(&mut out) };
        let text = self.take(out);
        if code != status::OK {
            return Err(SubjectError::DescribeFailed { status: code, message: text });
        }
        serde_json::from_str(&text).map_err(|e| SubjectError::DescribeNotJson { reason: e.to_string() })
    }

    /// Validate `params`: the status and the plugin's message.
    pub fn validate(&self, params: &Value) -> (i32, String) {
        let json = CString::new(params.to_string()).unwrap_or_default();
        let mut error: *mut c_char = std::ptr::null_mut();
        // SAFETY: the plugin's own function, a NUL-terminated JSON string and a valid out-pointer.
        let code = unsafe { (self.descriptor.validate)(json.as_ptr(), &mut error) };
        (code, self.take(error))
    }

    /// Run the plugin on `setup` with `params`, seed and stop policy.
    pub fn run(&self, setup: &Setup, params: &Value, rng_seed: u64, stop: StopPolicy) -> RunResult {
        host::run(self.descriptor, setup, params, rng_seed, stop)
    }

    /// Copy and free a string the plugin returned.
    fn take(&self, s: *mut c_char) -> String {
        if s.is_null() {
            return String::new();
        }
        // SAFETY: a NUL-terminated string the plugin just allocated, released once by its own
        // `drop_string`.
        unsafe {
            let text = CStr::from_ptr(s).to_string_lossy().into_owned();
            (self.descriptor.drop_string)(s);
            text
        }
    }
}

/// Run every check on `subject` with `setup`; returns the failures (empty: the plugin conforms).
pub fn check(subject: &Subject, setup: &Setup) -> Vec<String> {
    let mut failures = Vec::new();
    let name = subject.name();
    let mut fail = |m: String| failures.push(format!("{name}: {m}"));
    // 1. Descriptor.
    if name.is_empty() {
        fail("the descriptor has no name".into());
    }
    // 2. describe.
    let params_doc = match subject.describe() {
        Ok(d) => {
            if d["name"] != json!(name) {
                fail(format!("describe names `{}`, the descriptor `{name}`", d["name"]));
            }
            if d["version"].as_str().is_none_or(str::is_empty) {
                fail("describe has no version".into());
            }
            if d["doc"].as_str().is_none_or(|s| s.len() < 20) {
                fail("describe has no doc of at least 20 characters".into());
            }
            d["params"].as_array().cloned().unwrap_or_default()
        }
        Err(e) => {
            fail(e.to_string());
            Vec::new()
        }
    };
    for p in &params_doc {
        let key = p["name"].as_str().unwrap_or("");
        if key.is_empty() || p["doc"].as_str().is_none_or(str::is_empty) || p["default"].is_null() {
            fail(format!("parameter without a name, doc or default: {p}"));
            continue;
        }
        let (code, message) = subject.validate(&json!({ key: p["default"] }));
        if code != status::OK {
            fail(format!("the default of `{key}` fails validation: {message}"));
        }
    }
    // 3. Unknown parameters.
    let (code, message) = subject.validate(&json!({"definitely_not_a_parameter": 1}));
    if code != status::INVALID_PARAMS || !message.contains("unknown parameter `definitely_not_a_parameter`") {
        fail(format!("an unknown parameter gave status {code}: {message}"));
    }
    if let Some(first) = params_doc.first().and_then(|p| p["name"].as_str()) {
        let (code, message) = subject.validate(&json!({ format!("{first}x"): 1 }));
        if code != status::INVALID_PARAMS || !message.contains(&format!("did you mean `{first}`")) {
            fail(format!("a typo of `{first}` gave status {code} without a suggestion: {message}"));
        }
    }
    // 4. Injected panic.
    let panicked = subject.run(setup, &json!({"_inject_panic": true}), 1, StopPolicy::Never);
    if panicked.status != status::PANIC || !panicked.message.contains("injected panic") {
        fail(format!("an injected panic gave status {}: {}", panicked.status, panicked.message));
    }
    // 5. Determinism, 6. real cases.
    let a = subject.run(setup, &setup.params, 7, StopPolicy::Never);
    if a.status != status::OK {
        fail(format!("a plain run failed with status {}: {}", a.status, a.message));
        return failures;
    }
    let b = subject.run(setup, &setup.params, 7, StopPolicy::Never);
    let c = subject.run(setup, &setup.params, 8, StopPolicy::Never);
    if subject.is_auditor() {
        match &a.report {
            None => fail("an auditor sent no report".into()),
            Some(r) if r["groups"].as_array().is_none_or(Vec::is_empty) => fail(format!("the report has no groups: {r}")),
            Some(_) => {}
        }
        // The report's figures may hold timings; its groups must not change.
        let groups = |r: &Option<Value>| r.as_ref().map(|r| r["groups"].clone());
        if groups(&a.report) != groups(&b.report) {
            fail("the same seed gave other groups".into());
        }
        if !a.cases.is_empty() {
            fail("an auditor emitted cases".into());
        }
    } else {
        if a.cases.is_empty() {
            fail("found no case on a model with planted discrimination".into());
        }
        if a.cases != b.cases {
            fail("the same seed gave other cases".into());
        }
        if !a.cases.is_empty() && a.cases == c.cases {
            fail("another seed gave exactly the same cases".into());
        }
        for problem in a.cases.iter().filter_map(|case| setup.refute(case)).take(3) {
            fail(problem);
        }
    }
    // 7. should_stop.
    let stopped = subject.run(setup, &setup.params, 7, StopPolicy::Always);
    if stopped.status != status::OK {
        fail(format!("told to stop, the run failed with status {}: {}", stopped.status, stopped.message));
    } else if stopped.rows_scored >= a.rows_scored {
        fail(format!("told to stop at once, it still scored {} rows (a full run: {})", stopped.rows_scored, a.rows_scored));
    }
    // 8. A failing model.
    if subject.descriptor.abi_minor >= 2 {
        let broken = subject.run(setup, &setup.params, 7, StopPolicy::FailPredict);
        if broken.status == status::OK || !broken.message.contains(host::PREDICT_FAILURE) {
            fail(format!("a failing model gave status {} and the message {:?}, not the host's", broken.status, broken.message));
        }
    }
    // 9. The query budget.
    if subject.descriptor.abi_minor >= 4 && a.rows_scored > 1 {
        let max_queries = a.rows_scored / 2;
        let capped = Setup { budget: FfiBudget { max_queries, ..setup.budget }, ..setup.clone() };
        let run = subject.run(&capped, &setup.params, 7, StopPolicy::Never);
        if run.status != status::OK {
            fail(format!("with max_queries = {max_queries}, the run failed with status {}: {}", run.status, run.message));
        } else if run.rows_scored > max_queries {
            fail(format!("with max_queries = {max_queries}, it scored {} model rows", run.rows_scored));
        }
    }
    failures
}

/// Check the plugin behind `entry` on the planted-bias [`Setup::planted`] with its default
/// parameters, and panic listing every failure.
pub fn assert_conforms(entry: PluginEntry) {
    let subject = Subject::from_entry(entry).unwrap_or_else(|e| panic!("not a fairpipe plugin: {e}"));
    let failures = check(&subject, &Setup::planted());
    assert!(failures.is_empty(), "{} conformance failure(s):\n  {}", failures.len(), failures.join("\n  "));
}

/// A default budget: unlimited but for a cap on model rows that keeps a run short.
pub fn default_budget() -> FfiBudget {
    FfiBudget { max_queries: 2_000_000, ..Default::default() }
}
