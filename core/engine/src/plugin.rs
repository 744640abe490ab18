//! The plugin host: finds plugin libraries, loads them once (never unloads), checks the ABI major
//! before anything else, and runs them with panics and failures turned into [`PluginError`]s.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use fairpipe_abi::domain::{AttributeKind, Domain};
use fairpipe_abi::ffi::{self, status, FfiAttribute, FfiBudget, FfiCallbacks, FfiContext, FfiMatrix, FfiPluginDescriptor};

use crate::oracle::Oracle;

/// A plugin could not be found, loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// No library for the name in the search path; build it (`cargo build --workspace`) or give `path`.
    #[error("no plugin `{name}` found{hint}; searched {searched}; available: {available}")]
    NotFound {
        /// The name asked for.
        name: String,
        /// "did you mean".
        hint: String,
        /// The folders searched.
        searched: String,
        /// Plugins that were found.
        available: String,
    },
    /// The library could not be opened or lacks the entry symbol.
    #[error("{path}: cannot load plugin: {message}")]
    Load {
        /// The library.
        path: PathBuf,
        /// The loader's message.
        message: String,
    },
    /// The plugin was built against another ABI major; rebuild it against this fairpipe.
    #[error("{path}: plugin ABI version {plugin_major}.{plugin_minor} does not match the host's {host_major}.{host_minor}; rebuild the plugin against this fairpipe")]
    AbiMismatch {
        /// The library.
        path: PathBuf,
        /// The plugin's major.
        plugin_major: u32,
        /// The plugin's minor.
        plugin_minor: u32,
        /// The host's major.
        host_major: u32,
        /// The host's minor.
        host_minor: u32,
    },
    /// The plugin refused its parameters.
    #[error("plugin `{plugin}`: {message}")]
    InvalidParams {
        /// The plugin.
        plugin: String,
        /// Its message.
        message: String,
    },
    /// The plugin failed or panicked while running.
    #[error("plugin `{plugin}` failed ({what}): {message}")]
    Failed {
        /// The plugin.
        plugin: String,
        /// "panic", "invalid input", "compute error".
        what: String,
        /// Its message.
        message: String,
    },
}

/// A loaded plugin library.
#[derive(Debug)]
pub struct Plugin {
    /// The library file.
    pub path: PathBuf,
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its description (parameters and docs) as JSON.
    pub description: serde_json::Value,
    descriptor: &'static FfiPluginDescriptor,
}

/// The file name of plugin `name` on this platform (`libfairpipe_plugin_NAME.so` on Linux).
pub fn library_file_name(name: &str) -> String {
    format!("{}fairpipe_plugin_{}{}", std::env::consts::DLL_PREFIX, name.replace('-', "_"), std::env::consts::DLL_SUFFIX)
}

/// Folders searched for plugins: `FAIRPIPE_PLUGIN_PATH` (colon-separated), `extra`, the executable's
/// folder and its parent (cargo puts test binaries in `deps/`), and the workspace's cargo target folders.
pub fn search_dirs(extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Ok(path) = std::env::var("FAIRPIPE_PLUGIN_PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.extend(extra.iter().cloned());
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            dirs.push(dir.to_path_buf());
            dirs.push(dir.join("plugins"));
            if let Some(parent) = dir.parent() {
                dirs.push(parent.to_path_buf());
            }
        }
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or(workspace);
    for profile in ["debug", "release"] {
        dirs.push(target.join(profile));
    }
    let mut unique = Vec::new();
    for d in dirs {
        if !unique.contains(&d) {
            unique.push(d);
        }
    }
    unique
}

/// Every plugin library found in `dirs`, by name (first found wins).
pub fn discover(dirs: &[PathBuf]) -> BTreeMap<String, PathBuf> {
    let prefix = format!("{}fairpipe_plugin_", std::env::consts::DLL_PREFIX);
    let mut found = BTreeMap::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for file in files {
            let Some(name) = file.file_name().and_then(|f| f.to_str()) else { continue };
            if let Some(rest) = name.strip_prefix(&prefix).and_then(|r| r.strip_suffix(std::env::consts::DLL_SUFFIX)) {
                found.entry(rest.to_string()).or_insert(file);
            }
        }
    }
    found
}

