//! The black-box searches that need only the model's decisions (`grft`, `aft`): on the
//! bundled reference census network every case they emit is confirmed by the host's verify, and
//! they still find verified IDIs when the same network is exported with a label output only
//! (`tests/fixtures/onnx/census_labels.onnx`, made by `make_census_labels.py` beside it).
//!
//! The label-only export runs under ONNX Runtime (tract refuses a graph without a float output):
//! without it (`eval "$(bash scripts/test.sh --provision-only)"`) these tests fail with the
//! install command in the message, never pass silently.

use crate::common::*;

/// One search of `plugin` (with `params`) on gender against `model`, verified.
fn search_pipeline(model: &str, plugin: &str, params: &str) -> String {
    format!(
        "[pipeline]\nname = \"label-only\"\nseed = 3\n\n{data}\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{model}\"\n\n\
         [stages.seeds]\nkind = \"cluster\"\ndata = \"data\"\nk = 4\nseeds = 200\n\n\
         [stages.search]\nkind = \"generate\"\nmodel = \"model\"\nseeds = \"seeds\"\nplugin = \"{plugin}\"\nparams = {params}\n\n\
         [stages.verified]\nkind = \"verify\"\ncases = \"search\"\n",
        data = census_data_stage()
    )
}

/// Every emitted case of `search` confirmed by `verified`, and at least `min` of them.
fn assert_all_confirmed(summary: &serde_json::Value, search: &str, verified: &str, min: u64) {
    let stages = &summary["stages"];
    let emitted = stages[search]["emitted"].as_u64().unwrap();
    assert!(emitted >= min, "{search}: {emitted} IDIs, expected at least {min}");
    assert_eq!(stages[verified]["checked"].as_u64(), Some(emitted), "{search}");
    assert_eq!(stages[verified]["confirmed"].as_u64(), Some(emitted), "{search}: the host confirms every case");
    assert_eq!(stages[verified]["discriminatory_full"].as_u64(), Some(emitted), "{search}: each IDI emitted once");
}

#[test]
fn grft_on_the_reference_census_network_every_case_is_confirmed() {
    let out = tempfile::tempdir().unwrap();
    let summary = run_pipeline(&root().join("pipelines/census-grft.toml"), out.path(), &[]);
    for attr in ["gender", "race", "age"] {
        assert_all_confirmed(&summary, &format!("grft_{attr}"), &format!("{attr}_verified"), 10_000);
    }
}

#[test]
fn grft_finds_verified_idis_on_a_label_only_export_of_the_census_network() {
    let dir = tempfile::tempdir().unwrap();
    let model = root().join("tests/fixtures/onnx/census_labels.onnx");
    let file = write(dir.path(), "p.toml", &search_pipeline(model.to_str().unwrap(), "grft", "{ num_seeds = 50, local_num = 200 }"));
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let model = &summary["stages"]["model"];
    assert_eq!(model["labels_only"], true, "{model}");
    assert_eq!(model["correct_test"], 8275, "the export decides as the reference network: {model}");
    assert_all_confirmed(&summary, "search", "verified", 1_000);
}

#[test]
fn aft_finds_verified_idis_on_the_census_network_and_on_its_label_only_export() {
    let dir = tempfile::tempdir().unwrap();
    for (name, model) in
        [("scores", root().join("pipelines/models/census.onnx")), ("labels", root().join("tests/fixtures/onnx/census_labels.onnx"))]
    {
        let file = write(dir.path(), &format!("{name}.toml"), &search_pipeline(model.to_str().unwrap(), "aft", "{ max_tests = 20000 }"));
        let summary = run_pipeline(&file, &dir.path().join(name), &[]);
        assert_eq!(summary["stages"]["model"]["labels_only"].as_bool().unwrap_or(false), name == "labels", "{name}");
        assert_all_confirmed(&summary, "search", "verified", 2_000);
    }
}
