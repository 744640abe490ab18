//! `group_metrics` on a model whose group difference is known by construction, and on the
//! bundled COMPAS pipeline.
//!
//! The planted data is the full factorial of sex ∈ {0, 1}, x ∈ 0..=9 and label y ∈ {0, 1}, each
//! combination 10 times (400 rows). The model selects a row when x ≥ 5 for sex = 1 and when x ≥ 7
//! for sex = 0, whatever its label. So by construction, per sex: selection rate 0.5 and 0.3, and
//! since selection is independent of the label, TPR = FPR = selection rate, base rate 0.5, PPV
//! 0.5, accuracy 0.5; Fairlearn's parity summaries are all 0.2 (difference) and 0.6 (ratio), and
//! the predictive parity difference is 0.

use std::sync::Arc;

use fairpipe_core::data::{load_frame, LoadSpec};
use fairpipe_core::error::ModelError;
use fairpipe_core::oracle::{Model, Oracle};
use fairpipe_core::stage::{Artifact, Inputs, ModelArtifact, Stage, StageContext};
use fairpipe_core::stages::group_metrics::{GroupFigure, GroupMetricsConfig, GroupMetricsFigures};
use polars::prelude::*;
use serde_json::json;

use crate::common;

/// Selects x ≥ cut(sex); P(favourable) 0.9 when selected, else 0.1.
struct Planted {
    cut_sex0: f64,
    cut_sex1: f64,
}

impl Model for Planted {
    fn n_features(&self) -> usize {
        2
    }
    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        for (o, r) in out.iter_mut().zip(x.chunks_exact(2)) {
            let cut = if r[0] == 1.0 { self.cut_sex1 } else { self.cut_sex0 };
            *o = if r[1] >= cut { 0.9 } else { 0.1 };
        }
        Ok(())
    }
    fn describe(&self) -> String {
        "planted".into()
    }
}

fn run(model: Planted, config: GroupMetricsConfig) -> GroupMetricsFigures {
    let (mut sex, mut x, mut y) = (Vec::new(), Vec::new(), Vec::new());
    for s in 0..2i64 {
        for v in 0..10i64 {
            for label in 0..2i64 {
                for _ in 0..10 {
                    sex.push(s);
                    x.push(v);
                    y.push(label);
                }
            }
        }
    }
    let frame = DataFrame::new(400, vec![Column::new("sex".into(), sex), Column::new("x".into(), x), Column::new("y".into(), y)]).unwrap();
    let mut spec = LoadSpec::new("planted.csv", "y");
    spec.protected = vec!["sex".into()];
    let data = Arc::new(load_frame(frame, &spec).unwrap());
    let artifact = ModelArtifact { oracle: Oracle::new(Arc::new(model)), data, recipe: None };
    let mut inputs = Inputs::default();
    inputs.by_role.insert("model".into(), Artifact::Model(Arc::new(artifact)));
    let ctx = StageContext::new("metrics", 7);
    let out = config.run(&ctx, &inputs).unwrap();
    // The stage's own typed figures, as the summary keeps them.
    fairpipe_core::stage::summary::Figures::as_any(out.figures.as_ref()).downcast_ref::<GroupMetricsFigures>().unwrap().clone()
}

fn group<'a>(f: &'a GroupMetricsFigures, name: &str) -> &'a GroupFigure {
    f.groups.iter().find(|g| g.group == name).unwrap_or_else(|| panic!("no group {name}"))
}

