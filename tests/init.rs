//! `fairpipe init` on data it has never seen: the bundled CSVs (raw UCI Adult with its category
//! names and `?` cells among them) and a CSV with column names of its own. Each pipeline written
//! validates as written, names the label and the protected attributes expected, and runs to group
//! metrics (one stage per protected attribute), an estimate, a check of the real rows and a
//! search. Runs use the first rows of each file and smaller budgets, to stay quick. A model that
//! reads fewer columns than the data has them dropped; the docs' example gate passes a fair model
//! and fails a planted-biased one.

use std::path::{Path, PathBuf};

use crate::common;

use common::*;

/// `fairpipe init` with `args`, asserting success; the pipeline's text.
fn init(args: &[&str], out: &Path) -> String {
    let mut all = vec!["init"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let (ok, stdout, stderr) = fairpipe(&all);
    assert!(ok, "init {args:?} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("wrote {}", out.display())), "{stdout}");
    std::fs::read_to_string(out).unwrap()
}

/// Assert that `pipeline` validates.
fn validates(pipeline: &Path) {
    let (ok, stdout, stderr) = fairpipe(&["validate", pipeline.to_str().unwrap()]);
    assert!(ok, "{} does not validate:\n{stdout}\n{stderr}\n{}", pipeline.display(), std::fs::read_to_string(pipeline).unwrap());
}

/// The value of `key = ...` in the first table `[stages.NAME]` of `text`.
fn key_of(text: &str, stage: &str, key: &str) -> Option<String> {
    let table: toml_like::Table = toml_like::parse(text);
    table.get(stage).and_then(|t| t.get(key)).cloned()
}

/// A minimal reader of the flat `key = value` lines under `[stages.NAME]` headers, enough to check
/// what init wrote without a TOML dependency in the tests.
mod toml_like {
    use std::collections::BTreeMap;

    /// Stage name → key → value text.
    pub type Table = BTreeMap<String, BTreeMap<String, String>>;

    pub fn parse(text: &str) -> Table {
        let mut out = Table::new();
        let mut current: Option<String> = None;
        for line in text.lines().map(str::trim) {
            if let Some(name) = line.strip_prefix("[stages.").and_then(|l| l.strip_suffix(']')) {
                current = Some(name.to_string());
            } else if line.starts_with('[') {
                current = None;
            } else if let (Some(stage), Some((k, v))) = (&current, line.split_once(" = ")) {
                if !k.starts_with('#') {
                    out.entry(stage.clone()).or_default().insert(k.trim().to_string(), v.trim().to_string());
                }
            }
        }
        out
    }
}

/// The first `rows` data rows of bundled CSV `name`, with its header, written into `dir`.
fn head(name: &str, rows: usize, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(root().join("pipelines/data").join(name)).unwrap();
    let kept: Vec<&str> = text.lines().take(rows + 1).collect();
    let path = dir.join(name);
    std::fs::write(&path, kept.join("\n") + "\n").unwrap();
    path
}

/// `text` with the search and estimate budgets cut for a quick test run (each budget written
/// once, as the standard audit's).
fn small_budgets(text: &str) -> String {
    for budget in ["trials = 100\n", "samples = 1000\n", "seeds = 1000\n", "max_queries = 1000000\n", "epochs = 10\n"] {
        let lines = text.matches(budget).count();
        let expected = if budget.starts_with("epochs") { text.contains("kind = \"train\"") as usize } else { 1 };
        assert_eq!(lines, expected, "{budget:?} in:\n{text}");
    }
    text.replace("trials = 100\n", "trials = 10\n")
        .replace("samples = 1000\n", "samples = 200\n")
        .replace("seeds = 1000\n", "seeds = 40\n")
        .replace("max_queries = 1000000\n", "max_queries = 4000\n")
        .replace("epochs = 10\n", "epochs = 3\n")
}

/// The names of the stages of kind `kind` in `text`, in order.
fn stages_of_kind(text: &str, kind: &str) -> Vec<String> {
    let table = toml_like::parse(text);
    let mut names: Vec<(usize, String)> = table
        .iter()
        .filter(|(_, keys)| keys.get("kind").map(String::as_str) == Some(&format!("\"{kind}\"")))
        .map(|(name, _)| (text.find(&format!("[stages.{name}]")).unwrap(), name.clone()))
        .collect();
    names.sort();
    names.into_iter().map(|(_, n)| n).collect()
}

/// Run `pipeline` into `dir/out`; the summary, asserting it has each audit's headline figure.
fn runs_to_every_audit(pipeline: &Path, dir: &Path) -> serde_json::Value {
    let summary = run_pipeline(pipeline, &dir.join("out"), &[]);
    let stages = &summary["stages"];
    let metrics = stages_of_kind(&std::fs::read_to_string(pipeline).unwrap(), "group_metrics");
    assert!(!metrics.is_empty(), "no group metrics stage");
    for m in &metrics {
        assert!(stages[m]["rows"].as_u64().unwrap() > 0, "{}", stages[m]);
        // One attribute per stage: its headline figures are that attribute's.
        assert_eq!(stages[m]["parity"].as_object().unwrap().len(), 1, "{m}: {}", stages[m]["parity"]);
    }
    let rate = stages["estimate"]["rate"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&rate), "{}", stages["estimate"]);
    assert!(stages["check"]["checked"].as_u64().unwrap() > 0, "{}", stages["check"]);
    assert!(stages["search"]["generated"].as_u64().is_some(), "{}", stages["search"]);
    assert!(stages["verify"].is_object(), "{summary}");
    if stages.get("bias_audit").is_some() {
        assert!(stages["bias_audit"]["tables"].as_array().is_some_and(|t| !t.is_empty()), "{}", stages["bias_audit"]);
        assert!(dir.join("out/bias_audit.html").exists());
    }
    summary
}

/// Each bundled CSV, whole: the pipeline validates as written and names the expected label,
/// favourable value and protected attributes.
#[test]
fn init_on_every_bundled_csv_writes_a_pipeline_that_validates() {
    let dir = tempfile::tempdir().unwrap();
    // file, label, favourable line, protected attributes expected among the searched ones.
    let cases: &[(&str, &str, &str, &[&str])] = &[
        ("adult.data.csv", "Y", "favourable = \">50K\"", &["sex", "race"]),
        ("census.csv", "income", "favourable = \">50K\"", &["gender", "race"]),
        ("bank.csv", "y", "# favourable = 1", &["age"]),
        ("compas.csv", "two_year_recid", "favourable = 0", &["sex", "race"]),
        ("credit.csv", "label_CREDITRATING_eq_1", "# favourable = 1", &["PersonStatusSex"]),
    ];
    for (file, label, favourable, protected) in cases {
        let out = dir.path().join(format!("{file}.toml"));
        let text = init(&[&bundled(&format!("data/{file}"))], &out);
        validates(&out);
        assert_eq!(key_of(&text, "data", "label").as_deref(), Some(format!("\"{label}\"").as_str()), "{file}:\n{text}");
        assert!(text.contains(&format!("CONFIRM the label: `{label}`")), "{file}:\n{text}");
        assert!(text.lines().any(|l| l == *favourable), "{file}: no {favourable:?}:\n{text}");
        let searched = key_of(&text, "data", "protected").unwrap();
        for p in *protected {
            assert!(searched.contains(&format!("\"{p}\"")), "{file}: {p} not searched: {searched}");
        }
        for stage in ["estimate", "check", "search", "verify"] {
            assert!(key_of(&text, stage, "kind").is_some(), "{file}: no stage {stage}");
        }
        // One group metrics stage per measured attribute, each the load stage's protected ones first.
        let metrics = stages_of_kind(&text, "group_metrics");
        for p in *protected {
            let stage = format!("metrics_{}", p.to_lowercase());
            assert!(metrics.contains(&stage), "{file}: no {stage} in {metrics:?}");
            assert_eq!(key_of(&text, &stage, "protected"), Some(format!("[\"{p}\"]")), "{file}:\n{text}");
        }
    }
    // A sex or race/ethnicity column: the Local Law 144 bias audit of the model's decisions is offered.
    for (file, sex, race) in [
        ("adult.data.csv", Some("sex"), Some("race")),
        ("census.csv", Some("gender"), Some("race")),
        ("compas.csv", Some("sex"), Some("race")),
        ("bank.csv", None, None),
    ] {
        let text = std::fs::read_to_string(dir.path().join(format!("{file}.toml"))).unwrap();
        let quoted = |c: Option<&str>| c.map(|c| format!("\"{c}\""));
        assert_eq!(key_of(&text, "bias_audit", "sex"), quoted(sex), "{file}:\n{text}");
        assert_eq!(key_of(&text, "bias_audit", "race"), quoted(race), "{file}:\n{text}");
    }
    // Raw Adult: its own category names are read and shown, the `?` cells are dropped, and the
    // other attributes protected in law (age, national origin) are measured, each in its own
    // stage; marital status (protected in some laws only) is proposed, not measured.
    let adult = std::fs::read_to_string(dir.path().join("adult.data.csv.toml")).unwrap();
    assert!(adult.contains("categorical  2 levels: Female, Male"), "{adult}");
    assert!(adult.contains("missing = \"drop\""), "{adult}");
    assert_eq!(stages_of_kind(&adult, "group_metrics"), ["metrics_sex", "metrics_race", "metrics_age", "metrics_native_country"]);
    assert_eq!(key_of(&adult, "metrics_native_country", "protected").as_deref(), Some("[\"native-country\"]"));
    let marital =
        adult.lines().find(|l| l.starts_with("#   marital-status") && l.contains("by its name")).unwrap_or_else(|| panic!("{adult}"));
    assert!(marital.contains("not measured; add it with --protected"), "{marital}");
    // The census file's row number is dropped, its split column used.
    let census = std::fs::read_to_string(dir.path().join("census.csv.toml")).unwrap();
    assert_eq!(key_of(&census, "data", "drop").as_deref(), Some("[\"row\"]"));
    assert_eq!(key_of(&census, "data", "split_column").as_deref(), Some("\"split\""));
    // Its category names are coded by the codes file beside it (the pipeline validated with it).
    let codes = key_of(&census, "data", "codes").unwrap_or_else(|| panic!("no codes line: {census}"));
    assert!(codes.ends_with("data/census.codes.toml\""), "{codes}");
}

/// The first rows of each bundled CSV: the pipeline init writes runs to every audit.
#[test]
fn init_pipelines_of_the_bundled_csvs_run() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["adult.data.csv", "census.csv", "bank.csv", "compas.csv", "credit.csv"] {
        let sub = dir.path().join(file.replace('.', "_"));
        std::fs::create_dir_all(&sub).unwrap();
        let data = head(file, 400, &sub);
        let out = sub.join("p.toml");
        let text = init(&[data.to_str().unwrap()], &out);
        std::fs::write(&out, small_budgets(&text)).unwrap();
        runs_to_every_audit(&out, &sub);
    }
}

