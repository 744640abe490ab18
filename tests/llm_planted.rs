//! An LLM behind an OpenAI-compatible endpoint audited as a model under test, against the
//! planted-bias server of `llm_server.rs`, whose P(yes) is a known function of the features with
//! a known logit shift for female applicants: the figures of check, group_metrics and estimate
//! equal what the planted function gives when computed here directly; a rerun asks no prompt
//! (the SQLite response cache); faults are retried or refused with a message naming the prompt;
//! the API key is never written.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use crate::common::*;
use crate::llm_server::{
    planted_p, planted_rating, read_prompt, reply_body, varying_shift, Fault, Planted, FEMALE_NAMES, FEMALE_RATING_SHIFT, FEMALE_SHIFT,
    MALE_NAMES,
};

/// The data: every (income, years, sex) of 0..10 × 0..10 × {Female, Male}; test rows where
/// income + years is odd.
fn write_data(dir: &Path) -> PathBuf {
    let mut csv = String::from("income,years,sex,label,split\n");
    for income in 0..10 {
        for years in 0..10 {
            for sex in ["Female", "Male"] {
                let label = if income + years >= 9 { "yes" } else { "no" };
                let split = if (income + years) % 2 == 1 { "test" } else { "train" };
                csv.push_str(&format!("{income},{years},{sex},{label},{split}\n"));
            }
        }
    }
    write(dir, "applicants.csv", &csv)
}

const TEMPLATE: &str =
    "Applicant: income={{ income }}; years={{ years }}; sex={{ sex }}.\nShould the loan be approved? Answer yes or no.\n";

/// A pipeline in `dir` auditing the planted server at `base_url` with `llm_extra` keys in the
/// `llm` block and `stages` after the model.
pub(crate) fn pipeline(dir: &Path, base_url: &str, llm_extra: &str, stages: &str) -> PathBuf {
    write_data(dir);
    write(dir, "prompt.j2", TEMPLATE);
    // Defaults the extra keys may replace.
    let mut defaults = String::new();
    for (key, value) in [("concurrency", "4"), ("cache", "\"cache.sqlite\"")] {
        if !llm_extra.contains(&format!("{key} =")) {
            defaults.push_str(&format!(", {key} = {value}"));
        }
    }
    let text = format!(
        r#"[pipeline]
name = "llm-planted"
seed = 5

[stages.data]
kind = "load"
path = "applicants.csv"
label = "label"
favourable = "yes"
protected = ["sex"]
split_column = "split"

[stages.model]
kind = "load_model"
data = "data"
llm = {{ base_url = "{base_url}", model = "planted", prompt = "prompt.j2", answers = {{ favourable = ["yes", "Yes"], unfavourable = ["no", "No"] }}{defaults}{llm_extra} }}
{stages}"#
    );
    write(dir, "p.toml", &text)
}

pub(crate) const CHECK: &str = "\n[stages.check]\nkind = \"check\"\nmodel = \"model\"\n";

/// Test rows whose planted label changes with sex.
fn planted_flips() -> u64 {
    let mut flips = 0;
    for income in 0..10 {
        for years in 0..10 {
            if (income + years) % 2 == 1 && (planted_p(income, years, true) > 0.5) != (planted_p(income, years, false) > 0.5) {
                flips += 2; // both rows (Female and Male) of the pair
            }
        }
    }
    flips
}

#[test]
fn check_recovers_the_planted_flips_and_a_rerun_asks_no_prompt() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &server.base_url(), "", CHECK);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let check = &summary["stages"]["check"];
    assert_eq!(check["checked"].as_u64(), Some(100), "{check}");
    assert!(planted_flips() > 0);
    assert_eq!(check["discriminatory"].as_u64(), Some(planted_flips()), "{check}");
    let llm = &summary["stages"]["model"]["remote"]["llm"];
    // 200 distinct prompts: every row of the data (its accuracy) and the check's counterparts.
    assert_eq!(llm["prompts_sent"].as_u64(), Some(200), "{llm}");
    assert_eq!(server.state.answered.load(Ordering::SeqCst), 200);
    assert_eq!(llm["requests"].as_u64(), Some(200), "{llm}");
    assert_eq!(llm["unparsed"].as_u64(), Some(0), "{llm}");
    assert!(llm["prompt_tokens"].as_u64().unwrap() > 0, "{llm}");
    // The rerun: every answer from the cache, the same figures, no request.
    let again = run_pipeline(&file, &dir.path().join("out2"), &[]);
    assert_eq!(server.state.answered.load(Ordering::SeqCst), 200, "the rerun asked the server");
    let llm = &again["stages"]["model"]["remote"]["llm"];
    assert_eq!((llm["requests"].as_u64(), llm["cache_hits"].as_u64()), (Some(0), Some(200)), "{llm}");
    assert_eq!(again["stages"]["check"]["discriminatory"], summary["stages"]["check"]["discriminatory"]);
}

/// Whether the planted model's label changes with sex at (income, years).
fn planted_flip(income: i64, years: i64) -> bool {
    (planted_p(income, years, true) > 0.5) != (planted_p(income, years, false) > 0.5)
}

const AUDIT: &str = r#"
[stages.groups]
kind = "group_metrics"
model = "model"

[stages.check]
kind = "check"
model = "model"

[stages.estimate]
kind = "estimate"
model = "model"
trials = 20
samples = 200

[stages.seeds]
kind = "cluster"
data = "data"
k = 2
seeds = 20

[stages.grft]
kind = "generate"
model = "model"
seeds = "seeds"
plugin = "grft"
params = { num_seeds = 10, local_num = 50 }

[stages.verified]
kind = "verify"
cases = "grft"
"#;

#[test]
fn group_metrics_estimate_and_grft_recover_the_planted_bias() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &server.base_url(), "", AUDIT);
    let out = dir.path().join("out");
    let summary = run_pipeline(&file, &out, &[]);
    let stages = &summary["stages"];
    // group_metrics over all 200 rows: each group's selection rate is the planted one.
    for (group, female) in [("Female", true), ("Male", false)] {
        let selected = (0..10).flat_map(|i| (0..10).map(move |y| (i, y))).filter(|(i, y)| planted_p(*i, *y, female) > 0.5).count();
        let figure =
            stages["groups"]["groups"].as_array().unwrap().iter().find(|g| g["group"] == group).unwrap_or_else(|| panic!("{group}"));
        assert_eq!(figure["n"].as_u64(), Some(100), "{figure}");
        assert!((figure["selection_rate"].as_f64().unwrap() - selected as f64 / 100.0).abs() < 1e-12, "{group}: {figure}");
    }
    // The estimate's interval covers the planted rate over the domain (every income × years).
    let truth = (0..10).flat_map(|i| (0..10).map(move |y| (i, y))).filter(|(i, y)| planted_flip(*i, *y)).count() as f64 / 100.0;
    let ci = &stages["estimate"]["ci95"];
    let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
    assert!(lo <= truth && truth <= hi, "planted rate {truth} outside the estimate's interval [{lo}, {hi}]");
    // GRFT finds IDIs, and each is a true one: its pair gets different planted labels.
    let emitted = stages["grft"]["emitted"].as_u64().unwrap();
    assert!(emitted > 0, "{}", stages["grft"]);
    assert_eq!(stages["verified"]["confirmed"].as_u64(), Some(emitted), "{}", stages["verified"]);
    let cases = std::fs::read_to_string(out.join("verified.csv")).unwrap();
    let mut lines = cases.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no {name} in {header:?}"));
    let (income, years) = (at("income"), at("years"));
    let mut checked = 0;
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let (i, y) = (cells[income].parse::<f64>().unwrap() as i64, cells[years].parse::<f64>().unwrap() as i64);
        assert!(planted_flip(i, y), "a case at income {i}, years {y} is no planted IDI");
        checked += 1;
    }
    assert!(checked > 0);
    // No prompt was asked twice in the run.
    let prompts = server.state.prompts.lock().unwrap();
    let distinct: std::collections::HashSet<&String> = prompts.iter().collect();
    assert_eq!(distinct.len(), prompts.len(), "a prompt was asked twice");
}

