//! TestSGD §4.2–4.3, Algorithm 2: the group fairness score of a rule set R with its error margin.
//!
//! Samples satisfying R (and ¬R) are made by taking a random data row that satisfies R (¬R) and
//! moving one random non-sensitive attribute by ± its step (1 for integers, the grid step — the
//! paper's 0.01 — for decimals), clipped to the domain. Once more than `sample_thr` pairs are drawn,
//! the margin ε = z·√(φr(1−φr)/n) + z·√(φ¬r(1−φ¬r)/n) is checked after every pair, and sampling
//! stops at the first n with ε ≤ `error_thr`.
//!
//! Rule sets are independent, and each has its own random generator, so all of them are advanced
//! in rounds with one batched model call per round; within a round the stopping rule is applied
//! pair by pair, so the result is exactly that of the sequential algorithm.

use fairpipe_abi::domain::Domain;
use fairpipe_abi::sdk::{Host, PluginError};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::rules::RuleSet;

/// The algorithm's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreSettings {
    /// Pairs drawn before the margin is first checked (`sample_thr`).
    pub sample_thr: usize,
    /// Target margin (`error_thr`).
    pub error_thr: f64,
    /// z of the confidence level.
    pub z: f64,
    /// Pairs drawn per rule set per round after the first.
    pub round: usize,
    /// Give up on a rule set after this many pairs (reported as not converged).
    pub max_samples: usize,
    /// Model rows per call at most.
    pub max_batch_rows: usize,
}

/// The score of one rule set.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupScore {
    /// φr: share of samples satisfying R predicted favourable.
    pub rate_in: f64,
    /// φ¬r.
    pub rate_out: f64,
    /// |φr − φ¬r|.
    pub score: f64,
    /// ε at the stopping point.
    pub margin: f64,
    /// Pairs drawn (n).
    pub samples: usize,
    /// Whether ε ≤ `error_thr` was reached.
    pub converged: bool,
}

/// The margin of Algorithm 2, line 11.
pub fn margin(rate_in: f64, rate_out: f64, n: usize, z: f64) -> f64 {
    let n = n as f64;
    z * (rate_in * (1.0 - rate_in) / n).sqrt() + z * (rate_out * (1.0 - rate_out) / n).sqrt()
}

/// Data rows inside and outside a rule set, and the perturbation of §4.3.
struct Sampler {
    inside: Vec<usize>,
    outside: Vec<usize>,
    rng: Xoshiro256PlusPlus,
    favourable_in: usize,
    favourable_out: usize,
    n: usize,
    done: Option<GroupScore>,
}

/// Append one sample drawn from data row `row`: one random free attribute ± its step, clipped.
fn perturb(domain: &Domain, free: &[usize], row: &[f64], rng: &mut Xoshiro256PlusPlus, out: &mut Vec<f64>) {
    let start = out.len();
    out.extend_from_slice(row);
    domain.nudge(&mut out[start..], free, rng);
}

