//! SG Algorithm 2: a local explanation of the model around an input t, as the decision path of t
//! in a decision tree fitted to perturbed samples labelled by the model.
//!
//! The samples draw every feature independently from its empirical value frequencies (fairpipe
//! passes the seed rows, drawn from the training data, as the empirical sample); sample 0 is t
//! itself. The tree is a deterministic CART ([`crate::cart`]). A predicate's confidence is the share
//! of the samples reaching its node that take t's branch.

use rand::Rng;

use crate::cart::{Cart, Node};

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
    columns: Vec<Vec<f64>>,
}

impl Empirical {
    /// From `rows` (row-major, `width` columns).
    pub fn new(rows: &[f64], width: usize) -> Self {
        let columns = (0..width).map(|j| rows.chunks_exact(width).map(|r| r[j]).collect()).collect();
        Empirical { columns }
    }

    /// `n` rows, each feature drawn independently by its empirical frequency; row 0 is `t`.
    pub fn samples<R: Rng>(&self, t: &[f64], n: usize, rng: &mut R) -> Vec<f64> {
        let mut out = Vec::with_capacity(n * t.len());
        out.extend_from_slice(t);
        for _ in 1..n {
            for col in &self.columns {
                out.push(col[rng.gen_range(0..col.len())]);
            }
        }
        out
    }
}

/// The decision path of `rows[0]` in a tree fitted to `rows` labelled `labels` (0/1).
pub fn decision_path(rows: &[f64], width: usize, labels: &[u8]) -> Vec<Predicate> {
    if labels.iter().all(|&l| l == labels[0]) {
        return Vec::new();
    }
    let tree = Cart::fit(rows, width, labels, 64);
    let t = &rows[..width];
    let mut reaching: Vec<usize> = (0..labels.len()).collect();
    let mut path = Vec::new();
    for (node, go_left) in tree.path(t) {
        let Node::Split { feature, threshold, .. } = tree.nodes[node] else { break };
        let same: Vec<usize> = reaching.iter().copied().filter(|&i| (rows[i * width + feature] < threshold) == go_left).collect();
        path.push(Predicate { feature, threshold, less: go_left, confidence: same.len() as f64 / reaching.len().max(1) as f64 });
        reaching = same;
    }
    path
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
        let path = decision_path(&rows, width, &labels);
        assert!(!path.is_empty());
        let t = &rows[..2];
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
        assert_eq!(&s[..2], &[9.0, 9.0]);
        assert!(s[2..].chunks(2).all(|r| [1.0, 2.0].contains(&r[0]) && [10.0, 20.0].contains(&r[1])));
    }
}