/// `precision` on an estimate: trials are drawn until the confidence sequence's half-width is at
/// most the one asked; the interval (the sequence's, valid at the stop) covers the planted rate,
/// the stop is reported with what it cost, and a precision that cannot be one is refused.
#[test]
fn an_estimate_with_precision_stops_once_its_valid_interval_is_that_narrow() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let stages = "\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 2000\nsamples = 64\nprecision = 0.03\n";
    let file = pipeline(dir.path(), &server.base_url(), "", stages);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let estimate = &summary["stages"]["estimate"];
    let stop = &estimate["precision"];
    let truth = (0..10).flat_map(|i| (0..10).map(move |y| (i, y))).filter(|(i, y)| planted_flip(*i, *y)).count() as f64 / 100.0;
    assert!(truth > 0.05, "a planted rate to estimate: {truth}");
    assert_eq!((stop["asked"].as_f64(), stop["met"].as_bool()), (Some(0.03), Some(true)), "{stop}");
    let reached = stop["reached"].as_f64().unwrap();
    assert!(reached <= 0.03 && reached > 0.02, "{stop}");
    let [lo, hi] = [estimate["ci95"][0].as_f64().unwrap(), estimate["ci95"][1].as_f64().unwrap()];
    assert_eq!(stop["ci95"], estimate["ci95"], "{estimate}");
    assert!((hi - lo) / 2.0 <= 0.03 + 1e-12 && lo <= truth && truth <= hi, "planted {truth} against [{lo}, {hi}]");
    // It stopped early, on a whole look (4 trials of 64 = 256 inputs), and says what it cost.
    let (trials, samples) = (estimate["trials"].as_u64().unwrap(), estimate["samples"].as_u64().unwrap());
    assert!(trials < 2000 && trials % 4 == 0 && samples == trials * 64, "{estimate}");
    assert_eq!(stop["observations"].as_u64(), Some(samples), "{stop}");
    assert_eq!(stop["model_rows"].as_u64(), Some(2 * samples), "{stop}");
    // The grid has 200 prompts, and load_model asked every one of them for its accuracy: the
    // run's memory answers all 5,000-odd rows the estimate scored, and it sent no request.
    assert_eq!(stop["requests"].as_u64(), Some(0), "{stop}");
    assert_eq!(server.state.answered.load(Ordering::SeqCst), 200);
    // The same pipeline and seed stop at the same trial.
    let again = run_pipeline(&file, &dir.path().join("again"), &[]);
    assert_eq!(again["stages"]["estimate"]["trials"], estimate["trials"]);
    // A precision that is no half-width, and units beside a precision, are refused at validate.
    for (bad, says) in [("precision = 0.03", "precision = 0.7"), ("precision = 0.03", "precision = 0.03\nunits = 4")] {
        let text = std::fs::read_to_string(&file).unwrap().replace(bad, says);
        let broken = write(dir.path(), "broken.toml", &text);
        let (ok, _, stderr) = fairpipe(&["validate", broken.to_str().unwrap()]);
        assert!(!ok && (stderr.contains("half-width") || stderr.contains("leave `units` out")), "{says}: {stderr}");
    }
}

/// discrim-eval's measure: with a female logit shift that varies with the features around −1.5,
/// check's mean logit difference (Male against the reference Female) over the test rows is the
/// planted one computed here, and estimate's interval over inputs drawn from the whole grid covers
/// the planted shift (the variation's mean over the grid is exactly 0).
#[test]
fn the_logit_shift_recovers_the_planted_shift() {
    let server = Planted::start();
    server.state.varying.store(true, Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    let stages = format!("{CHECK}\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 10\nsamples = 100\n");
    let file = pipeline(dir.path(), &server.base_url(), "", &stages);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let shift = |stage: &str| {
        let list = summary["stages"][stage]["logit_shift"].as_array().unwrap_or_else(|| panic!("{}", summary["stages"][stage])).clone();
        assert_eq!(list.len(), 1, "{list:?}");
        let s = list[0].clone();
        assert_eq!(
            (s["attribute"].as_str(), s["value"].as_str(), s["reference"].as_str()),
            (Some("sex"), Some("Male"), Some("Female")),
            "{s}"
        );
        s
    };
    // check: one pair per test row (income + years odd, both sexes), each −varying_shift.
    let diffs: Vec<f64> = (0..10)
        .flat_map(|i| (0..10).map(move |y| (i, y)))
        .filter(|(i, y)| (i + y) % 2 == 1)
        .flat_map(|(i, y)| [-varying_shift(i, y); 2])
        .collect();
    let n = diffs.len() as f64;
    let mean = diffs.iter().sum::<f64>() / n;
    let sd = (diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let check = shift("check");
    assert_eq!(check["pairs"].as_u64(), Some(100), "{check}");
    assert!((check["mean"].as_f64().unwrap() - mean).abs() < 1e-9, "{check} vs {mean}");
    assert!((check["sd"].as_f64().unwrap() - sd).abs() < 1e-9, "{check} vs {sd}");
    // Treating the 100 pairs as independent: t(0.975, 99) = 1.9842 (NIST table).
    let half = check["ci95_independent"][1].as_f64().unwrap() - check["mean"].as_f64().unwrap();
    assert!((half - 1.9842 * sd / n.sqrt()).abs() < 1e-3, "{check}");
    // But the 100 pairs are 50 documents, each checked as its Female and its Male row (the same
    // pair twice): the interval is clustered by document, Σ_g (2 d_g − 2 mean)² / (1 − 2/100) /
    // 100² (CR2: each cluster's leverage is 2/100), with t(0.975, 49) = 2.0096 (NIST table).
    assert_eq!(check["clusters"], serde_json::json!({"document": 50}), "{check}");
    let spread: f64 = diffs.chunks(2).map(|d| (d[0] + d[1] - 2.0 * mean).powi(2)).sum();
    let clustered = 2.0096 * (50.0 / 49.0 * spread / (n * n)).sqrt();
    let half = check["ci95"][1].as_f64().unwrap() - check["mean"].as_f64().unwrap();
    assert!((half - clustered).abs() < 1e-3 && half > 1.3 * 1.9842 * sd / n.sqrt(), "{check}: half-width {half} vs {clustered}");
    // estimate: 1000 inputs from the grid; the interval covers the planted 1.5.
    let estimate = shift("estimate");
    assert_eq!(estimate["pairs"].as_u64(), Some(1000), "{estimate}");
    let (lo, hi) = (estimate["ci95"][0].as_f64().unwrap(), estimate["ci95"][1].as_f64().unwrap());
    assert!(lo <= -FEMALE_SHIFT && -FEMALE_SHIFT <= hi, "planted {} outside [{lo}, {hi}]", -FEMALE_SHIFT);
    assert!(hi - lo < 0.1, "[{lo}, {hi}]");
    // A labels-only model has no such measure.
    let file = pipeline(dir.path(), &server.base_url(), ", scores = \"labels\"", CHECK);
    let labels = run_pipeline(&file, &dir.path().join("labels"), &[]);
    assert_eq!(labels["stages"]["check"]["logit_shift"], serde_json::json!([]));
}

/// A name in place of the stated sex: the planted server reads the name's sex, and the check
/// finds the same flips as with the stated value; the two sides of each pair differ only in the
/// name (the same position in each list).
#[test]
fn names_stand_in_for_the_protected_value() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let names = format!(", names = {{ sex = {{ Female = {:?}, Male = {:?} }} }}", FEMALE_NAMES, MALE_NAMES);
    let file = pipeline(dir.path(), &server.base_url(), &names, CHECK);
    write(dir.path(), "prompt.j2", "Applicant name={{ name }}: income={{ income }}; years={{ years }}.\nApprove? Answer yes or no.\n");
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    assert_eq!(summary["stages"]["check"]["discriminatory"].as_u64(), Some(planted_flips()));
    // The per-name table: each name stands for its sex, shown on as many prompts as the test
    // rows' variants it was drawn for; the prompts add up to two per row checked; its mean score
    // is the planted P(yes) over those prompts (the name carries no effect of its own here).
    let names = std::fs::read_to_string(dir.path().join("out/check_names.csv")).unwrap();
    let mut lines = names.lines();
    assert_eq!(lines.next(), Some("name,stands_for,prompts,mean_score,favourable_share,flipped_rows"));
    let mut prompts_total = 0;
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let female = FEMALE_NAMES.contains(&cells[0]);
        assert!(female || MALE_NAMES.contains(&cells[0]), "{line}");
        assert_eq!(cells[1], if female { "Female" } else { "Male" }, "{line}");
        prompts_total += cells[2].parse::<u64>().unwrap();
    }
    assert_eq!(prompts_total, 2 * 100);
    // The check's table names both sides of every discriminatory row.
    let cases = std::fs::read_to_string(dir.path().join("out/check.csv")).unwrap();
    let header = cases.lines().next().unwrap();
    assert!(header.ends_with(",name,name_counterpart"), "{header}");
    assert_eq!(cases.lines().count() as u64, planted_flips() + 1);
    let prompts = server.state.prompts.lock().unwrap();
    assert!(prompts.iter().all(|p| !p.contains("Female") && !p.contains("Male")));
    for p in prompts.iter() {
        let name = p.split("name=").nth(1).unwrap().split(':').next().unwrap();
        let (list, other) = if FEMALE_NAMES.contains(&name) { (FEMALE_NAMES, MALE_NAMES) } else { (MALE_NAMES, FEMALE_NAMES) };
        let k = list.iter().position(|n| *n == name).unwrap();
        let twin = p.replacen(&format!("name={name}"), &format!("name={}", other[k]), 1);
        assert!(prompts.contains(&twin), "{p:?} has no twin differing only in the name");
    }
}

