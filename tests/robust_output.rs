//! A run's result is all or nothing: two runs into one folder (the second is refused, naming the
//! first), Ctrl-C while the results are being written, a full disk, a plugin that never returns —
//! each leaves the previous result whole and nothing beside it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

/// A quick census audit (estimate and check over the reference model) writing a few tables.
fn census_pipeline(dir: &Path) -> PathBuf {
    let text = format!(
        "[pipeline]\nseed = 3\n\n[stages.data]\nkind = \"load\"\npath = \"{}\"\ncodes = \"{}\"\nlabel = \"income\"\nfavourable = \">50K\"\nprotected = [\"gender\"]\ndrop = [\"row\"]\nsplit_column = \"split\"\n\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 10\nsamples = 100\n\n[stages.check]\nkind = \"check\"\nmodel = \"model\"\nsplit = \"test\"\n",
        common::bundled("data/census.csv"),
        common::bundled("data/census.codes.toml"),
        common::bundled("models/census.onnx")
    );
    common::write(dir, "census.toml", &text)
}

/// An out folder holding a previous result: `previous.json` only.
fn previous_result(dir: &Path) -> PathBuf {
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("previous.json"), "{\"previous\": true}").unwrap();
    out
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    n.sort();
    n
}

/// Start `fairpipe run pipeline --out out` with `hook` as FAIRPIPE_TEST_HOOK; wait until its
/// stderr says it reached the hook's pause. Returns the child and the stderr read so far.
fn start_paused(pipeline: &Path, out: &Path, hook: &str) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"])
        .env("FAIRPIPE_TEST_HOOK", hook)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let line = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("the run reaches its pause");
        if line.contains("test hook: pausing at before-commit") {
            break;
        }
    }
    (child, rx)
}

#[test]
fn a_second_run_into_the_same_folder_is_refused_naming_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = census_pipeline(dir.path());
    let out = previous_result(dir.path());
    let (first, _) = start_paused(&pipeline, &out, "pause:before-commit:3");
    // The first run holds the lock while it writes; the second is refused at once.
    let (ok, _, stderr) = common::fairpipe(&["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(!ok);
    assert!(stderr.contains(&format!("another fairpipe run (process {}) is writing into this folder", first.id())), "{stderr}");
    assert_eq!(names(&out), vec!["previous.json"], "the refused run touched nothing");
    let status = first.wait_with_output().unwrap().status;
    assert!(status.success());
    // The first run's whole result, and only it, replaced the previous one.
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["seed"], 3);
    assert_eq!(names(&out), vec!["check.csv", "check.parquet", "estimate.csv", "estimate.parquet", "report.html", "summary.json"]);
    assert_eq!(names(dir.path()), vec!["census.toml", "out"], "no lock or staging folder is left");
}

#[test]
fn ctrl_c_while_the_results_are_written_leaves_the_previous_result_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = census_pipeline(dir.path());
    let out = previous_result(dir.path());
    let (child, _) = start_paused(&pipeline, &out, "pause:before-commit");
    // Every table is in the staging folder now; the out folder still holds the previous result.
    assert!(names(dir.path()).iter().any(|n| n.starts_with(".out.staging-")), "{:?}", names(dir.path()));
    assert_eq!(names(&out), vec!["previous.json"]);
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let result = child.wait_with_output().unwrap();
    assert_eq!(result.status.code(), Some(130));
    assert_eq!(names(&out), vec!["previous.json"], "the previous result is whole");
    assert_eq!(names(dir.path()), vec!["census.toml", "out"], "the staging folder and the lock are removed");
}

#[test]
fn a_failure_while_writing_leaves_the_previous_result_whole() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = census_pipeline(dir.path());
    let out = previous_result(dir.path());
    let result = Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"])
        .env("FAIRPIPE_TEST_HOOK", "fail:before-commit")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("failed by FAIRPIPE_TEST_HOOK"), "{stderr}");
    assert_eq!(names(&out), vec!["previous.json"]);
    assert_eq!(names(dir.path()), vec!["census.toml", "out"]);
}

/// A full disk, on a 32 KiB tmpfs mounted in a private mount namespace (`unshare -rm`, which
/// needs no root where user namespaces are enabled): the run fails naming the file and the
/// previous result stays whole.
#[test]
fn a_full_disk_leaves_the_previous_result_whole() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = census_pipeline(dir.path());
    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    let script = r#"
        set -u
        mount -t tmpfs -o size=32k tmpfs "$DISK" || { echo "cannot mount a tmpfs"; exit 99; }
        mkdir "$DISK/out" && echo '{}' > "$DISK/out/previous.json"
        "$BIN" run "$PIPELINE" --out "$DISK/out" --quiet 2>&1
        echo "exit=$?"
        echo "disk: $(ls -A "$DISK" | tr '\n' ' ')"
        echo "out: $(ls -A "$DISK/out" | tr '\n' ' ')"
    "#;
    let result = Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .env("DISK", &disk)
        .env("BIN", env!("CARGO_BIN_EXE_fairpipe"))
        .env("PIPELINE", &pipeline)
        .output()
        .expect("unshare (util-linux) runs");
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(
        result.status.success(),
        "unshare -rm failed (user namespaces needed for this test): {stdout}{}",
        String::from_utf8_lossy(&result.stderr)
    );
    assert!(stdout.contains("exit=1"), "{stdout}");
    assert!(stdout.contains("No space left on device"), "{stdout}");
    assert!(stdout.contains("disk: out \n") || stdout.contains("disk: out\n"), "nothing beside the out folder: {stdout}");
    assert!(stdout.contains("out: previous.json"), "the previous result is whole: {stdout}");
}

