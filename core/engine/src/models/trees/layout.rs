//! The flat layout of a tree ensemble for batch evaluation: every tree's nodes copied depth-first
//! into one array of 16-byte nodes (threshold, feature, the two children), leaves pointing to
//! themselves so that a group of rows walks a tree in lockstep without a test per step, and the
//! leaves' weights beside them.
//!
//! Trees are read as ONNX Runtime reads them (`TreeEnsembleCommon::Init`): nodes are identified by
//! `(tree id, node id)`; each run of equal tree ids in attribute order is one tree whose root is the
//! run's first node; a leaf's weights are taken in the order of `(tree id, node id)` and then of
//! the attribute, weights naming a node that is not a leaf are ignored.

use std::collections::HashMap;

use super::attributes::Uncovered;

/// How a node compares the feature `x` with its threshold `t` (`nodes_modes`); the values are
/// ONNX Runtime's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// A leaf.
    Leaf = 1,
    /// `x <= t` goes to the true child.
    Leq = 2,
    /// `x < t`.
    Lt = 4,
    /// `x >= t`.
    Gte = 6,
    /// `x > t`.
    Gt = 8,
    /// `x == t`.
    Eq = 10,
    /// `x != t`.
    Neq = 12,
}

impl Mode {
    /// Read `nodes_modes`' text; unknown text is `BRANCH_NEQ`, as in ONNX Runtime.
    pub fn parse(text: &str) -> Mode {
        match text {
            "LEAF" => Mode::Leaf,
            "BRANCH_LEQ" => Mode::Leq,
            "BRANCH_LT" => Mode::Lt,
            "BRANCH_GTE" => Mode::Gte,
            "BRANCH_GT" => Mode::Gt,
            "BRANCH_EQ" => Mode::Eq,
            _ => Mode::Neq,
        }
    }
}

/// Flag of a node whose missing value (NaN) goes to the true child.
pub const MISSING_TRUE: u8 = 16;

/// One node: 16 bytes. A leaf has `yes == no ==` its own index and feature 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Node {
    /// The threshold, as f32 (ONNX Runtime's threshold type for float input).
    pub threshold: f32,
    /// The feature compared.
    pub feature: u32,
    /// The child when the comparison holds.
    pub yes: u32,
    /// The child otherwise.
    pub no: u32,
}

/// One tree: its root and the longest path from it to a leaf.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeRoot {
    /// Index of the root in [`Layout::nodes`].
    pub root: u32,
    /// Steps from the root to its deepest leaf.
    pub depth: u32,
}

/// A leaf's weight for one class or target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weight {
    /// The class or target.
    pub target: u32,
    /// The weight (f32, as ONNX Runtime keeps it).
    pub value: f32,
}

/// The node attributes of a tree operator, as read from the ONNX node.
#[derive(Debug, Clone, Default)]
pub struct TreeAttributes {
    /// `nodes_treeids`.
    pub tree_ids: Vec<i64>,
    /// `nodes_nodeids`.
    pub node_ids: Vec<i64>,
    /// `nodes_featureids`.
    pub features: Vec<i64>,
    /// `nodes_values`.
    pub thresholds: Vec<f32>,
    /// `nodes_modes`.
    pub modes: Vec<Mode>,
    /// `nodes_truenodeids`.
    pub true_ids: Vec<i64>,
    /// `nodes_falsenodeids`.
    pub false_ids: Vec<i64>,
    /// `nodes_missing_value_tracks_true` (may be empty).
    pub missing_true: Vec<i64>,
    /// `target_treeids` / `class_treeids`.
    pub weight_trees: Vec<i64>,
    /// `target_nodeids` / `class_nodeids`.
    pub weight_nodes: Vec<i64>,
    /// `target_ids` / `class_ids`.
    pub weight_targets: Vec<i64>,
    /// `target_weights` / `class_weights`.
    pub weight_values: Vec<f32>,
}

/// An ensemble laid out for evaluation.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// Every tree's nodes, depth-first, tree after tree.
    pub nodes: Vec<Node>,
    /// Per node: its [`Mode`] and [`MISSING_TRUE`].
    pub flags: Vec<u8>,
    /// The trees, in ONNX Runtime's order (the order of their sum).
    pub trees: Vec<TreeRoot>,
    /// Per node (leaves only): the first weight (ONNX Runtime's `value_or_unique_weight`).
    pub leaf_value: Vec<f32>,
    /// Per node (leaves only): `(first, count)` in [`Layout::weights`].
    pub leaf_weights: Vec<(u32, u32)>,
    /// The leaves' weights.
    pub weights: Vec<Weight>,
    /// The mode every branch uses, when they all use one.
    pub same_mode: Option<Mode>,
    /// Whether any node sends a missing value to its true child.
    pub has_missing: bool,
    /// The largest feature index read.
    pub max_feature: usize,
}

