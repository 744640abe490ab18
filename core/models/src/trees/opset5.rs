//! The `TreeEnsemble` operator of `ai.onnx.ml` opset 5, read into the node and weight lists of the
//! older `TreeEnsembleRegressor` ([`TreeAttributes`]) as ONNX Runtime reads it
//! (`TreeEnsembleAttributesV5::convert_to_v3`): interior nodes (`nodes_*`) and leaves (`leaf_*`)
//! are separate lists, each tree starts at one of `tree_roots`, a `BRANCH_MEMBER` node tests a set
//! (`membership_values`, one run per such node, runs ended by NaN): a set of fewer than 31 values
//! within 0..=30 becomes a chain of `BRANCH_EQ` nodes sharing the true child (which
//! [`super::layout`] collapses again into one set node when the members are integers), a bigger
//! one ONNX Runtime's `BRANCH_MEMBER_BIGSET`, which tests the value truncated to an `int32` (0.5
//! is a member of a set holding 0; covered for sets of integers 0..256). Thresholds and weights are
//! float tensors.
//!
//! `aggregate_function` and `post_transform` are integers. ONNX Runtime (1.32) maps
//! `post_transform` 1 to LOGISTIC and 2 to SOFTMAX, the reverse of the operator's documentation
//! (1 SOFTMAX, 2 LOGISTIC); the executor follows ONNX Runtime, whose figures it must reproduce.

use tract_onnx::pb::NodeProto;

use super::attributes::{tensor_u8, Attributes, Uncovered};
use super::layout::{Mode, TreeAttributes};

/// A `TreeEnsemble` node read: its trees in the older form, the number of targets, how trees are
/// combined and the transform.
#[derive(Debug, Clone)]
pub struct Opset5 {
    /// The trees, as `TreeEnsembleRegressor` attributes.
    pub trees: TreeAttributes,
    /// `n_targets`.
    pub targets: usize,
    /// `aggregate_function` by its name in the older operators ("SUM", …).
    pub aggregate: &'static str,
    /// `post_transform` by its name in the older operators ("LOGISTIC", …), as ONNX Runtime
    /// reads the code.
    pub post: &'static str,
}

/// A child of an interior node: another interior node or a leaf, by position in its list.
#[derive(Debug, Clone, Copy)]
enum Child {
    Node(usize),
    Leaf(usize),
}

/// Longest path accepted (a cycle otherwise; ONNX Runtime's `max_tree_depth_` is 1000).
const MAX_DEPTH: usize = 1000;

struct Reader<'a> {
    a: &'a Attributes<'a>,
    features: Vec<i64>,
    splits: Vec<f32>,
    modes: Vec<u8>,
    yes: Vec<Child>,
    no: Vec<Child>,
    missing: Vec<i64>,
    sets: Vec<Vec<f32>>,
    leaf_targets: Vec<i64>,
    leaf_weights: Vec<f32>,
    out: TreeAttributes,
    budget: usize,
}

