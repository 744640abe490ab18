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
    let run = bundled_run(&root().join("pipelines/census-grft.toml"));
    let summary = &run.summary;
    for attr in ["gender", "race", "age"] {
        assert_all_confirmed(summary, &format!("grft_{attr}"), &format!("{attr}_verified"), 10_000);
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

/// `fairpipe validate` of `text` (written as `p.toml`): whether it passed, and its stderr.
fn validate(text: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "p.toml", text);
    let (ok, _, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    (ok, stderr)
}

/// The label-only export of the census network.
fn labels_model() -> String {
    root().join("tests/fixtures/onnx/census_labels.onnx").to_str().unwrap().to_string()
}

#[test]
fn a_method_that_needs_scores_is_refused_at_validate_on_a_label_only_export_naming_those_that_can_run() {
    for plugin in ["maft", "eidig"] {
        let (ok, stderr) = validate(&search_pipeline(&labels_model(), plugin, "{}"));
        assert!(!ok, "{plugin} validated on a label-only model");
        let line =
            stderr.lines().find(|l| l.contains("p.toml:30:1:")).unwrap_or_else(|| panic!("no p.toml:30:1 (the plugin key) in:\n{stderr}"));
        assert!(line.contains(&format!("plugin `{plugin}` needs the model's probabilities")), "{line}");
        assert!(line.contains("stage `model` gives labels only") && line.contains("census_labels.onnx"), "{line}");
        assert!(line.contains("methods that run on labels only: aequitas, aft, grft, random, sg"), "{line}");
    }
    // The same pipelines over the network's scores validate.
    let scores = root().join("pipelines/models/census.onnx");
    let (ok, stderr) = validate(&search_pipeline(scores.to_str().unwrap(), "maft", "{}"));
    assert!(ok, "{stderr}");
}

#[test]
fn the_label_only_methods_validate_on_a_label_only_export() {
    for plugin in ["grft", "aft", "random", "aequitas", "sg"] {
        let (ok, stderr) = validate(&search_pipeline(&labels_model(), plugin, "{}"));
        assert!(ok, "{plugin}: {stderr}");
    }
}

#[test]
fn keys_that_read_probabilities_are_refused_at_validate_on_a_label_only_export() {
    let base = search_pipeline(&labels_model(), "random", "{}");
    // gamma on the search (line 31) and on an estimate; top_k on group metrics.
    let text = format!(
        "{}\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ngamma = 0.1\n\n[stages.groups]\nkind = \"group_metrics\"\nmodel = \"model\"\ntop_k = 100\n",
        base.replace("params = {}\n", "params = {}\ngamma = 0.2\n")
    );
    let (ok, stderr) = validate(&text);
    assert!(!ok, "validated");
    for (at, fragment) in [
        ("p.toml:32:1:", "`gamma` (a threshold on the difference of two probabilities) needs the model's probabilities"),
        ("p.toml:41:1:", "stage `estimate`: `gamma`"),
        ("p.toml:46:1:", "stage `groups`: `top_k` (rows ranked by their probability)"),
    ] {
        assert!(stderr.lines().any(|l| l.contains(at) && l.contains(fragment)), "no {at} {fragment:?} in:\n{stderr}");
    }
}

#[test]
fn group_metrics_of_a_label_only_export_say_auc_is_not_available() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{data}\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{model}\"\n\n[stages.groups]\nkind = \"group_metrics\"\nmodel = \"model\"\nsplit = \"test\"\n",
        data = census_data_stage(),
        model = labels_model()
    );
    let file = write(dir.path(), "p.toml", &text);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let groups = &summary["stages"]["groups"];
    assert_eq!(groups["probabilities"], false, "{groups}");
    assert_eq!(groups["auc_note"], "not available: labels only", "{groups}");
    for g in groups["groups"].as_array().unwrap() {
        assert!(g.get("auc").is_none(), "a group has an AUC from labels: {g}");
    }
    let report = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(report.contains("not available: labels only"), "the report does not say why AUC is missing");
}

/// A model run as a program that answers with a label per row (1 from 12 years of education).
const LABEL_PROGRAM: &str = "import json, sys\nfor line in sys.stdin:\n    batch = json.loads(line)\n    i = batch[\"columns\"].index(\"educational-num\")\n    print(json.dumps({\"label\": [int(r[i] >= 12) for r in batch[\"data\"]]}), flush=True)\n";

#[test]
fn a_method_that_needs_scores_is_refused_before_it_runs_on_a_program_that_answers_labels() {
    let dir = tempfile::tempdir().unwrap();
    let program = write(dir.path(), "labels.py", LABEL_PROGRAM);
    let text = format!(
        "{data}\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\ncommand = [\"python3\", \"{program}\"]\n\n\
         [stages.search]\nkind = \"generate\"\nmodel = \"model\"\nplugin = \"maft\"\nrandom_seeds = 50\n",
        data = census_data_stage(),
        program = program.display()
    );
    // Its outputs are known only when it answers: validate passes, the run stops before the search.
    let (ok, stderr) = validate(&text);
    assert!(ok, "{stderr}");
    let file = write(dir.path(), "p.toml", &text);
    let stderr = run_failing(&file, &dir.path().join("out"));
    for fragment in [
        "stage `search` (generate) failed: plugin `maft` needs the model's probabilities, but stage `model` gives labels only",
        "methods that run on labels only: aequitas, aft, grft, random, sg",
        "the key `plugin` is at ",
        "p.toml:19:1)",
    ] {
        assert!(stderr.contains(fragment), "no {fragment:?} in:\n{stderr}");
    }
    // An output it does not answer with is the `output` key's to fix.
    let text = text.replace("labels.py\"]\n", "labels.py\"]\noutput = \"probability\"\n");
    let file = write(dir.path(), "q.toml", &text);
    let stderr = run_failing(&file, &dir.path().join("out2"));
    for fragment in ["no output named \"probability\"; the answer holds [\"label\"]", "the key `output` is at ", "q.toml:15:1)"] {
        assert!(stderr.contains(fragment), "no {fragment:?} in:\n{stderr}");
    }
}
