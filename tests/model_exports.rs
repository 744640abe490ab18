//! The models people ship (tests/fixtures/exports, made by its `make_exports.py` from the bundled
//! UCI Adult file with scikit-learn, skl2onnx, onnxmltools and XGBoost): each loads, its
//! probability of `>50K` on 300 rows equals Python onnxruntime's (|Δp| ≤ 1e-6, read from
//! `predict`'s table), and each runs a short audit (estimate, a search with verify, group
//! metrics). Logits and NaN are refused with the fix named.
//!
//! These tests need ONNX Runtime (`pip install onnxruntime`); without it they fail with that
//! command in the message, never pass silently.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::common::*;

fn exports() -> PathBuf {
    root().join("tests/fixtures/exports")
}

/// onnxruntime's values per `expected.csv` column.
fn expected() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(exports().join("expected.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let mut columns: BTreeMap<String, Vec<String>> = header.iter().map(|h| (h.to_string(), Vec::new())).collect();
    for line in lines {
        for (h, v) in header.iter().zip(line.split(',')) {
            columns.get_mut(*h).unwrap().push(v.to_string());
        }
    }
    columns
}

/// The load stage's column levels, as the models were trained with them.
fn levels() -> String {
    std::fs::read_to_string(exports().join("levels.toml")).unwrap().lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n")
}

/// A pipeline loading rows.csv and `model`, with `model_keys` added to the load_model stage and
/// `stages` appended.
fn pipeline(model: &str, model_keys: &str, stages: &str) -> String {
    format!(
        r#"[pipeline]
name = "export"
seed = 5

[stages.data]
kind = "load"
path = "{rows}"
label = "Y"
favourable = ">50K"
protected = ["sex", "race"]
drop = ["fnlwgt", "education"]

[stages.data.columns]
{levels}

[stages.model]
kind = "load_model"
data = "data"
path = "{model}"
{model_keys}

[stages.scores]
kind = "predict"
model = "model"
split = "all"
{stages}
"#,
        rows = exports().join("rows.csv").display(),
        levels = levels(),
        model = exports().join(model).display(),
    )
}

const SHORT_AUDIT: &str = r#"
[stages.estimate]
kind = "estimate"
model = "model"
trials = 2
samples = 300

[stages.seeds]
kind = "cluster"
data = "data"
k = 2
seeds = 20

[stages.search]
kind = "generate"
model = "model"
seeds = "seeds"
plugin = "aequitas"
params = { global_iterations = 20, local_iterations = 50 }

[stages.verified]
kind = "verify"
cases = "search"

[stages.metrics]
kind = "group_metrics"
model = "model"
"#;

/// `predict`'s probability column, in row order.
fn probabilities(out: &std::path::Path) -> Vec<f64> {
    let text = std::fs::read_to_string(out.join("scores.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "probability").expect("a probability column");
    lines.map(|l| l.split(',').nth(at).unwrap().parse::<f64>().unwrap()).collect()
}

/// Run `name`.onnx through predict and the short audit; assert its probabilities equal
/// onnxruntime's; returns the summary.
fn audit(name: &str, model_keys: &str) -> serde_json::Value {
    audit_against(name, name, model_keys)
}

/// As [`audit`], holding `name`.onnx to the onnxruntime values of export `reference`.
fn audit_against(name: &str, reference: &str, model_keys: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "p.toml", &pipeline(&format!("{name}.onnx"), model_keys, SHORT_AUDIT));
    let out = dir.path().join("out");
    let summary = run_pipeline(&file, &out, &[]);
    let expected = expected();
    let got = probabilities(&out);
    let name = reference;
    match expected.get(&format!("{name}_p")) {
        Some(want) => {
            let want: Vec<f64> = want.iter().map(|v| v.parse().unwrap()).collect();
            compare::assert_close(&format!("{name}: P(favourable) against onnxruntime's"), &got, &want, 1e-6);
        }
        None => {
            // A labels-only model: P(favourable) is 1 exactly where onnxruntime's label is 1 (">50K").
            let want = &expected[&format!("{name}_label")];
            assert_eq!(got.len(), want.len(), "{name}: rows");
            for (row, (p, label)) in got.iter().zip(want).enumerate() {
                assert_eq!(*p, if label == "1" { 1.0 } else { 0.0 }, "{name}: row {row}");
            }
        }
    }
    let stages = &summary["stages"];
    assert_eq!(stages["scores"]["rows"], 300, "{name}");
    // The estimate's rate is its discriminatory inputs over the inputs drawn (equal trials).
    let estimate = &stages["estimate"];
    let (found, drawn) = (estimate["discriminatory"].as_u64().unwrap(), estimate["samples"].as_u64().unwrap());
    assert_eq!(drawn, 600, "{name}: 2 trials of 300: {estimate}");
    let rate = estimate["rate"].as_f64().unwrap();
    assert!((rate - found as f64 / drawn as f64).abs() < 1e-12, "{name}: rate {rate}, {found} of {drawn}: {estimate}");
    // verify re-checked every case the search emitted: each confirmed or rejected.
    let (search, verified) = (&stages["search"], &stages["verified"]);
    let emitted = search["emitted"].as_u64().unwrap();
    let (checked, confirmed, rejected) =
        (verified["checked"].as_u64().unwrap(), verified["confirmed"].as_u64().unwrap(), verified["rejected"].as_u64().unwrap());
    assert_eq!((checked, confirmed + rejected), (emitted, emitted), "{name}: {search} {verified}");
    assert!(verified["discriminatory"].as_u64().unwrap() <= confirmed, "{name}: {verified}");
    let groups = stages["metrics"]["groups"].as_array().map_or(0, Vec::len);
    assert!(groups >= 2, "{name}: group metrics over {groups} groups: {}", stages["metrics"]);
    summary
}

#[test]
fn scikit_learn_pipelines_with_named_string_inputs_and_zipmap_are_audited() {
    for name in ["sklearn_named_zipmap", "sklearn_named_tensor", "sklearn_named_strlabels", "sklearn_named_ordinal_gbc"] {
        let summary = audit(name, "");
        let model = &summary["stages"]["model"];
        assert!(model["executor"].as_str().unwrap().starts_with("onnxruntime 1."), "{name}: {model}");
        assert_eq!(model["input_contract"], "12 named inputs (raw columns)", "{name}");
        assert!(model["executor_reason"].as_str().unwrap().contains("named inputs"), "{name}: {model}");
    }
    let strlabels = audit("sklearn_named_strlabels", "");
    assert_eq!(strlabels["stages"]["model"]["output_read"], "ZipMap entry \">50K\"");
    assert_eq!(strlabels["stages"]["model"]["favourable_class_assumed"], false);
}

#[test]
fn encoded_vector_models_with_ml_operators_trees_and_float64_are_audited() {
    for name in ["sklearn_vector_lr", "sklearn_vector_lr_double", "sklearn_vector_lr_batch1", "sklearn_gbc", "xgboost", "sklearn_rf100"] {
        let summary = audit(name, "");
        let model = &summary["stages"]["model"];
        // Tree ensembles on the encoded vector run on the native tree executor (issue 38).
        let runs_on = if ["sklearn_gbc", "xgboost", "sklearn_rf100"].contains(&name) { "native-trees" } else { "onnxruntime" };
        assert!(model["executor"].as_str().unwrap().starts_with(runs_on), "{name}: {model}");
        assert!(model["input_contract"].as_str().unwrap().contains("[N,12] (encoded features)"), "{name}: {model}");
    }
}

#[test]
fn pytorch_style_mlps_are_read_from_their_probabilities() {
    // A two-output model whose first output is logits: the probabilities are found, not the logits.
    let summary = audit("torch_mlp_logits_probs", "");
    assert_eq!(summary["stages"]["model"]["output"], "probs");
    // A sigmoid [N,1] head; plain tensor graph, so tract or the native executor runs it.
    let summary = audit("torch_mlp_sigmoid", "");
    let executor = summary["stages"]["model"]["executor"].as_str().unwrap();
    assert!(executor.starts_with("native dense") || executor == "tract", "{executor}");
    // Logits alone are read with the transform the refusal names.
    audit("torch_mlp_logits", "output_transform = \"softmax\"");
    audit("torch_mlp_logits", "output_transform = \"softmax\"\nexecutor = \"onnxruntime\"");
}

/// An export whose weights sit in a file beside the graph (`torch.onnx.export`'s external data,
/// made by `make_external_data.py` from `torch_mlp_sigmoid.onnx`, which onnxruntime scores the
/// same bit for bit) audits on every executor that reads ONNX, equal to onnxruntime's values.
#[test]
fn an_export_with_its_weights_beside_it_is_audited_on_every_executor() {
    let graph = std::fs::read(exports().join("torch_mlp_sigmoid_external.onnx")).unwrap();
    let weights = std::fs::metadata(exports().join("torch_mlp_sigmoid_external.onnx.data")).unwrap().len();
    assert!(weights > graph.len() as u64, "the weights ({weights} bytes) are outside the graph ({} bytes)", graph.len());
    for (executor, runs_on) in [("auto", &["native dense", "tract"][..]), ("tract", &["tract"]), ("onnxruntime", &["onnxruntime"])] {
        let summary = audit_against("torch_mlp_sigmoid_external", "torch_mlp_sigmoid", &format!("executor = \"{executor}\""));
        let model = &summary["stages"]["model"];
        let ran = model["executor"].as_str().unwrap();
        assert!(runs_on.iter().any(|r| ran.starts_with(r)), "{executor}: {model}");
    }
    // The native dense executor reads the external export as it reads the export with its weights
    // inside: this graph is no plain stack of dense layers either way, and the two refusals agree.
    let native = |name: &str| {
        let dir = tempfile::tempdir().unwrap();
        let file = write(dir.path(), "p.toml", &pipeline(&format!("{name}.onnx"), "executor = \"native\"", SHORT_AUDIT));
        let (ok, _, stderr) = fairpipe(&["run", file.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap(), "--quiet"]);
        (ok, stderr.split_once("cannot load ONNX model:").map(|(_, why)| why.trim().to_string()).unwrap_or(stderr))
    };
    let (inside, external) = (native("torch_mlp_sigmoid"), native("torch_mlp_sigmoid_external"));
    assert!(!inside.0 && inside.1.contains("not a plain stack of dense layers"), "{inside:?}");
    assert_eq!(external, inside, "the external-data export is read as the one with its weights inside");
}

/// An external-data location that leaves the model's folder, or asks for bytes past the end of
/// its file, is refused naming the tensor.
#[test]
fn external_data_outside_the_folder_or_its_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let graph = std::fs::read(exports().join("torch_mlp_sigmoid_external.onnx")).unwrap();
    let data = std::fs::read(exports().join("torch_mlp_sigmoid_external.onnx.data")).unwrap();
    let location = b"torch_mlp_sigmoid_external.onnx.data";
    // Every tensor's location, the same length of name one folder up (`torch_` → `../ch_`).
    let mut escaping = graph.clone();
    let places: Vec<usize> = graph.windows(location.len()).enumerate().filter(|(_, w)| *w == location).map(|(at, _)| at).collect();
    assert!(!places.is_empty(), "the graph names its data file");
    for at in places {
        escaping[at..at + location.len()].copy_from_slice(b"../ch_mlp_sigmoid_external.onnx.data");
    }
    std::fs::write(dir.path().join("escaping.onnx"), &escaping).unwrap();
    let error = fairpipe_core::models::onnx::external::read_model(&dir.path().join("escaping.onnx")).unwrap_err().to_string();
    assert!(error.contains("is not a file inside the model's folder"), "{error}");
    std::fs::write(dir.path().join("short.onnx"), &graph).unwrap();
    std::fs::write(dir.path().join("torch_mlp_sigmoid_external.onnx.data"), &data[..data.len() / 2]).unwrap();
    let error = fairpipe_core::models::onnx::external::read_model(&dir.path().join("short.onnx")).unwrap_err().to_string();
    assert!(error.contains("its external data asks for bytes") && error.contains("tensor"), "{error}");
    std::fs::write(dir.path().join("torch_mlp_sigmoid_external.onnx.data"), &data).unwrap();
    let proto = fairpipe_core::models::onnx::external::read_model(&dir.path().join("short.onnx")).unwrap();
    let inlined: usize = proto.graph.unwrap().initializer.iter().map(|t| t.raw_data.len()).sum();
    assert_eq!(inlined, data.len(), "every byte of the data file is read into the graph");
}

#[test]
fn logits_read_as_probabilities_are_refused_with_the_fix_named() {
    let dir = tempfile::tempdir().unwrap();
    for executor in ["auto", "onnxruntime"] {
        let file = write(dir.path(), "p.toml", &pipeline("torch_mlp_logits.onnx", &format!("executor = \"{executor}\""), ""));
        let out = dir.path().join(format!("out-{executor}"));
        let err = run_failing(&file, &out);
        assert!(err.contains("does not hold probabilities") && err.contains("output_transform = \"softmax\""), "{executor}: {err}");
        assert!(!out.join("summary.json").exists());
    }
    // Naming the logits output does not make them probabilities either.
    let file = write(dir.path(), "q.toml", &pipeline("torch_mlp_logits_probs.onnx", "output = \"logits\"", ""));
    let err = run_failing(&file, &dir.path().join("out-named"));
    assert!(err.contains("does not hold probabilities"), "{err}");
}

#[test]
fn a_model_returning_nan_is_refused_naming_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "p.toml", &pipeline("nan_sqrt_age.onnx", "", ""));
    let err = run_failing(&file, &dir.path().join("out"));
    // rows.csv's first row with age < 20 is row 46 (0-based); the probe scores the rows in order.
    assert!(err.contains("NaN") && err.contains("row 46"), "{err}");
    // Named by its file, located at the `path` key.
    assert!(err.contains(&format!("{}: model output ", exports().join("nan_sqrt_age.onnx").display())), "{err}");
    assert!(err.contains("the key `path` is at ") && err.contains("p.toml:"), "{err}");
}

