//! SG Algorithm 2: a local explanation of the model around an input t, as the decision path of t
//! in a decision tree fitted to perturbed samples labelled by the model.
//!
//! The samples draw every feature independently from its empirical value frequencies (fairpipe
//! passes the seed rows, drawn from the training data, as the empirical sample); sample 0 is t
//! itself. The tree is a deterministic CART ([`crate::cart`]). A predicate's confidence is the share
//! of the samples reaching its node that take t's branch.

use rand::Rng;

use crate::cart::{Cart, Codes};

/// One predicate of a path: `x[feature] < threshold` (`less`) or `x[feature] ≥ threshold`.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicate {
    /// Feature index.
    pub feature: usize,
    /// The split value.
    pub threshold: f64,
    /// `true` for `<`, `false` for `≥`.
    pub less: bool,
    /// Share of the samples at the node that take this branch.
    pub confidence: f64,
}

impl Predicate {
    /// The opposite predicate.
    pub fn negated(&self) -> Predicate {
        Predicate { less: !self.less, ..self.clone() }
    }

    /// Whether `row` satisfies it.
    pub fn holds(&self, row: &[f64]) -> bool {
        (row[self.feature] < self.threshold) == self.less
    }

    /// A canonical key (for the visited-path set).
    pub fn key(&self) -> (usize, u64, bool) {
        (self.feature, self.threshold.to_bits(), self.less)
    }
}

/// Empirical per-feature value distributions.
pub struct Empirical {
    /// Per feature: its distinct values, sorted.
    values: Vec<Vec<f64>>,
    /// Per feature: the code (index into `values`) of each observed entry, in row order; drawing
    /// one uniformly draws a value by its empirical frequency.
    pool: Vec<Vec<u32>>,
}

/// Perturbed samples around an input, both as values (for the model) and as per-feature codes
/// (for the tree).
pub struct Samples {
    /// Row-major values; row 0 is t.
    pub rows: Vec<f64>,
    /// The same rows as per-feature value codes.
    pub codes: Codes,
}

impl Empirical {
    /// From `rows` (row-major, `width` columns).
    pub fn new(rows: &[f64], width: usize) -> Self {
        let Codes { values, codes } = Codes::new(rows, width);
        Empirical { values, pool: codes }
    }

    /// `n` rows, each feature drawn independently by its empirical frequency; row 0 is `t`. The
    /// codes come with the draw (t's value joins a feature's values when it was not observed), so
    /// the tree needs no sorting.
    pub fn samples<R: Rng>(&self, t: &[f64], n: usize, rng: &mut R) -> Samples {
        let width = t.len();
        // Each feature's values with t's inserted; codes at or above its slot shift by one.
        let mut values = Vec::with_capacity(width);
        let mut shift_from = Vec::with_capacity(width);
        let mut t_code = Vec::with_capacity(width);
        for (f, &v) in t.iter().enumerate() {
            let observed = &self.values[f];
            let slot = observed.partition_point(|x| x.total_cmp(&v).is_lt());
            let mut all = observed.clone();
            if observed.get(slot) == Some(&v) {
                shift_from.push(u32::MAX);
            } else {
                all.insert(slot, v);
                shift_from.push(slot as u32);
            }
            t_code.push(slot as u32);
            values.push(all);
        }
        // Every value is drawn in the same order as one row after another, feature by feature
        // (the random stream decides the samples); the buffers are written in place.
        let n = n.max(1);
        let mut rows = vec![0.0; n * width];
        rows[..width].copy_from_slice(t);
        let mut codes: Vec<Vec<u32>> = t_code
            .iter()
            .map(|&c| {
                let mut column = vec![0; n];
                column[0] = c;
                column
            })
            .collect();
        for (i, row) in rows.chunks_exact_mut(width).enumerate().skip(1) {
            for (f, ((pool, value), column)) in self.pool.iter().zip(row.iter_mut()).zip(codes.iter_mut()).enumerate() {
                let observed = pool[rng.gen_range(0..pool.len())];
                *value = self.values[f][observed as usize];
                column[i] = observed + u32::from(observed >= shift_from[f]);
            }
        }
        Samples { rows, codes: Codes { values, codes } }
    }
}

/// The decision path of sample 0 (t) in a tree fitted to the samples labelled `labels` (0/1);
/// empty when the labels are all the same.
pub fn decision_path(samples: &Samples, labels: &[u8]) -> Vec<Predicate> {
    Cart::path_of(&samples.codes, labels, 0, 64)
        .into_iter()
        .map(|step| Predicate {
            feature: step.feature,
            threshold: step.threshold,
            less: step.less,
            confidence: step.taking as f64 / step.reaching.max(1) as f64,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_of_t_describes_t_and_separates_the_labels() {
        // Label = x0 ≥ 5; x1 is noise.
        let width = 2;
        let rows: Vec<f64> = (0..200).flat_map(|i| [f64::from(i % 10), f64::from((i * 7) % 3)]).collect();
        let labels: Vec<u8> = rows.chunks(2).map(|r| u8::from(r[0] >= 5.0)).collect();
        let samples = Samples { codes: Codes::new(&rows, width), rows };
        let path = decision_path(&samples, &labels);
        assert!(!path.is_empty());
        let t = &samples.rows[..2];
        assert!(path.iter().all(|p| p.holds(t)), "t satisfies its own path: {path:?}");
        assert!(path.iter().any(|p| p.feature == 0 && (p.threshold - 4.5).abs() < 1e-9), "{path:?}");
        assert!(path.iter().all(|p| p.confidence > 0.0 && p.confidence <= 1.0));
        assert!(!path[0].negated().holds(t));
    }

    #[test]
    fn samples_start_with_t_and_draw_observed_values() {
        let e = Empirical::new(&[1.0, 10.0, 2.0, 20.0], 2);
        let mut rng = rand::rngs::mock::StepRng::new(0, 1 << 60);
        let s = e.samples(&[9.0, 9.0], 5, &mut rng);
        assert_eq!(&s.rows[..2], &[9.0, 9.0]);
        assert!(s.rows[2..].chunks(2).all(|r| [1.0, 2.0].contains(&r[0]) && [10.0, 20.0].contains(&r[1])));
        // The codes that come with the draw are the ones sorting would give.
        let sorted = Codes::new(&s.rows, 2);
        assert_eq!(s.codes.values, sorted.values);
        assert_eq!(s.codes.codes, sorted.codes);
        // t's value already observed: no new slot.
        let s = e.samples(&[2.0, 10.0], 5, &mut rng);
        assert_eq!(s.codes.values, vec![vec![1.0, 2.0], vec![10.0, 20.0]]);
        assert_eq!(Codes::new(&s.rows, 2).codes, s.codes.codes);
    }
}
