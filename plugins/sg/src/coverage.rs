//! Path coverage (SG FSE'19): a decision-tree surrogate of the model, fitted on the model's own
//! predictions over the seed rows (drawn from the training data), its fidelity, and how many of its
//! leaves a set of inputs reaches.

use std::collections::HashSet;

use crate::cart::Cart;

/// A fitted surrogate tree.
pub struct Surrogate {
    tree: Cart,
    width: usize,
    /// Share of the fitting rows on which the surrogate agrees with the model.
    pub fidelity: f64,
}

impl Surrogate {
    /// Fit on `rows` (row-major) labelled by the model (depth at most 10); `None` without rows.
    pub fn fit(rows: &[f64], width: usize, labels: &[u8]) -> Option<Self> {
        if labels.is_empty() {
            return None;
        }
        let tree = Cart::fit(rows, width, labels, 10);
        let agree = rows.chunks_exact(width).zip(labels).filter(|(r, &l)| tree.predict(r) == l).count();
        Some(Surrogate { fidelity: agree as f64 / labels.len() as f64, tree, width })
    }

    /// Distinct leaves reached by `rows`.
    pub fn leaves_reached(&self, rows: &[f64]) -> usize {
        rows.chunks_exact(self.width).filter_map(|r| self.tree.path(r).last().map(|l| l.0)).collect::<HashSet<_>>().len()
    }

    /// Number of leaves.
    pub fn leaves(&self) -> usize {
        self.tree.leaves()
    }
}
