//! `fairpipe new-plugin NAME`: a method plugin crate made from the template in
//! `templates/plugin/` (embedded in the binary), ready to build outside this workspace against the
//! SDK crate (`fairpipe-abi`) and to test with the conformance library (`fairpipe-conformance`).

use std::path::{Path, PathBuf};

/// The template's files: path inside the new crate, and text with `{{…}}` placeholders.
const TEMPLATE: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../templates/plugin/Cargo.toml")),
    ("README.md", include_str!("../templates/plugin/README.md")),
    ("src/lib.rs", include_str!("../templates/plugin/src/lib.rs")),
];

/// A plugin crate could not be created.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    /// The name is not a plugin name.
    #[error("`{0}` is not a plugin name: use lower-case letters, digits and `_`, starting with a letter")]
    BadName(String),
    /// A built-in method has that name, so a file plugin of that name would be shadowed.
    #[error("`{0}` is the name of a built-in method; choose another name")]
    Builtin(String),
    /// The folder exists already.
    #[error("{0} exists already; choose another --dir or remove it")]
    Exists(PathBuf),
    /// The SDK or the conformance crate was not found where expected.
    #[error("{what} not found at {path}; pass --sdk with the path of fairpipe's core/abi folder")]
    MissingCrate {
        /// Which crate.
        what: &'static str,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// Writing a file failed.
    #[error("{path}: {message}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The error.
        message: String,
    },
}

/// The SDK folder `fairpipe new-plugin` uses when none is given: `core/abi` of the sources this
/// binary was built from, when they are still there.
pub fn default_sdk_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("core/abi")
}

/// Create the plugin crate `name` in `dir/fairpipe-plugin-NAME`, depending on the SDK at `sdk`
/// (fairpipe's `core/abi` folder; the conformance crate is taken from its sibling
/// `core/conformance`). Returns the new crate's folder.
pub fn new_plugin(name: &str, dir: &Path, sdk: &Path) -> Result<PathBuf, ScaffoldError> {
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid {
        return Err(ScaffoldError::BadName(name.to_string()));
    }
    if crate::BUILTINS.iter().any(|(b, _)| *b == name) {
        return Err(ScaffoldError::Builtin(name.to_string()));
    }
    let sdk =
        sdk.canonicalize().map_err(|_| ScaffoldError::MissingCrate { what: "the SDK crate (fairpipe-abi)", path: sdk.to_path_buf() })?;
    let conformance = sdk.parent().map(|p| p.join("conformance")).unwrap_or_default();
    if !sdk.join("Cargo.toml").is_file() {
        return Err(ScaffoldError::MissingCrate { what: "the SDK crate (fairpipe-abi)", path: sdk });
    }
    if !conformance.join("Cargo.toml").is_file() {
        return Err(ScaffoldError::MissingCrate { what: "the conformance crate (fairpipe-conformance)", path: conformance });
    }
    let root = dir.join(format!("fairpipe-plugin-{}", name.replace('_', "-")));
    if root.exists() {
        return Err(ScaffoldError::Exists(root));
    }
    for (file, text) in TEMPLATE {
        let path = root.join(file);
        let text = text
            .replace("{{NAME}}", name)
            .replace("{{SDK_PATH}}", &toml_path(&sdk))
            .replace("{{CONFORMANCE_PATH}}", &toml_path(&conformance));
        let write = |path: &Path| -> std::io::Result<()> {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, text.as_bytes())
        };
        write(&path).map_err(|e| ScaffoldError::Write { path: path.clone(), message: e.to_string() })?;
    }
    Ok(root)
}

/// A path as it may stand inside a TOML basic string.
fn toml_path(p: &Path) -> String {
    p.display().to_string().replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_every_placeholder_and_refuses_bad_names() {
        let dir = tempfile::tempdir().unwrap();
        let root = new_plugin("my_method", dir.path(), &default_sdk_path()).unwrap();
        assert!(root.ends_with("fairpipe-plugin-my-method"));
        for (file, _) in TEMPLATE {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            assert!(!text.contains("{{"), "{file} keeps a placeholder");
        }
        assert!(matches!(new_plugin("my_method", dir.path(), &default_sdk_path()), Err(ScaffoldError::Exists(_))));
        assert!(matches!(new_plugin("My-Method", dir.path(), &default_sdk_path()), Err(ScaffoldError::BadName(_))));
        assert!(matches!(new_plugin("maft", dir.path(), &default_sdk_path()), Err(ScaffoldError::Builtin(_))));
        assert!(matches!(new_plugin("x", dir.path(), dir.path()), Err(ScaffoldError::MissingCrate { .. })));
    }
}
