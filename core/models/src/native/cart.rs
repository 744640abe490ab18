//! A decision tree (CART: Gini impurity, binary splits at midpoints between consecutive distinct
//! values) grown deterministically by fairpipe-cart, the CART the SG method plugin shares, and
//! flattened into an array of nodes whose leaves hold the share of class-1 training rows (so the
//! tree gives probabilities, not just labels).
//!
//! linfa-trees was used here before: it picks a node's majority class from a `HashMap` whose
//! iteration order changes from run to run, and prunes sibling leaves of the same majority class
//! after growing, so a tie gave a different tree from run to run of the same binary (measured: 43
//! or 49 nodes for the census tree). fairpipe-cart's tree is the same at any thread count, nothing
//! is pruned and leaves keep their own class-1 shares.

use fairpipe_cart::{Codes, Grown, Labels, Rule};
use ndarray::Array2;
use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::Model;

/// How the tree grows: a split must lower the Gini impurity by 1e-5 a row (linfa-trees' default,
/// kept), the first split of the lowest impurity wins (no tolerance), nodes of 4,096 rows or more
/// scan their features in parallel.
const RULE: Rule = Rule { min_decrease: 1e-5, tie: 0.0, parallel_rows: 4096 };

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

impl Tree {
    /// Grow a tree on `x`, `y` (classes 0/1) to at most `max_depth` levels.
    pub fn train(x: &Array2<f64>, y: &[u8], max_depth: Option<usize>) -> Result<Self, ModelError> {
        if x.nrows() == 0 || x.nrows() != y.len() {
            return Err(ModelError::Train(format!("a tree needs rows and one label per row ({} rows, {} labels)", x.nrows(), y.len())));
        }
        if x.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::Train("a tree cannot train on NaN or infinite feature values".into()));
        }
        let rows = x.as_standard_layout();
        let codes = Codes::new(rows.as_slice().expect("a standard-layout array is one slice"), x.ncols());
        let grown = Labels::new(y).grow(&codes, &RULE, max_depth.unwrap_or(usize::MAX));
        let nodes = grown
            .into_iter()
            .map(|node| match node {
                Grown::Split { feature, threshold, left, right } => Node::Split { feature, threshold, left, right },
                Grown::Leaf { ones, rows } => Node::Leaf { p1: ones as f64 / rows.max(1) as f64 },
            })
            .collect();
        Ok(Tree { nodes, n_features: x.ncols() })
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
    /// The encoded vector, read as numbers: any real input is scored.
    fn takes_any_real_input(&self) -> bool {
        true
    }

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
