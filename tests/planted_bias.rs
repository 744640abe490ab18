//! A model whose discrimination is known by construction: on a small domain the exact rate is
//! computable by enumeration, and both the discrimination check and the estimate must agree with it.

use std::sync::Arc;

use fairpipe_core::check::Checker;
use fairpipe_core::domain::{Attribute, Domain};
use fairpipe_core::error::ModelError;
use fairpipe_core::estimate::estimate;
use fairpipe_core::oracle::{Model, Oracle};

/// Favourable when a + b + 3·sex ≥ 9 (sex = 1 favoured), plus a race penalty when race = 2.
struct Planted;

impl Model for Planted {
    fn n_features(&self) -> usize {
        4
    }
    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        for (o, r) in out.iter_mut().zip(x.chunks_exact(4)) {
            let score = r[0] + r[1] + 3.0 * r[2] - if r[3] == 2.0 { 2.0 } else { 0.0 };
            *o = if score >= 9.0 { 0.9 } else { 0.1 };
        }
        Ok(())
    }
    fn describe(&self) -> String {
        "planted".into()
    }
}

fn attr(name: &str, upper: f64, protected: bool) -> Attribute {
    Attribute::integer(name, 0.0, upper, protected)
}

fn domain() -> Domain {
    Domain { attributes: vec![attr("a", 9.0, false), attr("b", 4.0, false), attr("sex", 1.0, true), attr("race", 2.0, true)] }
}

/// Every point of the domain, and whether it is discriminatory by direct reasoning on the formula.
fn enumerate() -> (Vec<f64>, Vec<bool>) {
    let mut rows = Vec::new();
    let mut truth = Vec::new();
    for a in 0..10 {
        for b in 0..5 {
            for sex in 0..2 {
                for race in 0..3 {
                    rows.extend([a as f64, b as f64, sex as f64, race as f64]);
                    let label = |s: i32, r: i32| a + b + 3 * s - if r == 2 { 2 } else { 0 } >= 9;
                    let own = label(sex, race);
                    let any_other = (0..2).any(|s| (0..3).any(|r| label(s, r) != own));
                    truth.push(any_other);
                }
            }
        }
    }
    (rows, truth)
}

#[test]
fn check_agrees_with_enumeration_row_for_row() {
    let oracle = Oracle::new(Arc::new(Planted));
    let domain = domain();
    let checker = Checker::new(&domain, None);
    assert_eq!(checker.n_variants(), 6);
    let (rows, truth) = enumerate();
    let verdicts = checker.check(&oracle, &rows).unwrap();
    assert_eq!(verdicts.len(), truth.len());
    for (i, (v, t)) in verdicts.iter().zip(&truth).enumerate() {
        assert_eq!(v.discriminatory, *t, "row {i}: {:?}", &rows[i * 4..i * 4 + 4]);
        if v.discriminatory {
            // The reported counterpart really gets the other label.
            assert_ne!(v.p > 0.5, v.p_counterpart > 0.5);
        }
    }
    // Batched: one call per chunk, not one per row.
    assert!(oracle.calls() <= 2, "{} calls", oracle.calls());
    // Each row and its five other variants: the variant that is the row itself is not scored twice.
    assert_eq!(oracle.rows(), 300 * 6);
}

#[test]
fn estimate_interval_contains_the_exact_rate() {
    let (_, truth) = enumerate();
    let exact = truth.iter().filter(|t| **t).count() as f64 / truth.len() as f64;
    assert!(exact > 0.1 && exact < 0.9, "the planted rate {exact} should be informative");
    let oracle = Oracle::new(Arc::new(Planted));
    let domain = domain();
    let checker = Checker::new(&domain, None);
    // A 95% interval misses the truth for about one seed in twenty: over 200 seeds it must cover the
    // exact rate between 90% and 99% of the time (a biased estimator or a too-narrow interval fails).
    let (mut covered, mut covered_wilson) = (0, 0);
    for seed in 0..200 {
        let est = estimate(&oracle, &domain, &checker, 40, 250, seed).unwrap();
        assert_eq!(est.samples, 10_000);
        assert!((est.rate - exact).abs() < 0.05, "seed {seed}: {} vs {exact}", est.rate);
        covered += usize::from(est.ci95[0] <= exact && exact <= est.ci95[1]);
        covered_wilson += usize::from(est.ci95_wilson[0] <= exact && exact <= est.ci95_wilson[1]);
    }
    assert!((180..=198).contains(&covered), "t interval covered the exact rate {covered}/200 times");
    assert!((180..=198).contains(&covered_wilson), "Wilson interval covered the exact rate {covered_wilson}/200 times");
    let big = estimate(&oracle, &domain, &checker, 400, 1000, 1).unwrap();
    assert!((big.rate - exact).abs() < 0.005, "{} vs {exact}", big.rate);
    // The same seed gives the same estimate.
    let a = estimate(&oracle, &domain, &checker, 50, 100, 9).unwrap();
    let b = estimate(&oracle, &domain, &checker, 50, 100, 9).unwrap();
    assert_eq!(a, b);
}

#[test]
fn gamma_threshold_follows_aequitas_definition() {
    let oracle = Oracle::new(Arc::new(Planted));
    let domain = domain();
    // The planted model's probabilities differ by 0.8 across the boundary: γ = 0.5 flags the same
    // rows as labels do, γ = 0.9 flags none.
    let (rows, truth) = enumerate();
    let half = Checker::new(&domain, Some(0.5)).check(&oracle, &rows).unwrap();
    assert!(half.iter().zip(&truth).all(|(v, t)| v.discriminatory == *t));
    let strict = Checker::new(&domain, Some(0.9)).check(&oracle, &rows).unwrap();
    assert!(strict.iter().all(|v| !v.discriminatory));
}
