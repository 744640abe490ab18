//! The native tree executor (issue 38) against ONNX Runtime on every tree export of the fixtures
//! (tests/fixtures/onnx/trees, made by scripts/make_tree_fixtures.py: scikit-learn RF,
//! ExtraTrees, GBC, HistGradientBoosting, XGBoost, LightGBM with categorical splits, CatBoost;
//! binary and three-class with text labels; scikit-learn Pipelines with a OneHotEncoder or an
//! OrdinalEncoder (LabelEncoder) before the trees; opset 5's TreeEnsemble with set membership,
//! ArgMax and a LabelEncoder to text labels, and averaging a regressor's trees), on all 48,842 rows
//! of the bundled census data and on those rows with NaN and unseen values planted: every output
//! equal, labels exactly, probabilities bit for bit (`to_bits`). Then the executor's choice in a
//! pipeline: `auto` runs a covered tree model natively and says so, `native` on a graph it does not
//! cover names the operator.
//!
//! These tests need ONNX Runtime (scripts/test.sh provisions it through ORT_DYLIB_PATH); without
//! it they fail with the install command in the message, never pass silently.

use std::path::PathBuf;

use fairpipe_core::models::onnx::ort::raw_outputs as ort_outputs;
use fairpipe_core::models::onnx::runtime::runtime;
use fairpipe_core::models::outputs::{ClassKey, RawOutput};
use fairpipe_core::models::trees::{raw_outputs, Graph};

use crate::common::*;

fn trees_dir() -> PathBuf {
    root().join("tests/fixtures/onnx/trees")
}

/// The census rows as fairpipe encodes them (row-major) and their width.
fn census_rows() -> (Vec<f64>, usize) {
    let data = census_data();
    (data.x.iter().copied().collect(), data.domain.width())
}

/// The first row where two label columns differ, with both labels.
fn assert_labels_equal<T: PartialEq + std::fmt::Debug>(name: &str, ours: &[T], theirs: &[T]) {
    assert_eq!(ours.len(), theirs.len(), "{name}: rows");
    if let Some(row) = ours.iter().zip(theirs).position(|(a, b)| a != b) {
        panic!("{name}: row {row}: native {:?}, onnxruntime {:?}", ours[row], theirs[row]);
    }
}

/// Two outputs of the same form are the same: labels equal, every number bit for bit
/// (`f64::to_bits`, through `compare::assert_bits_equal`). Returns the values compared.
fn assert_identical(name: &str, ours: &RawOutput, theirs: &RawOutput) -> usize {
    match (ours, theirs) {
        (RawOutput::Floats { values: a, columns: ca }, RawOutput::Floats { values: b, columns: cb }) => {
            assert_eq!(ca, cb, "{name}: columns");
            compare::assert_bits_equal(name, a, b);
            a.len()
        }
        (RawOutput::IntLabels(a), RawOutput::IntLabels(b)) => {
            assert_labels_equal(name, a, b);
            a.len()
        }
        (RawOutput::TextLabels(a), RawOutput::TextLabels(b)) => {
            assert_labels_equal(name, a, b);
            a.len()
        }
        (RawOutput::Maps(a), RawOutput::Maps(b)) => {
            assert_eq!(a.len(), b.len(), "{name}: rows");
            for (row, (x, y)) in a.iter().zip(b).enumerate() {
                assert!(x.iter().map(|e| &e.0).eq(y.iter().map(|e| &e.0)), "{name}: row {row}: map keys {x:?} against {y:?}");
            }
            let values = |maps: &[Vec<(ClassKey, f64)>]| maps.iter().flatten().map(|e| e.1).collect::<Vec<f64>>();
            let (ours, theirs) = (values(a), values(b));
            compare::assert_bits_equal(&format!("{name} (map values, row-major)"), &ours, &theirs);
            ours.len()
        }
        (a, b) => panic!("{name}: native gives {}, onnxruntime {}", a.form(), b.form()),
    }
}

