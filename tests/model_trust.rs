//! No silent wrong audit: a model read the wrong way round, or returning NaN, is refused at load
//! (or, where the user named the favourable class, warned of in the terminal, `summary.json` and
//! the report) — never audited into flipped or "certified fair" figures. The models are inverted
//! or broken by construction (scripts/make_trust_fixtures.py): the bundled census network with
//! its two output columns swapped, and with its last layer's weights NaN.

use std::path::{Path, PathBuf};

use crate::common;

use common::*;

/// The papers' codes of the bundled census data for every column but the label: the label is then
/// text only (`<=50K`, `>50K`), the form an exported model's data usually has, and the model's
/// numbered classes must be matched to it.
fn census_codes_without_label(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(bundled("data/census.codes.toml")).unwrap();
    let cut = text.find("[\"income\"]").expect("the census codes declare the label");
    let rest = &text[cut..];
    let end = rest.find("\n\n").map_or(text.len(), |e| cut + e);
    let path = dir.join("codes_without_label.toml");
    std::fs::write(&path, format!("{}{}", &text[..cut], &text[end..])).unwrap();
    path
}

/// The papers' codes of the bundled census data, the label's included (`">50K" = 1`).
fn census_codes() -> PathBuf {
    PathBuf::from(bundled("data/census.codes.toml"))
}

/// A pipeline loading `model` (extra keys `model_keys`) on the bundled census data encoded with
/// `codes` (`favourable` as given) and measuring group metrics on it.
fn pipeline(codes: &Path, favourable: &str, model: &str, model_keys: &str) -> String {
    format!(
        r#"[pipeline]
seed = 1

[stages.data]
kind = "load"
path = "{data}"
codes = "{codes}"
label = "income"
{favourable}
protected = ["gender"]
drop = ["row"]
split_column = "split"

[stages.model]
kind = "load_model"
data = "data"
path = "{model}"
{model_keys}

[stages.metrics]
kind = "group_metrics"
model = "model"
split = "test"
bootstrap = 20
"#,
        data = bundled("data/census.csv"),
        codes = codes.display(),
    )
}

/// The census label's favourable value.
const FAVOURABLE: &str = "favourable = \">50K\"";

fn fixture(name: &str) -> String {
    root().join("tests/fixtures/onnx").join(name).to_string_lossy().into_owned()
}

fn warnings_of(summary: &serde_json::Value) -> Vec<String> {
    summary["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| format!("{}: {}", w["stage"].as_str().unwrap(), w["message"].as_str().unwrap()))
        .collect()
}

#[test]
fn an_inverted_model_whose_class_is_assumed_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let codes = census_codes_without_label(dir.path());
    let file = write(dir.path(), "inverted.toml", &pipeline(&codes, "favourable = \">50K\"", &fixture("census_inverted.onnx"), ""));
    let out = dir.path().join("out");
    let stderr = run_failing(&file, &out);
    assert!(stderr.contains("stage `model` (load_model) failed"), "{stderr}");
    assert!(stderr.contains("census_inverted.onnx: refused: the model agrees with the data's labels below chance"), "{stderr}");
    assert!(stderr.contains("DeLong") && stderr.contains("the model's class 1 was assumed"), "{stderr}");
    assert!(stderr.contains("set `favourable_class = 0` on this stage"), "{stderr}");
    assert!(stderr.contains("set `favourable = \"<=50K\"` on the load stage that reads"), "{stderr}");
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn the_named_class_turns_the_refusal_into_a_warning_in_the_terminal_summary_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let codes = census_codes_without_label(dir.path());
    let file = write(
        dir.path(),
        "named.toml",
        &pipeline(&codes, "favourable = \">50K\"", &fixture("census_inverted.onnx"), "favourable_class = 1"),
    );
    let out = dir.path().join("out");
    // Not quiet: the terminal shows the warning as the stage ends.
    let (ok, stdout, stderr) = fairpipe(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stderr.contains("warning: stage `model`: the model agrees with the data's labels below chance"), "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let warnings = warnings_of(&summary);
    assert!(warnings.iter().any(|w| w.starts_with("model: the model agrees with the data's labels below chance")), "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("set `favourable_class = 0` on this stage (now 1)")), "{warnings:?}");
    let model = &summary["stages"]["model"];
    assert_eq!(model["favourable_class_assumed"], false);
    let agreement = &model["agreement"];
    let high = agreement["auc_ci95"][1].as_f64().unwrap();
    assert!(high < 0.5 && agreement["accuracy"].as_f64().unwrap() < 0.5, "{agreement}");
    assert_eq!(agreement["rows"].as_u64(), Some(31_258 + 9_769));
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("below chance"), "the warning is in the report");
}

#[test]
fn favourable_class_0_reads_the_inverted_model_as_the_original() {
    let dir = tempfile::tempdir().unwrap();
    let codes = census_codes_without_label(dir.path());
    let mut accuracies = Vec::new();
    for (name, model, keys) in
        [("original", bundled("models/census.onnx"), ""), ("inverted", fixture("census_inverted.onnx"), "favourable_class = 0")]
    {
        let file = write(dir.path(), &format!("{name}.toml"), &pipeline(&codes, "favourable = \">50K\"", &model, keys));
        let summary = run_pipeline(&file, &dir.path().join(name), &[]);
        assert!(warnings_of(&summary).iter().all(|w| !w.contains("chance")), "{name}: {:?}", warnings_of(&summary));
        let stage = &summary["stages"]["model"];
        assert_eq!(stage["favourable_class_assumed"], name == "original", "{name}");
        assert!(stage["agreement"]["auc_ci95"][0].as_f64().unwrap() > 0.8, "{name}: {}", stage["agreement"]);
        accuracies.push((stage["accuracy_test"].as_f64().unwrap(), summary["stages"]["metrics"]["selection_rate"].as_f64().unwrap()));
    }
    assert_eq!(accuracies[0], accuracies[1], "the same figures as the original model");
}

#[test]
fn a_zero_one_label_model_read_the_wrong_way_is_warned_of() {
    // With the label's codes declared the model's class 1 is the data's ">50K" by its code: a
    // model that disagrees is audited, with the warning at the top.
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "numbered.toml", &pipeline(&census_codes(), FAVOURABLE, &fixture("census_inverted.onnx"), ""));
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let warnings = warnings_of(&summary);
    assert!(warnings.iter().any(|w| w.contains("below chance") && w.contains("favourable_class = 0")), "{warnings:?}");
    assert!(
        warnings.iter().all(|w| !w.contains("`favourable = ")),
        "coded labels: naming the other favourable changes nothing: {warnings:?}"
    );
}

