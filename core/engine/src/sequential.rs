//! An interval that stays valid when asking stops on it: Waudby-Smith & Ramdas's predictable
//! plug-in empirical-Bernstein confidence sequence (PrPl-EB; "Estimating means of bounded random
//! variables by betting", JRSS B 2024, Theorem 2) for the mean of observations in [0, 1].
//!
//! A fixed-n interval (Wilson's, Student's) looked at after every batch and stopped on as soon as it
//! is narrow enough covers less than it says: the chance that it ever strays from the truth grows
//! with every look. A confidence sequence holds at every time at once — with probability ≥ 95% the
//! truth is inside the interval at every time, so also at the time the audit chose to stop — at
//! the price of a wider interval (about 1.5–2× Wilson's at a few thousand observations).
//!
//! With `L = log(2/α)` (each side at α/2), the running estimates
//! `μ̂_t = (1/2 + Σ_{i≤t} X_i)/(t + 1)` and `σ̂²_t = (1/4 + Σ_{i≤t} (X_i − μ̂_i)²)/(t + 1)`, the bets
//! `λ_t = min(√(2L / (σ̂²_{t−1} t log(1 + t))), 1/2)`, `v_t = 4 (X_t − μ̂_{t−1})²` and
//! `ψ_E(λ) = (−log(1 − λ) − λ)/4`, the set at time t is
//! `Σλ_i X_i / Σλ_i ± (L + Σ v_i ψ_E(λ_i)) / Σλ_i`, clipped to [0, 1], and the running
//! intersection of all of them so far (also valid). The observations are taken in a fixed order
//! (an estimate's trial order), so the interval is the same however the asking was spread.

use serde::{Deserialize, Serialize};

/// The largest bet (the paper's truncation c = 1/2).
const MAX_BET: f64 = 0.5;

/// The state of a confidence sequence for a mean in [0, 1].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceSequence {
    /// log(2/α).
    log_term: f64,
    /// Observations so far.
    n: u64,
    /// Σ X_i.
    sum: f64,
    /// Σ (X_i − μ̂_i)².
    sum_sq_dev: f64,
    /// Σ λ_i.
    sum_bets: f64,
    /// Σ λ_i X_i.
    sum_bet_x: f64,
    /// Σ v_i ψ_E(λ_i).
    sum_penalty: f64,
    /// The running intersection.
    low: f64,
    /// The running intersection.
    high: f64,
}

impl ConfidenceSequence {
    /// A confidence sequence at level `1 − alpha` (0.05 for 95%).
    pub fn new(alpha: f64) -> ConfidenceSequence {
        ConfidenceSequence {
            log_term: (2.0 / alpha).ln(),
            n: 0,
            sum: 0.0,
            sum_sq_dev: 0.0,
            sum_bets: 0.0,
            sum_bet_x: 0.0,
            sum_penalty: 0.0,
            low: 0.0,
            high: 1.0,
        }
    }

    /// Observations so far.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Their mean (`NaN` before the first).
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.sum / self.n as f64
        }
    }

    /// Take observation `x` (clamped to [0, 1]).
    pub fn push(&mut self, x: f64) {
        let x = x.clamp(0.0, 1.0);
        let t = (self.n + 1) as f64;
        let mean_before = (0.5 + self.sum) / t;
        let var_before = (0.25 + self.sum_sq_dev) / t;
        let bet = (2.0 * self.log_term / (var_before * t * (1.0 + t).ln())).sqrt().min(MAX_BET);
        let v = 4.0 * (x - mean_before).powi(2);
        let psi = (-(1.0 - bet).ln() - bet) / 4.0;
        self.n += 1;
        self.sum += x;
        let mean_now = (0.5 + self.sum) / (t + 1.0);
        self.sum_sq_dev += (x - mean_now).powi(2);
        self.sum_bets += bet;
        self.sum_bet_x += bet * x;
        self.sum_penalty += v * psi;
        let centre = self.sum_bet_x / self.sum_bets;
        let half = (self.log_term + self.sum_penalty) / self.sum_bets;
        self.low = self.low.max((centre - half).max(0.0));
        self.high = self.high.min((centre + half).min(1.0));
        if self.low > self.high {
            // Possible only on an event of probability < α; keep a point rather than an empty set.
            let mid = (self.low + self.high) / 2.0;
            (self.low, self.high) = (mid, mid);
        }
    }

    /// The interval now: `[0, 1]` before any observation.
    pub fn interval(&self) -> [f64; 2] {
        [self.low, self.high]
    }

    /// Its half-width.
    pub fn half_width(&self) -> f64 {
        (self.high - self.low) / 2.0
    }
}

