//! Sweeps and sharded runs: a `[matrix]` runs every combination (each equal to the pipeline
//! written out by hand), compares them and picks the best; `--jobs` and `--shard K/N` + `merge`
//! give exactly the unsharded result; bad matrices, bad shards and bad parts are clear errors.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;

/// A small census audit: estimate (20 × 200) and check over the reference model, with `extra`
/// appended (a `[matrix]`, a `[gate]`).
fn census_audit(dir: &Path, name: &str, estimate_protected: &str, seed: u64, extra: &str) -> PathBuf {
    let text = format!(
        "[pipeline]\nname = \"sweep-test\"\nseed = {seed}\n\n{}\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 20\nsamples = 200\nprotected = {estimate_protected}\n\n[stages.check]\nkind = \"check\"\nmodel = \"model\"\nsplit = \"test\"\n\n{extra}",
        common::census_data_stage(),
        common::bundled("models/census.onnx")
    );
    common::write(dir, name, &text)
}

/// The matrix used below: 2 protected attributes × 3 seeds = 6 combinations, best by the highest
/// estimated rate, and a gate.
const MATRIX: &str = "[matrix]\n\"estimate.protected\" = [[\"gender\"], [\"race\"]]\npipeline.seed = [1, 2, 3]\nbest = \"max estimate.rate\"\n\n[gate]\nconditions = [\"estimate.rate < 0.5\"]\n";

