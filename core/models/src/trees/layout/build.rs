//! Laying an ensemble out: the trees copied depth-first into [`Layout::nodes`] (chains of
//! `BRANCH_EQ` nodes turned into set nodes, BRANCH_LEQ nodes with missing values signed), and the
//! trees that are read as an [`Oblivious`] table or as [`Masked`] comparisons found.

use std::collections::HashMap;

use super::*;

/// A node as copied: its mode (or [`Mode::Member`]), children as attribute positions, its set and
/// whether the set tests the value truncated ([`TRUNCATE`]).
#[derive(Debug, Clone, Copy)]
struct Branch {
    mode: Mode,
    yes: usize,
    no: usize,
    set: Option<[u64; SET_WORDS]>,
    truncate: bool,
}

/// The set of small integers that a chain of `BRANCH_EQ` nodes starting at `i` sends to its true
/// child, and the chain's last false child: the chain's nodes compare one feature, share their
/// true child and their missing-value direction, and every threshold is an integer in
/// `0..SET_BITS`. `None` when there is no chain of two or more such nodes. A value reaches the
/// true child through the chain exactly when it equals one of the thresholds (NaN equals none and
/// follows the shared missing-value direction), which is what the set tests.
fn equality_chain(
    a: &TreeAttributes,
    children: &[(usize, usize)],
    missing: &dyn Fn(usize) -> bool,
    i: usize,
) -> Option<([u64; SET_WORDS], usize)> {
    let small = |t: f32| t >= 0.0 && t < SET_BITS as f32 && t.fract() == 0.0;
    let (yes, mut next) = children[i];
    let mut set = [0u64; SET_WORDS];
    let mut count = 0;
    let mut at = i;
    loop {
        let t = a.thresholds[at];
        if !small(t) {
            return None;
        }
        let k = t as usize;
        set[k / 64] |= 1 << (k % 64);
        count += 1;
        let follows = a.modes[next] == Mode::Eq
            && a.features[next] == a.features[i]
            && children[next].0 == yes
            && missing(next) == missing(i)
            && count < SET_BITS;
        if !follows {
            break;
        }
        at = next;
        next = children[at].1;
    }
    Some((set, next))
}