/// How an estimate stopped asking (`summary.json`: `precision` in `estimate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrecisionStop {
    /// The half-width asked for.
    pub asked: f64,
    /// The half-width reached (the confidence sequence's at the stop).
    pub reached: f64,
    /// Whether it was reached (else the stage's `trials` ran out first).
    pub met: bool,
    /// Observations taken.
    pub observations: u64,
    /// The valid interval at the stop (the confidence sequence's).
    pub ci95: [f64; 2],
    /// How the interval is made.
    pub method: String,
    /// Rows the stage asked the model to score (inputs and their protected variants, before any
    /// cache).
    pub model_rows: u64,
    /// For an LLM, the HTTP requests the stage sent (answers from the cache or this run's memory
    /// cost none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Where the observations are clustered (an LLM's names): the part of `reached` that the
    /// clusters' own spread gives (`reached · √(1 − 1/design effect)`), which no number of prompts
    /// over the same clusters narrows; asking stopped early, unmet, once it was above `asked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_floor: Option<f64>,
}

impl PrecisionStop {
    /// The stop at half-width `reached` (`met` when it is within `asked`) after `observations`,
    /// with the interval valid there; what it cost (`model_rows`, `requests`) is left for the
    /// caller.
    pub fn new(asked: f64, reached: f64, observations: u64, ci95: [f64; 2]) -> PrecisionStop {
        PrecisionStop {
            asked,
            reached,
            met: reached <= asked,
            observations,
            ci95,
            method: METHOD.to_string(),
            model_rows: 0,
            requests: None,
            cluster_floor: None,
        }
    }
}

/// The HTTP requests `oracle`'s model has sent so far, when it is an LLM.
pub fn llm_requests(oracle: &crate::oracle::Oracle) -> Option<u64> {
    oracle.model().as_any().and_then(|m| m.downcast_ref::<fairpipe_models::llm::LlmModel>()).map(|m| m.llm_usage().requests)
}

/// The method's name in [`PrecisionStop::method`].
pub const METHOD: &str = "confidence sequence (Waudby-Smith & Ramdas 2024, predictable plug-in empirical Bernstein)";

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::*;

    #[test]
    fn stopping_at_the_asked_precision_covers_the_truth_in_at_least_94_of_200_seeded_runs() {
        // A flip rate of 6%, asked to ±0.01, looked at after every 100 observations.
        let (p, precision) = (0.06, 0.01);
        let (mut covered, mut wilson_covered, mut spent) = (0, 0, Vec::new());
        for seed in 0..200u64 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut cs = ConfidenceSequence::new(0.05);
            let mut flips = 0usize;
            loop {
                for _ in 0..100 {
                    let x = rng.gen::<f64>() < p;
                    flips += x as usize;
                    cs.push(x as u8 as f64);
                }
                if cs.half_width() <= precision || cs.n() >= 1_000_000 {
                    break;
                }
            }
            assert!(cs.half_width() <= precision, "seed {seed} never reached the precision");
            let [lo, hi] = cs.interval();
            covered += (lo <= p && p <= hi) as usize;
            let [wl, wh] = crate::stats::wilson(flips, cs.n() as usize, 1.96);
            wilson_covered += (wl <= p && p <= wh) as usize;
            spent.push(cs.n());
        }
        spent.sort_unstable();
        assert!(covered >= 188, "the sequence covered 6% in {covered} of 200 runs");
        // What it costs: a fixed-n Wilson interval of ±0.01 at 6% needs 2,167 observations.
        let median = spent[100];
        assert!((3_000..12_000).contains(&median), "median observations {median}");
        // Wilson's interval at the same stops is narrower (and not valid there); it is reported
        // beside, not used to stop.
        assert!(wilson_covered <= 200);
    }

    #[test]
    fn the_interval_narrows_around_the_mean_and_never_widens() {
        let mut cs = ConfidenceSequence::new(0.05);
        assert_eq!(cs.interval(), [0.0, 1.0]);
        let mut last = 1.0;
        for i in 0..5000 {
            cs.push(if i % 4 == 0 { 1.0 } else { 0.0 });
            assert!(cs.half_width() <= last + 1e-15);
            last = cs.half_width();
        }
        let [lo, hi] = cs.interval();
        assert!(lo < 0.25 && 0.25 < hi && hi - lo < 0.06, "[{lo}, {hi}]");
        assert_eq!(cs.mean(), 0.25);
    }
}
