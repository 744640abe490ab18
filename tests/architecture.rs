//! ARCHITECTURE.md stays true: every path it names exists, no crate's module import graph has a
//! circle (as drawn by `scripts/import_cycles.py`), and no crate depends on a crate of its own floor
//! or a higher one.

use std::path::Path;
use std::process::Command;

/// Every `code span` of ARCHITECTURE.md that looks like a repository path exists.
#[test]
fn every_path_the_architecture_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut checked = 0;
    let mut missing = Vec::new();
    for (i, span) in text.split('`').enumerate() {
        // Odd pieces are inside backticks; paths have a slash and no spaces.
        if i % 2 == 0 || !span.contains('/') || span.contains(' ') || span.contains("::") {
            continue;
        }
        checked += 1;
        if !root.join(span.trim_end_matches('/')).exists() {
            missing.push(span.to_string());
        }
    }
    assert!(checked >= 20, "only {checked} paths found in ARCHITECTURE.md: has its format changed?");
    assert!(missing.is_empty(), "ARCHITECTURE.md names paths that do not exist: {missing:?}");
}

/// No module of any workspace crate imports, directly or not, a module that imports it back.
#[test]
fn no_crate_has_an_import_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3").arg(root.join("scripts/import_cycles.py")).output().expect("python3 runs scripts/import_cycles.py");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.trim_end().ends_with("0 circle(s)"), "{text}{}", String::from_utf8_lossy(&out.stderr));
}

/// A kind's name is written where the kind is (its file, the registry's list, the pipeline
/// builders), not in the code that reads a run: the verdict, the gate, the report, the CLI and
/// Python read what a kind's figures mean through its `StageFigures` (issue 59).
/// `scripts/count_kind_literals.py` counts the string literals equal to a kind's name anywhere
/// else; the 5 left are not kinds there (the split name "train" three times, the stage names of
/// an old summary's default and of `audit`'s cost line), and a sixth fails this test.
#[test]
fn kind_names_are_written_only_where_the_kinds_are() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .arg(root.join("scripts/count_kind_literals.py"))
        .arg("--list")
        .output()
        .expect("python3 runs scripts/count_kind_literals.py");
    let text = String::from_utf8_lossy(&out.stdout);
    let count: usize = text
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("kind-name literals: "))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {text}{}", String::from_utf8_lossy(&out.stderr)));
    assert!(count <= 5, "{count} kind names written outside the kinds' files; read the kind's StageFigures instead:\n{text}");
}

/// The floors of ARCHITECTURE.md's crate table, bottom first: a crate may depend (normal
/// dependencies, not dev-dependencies) only on crates of lower floors.
const FLOORS: &[(&str, &str)] = &[
    ("fairpipe-ffi", "core/ffi"),
    ("fairpipe-abi", "core/abi"),
    ("fairpipe-search", "core/search"),
    ("fairpipe-cart", "core/cart"),
    ("fairpipe-plugin-*", "plugins/*"),
    ("fairpipe-conformance", "core/conformance"),
    ("fairpipe-derive", "core/derive"),
    ("fairpipe-keys", "core/keys"),
    ("fairpipe-data", "core/data"),
    ("fairpipe-models", "core/models"),
    ("fairpipe-core", "core/engine"),
    ("fairpipe-builtins", "core/builtins"),
    ("fairpipe", "."),
    ("fairpipe-python", "python"),
];

/// The floor of a crate name (plugins share one).
fn floor_of(name: &str) -> Option<usize> {
    FLOORS.iter().position(|(n, _)| *n == name || (n.ends_with('*') && name.starts_with(n.trim_end_matches('*'))))
}

/// The `fairpipe*` names in a manifest's `[dependencies]` table (and its target-specific ones).
fn fairpipe_dependencies(manifest: &str) -> Vec<String> {
    let mut in_dependencies = false;
    let mut found = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]" || (line.starts_with("[target.") && line.ends_with(".dependencies]"));
            continue;
        }
        if in_dependencies && line.starts_with("fairpipe") {
            found.push(line.split(['=', '.', ' ']).next().unwrap_or_default().to_string());
        }
    }
    found
}

/// No crate depends on a crate of its own floor or above it (Cargo only refuses circles).
#[test]
fn no_crate_depends_on_a_higher_floor() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut manifests = Vec::new();
    for (_, folder) in FLOORS {
        if let Some(parent) = folder.strip_suffix("/*") {
            for entry in std::fs::read_dir(root.join(parent)).unwrap() {
                manifests.push(entry.unwrap().path().join("Cargo.toml"));
            }
        } else {
            manifests.push(root.join(folder).join("Cargo.toml"));
        }
    }
    let mut upward = Vec::new();
    let mut edges = 0;
    for manifest in &manifests {
        let text = std::fs::read_to_string(manifest).unwrap();
        let name = text.lines().find_map(|l| l.strip_prefix("name = \"")).and_then(|n| n.strip_suffix('"')).unwrap().to_string();
        let me = floor_of(&name).unwrap_or_else(|| panic!("{}: crate {name} is on no floor of ARCHITECTURE.md", manifest.display()));
        for dependency in fairpipe_dependencies(&text) {
            edges += 1;
            match floor_of(&dependency) {
                Some(floor) if floor < me => {}
                _ => upward.push(format!("{name} -> {dependency}")),
            }
        }
    }
    assert!(edges >= 20, "only {edges} dependencies between fairpipe crates found: has the manifests' format changed?");
    assert!(upward.is_empty(), "dependencies that do not point to a lower floor: {upward:?}");
}

/// The CLI (`src/`) and the Python package (`python/src/`) reach the engine through its façade —
/// the runner (`fairpipe_core::run`), the typed stage configs, the preset — never through the
/// stage contract (`fairpipe_core::stage`), which is the stages' and the runner's (tests aside).
#[test]
fn the_cli_and_python_never_name_the_stage_contract() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "python/src"] {
        let mut stack = vec![root.join(dir)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().map(Result::unwrap) {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
    }
    assert!(files.len() >= 10, "only {} Rust files under src/ and python/src/", files.len());
    let mut named = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        // A file's tests (from its first `#[cfg(test)]`) may use anything.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (i, line) in code.lines().enumerate() {
            if line.contains("fairpipe_core::stage::") || line.contains("fairpipe_core::{stage") {
                named.push(format!("{}:{}: {}", file.strip_prefix(root).unwrap().display(), i + 1, line.trim()));
            }
        }
    }
    assert!(named.is_empty(), "the CLI or Python names the stage contract (use fairpipe_core::run's re-exports):\n{}", named.join("\n"));
}
