//! A plugin author's path, end to end, from a temporary folder outside this workspace:
//! `fairpipe new-plugin`, then the new crate's own `cargo test` (its MockHost unit tests and the
//! conformance suite through its C entry), `cargo build`, and a pipeline that finds the library
//! through `[pipeline] plugin_path` and runs it: every case it emits is re-checked by the host.

use std::path::Path;
use std::process::Command;

use crate::common;

/// Run cargo `args` in `dir` with the shared target folder for external plugins; panics with its
/// output on failure.
fn cargo(dir: &Path, args: &[&str]) {
    let target = common::root().join("target/external-plugins");
    let out = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo {args:?} in {} failed:\n{}\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_plugin_made_from_the_template_builds_outside_the_workspace_and_runs_from_a_pipeline() {
    let tmp = tempfile::tempdir().unwrap();
    let (ok, stdout, stderr) = common::fairpipe(&["new-plugin", "demo_method", "--dir", tmp.path().to_str().unwrap()]);
    assert!(ok, "{stdout}\n{stderr}");
    let crate_dir = tmp.path().join("fairpipe-plugin-demo-method");
    assert!(crate_dir.join("Cargo.toml").is_file(), "{stdout}");
    // The workspace's lock file pins the same versions, so nothing new is fetched or resolved.
    std::fs::copy(common::root().join("Cargo.lock"), crate_dir.join("Cargo.lock")).unwrap();
    cargo(&crate_dir, &["test", "--offline", "--quiet"]);
    cargo(&crate_dir, &["build", "--offline", "--quiet"]);
    let libs = common::root().join("target/external-plugins/debug");
    assert!(libs.join(fairpipe_core::plugin::library_file_name("demo_method")).is_file());

    let pipeline = format!(
        "[pipeline]\nplugin_path = [\"{}\"]\n\n[stages.data]\nkind = \"load\"\npath = \"{}\"\ncodes = \"{}\"\nlabel = \"income\"\nfavourable = \">50K\"\nprotected = [\"gender\"]\ndrop = [\"row\"]\nsplit_column = \"split\"\n\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n\n[stages.search]\nkind = \"generate\"\nmodel = \"model\"\nplugin = \"demo_method\"\nparams = {{ samples = 2000 }}\n\n[stages.verified]\nkind = \"verify\"\ncases = \"search\"\n",
        libs.display(),
        common::bundled("data/census.csv"),
        common::bundled("data/census.codes.toml"),
        common::bundled("models/census.onnx")
    );
    let file = common::write(tmp.path(), "demo.toml", &pipeline);
    let summary = common::run_pipeline(&file, &tmp.path().join("out"), &[]);
    let search = &summary["stages"]["search"];
    assert_eq!(search["plugin"], "demo_method 0.1.0", "{search}");
    let verified = &summary["stages"]["verified"];
    assert!(
        verified["confirmed"].as_u64().unwrap() > 0,
        "the census model treats some of 2000 random inputs differently by gender: {verified}"
    );
    assert_eq!(verified["rejected"], 0, "{verified}");

    // The same library is listed as a file plugin when it is on FAIRPIPE_PLUGIN_PATH.
    let out = Command::new(env!("CARGO_BIN_EXE_fairpipe")).arg("list").env("FAIRPIPE_PLUGIN_PATH", &libs).output().unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("demo_method 0.1.0 (generator, ") && listing.contains("libfairpipe_plugin_demo_method"), "{listing}");
}