#[test]
fn a_labels_only_model_is_audited_from_its_labels() {
    let summary = audit("sklearn_linearsvc_labels", "");
    let model = &summary["stages"]["model"];
    assert_eq!(model["labels_only"], true, "{model}");
    assert_eq!(model["output_read"], "labels only (favourable 1)", "{model}");
    assert_eq!(model["favourable_class_assumed"], true, "integer classes for text labels: {model}");
}

#[test]
fn a_named_output_that_does_not_exist_lists_the_real_ones() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "p.toml", &pipeline("sklearn_named_zipmap.onnx", "output = \"probabilities\"", ""));
    let err = run_failing(&file, &dir.path().join("out"));
    assert!(err.contains("no output named \"probabilities\"") && err.contains("output_probability"), "{err}");
    // The real name is taken.
    let file = write(dir.path(), "q.toml", &pipeline("sklearn_named_zipmap.onnx", "output = \"output_probability\"", ""));
    let summary = run_pipeline(&file, &dir.path().join("out2"), &[]);
    assert_eq!(summary["stages"]["model"]["output"], "output_probability");
}

#[test]
fn a_named_input_without_its_column_is_refused_with_the_inputs_listed() {
    let dir = tempfile::tempdir().unwrap();
    // Drop a column the model reads: the message names the input, the model's inputs and the data's columns.
    let text = pipeline("sklearn_named_zipmap.onnx", "", "")
        .replace("drop = [\"fnlwgt\", \"education\"]", "drop = [\"fnlwgt\", \"education\", \"hours-per-week\"]");
    let text = text.replace("\"hours-per-week\" = ", "# ");
    let file = write(dir.path(), "p.toml", &text);
    let err = run_failing(&file, &dir.path().join("out"));
    assert!(err.contains("hours_per_week") && err.contains("has no feature column"), "{err}");
    assert!(err.contains("the model's inputs are [") && err.contains("feature columns are ["), "{err}");
}

