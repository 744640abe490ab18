//! The discrimination check: for each row, score every combination of protected values in one
//! batched call and flag the row when a variant's label differs from the row's own (or, with `gamma`,
//! when |f(x) − f(x')| > γ, Aequitas Definition 4.1).

use crate::domain::Domain;
use crate::error::ModelError;
use crate::oracle::Oracle;

/// Rows per model call when checking many rows (times the number of variants).
const ROWS_PER_CALL: usize = 8192;

/// The verdict on one row.
#[derive(Debug, Clone, PartialEq)]
pub struct RowCheck {
    /// Whether some protected variant is treated differently.
    pub discriminatory: bool,
    /// P(class 1) of the row itself.
    pub p: f64,
    /// Index (into [`Domain::protected_combinations`]) of the counterpart: the label-flipping variant
    /// with the largest probability difference, or the variant with the largest difference when
    /// none flips.
    pub counterpart: usize,
    /// P(class 1) of the counterpart.
    pub p_counterpart: f64,
}

/// Checks rows of one domain against one model.
#[derive(Debug, Clone)]
pub struct Checker {
    protected: Vec<usize>,
    combos: Vec<Vec<f64>>,
    width: usize,
    gamma: Option<f64>,
}

impl Checker {
    /// A checker for `domain`; `gamma` switches from label comparison to a probability threshold.
    pub fn new(domain: &Domain, gamma: Option<f64>) -> Self {
        Checker { protected: domain.protected_indices(), combos: domain.protected_combinations(), width: domain.width(), gamma }
    }

    /// Number of protected variants per row.
    pub fn n_variants(&self) -> usize {
        self.combos.len()
    }

    /// Indices of the protected attributes.
    pub fn protected(&self) -> &[usize] {
        &self.protected
    }

    /// `row` with its protected attributes set to combination `combo`.
    pub fn variant(&self, row: &[f64], combo: usize) -> Vec<f64> {
        let mut v = row.to_vec();
        for (k, &idx) in self.protected.iter().enumerate() {
            v[idx] = self.combos[combo][k];
        }
        v
    }

    /// Whether two probabilities count as different treatment.
    pub fn differs(&self, p: f64, q: f64) -> bool {
        match self.gamma {
            Some(g) => (p - q).abs() > g,
            None => (p > 0.5) != (q > 0.5),
        }
    }

    /// Check every row of `rows` (row-major), in batched model calls.
    pub fn check(&self, oracle: &Oracle, rows: &[f64]) -> Result<Vec<RowCheck>, ModelError> {
        let n = rows.len() / self.width.max(1);
        let per_row = self.combos.len() + 1;
        let chunk_rows = (ROWS_PER_CALL / per_row).max(1);
        let mut out = Vec::with_capacity(n);
        let mut batch = Vec::with_capacity(chunk_rows * per_row * self.width);
        for chunk in rows.chunks(chunk_rows * self.width) {
            batch.clear();
            for row in chunk.chunks_exact(self.width) {
                batch.extend_from_slice(row);
                for combo in 0..self.combos.len() {
                    let start = batch.len();
                    batch.extend_from_slice(row);
                    for (k, &idx) in self.protected.iter().enumerate() {
                        batch[start + idx] = self.combos[combo][k];
                    }
                }
            }
            let probs = oracle.predict_proba(&batch)?;
            for scores in probs.chunks_exact(per_row) {
                out.push(self.verdict(scores[0], &scores[1..]));
            }
        }
        Ok(out)
    }

    /// The verdict for a row scored `p` whose variants scored `variants`.
    pub fn verdict(&self, p: f64, variants: &[f64]) -> RowCheck {
        let mut best: Option<(usize, f64, bool)> = None;
        for (c, &q) in variants.iter().enumerate() {
            let flips = self.differs(p, q);
            let gap = (p - q).abs();
            let better = match best {
                None => true,
                Some((_, g, f)) => (flips && !f) || (flips == f && gap > g),
            };
            if better {
                best = Some((c, gap, flips));
            }
        }
        let (counterpart, _, discriminatory) = best.unwrap_or((0, 0.0, false));
        RowCheck { discriminatory, p, counterpart, p_counterpart: variants.get(counterpart).copied().unwrap_or(p) }
    }
}
