//! End-to-end: every bundled pipeline validates and runs through the CLI, the reference ONNX models
//! reproduce their published test accuracy exactly, and runs are reproducible.

use std::path::Path;

use crate::common;

use common::*;

fn pipeline_files() -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(root().join("pipelines"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "expected the bundled pipelines, found {files:?}");
    files
}

#[test]
fn every_bundled_pipeline_validates() {
    for file in pipeline_files() {
        let (ok, stdout, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
        assert!(ok, "{}: {stdout}{stderr}", file.display());
        assert!(stdout.contains(": ok ("), "{stdout}");
    }
}

#[test]
fn every_bundled_pipeline_runs_and_writes_its_outputs() {
    // A pipeline auditing an LLM needs its endpoint: `llm_planted.rs` runs it against the planted
    // server instead.
    for file in pipeline_files().into_iter().filter(|f| !std::fs::read_to_string(f).unwrap().contains("\nllm = {")) {
        let run = bundled_run(&file);
        let (out, summary) = (&run.out, &run.summary);
        let stages = summary["stages"].as_object().unwrap();
        assert!(!stages.is_empty());
        for (name, figures) in stages {
            assert!(figures["elapsed_s"].as_f64().is_some(), "{name} lacks elapsed_s");
            assert!(figures["model_queries"].as_u64().is_some(), "{name} lacks model_queries");
            if figures["kind"] == "estimate" {
                let rate = figures["rate"].as_f64().unwrap();
                let ci = figures["ci95"].as_array().unwrap();
                assert!(ci[0].as_f64().unwrap() <= rate && rate <= ci[1].as_f64().unwrap());
                assert!(out.path().join(format!("{name}.parquet")).exists());
                assert!(out.path().join(format!("{name}.csv")).exists());
            }
        }
        // No temporary files are left behind.
        for entry in std::fs::read_dir(out.path()).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!name.ends_with(".tmp"), "left {name}");
        }
    }
}

#[test]
fn reference_onnx_models_reproduce_their_recorded_test_accuracy() {
    for (pipeline, correct, total) in [("census-estimate", 8275, 9769), ("credit-estimate", 313, 400), ("bank-estimate", 8065, 9043)] {
        let run = bundled_run(&root().join(format!("pipelines/{pipeline}.toml")));
        let model = &run.summary["stages"]["model"];
        assert_eq!(model["correct_test"], correct, "{pipeline}");
        assert_eq!(model["total_test"], total, "{pipeline}");
        assert!((model["accuracy_test"].as_f64().unwrap() - correct as f64 / total as f64).abs() < 1e-12);
    }
}

#[test]
fn same_pipeline_and_seed_give_identical_results() {
    let file = root().join("pipelines/adult-train.toml");
    let (a, b, c) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut first = run_pipeline(&file, a.path(), &[]);
    let mut second = run_pipeline(&file, b.path(), &[]);
    without_timings(&mut first);
    without_timings(&mut second);
    assert_eq!(serde_json::to_string_pretty(&first).unwrap(), serde_json::to_string_pretty(&second).unwrap());
    for table in ["check.csv", "seeds.csv", "estimate.csv"] {
        assert_eq!(std::fs::read(a.path().join(table)).unwrap(), std::fs::read(b.path().join(table)).unwrap(), "{table} differs");
    }
    // A different seed changes the sampled estimate.
    let mut third = run_pipeline(&file, c.path(), &["--seed", "8"]);
    without_timings(&mut third);
    assert_ne!(first["stages"]["estimate"]["rate"], third["stages"]["estimate"]["rate"]);
}

#[test]
fn a_text_audit_gives_identical_results_when_run_again() {
    // Training (a parallel sum over the texts), group scores and swaps: the same to the last bit.
    let file = root().join("pipelines/wikitalk-groups.toml");
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut first = run_pipeline(&file, a.path(), &[]);
    let mut second = run_pipeline(&file, b.path(), &[]);
    without_timings(&mut first);
    without_timings(&mut second);
    assert_eq!(serde_json::to_string_pretty(&first).unwrap(), serde_json::to_string_pretty(&second).unwrap());
    for table in ["groups.csv", "swaps.csv"] {
        assert_eq!(std::fs::read(a.path().join(table)).unwrap(), std::fs::read(b.path().join(table)).unwrap(), "{table} differs");
    }
}

