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

use fairpipe_abi::sdk::{Auditor, Description, Host, ParamSpec, ParamType, Params, PluginError};
use rand::Rng;
use serde_json::{json, Value};

use crate::rules::{frequent_rule_sets, RuleShape};
use crate::score::{score_all, ScoreSettings};

/// The TestSGD auditor.
pub struct TestSgd;

impl Auditor for TestSgd {
    const NAME: &'static str = "testsgd";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    fn description() -> Description {
        Description {
            doc: "TestSGD (subtle group discrimination): frequent rule sets over the protected attributes, each scored by |P(favourable | R) - P(favourable | not R)| with a statistical error margin.",
            params: vec![
                ParamSpec { name: "theta", ty: ParamType::Float { min: 0.0, max: 1.0 }, default: json!(0.05), doc: "support threshold θ of a rule set on the data" },
                ParamSpec {
                    name: "theta_out",
                    ty: ParamType::Float { min: -1.0, max: 1.0 },
                    default: json!(-1.0),
                    doc: "support threshold of the complement ¬R (negative: same as theta; 0: the paper's filter)",
                },
                ParamSpec { name: "sample_thr", ty: ParamType::Int { min: 1 }, default: json!(1000), doc: "pairs drawn before the margin is first checked" },
                ParamSpec { name: "error_thr", ty: ParamType::Float { min: 1e-6, max: 1.0 }, default: json!(0.05), doc: "target error margin of the score" },
                ParamSpec { name: "z", ty: ParamType::Float { min: 0.0, max: 10.0 }, default: json!(1.96), doc: "z of the confidence level (1.96: 95% per rate, 90.25% for the score)" },
                ParamSpec { name: "bins", ty: ParamType::Int { min: 2 }, default: json!(10), doc: "equal-width bins K of a many-valued feature" },
                ParamSpec { name: "rules", ty: ParamType::Choice(&["subsets", "values"]), default: json!("subsets"), doc: "rules are value subsets / bin runs, or single values / bins (the paper's count)" },
                ParamSpec { name: "max_rule_sets", ty: ParamType::Int { min: 1 }, default: json!(100_000), doc: "refuse to score more frequent rule sets than this (raise theta or use rules = \"values\")" },
                ParamSpec { name: "max_samples", ty: ParamType::Int { min: 2 }, default: json!(100_000), doc: "stop sampling a rule set after this many pairs" },
                ParamSpec { name: "round", ty: ParamType::Int { min: 1 }, default: json!(64), doc: "pairs per rule set per batched round after the first (does not change results)" },
            ],
        }
    }

    fn audit(params: &Params, host: &mut Host) -> Result<Value, PluginError> {
        let started = Instant::now();
        if host.n_seeds == 0 {
            return Err(PluginError::InvalidInput("testsgd needs the data's rows".into()));
        }
        let shape = if params.str("rules") == "values" { RuleShape::Values } else { RuleShape::Subsets };
        let sensitive = host.domain.protected_indices();
        let rows = host.seeds.clone();
        let theta = params.f64("theta");
        let theta_out = if params.f64("theta_out") < 0.0 { theta } else { params.f64("theta_out") };
        let enumeration = frequent_rule_sets(&host.domain, &sensitive, &rows, theta, theta_out, params.usize("bins"), shape);
        let limit = params.usize("max_rule_sets");
        if enumeration.kept.len() > limit {
            return Err(PluginError::InvalidInput(format!(
                "{} frequent rule sets (of {} generated) exceed max_rule_sets = {limit}; raise theta or use rules = \"values\"",
                enumeration.kept.len(),
                enumeration.generated
            )));
        }
        let settings = ScoreSettings {
            sample_thr: params.usize("sample_thr"),
            error_thr: params.f64("error_thr"),
            z: params.f64("z"),
            round: params.usize("round"),
            max_samples: params.usize("max_samples").max(params.usize("sample_thr") + 1),
            max_batch_rows: 1 << 17,
        };
        let seed: u64 = host.rng.gen();
        let queries_before = host.queries();
        let scores = score_all(host, &enumeration.kept, &rows, &settings, seed)?;
        let z = settings.z;
        let per_rate = confidence_of(z);
        let mut groups: Vec<Value> = enumeration
            .kept
            .iter()
            .zip(&scores)
            .map(|(set, s)| {
                json!({
                    "conditions": set.rules.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
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
        groups.sort_by(|a, b| b["score"].as_f64().unwrap_or(-1.0).total_cmp(&a["score"].as_f64().unwrap_or(-1.0)));
        let elapsed = started.elapsed().as_secs_f64();
        Ok(json!({
            "figures": {
                "rule_sets_generated": enumeration.generated as f64,
                "rule_sets_kept": enumeration.kept.len(),
                "rule_sets_per_second": enumeration.kept.len() as f64 / elapsed.max(1e-9),
                "samples": scores.iter().map(|s| s.samples).sum::<usize>() * 2,
                "model_queries": host.queries() - queries_before,
                "confidence": per_rate * per_rate,
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
