//! The plugin host. Methods come in two forms that cross the very same versioned C ABI
//! (`fairpipe-ffi`): **built-in** plugins, linked into the executable and registered with
//! [`register_builtin`] (the host calls their entry function directly), and **file** plugins,
//! libraries found on the search path ([`search`]) and opened with dlopen ([`loader`]). Either way
//! the host reads the descriptor's ABI version before anything else, and runs the plugin with
//! panics and failures turned into [`PluginHostError`]s ([`run`]).
//!
//! A name resolves to the built-in of that name first: a library file of the same name on the
//! search path is shadowed (`fairpipe list` says so). A stage that gives an explicit `path` loads
//! that file whatever its name, so a rebuilt or patched copy of a built-in can still be run.

pub mod loader;
pub mod run;
pub mod search;

use std::collections::BTreeMap;
use std::ffi::{c_char, CStr};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use fairpipe_ffi::{self as ffi, status, DescriptorError, EntryFn, FfiPluginDescriptor, PluginEntry};

pub use crate::error::PluginHostError;
pub use run::{EmittedCase, GenerateOutput, GradientUse, RunSpec, GRACE_SECONDS};
pub use search::{discover, library_file_name, search_dirs};

/// Where a plugin came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Linked into the executable.
    Builtin,
    /// Loaded from this library file.
    File(PathBuf),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Builtin => write!(f, "built-in"),
            Source::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A plugin ready to run: built-in or loaded from a file, its descriptor checked.
#[derive(Debug)]
pub struct Plugin {
    /// Where it came from.
    pub source: Source,
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The ABI version it was built for (major, minor).
    pub abi: (u32, u32),
    /// Its description (parameters and docs) as JSON.
    pub description: serde_json::Value,
    descriptor: &'static FfiPluginDescriptor,
}

impl Plugin {
    /// Check the descriptor returned by `entry` and describe the plugin; `source` says where it came
    /// from (for messages). For an entry found in a library file by its symbol.
    ///
    /// # Safety
    /// `entry` must be a fairpipe plugin entry function, as [`PluginEntry::new`] requires: it
    /// returns null or a pointer to a descriptor that stays valid and unchanged for the rest of
    /// the process, whose first two fields are `u32` major and minor versions, and which — when
    /// its major equals [`ffi::ABI_MAJOR`] — has the layout of [`FfiPluginDescriptor`] with valid
    /// function pointers and static NUL-terminated strings.
    pub unsafe fn from_entry(entry: EntryFn, source: Source) -> Result<Plugin, PluginHostError> {
        // SAFETY: the caller's guarantee is `PluginEntry::new`'s.
        Plugin::from_plugin_entry(unsafe { PluginEntry::new(entry) }, source)
    }

    /// Check the descriptor of a vouched-for entry and describe the plugin; `source` says where
    /// it came from (for messages).
    pub fn from_plugin_entry(entry: PluginEntry, source: Source) -> Result<Plugin, PluginHostError> {
        let origin = source.to_string();
        let invalid = |message: String| PluginHostError::Invalid { origin: origin.clone(), message };
        let descriptor = match entry.descriptor() {
            Ok(d) => d,
            Err(DescriptorError::OtherMajor(major, minor)) => {
                return Err(PluginHostError::AbiMismatch {
                    origin,
                    plugin_major: major,
                    plugin_minor: minor,
                    host_major: ffi::ABI_MAJOR,
                    host_minor: ffi::ABI_MINOR,
                })
            }
            Err(e) => return Err(invalid(e.to_string())),
        };
        let (major, minor) = (descriptor.abi_major, descriptor.abi_minor);
        // SAFETY: name and version are static NUL-terminated strings of the plugin (or null).
        let (name, version) = unsafe { (static_str(descriptor.name), static_str(descriptor.version)) };
        if name.is_empty() {
            return Err(invalid("the descriptor has no name".into()));
        }
        let mut out: *mut c_char = std::ptr::null_mut();
        // SAFETY: `describe` is the plugin's function and `out` a valid place for its string.
        let code = unsafe { (descriptor.describe)(&mut out) };
        // SAFETY: `out` is null or a string the plugin just allocated for us.
        let text = unsafe { take_string(descriptor, out) };
        if code != status::OK {
            return Err(invalid(format!("describe failed: {text}")));
        }
        let description = serde_json::from_str(&text).map_err(|e| invalid(format!("describe returned invalid JSON: {e}")))?;
        Ok(Plugin { source, name, version, abi: (major, minor), description, descriptor })
    }

    /// The descriptor, for the run module.
    pub(crate) fn descriptor(&self) -> &'static FfiPluginDescriptor {
        self.descriptor
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

    /// Whether the plugin is linked into the executable.
    pub fn is_builtin(&self) -> bool {
        self.source == Source::Builtin
    }

    /// Whether the method reads the model's probabilities themselves (gradients, a threshold on
    /// them), so it cannot run on a model that gives labels only: `needs_scores` in its `describe`
    /// document (absent, from a plugin built before the SDK declared it: false).
    pub fn needs_scores(&self) -> bool {
        self.description["needs_scores"].as_bool().unwrap_or(false)
    }
}

/// The registered built-in methods of `kind` (one of [`ffi::kind`]) that run on a model giving
/// labels only, by name: what a refusal of a method that needs scores offers instead.
pub fn label_only_methods(kind: u32) -> Vec<String> {
    builtin_plugins().into_iter().filter(|p| p.kind() == kind && !p.needs_scores()).map(|p| p.name.clone()).collect()
}