/// A CSV with names init has no list for: the label is found by a word of its name, the
/// favourable value by its meaning, protected attributes by their names' words and by their
/// values, the identifier dropped; the pipeline runs as written (no budget cut).
#[test]
fn init_on_a_csv_with_its_own_names_runs_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv =
        String::from("applicant_no,YearsOfAge,Gender_Identity,ethnic_group,civil_state,monthly_savings,employment,loan_outcome\n");
    let groups = ["White", "Black", "Asian", "Hispanic"];
    let states = ["married", "single", "divorced"];
    let jobs = ["full-time", "part-time", "none"];
    for i in 0..240u32 {
        let age = 18 + (i * 7) % 50;
        let gender = ["F", "M", "X"][(i % 3) as usize];
        let savings = f64::from((i * 37) % 1000) / 10.0;
        // Biased: men are approved at a lower savings threshold.
        let approved = savings > if gender == "M" { 30.0 } else { 60.0 };
        csv.push_str(&format!(
            "{},{age},{gender},{},{},{savings:.1},{},{}\n",
            1000 + i,
            groups[(i % 4) as usize],
            states[(i % 3) as usize],
            jobs[(i / 3 % 3) as usize],
            if approved { "approved" } else { "denied" }
        ));
    }
    let data = dir.path().join("loans.csv");
    std::fs::write(&data, csv).unwrap();
    let out = dir.path().join("loans.toml");
    let text = init(&[data.to_str().unwrap()], &out);
    validates(&out);
    assert_eq!(key_of(&text, "data", "label").as_deref(), Some("\"loan_outcome\""), "{text}");
    assert_eq!(key_of(&text, "data", "favourable").as_deref(), Some("\"approved\""), "{text}");
    assert_eq!(key_of(&text, "data", "protected").as_deref(), Some("[\"Gender_Identity\", \"ethnic_group\"]"), "{text}");
    assert_eq!(stages_of_kind(&text, "group_metrics"), ["metrics_gender_identity", "metrics_ethnic_group", "metrics_yearsofage"], "{text}");
    assert!(text.contains("civil_state") && text.contains("marital status by its values"), "{text}");
    assert_eq!(key_of(&text, "data", "drop").as_deref(), Some("[\"applicant_no\"]"), "{text}");
    assert!(text.contains("monthly_savings") && text.contains("continuous   0 … 99.9"), "{text}");
    let summary = runs_to_every_audit(&out, dir.path());
    // The planted bias is found: some real rows flip with gender alone.
    assert!(summary["stages"]["check"]["discriminatory"].as_u64().unwrap() > 0, "{}", summary["stages"]["check"]);
}