/// Load plugin `name` from the search path.
pub fn load_by_name(name: &str, extra_dirs: &[PathBuf]) -> Result<&'static Plugin, PluginError> {
    let dirs = search_dirs(extra_dirs);
    let found = discover(&dirs);
    match found.get(&name.replace('-', "_")) {
        Some(path) => load_path(path),
        None => {
            let names: Vec<&str> = found.keys().map(String::as_str).collect();
            Err(PluginError::NotFound {
                name: name.to_string(),
                hint: crate::error::hint(name, &names),
                searched: dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
                available: if names.is_empty() { "none (run `cargo build --workspace`)".into() } else { names.join(", ") },
            })
        }
    }
}

/// Load the plugin library at `path` (once per process; the library is never unloaded).
pub fn load_path(path: &Path) -> Result<&'static Plugin, PluginError> {
    static LOADED: OnceLock<Mutex<BTreeMap<PathBuf, &'static Plugin>>> = OnceLock::new();
    let canonical = path.canonicalize().map_err(|e| PluginError::Load { path: path.to_path_buf(), message: e.to_string() })?;
    let mut loaded = LOADED.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = loaded.get(&canonical) {
        return Ok(p);
    }
    let err = |message: String| PluginError::Load { path: canonical.clone(), message };
    // SAFETY: loading a library runs its initialisers; fairpipe plugins are Rust cdylibs without
    // side effects at load time. The library is leaked, so it outlives every pointer taken from it.
    let library: &'static libloading::Library =
        Box::leak(Box::new(unsafe { libloading::Library::new(&canonical) }.map_err(|e| err(e.to_string()))?));
    // SAFETY: the entry symbol has the signature `extern "C" fn() -> *const FfiPluginDescriptor`.
    let entry: libloading::Symbol<'static, extern "C" fn() -> *const FfiPluginDescriptor> = unsafe { library.get(ffi::ENTRY_SYMBOL) }
        .map_err(|e| err(format!("no `fairpipe_plugin_entry` symbol ({e}); is it a fairpipe plugin?")))?;
    let descriptor_ptr = catch_unwind(|| entry()).map_err(|_| err("the entry function panicked".into()))?;
    if descriptor_ptr.is_null() {
        return Err(err("the entry function returned no descriptor".into()));
    }
    // SAFETY: `abi_major` and `abi_minor` are the first fields in every ABI version; nothing else is
    // read before the major is checked.
    let (major, minor) = unsafe { ((*descriptor_ptr).abi_major, (*descriptor_ptr).abi_minor) };
    if major != ffi::ABI_MAJOR {
        return Err(PluginError::AbiMismatch {
            path: canonical,
            plugin_major: major,
            plugin_minor: minor,
            host_major: ffi::ABI_MAJOR,
            host_minor: ffi::ABI_MINOR,
        });
    }
    // SAFETY: same major, so the descriptor has this layout; it is static in the leaked library.
    let descriptor: &'static FfiPluginDescriptor = unsafe { &*descriptor_ptr };
    if descriptor.struct_size < std::mem::size_of::<FfiPluginDescriptor>() {
        return Err(err(format!(
            "descriptor is {} bytes, expected at least {}",
            descriptor.struct_size,
            std::mem::size_of::<FfiPluginDescriptor>()
        )));
    }
    // SAFETY: name and version are static NUL-terminated strings of the plugin.
    let name = unsafe { CStr::from_ptr(descriptor.name) }.to_string_lossy().into_owned();
    // SAFETY: as above.
    let version = unsafe { CStr::from_ptr(descriptor.version) }.to_string_lossy().into_owned();
    let mut out: *mut c_char = std::ptr::null_mut();
    let code = (descriptor.describe)(&mut out);
    let text = take_string(descriptor, out);
    if code != status::OK {
        return Err(err(format!("describe failed: {text}")));
    }
    let description = serde_json::from_str(&text).map_err(|e| err(format!("describe returned invalid JSON: {e}")))?;
    let plugin: &'static Plugin = Box::leak(Box::new(Plugin { path: canonical.clone(), name, version, description, descriptor }));
    loaded.insert(canonical, plugin);
    Ok(plugin)
}

