//! The model-input map and typed inputs (issue 36 item 7), on exports of the bundled census network
//! made by scripts/make_input_fixtures.py: the same network behind a float16, float64, int64 or
//! int32 input, and behind twelve named inputs one of which (`edu_num`) is named unlike its column.
//! Each must give exactly the bundled model's test accuracy (8,275 of 9,769) on the papers' codes.

use crate::common;

use common::*;

fn fixture(name: &str) -> String {
    root().join("tests/fixtures/inputs").join(name).to_string_lossy().into_owned()
}

/// The census data and `model` with extra `load_model` keys.
fn pipeline(model: &str, keys: &str) -> String {
    format!("{}\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = {model:?}\n{keys}\n", census_data_stage())
}

#[test]
fn inputs_of_every_numeric_type_get_the_encoded_features_cast() {
    let dir = tempfile::tempdir().unwrap();
    for ty in ["float16", "float64", "int64", "int32"] {
        let file = write(dir.path(), &format!("{ty}.toml"), &pipeline(&fixture(&format!("census_{ty}.onnx")), ""));
        let summary = run_pipeline(&file, &dir.path().join(ty), &[]);
        let model = &summary["stages"]["model"];
        assert_eq!(model["correct_test"], 8275, "{ty}: {model}");
        assert_eq!(model["input_contract"], format!("one {ty} input typed_input[N,12] (encoded features)"), "{ty}");
    }
}

#[test]
fn a_model_input_named_unlike_its_column_is_mapped_with_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let model = fixture("census_named.onnx");
    // Unmapped: the run stops naming the input and the key that maps it.
    let file = write(dir.path(), "unmapped.toml", &pipeline(&model, ""));
    let stderr = run_failing(&file, &dir.path().join("unmapped"));
    assert!(stderr.contains("model input edu_num") && stderr.contains("inputs = { \"edu_num\" = \"column\" }"), "{stderr}");
    // A misspelt input in the map: validate names it, at its place in the pipeline.
    let file = write(dir.path(), "typo.toml", &pipeline(&model, "inputs = { edu_nm = \"educational-num\" }"));
    let (ok, _, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains(&format!("{}:15:", file.display())), "the map's line: {stderr}");
    assert!(stderr.contains("the model has no input \"edu_nm\" (did you mean `edu_num`?)"), "{stderr}");
    // A column the data lacks: the run names it with a did-you-mean.
    let file = write(dir.path(), "column.toml", &pipeline(&model, "inputs = { edu_num = \"education-num\" }"));
    let stderr = run_failing(&file, &dir.path().join("column"));
    assert!(stderr.contains("not a feature column (did you mean `educational-num`?)"), "{stderr}");
    // Mapped: the bundled network's figures.
    let file = write(dir.path(), "mapped.toml", &pipeline(&model, "inputs = { edu_num = \"educational-num\" }"));
    let summary = run_pipeline(&file, &dir.path().join("mapped"), &[]);
    let stage = &summary["stages"]["model"];
    assert_eq!(stage["correct_test"], 8275, "{stage}");
    assert_eq!(stage["input_contract"], "12 named inputs (raw columns)");
}
