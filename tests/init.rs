//! `fairpipe init` on data it has never seen: the bundled CSVs (raw UCI Adult with its category
//! names and `?` cells among them) and a CSV with column names of its own. Each pipeline written
//! validates as written, names the label and the protected attributes expected, and runs to group
//! metrics, an estimate, a check of the real rows and a search. Runs use the first rows of each
//! file and smaller budgets, to stay quick.

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

/// `text` with the search and estimate budgets cut for a quick test run.
fn small_budgets(text: &str) -> String {
    text.replace("trials = 100", "trials = 10")
        .replace("samples = 1000", "samples = 200")
        .replace("seeds = 1000", "seeds = 40")
        .replace("global_num = 100, local_num = 1000", "global_num = 10, local_num = 40")
        .replace("epochs = 10", "epochs = 3")
}

/// Run `pipeline` into `dir/out`; the summary, asserting it has each audit's headline figure.
fn runs_to_every_audit(pipeline: &Path, dir: &Path) -> serde_json::Value {
    let summary = run_pipeline(pipeline, &dir.join("out"), &[]);
    let stages = &summary["stages"];
    assert!(stages["metrics"]["rows"].as_u64().unwrap() > 0, "{}", stages["metrics"]);
    let rate = stages["estimate"]["rate"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&rate), "{}", stages["estimate"]);
    assert!(stages["check"]["checked"].as_u64().unwrap() > 0, "{}", stages["check"]);
    assert!(stages["search"]["generated"].as_u64().is_some(), "{}", stages["search"]);
    assert!(stages["search_verified"].is_object(), "{summary}");
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
        for stage in ["metrics", "estimate", "check", "search"] {
            assert!(key_of(&text, stage, "kind").is_some(), "{file}: no stage {stage}");
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
    // other protected attributes (age, marital status, native country) are measured.
    let adult = std::fs::read_to_string(dir.path().join("adult.data.csv.toml")).unwrap();
    assert!(adult.contains("categorical  2 levels: Female, Male"), "{adult}");
    assert!(adult.contains("missing = \"drop\""), "{adult}");
    // Measured in two stages: all five together have too many intersections.
    let measured: String = ["metrics", "metrics_2"].iter().map(|m| key_of(&adult, m, "protected").unwrap_or_default()).collect();
    for p in ["sex", "race", "age", "marital-status", "native-country"] {
        assert!(measured.contains(&format!("\"{p}\"")), "{p} not measured: {measured}");
    }
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
    assert_eq!(
        key_of(&text, "metrics", "protected").as_deref(),
        Some("[\"Gender_Identity\", \"ethnic_group\", \"YearsOfAge\", \"civil_state\"]"),
        "{text}"
    );
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
    let groups = summary["stages"]["metrics"]["groups"].as_array().unwrap();
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

    let data = write(dir.path(), "nolabel.csv", "age,sex,score\n30,F,1\n40,M,2\n50,F,3\n60,M,4\n");
    let (ok, _, stderr) = fairpipe(&["init", data.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(!ok);
    assert!(stderr.contains(&format!("{}: no plausible label", data.display())), "{stderr}");
    assert!(stderr.contains("exactly two values") && stderr.contains("--label COLUMN"), "{stderr}");
    assert!(!out.exists(), "nothing written");

    // --label names a column that is not binary; a protected attribute that does not exist.
    let (ok, _, stderr) = fairpipe(&["init", data.to_str().unwrap(), "--label", "score", "--out", out.to_str().unwrap()]);
    assert!(!ok && stderr.contains("column `score` has 4 distinct values"), "{stderr}");
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