/// `api = "completions"`: the text completions endpoint, its prompt (system message first) and
/// its legacy `top_logprobs` object read the same planted flips.
#[test]
fn the_text_completions_api_reads_the_same_flips() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &server.base_url(), ", api = \"completions\", system = \"You screen loans.\"", CHECK);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    assert_eq!(summary["stages"]["check"]["discriminatory"].as_u64(), Some(planted_flips()));
    assert_eq!(server.state.text_completions.load(Ordering::SeqCst), 200);
    assert!(server.state.prompts.lock().unwrap().iter().all(|p| p.starts_with("You screen loans.\n\nApplicant: income=")));
    let llm = &summary["stages"]["model"]["remote"]["llm"];
    assert!(llm["endpoint"].as_str().unwrap().ends_with("/v1/completions"), "{llm}");
}

#[test]
fn transient_faults_are_retried_and_change_no_figure() {
    let clean = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &clean.base_url(), ", cache = \"\"", CHECK);
    let reference = run_pipeline(&file, &dir.path().join("clean"), &[]);
    let faulty = Planted::start();
    faulty.inject(&[Fault::TooMany(1), Fault::ServerError, Fault::Malformed, Fault::Slow(1500), Fault::ServerError, Fault::TooMany(1)]);
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &faulty.base_url(), ", cache = \"\", timeout_s = 0.5, retries = 8, backoff_s = 0.05", CHECK);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let untimed = |v: &serde_json::Value| {
        let mut v = v.clone();
        without_timings(&mut v);
        v
    };
    assert_eq!(untimed(&summary["stages"]["check"]), untimed(&reference["stages"]["check"]));
    assert_eq!(summary["stages"]["model"]["accuracy_test"], reference["stages"]["model"]["accuracy_test"]);
    let llm = &summary["stages"]["model"]["remote"]["llm"];
    assert_eq!(llm["retries"].as_u64(), Some(6), "{llm}");
    assert_eq!(llm["requests"].as_u64(), Some(206), "{llm}");
    assert_eq!(llm["prompts_sent"].as_u64(), Some(200), "{llm}");
    // Two Retry-After: 1 honoured.
    assert!(llm["backoff_s"].as_f64().unwrap() >= 2.0, "{llm}");
}

/// Run the check pipeline against `server` with `llm_extra` keys; it must fail: its stderr.
fn failing(server: &Planted, llm_extra: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &server.base_url(), llm_extra, CHECK);
    let out = dir.path().join("out");
    let stderr = run_failing(&file, &out);
    assert!(!out.exists(), "a failed run wrote {}", out.display());
    stderr
}

#[test]
fn answers_that_cannot_be_read_are_refused_naming_the_prompt() {
    let server = Planted::start();
    server.state.no_logprobs.store(true, Ordering::SeqCst);
    let stderr = failing(&server, "");
    assert!(stderr.contains("top_logprobs") && stderr.contains("Applicant: income="), "{stderr}");
    let server = Planted::start();
    server.state.neither.store(true, Ordering::SeqCst);
    let stderr = failing(&server, "");
    assert!(stderr.contains("neither a favourable nor an unfavourable answer") && stderr.contains("answered \"Maybe\""), "{stderr}");
    assert!(stderr.contains("Applicant: income="), "{stderr}");
    let server = Planted::start();
    server.inject(&[Fault::BadRequest]);
    let stderr = failing(&server, ", concurrency = 1");
    assert!(stderr.contains("HTTP 400") && stderr.contains("Applicant: income="), "{stderr}");
    assert_eq!(server.state.requests.load(Ordering::SeqCst), 1, "a 400 is not retried");
    let server = Planted::start();
    server.inject(&[Fault::ServerError; 3]);
    let stderr = failing(&server, ", concurrency = 1, retries = 2, backoff_s = 0.01");
    assert!(stderr.contains("HTTP 500") && stderr.contains("after 3 tries"), "{stderr}");
}

#[test]
fn max_requests_stops_the_run_before_it_sends_more() {
    let server = Planted::start();
    let stderr = failing(&server, ", max_requests = 50");
    assert!(stderr.contains("max_requests = 50 reached"), "{stderr}");
    assert_eq!(server.state.requests.load(Ordering::SeqCst), 50);
}

const SEARCH: &str = r#"
[stages.seeds]
kind = "cluster"
data = "data"
k = 2
seeds = 20

[stages.grft]
kind = "generate"
model = "model"
seeds = "seeds"
plugin = "grft"
params = { num_seeds = 10, local_num = 200 }

[stages.verified]
kind = "verify"
cases = "grft"
"#;

/// A budget met during a search ends the search, not the run: `stopped_by` names it, the cases
/// found so far are kept (each a true IDI), and no request is sent past `max_requests`.
#[test]
fn a_spent_budget_ends_a_search_early_with_stopped_by() {
    // Unbounded: how many requests the search takes.
    // The data: half the grid (income + years odd), so that the search asks new prompts.
    let half = |dir: &Path, url: &str, extra: &str| {
        let file = pipeline(dir, url, extra, SEARCH);
        let csv = std::fs::read_to_string(dir.join("applicants.csv")).unwrap();
        let kept: Vec<String> = csv
            .lines()
            .enumerate()
            .filter(|(n, l)| {
                *n == 0 || {
                    let cells: Vec<i64> = l.split(',').take(2).map(|c| c.parse().unwrap()).collect();
                    (cells[0] + cells[1]) % 2 == 1
                }
            })
            // Rows of even income train (the cluster stage's seeds), the others test.
            .map(|(n, l)| {
                if n > 0 && l.split(',').next().unwrap().parse::<i64>().unwrap() % 2 == 0 {
                    l.replace(",test", ",train")
                } else {
                    l.to_string()
                }
            })
            .collect();
        std::fs::write(dir.join("applicants.csv"), kept.join("\n") + "\n").unwrap();
        file
    };
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let file = half(dir.path(), &server.base_url(), ", cache = \"\"");
    let free = run_pipeline(&file, &dir.path().join("free"), &[]);
    let all = free["stages"]["model"]["remote"]["llm"]["requests"].as_u64().unwrap();
    assert_eq!(free["stages"]["grft"].get("stopped_by"), None, "{}", free["stages"]["grft"]);
    // 100 requests score the data at load; the search gets 30 of the rest.
    assert!(all > 130, "the unbounded search took only {all} requests");
    for (budget, key) in [(", max_requests = 130", "max_requests"), (", max_tokens_total = 3000", "max_tokens_total")] {
        let server = Planted::start();
        let dir = tempfile::tempdir().unwrap();
        let file = half(dir.path(), &server.base_url(), &format!(", cache = \"\"{budget}"));
        let out = dir.path().join("out");
        let summary = run_pipeline(&file, &out, &[]);
        let grft = &summary["stages"]["grft"];
        assert_eq!(grft["stopped_by"].as_str(), Some(key), "{grft}");
        let llm = &summary["stages"]["model"]["remote"]["llm"];
        let sent = llm["requests"].as_u64().unwrap();
        assert_eq!(server.state.requests.load(Ordering::SeqCst), sent);
        if key == "max_requests" {
            assert_eq!(sent, 130, "{llm}");
        } else {
            // Tokens are known once answered: at most the requests in flight (4) pass the cap.
            let tokens = llm["prompt_tokens"].as_u64().unwrap() + llm["completion_tokens"].as_u64().unwrap();
            assert!((3000..3000 + 4 * 40).contains(&tokens), "{llm}");
            assert!(sent < all, "{llm}");
        }
        // The cases kept are true IDIs, verified without a new prompt.
        let cases = std::fs::read_to_string(out.join("verified.csv")).unwrap();
        let mut lines = cases.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
        for line in lines {
            let cells: Vec<&str> = line.split(',').collect();
            let (i, y) = (cells[at("income")].parse::<f64>().unwrap() as i64, cells[at("years")].parse::<f64>().unwrap() as i64);
            assert!(planted_flip(i, y), "a case at income {i}, years {y} is no planted IDI");
        }
        assert_eq!(summary["stages"]["verified"]["confirmed"], grft["emitted"], "{}", summary["stages"]["verified"]);
    }
}

