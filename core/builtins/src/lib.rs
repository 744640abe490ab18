//! # fairpipe-builtins
//!
//! The methods that ship inside fairpipe's executables (the `fairpipe` command and the Python
//! package): every method crate under `plugins/`, registered with the engine's plugin host through
//! the very same versioned ABI descriptor its library build exports — the host calls the entry
//! function directly instead of finding it with dlopen, so a built-in still crosses the real
//! boundary. A program that embeds the engine and wants the built-in methods calls
//! [`register_builtins`] once; [`builtin_reference`] and [`file_plugins_reference`] are what
//! `fairpipe list` prints of them.
//!
//! Invariant: the only crate that links the method plugins into the engine's host; no engine logic.
#![deny(missing_docs)]

use fairpipe_core::plugin::{self, Plugin, PluginHostError};
use fairpipe_ffi::PluginEntry;

/// The methods linked into this package: name and entry function.
pub const BUILTINS: &[(&str, PluginEntry)] = &[
    ("aequitas", fairpipe_plugin_aequitas::FAIRPIPE_PLUGIN),
    ("aft", fairpipe_plugin_aft::FAIRPIPE_PLUGIN),
    ("eidig", fairpipe_plugin_eidig::FAIRPIPE_PLUGIN),
    ("grft", fairpipe_plugin_grft::FAIRPIPE_PLUGIN),
    ("maft", fairpipe_plugin_maft::FAIRPIPE_PLUGIN),
    ("random", fairpipe_plugin_random::FAIRPIPE_PLUGIN),
    ("sg", fairpipe_plugin_sg::FAIRPIPE_PLUGIN),
    ("testsgd", fairpipe_plugin_testsgd::FAIRPIPE_PLUGIN),
];

/// Register every built-in method with the engine's plugin host (idempotent).
pub fn register_builtins() -> Result<Vec<&'static Plugin>, PluginHostError> {
    BUILTINS.iter().map(|(_, entry)| plugin::register_builtin(*entry)).collect()
}

/// One plugin's entry in `fairpipe list`: name, version, kind, source, ABI, doc and parameters.
fn describe_plugin(p: &Plugin, note: &str) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "{} {} ({}, {}, ABI {}.{}{}){note}\n  {}\n",
        p.name,
        p.version,
        p.kind_name(),
        p.source,
        p.abi.0,
        p.abi.1,
        if p.needs_scores() { ", needs the model's probabilities" } else { "" },
        p.description["doc"].as_str().unwrap_or("")
    );
    for param in p.description["params"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  param  {:<18} default {:<16} {}",
            param["name"].as_str().unwrap_or(""),
            param["default"].to_string(),
            param["doc"].as_str().unwrap_or("")
        );
    }
    out
}

/// The built-in part of `fairpipe list` (docs/methods.md's plugin reference shows exactly this):
/// every built-in method with its kind, ABI version and parameters.
pub fn builtin_reference() -> String {
    let mut out = String::from("plugins (generate: plugin = \"NAME\"; group_score: plugin = \"NAME\"; params = { ... }):\n");
    for p in plugin::builtin_plugins() {
        out.push('\n');
        out.push_str(&describe_plugin(p, ""));
    }
    out
}

/// The library part of `fairpipe list`: plugin files on the search path (`extra_dirs`, then
/// `FAIRPIPE_PLUGIN_PATH`, then beside the executable), with the reason when one is refused or
/// shadowed by a built-in; empty when there are none.
pub fn file_plugins_reference(extra_dirs: &[std::path::PathBuf]) -> String {
    let files: Vec<plugin::Installed> =
        plugin::installed(extra_dirs).into_iter().filter(|i| !matches!(i.source, plugin::Source::Builtin)).collect();
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from("plugin files on the search path:\n");
    for installed in files {
        out.push('\n');
        match (&installed.plugin, installed.shadowed) {
            (Ok(p), true) => out.push_str(&format!(
                "{} ({}): shadowed by the built-in `{}`; use it with the stage's `path`\n",
                p.name, installed.source, p.name
            )),
            (Ok(p), false) => out.push_str(&describe_plugin(p, "")),
            (Err(e), _) => out.push_str(&format!("{} ({}): refused: {e}\n", installed.name, installed.source)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_registers_under_its_listed_name_with_this_abi() {
        let plugins = register_builtins().unwrap();
        for ((name, _), p) in BUILTINS.iter().zip(&plugins) {
            assert_eq!(&p.name, name);
            assert!(p.is_builtin());
            assert_eq!(p.abi.0, fairpipe_ffi::ABI_MAJOR);
            assert!(std::ptr::eq(plugin::builtin(name).unwrap(), *p));
        }
    }
}
