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
