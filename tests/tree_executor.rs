//! The native tree executor (issue 38) against ONNX Runtime on every tree export of the fixtures
//! (tests/fixtures/onnx/trees, made by scripts/make_tree_fixtures.py: scikit-learn RF,
//! ExtraTrees, GBC, HistGradientBoosting, XGBoost, LightGBM with categorical splits, CatBoost;
//! binary and three-class with text labels; scikit-learn Pipelines with a OneHotEncoder or an
//! OrdinalEncoder (LabelEncoder) before the trees; opset 5's TreeEnsemble with set membership,
//! ArgMax and a LabelEncoder to text labels, and averaging a regressor's trees), on all 48,842 rows
//! of the bundled census data and on those rows with NaN and unseen values planted: every output
//! equal, labels exactly, probabilities within 1e-6. Then the executor's choice in a
//! pipeline: `auto` runs a covered tree model natively and says so, `native` on a graph it does not
//! cover names the operator.
//!
//! These tests need ONNX Runtime (scripts/test.sh provisions it through ORT_DYLIB_PATH); without
//! it they fail with the install command in the message, never pass silently.

use std::path::PathBuf;

use fairpipe_core::models::onnx::ort::raw_outputs as ort_outputs;
use fairpipe_core::models::onnx::runtime::runtime;
use fairpipe_core::models::outputs::RawOutput;
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

/// Largest difference between two outputs of the same form, and rows whose label differs.
fn compare(name: &str, ours: &RawOutput, theirs: &RawOutput) -> (f64, usize) {
    let worst =
        |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, |m: f64, d| if d.is_nan() || d > m { d } else { m });
    match (ours, theirs) {
        (RawOutput::Floats { values: a, columns: ca }, RawOutput::Floats { values: b, columns: cb }) => {
            assert_eq!((ca, a.len()), (cb, b.len()), "{name}: shapes differ");
            (worst(a, b), 0)
        }
        (RawOutput::IntLabels(a), RawOutput::IntLabels(b)) => {
            assert_eq!(a.len(), b.len(), "{name}");
            (0.0, a.iter().zip(b).filter(|(x, y)| x != y).count())
        }
        (RawOutput::TextLabels(a), RawOutput::TextLabels(b)) => {
            assert_eq!(a.len(), b.len(), "{name}");
            (0.0, a.iter().zip(b).filter(|(x, y)| x != y).count())
        }
        (RawOutput::Maps(a), RawOutput::Maps(b)) => {
            assert_eq!(a.len(), b.len(), "{name}");
            let mut d = 0.0f64;
            for (x, y) in a.iter().zip(b) {
                assert_eq!(x.iter().map(|e| &e.0).collect::<Vec<_>>(), y.iter().map(|e| &e.0).collect::<Vec<_>>(), "{name}: map keys");
                d = d.max(worst(&x.iter().map(|e| e.1).collect::<Vec<_>>(), &y.iter().map(|e| e.1).collect::<Vec<_>>()));
            }
            (d, 0)
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
/// labels equal, numbers within 1e-6.
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
            let (diff, flips) = compare(&format!("{name} {output}"), a, b);
            report.push(format!("{name} {output}: max |d| {diff:e}, {flips} labels differ of {rows}"));
            assert_eq!(flips, 0, "{name} {output}: {flips} labels differ from onnxruntime's");
            assert!(diff <= 1e-6, "{name} {output}: max |d| {diff:e} from onnxruntime's");
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
