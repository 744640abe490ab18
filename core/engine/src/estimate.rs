//! The Aequitas estimate (§4.3): K trials of m inputs drawn uniformly from the domain; the share of
//! discriminatory inputs per trial, their mean, and a 95% confidence interval over the trials.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;
use serde::Serialize;

use crate::check::Checker;
use crate::clustered::ClusterSums;
use crate::domain::Domain;
use crate::error::ModelError;
use crate::logit_shift::{Pairing, ShiftSums};
use crate::oracle::Oracle;
use crate::stats::wilson;

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
/// trials into ranges gives the same counts. Consecutive trials are checked together, as many as
/// fill a model call ([`Checker::rows_per_call`]): a model behind a server gets requests of its
/// `batch_size`, not one per trial.
pub fn trial_counts(
    oracle: &Oracle,
    domain: &Domain,
    checker: &Checker,
    trials: std::ops::Range<usize>,
    per_trial: usize,
    seed: u64,
) -> Result<Vec<usize>, ModelError> {
    Ok(trial_outcomes(oracle, domain, checker, &Wanted::default(), trials, per_trial, seed, &indicatif::ProgressBar::hidden())?.counts)
}

/// What the trials of an estimate found ([`trial_outcomes`]).
#[derive(Debug, Clone, Default)]
pub struct TrialOutcomes {
    /// The discriminatory inputs of each trial.
    pub counts: Vec<usize>,
    /// Over all the trials, per protected attribute (in column order), the inputs whose treatment
    /// changes when that attribute alone changes ([`Checker::alone_of`]); empty unless asked for.
    pub alone: Vec<usize>,
    /// Each trial's sums of discrim-eval's paired logit differences ([`crate::logit_shift`]),
    /// when a pairing was given.
    pub shifts: Vec<ShiftSums>,
    /// With `alone` and two or more protected attributes, the inputs with hidden intersectional
    /// flips ([`Checker::hidden_intersectional`]); 0 otherwise.
    pub hidden: usize,
    /// When asked for ([`Wanted::flags`]), whether each input is discriminatory, in trial order and
    /// within a trial in the order drawn.
    pub flags: Vec<bool>,
    /// With [`Wanted::keys`], every input's verdict (1 discriminatory, 0 not) summed per cluster of
    /// what its prompts share ([`crate::cluster_keys::ClusterKeys::row_keys`]: the names its
    /// variants show, the `cluster_by` columns): the flip rate's clustered variance.
    pub flip_clusters: Option<ClusterSums>,
}

/// What [`trial_outcomes`] finds beside each trial's count.
#[derive(Default, Clone, Copy)]
pub struct Wanted<'a> {
    /// The flips per protected attribute alone (and the hidden intersectional ones).
    pub alone: bool,
    /// Each trial's paired sums of discrim-eval's measure.
    pub pairing: Option<&'a Pairing>,
    /// What observations share ([`crate::cluster_keys`]): the pairs' clusters (with `pairing`)
    /// and the inputs' (their flips).
    pub keys: Option<&'a crate::cluster_keys::ClusterKeys<'a>>,
    /// Each input's verdict, in order (for a confidence sequence).
    pub flags: bool,
}

/// [`trial_counts`], advancing `progress` by each trial checked, with what `wanted` asks for: the
/// flips per protected attribute alone, the trials' logit-shift sums (clustered by `keys`) and
/// each input's verdict, all from the same scores. Each input drawn is first made to agree with
/// the checker's links ([`Checker::make_plausible`]).
#[allow(clippy::too_many_arguments)]
pub fn trial_outcomes(
    oracle: &Oracle,
    domain: &Domain,
    checker: &Checker,
    wanted: &Wanted<'_>,
    trials: std::ops::Range<usize>,
    per_trial: usize,
    seed: u64,
    progress: &indicatif::ProgressBar,
) -> Result<TrialOutcomes, ModelError> {
    let Wanted { alone, pairing, keys, flags: want_flags } = *wanted;
    let n_protected = if alone { domain.protected_indices().len() } else { 0 };
    if per_trial == 0 {
        return Ok(TrialOutcomes { counts: vec![0; trials.len()], alone: vec![0; n_protected], ..TrialOutcomes::default() });
    }
    let per_group = (checker.rows_per_call(oracle) / per_trial).max(1);
    let groups: Vec<std::ops::Range<usize>> =
        trials.clone().step_by(per_group).map(|start| start..(start + per_group).min(trials.end)).collect();
    let width = domain.width().max(1);
    type GroupOutcome = (Vec<(usize, Option<ShiftSums>)>, Vec<usize>, usize, Vec<bool>, Option<ClusterSums>);
    let outcomes: Vec<GroupOutcome> = groups
        .into_par_iter()
        .map(|group| {
            let mut rows = Vec::with_capacity(group.len() * per_trial * domain.width());
            for t in group {
                rows.extend(domain.sample_rows(&mut trial_rng(seed, t), per_trial));
            }
            checker.make_plausible(&mut rows);
            let scores = checker.scores(oracle, &rows)?;
            let verdicts = checker.verdicts(&scores);
            let flags = if alone { checker.alone_of(oracle, &rows, &scores, &verdicts)? } else { Vec::new() };
            progress.inc((verdicts.len() / per_trial) as u64);
            let per_row = checker.n_variants() + 1;
            let trials = verdicts
                .chunks(per_trial)
                .zip(rows.chunks(per_trial * width))
                .zip(scores.chunks(per_trial * per_row))
                .map(|((trial, rows), scores)| {
                    (trial.iter().filter(|c| c.discriminatory).count(), pairing.map(|p| p.sums(rows, scores, keys)))
                })
                .collect();
            let by_attribute = (0..n_protected).map(|k| flags.iter().filter(|f| f[k]).count()).collect();
            let hidden = if alone { Checker::hidden_intersectional(&verdicts, &flags).iter().filter(|h| **h).count() } else { 0 };
            let verdict_flags = if want_flags { verdicts.iter().map(|v| v.discriminatory).collect() } else { Vec::new() };
            let flip_clusters = keys.map(|keys| keys.flip_sums(&rows, width, verdicts.iter().map(|v| v.discriminatory)));
            Ok((trials, by_attribute, hidden, verdict_flags, flip_clusters))
        })
        .collect::<Result<_, ModelError>>()?;
    let mut out = TrialOutcomes { alone: vec![0; n_protected], ..TrialOutcomes::default() };
    for (trials, by_attribute, hidden, verdict_flags, flip_clusters) in outcomes {
        out.hidden += hidden;
        if let Some(sums) = flip_clusters {
            out.flip_clusters.get_or_insert_with(ClusterSums::default).add(&sums);
        }
        out.flags.extend(verdict_flags);
        for (total, n) in out.alone.iter_mut().zip(&by_attribute) {
            *total += n;
        }
        for (count, shift) in trials {
            out.counts.push(count);
            out.shifts.extend(shift);
        }
    }
    Ok(out)
}