/// A node's parent in the copy and whether the node is its true child.
type Parent = Option<(usize, bool)>;

/// Longest path accepted (ONNX Runtime's `max_tree_depth_`).
const MAX_DEPTH: u32 = 1000;

impl Layout {
    /// Lay out the trees of `a`; `fail` words an error about the node.
    pub fn build(a: &TreeAttributes, fail: &dyn Fn(String) -> Uncovered) -> Result<Layout, Uncovered> {
        let n = a.tree_ids.len();
        for (name, len) in [
            ("nodes_nodeids", a.node_ids.len()),
            ("nodes_featureids", a.features.len()),
            ("nodes_values", a.thresholds.len()),
            ("nodes_modes", a.modes.len()),
            ("nodes_truenodeids", a.true_ids.len()),
            ("nodes_falsenodeids", a.false_ids.len()),
        ] {
            if len != n {
                return Err(fail(format!("{name} has {len} entries, nodes_treeids {n}")));
            }
        }
        let m = a.weight_trees.len();
        if a.weight_nodes.len() != m || a.weight_targets.len() != m || a.weight_values.len() != m {
            return Err(fail("the weight attributes differ in length".into()));
        }
        if n == 0 {
            return Err(fail("the ensemble has no nodes".into()));
        }
        let mut index: HashMap<(i64, i64), usize> = HashMap::with_capacity(n);
        for i in 0..n {
            if index.insert((a.tree_ids[i], a.node_ids[i]), i).is_some() {
                return Err(fail(format!("node {} of tree {} appears twice", a.node_ids[i], a.tree_ids[i])));
            }
        }
        let missing = |i: usize| a.missing_true.get(i).is_some_and(|&v| v == 1);
        // Children as positions in the attribute lists.
        let mut children = vec![(0usize, 0usize); n];
        for (i, child) in children.iter_mut().enumerate() {
            if a.modes[i] == Mode::Leaf {
                continue;
            }
            let find = |id: i64, which: &str| {
                index.get(&(a.tree_ids[i], id)).copied().filter(|&c| c != i).ok_or_else(|| {
                    fail(format!("node {} of tree {}: its {which} child {id} is not a node of the tree", a.node_ids[i], a.tree_ids[i]))
                })
            };
            *child = (find(a.true_ids[i], "true")?, find(a.false_ids[i], "false")?);
        }
        // Leaf weights in (tree, node, attribute) order.
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by_key(|&k| (a.weight_trees[k], a.weight_nodes[k], k));
        let mut per_node: Vec<Vec<Weight>> = vec![Vec::new(); n];
        for k in order {
            let Some(&i) = index.get(&(a.weight_trees[k], a.weight_nodes[k])) else {
                return Err(fail(format!("a weight names node {} of tree {}, which does not exist", a.weight_nodes[k], a.weight_trees[k])));
            };
            if a.modes[i] != Mode::Leaf {
                continue;
            }
            let target = u32::try_from(a.weight_targets[k]).map_err(|_| fail(format!("weight class/target {}", a.weight_targets[k])))?;
            per_node[i].push(Weight { target, value: a.weight_values[k] });
        }
        // Roots: the first node of each run of equal tree ids.
        let roots: Vec<usize> = (0..n).filter(|&i| i == 0 || a.tree_ids[i] != a.tree_ids[i - 1]).collect();
        let mut layout = Layout::default();
        let branch_modes: Vec<Mode> = a.modes.iter().copied().filter(|m| *m != Mode::Leaf).collect();
        layout.same_mode = branch_modes.first().copied().filter(|first| branch_modes.iter().all(|m| m == first));
        layout.has_missing = (0..n).any(missing);
        for root in roots {
            let start = layout.nodes.len() as u32;
            let mut depth = 0u32;
            // Depth-first copy: attribute position, depth, and the parent's slot to patch.
            let mut stack: Vec<(usize, u32, Parent)> = vec![(root, 0, None)];
            while let Some((i, d, parent)) = stack.pop() {
                if d > MAX_DEPTH {
                    return Err(fail(format!("tree {} is deeper than {MAX_DEPTH} nodes (a cycle?)", a.tree_ids[root])));
                }
                if layout.nodes.len() > 64 * n + 1024 {
                    return Err(fail("the trees share too many nodes to be laid out".into()));
                }
                let here = layout.nodes.len() as u32;
                if let Some((p, yes)) = parent {
                    if yes {
                        layout.nodes[p].yes = here;
                    } else {
                        layout.nodes[p].no = here;
                    }
                }
                let leaf = a.modes[i] == Mode::Leaf;
                let feature = if leaf { 0 } else { a.features[i] };
                let feature = u32::try_from(feature).map_err(|_| fail(format!("node {} reads feature {feature}", a.node_ids[i])))?;
                layout.max_feature = layout.max_feature.max(feature as usize);
                layout.nodes.push(Node { threshold: a.thresholds[i], feature, yes: here, no: here });
                layout.flags.push(a.modes[i] as u8 | if missing(i) { MISSING_TRUE } else { 0 });
                if leaf {
                    depth = depth.max(d);
                    let weights = &per_node[i];
                    if weights.is_empty() {
                        return Err(fail(format!("leaf {} of tree {} has no weight", a.node_ids[i], a.tree_ids[i])));
                    }
                    layout.leaf_value.push(weights[0].value);
                    layout.leaf_weights.push((layout.weights.len() as u32, weights.len() as u32));
                    layout.weights.extend_from_slice(weights);
                } else {
                    layout.leaf_value.push(0.0);
                    layout.leaf_weights.push((0, 0));
                    let (yes, no) = children[i];
                    // The false child is pushed first so that the true child follows its parent.
                    stack.push((no, d + 1, Some((here as usize, false))));
                    stack.push((yes, d + 1, Some((here as usize, true))));
                }
            }
            layout.trees.push(TreeRoot { root: start, depth });
        }
        Ok(layout)
    }

