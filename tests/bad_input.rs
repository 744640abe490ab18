//! Bad pipelines and bad data get one clear message naming the file, the line and column (or the
//! data line and column) and what was expected — and no output files.

use crate::common;

use common::*;

/// A valid census pipeline using absolute paths to the bundled files.
fn good() -> String {
    format!(
        r#"[pipeline]
seed = 1

{data_stage}
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
        data_stage = census_data_stage(),
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
        &[(20, 8, "unknown stage kind `estimat` (did you mean `estimate`?)")],
    );
}

#[test]
fn unknown_key_is_named_with_a_suggestion() {
    assert_problems(&good().replace("trials = 10", "trails = 10"), &[(22, 1, "unknown key `trails` (did you mean `trials`?)")]);
}

#[test]
fn unknown_input_stage_is_named() {
    assert_problems(
        &good().replace("model = \"model\"", "model = \"modle\""),
        &[(21, 9, "names stage `modle`, which does not exist (did you mean `model`?)")],
    );
}

#[test]
fn wrong_kind_of_input_names_both_ends() {
    assert_problems(
        &good().replace("model = \"model\"", "model = \"data\""),
        &[(21, 9, "expects a model, but stage `data` is a `load` stage producing a dataset")],
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
    assert_problems(&text, &[(8, 9, "`incme` is not a column"), (8, 9, "did you mean `income`?"), (17, 8, "no such file")]);
}

#[test]
fn wrong_value_types_and_toml_syntax_are_located() {
    assert_problems(&good().replace("trials = 10", "trials = \"ten\""), &[(22, 10, "`trials` must be an integer, found a string")]);
    assert_problems(&good().replace("trials = 10", "trials = = 10"), &[(22, 10, "invalid TOML")]);
}

#[test]
fn all_problems_are_reported_together() {
    let text = good().replace("trials = 10", "trails = 10").replace("kind = \"load_model\"", "kind = \"load_modle\"");
    assert_problems(&text, &[(15, 8, "unknown stage kind"), (22, 1, "unknown key `trails`")]);
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
    assert_bad_data(csv, "y", "sex", &["p.toml:5:14: stage `data`: ", "bad.csv: column `sex`: is protected but takes a single value"]);
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
    assert_problems(&empty, &[(24, 13, "`protected` must name at least one column")]);
}

/// One bad input of the classes the bad-input tests cover: files to put beside the pipeline, the pipeline text
/// (`{dir}` is the case's folder), the command, and what must come back.
struct Case {
    /// The class and the example.
    name: &'static str,
    /// Files written into the case's folder first: (name, bytes).
    files: Vec<(&'static str, Vec<u8>)>,
    /// The pipeline text, as bytes (one case is not UTF-8).
    pipeline: Vec<u8>,
    /// `validate` (false) or `run` (true).
    run: bool,
    /// The exit code.
    exit: i32,
    /// Fragments the message must hold.
    fragments: &'static [&'static str],
}

/// A small data file: 40 rows of an integer `x` (0–6), a protected `s` (0/1) and a 0/1 label `y`,
/// then `extra` lines.
fn small_csv(extra: &str) -> Vec<u8> {
    let mut csv = String::from("x,s,y\n");
    for i in 0..40 {
        csv += &format!("{},{},{}\n", i % 7, i % 2, (i / 2) % 2);
    }
    csv += extra;
    csv.into_bytes()
}

/// A pipeline over `data.csv`: load (with `load_extra` lines), train a logistic model, estimate
/// (with `estimate_extra` lines).
fn small_pipeline(load_extra: &str, estimate_extra: &str) -> Vec<u8> {
    format!(
        "[pipeline]\nseed = 1\n\n[stages.data]\nkind = \"load\"\npath = \"data.csv\"\nlabel = \"y\"\nprotected = [\"s\"]\n{load_extra}\n[stages.model]\nkind = \"train\"\ndata = \"data\"\nalgorithm = \"logistic\"\n\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 5\nsamples = 10\n{estimate_extra}"
    )
    .into_bytes()
}

fn cases() -> Vec<Case> {
    let data = |extra: &str| vec![("data.csv", small_csv(extra))];
    let census = |from: &str, to: &str| good().replacen(from, to, 1).into_bytes();
    vec![
        // Panics and aborts.
        Case {
            name: "an integer cell beyond 2^53 (was: a grid length overflowing usize)",
            files: data("99999999999999999999,1,0\n"),
            pipeline: small_pipeline("", ""),
            run: true,
            exit: 1,
            fragments: &["data.csv: column `x`: line 42: integer 99999999999999999999 is beyond ±2^53"],
        },
        Case {
            name: "cells of ±1.7e308 in a continuous column (was: range overflow)",
            files: data("1.7e308,1,0\n-1.7e308,0,1\n"),
            pipeline: small_pipeline("columns.x = { kind = \"continuous\" }\n", ""),
            run: true,
            exit: 1,
            fragments: &["column `x`: values span [-17", "a range too wide to compute with"],
        },
        Case {
            name: "samples = i64::MAX (was: capacity overflow)",
            files: data(""),
            pipeline: small_pipeline("", "").replace_text("samples = 10", "samples = 9223372036854775807"),
            run: false,
            exit: 1,
            fragments: &["p.toml:19:11:", "`samples` must be at most 10000000, found 9223372036854775807"],
        },
        Case {
            name: "a protected continuous column with step = 1e-12 (was: a 7.9 TB allocation)",
            files: data(""),
            pipeline: small_pipeline("columns.x = { kind = \"continuous\", step = 1e-12 }\n", "protected = [\"s\", \"x\"]\n"),
            run: true,
            exit: 1,
            fragments: &[
                // Found once the data is loaded, before the model is trained.
                "stage `estimate` (estimate) failed: checked as soon as `data` was loaded, before it runs:",
                "the protected attributes x (6000000000001) × s (2) give 12000000000002 combinations",
                "coarser `step`",
                "the key `protected` is at ",
                "p.toml:21:1)",
            ],
        },
        // Silently wrong.
        Case {
            name: "an integer outside i64 (was: read as i64::MAX)",
            files: data(""),
            pipeline: small_pipeline("", "").replace_text("seed = 1", "seed = 99999999999999999999"),
            run: false,
            exit: 1,
            fragments: &["p.toml:2:8: invalid TOML: integer 99999999999999999999 is out of range"],
        },
        Case {
            name: "a negative trial count (was: an endless run)",
            files: data(""),
            pipeline: small_pipeline("", "").replace_text("trials = 5", "trials = -5"),
            run: false,
            exit: 1,
            fragments: &["p.toml:18:10:", "`trials` must be a non-negative integer, found -5"],
        },
        Case {
            name: "the label among the features (was: a leaking model audited)",
            files: vec![],
            pipeline: census("drop = [\"row\"]", "drop = [\"row\"]\nfeatures = [\"age\", \"gender\", \"income\"]"),
            run: false,
            exit: 1,
            fragments: &["the label `income` is listed among the features"],
        },
        Case {
            name: "a header naming a column twice (was: the second renamed and used as a feature)",
            files: vec![("data.csv", b"x,s,x,y\n1,0,2,1\n2,1,3,0\n".to_vec())],
            pipeline: small_pipeline("", ""),
            run: false,
            exit: 1,
            fragments: &["p.toml:6:8:", "column `x` appears twice in the header (columns 1 and 3)"],
        },
        Case {
            name: "the label in drop (was: silently ignored)",
            files: vec![],
            pipeline: census("drop = [\"row\"]", "drop = [\"row\", \"income\"]"),
            run: false,
            exit: 1,
            fragments: &["bad.toml:11:16:", "the label `income` is in `drop`"],
        },
        Case {
            name: "the label as a protected attribute",
            files: vec![],
            pipeline: census("protected = [\"gender\"]", "protected = [\"gender\", \"income\"]"),
            run: false,
            exit: 1,
            fragments: &["bad.toml:10:24:", "the label `income` cannot be a protected attribute"],
        },
        Case {
            name: "an override with min > max",
            files: data(""),
            pipeline: small_pipeline("columns.x = { min = 5, max = 1 }\n", ""),
            run: false,
            exit: 1,
            fragments: &["p.toml:9:9:", "columns.x: min 5 is greater than max 1"],
        },
        Case {
            name: "an override whose bounds exclude the data",
            files: data(""),
            pipeline: small_pipeline("columns.x = { min = 0, max = 3 }\n", ""),
            run: true,
            exit: 1,
            fragments: &["column `x`: line 6: value 4 lies outside the declared bounds [0, 3]", "the key `columns` is at ", "p.toml:9:1)"],
        },
        Case {
            name: "declared bounds too far apart to compute with (was: named the data file)",
            files: data(""),
            pipeline: small_pipeline("columns.x = { kind = \"continuous\", min = -1e308, max = 1e308 }\n", ""),
            run: false,
            exit: 1,
            fragments: &["p.toml:9:9:", "columns.x: min -1e308 and max 1e308 span a range too wide to compute with"],
        },
        Case {
            name: "a declared bound that the data's other end puts too far (was: no key)",
            files: data("1.7e308,1,0\n"),
            pipeline: small_pipeline("columns.x = { kind = \"continuous\", min = -1.7e308 }\n", ""),
            run: true,
            exit: 1,
            fragments: &["column `x`: values span [-17", "a range too wide to compute with", "the key `columns` is at ", "p.toml:9:1)"],
        },
        Case {
            name: "training rows of one class (was: no location)",
            files: vec![(
                "data.csv",
                (0..40).fold(String::from("x,s,y\n"), |csv, i| csv + &format!("{},{},1\n", i % 7, i % 2)).into_bytes(),
            )],
            pipeline: small_pipeline("", ""),
            run: true,
            exit: 1,
            fragments: &[
                "stage `model` (train) failed: ",
                "data.csv: the label `y` is \"1\" in all ",
                "training rows, so no classifier can be trained on them",
                "the key `stages.data.label` is at ",
                "p.toml:7:1)",
            ],
        },
        // Unbounded work.
        Case {
            name: "k larger than the data (was: silently lowered)",
            files: data(""),
            pipeline: small_pipeline("", "")
                .replace_text("[stages.estimate]", "[stages.seeds]\nkind = \"cluster\"\ndata = \"data\"\nk = 400\n\n[stages.estimate]"),
            run: true,
            exit: 1,
            fragments: &[
                "`k` = 400, but the rows to cluster number only 32; lower `k` to at most 32",
                "the key `k` is at ",
                "p.toml:18:1)",
            ],
        },
        Case {
            name: "k past its documented bound",
            files: data(""),
            pipeline: small_pipeline("", "")
                .replace_text("[stages.estimate]", "[stages.seeds]\nkind = \"cluster\"\ndata = \"data\"\nk = 5000\n\n[stages.estimate]"),
            run: false,
            exit: 1,
            fragments: &["`k` must be at most 1000, found 5000"],
        },
        Case {
            name: "an estimate needing billions of model rows",
            files: data(""),
            pipeline: small_pipeline("", "").replace_text("trials = 5\nsamples = 10", "trials = 100000\nsamples = 100000"),
            run: true,
            exit: 1,
            fragments: &[
                "checked as soon as `data` was loaded, before it runs",
                "this audit needs 20000000000 model rows (trials × samples × protected combinations = 100000 × 100000 × 2)",
                "lower `trials`/`samples`",
                "the key `trials` is at ",
                "p.toml:18:1)",
            ],
        },
        Case {
            name: "max_features larger than the features (was: silently lowered)",
            files: data(""),
            pipeline: small_pipeline("", "")
                .replace_text("algorithm = \"logistic\"", "algorithm = \"forest\"\ntrees = 3\nmax_features = 9"),
            run: true,
            exit: 1,
            fragments: &[
                "`max_features` = 9, but the data's features number only 2; lower `max_features` to at most 2",
                "the key `max_features` is at ",
                "p.toml:15:1)",
            ],
        },
        // Run-time refusals located at the pipeline key that fixes them (beside the data's place).
        // Refusals a look at the data's label and protected columns finds at validate, located at
        // the key (or at the stage, for a key to add).
        Case {
            name: "a label with three values and no favourable class",
            files: data("5,1,2\n"),
            pipeline: small_pipeline("", ""),
            run: false,
            exit: 1,
            fragments: &[
                "p.toml:4:9: stage `data`: ",
                "data.csv: column `y`: the label has the values [\"0\", \"1\", \"2\"]; say which is favourable",
            ],
        },
        Case {
            name: "a favourable class the label does not take",
            files: data(""),
            pipeline: small_pipeline("favourable = \"7\"\n", ""),
            run: false,
            exit: 1,
            fragments: &[
                "p.toml:9:14: stage `data`: ",
                "data.csv: column `y`: favourable = \"7\", but the label takes only the values 0 and 1",
            ],
        },
        Case {
            name: "a favourable value a text label does not take, rows with a missing value dropped",
            files: vec![("data.csv", b"x,s,y\n1,0,yes\n2,1,no\n3,?,yes\n4,1,no\n".to_vec())],
            pipeline: small_pipeline("favourable = \"Yes\"\nmissing = \"drop\"\n", ""),
            run: false,
            exit: 1,
            fragments: &[
                "p.toml:9:14: stage `data`: ",
                "data.csv: column `y`: favourable = \"Yes\" does not occur; the label has [\"no\", \"yes\"]",
            ],
        },
        Case {
            name: "a protected column with one level",
            files: vec![("data.csv", b"x,s,y\n1,1,1\n2,1,0\n3,1,1\n".to_vec())],
            pipeline: small_pipeline("", ""),
            run: false,
            exit: 1,
            fragments: &["p.toml:8:14: stage `data`: ", "data.csv: column `s`: is protected but takes a single value"],
        },
        Case {
            name: "an output the model lacks",
            files: vec![],
            pipeline: census("models/census.onnx\"\n", "models/census.onnx\"\noutput = \"proba\"\n"),
            run: false,
            exit: 1,
            fragments: &["bad.toml:18:10: stage `model`: no output named \"proba\"; its outputs: probabilities"],
        },
        // Still found when the stage runs: a label whose values depend on the rows dropped.
        Case {
            name: "a label with three values once rows with a missing value are dropped",
            files: data("5,?,2\n6,1,2\n"),
            pipeline: small_pipeline("missing = \"drop\"\n", ""),
            run: true,
            exit: 1,
            fragments: &["data.csv: column `y`: the label has the values", "add `favourable` to the stage at ", "p.toml:4:9)"],
        },
        Case {
            name: "an audited protected attribute that is not a feature",
            files: data(""),
            pipeline: small_pipeline("", "protected = [\"z\"]\n"),
            run: true,
            exit: 1,
            fragments: &["protected attribute `z` is not a feature column", "the key `protected` is at ", "p.toml:20:1)"],
        },
        // Unclear messages.
        Case {
            name: "a folder as the data path (was: No such device)",
            files: vec![],
            pipeline: small_pipeline("", "").replace_text("path = \"data.csv\"", "path = \".\""),
            run: false,
            exit: 1,
            fragments: &["p.toml:6:8:", "is a folder, not a file"],
        },
        Case {
            name: "a folder as the model path",
            files: vec![],
            pipeline: census("models/census.onnx", "models"),
            run: false,
            exit: 1,
            fragments: &["bad.toml:17:8:", "is a folder, not a file"],
        },
        Case {
            name: "a ragged row (was: no line)",
            files: data("3,1\n"),
            pipeline: small_pipeline("", ""),
            run: true,
            exit: 1,
            fragments: &["data.csv: line 42: 2 fields where the header has 3 (x, s, y)"],
        },
        Case {
            name: "bad UTF-8 in the data (was: no line)",
            files: vec![("data.csv", [small_csv(""), b"3,\xe9,0\n".to_vec()].concat())],
            pipeline: small_pipeline("", ""),
            run: true,
            exit: 1,
            fragments: &["data.csv: line 42, column 3: invalid UTF-8 (byte 0xe9)"],
        },
        Case {
            name: "a non-UTF-8 byte in the pipeline (was: reported at 1:1)",
            files: data(""),
            pipeline: small_pipeline("", "").replace_bytes(b"label = \"y\"", b"label = \"y\xff\""),
            run: false,
            exit: 1,
            fragments: &["p.toml:7:11: invalid UTF-8 (byte 0xff"],
        },
        Case {
            name: "a stage name escaping the out folder",
            files: data(""),
            pipeline: small_pipeline("", "").replace_text("[stages.estimate]", "[stages.\"../../escape\"]"),
            run: false,
            exit: 1,
            fragments: &["p.toml:15:9: stage `../../escape`: the name has '.'"],
        },
        Case {
            name: "a save path that is a folder",
            files: data(""),
            pipeline: small_pipeline("", "").replace_text("algorithm = \"logistic\"", "algorithm = \"logistic\"\nsave = \".\""),
            run: false,
            exit: 1,
            fragments: &["is a folder; give a file name"],
        },
    ]
}

/// Text and byte replacement on a pipeline's bytes.
trait Replace {
    fn replace_text(self, from: &str, to: &str) -> Vec<u8>;
    fn replace_bytes(self, from: &[u8], to: &[u8]) -> Vec<u8>;
}

impl Replace for Vec<u8> {
    fn replace_text(self, from: &str, to: &str) -> Vec<u8> {
        self.replace_bytes(from.as_bytes(), to.as_bytes())
    }

    fn replace_bytes(self, from: &[u8], to: &[u8]) -> Vec<u8> {
        let at = self
            .windows(from.len())
            .position(|w| w == from)
            .unwrap_or_else(|| panic!("{:?} not in the text", String::from_utf8_lossy(from)));
        [&self[..at], to, &self[at + from.len()..]].concat()
    }
}

/// Every class of bad input: the exit code, the message, and an out folder (holding a previous
/// result) left exactly as it was, with nothing beside it.
#[test]
fn every_class_of_bad_input_is_refused_clearly_and_writes_nothing() {
    let mut failures = Vec::new();
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in &case.files {
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
        // The census cases name bundled files by absolute path and are checked as bad.toml.
        let file_name = if case.pipeline.windows(10).any(|w| w == b"census.csv") { "bad.toml" } else { "p.toml" };
        let pipeline = dir.path().join(file_name);
        std::fs::write(&pipeline, &case.pipeline).unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("previous.json"), "{}").unwrap();
        let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        let args: Vec<&str> = if case.run {
            vec!["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]
        } else {
            vec!["validate", pipeline.to_str().unwrap()]
        };
        let result = std::process::Command::new(env!("CARGO_BIN_EXE_fairpipe")).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&result.stderr);
        let mut problems = Vec::new();
        if result.status.code() != Some(case.exit) {
            problems.push(format!("exit {:?}, expected {}", result.status.code(), case.exit));
        }
        for f in case.fragments {
            if !stderr.contains(f) {
                problems.push(format!("no {f:?}"));
            }
        }
        if stderr.contains("panicked") || stderr.lines().count() > 25 {
            problems.push("a panic or more than a screen of output".into());
        }
        let in_out: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
        if in_out != vec![std::ffi::OsString::from("previous.json")] {
            problems.push(format!("the out folder changed: {in_out:?}"));
        }
        let mut after: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        after.sort();
        let mut before = before;
        before.sort();
        if after != before {
            problems.push(format!("files appeared beside the out folder: {after:?} (before: {before:?})"));
        }
        if !problems.is_empty() {
            failures.push(format!("{}:\n    {}\n    stderr: {}", case.name, problems.join("\n    "), stderr.trim()));
        }
    }
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
}