#[test]
fn a_vector_model_of_another_width_is_refused_with_both_sides_listed() {
    let dir = tempfile::tempdir().unwrap();
    let text = pipeline("sklearn_vector_lr.onnx", "", "").replace("drop = [\"fnlwgt\", \"education\"]", "drop = [\"fnlwgt\"]");
    let file = write(dir.path(), "p.toml", &text);
    let err = run_failing(&file, &dir.path().join("out"));
    assert!(err.contains("takes 12 features but the data has 13"), "{err}");
}

#[test]
fn tract_is_refused_for_what_only_onnx_runtime_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "p.toml", &pipeline("sklearn_named_zipmap.onnx", "executor = \"tract\"", ""));
    let err = run_failing(&file, &dir.path().join("out"));
    assert!(err.contains("executor = \"tract\" cannot run") && err.contains("ai.onnx.ml.ZipMap"), "{err}");
}

#[test]
fn a_missing_runtime_names_the_model_the_reason_and_the_install_command() {
    let dir = tempfile::tempdir().unwrap();
    // A linear classifier of ai.onnx.ml, which only ONNX Runtime runs (a tree ensemble the native
    // tree executor covers runs without it: tests/tree_executor.rs).
    let file = write(dir.path(), "p.toml", &pipeline("sklearn_vector_lr.onnx", "", ""));
    let out = dir.path().join("out");
    // A runtime path that holds no library.
    let empty = tempfile::tempdir().unwrap();
    let (ok, _, err) = std::process::Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"])
        .env("ORT_DYLIB_PATH", empty.path())
        .output()
        .map(|o| (o.status.success(), (), String::from_utf8_lossy(&o.stderr).into_owned()))
        .unwrap();
    assert!(!ok);
    assert!(err.contains("sklearn_vector_lr.onnx") && err.contains("ai.onnx.ml.LinearClassifier"), "{err}");
    assert!(err.contains("pip install onnxruntime"), "{err}");
}