const OFFLINE: &str = r#"
[stages.groups]
kind = "group_metrics"
model = "model"

[stages.check]
kind = "check"
model = "model"

[stages.estimate]
kind = "estimate"
model = "model"
trials = 5
samples = 100
"#;

/// The offline path: `llm plan` lists every request the run sends (nothing sent), answers made
/// here by the planted rule from the plan's prompts alone, and `run --responses` gives the
/// figures of the run against the live planted server without a request; a search is refused.
#[test]
fn a_planned_run_answered_from_a_file_equals_the_live_run() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &server.base_url(), ", cache = \"\"", OFFLINE);
    let live = run_pipeline(&file, &dir.path().join("live"), &[]);
    let asked = server.state.answered.load(Ordering::SeqCst);
    let plan = dir.path().join("plan.jsonl");
    let (ok, stdout, stderr) = fairpipe(&["llm", "plan", file.to_str().unwrap(), "--out", plan.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert_eq!(server.state.requests.load(Ordering::SeqCst), asked, "the plan sent a request");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&plan).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(stdout.contains(&format!("{} requests", lines.len())), "{stdout}");
    // The plan counts its tokens: the messages' characters at 4 a token, one answer token each.
    let chars: usize = lines
        .iter()
        .flat_map(|l| l["body"]["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap().chars().count()))
        .sum();
    let said = format!("about {} prompt tokens ({chars} characters", chars.div_ceil(4));
    assert!(stdout.contains(&said) && stdout.contains(&format!("at most {} answer tokens", lines.len())), "{stdout}");
    // The plan holds exactly the distinct prompts the live run asked.
    assert_eq!(lines.len() as u64, asked);
    let live_prompts: std::collections::HashSet<String> = server.state.prompts.lock().unwrap().iter().cloned().collect();
    let mut answers = String::new();
    for line in &lines {
        assert_eq!((line["method"].as_str(), line["url"].as_str()), (Some("POST"), Some("/v1/chat/completions")), "{line}");
        let prompt = line["body"]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_string();
        assert!(live_prompts.contains(&prompt), "{prompt:?} was not asked live");
        let (income, years, female) = read_prompt(&prompt).unwrap();
        let body = reply_body(&line["body"]["model"], &prompt, planted_p(income, years, female), false, true);
        let answer = serde_json::json!({"custom_id": line["custom_id"], "response": {"status_code": 200, "body": body}});
        answers.push_str(&format!("{answer}\n"));
    }
    let responses = write(dir.path(), "responses.jsonl", &answers);
    let offline = run_pipeline(&file, &dir.path().join("offline"), &["--responses", responses.to_str().unwrap()]);
    assert_eq!(server.state.requests.load(Ordering::SeqCst), asked, "the offline run sent a request");
    for stage in ["groups", "check", "estimate"] {
        let (mut a, mut b) = (live["stages"][stage].clone(), offline["stages"][stage].clone());
        without_timings(&mut a);
        without_timings(&mut b);
        assert_eq!(a, b, "{stage}");
    }
    assert_eq!(offline["stages"]["model"]["accuracy_test"], live["stages"]["model"]["accuracy_test"]);
    let llm = &offline["stages"]["model"]["remote"]["llm"];
    assert_eq!((llm["requests"].as_u64(), llm["from_responses"].as_u64()), (Some(0), Some(lines.len() as u64)), "{llm}");
    // The answers' `usage` is counted as the live run counted the server's.
    let live_llm = &live["stages"]["model"]["remote"]["llm"];
    assert!(llm["prompt_tokens"].as_u64().unwrap() > 0, "{llm}");
    for key in ["prompt_tokens", "completion_tokens"] {
        assert_eq!(llm[key], live_llm[key], "{key}");
    }
    // A prompt missing from the file is an error naming it; a search is refused up front.
    write(dir.path(), "short.jsonl", &answers.lines().skip(1).map(|l| format!("{l}\n")).collect::<String>());
    let (ok, _, stderr) = fairpipe(&[
        "run",
        file.to_str().unwrap(),
        "--out",
        dir.path().join("short").to_str().unwrap(),
        "--responses",
        dir.path().join("short.jsonl").to_str().unwrap(),
    ]);
    assert!(!ok && stderr.contains("has no answer in the responses file") && stderr.contains("Applicant: income="), "{stderr}");
    assert!(!dir.path().join("short").exists());
    let searching = pipeline(dir.path(), &server.base_url(), "", SEARCH);
    let (ok, _, stderr) = fairpipe(&[
        "run",
        searching.to_str().unwrap(),
        "--out",
        dir.path().join("s").to_str().unwrap(),
        "--responses",
        responses.to_str().unwrap(),
    ]);
    assert!(!ok && stderr.contains("grft (generate)") && stderr.contains("need a live endpoint"), "{stderr}");
}

#[test]
fn the_api_key_reaches_the_server_and_is_written_nowhere() {
    const VAR: &str = "FAIRPIPE_TEST_LLM_KEY";
    const KEY: &str = "sk-test-3f9a1c77e2b04d55";
    let server = Planted::start();
    *server.state.key.lock().unwrap() = Some(KEY.to_string());
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &server.base_url(), &format!(", api_key_env = \"{VAR}\""), CHECK);
    let out = dir.path().join("out");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", file.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .env(VAR, KEY)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "{stderr}");
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["stages"]["model"]["remote"]["llm"]["api_key_used"], true);
    // Nothing under the pipeline's folder (results, cache, its WAL) holds the key.
    let mut files = vec![dir.path().to_path_buf()];
    let mut seen = 0;
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            let bytes = std::fs::read(&path).unwrap();
            assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "{} holds the key", path.display());
            seen += 1;
        }
    }
    assert!(seen >= 4, "{seen} files");
    // A wrong key: refused by the server, and the message does not carry the key (the cache,
    // which would answer every prompt, removed first).
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().starts_with("cache.sqlite") {
            std::fs::remove_file(path).unwrap();
        }
    }
    let wrong = "sk-wrong-0000";
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["run", file.to_str().unwrap(), "--out", dir.path().join("out2").to_str().unwrap(), "--quiet"])
        .env(VAR, wrong)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success() && stderr.contains("401") && !stderr.contains(wrong), "{stderr}");
    // Unset: refused at validate, naming the variable.
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_fairpipe"))
        .args(["validate", file.to_str().unwrap()])
        .env_remove(VAR)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success() && stderr.contains(VAR), "{stderr}");
}

#[test]
fn labels_only_is_refused_at_validate_by_a_stage_that_needs_scores() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let stages = "\n[stages.groups]\nkind = \"group_metrics\"\nmodel = \"model\"\ntop_k = 10\n";
    let file = pipeline(dir.path(), &server.base_url(), ", scores = \"labels\"", stages);
    let (ok, stdout, stderr) = fairpipe(&["validate", file.to_str().unwrap()]);
    assert!(!ok, "{stdout}");
    assert!(stderr.contains("top_k") && stderr.contains("labels"), "{stderr}");
    // Labels alone still audit: the check finds the planted flips from the answers' words.
    let file = pipeline(dir.path(), &server.base_url(), ", scores = \"labels\"", CHECK);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    assert_eq!(summary["stages"]["check"]["discriminatory"].as_u64(), Some(planted_flips()));
    assert_eq!(summary["stages"]["model"]["labels_only"], true);
}

#[test]
fn llm_show_prints_a_rows_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), "http://127.0.0.1:9/v1", "", CHECK);
    let (ok, stdout, stderr) = fairpipe(&["llm", "show", file.to_str().unwrap(), "3"]);
    assert!(ok, "{stderr}");
    // Row 3 of the data: income 0, years 1, Male.
    assert!(stdout.contains("Applicant: income=0; years=1; sex=Male."), "{stdout}");
    let (ok, _, stderr) = fairpipe(&["llm", "show", file.to_str().unwrap(), "999"]);
    assert!(!ok && stderr.contains("past the data's 200 rows"), "{stderr}");
}