/// Score every rule set over the data `rows` (row-major). `seed` seeds one generator per rule set.
/// When the host asks to stop (time budget, Ctrl-C) or a query budget is spent, the rule sets not
/// finished yet are scored on the pairs drawn so far (not converged) and the second value is true.
pub fn score_all(
    host: &mut Host,
    sets: &[RuleSet],
    rows: &[f64],
    settings: &ScoreSettings,
    seed: u64,
) -> Result<(Vec<GroupScore>, bool), PluginError> {
    let width = host.domain.width();
    let domain = host.domain.clone();
    let free = domain.free_indices();
    let data: Vec<&[f64]> = rows.chunks_exact(width).collect();
    let mut samplers: Vec<Sampler> = sets
        .iter()
        .enumerate()
        .map(|(i, set)| {
            let (inside, outside): (Vec<usize>, Vec<usize>) = (0..data.len()).partition(|&r| set.holds(data[r]));
            Sampler {
                inside,
                outside,
                rng: Xoshiro256PlusPlus::seed_from_u64(seed.wrapping_add(i as u64)),
                favourable_in: 0,
                favourable_out: 0,
                n: 0,
                done: None,
            }
        })
        .collect();
    // Rule sets with no rows on one side cannot be sampled: report them as empty, not converged.
    for s in samplers.iter_mut().filter(|s| s.inside.is_empty() || s.outside.is_empty()) {
        s.done = Some(GroupScore {
            rate_in: f64::NAN,
            rate_out: f64::NAN,
            score: f64::NAN,
            margin: f64::INFINITY,
            samples: 0,
            converged: false,
        });
    }
    let mut first_round = true;
    let mut stopped = false;
    'rounds: loop {
        let pairs = if first_round { settings.sample_thr + 1 } else { settings.round };
        first_round = false;
        let active: Vec<usize> = (0..samplers.len()).filter(|&i| samplers[i].done.is_none()).collect();
        if active.is_empty() {
            break;
        }
        let per_call = (settings.max_batch_rows / (2 * pairs)).max(1);
        for group in active.chunks(per_call) {
            let mut batch = Vec::with_capacity(group.len() * 2 * pairs * width);
            for &i in group {
                let s = &mut samplers[i];
                let pairs = pairs.min(settings.max_samples - s.n);
                for _ in 0..pairs {
                    let r_in = s.inside[s.rng.gen_range(0..s.inside.len())];
                    perturb(&domain, &free, data[r_in], &mut s.rng, &mut batch);
                    let r_out = s.outside[s.rng.gen_range(0..s.outside.len())];
                    perturb(&domain, &free, data[r_out], &mut s.rng, &mut batch);
                }
            }
            let p = match host.predict(&batch) {
                Ok(p) => p,
                Err(PluginError::Stopped) => {
                    stopped = true;
                    break 'rounds;
                }
                Err(e) => return Err(e),
            };
            host.count_generated((batch.len() / width) as u64);
            let mut offset = 0;
            for &i in group {
                let s = &mut samplers[i];
                let pairs = pairs.min(settings.max_samples - s.n);
                for k in 0..pairs {
                    s.favourable_in += usize::from(p[offset + 2 * k] > 0.5);
                    s.favourable_out += usize::from(p[offset + 2 * k + 1] > 0.5);
                    s.n += 1;
                    if s.n > settings.sample_thr {
                        let (a, b) = (s.favourable_in as f64 / s.n as f64, s.favourable_out as f64 / s.n as f64);
                        let eps = margin(a, b, s.n, settings.z);
                        if eps <= settings.error_thr || s.n >= settings.max_samples {
                            s.done = Some(GroupScore {
                                rate_in: a,
                                rate_out: b,
                                score: (a - b).abs(),
                                margin: eps,
                                samples: s.n,
                                converged: eps <= settings.error_thr,
                            });
                            break;
                        }
                    }
                }
                offset += 2 * pairs;
            }
            match host.tick() {
                Ok(()) => {}
                Err(PluginError::Stopped) => {
                    stopped = true;
                    break 'rounds;
                }
                Err(e) => return Err(e),
            }
        }
    }
    let scores = samplers
        .into_iter()
        .map(|s| {
            s.done.unwrap_or_else(|| {
                // Cut short: the estimate so far, with its (wide) margin.
                let (a, b) = if s.n > 0 {
                    (s.favourable_in as f64 / s.n as f64, s.favourable_out as f64 / s.n as f64)
                } else {
                    (f64::NAN, f64::NAN)
                };
                let eps = if s.n > 0 { margin(a, b, s.n, settings.z) } else { f64::INFINITY };
                GroupScore { rate_in: a, rate_out: b, score: (a - b).abs(), margin: eps, samples: s.n, converged: false }
            })
        })
        .collect();
    Ok((scores, stopped))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// §4.2's worked example: 283/1000 vs 91/1000 at z = 1.96.
    #[test]
    fn the_papers_worked_example() {
        let (a, b): (f64, f64) = (283.0 / 1000.0, 91.0 / 1000.0);
        assert!(((a - b) - 0.192).abs() < 1e-12);
        let eps_in = 1.96 * (a * (1.0 - a) / 1000.0_f64).sqrt();
        let eps_out = 1.96 * (b * (1.0 - b) / 1000.0_f64).sqrt();
        assert_eq!(((eps_in * 1000.0).round() / 1000.0, (eps_out * 1000.0).round() / 1000.0), (0.028, 0.018));
        let m = margin(a, b, 1000, 1.96);
        assert_eq!((m * 1000.0).round() / 1000.0, 0.046);
        assert!(m < 0.05, "the example stops sampling at n = 1000");
    }

    #[test]
    fn the_margin_of_the_worst_case_falls_below_the_threshold_by_1537_samples() {
        assert!(margin(0.5, 0.5, 1537, 1.96) <= 0.05);
        assert!(margin(0.5, 0.5, 1536, 1.96) > 0.05);
    }
}