impl Opset5 {
    /// Read a `TreeEnsemble` node.
    pub fn read(node: &NodeProto) -> Result<Opset5, Uncovered> {
        let a = Attributes::of(node);
        let modes = match a.tensor("nodes_modes") {
            Some(t) => tensor_u8(t).ok_or_else(|| a.uncovered("nodes_modes is not a uint8 tensor"))?,
            None => return Err(a.uncovered("nodes_modes is missing")),
        };
        let n = modes.len();
        let list = |name: &str| -> Result<Vec<i64>, Uncovered> {
            let v = a.ints(name);
            if v.len() != n {
                return Err(a.uncovered(format!("{name} has {} entries, nodes_modes {n}", v.len())));
            }
            Ok(v)
        };
        let features = list("nodes_featureids")?;
        let children = |ids: Vec<i64>, leafs: Vec<i64>| -> Vec<Child> {
            ids.iter()
                .zip(&leafs)
                .map(|(&id, &leaf)| {
                    let at = usize::try_from(id).unwrap_or(usize::MAX);
                    if leaf != 0 {
                        Child::Leaf(at)
                    } else {
                        Child::Node(at)
                    }
                })
                .collect()
        };
        let yes = children(list("nodes_truenodeids")?, list("nodes_trueleafs")?);
        let no = children(list("nodes_falsenodeids")?, list("nodes_falseleafs")?);
        let missing = a.ints("nodes_missing_value_tracks_true");
        if !missing.is_empty() && missing.len() != n {
            return Err(a.uncovered(format!("nodes_missing_value_tracks_true has {} entries, nodes_modes {n}", missing.len())));
        }
        let splits = a.float_tensor("nodes_splits")?;
        if splits.len() != n {
            return Err(a.uncovered(format!("nodes_splits has {} entries, nodes_modes {n}", splits.len())));
        }
        let leaf_targets = a.ints("leaf_targetids");
        let leaf_weights = a.float_tensor("leaf_weights")?;
        if leaf_targets.len() != leaf_weights.len() {
            return Err(a.uncovered(format!("leaf_targetids has {} entries, leaf_weights {}", leaf_targets.len(), leaf_weights.len())));
        }
        // Each BRANCH_MEMBER node's run of membership_values, up to the NaN that ends it.
        let members = a.float_tensor("membership_values")?;
        let mut runs = members.split(|v| v.is_nan());
        let sets: Vec<Vec<f32>> =
            modes.iter().map(|&m| if m == 6 { runs.next().map(<[f32]>::to_vec).unwrap_or_default() } else { Vec::new() }).collect();
        let targets = a.int("n_targets", 0);
        if targets <= 0 {
            return Err(a.uncovered("n_targets is missing"));
        }
        if let Some(t) = leaf_targets.iter().find(|&&t| t < 0 || t >= targets) {
            return Err(a.uncovered(format!("a leaf is for target {t} of {targets}")));
        }
        let aggregate = match a.int("aggregate_function", 1) {
            0 => "AVERAGE",
            1 => "SUM",
            2 => "MIN",
            3 => "MAX",
            other => return Err(a.uncovered(format!("aggregate_function {other}"))),
        };
        let post = match a.int("post_transform", 0) {
            0 => "NONE",
            1 => "LOGISTIC",
            2 => "SOFTMAX",
            3 => "SOFTMAX_ZERO",
            4 => "PROBIT",
            other => return Err(a.uncovered(format!("post_transform {other}"))),
        };
        let mut reader = Reader {
            a: &a,
            features,
            splits,
            modes,
            yes,
            no,
            missing,
            sets,
            leaf_targets,
            leaf_weights,
            out: TreeAttributes::default(),
            budget: 64 * n + 1024,
        };
        let roots = a.ints("tree_roots");
        if roots.is_empty() {
            return Err(a.uncovered("tree_roots is empty"));
        }
        for (tree, &root) in roots.iter().enumerate() {
            let root =
                usize::try_from(root).ok().filter(|&r| r < n).ok_or_else(|| a.uncovered(format!("tree root {root} of {n} nodes")))?;
            // A tree of one leaf: a node whose two children are the same leaf. ONNX Runtime then takes
            // the leaf at the root's own position (TreeEnsembleAttributesV5::transformInputAllTrees).
            let child = match (reader.yes[root], reader.no[root]) {
                (Child::Leaf(y), Child::Leaf(f)) if y == f => Child::Leaf(root),
                _ => Child::Node(root),
            };
            let mut next_id = 0;
            reader.emit(tree as i64, child, 0, &mut next_id)?;
        }
        Ok(Opset5 { trees: reader.out, targets: targets as usize, aggregate, post })
    }
}

