//! Decision tree grown with linfa-trees, flattened into an array of nodes whose leaves hold the
//! share of class-1 training rows (so the tree gives probabilities, not just labels).

use linfa::prelude::*;
use linfa_trees::{DecisionTree, TreeNode};
use ndarray::{Array1, Array2};
use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::models::Model;

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
        let targets: Array1<usize> = y.iter().map(|&v| v as usize).collect();
        let data = linfa::Dataset::new(x.clone(), targets);
        let fitted: DecisionTree<f64, usize> =
            DecisionTree::params().max_depth(max_depth).fit(&data).map_err(|e| ModelError::Train(e.to_string()))?;
        let mut tree = Tree { nodes: Vec::new(), n_features: x.ncols() };
        tree.flatten(fitted.root_node());
        // Leaf probabilities from the training rows that reach each leaf.
        let mut counts = vec![(0usize, 0usize); tree.nodes.len()];
        for (row, &label) in x.outer_iter().zip(y) {
            let leaf = tree.leaf_of(row.as_slice().unwrap_or(&row.to_vec()));
            counts[leaf].0 += 1;
            counts[leaf].1 += usize::from(label);
        }
        for (node, (n, ones)) in tree.nodes.iter_mut().zip(counts) {
            if let Node::Leaf { p1 } = node {
                if n > 0 {
                    *p1 = ones as f64 / n as f64;
                }
            }
        }
        Ok(tree)
    }

    fn flatten(&mut self, node: &TreeNode<f64, usize>) -> usize {
        let idx = self.nodes.len();
        if node.is_leaf() {
            self.nodes.push(Node::Leaf { p1: node.prediction().map(|p| p as f64).unwrap_or(0.0) });
            return idx;
        }
        let (feature, threshold, _) = node.split();
        self.nodes.push(Node::Split { feature, threshold, left: 0, right: 0 });
        let children = node.children();
        let left = children[0].as_ref().map(|c| self.flatten(c)).unwrap_or(idx);
        let right = children[1].as_ref().map(|c| self.flatten(c)).unwrap_or(idx);
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