/// The least f32 above `t` (not NaN or +inf); `f32::next_up` is newer than the crate's MSRV.
fn next_up(t: f32) -> f32 {
    if t == 0.0 {
        f32::from_bits(1)
    } else if t > 0.0 {
        f32::from_bits(t.to_bits() + 1)
    } else {
        f32::from_bits(t.to_bits() - 1)
    }
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
        // Chains of BRANCH_EQ on one feature become one set-membership node.
        let mut big_sets: HashMap<usize, [u64; SET_WORDS]> = HashMap::new();
        for (i, values) in &a.big_sets {
            let mut set = [0u64; SET_WORDS];
            for &v in values {
                if !(v >= 0.0 && v < SET_BITS as f32 && v.fract() == 0.0) {
                    return Err(fail(format!("a set holds {v}; sets of integers 0..{SET_BITS} are covered")));
                }
                set[v as usize / 64] |= 1 << (v as usize % 64);
            }
            big_sets.insert(*i, set);
        }
        let branches: Vec<Branch> = (0..n)
            .map(|i| {
                let (yes, no) = children[i];
                if a.modes[i] == Mode::Member {
                    let set = big_sets
                        .get(&i)
                        .copied()
                        .ok_or_else(|| fail(format!("node {} of tree {} has no set", a.node_ids[i], a.tree_ids[i])))?;
                    return Ok(Branch { mode: Mode::Member, yes, no, set: Some(set), truncate: true });
                }
                Ok(match (a.modes[i] == Mode::Eq).then(|| equality_chain(a, &children, &missing, i)).flatten() {
                    Some((set, no)) => Branch { mode: Mode::Member, yes, no, set: Some(set), truncate: false },
                    None => Branch { mode: a.modes[i], yes, no, set: None, truncate: false },
                })
            })
            .collect::<Result<_, Uncovered>>()?;
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
        let mut layout = Layout { sets: vec![[0; SET_WORDS]], ..Layout::default() };
        let branch_modes: Vec<Mode> = branches.iter().map(|b| b.mode).filter(|m| *m != Mode::Leaf).collect();
        layout.same_mode = branch_modes.first().copied().filter(|first| branch_modes.iter().all(|m| m == first));
        layout.truncates = branches.iter().any(|b| b.truncate);
        layout.leq_and_sets = branch_modes.contains(&Mode::Member) && branch_modes.iter().all(|m| matches!(m, Mode::Leq | Mode::Member));
        layout.has_missing = (0..n).any(missing);
        for root in roots {
            let start = layout.nodes.len() as u32;
            let (mut depth, mut shallowest) = (0u32, u32::MAX);
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
                let leaf = a.modes[i] == Mode::Leaf;
                // A leaf is named with its LEAF bit wherever the walk meets it.
                let named = if leaf { here | LEAF } else { here };
                if let Some((p, yes)) = parent {
                    layout.nodes[p].children[usize::from(!yes)] = named;
                }
                let feature = if leaf { 0 } else { a.features[i] };
                let feature = u32::try_from(feature).map_err(|_| fail(format!("node {} reads feature {feature}", a.node_ids[i])))?;
                if feature & FEATURE_MISSING != 0 {
                    return Err(fail(format!("node {} reads feature {feature}", a.node_ids[i])));
                }
                layout.max_feature = layout.max_feature.max(feature as usize);
                let branch = branches[i];
                let set = match branch.set {
                    Some(set) => {
                        layout.sets.push(set);
                        (layout.sets.len() - 1) as u32
                    }
                    None => 0,
                };
                if set >= 1 << (32 - SET_SHIFT) {
                    return Err(fail("too many categorical splits".into()));
                }
                // A set node's threshold is NaN, so that `x <= t` never holds there (see `goes`).
                let threshold = if leaf || branch.mode == Mode::Member { f32::NAN } else { a.thresholds[i] };
                let missing_bit = if missing(i) && !leaf { FEATURE_MISSING } else { 0 };
                layout.nodes.push(Node { threshold, feature: feature | missing_bit, children: [named, named] });
                let truncate = if branch.truncate { TRUNCATE } else { 0 };
                layout.flags.push(branch.mode.outcomes() | if missing(i) && !leaf { MISSING } else { 0 } | truncate | set << SET_SHIFT);
                if leaf {
                    depth = depth.max(d);
                    shallowest = shallowest.min(d);
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
                    let Branch { yes, no, .. } = branch;
                    // The false child is pushed first so that the true child follows its parent.
                    stack.push((no, d + 1, Some((here as usize, false))));
                    stack.push((yes, d + 1, Some((here as usize, true))));
                }
            }
            layout.trees.push(TreeRoot { root: start, depth, shallowest });
            let oblivious = layout.oblivious_tree(start, depth, shallowest);
            layout.oblivious.push(oblivious);
        }
        layout.sign_missing();
        layout.sets.resize(layout.sets.len().next_power_of_two(), [0; SET_WORDS]);
        // Padded to a power of two with leaves, so that a node's index masked is always in bounds.
        let padded = layout.nodes.len().next_power_of_two();
        if padded > LEAF as usize {
            return Err(fail("the trees have too many nodes".into()));
        }
        while layout.nodes.len() < padded {
            let here = layout.nodes.len() as u32 | LEAF;
            layout.nodes.push(Node { threshold: f32::NAN, feature: 0, children: [here, here] });
            layout.flags.push(0);
            layout.leaf_value.push(0.0);
            layout.leaf_weights.push((0, 0));
        }
        // After the sets are padded: a set is found by its index masked.
        layout.masked = (0..layout.trees.len()).map(|t| layout.masked_tree(t)).collect();
        layout.bin_masked();
        Ok(layout)
    }

    /// For BRANCH_LEQ everywhere with missing values going to the true child at some nodes: every
    /// node made a test `x < c` of the value `x` with its sign flipped at those nodes (`v <= t` is
    /// `v < next_up(t)` but for NaN, which fails both; `v <= t or v is NaN` is `not -v < -t`, so
    /// those nodes' children swap), which the walk for [`SIGNED`] makes without a test for NaN.
    /// Not when a threshold is NaN, or +inf at a node whose missing values go to the false child.
    fn sign_missing(&mut self) {
        if !(self.same_mode == Some(Mode::Leq) || self.leq_and_sets) || !self.has_missing {
            return;
        }
        let is_branch = |i: usize, node: &Node| node.children[0] != i as u32 | LEAF;
        let flags = &self.flags;
        let is_set = |i: usize| flags[i] >> SET_SHIFT != 0;
        let covered = self.nodes.iter().enumerate().filter(|(i, node)| is_branch(*i, node)).all(|(i, node)| {
            let missing = node.feature & FEATURE_MISSING != 0;
            if is_set(i) {
                // A set node's missing values stay with its set test.
                return !missing;
            }
            !node.threshold.is_nan() && (missing || node.threshold != f32::INFINITY)
        });
        if !covered {
            return;
        }
        for i in 0..self.nodes.len() {
            let set = is_set(i);
            let node = &mut self.nodes[i];
            if !is_branch(i, node) || set {
                continue;
            }
            if node.feature & FEATURE_MISSING != 0 {
                node.threshold = -node.threshold;
                node.children.swap(0, 1);
            } else {
                node.threshold = next_up(node.threshold);
            }
        }
        self.signed = true;
        for (tree, root) in self.trees.iter().enumerate() {
            self.oblivious[tree] = self.oblivious_tree(root.root, root.depth, root.shallowest);
        }
    }

    /// Tree `t` as [`Masked`], when its branches make plain comparisons (one mode for every node;
    /// missing values only with BRANCH_LEQ or BRANCH_LT) or are BRANCH_LEQ and set nodes, it is
    /// not [`Oblivious`] and it has at most [`MASKED_LEAVES`] leaves.
    fn masked_tree(&self, t: usize) -> Option<Masked> {
        // Not the walk that reads each node's outcome bits (`Layout::leaves`: mixed modes, and
        // BRANCH_GT/GTE with missing values).
        let plain = match (self.same_mode, self.has_missing) {
            (Some(Mode::Leq | Mode::Lt | Mode::Gt | Mode::Gte), false) | (Some(Mode::Leq | Mode::Lt), true) => !self.leq_and_sets,
            _ => self.leq_and_sets,
        };
        let TreeRoot { root, depth, .. } = self.trees[t];
        if !plain || self.oblivious[t].is_some() || depth == 0 {
            return None;
        }
        // Leaves numbered from the left: a depth-first walk taking the true child first. A node's
        // true subtree holds the leaves numbered between its entry and the false child's entry.
        let mut tree =
            Masked { nodes: Vec::new(), set_nodes: Vec::new(), set_tables: Vec::new(), leaves: Vec::new(), count: 0, binned: None };
        let mut stack = vec![(root, None::<usize>)];
        // Per branch: the comparison and its mask, its flags, the number of its true subtree's
        // first leaf.
        let mut branches: Vec<(MaskedNode, u32, usize)> = Vec::new();
        while let Some((i, closes)) = stack.pop() {
            if tree.leaves.len() > MASKED_LEAVES {
                return None;
            }
            if let Some(k) = closes {
                // Entering branch k's false child: its true subtree's leaves are all numbered
                // (at least one, and all of them among the first 32).
                let first = branches[k].2;
                let count = tree.leaves.len() - first;
                let bits = if count >= 32 { u32::MAX } else { ((1u32 << count) - 1) << first };
                branches[k].0.keep = !bits;
            }
            if self.is_leaf(i) {
                tree.leaves.push(i);
                continue;
            }
            let node = self.nodes[i as usize];
            let k = branches.len();
            branches.push((MaskedNode { comparison: node.comparison(), keep: 0 }, self.flags[i as usize], tree.leaves.len()));
            let [yes, no] = node.children.map(|c| c & !LEAF);
            stack.push((no, Some(k)));
            stack.push((yes, None));
        }
        if tree.leaves.len() > MASKED_LEAVES {
            return None;
        }
        let last = *tree.leaves.last()?;
        tree.count = tree.leaves.len();
        tree.leaves.resize(MASKED_LEAVES, last);
        for (node, flags, _) in branches {
            let feature = node.comparison.feature;
            if flags >> SET_SHIFT == 0 {
                tree.nodes.push(node);
            } else if feature & FEATURE_MISSING != 0 {
                tree.set_nodes.push((node, flags));
            } else {
                let shift = if flags & TRUNCATE != 0 { 16 } else { 0 };
                let set = Self::set(&self.sets, flags);
                let at = match tree.set_tables.iter().position(|t| (t.feature, t.shift) == (feature, shift)) {
                    Some(at) => at,
                    None => {
                        tree.set_tables.push(SetTable { feature, shift, masks: vec![u32::MAX] });
                        tree.set_tables.len() - 1
                    }
                };
                let table = &mut tree.set_tables[at];
                let largest = (0..SET_BITS as u32).rev().find(|&k| key_in(set, k)).unwrap_or(0) as usize;
                // Grown to the set's largest member (the entry past the members copied on).
                let others = *table.masks.last().unwrap_or(&u32::MAX);
                if table.masks.len() < largest + 2 {
                    table.masks.resize(largest + 2, others);
                }
                for (k, mask) in table.masks.iter_mut().enumerate() {
                    if !key_in(set, k as u32) {
                        *mask &= node.keep;
                    }
                }
            }
        }
        Some(tree)
    }

    /// The tree at `root` as [`Oblivious`], if it is.
    fn oblivious_tree(&self, root: u32, depth: u32, shallowest: u32) -> Option<Oblivious> {
        if depth == 0 || depth != shallowest || depth > OBLIVIOUS_DEPTH {
            return None;
        }
        let comparison = |i: u32| {
            let node = &self.nodes[i as usize];
            (node.feature, node.threshold.to_bits(), self.flags[i as usize])
        };
        let mut level = vec![root];
        let mut levels = Vec::new();
        for _ in 0..depth {
            let first = level[0];
            if level.iter().any(|&i| self.is_leaf(i) || comparison(i) != comparison(first)) {
                return None;
            }
            levels.push((self.nodes[first as usize], self.flags[first as usize]));
            level = level.iter().flat_map(|&i| self.nodes[i as usize].children.map(|c| c & !LEAF)).collect();
        }
        Some(Oblivious { levels, leaves: level })
    }
}
