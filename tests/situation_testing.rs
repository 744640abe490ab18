//! Situation testing (Luong, Ruggieri and Turini, KDD 2011) on decision logs whose discrimination is
//! known by construction: applicants with years of experience, an education and a test score; a
//! merit from them; men advanced at merit ≥ 50, women at merit ≥ 50 + a planted band. A woman not
//! advanced whose merit is ≥ 50 was discriminated against (a man like her advanced); the rest were
//! not. The audit's listed applicants are held to that truth as recall and precision, and a log
//! with no band lists almost no one.

use std::collections::BTreeSet;

use crate::common;
use common::read_csv;

/// One applicant of a generated log.
struct Applicant {
    id: usize,
    female: bool,
    advanced: bool,
    /// Not advanced, though a man of the same merit would have been.
    discriminated: bool,
}

/// A log of `n` applicants (a fixed seed) where women need `band` more merit than men; written
/// to `dir/log.csv`.
fn planted_log(dir: &std::path::Path, n: usize, band: f64) -> Vec<Applicant> {
    // A 64-bit LCG (Knuth's MMIX constants): the log is the same on every machine.
    let mut state: u64 = 0x5eed_2011;
    let mut next = |m: u64| {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % m
    };
    let education = ["HS", "BA", "MA", "PhD"];
    let mut csv = String::from("applicant_id,sex,years_experience,education,test_score,advanced\n");
    let mut truth = Vec::new();
    for id in 1..=n {
        let female = next(2) == 0;
        let years = next(21);
        let edu = next(4) as usize;
        let score = next(101);
        let merit = 2.0 * years as f64 + 8.0 * edu as f64 + 0.4 * score as f64;
        let as_man = merit >= 50.0;
        let advanced = if female { merit >= 50.0 + band } else { as_man };
        csv.push_str(&format!(
            "{id},{},{years},{},{score},{}\n",
            if female { "F" } else { "M" },
            education[edu],
            if advanced { "Yes" } else { "No" }
        ));
        truth.push(Applicant { id, female, advanced, discriminated: female && !advanced && as_man });
    }
    common::write(dir, "log.csv", &csv);
    truth
}

/// The pipeline auditing `log.csv` with situation testing at `t`.
fn pipeline(dir: &std::path::Path, t: f64) -> std::path::PathBuf {
    common::write(
        dir,
        "situation.toml",
        &format!(
            "[pipeline]\nname = \"situation\"\n\n[stages.log]\nkind = \"load\"\npath = \"log.csv\"\nprotected = [\"sex\"]\n\n\
             [stages.audit]\nkind = \"bias_audit\"\ndata = \"log\"\nsex = \"sex\"\ncolumn = \"advanced\"\n\
             selected = \"Yes\"\nnot_selected = \"No\"\ncategories.sex = {{ M = \"Male\", F = \"Female\" }}\n\
             qualifications = [\"years_experience\", \"education\", \"test_score\"]\napplicant_id = \"applicant_id\"\n\
             situation_k = 16\nsituation_t = {t}\n"
        ),
    )
}

/// The ids the audit lists, and its figures for women against men.
fn listed(out: &std::path::Path, summary: &serde_json::Value) -> (BTreeSet<usize>, serde_json::Value) {
    let rows = read_csv(&out.join("audit_situation.csv"));
    let ids = rows.iter().map(|r| r["applicant_id"].parse().unwrap()).collect();
    let tests = summary["stages"]["audit"]["situation_testing"].as_array().expect("situation_testing in summary.json");
    assert_eq!(tests.len(), 1, "one comparison: Female against Male");
    (ids, tests[0].clone())
}

