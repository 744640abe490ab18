//! The surrogate: a two-class decision tree as scikit-learn's `DecisionTreeClassifier` grows it
//! with `criterion = "entropy"`, `max_leaf_nodes` set and every other option at its default
//! (AFT's `train_approximate_DT`): best-first growth — the leaf whose best split improves the
//! weighted entropy most is split next — until `max_leaf_nodes` leaves or every leaf is pure or
//! has one distinct row; each split at the midpoint between two consecutive distinct values of its
//! feature, the features of a node tried in a random order (scikit-learn's `random_state = None`)
//! with the first best kept. Leaves predict their majority class (class 0 on a tie, as `argmax`).
//!
//! Rows are kept sorted by every feature once; a split partitions each feature's sorted segment
//! stably, so a node's best split costs one pass over its rows per feature.

use std::collections::BinaryHeap;

use rand::seq::SliceRandom;
use rand::Rng;

/// A node: a split (`x[feature] ≤ threshold` goes left) or a leaf.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// An internal node.
    Split {
        /// Feature index.
        feature: usize,
        /// Split value.
        threshold: f64,
        /// Left child (`≤`).
        left: usize,
        /// Right child (`>`).
        right: usize,
    },
    /// A leaf and its predicted class.
    Leaf {
        /// Majority class.
        class: u8,
    },
}

/// A fitted tree; node 0 is the root.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    /// The nodes.
    pub nodes: Vec<Node>,
}

impl Tree {
    /// The class the tree predicts for `row`.
    pub fn predict(&self, row: &[f64]) -> u8 {
        let mut at = 0;
        loop {
            match self.nodes[at] {
                Node::Split { feature, threshold, left, right } => at = if row[feature] <= threshold { left } else { right },
                Node::Leaf { class } => return class,
            }
        }
    }

    /// Number of leaves.
    pub fn leaves(&self) -> usize {
        self.nodes.iter().filter(|n| matches!(n, Node::Leaf { .. })).count()
    }
}

/// n·H(ones/n) in nats (0 for a pure or empty set).
fn weighted_entropy(ones: usize, n: usize) -> f64 {
    let mut h = 0.0;
    for k in [ones, n - ones] {
        if k > 0 {
            let p = k as f64 / n as f64;
            h -= k as f64 * p.ln();
        }
    }
    h
}

/// The best split of a node: feature, threshold, rows going left, and the decrease of the summed
/// weighted entropy.
#[derive(Debug, Clone, Copy)]
struct Split {
    feature: usize,
    threshold: f64,
    n_left: usize,
    gain: f64,
}

/// A leaf waiting to be split, ordered by its split's gain (ties: the leaf made first).
struct Candidate {
    gain: f64,
    node: usize,
    start: usize,
    end: usize,
    split: Split,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.gain.total_cmp(&other.gain).then_with(|| other.node.cmp(&self.node))
    }
}

/// Grows the tree over rows `x` (row-major, `width` wide) with labels `y`.
struct Grower<'a, R: Rng> {
    x: &'a [f64],
    y: &'a [u8],
    width: usize,
    /// Per feature, the row indices sorted by that feature; a node owns the same index range in
    /// every feature.
    order: Vec<Vec<u32>>,
    goes_left: Vec<bool>,
    scratch: Vec<u32>,
    features: Vec<usize>,
    rng: &'a mut R,
}

impl<R: Rng> Grower<'_, R> {
    fn value(&self, row: u32, f: usize) -> f64 {
        self.x[row as usize * self.width + f]
    }

    /// Majority class and count of class 1 of the node `start..end`.
    fn ones(&self, start: usize, end: usize) -> usize {
        self.order[0][start..end].iter().filter(|&&r| self.y[r as usize] == 1).count()
    }

    /// The best split of the node `start..end`, if it has two distinct rows and both classes.
    fn best_split(&mut self, start: usize, end: usize) -> Option<Split> {
        let n = end - start;
        let ones = self.ones(start, end);
        if n < 2 || ones == 0 || ones == n {
            return None;
        }
        let parent = weighted_entropy(ones, n);
        self.features.shuffle(self.rng);
        let mut best: Option<Split> = None;
        for &f in &self.features {
            let seg = &self.order[f][start..end];
            let mut left_ones = 0;
            for i in 0..n - 1 {
                left_ones += usize::from(self.y[seg[i] as usize] == 1);
                let (v, next) = (self.value(seg[i], f), self.value(seg[i + 1], f));
                if next <= v {
                    continue;
                }
                let n_left = i + 1;
                let children = weighted_entropy(left_ones, n_left) + weighted_entropy(ones - left_ones, n - n_left);
                let gain = parent - children;
                if best.is_none_or(|b| gain > b.gain) {
                    let mid = v / 2.0 + next / 2.0;
                    let threshold = if mid >= next || !mid.is_finite() { v } else { mid };
                    best = Some(Split { feature: f, threshold, n_left, gain });
                }
            }
        }
        best
    }

    /// Partition every feature's segment `start..end` by the split (left rows first, each side
    /// still sorted).
    fn partition(&mut self, start: usize, end: usize, split: &Split) {
        for &r in &self.order[split.feature][start..start + split.n_left] {
            self.goes_left[r as usize] = true;
        }
        for f in 0..self.width {
            if f == split.feature {
                continue;
            }
            self.scratch.clear();
            let seg = &mut self.order[f][start..end];
            let mut l = 0;
            for i in 0..seg.len() {
                let r = seg[i];
                if self.goes_left[r as usize] {
                    seg[l] = r;
                    l += 1;
                } else {
                    self.scratch.push(r);
                }
            }
            seg[l..].copy_from_slice(&self.scratch);
        }
        for &r in &self.order[split.feature][start..start + split.n_left] {
            self.goes_left[r as usize] = false;
        }
    }
}

