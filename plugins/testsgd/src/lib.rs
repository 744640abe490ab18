//! `testsgd`: TestSGD (Zhang et al., "TestSGD: Interpretable Testing of Neural Networks Against
//! Subtle Group Discrimination") for structured data — an auditor plugin: it receives the data's
//! rows and reports ranked rule sets, not individual cases.
//!
//! * **Rule sets** (§4.1, Algorithm 1, [`rules`]): per sensitive (protected) feature, rules are
//!   subsets of its values (categorical or few-valued features) or runs of adjacent equal-width bins
//!   (`bins`, K = 10); a rule set has at most one rule per feature and is kept when its support on
//!   the data is at least θ (`theta`, 5%).
//! * **Group fairness score** (§4.2, Algorithm 2, [`score`]): samples satisfying R and ¬R drawn by
//!   perturbing data rows (§4.3), scored in batches, until the margin ≤ `error_thr` (0.05) after at
//!   least `sample_thr` (1000) pairs, at z = 1.96; the score is |φr − φ¬r| with confidence δ²
//!   (Theorem 4.2; 0.9025 at 95%). The favourable label is the data's class 1 (the `load` stage's
//!   `favourable`).
//!
//! Choices where the paper is silent:
//! * `rules = "subsets"` (default) makes every non-empty proper subset of values, and every run of
//!   1 … K−1 adjacent bins, a rule; `rules = "values"` uses single values and single bins, which is
//!   how the paper counts its example (197 rule sets for 2 genders, 5 races, 10 age bins).
//! * A feature is "few-valued" when it is categorical or its grid has at most K points; otherwise
//!   it is binned over its domain bounds.
//! * Each rule set has its own random generator (seeded from the run's seed and its index), so
//!   scoring them in batched rounds gives the same results as scoring them one by one.
//! * The paper filters rule sets on their own support only. A group covering 99.9% of the data is
//!   compared with a complement sampled from a handful of rows, so fairpipe also requires the
//!   complement's support to reach `theta_out` (by default θ itself); `theta_out = 0` is the
//!   paper's filter.
//! * On an integer attribute a bin edge is moved up to the next grid point (`x ≥ 25.8` is `x ≥ 26`).
//! * A rule set whose complement (or itself) has no data row cannot be sampled; it is reported with
//!   0 samples and `converged = false`. `max_samples` caps sampling when `error_thr` is unreachable.
//! * Mitigation (RQ3: retraining on generated samples) belongs to the retraining stage.

pub mod rules;
pub mod score;

use std::time::Instant;

use fairpipe_abi::sdk::{at_least, in_range, Auditor, Host, ParamError, PluginError, PluginParams};
use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::rules::{drop_complements, frequent_rule_sets, RuleShape};
use crate::score::{score_all, ScoreSettings};

/// The TestSGD auditor.
pub struct TestSgd;

/// Parameters of [`TestSgd`] (defaults from the paper).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TestSgdParams {
    /// Support threshold θ of a rule set.
    pub theta: f64,
    /// Support threshold of the complement (negative: `theta`).
    pub theta_out: f64,
    /// Pairs drawn before the margin is first checked.
    pub sample_thr: usize,
    /// Target error margin.
    pub error_thr: f64,
    /// z of the confidence level.
    pub z: f64,
    /// Equal-width bins K of a many-valued feature.
    pub bins: usize,
    /// What a single rule may be.
    pub rules: RuleShape,
    /// Refuse to score more frequent rule sets than this.
    pub max_rule_sets: usize,
    /// Stop sampling a rule set after this many pairs.
    pub max_samples: usize,
    /// Pairs per rule set per batched round after the first.
    pub round: usize,
    /// The top rule sets re-estimated on fresh samples after ranking.
    pub leaders: usize,
}

impl Default for TestSgdParams {
    fn default() -> Self {
        TestSgdParams {
            theta: 0.05,
            theta_out: -1.0,
            sample_thr: 1000,
            error_thr: 0.05,
            z: 1.96,
            bins: 10,
            rules: RuleShape::Subsets,
            max_rule_sets: 100_000,
            max_samples: 100_000,
            round: 64,
            leaders: 10,
        }
    }
}

