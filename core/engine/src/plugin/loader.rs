//! Opening plugin library files: dlopen once per process (a library is never unloaded), find the
//! entry function, and check its descriptor like a built-in's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use fairpipe_ffi::{entry_symbols, EntryFn};

use super::{Plugin, PluginHostError, Source};

/// Load the plugin library at `path`, once per process.
pub fn load(path: &Path) -> Result<&'static Plugin, PluginHostError> {
    static LOADED: OnceLock<Mutex<BTreeMap<PathBuf, &'static Plugin>>> = OnceLock::new();
    let meta = std::fs::metadata(path).map_err(|e| PluginHostError::Load { path: path.to_path_buf(), message: e.to_string() })?;
    if !meta.is_file() {
        return Err(PluginHostError::Load { path: path.to_path_buf(), message: "not a file (expected a plugin library)".into() });
    }
    let canonical = path.canonicalize().map_err(|e| PluginHostError::Load { path: path.to_path_buf(), message: e.to_string() })?;
    let mut loaded = LOADED.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = loaded.get(&canonical) {
        return Ok(p);
    }
    let err = |message: String| PluginHostError::Load { path: canonical.clone(), message };
    // SAFETY: opening a library runs its initialisers; fairpipe plugins are libraries without side
    // effects at load time (a user who names a library vouches for it). The library is leaked, so
    // it outlives every pointer taken from it: plugins are never unloaded.
    let library: &'static libloading::Library =
        Box::leak(Box::new(unsafe { libloading::Library::new(&canonical) }.map_err(|e| err(e.to_string()))?));
    let symbols = entry_symbols(&canonical.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default());
    let mut entry: Option<EntryFn> = None;
    for symbol in &symbols {
        // SAFETY: a fairpipe entry symbol is an `extern "C" fn() -> *const FfiPluginDescriptor`
        // (the ABI's `EntryFn`); the library stays loaded for the process.
        if let Ok(found) = unsafe { library.get::<EntryFn>(symbol.as_bytes()) } {
            entry = Some(*found);
            break;
        }
    }
    let Some(entry) = entry else {
        return Err(err(format!(
            "no entry symbol ({}); is it a fairpipe plugin, built with its crate's own file name?",
            symbols.join(" or ")
        )));
    };
    // SAFETY: the symbol is a fairpipe entry function (by its name); `from_entry` reads only the
    // version fields before checking the major, and the descriptor is static in the leaked library.
    let plugin = unsafe { Plugin::from_entry(entry, Source::File(canonical.clone())) }?;
    let plugin: &'static Plugin = Box::leak(Box::new(plugin));
    loaded.insert(canonical, plugin);
    Ok(plugin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_or_missing_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let err = load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("not a file"), "{err}");
        let err = load(&dir.path().join("libnothing.so")).unwrap_err().to_string();
        assert!(err.contains("libnothing.so"), "{err}");
    }

    #[test]
    fn a_library_without_an_entry_symbol_is_refused_naming_the_symbols() {
        // Any shared library without fairpipe symbols will do: the C library is on every machine.
        let libc = ["/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6", "/usr/lib/libc.so.6"]
            .iter()
            .map(Path::new)
            .find(|p| p.exists());
        let Some(libc) = libc else { panic!("no libc.so.6 found to test with") };
        let err = load(libc).unwrap_err().to_string();
        assert!(err.contains("no entry symbol") && err.contains("fairpipe_plugin_entry"), "{err}");
    }
}
