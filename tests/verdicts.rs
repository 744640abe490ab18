//! The verdicts against models whose flip rate is planted: a program model (`command`) that
//! favours `sex = 1` by `bonus` points of a score, so that exactly the rows whose score lies in
//! [50 − bonus, 50) change decision with sex. On a grid of scores 0–99 × sex × race that is
//! `bonus`% of the rows, counted here row by row from the formula, not from fairpipe; race is
//! ignored by the model. A 15% flip rate must read SEVERE, 3% NOTABLE, 0% OK (the default
//! thresholds: 10% and 1%), in `summary.json`, in the terminal before the stages and at the top of
//! the report; the thresholds are settable under `[pipeline.verdict]` and refused with their
//! location when wrong.

use std::path::Path;

use crate::common::{self, write};

/// Favourable when score + bonus · sex ≥ 50 (probabilities 0.9 / 0.1), race ignored.
const PROGRAM: &str = r#"
import json, sys
bonus = float(sys.argv[1])
for line in sys.stdin:
    batch = json.loads(line)
    score, sex = batch["columns"].index("score"), batch["columns"].index("sex")
    out = [[0.1, 0.9] if r[score] + bonus * r[sex] >= 50 else [0.9, 0.1] for r in batch["data"]]
    print(json.dumps({"predict_proba": out}), flush=True)
"#;

/// The rows: every score 0–99 for each sex and race, labelled by score ≥ 50.
fn rows() -> Vec<(i32, i32, i32)> {
    (0..100).flat_map(|score| (0..2).flat_map(move |sex| (0..3).map(move |race| (score, sex, race)))).collect()
}

/// The planted flip rate, counted row by row from the formula.
fn planted_rate(bonus: i32) -> f64 {
    let decide = |score: i32, sex: i32| score + bonus * sex >= 50;
    let rows = rows();
    let flipped = rows.iter().filter(|(score, sex, _)| decide(*score, *sex) != decide(*score, 1 - sex)).count();
    flipped as f64 / rows.len() as f64
}

/// A pipeline over the planted model with `bonus` (and `extra` in `[pipeline]`) in `dir`: a check
/// changing sex alone, a check changing sex and race together, and the group metrics.
fn pipeline(dir: &Path, bonus: i32, extra: &str) -> std::path::PathBuf {
    let mut csv = String::from("score,sex,race,y\n");
    for (score, sex, race) in rows() {
        csv.push_str(&format!("{score},{sex},{race},{}\n", i32::from(score >= 50)));
    }
    write(dir, "data.csv", &csv);
    let program = write(dir, "planted.py", PROGRAM);
    let text = format!(
        "[pipeline]\nname = \"planted-{bonus}\"\nseed = 1\n{extra}\n\
         [stages.data]\nkind = \"load\"\npath = \"data.csv\"\nlabel = \"y\"\nprotected = [\"sex\", \"race\"]\n\n\
         [stages.model]\nkind = \"load_model\"\ndata = \"data\"\ncommand = [\"python3\", \"{program}\", \"{bonus}\"]\n\n\
         [stages.flips]\nkind = \"check\"\nmodel = \"model\"\nsplit = \"all\"\nprotected = [\"sex\"]\n\n\
         [stages.flips_both]\nkind = \"check\"\nmodel = \"model\"\nsplit = \"all\"\n\n\
         [stages.metrics]\nkind = \"group_metrics\"\nmodel = \"model\"\nbootstrap = 0\n",
        program = program.display()
    );
    write(dir, "pipeline.toml", &text)
}

/// Run `pipeline` through the CLI (not quiet); returns its stdout and summary.json.
fn run(pipeline: &Path, out: &Path) -> (String, serde_json::Value) {
    let (ok, stdout, stderr) = common::fairpipe(&["run", pipeline.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(ok, "{stdout}\n{stderr}");
    (stdout, serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap())
}

/// The verdict on `attribute` ("sex", or "sex + race") in summary.json.
fn verdict<'s>(summary: &'s serde_json::Value, attribute: &str) -> &'s serde_json::Value {
    summary["verdicts"]["attributes"]
        .as_array()
        .expect("verdicts")
        .iter()
        .find(|v| v["attribute"] == attribute)
        .unwrap_or_else(|| panic!("no verdict on {attribute}: {}", summary["verdicts"]))
}