/// The generator trial `t` draws its inputs from: seeded with `(seed, t)` alone (public so that a
/// test can draw the same inputs again).
pub fn trial_rng(seed: u64, t: usize) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(seed ^ (t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
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

/// The 97.5% quantile of Student's t with `df` degrees of freedom, exact for every `df`
/// ([`crate::stats::t_quantile`]; `+∞` at 0).
pub fn t_quantile_975(df: usize) -> f64 {
    crate::stats::t_quantile(0.975, df)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use fairpipe_abi::domain::Attribute;

    use super::*;
    use crate::models::testing::Counting;
    use crate::models::Model;

    /// The oracle's counting model, counting its calls and asking for calls of `rows_per_call`.
    struct Batched {
        model: Counting,
        rows_per_call: Option<usize>,
        calls: AtomicU64,
    }

    impl Model for Batched {
        fn n_features(&self) -> usize {
            self.model.n_features()
        }
        fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            self.model.predict_into(x, out)
        }
        fn describe(&self) -> String {
            "batched".into()
        }
        fn rows_per_call(&self) -> Option<usize> {
            self.rows_per_call
        }
        fn wants_thread_chunks(&self) -> bool {
            false
        }
    }

    #[test]
    fn trials_checked_together_count_as_trials_checked_one_by_one() {
        // Counting scores (a + 2 race) / 100: rows with a near 50 are discriminatory.
        let domain = Domain { attributes: vec![Attribute::integer("a", 0.0, 99.0, false), Attribute::integer("race", 0.0, 2.0, true)] };
        let checker = Checker::new(&domain, None);
        let (trials, per_trial, seed) = (3..40, 500, 7);
        let one_by_one: Vec<usize> = trials
            .clone()
            .map(|t| {
                let rows = domain.sample_rows(&mut trial_rng(seed, t), per_trial);
                let oracle = Oracle::new(Arc::new(Counting(AtomicU64::new(0))));
                checker.check(&oracle, &rows).unwrap().iter().filter(|c| c.discriminatory).count()
            })
            .collect();
        assert!(one_by_one.iter().all(|&c| c > 0 && c < per_trial), "a model that discriminates sometimes: {one_by_one:?}");
        // 8,192 model rows per call by default: 2,730 rows of 3 variants, 5 trials; a model asking
        // for a million rows per call gets all 37 trials in one.
        for (rows_per_call, calls) in [(None, 8), (Some(1_000_000), 1)] {
            let model = Arc::new(Batched { model: Counting(AtomicU64::new(0)), rows_per_call, calls: AtomicU64::new(0) });
            let oracle = Oracle::new(model.clone());
            assert_eq!(trial_counts(&oracle, &domain, &checker, trials.clone(), per_trial, seed).unwrap(), one_by_one);
            assert_eq!(model.calls.load(Ordering::Relaxed), calls, "{rows_per_call:?} rows per call");
        }
        assert_eq!(trial_counts(&Oracle::new(Arc::new(Counting(AtomicU64::new(0)))), &domain, &checker, 0..5, 0, seed).unwrap(), [0; 5]);
    }

    #[test]
    fn wilson_matches_a_hand_computed_interval() {
        // 10 of 100 at z = 1.96: (0.0552, 0.1744) by the textbook formula.
        let [lo, hi] = wilson(10, 100, 1.96);
        assert!((lo - 0.0552).abs() < 1e-4 && (hi - 0.1744).abs() < 1e-4, "{lo} {hi}");
    }
}