#[test]
fn a_model_returning_nan_is_refused_at_load_on_every_executor_naming_the_row() {
    let dir = tempfile::tempdir().unwrap();
    // NaN from the last layer on (tract clamps a sigmoid's input, so its output would be a
    // number), and from the first layer's biases on (hidden from tract by ReLU's max).
    for model in ["census_nan.onnx", "census_nan_hidden.onnx"] {
        for executor in ["auto", "native", "tract", "onnxruntime"] {
            let name = format!("{executor}-{model}");
            let file = write(
                dir.path(),
                &format!("{name}.toml"),
                &pipeline(&census_codes(), FAVOURABLE, &fixture(model), &format!("executor = \"{executor}\"")),
            );
            let stderr = run_failing(&file, &dir.path().join(&name));
            assert!(stderr.contains("stage `model` (load_model) failed"), "{name}: {stderr}");
            assert!(stderr.contains("is NaN for row 0"), "{name}: {stderr}");
            assert!(stderr.contains("cannot be audited"), "{name}: {stderr}");
            // Named by its file, located at the `path` key (line 17 of the pipeline).
            assert!(stderr.contains(&format!("{}: model output ", fixture(model))), "{name}: {stderr}");
            assert!(stderr.contains(&format!("the key `path` is at {}:17:1", file.display())), "{name}: {stderr}");
        }
    }
    // A program printing Python's bare NaN.
    let program = write(
        dir.path(),
        "nan_model.py",
        "import json, sys\nfor line in sys.stdin:\n    rows = json.loads(line)[\"data\"]\n    print(json.dumps({\"p\": [float(\"nan\")] * len(rows)}), flush=True)\n",
    );
    let text = pipeline(&census_codes(), FAVOURABLE, "unused", "")
        .replace("path = \"unused\"", &format!("command = [\"python3\", \"{}\"]", program.display()));
    let file = write(dir.path(), "command.toml", &text);
    let stderr = run_failing(&file, &dir.path().join("command"));
    assert!(stderr.contains("model output p of command") && stderr.contains("is NaN for row 0"), "{stderr}");
    assert!(stderr.contains(&format!("the key `command` is at {}:17:1", file.display())), "{stderr}");
}

#[test]
fn a_label_with_one_value_only_is_warned_of_and_the_audit_still_runs() {
    let dir = tempfile::tempdir().unwrap();
    // The census rows of one outcome only: what a file filtered to the approved applicants holds.
    let text = std::fs::read_to_string(bundled("data/census.csv")).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let label = header.split(',').position(|c| c == "income").expect("census.csv has the income column");
    let kept: Vec<&str> = lines.filter(|l| l.split(',').nth(label) == Some(">50K")).collect();
    assert!(kept.len() > 1000, "census.csv has {} rows above 50K", kept.len());
    let data = dir.path().join("only_high.csv");
    std::fs::write(&data, format!("{header}\n{}\n", kept.join("\n"))).unwrap();
    let model = bundled("models/census.onnx");
    let text = pipeline(&census_codes(), "favourable = \">50K\"", &model, "").replace(&bundled("data/census.csv"), data.to_str().unwrap());
    let file = write(dir.path(), "one-class.toml", &text);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let warnings = warnings_of(&summary);
    let one = format!("data: the label `income` takes one value only (\">50K\" in all {} rows)", kept.len());
    assert!(warnings.iter().any(|w| w.starts_with(&one)), "{warnings:?}");
    assert!(summary["stages"]["metrics"].is_object(), "group metrics still ran");
    // The whole census has both outcomes: no such warning.
    let both = write(dir.path(), "both.toml", &pipeline(&census_codes(), "favourable = \">50K\"", &model, ""));
    let summary = run_pipeline(&both, &dir.path().join("out-both"), &[]);
    assert!(!warnings_of(&summary).iter().any(|w| w.contains("takes one value only")), "{:?}", warnings_of(&summary));
}