/// `v` without the figures that measure time (`elapsed_s`, `model_time_s`, `per_second`, …: they
/// differ between any two runs).
fn timeless(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !(k.contains("elapsed") || k.contains("per_second") || k.contains("time")))
                .map(|(k, v)| (k.clone(), timeless(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(timeless).collect()),
        other => other.clone(),
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// Every file under `dir`, relative, sorted.
fn files(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out
}

/// Two result folders hold the same files, the same JSON figures (timings aside) and the same
/// CSV tables, byte for byte.
fn assert_same_result(a: &Path, b: &Path) {
    let (fa, fb) = (files(a), files(b));
    assert_eq!(fa, fb, "{} and {} hold different files", a.display(), b.display());
    for f in &fa {
        match f.extension().and_then(|e| e.to_str()) {
            Some("json") => assert_eq!(timeless(&read_json(&a.join(f))), timeless(&read_json(&b.join(f))), "{}", f.display()),
            Some("csv") => assert_eq!(std::fs::read(a.join(f)).unwrap(), std::fs::read(b.join(f)).unwrap(), "{}", f.display()),
            _ => {}
        }
    }
}

fn run_ok(args: &[&str]) -> String {
    let (ok, stdout, stderr) = common::fairpipe(args);
    assert!(ok, "fairpipe {args:?} failed:\n{stdout}\n{stderr}");
    stdout
}

/// Run `pipeline` as `n` shards into `dir/part-K` and merge them into `dir/merged`.
fn shard_and_merge(pipeline: &Path, dir: &Path, n: usize) -> PathBuf {
    let mut parts = Vec::new();
    for k in 0..n {
        let part = dir.join(format!("part-{k}"));
        run_ok(&["run", pipeline.to_str().unwrap(), "--out", part.to_str().unwrap(), "--quiet", "--shard", &format!("{k}/{n}")]);
        parts.push(part);
    }
    let merged = dir.join("merged");
    let mut args = vec!["merge".to_string()];
    args.extend(parts.iter().map(|p| p.to_string_lossy().into_owned()));
    args.extend(["--out".to_string(), merged.to_string_lossy().into_owned()]);
    run_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    merged
}

#[test]
fn a_matrix_runs_each_combination_as_written_out_by_hand_and_picks_the_best() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = census_audit(dir.path(), "sweep.toml", "[\"gender\"]", 42, MATRIX);
    let out = dir.path().join("out");
    let stdout = run_ok(&["run", sweep.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(stdout.contains("6 combinations"), "{stdout}");
    let summary = read_json(&out.join("summary.json"));
    let names: Vec<&str> = summary["combinations"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "00_protected=gender_seed=1",
            "01_protected=gender_seed=2",
            "02_protected=gender_seed=3",
            "03_protected=race_seed=1",
            "04_protected=race_seed=2",
            "05_protected=race_seed=3"
        ]
    );
    // Combination 04 is the pipeline with `protected = ["race"]` and seed 2, written by hand.
    let by_hand = census_audit(dir.path(), "race2.toml", "[\"race\"]", 2, "[gate]\nconditions = [\"estimate.rate < 0.5\"]\n");
    let hand = common::run_pipeline(&by_hand, &dir.path().join("hand"), &[]);
    let combo = read_json(&out.join("04_protected=race_seed=2/summary.json"));
    assert_eq!(combo["seed"], 2);
    assert_eq!(timeless(&combo["stages"]), timeless(&hand["stages"]));
    assert_eq!(combo["gate"], hand["gate"]);
    for f in ["estimate.csv", "check.csv", "report.html"] {
        assert!(out.join("04_protected=race_seed=2").join(f).is_file(), "{f}");
    }
    // The comparison: one row per combination with its figures; the best is the highest rate.
    let csv = std::fs::read_to_string(out.join("matrix.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header,
        [
            "combination",
            "seed",
            "estimate.protected",
            "pipeline.seed",
            "model.accuracy_test",
            "estimate.rate",
            "estimate.ci95_low",
            "estimate.ci95_high",
            "check.discriminatory",
            "gate.passed"
        ]
    );
    let rows: Vec<Vec<String>> = csv.lines().skip(1).map(|l| l.split(',').map(str::to_string).collect()).collect();
    assert_eq!(rows.len(), 6);
    let rate_col = header.iter().position(|h| *h == "estimate.rate").unwrap();
    let rate_of = |row: &Vec<String>| row[rate_col].parse::<f64>().unwrap();
    for (row, name) in rows.iter().zip(&names) {
        let own = read_json(&out.join(name).join("summary.json"));
        assert_eq!(rate_of(row), own["stages"]["estimate"]["rate"].as_f64().unwrap(), "{name}");
        assert_eq!(
            row[header.iter().position(|h| *h == "estimate.ci95_high").unwrap()].parse::<f64>().unwrap(),
            own["stages"]["estimate"]["ci95"][1].as_f64().unwrap()
        );
    }
    let highest = rows.iter().max_by(|a, b| rate_of(a).total_cmp(&rate_of(b))).unwrap();
    assert_eq!(summary["matrix"]["best_combination"].as_str(), Some(highest[0].as_str()));
    // Race and gender give different rates: the sweep really changed the audited attribute.
    assert_ne!(rate_of(&rows[0]), rate_of(&rows[3]));
    assert_eq!(summary["gate"]["passed"], true);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Comparison across the matrix") && html.contains(&format!("<b>{}</b>", highest[0])), "best named in the report");
    assert!(html.contains("href=\"04_protected=race_seed=2/report.html\""));
    let matrix_json = read_json(&out.join("matrix.json"));
    assert_eq!(matrix_json, summary["combinations"]);
}

#[test]
fn jobs_and_shards_merge_to_the_unsharded_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = census_audit(dir.path(), "sweep.toml", "[\"gender\"]", 42, MATRIX);
    let one = dir.path().join("jobs1");
    run_ok(&["run", sweep.to_str().unwrap(), "--out", one.to_str().unwrap(), "--quiet"]);
    let two = dir.path().join("jobs2");
    run_ok(&["run", sweep.to_str().unwrap(), "--out", two.to_str().unwrap(), "--quiet", "--jobs", "2"]);
    assert_same_result(&one, &two);
    for n in [1, 2, 4] {
        let d = dir.path().join(format!("n{n}"));
        let merged = shard_and_merge(&sweep, &d, n);
        assert_same_result(&one, &merged);
        // Shard K holds the units K, K+N, …: 6 units over 4 shards are 2, 2, 1, 1.
        let sizes: Vec<usize> =
            (0..n).map(|k| read_json(&d.join(format!("part-{k}/manifest.json")))["units_here"].as_array().unwrap().len()).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 6);
        assert_eq!(sizes[0], 6usize.div_ceil(n));
    }
}

#[test]
fn bundled_pipelines_shard_and_merge_to_the_unsharded_run() {
    for name in ["census-estimate.toml", "census-maft.toml"] {
        let dir = tempfile::tempdir().unwrap();
        let pipeline = PathBuf::from(common::bundled(name));
        let plain = common::bundled_run(&pipeline);
        for n in [1, 2, 4] {
            let merged = shard_and_merge(&pipeline, &dir.path().join(format!("n{n}")), n);
            assert_same_result(plain.out.path(), &merged);
        }
    }
}

#[test]
fn the_shard_can_come_from_a_kubernetes_indexed_job_environment() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = census_audit(dir.path(), "sweep.toml", "[\"gender\"]", 42, MATRIX);
    let part = dir.path().join("part");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", sweep.to_str().unwrap(), "--out", part.to_str().unwrap(), "--quiet", "--shard", "env"])
        .env("JOB_COMPLETION_INDEX", "2")
        .env("FAIRPIPE_SHARD_COUNT", "4")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let manifest = read_json(&part.join("manifest.json"));
    assert_eq!(manifest["shard"], serde_json::json!({"index": 2, "count": 4}));
    assert_eq!(manifest["units_here"], serde_json::json!(["02_protected=gender_seed=3"]));
    assert_eq!(manifest["sweep"]["seed"], 42);
    assert_eq!(manifest["sweep"]["fairpipe_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(manifest["sweep"]["pipeline_hash"].as_str().map(str::len), Some(16));
    assert_eq!(manifest["sweep"]["units"].as_array().map(Vec::len), Some(6));
    // Without the count the run is refused, naming the variable.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", sweep.to_str().unwrap(), "--out", part.to_str().unwrap(), "--shard", "env"])
        .env("JOB_COMPLETION_INDEX", "2")
        .env_remove("FAIRPIPE_SHARD_COUNT")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("FAIRPIPE_SHARD_COUNT is not set"));
}

/// `fairpipe merge PARTS --out merged`, which must fail and write nothing: its stderr.
fn refused_merge(parts: &[&str], merged: &str) -> String {
    let mut args = vec!["merge"];
    args.extend_from_slice(parts);
    args.extend(["--out", merged]);
    let (ok, _, stderr) = common::fairpipe(&args);
    assert!(!ok, "merge {parts:?} passed");
    assert!(!Path::new(merged).exists(), "a refused merge writes nothing");
    stderr
}

#[test]
fn merging_refuses_missing_duplicated_and_foreign_parts() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = census_audit(
        dir.path(),
        "sweep.toml",
        "[\"gender\"]",
        42,
        "[matrix]\n\"estimate.protected\" = [[\"gender\"], [\"race\"], [\"age\"]]\n",
    );
    let part = |k: usize, extra: &[&str]| {
        let p = dir.path().join(format!("p{k}{}", extra.join("")));
        let mut args = vec!["run", sweep.to_str().unwrap(), "--out", p.to_str().unwrap(), "--quiet"];
        let shard = format!("{k}/2");
        args.extend(["--shard", shard.as_str()]);
        args.extend_from_slice(extra);
        run_ok(&args);
        p.to_string_lossy().into_owned()
    };
    let (p0, p1) = (part(0, &[]), part(1, &[]));
    let merged = dir.path().join("merged").to_string_lossy().into_owned();
    let merge = |parts: &[&str]| refused_merge(parts, &merged);
    let e = merge(&[&p0]);
    assert!(
        e.contains("do not cover the run's 3 units exactly once") && e.contains("unit `01_protected=race` is missing (shard 1/2 runs it"),
        "{e}"
    );
    let e = merge(&[&p0, &p1, &p0]);
    assert!(e.contains("unit `00_protected=gender` is duplicated") && e.contains("unit `02_protected=age` is duplicated"), "{e}");
    let other_seed = part(1, &["--seed", "7"]);
    let e = merge(&[&p0, &other_seed]);
    assert!(e.contains("does not belong with") && e.contains("the seed differs (7 here, 42 in"), "{e}");
    let plain = dir.path().join("plain");
    common::run_pipeline(&census_audit(dir.path(), "plain.toml", "[\"gender\"]", 42, ""), &plain, &[]);
    let e = merge(&[&p0, plain.to_str().unwrap()]);
    assert!(e.contains("manifest.json: cannot read") && e.contains("not a part written by `fairpipe run --shard`"), "{e}");
    // The right parts merge.
    run_ok(&["merge", &p1, &p0, "--out", &merged]);
    assert_eq!(read_json(&Path::new(&merged).join("summary.json"))["matrix"]["combinations"], 3);
}