/// Copy and free a plugin-owned string.
fn take_string(descriptor: &FfiPluginDescriptor, s: *mut c_char) -> String {
    if s.is_null() {
        return String::new();
    }
    // SAFETY: the plugin returned a NUL-terminated string it allocated; it is freed by its own
    // allocator right after copying.
    let text = unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned();
    (descriptor.drop_string)(s);
    text
}

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

struct HostState<'a> {
    oracle: &'a Oracle,
    width: usize,
    cases: Mutex<Vec<EmittedCase>>,
    report: Mutex<Option<String>>,
    generated: AtomicU64,
    stop: AtomicBool,
    started: Instant,
    progress: &'a indicatif::ProgressBar,
}

extern "C" fn host_predict(ctx: *mut c_void, x: *const f64, rows: usize, cols: usize, out: *mut f64) -> i32 {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `ctx` is the HostState passed in the context, alive for the whole call.
        let state = unsafe { &*(ctx as *const HostState) };
        if cols != state.width || x.is_null() || out.is_null() {
            return status::INVALID_INPUT;
        }
        // SAFETY: the plugin passes rows*cols inputs and room for rows outputs.
        let (input, output) = unsafe { (std::slice::from_raw_parts(x, rows * cols), std::slice::from_raw_parts_mut(out, rows)) };
        match state.oracle.predict_proba_into(input, output) {
            Ok(()) => status::OK,
            Err(_) => status::COMPUTE,
        }
    }))
    .unwrap_or(status::PANIC)
}

extern "C" fn host_progress(ctx: *mut c_void, done: u64, _total: u64) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as in `host_predict`.
        let state = unsafe { &*(ctx as *const HostState) };
        state.generated.store(done, Ordering::Relaxed);
        state.progress.set_message(format!("{done} inputs generated"));
    }));
}

extern "C" fn host_report(ctx: *mut c_void, json: *const c_char) -> i32 {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as in `host_predict`.
        let state = unsafe { &*(ctx as *const HostState) };
        if json.is_null() {
            return status::INVALID_INPUT;
        }
        // SAFETY: the plugin passes a NUL-terminated string, copied here.
        let text = unsafe { CStr::from_ptr(json) }.to_string_lossy().into_owned();
        *state.report.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
        status::OK
    }))
    .unwrap_or(status::PANIC)
}

extern "C" fn host_should_stop(ctx: *mut c_void) -> u32 {
    // SAFETY: as in `host_predict`.
    let state = unsafe { &*(ctx as *const HostState) };
    u32::from(state.stop.load(Ordering::Relaxed))
}

extern "C" fn host_emit(ctx: *mut c_void, instance: *const f64, counterpart: *const f64, cols: usize, p: f64, q: f64, origin: u32) -> i32 {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as in `host_predict`.
        let state = unsafe { &*(ctx as *const HostState) };
        if cols != state.width || instance.is_null() || counterpart.is_null() {
            return status::INVALID_INPUT;
        }
        // SAFETY: the plugin passes `cols` values for each row.
        let (a, b) = unsafe { (std::slice::from_raw_parts(instance, cols), std::slice::from_raw_parts(counterpart, cols)) };
        let case = EmittedCase {
            instance: a.to_vec(),
            counterpart: b.to_vec(),
            p,
            p_counterpart: q,
            origin,
            at_s: state.started.elapsed().as_secs_f64(),
        };
        state.cases.lock().unwrap_or_else(|e| e.into_inner()).push(case);
        status::OK
    }))
    .unwrap_or(status::PANIC)
}

