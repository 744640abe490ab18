//! TestSGD's mitigation (RQ3), used by the `retrain` stage's `testsgd` strategy: for the worst group
//! R found by `group_score`, generate samples satisfying R, keep those the original model gives a
//! chosen label (the paper's: the label R is given less often, "we only select those generated
//! instances with the opposite label"; or the other, to be relabelled), add them to the training
//! data labelled with the label R is given less often, in growing amounts (50, 100, 200, … up to 10%
//! of the training rows), retrain each time, and keep the model with the lowest group score whose
//! test accuracy drops by no more than the tolerance.
//!
//! Samples are made as in TestSGD §4.3: a random data row satisfying R (or ¬R) with one random
//! non-protected attribute moved by ± its step. A group's score under a model is measured the same
//! way on a fixed number of pairs with a fixed seed, so scores of different models are comparable.

use fairpipe_abi::domain::Domain;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::{Error, Result};
use crate::group_rule::GroupRule;
use crate::oracle::Oracle;

/// Data rows inside and outside a group, and §4.3's perturbation.
pub struct GroupSampler<'a> {
    domain: &'a Domain,
    rows: &'a [f64],
    inside: Vec<usize>,
    outside: Vec<usize>,
    free: Vec<usize>,
}

impl<'a> GroupSampler<'a> {
    /// Split the data `rows` (row-major) by `rule`; an error when either side is empty.
    pub fn new(domain: &'a Domain, rows: &'a [f64], rule: &GroupRule) -> Result<Self> {
        let width = domain.width();
        let (inside, outside): (Vec<usize>, Vec<usize>) =
            (0..rows.len() / width).partition(|&r| rule.holds(&rows[r * width..(r + 1) * width]));
        if inside.is_empty() || outside.is_empty() {
            return Err(Error::Invalid("the group (or the rest) has no data row to sample from".into()));
        }
        Ok(GroupSampler { domain, rows, inside, outside, free: domain.free_indices() })
    }

    /// `n` samples from inside (`inside = true`) or outside the group, row-major.
    pub fn sample<R: Rng>(&self, inside: bool, n: usize, rng: &mut R) -> Vec<f64> {
        let width = self.domain.width();
        let pool = if inside { &self.inside } else { &self.outside };
        let mut out = Vec::with_capacity(n * width);
        for _ in 0..n {
            let r = pool[rng.gen_range(0..pool.len())];
            let start = out.len();
            out.extend_from_slice(&self.rows[r * width..(r + 1) * width]);
            self.domain.nudge(&mut out[start..], &self.free, rng);
        }
        out
    }

    /// (favourable rate inside, favourable rate outside) under `oracle`, on `n` samples per side
    /// drawn with `seed`.
    pub fn rates(&self, oracle: &Oracle, n: usize, seed: u64) -> Result<(f64, f64)> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let inside = self.sample(true, n, &mut rng);
        let outside = self.sample(false, n, &mut rng);
        let share = |x: &[f64]| -> Result<f64> { Ok(oracle.predict_labels(x)?.iter().filter(|&&l| l == 1).count() as f64 / n as f64) };
        Ok((share(&inside)?, share(&outside)?))
    }
}

/// Samples satisfying the group that `oracle` labels `label` (0 or 1), at most `n`, drawn in
/// batches; labelled by the caller.
pub fn mitigation_samples(sampler: &GroupSampler, oracle: &Oracle, label: u8, n: usize, seed: u64) -> Result<Vec<f64>> {
    let width = sampler.domain.width();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n * width);
    for _ in 0..200 {
        if out.len() >= n * width {
            break;
        }
        let batch = sampler.sample(true, 4096, &mut rng);
        let labels = oracle.predict_labels(&batch)?;
        for (row, &l) in batch.chunks_exact(width).zip(&labels) {
            if l == label && out.len() < n * width {
                out.extend_from_slice(row);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairpipe_abi::domain::Attribute;
    use serde_json::json;

    #[test]
    fn samples_stay_in_their_group_and_move_one_free_attribute() {
        let a = |name: &str, upper: f64, protected: bool| Attribute::integer(name, 0.0, upper, protected);
        let domain = Domain { attributes: vec![a("x", 9.0, false), a("sex", 1.0, true)] };
        let rows: Vec<f64> = (0..100).flat_map(|i| [f64::from(i % 10), f64::from(i % 2)]).collect();
        let rule = GroupRule::parse(&json!([{"attribute": 1, "values": [1.0]}]), 2).unwrap();
        let sampler = GroupSampler::new(&domain, &rows, &rule).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let s = sampler.sample(true, 200, &mut rng);
        assert!(s.chunks(2).all(|r| r[1] == 1.0 && (0.0..=9.0).contains(&r[0])));
    }
}
