//! Bad pipelines and bad data get one clear message naming the file, the line and column (or the
//! data line and column) and what was expected — and no output files.

use crate::common;

use common::*;

/// A valid census pipeline using absolute paths to the bundled files.
fn good() -> String {
    format!(
        r#"[pipeline]
seed = 1

[stages.data]
kind = "load"
path = "{data}"
label = "income"
protected = ["gender"]
drop = ["row"]
split_column = "split"

[stages.model]
kind = "load_model"
data = "data"
path = "{model}"

[stages.estimate]
kind = "estimate"
model = "model"
trials = 10
samples = 100
"#,
        data = bundled("data/census.csv"),
        model = bundled("models/census.onnx")
    )
}

/// Validate `text`; assert failure and that every `(line, col, fragment)` appears in one message line.
fn assert_problems(text: &str, expected: &[(usize, usize, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "bad.toml", text);
    let (ok, stdout, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    assert!(!ok, "validation passed:\n{stdout}");
    for (line, col, fragment) in expected {
        let location = format!("bad.toml:{line}:{col}:");
        assert!(
            stderr.lines().any(|l| l.contains(&location) && l.contains(fragment)),
            "no line with {location} and {fragment:?} in:\n{stderr}"
        );
    }
}

#[test]
fn the_good_pipeline_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "good.toml", &good());
    let (ok, stdout, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    assert!(ok, "{stdout}{stderr}");
}

#[test]
fn unknown_stage_kind_is_named_with_a_suggestion() {
    assert_problems(
        &good().replace("kind = \"estimate\"", "kind = \"estimat\""),
        &[(18, 8, "unknown stage kind `estimat` (did you mean `estimate`?)")],
    );
}

#[test]
fn unknown_key_is_named_with_a_suggestion() {
    assert_problems(&good().replace("trials = 10", "trails = 10"), &[(20, 1, "unknown key `trails` (did you mean `trials`?)")]);
}

#[test]
fn unknown_input_stage_is_named() {
    assert_problems(
        &good().replace("model = \"model\"", "model = \"modle\""),
        &[(19, 9, "names stage `modle`, which does not exist (did you mean `model`?)")],
    );
}

#[test]
fn wrong_kind_of_input_names_both_ends() {
    assert_problems(
        &good().replace("model = \"model\"", "model = \"data\""),
        &[(19, 9, "expects a model, but stage `data` is a `load` stage producing a dataset")],
    );
}

#[test]
fn a_cycle_is_reported_with_its_chain() {
    let text = good().replace("data = \"data\"", "data = \"data\"\n")
        + "\n[stages.a]\nkind = \"train\"\ndata = \"b\"\n\n[stages.b]\nkind = \"train\"\ndata = \"a\"\n";
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "bad.toml", &text);
    let (ok, _, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    assert!(!ok);
    // Both ends are wrong kinds (a model is not a dataset) and they form a cycle.
    assert!(stderr.contains("the stages form a cycle: a → b → a"), "{stderr}");
    assert!(stderr.contains("bad.toml:"), "{stderr}");
}

#[test]
fn missing_file_and_missing_column_are_located() {
    let text = good().replace("census.onnx", "nowhere.onnx").replace("label = \"income\"", "label = \"incme\"");
    assert_problems(&text, &[(7, 9, "`incme` is not a column"), (7, 9, "did you mean `income`?"), (15, 8, "no such file")]);
}

#[test]
fn wrong_value_types_and_toml_syntax_are_located() {
    assert_problems(&good().replace("trials = 10", "trials = \"ten\""), &[(20, 10, "`trials` must be an integer, found a string")]);
    assert_problems(&good().replace("trials = 10", "trials = = 10"), &[(20, 10, "invalid TOML")]);
}

#[test]
fn all_problems_are_reported_together() {
    let text = good().replace("trials = 10", "trails = 10").replace("kind = \"load_model\"", "kind = \"load_modle\"");
    assert_problems(&text, &[(13, 8, "unknown stage kind"), (20, 1, "unknown key `trails`")]);
}

/// Run a pipeline over a bad data file: assert a failure whose message contains `fragments`, and an
/// output folder left without files.
fn assert_bad_data(csv: &str, label: &str, protected: &str, fragments: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let data = write(dir.path(), "bad.csv", csv);
    let text = format!(
        "[stages.data]\nkind = \"load\"\npath = \"{}\"\nlabel = \"{label}\"\nprotected = [\"{protected}\"]\n\n[stages.model]\nkind = \"train\"\ndata = \"data\"\nalgorithm = \"logistic\"\n\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 5\nsamples = 10\n",
        data.display()
    );
    let pipeline = write(dir.path(), "p.toml", &text);
    let out = dir.path().join("out");
    let stderr = run_failing(&pipeline, &out);
    for f in fragments {
        assert!(stderr.contains(f), "no {f:?} in:\n{stderr}");
    }
    assert!(stderr.lines().count() <= 25, "error is longer than a screen:\n{stderr}");
    let written = std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0);
    assert_eq!(written, 0, "files were written despite the failure");
}

#[test]
fn non_numeric_cell_in_a_numeric_column_names_line_and_column() {
    let mut csv = String::from("age,hours,sex,y\n");
    for i in 0..20 {
        csv += &format!("{},{},{},{}\n", 20 + i, 40, i % 2, i % 3 % 2);
    }
    csv += "31,forty,1,0\n";
    assert_bad_data(&csv, "y", "sex", &["bad.csv: line 22, column `hours`: expected a number, found \"forty\""]);
}

#[test]
fn empty_file_is_refused() {
    assert_bad_data("age,sex,y\n", "y", "sex", &["bad.csv", "no data rows"]);
}

#[test]
fn missing_label_column_is_refused_with_the_columns_that_exist() {
    let csv = "age,sex,y\n30,0,1\n40,1,0\n";
    let dir = tempfile::tempdir().unwrap();
    let _ = dir;
    assert_bad_data(csv, "income", "sex", &["label `income` is not a column", "columns: age, sex, y"]);
}

#[test]
fn protected_attribute_with_one_level_is_refused() {
    let csv = "age,sex,y\n30,1,1\n40,1,0\n50,1,1\n";
    assert_bad_data(csv, "y", "sex", &["column `sex`: is protected but takes a single value"]);
}

#[test]
fn missing_value_is_refused_with_its_line_unless_dropping() {
    let csv = "age,sex,y\n30,1,1\n,0,0\n50,1,1\n";
    assert_bad_data(csv, "y", "sex", &["bad.csv: line 3, column `age`: missing value"]);
}

#[test]
fn unknown_protected_override_names_the_stage_and_suggests_the_column() {
    let text = good().replace("samples = 100\n", "samples = 100\nprotected = [\"gendr\"]\n");
    let dir = tempfile::tempdir().unwrap();
    let pipeline = write(dir.path(), "p.toml", &text);
    let out = dir.path().join("out");
    let stderr = run_failing(&pipeline, &out);
    assert!(stderr.contains("stage `estimate`"), "{stderr}");
    assert!(stderr.contains("protected attribute `gendr` is not a feature column (did you mean `gender`?)"), "{stderr}");
    assert_eq!(std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0), 0, "files were written despite the failure");
    // An empty list is refused at validation, where it is written.
    let empty = good().replace("samples = 100\n", "samples = 100\nprotected = []\n");
    assert_problems(&empty, &[(22, 13, "`protected` must name at least one column")]);
}
