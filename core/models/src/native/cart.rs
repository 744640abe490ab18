//! A decision tree (CART: Gini impurity, binary splits at midpoints between consecutive distinct
//! values) grown deterministically, flattened into an array of nodes whose leaves hold the share of
//! class-1 training rows (so the tree gives probabilities, not just labels).
//!
//! Why not linfa-trees (used here before): linfa-trees 0.8.1 picks a node's majority class from a
//! `HashMap` whose iteration order changes from run to run, and prunes sibling leaves of the same
//! majority class after growing, so a tie gave a different tree from run to run of the same binary
//! (measured: 43 or 49 nodes for the census tree). Here the impurity comes from integer counts,
//! splits are compared in a fixed feature order (the first of equal scores wins) and nothing is
//! pruned: the tree is the same at any thread count, and leaves keep their own class-1 shares.

use ndarray::Array2;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::Model;

/// A split must lower the Gini impurity by at least this much (linfa-trees' default, kept).
const MIN_IMPURITY_DECREASE: f64 = 1e-5;

/// Nodes with at least this many rows scan their features in parallel.
const PARALLEL_NODE: usize = 4096;

/// One node: a split (`x[feature] < threshold` goes left) or a leaf with its class-1 share.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Node {
    /// Internal node.
    Split {
        /// Feature index.
        feature: usize,
        /// Rows with a smaller value go left.
        threshold: f64,
        /// Index of the left child.
        left: usize,
        /// Index of the right child.
        right: usize,
    },
    /// Leaf.
    Leaf {
        /// Share of class-1 training rows reaching the leaf.
        p1: f64,
    },
}

/// A fitted decision tree.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tree {
    nodes: Vec<Node>,
    n_features: usize,
}

/// The training rows as per-feature codes of their sorted distinct values.
struct Codes {
    /// Per feature: its distinct values, ascending.
    values: Vec<Vec<f64>>,
    /// Per feature: each row's index into `values`.
    codes: Vec<Vec<u32>>,
}

impl Codes {
    fn new(x: &Array2<f64>) -> Self {
        let (values, codes) = x
            .columns()
            .into_iter()
            .map(|column| {
                let mut distinct: Vec<f64> = column.to_vec();
                distinct.sort_by(f64::total_cmp);
                distinct.dedup_by(|a, b| a.total_cmp(b).is_eq());
                let codes = column.iter().map(|v| distinct.partition_point(|d| d.total_cmp(v).is_lt()) as u32).collect();
                (distinct, codes)
            })
            .unzip();
        Codes { values, codes }
    }
}

/// Gini impurity of a node with `ones` class-1 rows of `n`, times `n` (exact from the counts).
fn weighted_gini(ones: usize, n: usize) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let (ones, n) = (ones as f64, n as f64);
    2.0 * ones * (n - ones) / n
}

/// A candidate split of a node on one feature: its weighted impurity, and the codes of the
/// node's consecutive distinct values it falls between (`left` and below go left).
#[derive(Debug, Clone, Copy)]
struct Split {
    score: f64,
    left: u32,
    right: u32,
}

/// The best split of `rows` on one feature (the first of equal scores), if the rows take two
/// values or more.
fn best_split_of(codes: &[u32], n_values: usize, rows: &[u32], y: &[u8]) -> Option<Split> {
    let mut count = vec![0usize; n_values];
    let mut ones = vec![0usize; n_values];
    for &r in rows {
        let c = codes[r as usize] as usize;
        count[c] += 1;
        ones[c] += usize::from(y[r as usize]);
    }
    let (n, total_ones) = (rows.len(), ones.iter().sum::<usize>());
    let (mut left_n, mut left_ones) = (0usize, 0usize);
    let mut previous: Option<u32> = None;
    let mut best: Option<Split> = None;
    for code in 0..n_values {
        if count[code] == 0 {
            continue;
        }
        if let Some(left) = previous {
            let score = weighted_gini(left_ones, left_n) + weighted_gini(total_ones - left_ones, n - left_n);
            if best.is_none_or(|b| score < b.score) {
                best = Some(Split { score, left, right: code as u32 });
            }
        }
        left_n += count[code];
        left_ones += ones[code];
        previous = Some(code as u32);
    }
    best
}