#[test]
fn a_bad_matrix_is_reported_at_its_place_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = census_audit(
        dir.path(),
        "bad.toml",
        "[\"gender\"]",
        42,
        "[matrix]\n\"estimat.trials\" = [1]\n\"estimate.trails\" = [1]\n\"estimate.samples\" = [100, \"many\"]\n\"pipeline.seed\" = 3\n",
    );
    let (ok, _, stderr) = common::fairpipe(&["validate", sweep.to_str().unwrap()]);
    assert!(!ok);
    let file = sweep.display().to_string();
    // The matrix starts after the pipeline text: find its lines.
    let text = std::fs::read_to_string(&sweep).unwrap();
    let line_of = |needle: &str| text.lines().position(|l| l.starts_with(needle)).unwrap() + 1;
    assert!(stderr.contains(&format!("{file}:{}:1: [matrix] `estimat.trials`: no stage `estimat`", line_of("\"estimat."))), "{stderr}");
    assert!(stderr.contains("did you mean `estimate`"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{file}:{}:1: [matrix] `estimate.trails`: stage `estimate` (estimate) has no key `trails`",
            line_of("\"estimate.trails")
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{file}:{}:19: [matrix] `pipeline.seed` must list the values", line_of("\"pipeline.seed"))),
        "{stderr}"
    );
    // A value of the wrong type is reported by the stage, at the value in [matrix].
    let sweep = census_audit(dir.path(), "bad2.toml", "[\"gender\"]", 42, "[matrix]\n\"estimate.samples\" = [100, \"many\"]\n");
    let (ok, _, stderr) = common::fairpipe(&["validate", sweep.to_str().unwrap()]);
    assert!(!ok);
    let text = std::fs::read_to_string(&sweep).unwrap();
    let line = text.lines().position(|l| l.starts_with("\"estimate.samples")).unwrap() + 1;
    assert!(
        stderr.contains(&format!("{}:{line}:28: stage `estimate`: `samples` must be an integer, found a string", sweep.display())),
        "{stderr}"
    );
    assert!(stderr.contains("1 problem(s)"), "reported once: {stderr}");
    // A good one validates, naming the combinations.
    let good = census_audit(dir.path(), "good.toml", "[\"gender\"]", 42, MATRIX);
    let stdout = run_ok(&["validate", good.to_str().unwrap()]);
    assert!(stdout.contains("6 matrix combinations"), "{stdout}");
}