#[test]
fn a_planted_flip_rate_is_graded_by_its_size_in_the_summary_the_terminal_and_the_report() {
    for (bonus, grade, word) in [(15, "severe", "SEVERE"), (3, "notable", "NOTABLE"), (0, "ok", "OK")] {
        let rate = planted_rate(bonus);
        assert!((rate - bonus as f64 / 100.0).abs() < 1e-12, "the grid plants {bonus}%: {rate}");
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let (stdout, summary) = run(&pipeline(dir.path(), bonus, ""), &out);
        // fairpipe's check measures the planted rate exactly, on sex alone and with race.
        assert_eq!(summary["stages"]["flips"]["rate"].as_f64(), Some(rate), "bonus {bonus}");
        assert_eq!(summary["stages"]["flips"]["protected"], serde_json::json!(["sex"]));
        assert_eq!(summary["stages"]["flips_both"]["rate"].as_f64(), Some(rate), "race is ignored by the model");
        assert_eq!(summary["stages"]["flips_both"]["protected"], serde_json::json!(["sex", "race"]));

        let sex = verdict(&summary, "sex");
        assert_eq!(sex["severity"], grade, "bonus {bonus}: {sex}");
        assert_eq!(sex["flips"][0]["stage"], "flips");
        assert_eq!(sex["flips"][0]["rate"].as_f64(), Some(rate));
        // The group rates: sex = 1 is selected at (50 + bonus)%, sex = 0 at 50%.
        let impact = 50.0 / (50.0 + bonus as f64);
        let measured = sex["impact"]["impact_ratio"].as_f64().unwrap();
        assert!((measured - impact).abs() < 1e-12, "{measured} vs {impact}");
        if bonus > 0 {
            // With no bonus both sexes are selected alike: either may be the reference.
            assert_eq!(sex["impact"]["reference"], "1");
        }
        assert_eq!(sex["impact"]["severity"], if impact < 0.8 { "severe" } else { "ok" });
        // Race: no flip of its own, selected equally.
        let race = verdict(&summary, "race");
        assert_eq!(race["severity"], "ok", "{race}");
        assert_eq!(race["impact"]["impact_ratio"].as_f64(), Some(1.0));
        // The check that changed both: a verdict of its own, graded as sex's.
        let both = verdict(&summary, "sex + race");
        assert_eq!(both["severity"], grade, "{both}");
        assert_eq!(both["together"], serde_json::json!(["sex", "race"]));

        // The terminal opens with the verdicts, before the stages.
        let verdict_at =
            stdout.find("verdict (flip rate ≥ 10% severe, ≥ 1% notable; impact ratio < 0.8 fails, < 0.9 notable):").expect(&stdout);
        let sex_line = stdout.lines().find(|l| l.contains(" sex: ")).expect(&stdout);
        assert!(sex_line.trim_start().starts_with(word), "{sex_line}");
        assert!(sex_line.contains(&format!("{:.2}%", 100.0 * rate)), "{sex_line}");
        assert!(verdict_at < stdout.find("stages:").expect(&stdout), "{stdout}");

        // The report opens with the same verdicts, graded the same.
        let html = std::fs::read_to_string(out.join("report.html")).unwrap();
        let top = &html[html.find("<section id=\"verdict\">").expect("the verdict section")
            ..html.find("<section id=\"summary\">").expect("the summary")];
        let li = top.split("<li").find(|l| l.contains("</span> sex: ")).unwrap_or_else(|| panic!("{top}"));
        assert!(li.starts_with(&format!(" class=\"{grade}\"><span class=\"tag\">{word}</span>")), "{li}");
        assert!(li.contains("<b>Next:</b>"), "{li}");
    }
}

#[test]
fn the_thresholds_are_set_under_pipeline_verdict_and_refused_with_their_place_when_wrong() {
    // 3% flips: notable by default, severe when severe starts at 2%.
    let dir = tempfile::tempdir().unwrap();
    let (stdout, summary) = run(&pipeline(dir.path(), 3, "[pipeline.verdict]\nflip_severe = 0.02\n"), &dir.path().join("out"));
    assert_eq!(verdict(&summary, "sex")["severity"], "severe");
    assert_eq!(summary["verdicts"]["thresholds"]["flip_severe"].as_f64(), Some(0.02));
    assert!(stdout.contains("verdict (flip rate ≥ 2% severe, ≥ 1% notable;"), "{stdout}");
    // A share out of range, and an unknown key, located.
    let dir = tempfile::tempdir().unwrap();
    let path = pipeline(dir.path(), 3, "[pipeline.verdict]\nflip_severe = 2\nflip_sever = 0.1\n");
    let (ok, stdout, stderr) = common::fairpipe(&["validate", path.to_str().unwrap()]);
    assert!(!ok, "{stdout}");
    assert!(stderr.contains("pipeline.toml:5:15") && stderr.contains("`flip_severe` must be a share in (0, 1], found 2"), "{stderr}");
    assert!(stderr.contains("pipeline.toml:6:1") && stderr.contains("did you mean `flip_severe`"), "{stderr}");
}