impl Tree {
    /// Grow a tree on `x`, `y` (classes 0/1) to at most `max_depth` levels.
    pub fn train(x: &Array2<f64>, y: &[u8], max_depth: Option<usize>) -> Result<Self, ModelError> {
        if x.nrows() == 0 || x.nrows() != y.len() {
            return Err(ModelError::Train(format!("a tree needs rows and one label per row ({} rows, {} labels)", x.nrows(), y.len())));
        }
        if x.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::Train("a tree cannot train on NaN or infinite feature values".into()));
        }
        let codes = Codes::new(x);
        let mut tree = Tree { nodes: Vec::new(), n_features: x.ncols() };
        let rows: Vec<u32> = (0..x.nrows() as u32).collect();
        tree.grow(&codes, y, rows, 0, max_depth.unwrap_or(usize::MAX));
        Ok(tree)
    }

    /// Grow the node for `rows` at `depth`; returns its index.
    fn grow(&mut self, codes: &Codes, y: &[u8], rows: Vec<u32>, depth: usize, max_depth: usize) -> usize {
        let idx = self.nodes.len();
        let n = rows.len();
        let ones: usize = rows.iter().map(|&r| usize::from(y[r as usize])).sum();
        self.nodes.push(Node::Leaf { p1: ones as f64 / n.max(1) as f64 });
        if n < 2 || depth >= max_depth || ones == 0 || ones == n {
            return idx;
        }
        let scan = |f: usize| best_split_of(&codes.codes[f], codes.values[f].len(), &rows, y);
        let per_feature: Vec<Option<Split>> = if n >= PARALLEL_NODE {
            (0..codes.values.len()).into_par_iter().map(scan).collect()
        } else {
            (0..codes.values.len()).map(scan).collect()
        };
        // The first feature with the lowest impurity wins, whatever the schedule.
        let mut best: Option<(usize, Split)> = None;
        for (f, split) in per_feature.into_iter().enumerate() {
            if let Some(split) = split {
                if best.is_none_or(|(_, b)| split.score < b.score) {
                    best = Some((f, split));
                }
            }
        }
        let Some((feature, split)) = best else { return idx };
        if (weighted_gini(ones, n) - split.score) / (n as f64) < MIN_IMPURITY_DECREASE {
            return idx;
        }
        let values = &codes.values[feature];
        let threshold = (values[split.left as usize] + values[split.right as usize]) / 2.0;
        let (left_rows, right_rows): (Vec<u32>, Vec<u32>) = rows.iter().partition(|&&r| codes.codes[feature][r as usize] <= split.left);
        drop(rows);
        let left = self.grow(codes, y, left_rows, depth + 1, max_depth);
        let right = self.grow(codes, y, right_rows, depth + 1, max_depth);
        self.nodes[idx] = Node::Split { feature, threshold, left, right };
        idx
    }

    /// Index of the leaf `row` reaches.
    pub fn leaf_of(&self, row: &[f64]) -> usize {
        let mut i = 0;
        while let Node::Split { feature, threshold, left, right } = self.nodes[i] {
            let next = if row[feature] < threshold { left } else { right };
            if next == i {
                break;
            }
            i = next;
        }
        i
    }

    /// Number of leaves.
    pub fn n_leaves(&self) -> usize {
        self.nodes.iter().filter(|n| matches!(n, Node::Leaf { .. })).count()
    }
}

impl Model for Tree {
    fn n_features(&self) -> usize {
        self.n_features
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        for (o, row) in out.iter_mut().zip(x.chunks_exact(self.n_features)) {
            *o = match self.nodes[self.leaf_of(row)] {
                Node::Leaf { p1 } => p1,
                Node::Split { .. } => 0.5,
            };
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("decision tree ({} leaves)", self.n_leaves())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows where class 1 is `x0 ≥ 5`; x1 is noise.
    fn threshold_data() -> (Array2<f64>, Vec<u8>) {
        let x = Array2::from_shape_fn((400, 2), |(i, j)| if j == 0 { (i % 10) as f64 } else { ((i * 7) % 3) as f64 });
        let y = (0..400).map(|i| u8::from(i % 10 >= 5)).collect();
        (x, y)
    }

    #[test]
    fn a_tree_finds_the_planted_threshold_at_the_midpoint() {
        let (x, y) = threshold_data();
        let tree = Tree::train(&x, &y, Some(4)).unwrap();
        assert!(matches!(tree.nodes[0], Node::Split { feature: 0, threshold, .. } if threshold == 4.5), "{:?}", tree.nodes[0]);
        assert_eq!(tree.n_leaves(), 2, "pure children are not split again: {:?}", tree.nodes);
        let mut p = vec![0.0; 2];
        tree.predict_into(&[4.0, 1.0, 5.0, 1.0], &mut p).unwrap();
        assert_eq!(p, vec![0.0, 1.0]);
    }

    #[test]
    fn equal_splits_go_to_the_first_feature_and_leaves_keep_their_shares() {
        // x0 and x1 are the same column: a tie every time; the first feature must win. Leaves with
        // the same majority class are not merged (their class-1 shares differ).
        let x = Array2::from_shape_fn((300, 2), |(i, _)| (i % 3) as f64);
        let y: Vec<u8> = (0..300).map(|i| u8::from(i % 3 == 2 || (i % 3 == 1 && i % 10 < 3))).collect();
        let a = Tree::train(&x, &y, Some(3)).unwrap();
        assert!(a.nodes.iter().all(|n| !matches!(n, Node::Split { feature: 1, .. })), "{:?}", a.nodes);
        let shares: Vec<f64> = a.nodes.iter().filter_map(|n| if let Node::Leaf { p1 } = n { Some(*p1) } else { None }).collect();
        assert_eq!(shares.len(), 3, "{shares:?}");
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let b = pool.install(|| Tree::train(&x, &y, Some(3)).unwrap());
            assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap(), "{threads} threads");
        }
    }

    #[test]
    fn non_finite_features_are_refused() {
        let (mut x, y) = threshold_data();
        x[[3, 1]] = f64::NAN;
        assert!(Tree::train(&x, &y, Some(3)).unwrap_err().to_string().contains("NaN"));
    }
}