impl PluginParams for TestSgdParams {
    const DOCS: &'static [(&'static str, &'static str)] = &[
        ("theta", "support threshold θ of a rule set on the data"),
        ("theta_out", "support threshold of the complement ¬R (negative: same as theta; 0: the paper's filter)"),
        ("sample_thr", "pairs drawn before the margin is first checked"),
        ("error_thr", "target error margin of the score"),
        ("z", "z of the confidence level (1.96: 95% per rate, 90.25% for the score)"),
        ("bins", "equal-width bins K of a many-valued feature"),
        ("rules", "rules are value subsets / bin runs (\"subsets\"), or single values / bins (\"values\", the paper's count)"),
        ("max_rule_sets", "refuse to score more frequent rule sets than this (raise theta or use rules = \"values\")"),
        ("max_samples", "stop sampling a rule set after this many pairs"),
        ("round", "pairs per rule set per batched round after the first (does not change results)"),
        (
            "leaders",
            "the top rule sets re-estimated on fresh samples after ranking, so the reported scores are not the winner's curse (0: none)",
        ),
    ];

    fn check(&self) -> Result<(), ParamError> {
        in_range("theta", self.theta, 0.0, 1.0)?;
        in_range("theta_out", self.theta_out, -1.0, 1.0)?;
        at_least("sample_thr", self.sample_thr, 1)?;
        in_range("error_thr", self.error_thr, 1e-6, 1.0)?;
        in_range("z", self.z, 0.0, 10.0)?;
        at_least("bins", self.bins, 2)?;
        at_least("max_rule_sets", self.max_rule_sets, 1)?;
        at_least("max_samples", self.max_samples, 2)?;
        at_least("round", self.round, 1)
    }
}

impl Auditor for TestSgd {
    const NAME: &'static str = "testsgd";
    const DOC: &'static str = "TestSGD (subtle group discrimination): frequent rule sets over the protected attributes, each scored by |P(favourable | R) - P(favourable | not R)| with a statistical error margin.";
    type Params = TestSgdParams;

    fn audit(params: &TestSgdParams, host: &mut Host) -> Result<Value, PluginError> {
        let started = Instant::now();
        if host.n_seeds == 0 {
            return Err(PluginError::InvalidInput("testsgd needs the data's rows".into()));
        }
        let shape = params.rules;
        let sensitive = host.domain.protected_indices();
        let rows = host.seeds.clone();
        let theta = params.theta;
        let theta_out = if params.theta_out < 0.0 { theta } else { params.theta_out };
        let mut enumeration = frequent_rule_sets(&host.domain, &sensitive, &rows, theta, theta_out, params.bins, shape);
        let frequent = enumeration.kept.len();
        let complements = drop_complements(&mut enumeration.kept, &rows, host.domain.width());
        let limit = params.max_rule_sets;
        if enumeration.kept.len() > limit {
            return Err(PluginError::InvalidInput(format!(
                "{} frequent rule sets (of {} generated) exceed max_rule_sets = {limit}; raise theta or use rules = \"values\"",
                enumeration.kept.len(),
                enumeration.generated
            )));
        }
        let settings = ScoreSettings {
            sample_thr: params.sample_thr,
            error_thr: params.error_thr,
            z: params.z,
            round: params.round,
            max_samples: params.max_samples.max(params.sample_thr + 1),
            max_batch_rows: 1 << 17,
        };
        let seed: u64 = host.rng.gen();
        let queries_before = host.queries();
        let (scores, stopped) = score_all(host, &enumeration.kept, &rows, &settings, seed)?;
        // Selection and estimation on separate draws: rank on the first, re-score the leaders on
        // fresh samples (their own seed), so the reported top scores are not the maximum of noise.
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&a, &b| {
            let key = |i: usize| if scores[i].score.is_nan() { -1.0 } else { scores[i].score };
            key(b).total_cmp(&key(a)).then(a.cmp(&b))
        });
        let leaders: Vec<usize> = order.iter().copied().filter(|&i| scores[i].samples > 0).take(params.leaders).collect();
        let leader_sets: Vec<_> = leaders.iter().map(|&i| enumeration.kept[i].clone()).collect();
        let fresh_seed: u64 = host.rng.gen();
        // A run cut short by its budget keeps its ranking scores; the leaders are not re-estimated.
        let (fresh_scores, stopped) =
            if stopped { (Vec::new(), true) } else { score_all(host, &leader_sets, &rows, &settings, fresh_seed)? };
        let mut fresh: Vec<Option<&crate::score::GroupScore>> = vec![None; scores.len()];
        for (&i, f) in leaders.iter().zip(&fresh_scores) {
            fresh[i] = Some(f);
        }
        let z = settings.z;
        let per_rate = confidence_of(z);
        let groups: Vec<Value> = order
            .iter()
            .map(|&i| (i, &enumeration.kept[i], &scores[i]))
            .map(|(i, set, s)| {
                let fresh = fresh[i].map(|f| {
                    json!({
                        "rate_in": nan_to_null(f.rate_in),
                        "rate_out": nan_to_null(f.rate_out),
                        "score": nan_to_null(f.score),
                        "margin": nan_to_null(f.margin),
                        "samples": f.samples,
                        "converged": f.converged,
                    })
                });
                json!({
                    "conditions": set.rules.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
                    "complement": complements[i].as_ref().map(|c| c.rules.iter().map(|r| r.to_json()).collect::<Vec<_>>()),
                    "fresh": fresh,
                    "support": set.support,
                    "rate_in": nan_to_null(s.rate_in),
                    "rate_out": nan_to_null(s.rate_out),
                    "score": nan_to_null(s.score),
                    "margin": if s.margin.is_finite() { json!(s.margin) } else { Value::Null },
                    "samples": s.samples,
                    "converged": s.converged,
                    "confidence": per_rate * per_rate,
                })
            })
            .collect();
        let elapsed = started.elapsed().as_secs_f64();
        Ok(json!({
            "figures": {
                "rule_sets_generated": enumeration.generated as f64,
                "rule_sets_kept": enumeration.kept.len(),
                "rule_sets_frequent": frequent,
                "complements_merged": frequent - enumeration.kept.len(),
                "leaders_reestimated": leaders.len(),
                "rule_sets_per_second": enumeration.kept.len() as f64 / elapsed.max(1e-9),
                "samples": scores.iter().map(|s| s.samples).sum::<usize>() * 2,
                "model_queries": host.queries() - queries_before,
                "confidence": per_rate * per_rate,
                "rule_sets_converged": scores.iter().filter(|s| s.converged).count(),
                "stopped_early": stopped,
            },
            "groups": groups,
        }))
    }
}