fn metric(g: &GroupFigure, key: &str) -> f64 {
    g.metrics[key].as_f64().unwrap_or_else(|| panic!("{} has no number {key}", g.group))
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn a_planted_group_difference_is_measured_as_constructed() {
    let config =
        GroupMetricsConfig { split: fairpipe_core::stages::options::Rows::All, reference: json!({"sex": 1}), ..Default::default() };
    let f = run(Planted { cut_sex0: 7.0, cut_sex1: 5.0 }, config);
    assert_eq!(f.rows, 400);
    let (women, men) = (group(&f, "0"), group(&f, "1"));
    assert!(men.reference && !women.reference);
    assert!(near(women.selection_rate, 0.3) && near(men.selection_rate, 0.5));
    for key in ["tpr", "fpr"] {
        assert!(near(metric(women, key), 0.3) && near(metric(men, key), 0.5), "{key}");
        assert!(near(metric(women, &format!("{key}_ratio")), 0.6), "{key}");
        assert!(near(metric(women, &format!("{key}_difference")), -0.2), "{key}");
    }
    for key in ["base_rate", "ppv", "accuracy"] {
        assert!(near(metric(women, key), 0.5) && near(metric(men, key), 0.5), "{key}");
    }
    assert!(near(metric(women, "fnr"), 0.7) && near(metric(women, "tnr"), 0.7));
    // Scores carry no information about the label: AUC 0.5 exactly.
    assert!(near(metric(women, "auc"), 0.5) && near(metric(men, "auc"), 0.5));
    // Wilson interval of 60/200 at z = 1.96 (the textbook formula by hand): [0.2407, 0.3668].
    assert!((women.ci95[0] - 0.2407).abs() < 1e-4 && (women.ci95[1] - 0.3668).abs() < 1e-4, "{:?}", women.ci95);
    let s = &f.parity["sex"];
    for d in [s.demographic_parity_difference, s.equal_opportunity_difference, s.equalized_odds_difference] {
        assert!(near(d, 0.2), "{s:?}");
    }
    for r in [s.demographic_parity_ratio, s.equal_opportunity_ratio, s.equalized_odds_ratio] {
        assert!(near(r, 0.6), "{s:?}");
    }
    assert!(near(s.predictive_parity_difference, 0.0));
    assert_eq!(f.parity_min_count["sex"], *s, "both groups have at least min_count rows");
    assert!(near(f.worst.demographic_parity_ratio, 0.6), "one attribute set: its summaries are the worst");
    // 60/200 against 100/200: z = 4.08, p = 4.5e-5 (pooled two-proportion test), significant after
    // Holm over the three tests (selection rate, TPR, FPR).
    assert!(women.p_value < 1e-4 && women.p_value > 1e-5, "{}", women.p_value);
    assert!(women.significant && f.significant_groups == 1 && f.tests == 3);
    assert_eq!(women.outside_band, vec!["selection_rate", "tpr", "fpr", "fnr", "tnr"]);
    assert!(!women.four_fifths_ok && near(women.impact_ratio, 0.6));
    assert_eq!(f.below_threshold.len(), 1);
}

#[test]
fn no_planted_difference_is_not_significant() {
    let f = run(Planted { cut_sex0: 5.0, cut_sex1: 5.0 }, GroupMetricsConfig::default());
    assert_eq!(f.significant_groups, 0);
    assert!(f.groups.iter().all(|g| !g.significant && g.outside_band.is_empty() && g.four_fifths_ok));
    assert!(near(f.parity["sex"].demographic_parity_difference, 0.0));
}

#[test]
fn groups_under_min_count_are_listed_as_too_small_not_tested() {
    let config = GroupMetricsConfig { min_count: 201, ..Default::default() };
    let f = run(Planted { cut_sex0: 7.0, cut_sex1: 5.0 }, config);
    assert!(f.groups.iter().all(|g| g.too_small && !g.significant && g.p_value.is_nan()));
    assert_eq!(f.tests, 0);
    // Fairlearn's summaries count every group; the gate's figures only groups of min_count rows.
    assert!(near(f.parity["sex"].demographic_parity_difference, 0.2));
    assert!(f.parity_min_count["sex"].demographic_parity_difference.is_nan());
    assert!(f.worst.demographic_parity_difference.is_nan());
}

#[test]
fn top_k_selects_by_score_not_by_threshold() {
    // 100 of 400 rows: the 200 rows scoring 0.9 tie; the first 100 in row order are all sex = 0
    // rows with x ≥ 7 (60 rows) and then sex = 1 rows with x ≥ 5.
    let f = run(Planted { cut_sex0: 7.0, cut_sex1: 5.0 }, GroupMetricsConfig { top_k: Some(100), ..Default::default() });
    assert_eq!(f.selection, "top_k");
    assert!(near(f.selection_rate, 0.25));
    assert!(near(group(&f, "0").selection_rate, 0.3) && near(group(&f, "1").selection_rate, 0.2));
    assert!(near(f.decision_threshold, 0.9));
}

/// The bundled COMPAS pipeline gives every figure the issue lists, for every group.
#[test]
fn compas_groups_carry_every_labelled_figure() {
    let run = common::bundled_run(&common::root().join("pipelines/compas-groups.toml"));
    let m = &run.summary["stages"]["metrics"];
    let groups = m["groups"].as_array().unwrap();
    assert!(groups.len() > 10, "sex, race, age bins and intersections");
    for g in groups {
        for key in ["count", "base_rate", "selection_rate", "tpr", "fpr", "fnr", "tnr", "ppv", "npv", "accuracy", "auc", "calibration"] {
            assert!(g.get(key).is_some(), "{key} missing in {g}");
        }
        for key in ["tpr_ratio", "tpr_difference", "selection_rate_ratio", "p_value", "significant", "reference", "too_small"] {
            assert!(g.get(key).is_some(), "{key} missing in {g}");
        }
    }
    for set in ["sex", "race", "age", "sex × race × age"] {
        assert!(
            m["parity"][set]["equalized_odds_difference"].is_number() || m["parity"][set]["equalized_odds_difference"].is_null(),
            "{set}"
        );
    }
    assert!(m["demographic_parity_ratio"].is_number());
    assert!(run.out.path().join("metrics_sweep.csv").exists());
}