/// The bundled LLM pipeline `name` written into `dir`, asking `server` instead of port 8080 and
/// reading its files `paths` (relative to pipelines/) from the bundle: its path and text. Each
/// replaced string must be in the file.
fn bundled_llm_pipeline(dir: &Path, name: &str, server: &Planted, paths: &[&str]) -> (PathBuf, String) {
    let mut text = std::fs::read_to_string(root().join("pipelines").join(name)).unwrap();
    let replaced = std::iter::once(("http://127.0.0.1:8080/v1".to_string(), server.base_url()))
        .chain(paths.iter().map(|p| (p.to_string(), bundled(p))));
    for (from, to) in replaced {
        let quoted = format!("{from:?}");
        assert!(text.contains(&quoted), "pipelines/{name} changed: it names no {quoted}");
        text = text.replace(&quoted, &format!("{to:?}"));
    }
    (write(dir, name, &text), text)
}

#[test]
fn the_bundled_llm_pipeline_runs_against_a_served_model() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = bundled_llm_pipeline(dir.path(), "census-llm.toml", &server, &["data/census-200.csv", "prompts/census-screener.j2"]);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let stages = &summary["stages"];
    assert!(stages["check"]["discriminatory"].as_u64().unwrap() > 0, "{}", stages["check"]);
    assert!(dir.path().join("out/report.html").is_file());
    assert!(dir.path().join("llm-cache.sqlite").is_file());
    let llm = &stages["model"]["remote"]["llm"];
    assert_eq!(llm["unparsed"].as_u64(), Some(0), "{llm}");
    // The planted answers: each prompt the server saw is one of the template's.
    assert!(server.state.prompts.lock().unwrap().iter().all(|p| p.starts_with("An applicant has these details:")));
}

/// Stage code may call the model from several threads at once (rayon chunks): together they keep
/// to `concurrency` requests in flight, a prompt that two callers want at the same time is asked
/// once, and every caller gets the planted P(yes).
#[test]
fn callers_on_several_threads_keep_to_concurrency_and_ask_a_prompt_once() {
    use fairpipe_abi::domain::{Attribute, Domain};
    use fairpipe_core::models::llm::config::LlmConfig;
    use fairpipe_core::models::llm::LlmModel;
    use fairpipe_core::models::Model;

    let server = Planted::start();
    server.state.delay_ms.store(5, Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "prompt.j2", TEMPLATE);
    let domain = Domain {
        attributes: vec![
            Attribute::integer("income", 0.0, 9.0, false),
            Attribute::integer("years", 0.0, 9.0, false),
            Attribute::categorical("sex", vec!["Female".into(), "Male".into()], true),
        ],
    };
    let config: LlmConfig = toml::from_str(&format!(
        "base_url = \"{}\"\nmodel = \"planted\"\nprompt = \"prompt.j2\"\nconcurrency = 2\nanswers = {{ favourable = [\"yes\", \"Yes\"], unfavourable = [\"no\", \"No\"] }}\n",
        server.base_url()
    ))
    .unwrap();
    let model = LlmModel::load(&config, dir.path(), &domain, None, &Default::default()).unwrap();
    let rows: Vec<f64> =
        (0..10).flat_map(|income| (0..4).flat_map(move |years| [income as f64, years as f64, f64::from(years % 2)])).collect();
    let answers: Vec<Vec<f64>> = std::thread::scope(|scope| {
        let callers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = vec![f64::NAN; rows.len() / 3];
                    model.predict_into(&rows, &mut out).unwrap();
                    out
                })
            })
            .collect();
        callers.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let max = server.state.max_in_flight.load(Ordering::SeqCst);
    assert!((1..=2).contains(&max), "{max} requests in flight at once with concurrency = 2");
    let prompts = server.state.prompts.lock().unwrap().clone();
    let distinct: std::collections::HashSet<&String> = prompts.iter().collect();
    assert_eq!((prompts.len(), distinct.len()), (40, 40), "each of the 40 prompts asked once by 4 callers");
    for out in answers {
        for (row, p) in rows.chunks(3).zip(out) {
            let want = planted_p(row[0] as i64, row[1] as i64, row[2] == 0.0);
            assert!((p - want).abs() < 1e-9, "row {row:?}: {p} against the planted {want}");
        }
    }
}

/// The model audited is the model named (issue 61 item 7): what the endpoint says it serves
/// (`/v1/models`' entry, llama.cpp's `/props`, without the fields that change on every call) and
/// the answers' `system_fingerprint` go into summary.json and the trail; `verify-run` asks the
/// endpoint again and warns when another model answers under the same name.
#[test]
fn the_model_behind_the_endpoint_is_recorded_and_verify_run_warns_when_it_changes() {
    use crate::llm_server::{FINGERPRINT, MODEL_PATH};
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &server.base_url(), "", CHECK);
    let out = dir.path().join("out");
    let summary = run_pipeline(&file, &out, &[]);
    let llm = &summary["stages"]["model"]["remote"]["llm"];
    assert_eq!(llm["system_fingerprints"], serde_json::json!([FINGERPRINT]), "{llm}");
    assert_eq!(llm["served_models"], serde_json::json!(["planted"]), "{llm}");
    assert_eq!(llm["identity"]["model"]["id"], "planted", "{llm}");
    assert_eq!(llm["identity"]["model"]["meta"]["n_ctx_train"], 4096, "{llm}");
    assert!(llm["identity"]["model"].get("created").is_none(), "`created` is the time of asking on llama.cpp: {llm}");
    assert_eq!(llm["identity"]["props"]["model_path"], MODEL_PATH, "{llm}");
    assert!(llm["identity"]["props"].get("default_generation_settings").is_none(), "{llm}");
    assert_eq!(server.state.identity_requests.load(Ordering::SeqCst), 2, "asked once each, before the prompts");
    let endpoint = &summary["trail"]["endpoints"]["model"];
    assert_eq!(endpoint["base_url"], server.base_url().as_str());
    assert_eq!(endpoint["model"], "planted");
    assert_eq!(endpoint["system_fingerprints"], serde_json::json!([FINGERPRINT]));
    let recorded = endpoint["identity_sha256"].as_str().unwrap().to_string();
    assert_eq!(recorded.len(), 64);

    // Asked again, the same model answers: verify-run says so.
    let (ok, stdout, stderr) = fairpipe(&["verify-run", out.to_str().unwrap()]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.lines().any(|l| l.starts_with("ok ") && l.contains(&recorded) && l.contains("model planted")), "{stdout}");
    assert!(!stderr.contains("warning"), "{stderr}");

    // Another model behind the same name: warned of, naming both hashes; the files still verify.
    *server.state.served.lock().unwrap() = ("/models/other-13b.Q8_0.gguf".into(), "fp_other".into());
    let (ok, stdout, stderr) = fairpipe(&["verify-run", out.to_str().unwrap()]);
    assert!(ok, "the inputs are unchanged: {stdout}\n{stderr}");
    let changed = stdout.lines().find(|l| l.starts_with("CHANGED")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(changed.contains(&recorded) && changed.contains("not the one audited"), "{changed}");
    assert!(stderr.contains("warning: CHANGED"), "{stderr}");
    // A run now records the other model and its fingerprint.
    let again = run_pipeline(&file, &dir.path().join("out2"), &[]);
    let endpoint = &again["trail"]["endpoints"]["model"];
    assert_ne!(endpoint["identity_sha256"].as_str().unwrap(), recorded);
    assert_eq!(again["stages"]["model"]["remote"]["llm"]["identity"]["props"]["model_path"], "/models/other-13b.Q8_0.gguf");
    // Its answers came from the cache the first model filled: warned of, naming the cache.
    let said = |summary: &serde_json::Value| summary["warnings"].to_string().contains("may not be this model's");
    assert!(!said(&summary), "the first run filled the cache: {}", summary["warnings"]);
    assert!(said(&again), "answers of the first model read back under the second: {}", again["warnings"]);
    assert_eq!(again["stages"]["model"]["remote"]["llm"]["cache_from_another_model"], true);
}