#[test]
fn situation_testing_finds_the_applicants_a_planted_log_discriminated_against() {
    let dir = tempfile::tempdir().unwrap();
    let truth = planted_log(dir.path(), 3000, 12.0);
    let discriminated: BTreeSet<usize> = truth.iter().filter(|a| a.discriminated).map(|a| a.id).collect();
    let female = truth.iter().filter(|a| a.female).count();
    let rejected = truth.iter().filter(|a| a.female && !a.advanced).count();
    let mut before: Option<(f64, usize)> = None;
    // From the strictest gap to the default's: more of the discriminated found, more listed.
    for t in [0.5, 0.3, 0.1] {
        let out = dir.path().join(format!("out-{t}"));
        let summary = common::run_pipeline(&pipeline(dir.path(), t), &out, &[]);
        let (ids, women) = listed(&out, &summary);
        assert_eq!(women["category"], "Female");
        assert_eq!(women["reference"], "Male", "the most advanced category is the reference");
        assert_eq!(women["count"], female);
        assert_eq!(women["tested"], rejected, "every woman not advanced is tested");
        assert_eq!(women["listed"], ids.len());
        assert!(ids.iter().all(|id| !truth[id - 1].advanced && truth[id - 1].female), "only women not advanced are listed");
        let found = ids.intersection(&discriminated).count() as f64;
        let recall = found / discriminated.len() as f64;
        let precision = found / ids.len() as f64;
        eprintln!(
            "situation testing, k = 16, t = {t}, 3,000 applicants: {} discriminated by construction, {} listed, recall {recall:.3}, precision {precision:.3}",
            discriminated.len(),
            ids.len()
        );
        if t == 0.5 {
            assert!(recall >= 0.8, "recall {recall}");
            assert!(precision >= 0.8, "precision {precision}");
        }
        if let Some((recall_before, listed_before)) = before {
            assert!(recall >= recall_before && ids.len() >= listed_before, "a smaller t lists a superset");
        }
        before = Some((recall, ids.len()));
        // The share listed and its interval, from the counts.
        let share = women["share"].as_f64().unwrap();
        assert!((share - ids.len() as f64 / rejected as f64).abs() < 1e-12);
        let ci = women["ci95"].as_array().unwrap();
        assert!(ci[0].as_f64().unwrap() < share && share < ci[1].as_f64().unwrap());
        // The page says it, beside the rules.
        let page = std::fs::read_to_string(out.join("audit.html")).unwrap();
        assert!(
            page.contains("<h2>Situation testing</h2>") && page.contains("Listed: Female against Male"),
            "the page shows situation testing"
        );
    }
}

#[test]
fn a_log_without_discrimination_lists_almost_no_one() {
    let dir = tempfile::tempdir().unwrap();
    planted_log(dir.path(), 3000, 0.0);
    for (t, most) in [(0.5, 0.02), (0.3, 0.03), (0.1, 0.1)] {
        let out = dir.path().join(format!("out-{t}"));
        let summary = common::run_pipeline(&pipeline(dir.path(), t), &out, &[]);
        let (ids, women) = listed(&out, &summary);
        let share = women["share"].as_f64().unwrap();
        eprintln!(
            "situation testing on the log with no band, t = {t}: {} listed of {} tested (share {share:.4})",
            ids.len(),
            women["tested"]
        );
        assert!(share < most, "share listed on a fair log at t = {t}: {share}");
    }
}

#[test]
fn situation_testing_keys_that_cannot_work_are_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    planted_log(dir.path(), 200, 12.0);
    let path = pipeline(dir.path(), 0.5);
    let text = std::fs::read_to_string(&path).unwrap();
    for (from, to, says) in [
        ("situation_t = 0.5", "situation_t = 1.5", "in (0, 1]"),
        ("[\"years_experience\",", "[\"sex\", \"years_experience\",", "the column `sex` names"),
        ("[\"years_experience\",", "[\"years\",", "not a feature column"),
    ] {
        let bad = common::write(dir.path(), "bad.toml", &text.replace(from, to));
        let (ok, _, stderr) = common::fairpipe(&["validate", bad.to_str().unwrap()]);
        assert!(!ok && stderr.contains(says), "{to}: {stderr}");
    }
    let no_qualifications = text.replace("qualifications = [\"years_experience\", \"education\", \"test_score\"]\n", "");
    let bad = common::write(dir.path(), "bad.toml", &no_qualifications);
    let (ok, _, stderr) = common::fairpipe(&["validate", bad.to_str().unwrap()]);
    assert!(!ok && stderr.contains("runs when `qualifications` names"), "{stderr}");
    let bad = common::write(dir.path(), "bad.toml", &format!("{text}reference = {{ sex = \"Woman\" }}\n"));
    let out = dir.path().join("out");
    let (ok, _, stderr) = common::fairpipe(&["run", bad.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(!ok && stderr.contains("is not a category of the sex table"), "{stderr}");
}