/// With a model: its inputs are matched to the columns (one vector input of the census features;
/// named inputs of a scikit-learn export, each to its column), and the pipeline loads it.
#[test]
fn init_with_a_model_matches_its_inputs_to_the_columns() {
    let dir = tempfile::tempdir().unwrap();
    let data = head("census.csv", 400, dir.path());
    std::fs::copy(root().join("pipelines/models/census.onnx"), dir.path().join("census.onnx")).unwrap();
    let out = dir.path().join("p.toml");
    let text = init(&[data.to_str().unwrap(), "--model", dir.path().join("census.onnx").to_str().unwrap()], &out);
    assert_eq!(key_of(&text, "model", "kind").as_deref(), Some("\"load_model\""), "{text}");
    assert_eq!(key_of(&text, "model", "path").as_deref(), Some("\"census.onnx\""), "relative to the pipeline: {text}");
    assert!(text.contains("takes the 12 feature columns"), "{text}");
    std::fs::write(&out, small_budgets(&text)).unwrap();
    runs_to_every_audit(&out, dir.path());

    // Named inputs (needs ONNX Runtime to run, not to match): each input to its column.
    let out = dir.path().join("named.toml");
    let text = init(&[&bundled("data/adult.data.csv"), "--model", &bundled("models/adult_sklearn_lr.onnx")], &out);
    assert!(text.contains("named inputs, matched to columns by name"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("#   sex") && l.contains("<- column sex (string)")), "{text}");
    assert!(text.contains("needs ONNX Runtime"), "{text}");
}