#[test]
fn every_tree_export_gives_onnxruntimes_labels_and_probabilities() {
    let (x, width) = census_rows();
    every_export_against_onnxruntime(&x, width);
}

/// The census rows with one feature per row replaced by a value outside the data: NaN, negatives,
/// fractions, -0, an unseen category, huge numbers, infinity (missing-value directions, set
/// membership of non-members and of fractions, encoders' unknown categories and defaults, casts
/// of NaN).
#[test]
fn rows_with_missing_and_unseen_values_give_onnxruntimes_figures_too() {
    let (mut x, width) = census_rows();
    let odd = [f64::NAN, -1.0, 0.5, -0.0, 99.0, 1e12, f64::INFINITY, -0.5, 7.5, 3e9];
    for (r, row) in x.chunks_exact_mut(width).enumerate() {
        row[r % width] = odd[(r / width) % odd.len()];
    }
    every_export_against_onnxruntime(&x, width);
}

/// Every output of every export in the trees directory, native vs ONNX Runtime on the rows `x`:
/// labels equal, numbers bit for bit.
fn every_export_against_onnxruntime(x: &[f64], width: usize) {
    let runtime = runtime(None).unwrap_or_else(|e| panic!("these tests need ONNX Runtime: {e}"));
    let rows = x.len() / width;
    assert!(rows >= 30_000, "{rows} rows");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(trees_dir()).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "onnx")).collect();
    files.sort();
    // 11 opset-3 exports, 2 scikit-learn Pipelines with encoders, 3 opset-5 TreeEnsemble exports.
    assert!(files.len() >= 16, "{files:?}");
    let mut report = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let graph = Graph::read(file, width).unwrap_or_else(|e| panic!("{name}: not covered: {e}"));
        let ours = raw_outputs(&graph, x).unwrap();
        let theirs = ort_outputs(file, &runtime, x, width).unwrap();
        assert_eq!(ours.iter().map(|o| &o.0).collect::<Vec<_>>(), theirs.iter().map(|o| &o.0).collect::<Vec<_>>(), "{name}: outputs");
        for ((output, a), (_, b)) in ours.iter().zip(&theirs) {
            let values = assert_identical(&format!("{name} {output}"), a, b);
            report.push(format!("{name} {output}: {values} values over {rows} rows, identical bit for bit"));
        }
    }
    println!("{}", report.join("\n"));
}

/// A pipeline loading the census data and `model` with `keys`, then scoring every row.
fn pipeline(model: &std::path::Path, keys: &str) -> String {
    format!(
        "[pipeline]\nname = \"trees\"\nseed = 3\n\n{}\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n{keys}\n",
        census_data_stage(),
        model.display()
    )
}

#[test]
fn auto_runs_a_covered_tree_model_natively_and_checks_it_against_onnxruntime() {
    runtime(None).unwrap_or_else(|e| panic!("this test needs ONNX Runtime: {e}"));
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "sklearn_rf.onnx",
        "lightgbm_categorical.onnx",
        "catboost.onnx",
        "sklearn_onehot_rf.onnx",
        "sklearn_ordinal_gbc.onnx",
        "treeensemble5_lightgbm.onnx",
    ] {
        let path = write(dir.path(), "p.toml", &pipeline(&trees_dir().join(file), ""));
        let summary = run_pipeline(&path, &dir.path().join(file), &[]);
        let figures = &summary["stages"]["model"];
        let executor = figures["executor"].as_str().unwrap_or_default();
        assert!(executor.starts_with("native-trees"), "{file}: {figures}");
        let reason = figures["executor_reason"].as_str().unwrap_or_default();
        assert!(reason.contains("native tree executor covers"), "{file}: {reason}");
        let check = figures["reference_check"].as_str().unwrap_or_default();
        assert!(check.contains("reproduces onnxruntime"), "{file}: {check}");
        assert!(figures["reference_checked_rows"].as_u64().unwrap_or(0) >= 20_000, "{file}: {figures}");
    }
}

