//! The CI gate through the real command line: a run whose `[gate]` (or `--gate`) condition fails
//! writes its results as always, prints every condition with its value, and exits 3; a run whose
//! conditions hold exits 0; a malformed condition is a located error before anything runs.

use std::process::Command;

use crate::common;

use common::*;

/// The reference census model's group metrics on the test split, gated by `gate` (TOML lines).
fn pipeline(gate: &str) -> String {
    format!(
        r#"[pipeline]
seed = 1

{data_stage}
[stages.model]
kind = "load_model"
data = "data"
path = "{model}"

[stages.metrics]
kind = "group_metrics"
model = "model"
split = "test"
bootstrap = 50

{gate}
"#,
        data_stage = census_data_stage(),
        model = bundled("models/census.onnx")
    )
}

/// Run `file` with `extra` arguments (not quiet: the gate's table is printed); (exit code,
/// stdout, stderr).
fn run(file: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let mut args = vec!["run", file.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = Command::new(env!("CARGO_BIN_EXE_fairpipe")).args(&args).current_dir(root()).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn a_failing_condition_writes_the_results_and_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    // Census income predictions differ strongly by gender: the demographic parity ratio is far
    // below 0.8, while every group has rows.
    let file = write(
        dir.path(),
        "gated.toml",
        &pipeline("[gate]\nconditions = [\"metrics.demographic_parity_ratio >= 0.8\", \"metrics.rows > 0\"]"),
    );
    let out = dir.path().join("out");
    let (code, stdout, stderr) = run(&file, &out, &[]);
    assert_eq!(code, Some(3), "{stdout}\n{stderr}");
    assert!(stdout.contains("gate: FAILED"), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("metrics.demographic_parity_ratio >= 0.8") && l.contains("FAIL")), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("metrics.rows > 0") && l.ends_with("pass")), "{stdout}");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let gate = &summary["gate"];
    assert_eq!(gate["passed"], false);
    let ratio = gate["conditions"][0]["value"].as_f64().unwrap();
    assert_eq!(ratio, summary["stages"]["metrics"]["demographic_parity_ratio"].as_f64().unwrap());
    assert!(ratio < 0.8);
    assert_eq!(gate["conditions"][1]["passed"], true);
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    // The gate's verdict opens the page: first in its first section, before any other table.
    let verdict = report.find("Gate FAILED (exit code 3)").expect("the gate's verdict is in the report");
    let section = report.find("<section id=\"verdict\">").expect("the report opens with its verdict section");
    assert!(section < verdict && report[..verdict].matches("<table").count() == 0, "the gate's verdict is at the top of the report");
    assert!(verdict < report.find("id=\"findings\"").expect("the findings"));
}