/// A census audit whose search splits into seed blocks: k-means seeds, MAFT over `units = 4`
/// blocks, verify, an estimate in 5 blocks of trials and group metrics over the verified cases'
/// model.
fn pieces_pipeline(dir: &Path) -> PathBuf {
    let text = format!(
        "[pipeline]\nname = \"pieces\"\nseed = 5\n\n{}\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n\n[stages.seeds]\nkind = \"cluster\"\ndata = \"data\"\nk = 4\nseeds = 200\n\n[stages.search]\nkind = \"generate\"\nmodel = \"model\"\nseeds = \"seeds\"\nplugin = \"maft\"\nparams = {{ global_num = 20, local_num = 100 }}\nunits = 4\n\n[stages.verified]\nkind = \"verify\"\ncases = \"search\"\n\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 20\nsamples = 300\nunits = 5\n\n[stages.metrics]\nkind = \"group_metrics\"\nmodel = \"model\"\n",
        common::census_data_stage(),
        common::bundled("models/census.onnx")
    );
    common::write(dir, "pieces.toml", &text)
}

#[test]
fn a_search_split_into_seed_blocks_merges_to_the_unsharded_run_however_the_blocks_are_grouped() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = pieces_pipeline(dir.path());
    let plain = dir.path().join("plain");
    let summary = common::run_pipeline(&pipeline, &plain, &[]);
    let search = &summary["stages"]["search"];
    assert_eq!(search["units"], 4, "{search}");
    assert!(search["duplicates_dropped"].is_u64(), "{search}");
    assert!(summary["stages"]["verified"]["discriminatory"].as_u64().unwrap() > 0, "{}", summary["stages"]["verified"]);
    for n in [2, 3, 9] {
        let merged = shard_and_merge(&pipeline, &dir.path().join(format!("n{n}")), n);
        assert_same_result(&plain, &merged);
    }
    // 4 search blocks and 5 estimate blocks: 9 units, dealt round robin.
    let manifest = read_json(&dir.path().join("n2/part-1/manifest.json"));
    let here: Vec<&str> = manifest["units_here"].as_array().unwrap().iter().map(|u| u.as_str().unwrap()).collect();
    assert_eq!(here, ["run/search/1", "run/search/3", "run/estimate/1", "run/estimate/3"]);
    // One block is not the same search as four: the split is part of the pipeline, not of the
    // grouping.
    let whole = common::write(dir.path(), "whole.toml", &std::fs::read_to_string(&pipeline).unwrap().replace("units = 4\n", ""));
    let whole_summary = common::run_pipeline(&whole, &dir.path().join("whole"), &[]);
    assert_ne!(timeless(&whole_summary["stages"]["search"]), timeless(search));
    assert_eq!(
        timeless(&whole_summary["stages"]["estimate"]),
        timeless(&summary["stages"]["estimate"]),
        "the estimate does not depend on its blocks"
    );
    // More blocks than seeds is refused, naming the most there can be.
    let text = std::fs::read_to_string(&pipeline).unwrap().replace("units = 4\n", "units = 500\n");
    let too_many = common::write(dir.path(), "too-many.toml", &text);
    let e = common::run_failing(&too_many, &dir.path().join("too-many"));
    assert!(e.contains("`units` = 500, but the search's seed rows number only 200; lower `units` to at most 200"), "{e}");
    assert!(e.contains("(pipeline: the key `units` is at ") && e.contains("too-many.toml:"), "{e}");
}

