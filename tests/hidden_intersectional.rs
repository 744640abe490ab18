//! HInter's hidden intersectional flips (issue 61 item 9): a row whose decision changes when two
//! protected attributes change together while neither change alone changes it. Held, row for row
//! over a whole small domain, to the truth read off each planted model's formula: a pure
//! interaction (hidden flips by construction), an additive score (hidden flips exactly where the
//! two effects together cross the threshold and neither alone does) and a model where only one
//! protected attribute acts (none hidden). The `check` stage reports the count on real rows.

use std::sync::Arc;

use fairpipe_core::check::Checker;
use fairpipe_core::domain::{Attribute, Domain};
use fairpipe_core::error::ModelError;
use fairpipe_core::oracle::{Model, Oracle};

use crate::common;

/// A model favourable where `rule(a, sex, race)` holds, over (a, sex, race).
struct Planted(fn(i32, i32, i32) -> bool);

impl Model for Planted {
    fn n_features(&self) -> usize {
        3
    }
    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        for (o, r) in out.iter_mut().zip(x.chunks_exact(3)) {
            *o = if (self.0)(r[0] as i32, r[1] as i32, r[2] as i32) { 0.9 } else { 0.1 };
        }
        Ok(())
    }
    fn describe(&self) -> String {
        "planted".into()
    }
}

fn domain() -> Domain {
    Domain {
        attributes: vec![
            Attribute::integer("a", 0.0, 9.0, false),
            Attribute::integer("sex", 0.0, 1.0, true),
            Attribute::integer("race", 0.0, 2.0, true),
        ],
    }
}

/// Every row of the domain and, read off `rule` directly, whether its flip is hidden: some change
/// of both attributes flips it and no change of one attribute does.
fn truth(rule: fn(i32, i32, i32) -> bool) -> (Vec<f64>, Vec<bool>) {
    let (mut rows, mut hidden) = (Vec::new(), Vec::new());
    for a in 0..10 {
        for sex in 0..2 {
            for race in 0..3 {
                rows.extend([a as f64, sex as f64, race as f64]);
                let own = rule(a, sex, race);
                let sex_alone = rule(a, 1 - sex, race) != own;
                let race_alone = (0..3).filter(|&r| r != race).any(|r| rule(a, sex, r) != own);
                let both = (0..3).filter(|&r| r != race).any(|r| rule(a, 1 - sex, r) != own);
                hidden.push(both && !sex_alone && !race_alone);
            }
        }
    }
    (rows, hidden)
}

/// The hidden flips the checker finds on every row of the domain.
fn found(rule: fn(i32, i32, i32) -> bool, rows: &[f64]) -> Vec<bool> {
    let oracle = Oracle::new(Arc::new(Planted(rule)));
    let checker = Checker::new(&domain(), None);
    let scores = checker.scores(&oracle, rows).unwrap();
    let verdicts = checker.verdicts(&scores);
    let alone = checker.alone_of(&oracle, rows, &scores, &verdicts).unwrap();
    Checker::hidden_intersectional(&verdicts, &alone)
}

/// Unfavourable only for sex 1 and race 2 together.
fn pure_interaction(_a: i32, sex: i32, race: i32) -> bool {
    !(sex == 1 && race == 2)
}

/// A score adding a sex effect and a race effect: favourable at a + 2·[sex = 0] + 2·[race ≠ 2] ≥ 9.
fn additive(a: i32, sex: i32, race: i32) -> bool {
    a + 2 * i32::from(sex == 0) + 2 * i32::from(race != 2) >= 9
}

/// Only sex acts: favourable at a + 3·[sex = 0] ≥ 9.
fn sex_only(a: i32, sex: i32, _race: i32) -> bool {
    a + 3 * i32::from(sex == 0) >= 9
}

#[test]
fn a_pure_interaction_hides_its_flips_from_every_single_attribute_change() {
    let (rows, truth) = truth(pure_interaction);
    let got = found(pure_interaction, &rows);
    assert_eq!(got, truth, "row for row");
    // Sex 0 with race 0 or 1 flips only when both change (to sex 1, race 2): 2 of the 6
    // combinations, whatever `a`.
    assert_eq!(got.iter().filter(|h| **h).count(), 20);
}