/// 100,000 broken stages are all reported, and the message lists the first 50 problems and counts
/// the rest. (How long it takes is a figure, not a test: 1.07 s in a debug build on a busy 2-core
/// machine, measured with `time fairpipe validate` — see the README's limits.)
#[test]
fn a_hundred_thousand_broken_stages_print_fifty_and_the_count() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..100_000 {
        text += &format!("[stages.s{i}]\nkind = \"estimat\"\nmodel = \"m{i}\"\n\n");
    }
    let file = write(dir.path(), "many.toml", &text);
    let result = fairpipe(&["validate", file.to_str().unwrap()]);
    let (ok, _, stderr) = result;
    assert!(!ok);
    assert!(stderr.starts_with("error: 100000 problem(s) in the pipeline:"), "{}", &stderr[..200.min(stderr.len())]);
    assert!(stderr.contains("many.toml:399998:8: stage `s99999`") || stderr.contains("… and 99950 more"), "{}", &stderr[..200]);
    assert!(stderr.contains("many.toml:2:8: stage `s0`: unknown stage kind `estimat`"));
    assert!(stderr.contains("many.toml:198:8: stage `s49`"), "the 50th problem is shown");
    assert!(!stderr.contains("stage `s50`:"), "the 51st is not");
    assert!(stderr.contains("… and 99950 more"));
}