#[test]
fn raw_categorical_data_is_decoded_back_on_output() {
    let run = bundled_run(&root().join("pipelines/adult-train.toml"));
    let summary = &run.summary;
    let data = &summary["stages"]["data"];
    assert_eq!(data["dropped_rows"], 32561 - 30162, "rows with '?' are dropped");
    let csv = std::fs::read_to_string(run.out.path().join("check.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.starts_with("age,workclass,"), "{header}");
    assert!(header.contains("sex_counterpart") && header.contains("race_counterpart"));
    let first = csv.lines().nth(1).expect("some discriminatory test rows");
    assert!(first.contains("Male") || first.contains("Female"), "{first}");
    assert!(["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"].iter().any(|r| first.contains(r)), "{first}");
    let model = &summary["stages"]["model"];
    assert!(model["accuracy_test"].as_f64().unwrap() > 0.80, "MLP test accuracy {}", model["accuracy_test"]);
}

#[test]
fn native_dense_executor_is_verified_and_agrees_with_tract() {
    let text = std::fs::read_to_string(root().join("pipelines/census-estimate.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = common::with_bundled_paths(&text);
    let auto = write(dir.path(), "auto.toml", &text);
    let tract = write(dir.path(), "tract.toml", &text.replace("kind = \"load_model\"", "kind = \"load_model\"\nexecutor = \"tract\""));
    let a = run_pipeline(&auto, &dir.path().join("a"), &[]);
    let t = run_pipeline(&tract, &dir.path().join("t"), &[]);
    let (ma, mt) = (&a["stages"]["model"], &t["stages"]["model"]);
    assert_eq!(ma["executor"], "native dense 12-30-20-15-15-10-1");
    assert_eq!(mt["executor"], "tract");
    // Verified on every row of the data before use.
    assert_eq!(ma["native_checked_rows"], 48842);
    assert_eq!(ma["native_label_flips"], 0);
    assert!(ma["native_max_abs_diff"].as_f64().unwrap() <= 1e-5);
    assert_eq!(ma["correct_test"], mt["correct_test"]);
    let (ra, rt) = (a["stages"]["estimate"]["rate"].as_f64().unwrap(), t["stages"]["estimate"]["rate"].as_f64().unwrap());
    assert!((ra - rt).abs() < 1e-3, "estimate {ra} (native) vs {rt} (tract)");
}

#[test]
fn parquet_input_gives_the_same_audit_as_csv() {
    use polars::prelude::*;
    let dir = tempfile::tempdir().unwrap();
    let csv = root().join("pipelines/data/census.csv");
    let mut frame = CsvReadOptions::default().with_has_header(true).try_into_reader_with_file_path(Some(csv)).unwrap().finish().unwrap();
    let parquet = dir.path().join("census.parquet");
    ParquetWriter::new(std::fs::File::create(&parquet).unwrap()).finish(&mut frame).unwrap();
    let text = std::fs::read_to_string(root().join("pipelines/census-estimate.toml")).unwrap();
    let from_csv = write(dir.path(), "csv.toml", &common::with_bundled_paths(&text));
    let from_parquet = write(
        dir.path(),
        "parquet.toml",
        &common::with_bundled_paths(&text.replace("\"data/census.csv\"", &format!("{:?}", parquet.display().to_string()))),
    );
    let a = run_pipeline(&from_csv, &dir.path().join("a"), &[]);
    let b = run_pipeline(&from_parquet, &dir.path().join("b"), &[]);
    assert_eq!(b["stages"]["model"]["correct_test"], 8275);
    for (stage, key) in [("data", "rows"), ("data", "domain"), ("model", "correct_test"), ("estimate", "rate"), ("check", "discriminatory")]
    {
        assert_eq!(a["stages"][stage][key], b["stages"][stage][key], "{stage}.{key}");
    }
}

/// The bundled census data is written with Adult's own names; its codes file gives back the
/// papers' integer encoding exactly. The expected numbers are those of the papers' own encoded
/// file (MAFT/EIDIG's processed census.csv): its first rows, per-column sums and bounds.
#[test]
fn the_named_census_data_encodes_to_the_papers_codes() {
    let data = common::census_data();
    let first: Vec<Vec<f64>> = (0..3).map(|r| data.x.row(r).to_vec()).collect();
    assert_eq!(first[0], [1.0, 0.0, 7.0, 2.0, 7.0, 1.0, 4.0, 1.0, 1.0, 1.0, 2.0, 0.0]);
    assert_eq!(first[1], [2.0, 0.0, 9.0, 0.0, 9.0, 2.0, 0.0, 1.0, 1.0, 1.0, 3.0, 0.0]);
    assert_eq!(first[2], [2.0, 4.0, 12.0, 0.0, 12.0, 2.0, 0.0, 1.0, 1.0, 1.0, 2.0, 0.0]);
    assert_eq!(data.y[..3], [0, 0, 1]);
    let sums: Vec<f64> = data.x.columns().into_iter().map(|c| c.sum()).collect();
    let papers = [104404, 34193, 492234, 52891, 231806, 116411, 22417, 32650, 53121, 51124, 107799, 70858];
    assert_eq!(sums, papers.map(f64::from));
    assert_eq!(data.y.iter().filter(|&&y| y == 1).count(), 11687);
    let bounds: Vec<(f64, f64)> = data.domain.attributes.iter().map(|a| (a.lower, a.upper)).collect();
    let lower = [1, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0];
    let upper = [4, 7, 16, 6, 13, 5, 4, 1, 3, 2, 4, 40];
    assert_eq!(bounds, lower.iter().zip(upper).map(|(&l, u)| (f64::from(l), f64::from(u))).collect::<Vec<_>>());
    // The codes carry the names: the model reads numbers, people read categories.
    let name = |column: &str, code: f64| data.domain.attributes[data.domain.index_of(column).unwrap()].decode(code);
    assert_eq!((name("gender", 0.0), name("race", 4.0), name("age", 2.0)), ("Female".into(), "Black".into(), "26–45".into()));
    assert_eq!((data.label_values.clone(), data.label_code), (["<=50K".to_string(), ">50K".to_string()], Some(1)));
}

/// A codes file's problems are found by `validate`, each at its own `file:line:col` beside the
/// pipeline's `codes` key; a cell without a code stops the run naming its line and the file.
#[test]
fn codes_files_are_checked_at_validate_and_their_cells_at_run() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = |codes: &Path| {
        common::census_data_stage()
            .replace(&format!("{:?}", bundled("data/census.codes.toml")), &format!("{:?}", codes.display().to_string()))
    };
    let validate = |name: &str, text: &str| {
        let codes = write(dir.path(), name, text);
        let file = write(dir.path(), &format!("{name}.p.toml"), &pipeline(&codes));
        let (ok, _, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
        assert!(!ok && stderr.contains(&format!("{}:4:", file.display())), "the pipeline's `codes` key: {stderr}");
        (codes, stderr)
    };
    let (codes, stderr) = validate("typo.toml", "[\"gendr\"]\nFemale = 0\nMale = 1\n");
    let at = |codes: &Path, line: usize, col: usize| format!("{}:{line}:{col}: ", codes.display());
    assert!(
        stderr.contains(&format!("{}column `gendr` is not a column of", at(&codes, 1, 2))) && stderr.contains("did you mean `gender`"),
        "{stderr}"
    );
    let (codes, stderr) = validate("gap.toml", "[race]\nWhite = 0\nBlack = 2\n");
    assert!(stderr.contains(&format!("{}the codes of column `race` skip 1", at(&codes, 1, 2))), "{stderr}");
    // Well formed, but a category of the data has no code.
    let codes = write(dir.path(), "short.toml", "[race]\nWhite = 0\nBlack = 1\n");
    let file = write(dir.path(), "short.toml.p.toml", &pipeline(&codes));
    let stderr = run_failing(&file, &dir.path().join("out"));
    assert!(
        stderr.contains("column `race`: line 21: value \"Asian-Pac-Islander\" has no code in") && stderr.contains("short.toml:1:2"),
        "{stderr}"
    );
}

#[test]
fn census_zoo_gives_identical_results_at_one_thread_and_on_every_core() {
    // Four models trained (the forest's trees in parallel), estimated, searched and one retrained:
    // the thread count may change nothing but the timings. The run on every core is the one
    // `every_bundled_pipeline_runs_and_writes_its_outputs` shares (one census-zoo run fewer); a
    // machine of one core (or a RAYON_NUM_THREADS set) runs it at two threads instead.
    let file = root().join("pipelines/census-zoo.toml");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut one = run_pipeline_threads(&file, a.path(), 1);
    let shared = (cores >= 2 && std::env::var_os("RAYON_NUM_THREADS").is_none()).then(|| bundled_run(&file));
    let (many_dir, mut many) = match &shared {
        Some(run) => (run.out.path().to_path_buf(), run.summary.clone()),
        None => (b.path().to_path_buf(), run_pipeline_threads(&file, b.path(), 2)),
    };
    without_timings(&mut one);
    without_timings(&mut many);
    assert_eq!(serde_json::to_string_pretty(&one).unwrap(), serde_json::to_string_pretty(&many).unwrap());
    let mut tables = 0;
    for entry in std::fs::read_dir(a.path()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".csv") {
            assert_eq!(std::fs::read(a.path().join(&name)).unwrap(), std::fs::read(many_dir.join(&name)).unwrap(), "{name} differs");
            tables += 1;
        }
    }
    assert!(tables >= 8, "expected the zoo's estimate and verify tables, found {tables}");
}

/// `precision` on `check`: the census model's rows are checked in a random order seeded by the
/// stage, 256 between looks, until the flip rate's confidence sequence is within ±0.01. The rows
/// it checked are a part of every row; each of them is discriminatory exactly when the full check
/// says so; the rate of the full check lies in the interval at the stop; the same seed checks the
/// same rows again.
#[test]
fn a_check_with_precision_stops_once_its_valid_interval_is_that_narrow() {
    let dir = tempfile::tempdir().unwrap();
    let text = |precision: &str| {
        format!(
            "[pipeline]\nseed = 3\n\n{}\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n\n[stages.check]\nkind = \"check\"\nmodel = \"model\"\nsplit = \"all\"\n{precision}",
            census_data_stage(),
            bundled("models/census.onnx")
        )
    };
    let full_file = write(dir.path(), "full.toml", &text(""));
    let file = write(dir.path(), "precise.toml", &text("precision = 0.01\n"));
    let full = run_pipeline(&full_file, &dir.path().join("full"), &[]);
    let precise = run_pipeline(&file, &dir.path().join("precise"), &[]);
    let (all, part) = (&full["stages"]["check"], &precise["stages"]["check"]);
    let stop = &part["precision"];
    let checked = part["checked"].as_u64().unwrap();
    let available = part["rows_available"].as_u64().unwrap();
    assert_eq!(Some(available), all["checked"].as_u64(), "{part}");
    assert!(stop["met"] == true && stop["reached"].as_f64().unwrap() <= 0.01, "{part}");
    assert_eq!(stop["observations"].as_u64(), Some(checked));
    assert!(checked % 256 == 0 && checked < available / 2, "stopped early, at a look: {checked} of {available}");
    assert_eq!(part["ci95"], stop["ci95"], "{part}");
    let [lo, hi] = [part["ci95"][0].as_f64().unwrap(), part["ci95"][1].as_f64().unwrap()];
    let truth = all["rate"].as_f64().unwrap();
    assert!(lo <= truth && truth <= hi && hi - lo <= 0.02 + 1e-12, "the full check's {truth} outside [{lo}, {hi}]");
    // Every discriminatory row of the part is one of the full check's, with the same counterpart
    // (counted: census repeats some rows).
    let rows_of = |out: &str| -> std::collections::BTreeMap<String, usize> {
        let mut counts = std::collections::BTreeMap::new();
        for line in std::fs::read_to_string(dir.path().join(out).join("check.csv")).unwrap().lines().skip(1) {
            *counts.entry(line.to_string()).or_insert(0) += 1;
        }
        counts
    };
    let (full_rows, part_rows) = (rows_of("full"), rows_of("precise"));
    assert_eq!(part_rows.values().sum::<usize>() as u64, part["discriminatory"].as_u64().unwrap());
    let missing: Vec<&String> = part_rows.iter().filter(|(row, n)| full_rows.get(*row).is_none_or(|m| m < n)).map(|(r, _)| r).collect();
    assert!(!part_rows.is_empty() && missing.is_empty(), "rows not in the full check: {missing:?}");
    // The model scored the rows checked and their counterparts, nothing more.
    assert_eq!(stop["model_rows"].as_u64(), Some(checked * 2), "{stop}");
    let again = run_pipeline(&file, &dir.path().join("again"), &[]);
    assert_eq!(again["stages"]["check"]["ci95"], part["ci95"]);
    assert_eq!(rows_of("again"), part_rows);
}