#[test]
fn native_on_a_graph_it_does_not_cover_names_the_operator() {
    let dir = tempfile::tempdir().unwrap();
    // A scikit-learn Pipeline with a OneHotEncoder and a linear model: no tree ensemble.
    let model = root().join("tests/fixtures/exports/sklearn_vector_lr.onnx");
    let path = write(dir.path(), "p.toml", &pipeline(&model, "executor = \"native\""));
    let err = run_failing(&path, &dir.path().join("out"));
    assert!(err.contains("executor = \"native\"") && err.contains("operator ai.onnx"), "{err}");
}

/// The fairpipe binary with ONNX Runtime hidden: `ORT_DYLIB_PATH` names a file that does not
/// exist (fairpipe looks there first, and a path given that holds no library ends the search),
/// and the `python3` first on `PATH` has no `onnxruntime` package (fairpipe's last place to
/// look). Returns (success, stdout, stderr).
fn fairpipe_without_onnxruntime(hidden: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    use std::os::unix::fs::PermissionsExt;
    let bin = hidden.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let python = write(&bin, "python3", "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'onnxruntime'\" >&2\nexit 1\n");
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(args)
        .current_dir(root())
        .env("ORT_DYLIB_PATH", hidden.join("no-onnxruntime/libonnxruntime.so"))
        .env("PATH", path)
        .output()
        .expect("run fairpipe");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Without ONNX Runtime, `auto` runs the bundled XGBoost export natively (issue 57): the bias
/// audit pipeline validates and runs, `reference_check` and `executor_reason` say that the check
/// against ONNX Runtime was skipped, and the report says it too. The pipeline `init` writes for
/// an XGBoost export ("ONNX Runtime is not needed") validates as well.
#[test]
fn without_onnx_runtime_auto_runs_the_bundled_xgboost_natively_and_says_the_check_was_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = "pipelines/adult-bias-audit.toml";
    let (ok, stdout, stderr) = fairpipe_without_onnxruntime(dir.path(), &["validate", pipeline]);
    assert!(ok, "{pipeline} does not validate without ONNX Runtime:\n{stdout}\n{stderr}");

    let out = dir.path().join("out");
    let (ok, stdout, stderr) = fairpipe_without_onnxruntime(dir.path(), &["run", pipeline, "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(ok, "{pipeline} does not run without ONNX Runtime:\n{stdout}\n{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let model = &summary["stages"]["model"];
    assert!(model["executor"].as_str().unwrap_or_default().starts_with("native-trees"), "{model}");
    let check = model["reference_check"].as_str().unwrap_or_default();
    assert!(check.starts_with("skipped: ONNX Runtime is not available"), "{model}");
    let reason = model["executor_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("native tree executor covers") && reason.contains("the reference check against it was skipped"), "{model}");
    assert!(model.get("reference_checked_rows").is_none() && model.get("onnxruntime_path").is_none(), "{model}");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("the reference check against it was skipped"), "the report does not say the check was skipped");
    assert!(report.contains("Check against ONNX Runtime: skipped: ONNX Runtime is not available"), "the report's check line");

    let written = dir.path().join("init.toml");
    let rows = root().join("tests/fixtures/exports/rows.csv");
    let xgboost = root().join("tests/fixtures/exports/xgboost.onnx");
    let args = ["init", rows.to_str().unwrap(), "--model", xgboost.to_str().unwrap(), "--out", written.to_str().unwrap()];
    let (ok, stdout, stderr) = fairpipe_without_onnxruntime(dir.path(), &args);
    assert!(ok && stdout.contains("wrote"), "init:\n{stdout}\n{stderr}");
    assert!(std::fs::read_to_string(&written).unwrap().contains("ONNX Runtime is not needed"), "init's note");
    let (ok, stdout, stderr) = fairpipe_without_onnxruntime(dir.path(), &["validate", written.to_str().unwrap()]);
    assert!(ok, "init's pipeline for an XGBoost export does not validate without ONNX Runtime:\n{stdout}\n{stderr}");
}