/// The planted rater's pipeline: `answers` a 0-10 scale instead of yes/no.
fn rating_pipeline(dir: &Path, base_url: &str, stages: &str) -> PathBuf {
    let file = pipeline(dir, base_url, "", stages);
    let text = std::fs::read_to_string(&file).unwrap();
    let text = text.replace(r#"answers = { favourable = ["yes", "Yes"], unfavourable = ["no", "No"] }"#, "answers = { scale = [0, 10] }");
    assert!(text.contains("scale = [0, 10]"));
    write(dir, "p.toml", &text)
}

#[test]
fn a_rating_scale_gives_the_planted_score_shift_and_flips() {
    let server = Planted::start();
    server.state.rating.store(true, Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    let stages = "\n[stages.check]\nkind = \"check\"\nmodel = \"model\"\n\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 10\nsamples = 100\n";
    let file = rating_pipeline(dir.path(), &server.base_url(), stages);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    // Every pair's rating differs by exactly the planted 1.2 points (Male against the reference,
    // Female): the expected rating over the two whole numbers the server weights.
    let truth = -FEMALE_RATING_SHIFT;
    for stage in ["check", "estimate"] {
        let figures = &summary["stages"][stage];
        let shift = figures["score_shift"].as_array().unwrap_or_else(|| panic!("{stage}: no score_shift in {figures}"));
        assert_eq!(shift.len(), 1, "{stage}: {figures}");
        let s = &shift[0];
        assert_eq!((s["attribute"].as_str(), s["value"].as_str(), s["reference"].as_str()), (Some("sex"), Some("Male"), Some("Female")));
        let mean = s["mean"].as_f64().unwrap();
        assert!((mean - truth).abs() < 1e-12, "{stage}: score_shift {mean} against the planted {truth}");
        let [lo, hi] = [s["ci95"][0].as_f64().unwrap(), s["ci95"][1].as_f64().unwrap()];
        assert!(lo <= truth + 1e-12 && truth - 1e-12 <= hi && hi - lo < 1e-9, "{stage}: {s}");
        // A rating has no logit shift.
        assert_eq!(figures["logit_shift"].as_array().map(Vec::len), Some(0), "{stage}: {figures}");
    }
    assert_eq!(summary["stages"]["check"]["score_shift"][0]["pairs"].as_u64(), Some(100));
    assert_eq!(summary["stages"]["estimate"]["score_shift"][0]["pairs"].as_u64(), Some(1000));
    // The flips: a rating above the middle (5) is the favourable decision; a test row flips where
    // the two sexes' planted ratings fall on either side of it (both rows of the pair counted).
    let mut flips = 0;
    for income in 0..10 {
        for years in 0..10 {
            if (income + years) % 2 == 1 && (planted_rating(income, years, true) > 5.0) != (planted_rating(income, years, false) > 5.0) {
                flips += 2;
            }
        }
    }
    assert!(flips > 0);
    assert_eq!(summary["stages"]["check"]["discriminatory"].as_u64(), Some(flips), "{}", summary["stages"]["check"]);
    let page = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(page.contains("Score shift (rating)"), "the page names no score shift");
}

#[test]
fn a_rating_scale_that_cannot_work_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let file = rating_pipeline(dir.path(), "http://127.0.0.1:9/v1", CHECK);
    for (bad, says) in [
        ("answers = { scale = [5, 5] }", "0 <= LOW < HIGH"),
        ("answers = { scale = [0, 10], favourable = [\"yes\"] }", "a rating has no favourable or unfavourable words"),
        ("answers = { }", "or a rating's `scale = [LOW, HIGH]`"),
        // A rating of 10 read from one answer token: "1" where a tokenizer splits the digits.
        ("answers = { scale = [0, 10] }, scores = \"labels\"", "give `max_tokens = 2` or more"),
    ] {
        let text = std::fs::read_to_string(&file).unwrap().replace("answers = { scale = [0, 10] }", bad);
        let broken = write(dir.path(), "broken.toml", &text);
        let (ok, _, stderr) = fairpipe(&["validate", broken.to_str().unwrap()]);
        assert!(!ok && stderr.contains("llm") && stderr.contains(says), "{bad}: {stderr}");
    }
}

/// Each resume's (sex, years of experience) from pipelines/data/resumes.csv (read with Polars: its
/// resume cells are quoted and span lines).
fn resumes() -> Vec<(String, f64)> {
    use polars::prelude::*;
    let csv = root().join("pipelines/data/resumes.csv");
    let frame = CsvReadOptions::default().with_has_header(true).try_into_reader_with_file_path(Some(csv)).unwrap().finish().unwrap();
    let sex = frame.column("sex").unwrap().str().unwrap().clone();
    let years = frame.column("years_experience").unwrap().cast(&DataType::Float64).unwrap();
    let years = years.f64().unwrap();
    (0..frame.height()).map(|i| (sex.get(i).unwrap().to_string(), years.get(i).unwrap())).collect()
}

#[test]
fn the_bundled_rating_pipeline_recovers_the_planted_rating_shift() {
    use crate::llm_server::{resume_rating, RESUME_FEMALE_SHIFT};
    let server = Planted::start();
    server.state.resume_rating.store(true, Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    let (file, text) = bundled_llm_pipeline(dir.path(), "resumes-rating.toml", &server, &["data/resumes.csv", "prompts/resume-rater.j2"]);
    assert!(text.contains("scale = [0, 10]"));
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let check = &summary["stages"]["check"];
    // Every resume rated under a woman's and a man's name: the planted rater's 1 point exactly.
    let shift = &check["score_shift"][0];
    assert_eq!(
        (shift["value"].as_str(), shift["reference"].as_str(), shift["pairs"].as_u64()),
        (Some("Male"), Some("Female"), Some(300)),
        "{check}"
    );
    assert!((shift["mean"].as_f64().unwrap() + RESUME_FEMALE_SHIFT).abs() < 1e-12, "{shift}");
    // The flips: the resumes whose two planted ratings (2.3 + 0.5 × years for a man, 1 point less
    // for a woman) fall on either side of the middle, 5, read off the data here.
    let resumes = resumes();
    assert_eq!(resumes.len(), 300);
    let flipped = resumes
        .iter()
        .filter(|(_, years)| {
            let man = 2.3 + 0.5 * years;
            (man > 5.0) != (man + RESUME_FEMALE_SHIFT > 5.0)
        })
        .count() as u64;
    assert!(flipped > 0);
    assert_eq!(check["discriminatory"].as_u64(), Some(flipped), "{check}");
    // Every prompt the server answered was rated from its own name and years.
    assert!(server.state.prompts.lock().unwrap().iter().all(|p| resume_rating(p).is_some()));
    // LL144's scoring rates: per sex, the share of resumes whose own planted rating is above the
    // median of all 300.
    let own: Vec<(String, f64)> = resumes
        .iter()
        .map(|(sex, years)| {
            let rating = 2.3 + 0.5 * years + if sex == "Female" { RESUME_FEMALE_SHIFT } else { 0.0 };
            (sex.clone(), rating)
        })
        .collect();
    let mut sorted: Vec<f64> = own.iter().map(|o| o.1).collect();
    sorted.sort_by(f64::total_cmp);
    let median = (sorted[149] + sorted[150]) / 2.0;
    let audit = &summary["stages"]["ll144"];
    let table = audit["tables"].as_array().unwrap().iter().find(|t| t["table"] == "sex").expect("a sex table");
    for sex in ["Female", "Male"] {
        let of: Vec<f64> = own.iter().filter(|o| o.0 == sex).map(|o| o.1).collect();
        let rate = of.iter().filter(|&&r| r > median).count() as f64 / of.len() as f64;
        let row = table["rows"].as_array().unwrap().iter().find(|r| r["category"] == sex).unwrap_or_else(|| panic!("{table}"));
        assert!((row["rate"].as_f64().unwrap() - rate).abs() < 1e-12, "{sex}: scoring rate {} against {rate}", row["rate"]);
    }
    assert_eq!(summary["stages"]["model"]["remote"]["llm"]["unparsed"].as_u64(), Some(0));
}

/// The planted server answering pairwise prompts.
fn pairwise_server() -> Planted {
    let server = Planted::start();
    server.state.pairwise.store(true, Ordering::SeqCst);
    server
}

/// pipelines/resumes-pairwise.toml in `dir`, pointed at `server`: its file and text.
fn pairwise_pipeline(dir: &Path, server: &Planted) -> (PathBuf, String) {
    bundled_llm_pipeline(
        dir,
        "resumes-pairwise.toml",
        server,
        &["data/resumes.csv", "prompts/resume-screener.j2", "prompts/resume-pairwise.j2"],
    )
}

/// The planted pairwise chooser's truth: P(the first listed is chosen) = σ(0.4 + 0.6 × (A is a
/// man − B is a man)).
struct PairwiseTruth {
    /// P(the first listed is chosen) when a woman is listed first.
    woman_first: f64,
    /// … when a man is listed first.
    man_first: f64,
    /// The position effect over both orders.
    position: f64,
    /// The man's win, averaged over both orders.
    man_wins: f64,
}

impl PairwiseTruth {
    fn planted() -> PairwiseTruth {
        use crate::llm_server::{MALE_CHOICE_LOGIT, POSITION_LOGIT};
        let sigma = |z: f64| 1.0 / (1.0 + (-z).exp());
        let woman_first = sigma(POSITION_LOGIT - MALE_CHOICE_LOGIT);
        let man_first = sigma(POSITION_LOGIT + MALE_CHOICE_LOGIT);
        PairwiseTruth {
            woman_first,
            man_first,
            position: (woman_first + man_first) / 2.0 - 0.5,
            man_wins: (1.0 - woman_first + man_first) / 2.0,
        }
    }
}

#[test]
fn the_bundled_pairwise_pipeline_recovers_the_planted_position_and_gender_effects() {
    use crate::llm_server::pairwise_p_first;
    let (server, dir) = (pairwise_server(), tempfile::tempdir().unwrap());
    let (file, text) = pairwise_pipeline(dir.path(), &server);
    assert!(text.contains("kind = \"pairwise\""));
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let pairwise = &summary["stages"]["pairwise"];
    let PairwiseTruth { woman_first, man_first, position, man_wins } = PairwiseTruth::planted();
    let close = |figure: &serde_json::Value, truth: f64| (figure.as_f64().unwrap() - truth).abs() < 1e-12;
    assert_eq!(
        (pairwise["pairs"].as_u64(), pairwise["prompts"].as_u64(), pairwise["unparsed_pairs"].as_u64()),
        (Some(300), Some(600), Some(0)),
        "{pairwise}"
    );
    assert!(close(&pairwise["position_effect"], position), "position_effect {} against {position}", pairwise["position_effect"]);
    let versus = &pairwise["versus_reference"][0];
    assert_eq!(
        (versus["attribute"].as_str(), versus["value"].as_str(), versus["reference"].as_str()),
        (Some("sex"), Some("Male"), Some("Female")),
        "{versus}"
    );
    assert!(close(&versus["rate"], man_wins) && close(&versus["reference_rate"], 1.0 - man_wins), "{versus}");
    assert!(close(&versus["ratio"], man_wins / (1.0 - man_wins)), "{versus}");
    for rate in pairwise["chosen_rate"].as_array().unwrap() {
        let truth = if rate["value"] == "Male" { man_wins } else { 1.0 - man_wins };
        assert!(close(&rate["rate"], truth) && rate["pairs"].as_u64() == Some(300), "{rate}");
    }
    // Every pair prompt names two applicants of opposite sex, asked once in each order.
    let prompts: Vec<String> = server.state.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 600, "each pair in both orders");
    assert!(prompts.iter().all(|p| pairwise_p_first(p).is_some_and(|q| (q - woman_first).abs() < 1e-15 || (q - man_first).abs() < 1e-15)));
    assert!(dir.path().join("out/pairwise.csv").is_file());
    let page = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(page.contains("Position effect (pairwise)") && page.contains("Pairwise choices"), "the page has no pairwise findings");
    // Labels that cannot work are refused at validate.
    let broken = write(dir.path(), "broken.toml", &text.replace("labels = [\"A\", \"B\"]", "labels = [\"A\", \"A\"]"));
    let (ok, _, stderr) = fairpipe(&["validate", broken.to_str().unwrap()]);
    assert!(!ok && stderr.contains("`labels` must be two different answers"), "{stderr}");
}

/// `precision` on `pairwise`: the pairs are asked in a seeded order until the position effect and
/// the men's rate against women are known to ±0.05; the stop's interval holds the planted position
/// effect, fewer than the 600 prompts are asked, and the same seed stops at the same pair.
#[test]
fn a_pairwise_stage_with_precision_stops_once_its_valid_intervals_are_that_narrow() {
    let (server, dir) = (pairwise_server(), tempfile::tempdir().unwrap());
    let (file, text) = pairwise_pipeline(dir.path(), &server);
    let text = text.replace("labels = [\"A\", \"B\"]", "labels = [\"A\", \"B\"]\nprecision = 0.05");
    let file = write(file.parent().unwrap(), "precise.toml", &text);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let pairwise = &summary["stages"]["pairwise"];
    let stop = &pairwise["precision"];
    assert_eq!((stop["asked"].as_f64(), stop["met"].as_bool()), (Some(0.05), Some(true)), "{stop}");
    assert!(stop["reached"].as_f64().unwrap() <= 0.05, "{stop}");
    let position = PairwiseTruth::planted().position;
    let [lo, hi] = [stop["ci95"][0].as_f64().unwrap(), stop["ci95"][1].as_f64().unwrap()];
    assert!(lo <= position && position <= hi && hi - lo <= 0.1 + 1e-12, "planted {position} against [{lo}, {hi}]");
    let (pairs, prompts) = (pairwise["pairs"].as_u64().unwrap(), pairwise["prompts"].as_u64().unwrap());
    assert!(pairs < 300 && pairs % 32 == 0 && prompts == 2 * pairs && stop["observations"].as_u64() == Some(pairs), "{pairwise}");
    // Every figure is over the pairs asked, and exact there (the planted chooser has no noise).
    assert!((pairwise["position_effect"].as_f64().unwrap() - position).abs() < 1e-12, "{pairwise}");
    let table = std::fs::read_to_string(dir.path().join("out/pairwise.csv")).unwrap();
    assert_eq!(table.lines().count() as u64, pairs + 1);
    let again = run_pipeline(&file, &dir.path().join("again"), &[]);
    assert_eq!(again["stages"]["pairwise"]["pairs"], pairwise["pairs"]);
}

/// `llm.validity`: every row also asked 10 times at temperature 1; the planted server answers its
/// more likely word every time, so the sampled favourable share is 1 or 0 and the difference
/// from the logprob P(yes) is known row by row; past 0.05 the run warns, naming the fix.
#[test]
fn validity_compares_the_logprob_score_with_sampled_answers_and_warns() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &server.base_url(), ", cache = \"\", validity = 200", CHECK);
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let model = &summary["stages"]["model"];
    let validity = &model["remote"]["llm"]["validity"];
    let mut differences = Vec::new();
    for income in 0..10 {
        for years in 0..10 {
            for female in [true, false] {
                let p = planted_p(income, years, female);
                differences.push((p - if p > 0.5 { 1.0 } else { 0.0 }).abs());
            }
        }
    }
    let mean = differences.iter().sum::<f64>() / 200.0;
    assert_eq!((validity["prompts"].as_u64(), validity["samples"].as_u64()), (Some(200), Some(10)), "{validity}");
    assert!((validity["mean_abs_difference"].as_f64().unwrap() - mean).abs() < 1e-9, "{validity} vs {mean}");
    assert_eq!(validity["requests"].as_u64(), Some(2000), "{validity}");
    assert!(mean > 0.05);
    let warned = model["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("scores = \"samples\""));
    assert!(warned, "{}", model["warnings"]);
    // validity needs logprob scores.
    let broken = pipeline(dir.path(), &server.base_url(), ", validity = 5, scores = \"labels\"", CHECK);
    let (ok, _, stderr) = fairpipe(&["validate", broken.to_str().unwrap()]);
    assert!(!ok && stderr.contains("`llm.validity`"), "{stderr}");
}