/// `text` up to the group metrics: the load and model stages alone.
fn data_and_model(text: &str) -> String {
    text[..text.find("# Outcomes per group").expect("the group metrics stage")].to_string()
}

/// A codes file beside the data (`census.codes.toml` beside `census.csv`) that maps its category
/// names is proposed as the load stage's `codes`: the census model, trained on the papers' integer
/// codes, then reads the numbers it was trained on and is right on the papers' 8,275 of 9,769 test
/// rows. Without the file, a model reading numbers from columns of names gets a comment saying a
/// codes file is needed (it reads sorted level indices and is right on fewer).
#[test]
fn init_proposes_the_codes_file_beside_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let model = bundled("models/census.onnx");
    let correct = |pipeline: &Path, out: &str| -> (u64, u64) {
        let summary = run_pipeline(pipeline, &dir.path().join(out), &[]);
        let m = &summary["stages"]["model"];
        (m["correct_test"].as_u64().unwrap(), m["total_test"].as_u64().unwrap())
    };
    // The bundled file, its codes beside it: the codes line; the pipeline validates as written.
    let out = dir.path().join("coded.toml");
    let text = init(&[&bundled("data/census.csv"), "--model", &model], &out);
    let codes = key_of(&text, "data", "codes").unwrap_or_else(|| panic!("no codes line: {text}"));
    assert!(codes.ends_with("data/census.codes.toml\""), "{codes}");
    assert!(text.contains("# CONFIRM the codes: census.codes.toml beside the data"), "{text}");
    assert!(!text.contains("CONFIRM the encoding"), "every column of names has its codes: {text}");
    validates(&out);
    std::fs::write(&out, data_and_model(&text)).unwrap();
    assert_eq!(correct(&out, "out-coded"), (8275, 9769), "the papers' accuracy of the census model");
    // The same file without its codes: the note, and the model reads the wrong numbers.
    let copy = dir.path().join("census.csv");
    std::fs::copy(bundled("data/census.csv"), &copy).unwrap();
    let out = dir.path().join("uncoded.toml");
    let text = init(&[copy.to_str().unwrap(), "--model", &model], &out);
    assert_eq!(key_of(&text, "data", "codes"), None, "{text}");
    let note = text.lines().find(|l| l.contains("CONFIRM the encoding")).unwrap_or_else(|| panic!("no codes note: {text}"));
    assert!(note.contains("gender") && note.contains("docs/pipelines.md#category-names-and-their-codes"), "{note}");
    assert!(note.contains(&dir.path().join("census.codes.toml").display().to_string()), "{note}");
    std::fs::write(&out, data_and_model(&text)).unwrap();
    let (right, of) = correct(&out, "out-uncoded");
    assert!(of == 9769 && right < 8000, "{right} of {of} right on sorted level indices");
    // A file of its own with the codes beside it: the path relative to the pipeline, and the whole
    // audit runs, its groups named by their categories.
    let sub = dir.path().join("head");
    std::fs::create_dir_all(&sub).unwrap();
    let data = head("census.csv", 400, &sub);
    std::fs::copy(bundled("data/census.codes.toml"), sub.join("census.codes.toml")).unwrap();
    let out = sub.join("p.toml");
    let text = init(&[data.to_str().unwrap(), "--model", &model], &out);
    assert_eq!(key_of(&text, "data", "codes").as_deref(), Some("\"census.codes.toml\""), "{text}");
    std::fs::write(&out, small_budgets(&text)).unwrap();
    let summary = runs_to_every_audit(&out, &sub);
    let groups = summary["stages"]["metrics_gender"]["groups"].as_array().unwrap();
    assert!(groups.iter().any(|g| g["attributes"] == "gender" && g["group"] == "Female"), "{groups:?}");
}