impl Reader<'_> {
    /// Append `child` and everything below it to tree `tree` (ids from `next_id`); its id.
    fn emit(&mut self, tree: i64, child: Child, depth: usize, next_id: &mut i64) -> Result<i64, Uncovered> {
        if depth > MAX_DEPTH {
            return Err(self.a.uncovered(format!("tree {tree} is deeper than {MAX_DEPTH} nodes (a cycle?)")));
        }
        if self.budget == 0 {
            return Err(self.a.uncovered("the trees share too many nodes to be laid out"));
        }
        self.budget -= 1;
        let i = match child {
            Child::Leaf(j) => {
                let (Some(&target), Some(&weight)) = (self.leaf_targets.get(j), self.leaf_weights.get(j)) else {
                    return Err(self.a.uncovered(format!("leaf {j} of {}", self.leaf_weights.len())));
                };
                let id = self.push(tree, next_id, Mode::Leaf, 0, 0.0, false);
                let out = &mut self.out;
                out.weight_trees.push(tree);
                out.weight_nodes.push(id);
                out.weight_targets.push(target);
                out.weight_values.push(weight);
                return Ok(id);
            }
            Child::Node(i) if i < self.modes.len() => i,
            Child::Node(i) => return Err(self.a.uncovered(format!("node {i} of {}", self.modes.len()))),
        };
        let missing = self.missing.get(i).is_some_and(|&m| m == 1);
        let feature = self.features[i];
        // The node, or the chain of BRANCH_EQ nodes a BRANCH_MEMBER node becomes: each sends its
        // value to the shared true child and the others to the next node of the chain.
        let chain: Vec<(Mode, f32)> = match self.modes[i] {
            0 => vec![(Mode::Leq, self.splits[i])],
            1 => vec![(Mode::Lt, self.splits[i])],
            2 => vec![(Mode::Gte, self.splits[i])],
            3 => vec![(Mode::Gt, self.splits[i])],
            4 => vec![(Mode::Eq, self.splits[i])],
            5 => vec![(Mode::Neq, self.splits[i])],
            6 if self.sets[i].is_empty() => return Err(self.a.uncovered(format!("BRANCH_MEMBER node {i} has no membership values"))),
            // Fewer than 31 values within 0..=30: a chain, as ONNX Runtime unrolls it.
            6 if self.sets[i].len() < 31 && self.sets[i].iter().all(|v| (0.0..=30.0).contains(v)) => {
                self.sets[i].iter().map(|&v| (Mode::Eq, v)).collect()
            }
            // A bigger set: ONNX Runtime's BRANCH_MEMBER_BIGSET, the value truncated to an integer.
            6 => {
                self.out.big_sets.push((self.out.node_ids.len(), self.sets[i].clone()));
                vec![(Mode::Member, 0.0)]
            }
            other => return Err(self.a.uncovered(format!("node mode {other}"))),
        };
        let first = self.out.node_ids.len();
        for &(mode, value) in &chain {
            self.push(tree, next_id, mode, feature, value, missing);
        }
        let yes = self.emit(tree, self.yes[i], depth + 1, next_id)?;
        let no = self.emit(tree, self.no[i], depth + 1, next_id)?;
        let last = first + chain.len() - 1;
        for k in first..=last {
            self.out.true_ids[k] = yes;
            self.out.false_ids[k] = if k == last { no } else { self.out.node_ids[k + 1] };
        }
        Ok(self.out.node_ids[first])
    }

    /// Append one node (children patched by the caller); its id.
    fn push(&mut self, tree: i64, next_id: &mut i64, mode: Mode, feature: i64, threshold: f32, missing: bool) -> i64 {
        let id = *next_id;
        *next_id += 1;
        let out = &mut self.out;
        out.tree_ids.push(tree);
        out.node_ids.push(id);
        out.features.push(feature);
        out.thresholds.push(threshold);
        out.modes.push(mode);
        out.true_ids.push(0);
        out.false_ids.push(0);
        out.missing_true.push(i64::from(missing));
        id
    }
}