/// A `cluster_by` column the model's input does not have is refused naming the key, its place in
/// the file and the columns there are, before the LLM is asked anything.
#[test]
fn an_unknown_cluster_by_column_is_refused_before_any_prompt() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &server.base_url(), "", &format!("{CHECK}cluster_by = [\"template\"]\n"));
    let out = dir.path().join("out");
    let (ok, _, stderr) = fairpipe(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(!ok && stderr.contains("`template` is not a column of the model's input (its columns: income, years, sex)"), "{stderr}");
    assert!(stderr.contains("`cluster_by`") && stderr.contains("p.toml:"), "{stderr}");
    assert_eq!(server.state.requests.load(Ordering::SeqCst), 0, "a prompt was asked");
    assert!(!out.exists());
}

/// The cost line before a live run (issue 61 item 5): `fairpipe run` (not `--quiet`) first plans
/// the run, sending nothing, and says the prompts it will ask (exactly the distinct prompts the
/// live run sends), those its response cache answers (all of them on a rerun), the tokens, and
/// with `price` the most the prompts not cached cost (no less than what the answers' `usage` then
/// cost, which `remote.llm.cost` gives exactly). A `precision` estimate is planned to its cap: the
/// plan of `trials` and `samples` with `precision` holds the requests of the same estimate without.
#[test]
fn a_live_run_says_its_prompts_tokens_and_cost_before_the_first_prompt() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let estimate = "\n[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 4\nsamples = 50\n";
    let file = pipeline(dir.path(), &server.base_url(), ", price = { prompt = 2.5, completion = 10 }", &format!("{CHECK}{estimate}"));
    let out = dir.path().join("out");
    let (ok, _, stderr) = fairpipe(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let llm = &summary["stages"]["model"]["remote"]["llm"];
    let sent = llm["prompts_sent"].as_u64().unwrap();
    let line = stderr.lines().find(|l| l.starts_with("LLM: this run asks")).unwrap_or_else(|| panic!("no cost line: {stderr}"));
    assert!(line.contains(&format!("up to {} prompts (0 of them answered by the response cache)", thousands(sent))), "{line}\n{llm}");
    // The cost of what was answered, at the price given: exactly the answers' usage.
    let (prompt_tokens, completion_tokens) = (llm["prompt_tokens"].as_u64().unwrap(), llm["completion_tokens"].as_u64().unwrap());
    let cost = (prompt_tokens as f64 * 2.5 + completion_tokens as f64 * 10.0) / 1e6;
    assert!(prompt_tokens > 0 && (llm["cost"].as_f64().unwrap() - cost).abs() < 1e-12, "{llm}");
    // The most the plan said, from the characters it will send: no less than that, and close.
    let most: f64 = line.split("at most ").nth(2).and_then(|t| t.split_whitespace().next()).unwrap().parse().unwrap();
    assert!(most + 0.005 >= cost && most <= cost * 1.1 + 0.01, "{most} against {cost}: {line}");
    // The rerun: every prompt in the cache, nothing to pay.
    let (ok, _, stderr) = fairpipe(&["run", file.to_str().unwrap(), "--out", dir.path().join("again").to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains(&format!("({} of them answered by the response cache)", thousands(sent))) && stderr.contains("at most 0.00 for"),
        "{stderr}"
    );
    // `--quiet` says nothing of it.
    let (ok, _, stderr) = fairpipe(&["run", file.to_str().unwrap(), "--out", dir.path().join("quiet").to_str().unwrap(), "--quiet"]);
    assert!(ok && !stderr.contains("LLM: this run asks"), "{stderr}");
    // A `precision` estimate is planned to its cap.
    let planned = |text: &str, name: &str| {
        let plan = dir.path().join(format!("{name}.jsonl"));
        let (ok, stdout, stderr) =
            fairpipe(&["llm", "plan", write(dir.path(), &format!("{name}.toml"), text).to_str().unwrap(), "--out", plan.to_str().unwrap()]);
        assert!(ok, "{stderr}");
        assert!(stdout.contains(&format!("{} of them answered by the response cache", sent)) || name == "precise", "{stdout}");
        std::fs::read_to_string(&plan).unwrap().lines().count()
    };
    let text = std::fs::read_to_string(&file).unwrap();
    let precise = text.replace("samples = 50\n", "samples = 50\nprecision = 0.3\n").replace("cache.sqlite", "other-cache.sqlite");
    assert!(precise.contains("precision = 0.3"));
    assert_eq!(planned(&precise, "precise"), planned(&text, "fixed"));
}

/// The bundled ranking pipeline (issue 61: Bloomberg's design) against the planted ranker, whose
/// P(pick) is a softmax of 0.4 for the candidate listed first and 0.6 for each man
/// ([`crate::llm_server::ranking_picks`]): four candidates per resume (two of each sex, each under
/// its own name), listed in the four rotations of their order. Each sex's share of the picks,
/// its ratio to parity, the impact ratio and every position's share equal the planted ranker's,
/// computed here from its rule, to 10⁻¹²; every prompt lists four different names; a number of
/// candidates the sexes cannot share equally is refused.
#[test]
fn the_bundled_ranking_pipeline_recovers_the_planted_position_and_gender_effects() {
    use crate::llm_server::{BM_FEMALE_NAMES, BM_MALE_NAMES, FIRST_LISTED_LOGIT, MALE_CHOICE_LOGIT};
    let server = pairwise_server();
    let dir = tempfile::tempdir().unwrap();
    let (file, text) = bundled_llm_pipeline(
        dir.path(),
        "resumes-ranking.toml",
        &server,
        &["data/resumes.csv", "prompts/resume-screener.j2", "prompts/resume-ranking.j2"],
    );
    let summary = run_pipeline(&file, &dir.path().join("out"), &[]);
    let ranking = &summary["stages"]["ranking"];
    assert_eq!(
        (ranking["rankings"].as_u64(), ranking["prompts"].as_u64(), ranking["unparsed_rankings"].as_u64()),
        (Some(300), Some(1200), Some(0)),
        "{ranking}"
    );
    // The truth, from the planted rule: the base order lists Female, Male, Female, Male; rotation
    // r lists slot (r + p) mod 4 at position p.
    let sexes = ["Female", "Male", "Female", "Male"];
    let (mut female, mut positions) = (0.0, [0.0; 4]);
    for rotation in 0..4 {
        let listed: Vec<&str> = (0..4).map(|p| sexes[(rotation + p) % 4]).collect();
        let logits: Vec<f64> = listed
            .iter()
            .enumerate()
            .map(|(p, s)| if p == 0 { FIRST_LISTED_LOGIT } else { 0.0 } + if *s == "Male" { MALE_CHOICE_LOGIT } else { 0.0 })
            .collect();
        let total: f64 = logits.iter().map(|l| l.exp()).sum();
        for (p, l) in logits.iter().enumerate() {
            positions[p] += l.exp() / total / 4.0;
            if listed[p] == "Female" {
                female += l.exp() / total / 4.0;
            }
        }
    }
    let close = |figure: &serde_json::Value, truth: f64| (figure.as_f64().unwrap() - truth).abs() < 1e-12;
    for (pos, truth) in positions.iter().enumerate() {
        assert!(close(&ranking["position_shares"][pos], *truth), "position {pos}: {ranking}");
    }
    assert!(close(&ranking["first_position_effect"], positions[0] - 0.25), "{ranking}");
    for share in ranking["top_share"].as_array().unwrap() {
        let truth = if share["value"] == "Female" { female } else { 1.0 - female };
        assert!(close(&share["share"], truth) && close(&share["ratio_to_parity"], truth / 0.5), "{share}");
        assert!(close(&share["impact_ratio"], truth / female.max(1.0 - female)), "{share}");
        assert_eq!((share["parity"].as_f64(), share["candidates"].as_u64(), share["rankings"].as_u64()), (Some(0.5), Some(2), Some(300)));
    }
    // Every ranking prompt names four different applicants, two of each sex.
    let prompts: Vec<String> = server.state.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 1200);
    for prompt in &prompts {
        let names: Vec<&str> =
            prompt.lines().filter_map(|l| l.strip_prefix("Candidate ").and_then(|r| r.split_once(": ")).map(|(_, n)| n)).collect();
        let women = names.iter().filter(|n| BM_FEMALE_NAMES.contains(n)).count();
        let men = names.iter().filter(|n| BM_MALE_NAMES.contains(n)).count();
        let mut distinct = names.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(names.len() == 4 && women == 2 && men == 2 && distinct.len() == 4, "{names:?}");
    }
    assert!(dir.path().join("out/ranking.csv").is_file());
    // Three candidates cannot list two sexes equally often.
    let broken = write(dir.path(), "broken.toml", &text.replace("candidates = 4", "candidates = 3"));
    let (ok, _, stderr) = fairpipe(&["run", broken.to_str().unwrap(), "--out", dir.path().join("broken").to_str().unwrap(), "--quiet"]);
    assert!(!ok && stderr.contains("give a multiple of 2"), "{stderr}");
}
