//! Do the clustered intervals hold? The planted server gives every first name its own random
//! effect on the logit (a new draw for each seed), the way a real model reacts to particular
//! names; the audit shows each applicant under one of Bertrand & Mullainathan's 18 names per sex.
//! Over 200 seeded runs the check's 95% `logit_shift` interval, clustered by the names each side
//! shows and the document, must cover the planted shift (the names' effects average 0 over the
//! population of names) in at least 93% of runs; the interval that treats pairs as independent is
//! measured beside (and covers far less: it reads 100 pairs where there are 18 pairs of names).
//! The figures of each run are printed (`--nocapture`) and kept by `scripts/coverage_clustered.sh`.

use std::path::Path;

use crate::common::*;
use crate::llm_server::{Planted, BM_FEMALE_NAMES, BM_MALE_NAMES, FEMALE_SHIFT};

/// Runs of the simulation (the 200).
const RUNS: u64 = 200;

/// The names' random effects' standard deviation on the logit.
const NAME_SD: f64 = 0.5;

/// A pipeline in `dir` checking the planted server's loan decisions on the 50 documents (income,
/// years with income + years odd) of the test rows, each under both sexes, named from B&M's lists
/// (no response cache: every run asks its own server).
fn pipeline(dir: &Path, base_url: &str) -> std::path::PathBuf {
    let names =
        format!(", concurrency = 8, cache = \"\", names = {{ sex = {{ Female = {BM_FEMALE_NAMES:?}, Male = {BM_MALE_NAMES:?} }} }}");
    let file = crate::llm_planted::pipeline(dir, base_url, &names, crate::llm_planted::CHECK);
    write(dir, "prompt.j2", "Applicant name={{ name }}: income={{ income }}; years={{ years }}.\nApprove? Answer yes or no.\n");
    file
}

#[test]
fn clustered_intervals_cover_the_planted_shift_when_every_name_has_its_own_effect() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &server.base_url());
    let truth = -FEMALE_SHIFT; // Male against the reference, Female
    let (mut clustered, mut independent) = (0u64, 0u64);
    let mut widths = (0.0, 0.0);
    for seed in 0..RUNS {
        *server.state.name_effects.lock().unwrap() = Some((seed, NAME_SD));
        let summary = run_pipeline(&file, &dir.path().join(format!("out{seed}")), &[]);
        let _ = std::fs::remove_dir_all(dir.path().join(format!("out{seed}")));
        let shift = &summary["stages"]["check"]["logit_shift"][0];
        let read = |key: &str| [shift[key][0].as_f64().unwrap(), shift[key][1].as_f64().unwrap()];
        let (c, i) = (read("ci95"), read("ci95_independent"));
        assert_eq!(shift["pairs"].as_u64(), Some(100), "{shift}");
        let clusters = &shift["clusters"];
        assert_eq!(clusters["document"].as_u64(), Some(50), "{shift}");
        let names = clusters["names (compared side)"].as_u64().unwrap();
        assert!((12..=18).contains(&names), "{shift}");
        clustered += u64::from(c[0] <= truth && truth <= c[1]);
        independent += u64::from(i[0] <= truth && truth <= i[1]);
        widths.0 += (c[1] - c[0]) / RUNS as f64;
        widths.1 += (i[1] - i[0]) / RUNS as f64;
        println!(
            "coverage-run seed={seed} mean={:.6} ci95=[{:.6},{:.6}] ci95_independent=[{:.6},{:.6}] names={names}",
            shift["mean"].as_f64().unwrap(),
            c[0],
            c[1],
            i[0],
            i[1]
        );
    }
    println!(
        "coverage-summary runs={RUNS} name_sd={NAME_SD} clustered={clustered} independent={independent} mean_width_clustered={:.4} mean_width_independent={:.4}",
        widths.0, widths.1
    );
    assert!(clustered * 100 >= 93 * RUNS, "the clustered interval covered the planted shift in {clustered} of {RUNS} runs");
    // The independent interval is the one that fails here: it must cover clearly less.
    assert!(independent + 20 < clustered, "independent {independent} vs clustered {clustered} of {RUNS}");
}

/// Wilson's 95% interval of a share `p` read off `n` observations (Wilson 1927), written out here
/// beside the engine's.
fn wilson_at(p: f64, n: f64) -> [f64; 2] {
    let z = 1.96_f64; // the engine's z, as Wilson's intervals elsewhere in fairpipe
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
    [centre - half, centre + half]
}