impl Plugin {
    /// Ask the plugin to check `params` without running.
    pub fn validate(&self, params: &serde_json::Value) -> Result<(), PluginError> {
        let json = CString::new(params.to_string()).unwrap_or_default();
        let mut error: *mut c_char = std::ptr::null_mut();
        let code = (self.descriptor.validate)(json.as_ptr(), &mut error);
        let message = take_string(self.descriptor, error);
        match code {
            status::OK => Ok(()),
            status::PANIC => Err(PluginError::Failed { plugin: self.name.clone(), what: "panic".into(), message }),
            _ => Err(PluginError::InvalidParams { plugin: self.name.clone(), message }),
        }
    }

    /// Whether the plugin is a generator (cases) or an auditor (a report): one of [`ffi::kind`].
    pub fn kind(&self) -> u32 {
        self.descriptor.kind
    }

    /// "generator" or "auditor".
    pub fn kind_name(&self) -> &'static str {
        match self.descriptor.kind {
            ffi::kind::AUDITOR => "auditor",
            _ => "generator",
        }
    }

    /// Run the plugin against `oracle` over `domain`: a generator emits cases, an auditor sends a
    /// report (and receives the data's rows as `spec.seeds`).
    pub fn generate(
        &self,
        oracle: &Oracle,
        domain: &Domain,
        spec: &RunSpec,
        progress: &indicatif::ProgressBar,
    ) -> Result<GenerateOutput, PluginError> {
        let names: Vec<CString> = domain.attributes.iter().map(|a| CString::new(a.name.clone()).unwrap_or_default()).collect();
        let attributes: Vec<FfiAttribute> = domain
            .attributes
            .iter()
            .zip(&names)
            .map(|(a, n)| FfiAttribute {
                name: n.as_ptr(),
                kind: match a.kind {
                    AttributeKind::Integer => ffi::attribute_kind::INTEGER,
                    AttributeKind::Continuous => ffi::attribute_kind::CONTINUOUS,
                    AttributeKind::Categorical { .. } => ffi::attribute_kind::CATEGORICAL,
                },
                protected: u32::from(a.protected),
                lower: a.lower,
                upper: a.upper,
                step: a.step,
            })
            .collect();
        let params = CString::new(spec.params.to_string()).unwrap_or_default();
        let state = HostState {
            oracle,
            width: domain.width(),
            cases: Mutex::new(Vec::new()),
            report: Mutex::new(None),
            generated: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            started: Instant::now(),
            progress,
        };
        let ctx = FfiContext {
            struct_size: std::mem::size_of::<FfiContext>(),
            attributes: attributes.as_ptr(),
            n_attributes: attributes.len(),
            seeds: FfiMatrix { data: spec.seeds.as_ptr(), rows: spec.seeds.len() / domain.width().max(1), cols: domain.width() },
            params_json: params.as_ptr(),
            rng_seed: spec.rng_seed,
            budget: spec.budget,
            gamma: spec.gamma.unwrap_or(f64::NAN),
            callbacks: FfiCallbacks {
                ctx: &state as *const HostState as *mut c_void,
                predict: host_predict,
                progress: host_progress,
                should_stop: host_should_stop,
                emit: host_emit,
                report: host_report,
            },
        };
        let mut error: *mut c_char = std::ptr::null_mut();
        let code = (self.descriptor.generate)(&ctx, &mut error);
        let message = take_string(self.descriptor, error);
        if code != status::OK {
            let what = match code {
                status::PANIC => "panic",
                status::INVALID_PARAMS => "invalid parameters",
                status::INVALID_INPUT => "invalid input",
                _ => "compute error",
            };
            return Err(PluginError::Failed { plugin: self.name.clone(), what: what.into(), message });
        }
        let cases = state.cases.into_inner().unwrap_or_else(|e| e.into_inner());
        let report = match state.report.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(text) => Some(serde_json::from_str(&text).map_err(|e| PluginError::Failed {
                plugin: self.name.clone(),
                what: "invalid report".into(),
                message: format!("the report is not valid JSON: {e}"),
            })?),
            None => None,
        };
        Ok(GenerateOutput { cases, generated: state.generated.load(Ordering::Relaxed), report })
    }
}