/// Fit the surrogate to rows `x` (row-major, `width` wide) labelled `y` (0 or 1), with at most
/// `max_leaves` leaves (at least 2); `rng` orders the features of each node.
pub fn fit<R: Rng>(x: &[f64], y: &[u8], width: usize, max_leaves: usize, rng: &mut R) -> Tree {
    let n = y.len();
    let order: Vec<Vec<u32>> = (0..width)
        .map(|f| {
            let mut idx: Vec<u32> = (0..n as u32).collect();
            idx.sort_by(|&a, &b| x[a as usize * width + f].total_cmp(&x[b as usize * width + f]));
            idx
        })
        .collect();
    let mut g = Grower { x, y, width, order, goes_left: vec![false; n], scratch: Vec::new(), features: (0..width).collect(), rng };
    let class = |ones: usize, count: usize| u8::from(2 * ones > count);
    let mut nodes = vec![Node::Leaf { class: class(g.ones(0, n), n) }];
    let mut heap = BinaryHeap::new();
    if let Some(split) = g.best_split(0, n) {
        heap.push(Candidate { gain: split.gain, node: 0, start: 0, end: n, split });
    }
    let mut leaves = 1;
    while leaves < max_leaves.max(2) {
        let Some(c) = heap.pop() else { break };
        g.partition(c.start, c.end, &c.split);
        let mid = c.start + c.split.n_left;
        let (left, right) = (nodes.len(), nodes.len() + 1);
        for (start, end) in [(c.start, mid), (mid, c.end)] {
            let node = nodes.len();
            nodes.push(Node::Leaf { class: class(g.ones(start, end), end - start) });
            if let Some(split) = g.best_split(start, end) {
                heap.push(Candidate { gain: split.gain, node, start, end, split });
            }
        }
        nodes[c.node] = Node::Split { feature: c.split.feature, threshold: c.split.threshold, left, right };
        leaves += 1;
    }
    Tree { nodes }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::*;

    #[test]
    fn fits_its_training_rows_exactly_when_leaves_allow() {
        // An XOR of two thresholds: after the first cut each side needs the other feature's cut,
        // and a cut of `b` first would gain nothing.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for a in 0..10 {
            for b in 0..10 {
                x.extend_from_slice(&[a as f64, b as f64]);
                y.push(u8::from((a >= 5) != (b >= 3)));
            }
        }
        let tree = fit(&x, &y, 2, 1000, &mut rng);
        for (row, &label) in x.chunks_exact(2).zip(&y) {
            assert_eq!(tree.predict(row), label, "{row:?}");
        }
        assert_eq!(tree.leaves(), 4, "two cuts on each side of the XOR");
        let Node::Split { threshold, .. } = tree.nodes[0] else { panic!() };
        assert_eq!(threshold, 4.5, "the cut that gains, at the midpoint");
    }

    #[test]
    fn best_first_growth_stops_at_max_leaves_with_the_largest_gains() {
        // y = 1 when a ≥ 8 (20% of rows) or, a weaker signal, b = 9 (10%).
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for a in 0..10 {
            for b in 0..10 {
                x.extend_from_slice(&[a as f64, b as f64]);
                y.push(u8::from(a >= 8 || b == 9));
            }
        }
        let tree = fit(&x, &y, 2, 2, &mut rng);
        assert_eq!(tree.leaves(), 2);
        assert_eq!(tree.nodes[0], Node::Split { feature: 0, threshold: 7.5, left: 1, right: 2 });
        assert_eq!(fit(&x, &y, 2, 3, &mut rng).leaves(), 3);
    }
}
