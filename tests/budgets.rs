//! A search longer than anyone would wait is cut short as asked: by its time budget (the run
//! succeeds and says which budget stopped it) or by the user's Ctrl-C (the run stops, writes
//! nothing and exits 130). The search is SG with a sample limit of a million inputs: hours, uncut.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common;

fn endless_search(dir: &std::path::Path, budget: &str) -> std::path::PathBuf {
    let text = format!(
        "[stages.data]\nkind = \"load\"\npath = \"{}\"\ncodes = \"{}\"\nlabel = \"income\"\nfavourable = \">50K\"\nprotected = [\"gender\"]\ndrop = [\"row\"]\nsplit_column = \"split\"\n\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n\n[stages.search]\nkind = \"generate\"\nmodel = \"model\"\nplugin = \"sg\"\nparams = {{ sample_limit = 1000000 }}\n{budget}\n\n[stages.verified]\nkind = \"verify\"\ncases = \"search\"\n",
        common::bundled("data/census.csv"),
        common::bundled("data/census.codes.toml"),
        common::bundled("models/census.onnx")
    );
    common::write(dir, "endless.toml", &text)
}

#[test]
fn a_time_budget_ends_a_search_and_the_summary_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = endless_search(dir.path(), "max_seconds = 0.5");
    let summary = common::run_pipeline(&file, &dir.path().join("out"), &[]);
    let search = &summary["stages"]["search"];
    assert_eq!(search["stopped_by"], "max_seconds", "{search}");
    assert!(search["generated"].as_u64().unwrap() < 1_000_000, "{search}");
    assert_eq!(summary["stages"]["verified"]["rejected"], 0);
}

#[test]
fn ctrl_c_stops_a_search_writes_nothing_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let file = endless_search(dir.path(), "");
    let out = dir.path().join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Loading the data and checking the native executor take about a second; the search never ends.
    std::thread::sleep(Duration::from_secs(4));
    let sent = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let result = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(!out.exists(), "an interrupted run writes nothing");
}
