//! The Aequitas estimate (§4.3): K trials of m inputs drawn uniformly from the domain; the share of
//! discriminatory inputs per trial, their mean, and a 95% confidence interval over the trials.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde::Serialize;

use crate::check::Checker;
use crate::domain::Domain;
use crate::error::ModelError;
use crate::oracle::Oracle;

/// The estimate of the share of discriminatory inputs in the domain.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    /// Mean share of discriminatory inputs over the trials.
    pub rate: f64,
    /// 95% confidence interval of the mean over trials (Student t, K − 1 degrees of freedom).
    pub ci95: [f64; 2],
    /// Wilson 95% interval treating all K·m inputs as one sample.
    pub ci95_wilson: [f64; 2],
    /// Number of trials K.
    pub trials: usize,
    /// Inputs per trial m.
    pub per_trial: usize,
    /// K·m.
    pub samples: usize,
    /// Discriminatory inputs among them.
    pub discriminatory: usize,
    /// Share per trial, in trial order.
    pub trial_rates: Vec<f64>,
}

/// Run `trials` trials of `per_trial` uniform inputs, in parallel; trial `t` draws from a generator
/// seeded with `(seed, t)`, so the result does not depend on the number of threads.
pub fn estimate(
    oracle: &Oracle,
    domain: &Domain,
    checker: &Checker,
    trials: usize,
    per_trial: usize,
    seed: u64,
) -> Result<Estimate, ModelError> {
    let counts = trial_counts(oracle, domain, checker, 0..trials, per_trial, seed)?;
    Ok(Estimate::from_counts(&counts, per_trial))
}

/// The discriminatory inputs of each trial in `trials` (of `per_trial` uniform inputs each), in
/// parallel; trial `t` draws from a generator seeded with `(seed, t)` alone, so any split of the
/// trials into ranges gives the same counts.
pub fn trial_counts(
    oracle: &Oracle,
    domain: &Domain,
    checker: &Checker,
    trials: std::ops::Range<usize>,
    per_trial: usize,
    seed: u64,
) -> Result<Vec<usize>, ModelError> {
    trials
        .into_par_iter()
        .map(|t| {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ (t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let rows = domain.sample_rows(&mut rng, per_trial);
            Ok(checker.check(oracle, &rows)?.iter().filter(|c| c.discriminatory).count())
        })
        .collect()
}

impl Estimate {
    /// The estimate from the discriminatory inputs of each trial (`counts`, in trial order) of
    /// `per_trial` inputs.
    pub fn from_counts(counts: &[usize], per_trial: usize) -> Estimate {
        let trials = counts.len();
        let trial_rates: Vec<f64> = counts.iter().map(|&c| c as f64 / per_trial.max(1) as f64).collect();
        let k = trials.max(1) as f64;
        let rate = trial_rates.iter().sum::<f64>() / k;
        let var = if trials > 1 { trial_rates.iter().map(|r| (r - rate).powi(2)).sum::<f64>() / (k - 1.0) } else { 0.0 };
        let half = t_quantile_975(trials.saturating_sub(1)) * (var / k).sqrt();
        let discriminatory: usize = counts.iter().sum();
        let samples = trials * per_trial;
        Estimate {
            rate,
            ci95: [(rate - half).max(0.0), (rate + half).min(1.0)],
            ci95_wilson: wilson(discriminatory, samples, 1.96),
            trials,
            per_trial,
            samples,
            discriminatory,
            trial_rates,
        }
    }
}

/// Wilson score interval for `successes` out of `n` at normal quantile `z`.
pub fn wilson(successes: usize, n: usize, z: f64) -> [f64; 2] {
    if n == 0 {
        return [0.0, 1.0];
    }
    let n = n as f64;
    let p = successes as f64 / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    [(centre - half).max(0.0), (centre + half).min(1.0)]
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom, exact for every `df`
/// ([`crate::stats::t_quantile`]; `+∞` at 0).
pub fn t_quantile_975(df: usize) -> f64 {
    crate::stats::t_quantile(0.975, df)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_a_hand_computed_interval() {
        // 10 of 100 at z = 1.96: (0.0552, 0.1744) by the textbook formula.
        let [lo, hi] = wilson(10, 100, 1.96);
        assert!((lo - 0.0552).abs() < 1e-4 && (hi - 0.1744).abs() < 1e-4, "{lo} {hi}");
    }
}