/// Refusals name the file and what was expected.
#[test]
fn init_refuses_a_missing_file_a_file_without_a_label_and_an_existing_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.toml");
    let missing = dir.path().join("nope.csv");
    let (ok, _, stderr) = fairpipe(&["init", missing.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(!ok);
    assert!(stderr.contains(&format!("{}: no such file", missing.display())) && stderr.contains("binary label column"), "{stderr}");

    // No binary column, and no column of decisions or scores (a score column would make it a
    // decision log: init_on_a_decision_log_writes_its_bias_audit).
    let data = write(dir.path(), "nolabel.csv", "age,sex,amount\n30,F,1\n40,M,2\n50,F,3\n60,M,4\n");
    let (ok, _, stderr) = fairpipe(&["init", data.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(!ok);
    assert!(stderr.contains(&format!("{}: no plausible label", data.display())), "{stderr}");
    assert!(stderr.contains("exactly two values") && stderr.contains("--label COLUMN"), "{stderr}");
    assert!(!out.exists(), "nothing written");

    // --label names a column that is not binary; a protected attribute that does not exist.
    let (ok, _, stderr) = fairpipe(&["init", data.to_str().unwrap(), "--label", "amount", "--out", out.to_str().unwrap()]);
    assert!(!ok && stderr.contains("column `amount` has 4 distinct values"), "{stderr}");
    // --decisions on a file with no decisions or scores: refused, naming what was found.
    let (ok, _, stderr) = fairpipe(&["init", data.to_str().unwrap(), "--decisions", "--out", out.to_str().unwrap()]);
    assert!(!ok && stderr.contains("--decisions needs") && stderr.contains("found: `sex`") && stderr.contains("found: none"), "{stderr}");
    assert!(!out.exists(), "nothing written");
    let data = write(dir.path(), "d.csv", "age,sex,y\n30,F,1\n40,M,0\n50,F,1\n60,M,0\n");
    let (ok, _, stderr) = fairpipe(&["init", data.to_str().unwrap(), "--protected", "gender", "--out", out.to_str().unwrap()]);
    assert!(!ok && stderr.contains("no column `gender` (given as --protected)"), "{stderr}");

    // An existing pipeline is not overwritten without --force.
    std::fs::write(&out, "keep").unwrap();
    let (ok, _, stderr) = fairpipe(&["init", data.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(!ok && stderr.contains("exists already"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep");
    let (ok, _, stderr) = fairpipe(&["init", data.to_str().unwrap(), "--out", out.to_str().unwrap(), "--force"]);
    assert!(ok, "{stderr}");
}

/// A model reading 12 of the data's 14 feature columns (the exports of tests/fixtures/exports,
/// trained without `fnlwgt` and `education`, on the raw Adult rows that keep them): init drops
/// the two, naming them and why in the pipeline, which validates and runs. Named inputs say
/// exactly which columns are read; a vector input's columns are guessed (a sampling weight, a
/// column repeating another) only when the guesses are exactly as many as the model leaves out,
/// else init asks for `--drop`. The executor note is true to what runs: the XGBoost export runs
/// on the native tree executor.
#[test]
fn init_drops_the_columns_a_model_does_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let rows = root().join("tests/fixtures/exports/rows.csv");
    let exports = root().join("tests/fixtures/exports");
    let dropped_line = |text: &str, column: &str| -> String {
        text.lines()
            .find(|l| l.starts_with(&format!("#   {column} ")) && l.contains("dropped:"))
            .unwrap_or_else(|| panic!("{column}:\n{text}"))
            .to_string()
    };
    // Named inputs: the columns without an input are dropped.
    let out = dir.path().join("named.toml");
    let text = init(&[rows.to_str().unwrap(), "--model", exports.join("sklearn_named_tensor.onnx").to_str().unwrap()], &out);
    assert_eq!(key_of(&text, "data", "drop").as_deref(), Some("[\"fnlwgt\", \"education\"]"), "{text}");
    assert!(dropped_line(&text, "fnlwgt").contains("the model has no input for it"), "{text}");
    validates(&out);

    // One vector input of 12: fnlwgt (a weight) and education (repeats education-num) guessed.
    for model in ["xgboost.onnx", "sklearn_vector_lr.onnx"] {
        let out = dir.path().join(format!("{model}.toml"));
        let text = init(&[rows.to_str().unwrap(), "--model", exports.join(model).to_str().unwrap()], &out);
        assert_eq!(key_of(&text, "data", "drop").as_deref(), Some("[\"fnlwgt\", \"education\"]"), "{model}:\n{text}");
        assert!(dropped_line(&text, "fnlwgt").contains("named like a sampling weight (CONFIRM)"), "{text}");
        assert!(dropped_line(&text, "education").contains("it repeats `education-num` value for value (CONFIRM)"), "{text}");
        assert!(text.contains("takes the 12 feature columns"), "{text}");
        if model == "xgboost.onnx" {
            assert!(text.contains("It runs on fairpipe's native tree executor"), "{text}");
            assert!(!text.contains("needs ONNX Runtime"), "{text}");
            std::fs::write(&out, small_budgets(&text)).unwrap();
            let sub = dir.path().join("xgb");
            std::fs::create_dir_all(&sub).unwrap();
            let summary = runs_to_every_audit(&out, &sub);
            let executor = summary["stages"]["model"]["executor"].as_str().unwrap_or_default().to_string();
            assert!(executor.contains("native"), "the note said the native tree executor; ran on {executor}");
        } else {
            // A linear classifier of ai.onnx.ml: ONNX Runtime runs it, and the note says so.
            let note = text.lines().find(|l| l.starts_with("# It needs ONNX Runtime (")).unwrap_or_else(|| panic!("{text}"));
            assert!(note.contains("operator ai.onnx.ml.LinearClassifier"), "{note}");
            assert!(!text.contains("native tree executor"), "{text}");
            validates(&out);
        }
        // Named after data and model: two models of one data file, two out folders.
        assert!(text.contains(&format!("name = \"rows-{}-audit\"", model.trim_end_matches(".onnx").replace('_', "-"))), "{text}");
    }

    // --drop names them; a wrong name is refused with the columns there are.
    let out = dir.path().join("given.toml");
    let text =
        init(&[rows.to_str().unwrap(), "--model", exports.join("xgboost.onnx").to_str().unwrap(), "--drop", "education,fnlwgt"], &out);
    assert_eq!(key_of(&text, "data", "drop").as_deref(), Some("[\"education\", \"fnlwgt\"]"), "{text}");
    assert!(dropped_line(&text, "education").contains("given with --drop"), "{text}");
    let (ok, _, stderr) = fairpipe(&["init", rows.to_str().unwrap(), "--drop", "fnlwgtt", "--out", out.to_str().unwrap(), "--force"]);
    assert!(!ok && stderr.contains("no column `fnlwgtt` (given as --drop)") && stderr.contains("did you mean"), "{stderr}");

    // More columns than the guesses explain: init asks for --drop and writes nothing.
    let text = std::fs::read_to_string(&rows).unwrap();
    let widened: Vec<String> =
        text.lines().enumerate().map(|(i, l)| if i == 0 { format!("{l},n1,n2") } else { format!("{l},{},{}", i % 7, i % 5) }).collect();
    let data = write(dir.path(), "wide.csv", &(widened.join("\n") + "\n"));
    let out = dir.path().join("wide.toml");
    let (ok, _, stderr) = fairpipe(&[
        "init",
        data.to_str().unwrap(),
        "--model",
        exports.join("xgboost.onnx").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!ok, "{stderr}");
    assert!(stderr.contains("the model reads 12 feature columns, the data has 16"), "{stderr}");
    assert!(stderr.contains("fnlwgt, education, 2 of them") && stderr.contains("--drop COL,..."), "{stderr}");
    assert!(!out.exists(), "nothing written");
}

/// The gate the docs give for init's pipeline (README, docs/cli.md) passes on a model that
/// treats the sexes alike and fails on one trained on decisions planted against women.
#[test]
fn the_docs_gate_passes_a_fair_model_and_fails_a_planted_biased_one() {
    let gate = "metrics_sex.demographic_parity_ratio >= 0.8";
    for doc in ["README.md", "docs/cli.md"] {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        assert!(text.contains(&format!("--gate \"{gate}\"")), "{doc} no longer gives the gate {gate:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, biased) in [("fair", false), ("biased", true)] {
        // Two scores uniform on [0, 1], independent of sex; approved when their sum passes a
        // threshold, the same for all (fair) or higher for women (biased: P 0.125 against 0.755).
        let mut rng: u64 = 0x2545_f491_4f6c_dd1d;
        let mut uniform = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut csv = String::from("sex,income_score,savings_score,approved\n");
        for i in 0..3000 {
            let sex = if i % 2 == 0 { "Female" } else { "Male" };
            let (a, b) = (uniform(), uniform());
            let threshold = if biased && sex == "Female" {
                1.5
            } else if biased {
                0.7
            } else {
                1.0
            };
            csv.push_str(&format!("{sex},{a:.4},{b:.4},{}\n", u8::from(a + b > threshold)));
        }
        let sub = dir.path().join(name);
        std::fs::create_dir_all(&sub).unwrap();
        let data = write(&sub, "loans.csv", &csv);
        let out = sub.join("p.toml");
        let text = init(&[data.to_str().unwrap()], &out);
        // The stand-in model init writes, as a logistic regression (the decision is linear in the
        // scores, so it is learnt exactly, and a planted bias with it).
        let text = small_budgets(&text).replace("algorithm = \"mlp\"\nepochs = 3\n", "algorithm = \"logistic\"\n");
        assert!(text.contains("algorithm = \"logistic\""), "{text}");
        std::fs::write(&out, text).unwrap();
        let (ok, stdout, stderr) = fairpipe(&["run", out.to_str().unwrap(), "--out", sub.join("out").to_str().unwrap(), "--gate", gate]);
        let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(sub.join("out/summary.json")).unwrap()).unwrap();
        let ratio = summary["stages"]["metrics_sex"]["demographic_parity_ratio"].as_f64().unwrap();
        // The figure from the test rows' selection rates, recomputed here.
        let groups = summary["stages"]["metrics_sex"]["groups"].as_array().unwrap();
        let rates: Vec<f64> = groups.iter().map(|g| g["selection_rate"].as_f64().unwrap()).collect();
        let recomputed = common::finite_min(&rates) / common::finite_max(&rates);
        assert!((ratio - recomputed).abs() < 1e-12, "{ratio} vs {recomputed} from {rates:?}");
        if biased {
            assert!(!ok && ratio < 0.5, "the biased model passed the gate ({ratio}):\n{stdout}\n{stderr}");
            assert_eq!(summary["gate"]["passed"], false);
        } else {
            assert!(ok && ratio >= 0.8, "the fair model failed the gate ({ratio}):\n{stdout}\n{stderr}");
            assert_eq!(summary["gate"]["passed"], true);
        }
    }
}

/// `fairpipe init` on the vendor's decision log as it is (tests/fixtures/vendor_export): a bias
/// audit of its decisions and scores with no model, no label and no row dropped, the values mapped
/// to the rules' categories (X, Decline and blanks Unknown), which runs as written to the tables
/// scripts/vendor_export_expected.py computes from the rules. The same log without its decisions
/// (a score-only log) gives the scoring table; the messy copy's unnamed value is refused by name.
#[test]
fn init_on_a_decision_log_writes_its_bias_audit() {
    let fixtures = root().join("tests/fixtures/vendor_export");
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join("export-audit.toml");
    let text = init(&[fixtures.join("export.csv").to_str().unwrap()], &pipeline);
    assert_eq!(stages_of_kind(&text, "bias_audit"), ["decisions", "scores"], "{text}");
    assert!(stages_of_kind(&text, "train").is_empty() && stages_of_kind(&text, "generate").is_empty(), "{text}");
    assert!(key_of(&text, "data", "label").is_none() && key_of(&text, "data", "missing_values").as_deref() == Some("[]"), "{text}");
    assert!(text.contains("CONFIRM sex: \"Decline\" (60 rows) is read as Unknown"), "{text}");
    let summary = run_pipeline(&pipeline, &dir.path().join("out"), &[]);
    assert_eq!(summary["stages"]["data"]["dropped_rows"], 0);
    let got = |stage: &str| read_csv(&dir.path().join("out").join(format!("{stage}.csv")));
    crate::bias_audit::compare("decisions", &got("decisions"), &read_csv(&fixtures.join("expected_selection.csv")));
    crate::bias_audit::compare("scores", &got("scores"), &read_csv(&fixtures.join("expected_score.csv")));

    // A score-only log: the export without its decisions column.
    let csv = std::fs::read_to_string(fixtures.join("export.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let advanced = header.iter().position(|c| *c == "advanced").unwrap();
    let without: Vec<String> = csv
        .lines()
        .map(|l| {
            let mut cells: Vec<&str> = l.split(',').collect();
            cells.remove(advanced);
            cells.join(",")
        })
        .collect();
    write(dir.path(), "scores.csv", &(without.join("\n") + "\n"));
    let pipeline = dir.path().join("scores-audit.toml");
    let text = init(&[dir.path().join("scores.csv").to_str().unwrap()], &pipeline);
    assert_eq!(stages_of_kind(&text, "bias_audit"), ["scores"], "{text}");
    run_pipeline(&pipeline, &dir.path().join("out-scores"), &[]);
    let got = read_csv(&dir.path().join("out-scores/scores.csv"));
    crate::bias_audit::compare("score-only log", &got, &read_csv(&fixtures.join("expected_score.csv")));

    // The messy copy: yes/no read in either case, "Withdrawn" named nowhere, so the run refuses it.
    std::fs::copy(fixtures.join("export_messy.csv"), dir.path().join("messy.csv")).unwrap();
    let pipeline = dir.path().join("messy-audit.toml");
    let text = init(&[dir.path().join("messy.csv").to_str().unwrap()], &pipeline);
    assert!(text.contains("\"Withdrawn\" (80 rows) is named nowhere"), "{text}");
    let err = run_failing(&pipeline, &dir.path().join("out-messy"));
    assert!(err.contains("\"Withdrawn\" 80 rows"), "{err}");
}