/// A chain of 100,000 stages is ordered without deep recursion (it used to overflow the stack).
#[test]
fn a_long_chain_of_stages_is_checked_without_overflowing_the_stack() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("[stages.s0]\nkind = \"load\"\npath = \"nowhere.csv\"\nlabel = \"y\"\nprotected = [\"s\"]\n");
    for i in 1..100_000 {
        text += &format!("[stages.s{i}]\nkind = \"train\"\ndata = \"s{}\"\n", i - 1);
    }
    let file = write(dir.path(), "chain.toml", &text);
    let (ok, _, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    assert!(!ok);
    assert!(stderr.contains("error: ") && stderr.contains("problem(s) in the pipeline"), "{}", &stderr[..stderr.len().min(300)]);
    assert!(!stderr.contains("overflow"), "{}", &stderr[..stderr.len().min(300)]);
}

#[test]
fn model_input_names_are_checked_against_the_datas_columns_at_validate() {
    let exports = root().join("tests/fixtures/exports");
    let text = format!(
        "[stages.data]\nkind = \"load\"\npath = \"{rows}\"\nlabel = \"Y\"\nfavourable = \">50K\"\nprotected = [\"sex\"]\ndrop = [\"fnlwgt\", \"education\", \"hours-per-week\"]\n\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{model}\"\n",
        rows = exports.join("rows.csv").display(),
        model = exports.join("sklearn_named_zipmap.onnx").display()
    );
    // A named input whose column is dropped: at the stage, where `inputs` is to be added.
    assert_problems(&text, &[(9, 9, "model input hours_per_week has no feature column of that name")]);
    // A map naming a column that is no feature: at its own entry.
    let mapped = format!("{text}inputs = {{ hours_per_week = \"hours-per-wek\" }}\n");
    assert_problems(
        &mapped,
        &[(13, 12, "`inputs` maps model input \"hours_per_week\" to column \"hours-per-wek\", which is not a feature column")],
    );
    // Kept, the column feeds its input by name and the pipeline is valid.
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "good.toml", &text.replace(", \"hours-per-week\"]", "]"));
    let (ok, stdout, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    assert!(ok, "{stdout}{stderr}");
}