#[test]
fn conditions_that_hold_exit_0_and_the_command_line_adds_conditions() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "gated.toml", &pipeline("[gate]\nconditions = [\"metrics.demographic_parity_ratio < 0.8\"]"));
    let out = dir.path().join("out");
    let (code, stdout, stderr) = run(&file, &out, &["--gate", "metrics.rows == 9769"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("gate: passed"), "{stdout}");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["gate"]["conditions"].as_array().unwrap().len(), 2);
    // A --gate condition on a stage the pipeline lacks is refused before the run.
    let (code, _, stderr) = run(&file, &dir.path().join("out2"), &["--gate", "metricz.rows > 0"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("no stage `metricz`") && stderr.contains("did you mean"), "{stderr}");
    assert!(!dir.path().join("out2").exists());
    // A malformed --gate condition is a usage error (exit code 2), before anything runs.
    let (code, _, stderr) = run(&file, &dir.path().join("out3"), &["--gate", "metrics.rows 0"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("no comparison operator"), "{stderr}");
    assert!(!dir.path().join("out3").exists());
}

#[test]
fn malformed_gate_conditions_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let text = pipeline("[gate]\nconditions = [\"metrics.demographic_parity_ratio 0.8\", \"estimate.rate <= 0.1\"]");
    let file = write(dir.path(), "bad.toml", &text);
    let (ok, stdout, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    assert!(!ok, "{stdout}");
    let line = text.lines().position(|l| l.starts_with("conditions")).unwrap() + 1;
    assert!(
        stderr.contains(&format!("bad.toml:{line}:15: [gate] `metrics.demographic_parity_ratio 0.8`: no comparison operator")),
        "{stderr}"
    );
    assert!(stderr.contains("no stage `estimate`"), "{stderr}");
}

#[test]
fn a_figure_name_no_stage_writes_fails_validate_and_run_with_exit_1_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let text = pipeline("[gate]\nconditions = [\"metrics.rows > 0\", \"metrics.demographic_parity_ration >= 0.8\"]");
    let file = write(dir.path(), "typo.toml", &text);
    let line = text.lines().position(|l| l.starts_with("conditions")).unwrap() + 1;
    let col = text.lines().nth(line - 1).unwrap().find("\"metrics.demographic_parity_ration").unwrap() + 1;
    let says = format!(
        "typo.toml:{line}:{col}: [gate] `metrics.demographic_parity_ration >= 0.8`: stage `metrics` (group_metrics) has no figure `demographic_parity_ration` (did you mean `demographic_parity_ratio`?)"
    );
    let validate =
        Command::new(env!("CARGO_BIN_EXE_fairpipe")).args(["validate", file.to_str().unwrap()]).current_dir(root()).output().unwrap();
    let stderr = String::from_utf8_lossy(&validate.stderr);
    assert_eq!(validate.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&says), "{stderr}");
    // `run` refuses it the same way, before any stage runs: a typo is not a fairness failure (3).
    let out = dir.path().join("out");
    let (code, _, stderr) = run(&file, &out, &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(&says), "{stderr}");
    assert!(!out.exists());
    // The same typo given with --gate names the argument.
    let good = write(dir.path(), "good.toml", &pipeline(""));
    let (code, _, stderr) = run(&good, &out, &["--gate", "metrics.demographic_parity_ration >= 0.8"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--gate `metrics.demographic_parity_ration >= 0.8`: stage `metrics` (group_metrics) has no figure `demographic_parity_ration` (did you mean `demographic_parity_ratio`?)"),
        "{stderr}"
    );
    assert!(!out.exists());
    // A figure of the model stage, a nested one and a runner's figure are accepted.
    let (code, _, stderr) = run(
        &good,
        &out,
        &[
            "--gate",
            "model.agreement.auc > 0.5",
            "--gate",
            "metrics.parity.gender.demographic_parity_ratio > 0",
            "--gate",
            "metrics.elapsed_s >= 0",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
}

/// A condition on a figure that is an object (`min_impact_ratio`, one number per set of protected
/// attributes) is refused at validate, naming the numbers it holds — not run and reported as a
/// failed gate (exit 3), which would read as the model failing.
#[test]
fn a_condition_on_an_object_is_refused_before_the_run_naming_its_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.toml", &pipeline(""));
    let out = dir.path().join("out");
    let (code, _, stderr) = run(&good, &out, &["--gate", "metrics.min_impact_ratio >= 0.8"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--gate `metrics.min_impact_ratio >= 0.8`: `metrics.min_impact_ratio` is an object, not a number")
            && stderr.contains("`min_impact_ratio.sex`")
            && stderr.contains("e.g. `metrics.min_impact_ratio.sex >= 0.8`"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing ran");
    let text = pipeline("[gate]\nconditions = [\"metrics.min_impact_ratio >= 0.8\"]");
    let file = write(dir.path(), "object.toml", &text);
    let validate =
        Command::new(env!("CARGO_BIN_EXE_fairpipe")).args(["validate", file.to_str().unwrap()]).current_dir(root()).output().unwrap();
    let stderr = String::from_utf8_lossy(&validate.stderr);
    assert_eq!(validate.status.code(), Some(1), "{stderr}");
    let line = text.lines().position(|l| l.starts_with("conditions")).unwrap() + 1;
    assert!(
        stderr
            .contains(&format!("object.toml:{line}:15: [gate] `metrics.min_impact_ratio >= 0.8`: `metrics.min_impact_ratio` is an object")),
        "{stderr}"
    );
    // The number inside, named as the message says, is accepted and checked.
    let (code, _, stderr) = run(&good, &out, &["--gate", "metrics.min_impact_ratio.gender >= 0"]);
    assert_eq!(code, Some(0), "{stderr}");
}