fn nan_to_null(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

/// The two-sided normal confidence level of `z` (0.95 for 1.96), via erf.
fn confidence_of(z: f64) -> f64 {
    erf(z / std::f64::consts::SQRT_2)
}

/// Abramowitz–Stegun 7.1.26 (|error| < 1.5e-7), enough for a reported confidence level.
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let y = 1.0 - poly * (-x * x).exp();
    if x >= 0.0 {
        y
    } else {
        -y
    }
}

fairpipe_abi::export_auditor!(TestSgd);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_of_1_96_is_95_percent_and_squared_as_theorem_4_2() {
        assert!((confidence_of(1.96) - 0.95).abs() < 1e-4);
        assert!((confidence_of(1.96).powi(2) - 0.9025).abs() < 2e-4);
    }
}

#[cfg(test)]
mod planted {
    use fairpipe_abi::testing::{planted_domain, MockHost};
    use serde_json::json;

    use super::*;

    /// Favourable exactly when sex = 1: the rule set {sex = 1} has rate 1 inside and 0 outside.
    fn planted() -> MockHost {
        let rows: Vec<f64> = (0..300).flat_map(|i| [f64::from(i % 10), f64::from(u8::from(i % 3 == 0))]).collect();
        MockHost::new(planted_domain(1), |r| if r[1] == 1.0 { 0.8 } else { 0.2 }).with_seeds(rows)
    }

    fairpipe_abi::plugin_tests!(TestSgdParams);

    #[test]
    fn the_planted_group_scores_one() {
        let run = planted().audit::<TestSgd>(json!({})).unwrap();
        assert!(run.cases.is_empty());
        let report = run.report.expect("a report");
        let groups = report["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 1, "sex = 0 and its complement sex = 1, shown once");
        assert_eq!(groups[0]["conditions"][0]["values"], json!([0.0]));
        assert_eq!(groups[0]["complement"][0]["values"], json!([1.0]));
        assert_eq!(report["figures"]["complements_merged"], json!(1));
        for g in groups {
            assert!((g["score"].as_f64().unwrap() - 1.0).abs() < 1e-12, "{g}");
            assert!((g["fresh"]["score"].as_f64().unwrap() - 1.0).abs() < 1e-12, "{g}");
        }
        assert_eq!(report["figures"]["model_queries"].as_u64(), Some(run.rows));
    }

    /// A sensitive attribute with no effect on the model: its one rule set (after merging the
    /// complement) is re-estimated on a fresh draw, another sample of a zero difference.
    #[test]
    fn leaders_are_re_estimated_on_fresh_draws() {
        let rows: Vec<f64> = (0..600).flat_map(|i| [f64::from(i % 10), f64::from(u8::from(i % 3 == 0))]).collect();
        let host = MockHost::new(planted_domain(1), |r| if r[0] >= 5.0 { 0.8 } else { 0.2 }).with_seeds(rows);
        let run = host.audit::<TestSgd>(json!({"leaders": 3})).unwrap();
        let report = run.report.expect("a report");
        let groups = report["groups"].as_array().unwrap();
        let fresh: Vec<f64> = groups.iter().filter_map(|g| g["fresh"]["score"].as_f64()).collect();
        assert_eq!(fresh.len(), 1, "one sensitive attribute with two values: one rule set after merging");
        assert_eq!(report["figures"]["leaders_reestimated"], json!(1));
        // The fresh draw is another sample of the same (zero) difference.
        assert!(fresh[0] < 0.06, "{fresh:?}");
        assert_ne!(groups[0]["fresh"]["score"], groups[0]["score"], "fresh samples, not the same draw");
    }

    #[test]
    fn the_rules_parameter_takes_the_two_shapes_only() {
        assert!(planted().audit::<TestSgd>(json!({"rules": "values"})).is_ok());
        let err = planted().audit::<TestSgd>(json!({"rules": "value"})).unwrap_err();
        assert!(err.to_string().contains("parameter `rules`"), "{err}");
    }
}