#[test]
fn merging_pieces_refuses_missing_pieces_and_a_stage_that_differs_in_the_merge() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = PathBuf::from(common::bundled("census-estimate.toml"));
    let parts: Vec<String> = (0..2)
        .map(|k| {
            let part = dir.path().join(format!("part-{k}"));
            run_ok(&["run", pipeline.to_str().unwrap(), "--out", part.to_str().unwrap(), "--quiet", "--shard", &format!("{k}/2")]);
            part.to_string_lossy().into_owned()
        })
        .collect();
    let merged = dir.path().join("merged").to_string_lossy().into_owned();
    let refused = |parts: &[&str]| refused_merge(parts, &merged);
    let e = refused(&[&parts[0]]);
    assert!(
        e.contains("do not cover the run's 16 units exactly once") && e.contains("unit `run/estimate/1` is missing (shard 1/2 runs it"),
        "{e}"
    );
    // A piece computed from another model than the merge's: its recorded upstream figures differ.
    let piece = Path::new(&parts[1]).join("run/pieces/estimate.3.json");
    let mut file = read_json(&piece);
    let accuracy = file["upstream"]["model"]["accuracy_test"].as_f64().unwrap();
    file["upstream"]["model"]["accuracy_test"] = serde_json::json!(accuracy - 0.01);
    std::fs::write(&piece, serde_json::to_string(&file).unwrap()).unwrap();
    let e = refused(&[&parts[0], &parts[1]]);
    assert!(
        e.contains("stage `model` did not give the same result in the shards and in the merge") && e.contains("`accuracy_test`"),
        "{e}"
    );
    assert!(e.contains("estimate.3.json"), "{e}");
    // A piece whose counts were tampered with no longer covers its trials.
    file["upstream"]["model"]["accuracy_test"] = serde_json::json!(accuracy);
    file["result"]["counts"].as_array_mut().unwrap().pop();
    std::fs::write(&piece, serde_json::to_string(&file).unwrap()).unwrap();
    let e = refused(&[&parts[0], &parts[1]]);
    assert!(e.contains("piece 3 of the estimate should hold trials 75..100"), "{e}");
}