#[test]
fn a_category_the_model_does_not_know_is_refused_not_scored_as_another() {
    let dir = tempfile::tempdir().unwrap();
    // One row's workclass becomes "Never-worked", which the models never saw (and workclass's
    // levels are no longer declared, so the load stage accepts it).
    let rows = std::fs::read_to_string(exports().join("rows.csv")).unwrap();
    let mut lines: Vec<String> = rows.lines().map(str::to_string).collect();
    lines[1] = lines[1].replacen(",Private,", ",Never-worked,", 1);
    std::fs::write(dir.path().join("rows.csv"), lines.join("\n")).unwrap();
    for model in ["sklearn_named_zipmap.onnx", "sklearn_named_ordinal_gbc.onnx"] {
        let text = pipeline(model, "", "")
            .replace(&exports().join("rows.csv").display().to_string(), &dir.path().join("rows.csv").display().to_string())
            .lines()
            .filter(|l| !l.starts_with("workclass = "))
            .collect::<Vec<_>>()
            .join("\n");
        let file = write(dir.path(), "p.toml", &text);
        let err = run_failing(&file, &dir.path().join("out"));
        assert!(
            err.contains("\"workclass\" has categories the model's input workclass does not know: [\"Never-worked\"]"),
            "{model}: {err}"
        );
    }
}
