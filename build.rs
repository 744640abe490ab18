//! Records the git commit fairpipe is built from (`FAIRPIPE_GIT_COMMIT`, handed by
//! [`record_build_commit`](src/lib.rs) to the engine's `trail::set_git_commit` for every run's audit
//! trail), when it is built from a git checkout. It lives in this top crate, not in the engine, so
//! a commit rebuilds only the command line and the Python binding, not `fairpipe-core`.

use std::process::Command;

/// The package's folder, read when the build script runs: `env!` would keep the folder of the
/// checkout that compiled the script, and a target shared by two worktrees would then record the
/// other worktree's commit.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map(Into::into).unwrap_or_default()
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(manifest_dir()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|s| !s.is_empty())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Some(commit) = git(&["rev-parse", "HEAD"]) {
        println!("cargo:rustc-env=FAIRPIPE_GIT_COMMIT={commit}");
        // Built again when HEAD moves (a commit, a checkout): its reflog changes.
        for file in ["HEAD", "logs/HEAD"] {
            if let Some(path) = git(&["rev-parse", "--git-path", file]) {
                let path = manifest_dir().join(path);
                if path.exists() {
                    println!("cargo:rerun-if-changed={}", path.display());
                }
            }
        }
    }
}