    /// The leaf each of `rows` rows (row-major, `width` values each) reaches in tree `tree`,
    /// written to `leaves`. Rows walk in groups of 8 in lockstep.
    pub fn leaves(&self, tree: usize, x: &[f32], width: usize, leaves: &mut [u32]) {
        match (self.same_mode, self.has_missing) {
            (Some(Mode::Leq), false) => self.walk::<{ Mode::Leq as u8 }, false>(tree, x, width, leaves),
            (Some(Mode::Lt), false) => self.walk::<{ Mode::Lt as u8 }, false>(tree, x, width, leaves),
            (Some(Mode::Gt), false) => self.walk::<{ Mode::Gt as u8 }, false>(tree, x, width, leaves),
            (Some(Mode::Gte), false) => self.walk::<{ Mode::Gte as u8 }, false>(tree, x, width, leaves),
            (Some(Mode::Leq), true) => self.walk::<{ Mode::Leq as u8 }, true>(tree, x, width, leaves),
            (Some(Mode::Lt), true) => self.walk::<{ Mode::Lt as u8 }, true>(tree, x, width, leaves),
            _ => self.walk::<0, true>(tree, x, width, leaves),
        }
    }

    #[inline(always)]
    fn step<const MODE: u8, const MISSING: bool>(&self, i: u32, row: &[f32]) -> u32 {
        let node = self.nodes[i as usize];
        let v = row[node.feature as usize];
        let t = node.threshold;
        let mode = if MODE == 0 { self.flags[i as usize] & 0x0f } else { MODE };
        let mut go = match mode {
            2 => v <= t,
            4 => v < t,
            6 => v >= t,
            8 => v > t,
            10 => v == t,
            12 => v != t,
            _ => true,
        };
        if MISSING {
            go |= self.flags[i as usize] & MISSING_TRUE != 0 && v.is_nan();
        }
        if go {
            node.yes
        } else {
            node.no
        }
    }

    fn walk<const MODE: u8, const MISSING: bool>(&self, tree: usize, x: &[f32], width: usize, leaves: &mut [u32]) {
        const GROUP: usize = 8;
        let TreeRoot { root, depth } = self.trees[tree];
        let rows = leaves.len();
        let mut r = 0;
        while r + GROUP <= rows {
            let block = &x[r * width..(r + GROUP) * width];
            let mut at = [root; GROUP];
            let mut s = 0;
            while s < depth {
                for (k, i) in at.iter_mut().enumerate() {
                    *i = self.step::<MODE, MISSING>(*i, &block[k * width..(k + 1) * width]);
                }
                s += 1;
                if s >= 8 && s % 4 == 0 && at.iter().all(|&i| self.nodes[i as usize].yes == i) {
                    break;
                }
            }
            leaves[r..r + GROUP].copy_from_slice(&at);
            r += GROUP;
        }
        for (k, leaf) in leaves.iter_mut().enumerate().skip(r) {
            let row = &x[k * width..(k + 1) * width];
            let mut i = root;
            while self.nodes[i as usize].yes != i || self.nodes[i as usize].no != i {
                i = self.step::<MODE, MISSING>(i, row);
            }
            *leaf = i;
        }
    }
}
