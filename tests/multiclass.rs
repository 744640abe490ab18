//! Models of three classes (issue 36 item 8), on the 3-class exports of scripts/make_tree_fixtures.py
//! (classes denied, review, approved: XGBoost numbers them 0, 1, 2; scikit-learn's forest names
//! them): with the favourable class named by its label value the audit reads that class's column
//! against the rest, and says so; with nothing naming it, the load is refused listing the classes.

use std::path::{Path, PathBuf};

use crate::common;

use common::*;

fn fixture(name: &str) -> String {
    root().join("tests/fixtures/onnx/trees").join(name).to_string_lossy().into_owned()
}

/// The census rows with a three-valued label `decision` (denied without a high income; review or
/// approved with one, by hours worked: 25 or fewer is review, as make_tree_fixtures.py labels
/// them), written as `names` gives each value.
fn census_decisions(dir: &Path, names: [&str; 3]) -> PathBuf {
    let text = std::fs::read_to_string(bundled("data/census.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let cols: Vec<&str> = header.split(',').collect();
    let (income, hours) = (cols.iter().position(|c| *c == "income").unwrap(), cols.iter().position(|c| *c == "hours-per-week").unwrap());
    let mut out = format!("{header},decision\n");
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let decision = match (cells[income], cells[hours]) {
            ("<=50K", _) => names[0],
            (_, "1–25") => names[1],
            _ => names[2],
        };
        out.push_str(&format!("{line},{decision}\n"));
    }
    let path = dir.join(format!("decisions_{}.csv", names[2]));
    std::fs::write(&path, out).unwrap();
    path
}

fn pipeline(data: &Path, favourable: &str, model: &str) -> String {
    format!(
        "[stages.data]\nkind = \"load\"\npath = {:?}\ncodes = {:?}\nlabel = \"decision\"\n{favourable}\nprotected = [\"gender\"]\ndrop = [\"row\", \"income\"]\nsplit_column = \"split\"\n\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = {model:?}\n",
        data.display().to_string(),
        bundled("data/census.codes.toml")
    )
}

#[test]
fn a_three_class_model_is_audited_for_the_named_class_against_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    // XGBoost's numbered classes, the label written as the same numbers: class 2 named.
    let data = census_decisions(dir.path(), ["0", "1", "2"]);
    let file = write(dir.path(), "xgb.toml", &pipeline(&data, "favourable = 2", &fixture("xgboost_multiclass.onnx")));
    let summary = run_pipeline(&file, &dir.path().join("xgb"), &[]);
    let model = &summary["stages"]["model"];
    assert_eq!(model["favourable_vs_rest"], true, "{model}");
    assert_eq!(model["model_classes"], serde_json::json!(["0", "1", "2"]));
    assert_eq!(model["output_read"], "column 2, favourable vs the rest of 3 classes [0, 1, 2]", "{model}");
    let warnings: Vec<&str> = summary["warnings"].as_array().unwrap().iter().filter_map(|w| w["message"].as_str()).collect();
    assert!(warnings.iter().any(|w| w.contains("the model has 3 classes (0, 1, 2): the audit reads P(\"2\")")), "{warnings:?}");
    assert!(model["accuracy_test"].as_f64().unwrap() > 0.8, "{model}");
    // scikit-learn's named classes: the "approved" entry.
    let data = census_decisions(dir.path(), ["denied", "review", "approved"]);
    let file = write(dir.path(), "rf.toml", &pipeline(&data, "favourable = \"approved\"", &fixture("sklearn_rf_multiclass.onnx")));
    let summary = run_pipeline(&file, &dir.path().join("rf"), &[]);
    let model = &summary["stages"]["model"];
    assert_eq!(model["favourable_vs_rest"], true, "{model}");
    assert!(model["output_read"].as_str().unwrap().contains("\"approved\""), "{model}");
    assert!(model["accuracy_test"].as_f64().unwrap() > 0.8, "{model}");
}

#[test]
fn a_three_class_model_whose_favourable_class_nothing_names_is_refused_listing_the_classes() {
    let dir = tempfile::tempdir().unwrap();
    let data = census_decisions(dir.path(), ["denied", "review", "approved"]);
    let file = write(dir.path(), "xgb.toml", &pipeline(&data, "favourable = \"approved\"", &fixture("xgboost_multiclass.onnx")));
    let stderr = run_failing(&file, &dir.path().join("out"));
    assert!(stderr.contains("the model has 3 classes [0, 1, 2]") && stderr.contains("favourable = "), "{stderr}");
}
