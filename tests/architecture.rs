//! ARCHITECTURE.md stays true: every path it names exists, and no crate's module import graph has
//! a circle (as drawn by `scripts/import_cycles.py`).

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