#[test]
fn a_group_axis_changes_a_model_its_data_and_its_attribute_together() {
    let dir = tempfile::tempdir().unwrap();
    let credit = format!(
        "{{ name = \"credit-age\", \"data.path\" = \"{}\", \"data.label\" = \"label_CREDITRATING_eq_1\", \"data.protected\" = [\"AgeInYears\"], \"model.path\" = \"{}\" }}",
        common::bundled("data/credit.csv"),
        common::bundled("models/credit.onnx")
    );
    // The census group brings census's category codes and favourable label; credit has neither.
    let census_race = format!(
        "{{ name = \"census-race\", \"data.protected\" = [\"race\"], \"data.codes\" = \"{}\", \"data.favourable\" = \">50K\" }}",
        common::bundled("data/census.codes.toml")
    );
    let matrix = format!("[matrix]\naudit = [{census_race}, {credit}]\npipeline.seed = [1, 2]\n");
    let sweep = census_audit(dir.path(), "group.toml", "[\"gender\"]", 42, &matrix.replace("estimate.protected", ""));
    // The estimate audits the load stage's attribute here; the base data stage leaves codes and
    // favourable to the groups.
    let sweep_text = std::fs::read_to_string(&sweep)
        .unwrap()
        .replace("protected = [\"gender\"]\n\n[stages.check]", "\n[stages.check]")
        .lines()
        .filter(|line| !line.starts_with("codes = ") && !line.starts_with("favourable = "))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&sweep, sweep_text).unwrap();
    let out = dir.path().join("out");
    run_ok(&["run", sweep.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet", "--jobs", "2"]);
    let summary = read_json(&out.join("summary.json"));
    let names: Vec<&str> = summary["combinations"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["00_audit=census-race_seed=1", "01_audit=census-race_seed=2", "02_audit=credit-age_seed=1", "03_audit=credit-age_seed=2"]
    );
    assert_eq!(summary["combinations"][2]["values"]["audit"], "credit-age");
    // Combination 03 is the credit pipeline written out by hand, seed 2.
    let by_hand = common::write(
        dir.path(),
        "credit.toml",
        &format!(
            "[pipeline]\nname = \"sweep-test\"\nseed = 2\n\n[stages.data]\nkind = \"load\"\npath = \"{}\"\nlabel = \"label_CREDITRATING_eq_1\"\nprotected = [\"AgeInYears\"]\ndrop = [\"row\"]\nsplit_column = \"split\"\n\n[stages.model]\nkind = \"load_model\"\ndata = \"data\"\npath = \"{}\"\n\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 20\nsamples = 200\n\n[stages.check]\nkind = \"check\"\nmodel = \"model\"\nsplit = \"test\"\n",
            common::bundled("data/credit.csv"),
            common::bundled("models/credit.onnx")
        ),
    );
    let hand = common::run_pipeline(&by_hand, &dir.path().join("hand"), &[]);
    let combo = read_json(&out.join("03_audit=credit-age_seed=2/summary.json"));
    assert_eq!(timeless(&combo["stages"]), timeless(&hand["stages"]));
    let census = read_json(&out.join("00_audit=census-race_seed=1/summary.json"));
    assert_ne!(census["stages"]["model"]["accuracy_test"], combo["stages"]["model"]["accuracy_test"], "another model");
    // A key set by the group and by an axis of its own is refused at validation.
    let clash = common::write(
        dir.path(),
        "clash.toml",
        &std::fs::read_to_string(&sweep).unwrap().replace("pipeline.seed = [1, 2]", "\"data.protected\" = [[\"age\"]]"),
    );
    let (ok, _, stderr) = common::fairpipe(&["validate", clash.to_str().unwrap()]);
    assert!(!ok && stderr.contains("`data.protected` is set by both `audit` and `data.protected`"), "{stderr}");
}

/// A search split into blocks shares `max_queries` out exactly (the blocks' shares add up to it,
/// so the whole asks no more than it), and refuses more blocks than the budget has rows, where a
/// block's share of 0 would read as no limit.
#[test]
fn a_split_search_shares_max_queries_out_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(pieces_pipeline(dir.path())).unwrap();
    let budgeted = common::write(dir.path(), "budget.toml", &text.replace("units = 4\n", "units = 4\nmax_queries = 10003\n"));
    let summary = common::run_pipeline(&budgeted, &dir.path().join("budget"), &[]);
    let search = &summary["stages"]["search"];
    let asked = search["queries_asked"].as_u64().unwrap();
    assert!(asked > 9_000 && asked <= 10_003, "{search}");
    let text = text.replace("units = 4\n", "units = 4\nmax_queries = 3\n");
    let too_small = common::write(dir.path(), "too-small.toml", &text);
    let e = common::run_failing(&too_small, &dir.path().join("too-small"));
    assert!(e.contains("`units` = 4, but the rows of `max_queries` number only 3; lower `units` to at most 3"), "{e}");
}