/// The estimate's flip rate over inputs drawn from the domain is clustered by the names their
/// prompts show: 1,000 inputs are a few hundred draws of 18 pairs of names, and a name that moves
/// the model moves every input showing it. The interval is Wilson's at the effective sample size
/// (the inputs over the design effect), the t interval over trials kept as `ci95_independent`;
/// names with effects of their own give a larger design effect than names without; and the same
/// estimate run as 2 shards and merged gives the same figures, bit for bit.
#[test]
fn the_estimates_flip_rate_is_clustered_by_the_names_its_inputs_show() {
    let server = Planted::start();
    let dir = tempfile::tempdir().unwrap();
    let file = pipeline(dir.path(), &server.base_url());
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "[stages.check]\nkind = \"check\"\nmodel = \"model\"\n",
        "[stages.estimate]\nkind = \"estimate\"\nmodel = \"model\"\ntrials = 10\nsamples = 100\nunits = 2\n",
    );
    assert!(text.contains("[stages.estimate]"), "{text}");
    std::fs::write(&file, text).unwrap();
    let mut design_effects = Vec::new();
    for sd in [0.0, 2.0] {
        *server.state.name_effects.lock().unwrap() = Some((11, sd));
        let out = dir.path().join(format!("sd{sd}"));
        let summary = run_pipeline(&file, &out, &[]);
        let estimate = &summary["stages"]["estimate"];
        let names = estimate["clusters"]["names"].as_u64().unwrap_or_else(|| panic!("{estimate}"));
        assert!((12..=18).contains(&names), "{estimate}");
        let d = estimate["design_effect"].as_f64().unwrap();
        assert!(d >= 1.0, "{estimate}");
        let (rate, samples) = (estimate["rate"].as_f64().unwrap(), estimate["samples"].as_f64().unwrap());
        assert_eq!(samples, 1000.0);
        let read = |key: &str| [estimate[key][0].as_f64().unwrap(), estimate[key][1].as_f64().unwrap()];
        let want = wilson_at(rate, samples / d);
        let got = read("ci95");
        assert!((got[0] - want[0]).abs() < 1e-9 && (got[1] - want[1]).abs() < 1e-9, "{estimate}: want {want:?}");
        // The independent interval: t over the 10 trials' rates, t(0.975, 9) = 2.2622 (NIST).
        let rates: Vec<f64> = read_csv(&out.join("estimate.csv")).iter().map(|r| r["rate"].parse().unwrap()).collect();
        assert_eq!(rates.len(), 10);
        let mean = rates.iter().sum::<f64>() / 10.0;
        let sd_trials = (rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / 9.0).sqrt();
        let independent = read("ci95_independent");
        assert!((independent[1] - (mean + 2.2622 * sd_trials / 10f64.sqrt()).min(1.0)).abs() < 1e-4, "{estimate}");
        // Sharded and merged: the same figures.
        let parts: Vec<std::path::PathBuf> = (0..2).map(|k| dir.path().join(format!("sd{sd}-part{k}"))).collect();
        for (k, part) in parts.iter().enumerate() {
            let (ok, _, err) =
                fairpipe(&["run", file.to_str().unwrap(), "--out", part.to_str().unwrap(), "--quiet", "--shard", &format!("{k}/2")]);
            assert!(ok, "{err}");
        }
        let merged = dir.path().join(format!("sd{sd}-merged"));
        let (ok, _, err) = fairpipe(&["merge", parts[0].to_str().unwrap(), parts[1].to_str().unwrap(), "--out", merged.to_str().unwrap()]);
        assert!(ok, "{err}");
        let again: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(merged.join("summary.json")).unwrap()).unwrap();
        for key in ["rate", "ci95", "ci95_independent", "clusters", "design_effect"] {
            assert_eq!(again["stages"]["estimate"][key], estimate[key], "{key}");
        }
        design_effects.push(d);
    }
    assert!(design_effects[1] > design_effects[0] + 0.5, "names with effects of their own cluster the flips: {design_effects:?}");
    // With `precision`, the confidence sequence is read at the effective sample size: its
    // half-width times √(design effect) is what must reach the precision, and the interval
    // reported is the sequence's (`ci95_independent`) widened by that factor about its middle.
    // With names that carry no effect of their own, ±0.2 is reached.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("trials = 10\nsamples = 100\nunits = 2\n", "trials = 400\nsamples = 50\nprecision = 0.2\n");
    std::fs::write(&file, &text).unwrap();
    *server.state.name_effects.lock().unwrap() = Some((11, 0.0));
    let summary = run_pipeline(&file, &dir.path().join("precision"), &[]);
    let estimate = &summary["stages"]["estimate"];
    let stop = &estimate["precision"];
    let d = estimate["design_effect"].as_f64().unwrap_or_else(|| panic!("{estimate}"));
    let read = |key: &str| [estimate[key][0].as_f64().unwrap(), estimate[key][1].as_f64().unwrap()];
    let (sequence, widened) = (read("ci95_independent"), read("ci95"));
    let (middle, half) = ((sequence[0] + sequence[1]) / 2.0, (sequence[1] - sequence[0]) / 2.0);
    let want = [(middle - half * d.sqrt()).max(0.0), (middle + half * d.sqrt()).min(1.0)];
    assert!((widened[0] - want[0]).abs() < 1e-12 && (widened[1] - want[1]).abs() < 1e-12, "{estimate}");
    assert_eq!(stop["ci95"], estimate["ci95"], "{estimate}");
    let reached = stop["reached"].as_f64().unwrap();
    assert!((reached - half * d.sqrt()).abs() < 1e-12 && reached <= 0.2 && stop["met"] == true, "{estimate}");
    assert!(estimate["trials"].as_u64().unwrap() < 400, "{estimate}");
    // Names with large effects of their own: no number of prompts over the same 18 pairs of
    // names narrows the interval to ±0.2, and asking stops once 2,000 inputs show it, unmet,
    // with the floor and a warning that names the fix.
    *server.state.name_effects.lock().unwrap() = Some((11, 4.0));
    let out = dir.path().join("floor");
    let summary = run_pipeline(&file, &out, &[]);
    let estimate = &summary["stages"]["estimate"];
    let stop = &estimate["precision"];
    let floor = stop["cluster_floor"].as_f64().unwrap_or_else(|| panic!("{estimate}"));
    assert!(stop["met"] == false && floor > 0.2 && floor <= stop["reached"].as_f64().unwrap(), "{estimate}");
    let inputs = estimate["samples"].as_u64().unwrap();
    assert!((2_000..2_000 + 256 + 50).contains(&inputs), "stopped at the first look past 2,000 inputs: {estimate}");
    let warnings = summary["warnings"].to_string();
    assert!(warnings.contains("precision = 0.2") && warnings.contains("`names` table"), "{warnings}");
}