/// Read a static C string (empty when null).
///
/// # Safety
/// `s` must be null or a NUL-terminated string that lives for the rest of the process.
unsafe fn static_str(s: *const c_char) -> String {
    if s.is_null() {
        return String::new();
    }
    // SAFETY: guaranteed by the caller.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// Copy and free a plugin-owned string (empty when null).
///
/// # Safety
/// `s` must be null or a NUL-terminated string allocated by the plugin of `descriptor` and not
/// yet released; it is released here.
pub(crate) unsafe fn take_string(descriptor: &FfiPluginDescriptor, s: *mut c_char) -> String {
    if s.is_null() {
        return String::new();
    }
    // SAFETY: the caller passes a live NUL-terminated string of the plugin.
    let text = unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned();
    // SAFETY: released once, by the allocator of the plugin that allocated it.
    unsafe { (descriptor.drop_string)(s) };
    text
}

fn builtins() -> &'static Mutex<BTreeMap<String, &'static Plugin>> {
    static BUILTINS: OnceLock<Mutex<BTreeMap<String, &'static Plugin>>> = OnceLock::new();
    BUILTINS.get_or_init(Default::default)
}

/// Register a plugin linked into this executable through its entry (as a plugin crate exports
/// it: `fairpipe_plugin_maft::FAIRPIPE_PLUGIN`). Its descriptor is checked exactly as a loaded
/// file's. Registering the same name twice keeps the first.
///
/// ```no_run
/// // In a program that links the method crates:
/// // fairpipe_core::plugin::register_builtin(fairpipe_plugin_maft::FAIRPIPE_PLUGIN)?;
/// # Ok::<(), fairpipe_core::plugin::PluginHostError>(())
/// ```
pub fn register_builtin(entry: PluginEntry) -> Result<&'static Plugin, PluginHostError> {
    let plugin = Plugin::from_plugin_entry(entry, Source::Builtin)?;
    let mut map = builtins().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(existing) = map.get(&plugin.name) {
        return Ok(existing);
    }
    let plugin: &'static Plugin = Box::leak(Box::new(plugin));
    map.insert(plugin.name.clone(), plugin);
    Ok(plugin)
}

/// The registered built-in plugins, by name.
pub fn builtin_plugins() -> Vec<&'static Plugin> {
    builtins().lock().unwrap_or_else(|e| e.into_inner()).values().copied().collect()
}

/// The built-in plugin called `name`, if one is registered.
pub fn builtin(name: &str) -> Option<&'static Plugin> {
    builtins().lock().unwrap_or_else(|e| e.into_inner()).get(&name.replace('-', "_")).copied()
}

/// Plugin `name`: the built-in of that name, else the library file of that name on the search
/// path ([`search_dirs`] with `extra_dirs`).
pub fn load_by_name(name: &str, extra_dirs: &[PathBuf]) -> Result<&'static Plugin, PluginHostError> {
    if let Some(p) = builtin(name) {
        return Ok(p);
    }
    let dirs = search_dirs(extra_dirs);
    let found = discover(&dirs);
    match found.get(&name.replace('-', "_")) {
        Some(path) => load_path(path),
        None => {
            let builtin_names: Vec<String> = builtin_plugins().iter().map(|p| p.name.clone()).collect();
            let mut names: Vec<&str> = found.keys().map(String::as_str).collect();
            names.extend(builtin_names.iter().map(String::as_str));
            let detail = format!(
                "{}; built-in: {}; searched for {} in: {}; found there: {}",
                crate::suggest::hint(name, &names),
                if builtin_names.is_empty() { "none".into() } else { builtin_names.join(", ") },
                library_file_name(name),
                if dirs.is_empty() {
                    "no folder".into()
                } else {
                    dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
                },
                if found.is_empty() { "none".into() } else { found.keys().cloned().collect::<Vec<_>>().join(", ") },
            );
            Err(PluginHostError::NotFound { name: name.to_string(), detail })
        }
    }
}

/// Load the plugin library at `path` (once per process; never unloaded).
pub fn load_path(path: &Path) -> Result<&'static Plugin, PluginHostError> {
    loader::load(path)
}

/// One plugin `fairpipe list` shows: what was found, and whether it can be used.
#[derive(Debug)]
pub struct Installed {
    /// The plugin's name (from the file name when it could not be loaded).
    pub name: String,
    /// Where it is.
    pub source: Source,
    /// The plugin, or why it is refused.
    pub plugin: Result<&'static Plugin, PluginHostError>,
    /// A file plugin whose name a built-in already has: only reachable through an explicit `path`.
    pub shadowed: bool,
}

/// Every plugin available: the built-ins, then the library files on the search path (each
/// loaded to read its descriptor; refused ones are listed with the reason).
pub fn installed(extra_dirs: &[PathBuf]) -> Vec<Installed> {
    let mut all: Vec<Installed> = builtin_plugins()
        .into_iter()
        .map(|p| Installed { name: p.name.clone(), source: Source::Builtin, plugin: Ok(p), shadowed: false })
        .collect();
    for (name, path) in discover(&search_dirs(extra_dirs)) {
        let shadowed = builtin(&name).is_some();
        all.push(Installed { name, source: Source::File(path.clone()), plugin: load_path(&path), shadowed });
    }
    all
}