#[test]
fn an_additive_score_hides_exactly_the_flips_its_two_effects_make_together() {
    let (rows, truth) = truth(additive);
    let got = found(additive, &rows);
    assert_eq!(got, truth, "row for row");
    // Not 0: a threshold on an additive score hides the flips its two effects make together.
    // Sex 0 with race 0 or 1 scores a + 4; either change alone leaves a + 2, both a: at a = 7, 8
    // neither alone crosses 9, both do (4 rows). Sex 1 with race 2 scores a; either change alone
    // gives a + 2, both a + 4: at a = 5, 6 only both cross (2 rows).
    let hidden = got.iter().filter(|h| **h).count();
    assert_eq!(hidden, 6);
    eprintln!("additive score: {hidden} hidden flips of {} rows", truth.len());
}

#[test]
fn a_model_where_one_attribute_acts_hides_no_flip() {
    let (rows, truth) = truth(sex_only);
    assert!(truth.iter().all(|h| !h));
    assert!(found(sex_only, &rows).iter().all(|h| !h));
}

#[test]
fn the_check_stage_reports_hidden_flips_with_two_protected_attributes() {
    let run = common::bundled_run(&common::root().join("pipelines/adult-train.toml"));
    let check = &run.summary["stages"]["check"];
    let checked = check["checked"].as_u64().unwrap();
    let discriminatory = check["discriminatory"].as_u64().unwrap();
    let hidden = check["hidden_intersectional"].as_u64().expect("hidden_intersectional with sex and race protected");
    let most_alone = check["discriminatory_alone"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).max().unwrap();
    // A hidden flip is a discriminatory row no single attribute flips.
    assert!(hidden + most_alone <= discriminatory, "{check}");
    assert!((check["rate_hidden_intersectional"].as_f64().unwrap() - hidden as f64 / checked as f64).abs() < 1e-15);
    // With one protected attribute nothing is hidden, and the figure is absent.
    let one = common::bundled_run(&common::root().join("pipelines/census-estimate.toml"));
    for (name, stage) in one.summary["stages"].as_object().unwrap() {
        if stage["kind"] == "check" {
            assert!(stage.get("hidden_intersectional").is_none(), "{name}: {stage}");
        }
    }
}

#[test]
fn the_estimate_counts_the_hidden_flips_of_the_inputs_it_draws() {
    use fairpipe_core::estimate::{trial_outcomes, trial_rng, Wanted};
    let domain = domain();
    let oracle = Oracle::new(Arc::new(Planted(pure_interaction)));
    let checker = Checker::new(&domain, None);
    let (trials, per_trial, seed) = (20, 50, 7);
    let wanted = Wanted { alone: true, ..Wanted::default() };
    let o = trial_outcomes(&oracle, &domain, &checker, &wanted, 0..trials, per_trial, seed, &indicatif::ProgressBar::hidden()).unwrap();
    // The same inputs drawn again: under the pure interaction a row's flip is hidden exactly when
    // it has sex 0 and race 0 or 1 (only the change to sex 1 and race 2 together flips it).
    let mut truth = 0;
    for t in 0..trials {
        let rows = domain.sample_rows(&mut trial_rng(seed, t), per_trial);
        truth += rows.chunks_exact(3).filter(|r| r[1] == 0.0 && r[2] != 2.0).count();
    }
    assert!(truth > 0);
    assert_eq!(o.hidden, truth);
}

#[test]
fn the_estimate_stage_reports_hidden_flips_with_two_protected_attributes() {
    let run = common::bundled_run(&common::root().join("pipelines/adult-train.toml"));
    let estimate = &run.summary["stages"]["estimate"];
    let samples = estimate["samples"].as_u64().unwrap();
    let hidden = estimate["hidden_intersectional"].as_u64().expect("hidden_intersectional with sex and race protected");
    let most_alone = estimate["discriminatory_alone"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).max().unwrap();
    assert!(hidden + most_alone <= estimate["discriminatory"].as_u64().unwrap(), "{estimate}");
    assert!((estimate["rate_hidden_intersectional"].as_f64().unwrap() - hidden as f64 / samples as f64).abs() < 1e-15);
}