/// A generator run on the stubborn fixture plugin (never returns, never checks should_stop).
fn stubborn_pipeline(dir: &Path, budget: &str) -> PathBuf {
    let library = common::plugin_dir().join(format!("{}fixture_stubborn{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX));
    assert!(library.exists(), "{} is built by cargo build --workspace", library.display());
    let text = format!(
        "[stages.data]\nkind = \"load\"\npath = \"{}\"\ncodes = \"{}\"\nlabel = \"income\"\nfavourable = \">50K\"\nprotected = [\"gender\"]\ndrop = [\"row\"]\nsplit_column = \"split\"\n\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n\n[stages.search]\nkind = \"generate\"\nmodel = \"model\"\npath = \"{}\"\n{budget}\n",
        common::bundled("data/census.csv"),
        common::bundled("data/census.codes.toml"),
        common::bundled("models/census.onnx"),
        library.display()
    );
    common::write(dir, "stubborn.toml", &text)
}

#[test]
fn a_plugin_that_ignores_its_time_budget_ends_the_run_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = stubborn_pipeline(dir.path(), "max_seconds = 0.5");
    let out = previous_result(dir.path());
    let started = Instant::now();
    let (ok, _, stderr) = common::fairpipe(&["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(!ok);
    assert!(
        stderr.contains(
            "plugin `fixture_stubborn` did not return within 2 s of being asked to stop (its max_seconds budget of 0.5 s was spent)"
        ),
        "{stderr}"
    );
    // Loading and the budget take about 2 s, the grace 2 s more; far from an endless run.
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    assert_eq!(names(&out), vec!["previous.json"]);
}

#[test]
fn ctrl_c_ends_a_plugin_that_ignores_should_stop_after_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = stubborn_pipeline(dir.path(), "");
    let out = previous_result(dir.path());
    let child = Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let result = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("plugin `fixture_stubborn` did not return within 2 s of being asked to stop (the run was interrupted)"),
        "{stderr}"
    );
    assert_eq!(names(&out), vec!["previous.json"]);
}

#[test]
fn a_value_the_run_adjusts_is_stated_in_the_summary_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..12).map(|i| format!("{},{},{}\n", i % 7, i % 2, (i / 3) % 2)).collect();
    common::write(dir.path(), "small.csv", &format!("x,s,y\n{rows}"));
    // 50 seeds asked of a dozen rows: fewer are emitted, and the run says so where its results are read.
    let pipeline = common::write(
        dir.path(),
        "p.toml",
        "[pipeline]\nseed = 1\n\n[stages.data]\nkind = \"load\"\npath = \"small.csv\"\nlabel = \"y\"\nprotected = [\"s\"]\n\n[stages.seeds]\nkind = \"cluster\"\ndata = \"data\"\nk = 2\nseeds = 50\n",
    );
    let out = dir.path().join("out");
    // Not quiet: warnings are printed (`--quiet` keeps them in summary.json only).
    let (ok, _, stderr) = common::fairpipe(&["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    // The seeds are drawn from the training rows.
    let train = summary["stages"]["data"]["rows_train"].as_u64().unwrap();
    assert!(train < 50);
    assert!(stderr.contains(&format!("warning: stage `seeds`: seeds = 50 asked, but there are only {train} rows")), "{stderr}");
    assert_eq!(summary["stages"]["seeds"]["seeds"], train);
    let stated = &summary["stages"]["seeds"]["warnings"];
    assert_eq!(stated.as_array().map(Vec::len), Some(1), "{stated}");
    assert!(stated[0].as_str().unwrap().contains(&format!("{train} seeds are emitted")), "{stated}");
    assert_eq!(summary["warnings"][0]["stage"], "seeds");
    assert_eq!(summary["warnings"][0]["message"], stated[0]);
    assert!(summary["stages"]["data"].get("warnings").is_none(), "a stage without warnings lists none");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    // The warnings lead the report's findings, before any table.
    let warnings = report.find("id=\"warnings\"").expect("the report has its warnings block");
    assert!(report[..warnings].matches("<table").count() == 0, "the warnings come before the tables");
    assert!(report[warnings..].contains(&format!("{train} seeds are emitted")));
}
