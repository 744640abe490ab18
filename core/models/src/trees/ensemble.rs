//! `TreeEnsembleClassifier`, `TreeEnsembleRegressor` and `TreeEnsemble` (ai.onnx.ml), evaluated in ONNX Runtime's
//! floating-point order: f32 thresholds and weights, each row's scores summed in f32 tree after
//! tree in the order of [`Layout::trees`] (weights of a leaf in their order), then `base_values`,
//! the binary and multiclass rules of ONNX Runtime's `TreeAggregatorClassifier` and its
//! `write_scores` (LOGISTIC, SOFTMAX, SOFTMAX_ZERO, PROBIT) computed in f32 with the same
//! formulas. ONNX Runtime runs sessions of one thread here (as fairpipe opens them), which sums the
//! trees of a row in that order.

use tract_onnx::pb::NodeProto;

use super::attributes::{Attributes, Uncovered};
use super::layout::{set_keys, BinBlock, Columns, Keyed, Layout, Mode, Rows, TreeAttributes, Wide, MASKED_BLOCK};
use super::opset5::Opset5;

/// Rows evaluated together, tree after tree (ONNX Runtime uses 128).
const BLOCK: usize = MASKED_BLOCK;

/// `post_transform`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostTransform {
    /// The scores as they are.
    None,
    /// 1 / (1 + e^-x) of each score.
    Logistic,
    /// Softmax across a row's scores.
    Softmax,
    /// Softmax that leaves scores of (nearly) zero at zero.
    SoftmaxZero,
    /// √2 · erfinv(2x − 1).
    Probit,
}

impl PostTransform {
    fn parse(text: &str) -> PostTransform {
        match text {
            "NONE" => PostTransform::None,
            "LOGISTIC" => PostTransform::Logistic,
            "SOFTMAX" => PostTransform::Softmax,
            "SOFTMAX_ZERO" => PostTransform::SoftmaxZero,
            _ => PostTransform::Probit,
        }
    }
}

/// `aggregate_function` of a regressor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregate {
    /// Sum of the trees.
    Sum,
    /// Mean of the trees.
    Average,
    /// Smallest leaf.
    Min,
    /// Largest leaf.
    Max,
}

impl Aggregate {
    fn parse(text: &str) -> Aggregate {
        match text {
            "AVERAGE" => Aggregate::Average,
            "SUM" => Aggregate::Sum,
            "MIN" => Aggregate::Min,
            _ => Aggregate::Max,
        }
    }
}

/// Class labels of a classifier.
#[derive(Debug, Clone, PartialEq)]
pub enum ClassLabels {
    /// `classlabels_int64s`.
    Ints(Vec<i64>),
    /// `classlabels_strings`.
    Texts(Vec<String>),
}

impl ClassLabels {
    /// Number of classes.
    pub fn len(&self) -> usize {
        match self {
            ClassLabels::Ints(v) => v.len(),
            ClassLabels::Texts(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What the operator is.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// A classifier: labels and one score per class.
    Classifier {
        /// The classes.
        labels: ClassLabels,
        /// Every weight belongs to one class, and there are two classes.
        binary_case: bool,
        /// No weight is negative.
        weights_all_positive: bool,
    },
    /// A regressor: `n_targets` values.
    Regressor {
        /// How trees are combined.
        aggregate: Aggregate,
    },
}

/// A tree operator ready to run.
#[derive(Debug, Clone)]
pub struct Ensemble {
    /// The trees.
    pub layout: Layout,
    /// Classifier or regressor.
    pub kind: Kind,
    /// Classes or targets.
    pub outputs: usize,
    /// `base_values` (f32).
    pub base: Vec<f32>,
    /// `post_transform`.
    pub post: PostTransform,
    /// When every leaf has one weight, all for this class or target: the fast path.
    single_target: Option<usize>,
    /// When every leaf has one weight for each class or target, in any order: per node, its
    /// weights by class or target (`outputs` each; zeros for nodes that are not leaves).
    dense: Option<Vec<f32>>,
    /// [`Ensemble::dense`] as pairs, for two classes or targets (empty otherwise).
    dense2: Vec<[f32; 2]>,
    /// When every leaf has one weight: per node, the class or target of its weight (a leaf's
    /// weight is [`Layout::leaf_value`]).
    one_weight: Option<Vec<u32>>,
    /// With [`Ensemble::one_weight`], when each tree's leaves are all for one class or target
    /// (multiclass boosting: a tree per class and round): per tree, that class or target.
    tree_targets: Option<Vec<u32>>,
    /// The classes or targets of [`Ensemble::tree_targets`], each once (sorted).
    trees_mark: Vec<u32>,
}

/// The result for a batch: per row, the label (the class's integer label, or its index for text
/// labels; classifiers only) and `outputs` scores.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scored {
    /// Per row: the class label (integer classes) or the class index (text classes).
    pub labels: Vec<i64>,
    /// Row-major scores, `outputs` per row.
    pub scores: Vec<f32>,
}

impl Ensemble {
    /// Read a `TreeEnsembleClassifier` or `TreeEnsembleRegressor` node.
    pub fn from_node(node: &NodeProto) -> Result<Ensemble, Uncovered> {
        let a = Attributes::of(node);
        a.refuse(&["base_values_as_tensor", "nodes_values_as_tensor", "class_weights_as_tensor", "target_weights_as_tensor"])?;
        let classifier = node.op_type == "TreeEnsembleClassifier";
        let prefix = if classifier { "class" } else { "target" };
        let attributes = TreeAttributes {
            tree_ids: a.ints("nodes_treeids"),
            node_ids: a.ints("nodes_nodeids"),
            features: a.ints("nodes_featureids"),
            thresholds: a.floats("nodes_values"),
            modes: a.strings("nodes_modes").iter().map(|m| Mode::parse(m)).collect(),
            true_ids: a.ints("nodes_truenodeids"),
            false_ids: a.ints("nodes_falsenodeids"),
            missing_true: a.ints("nodes_missing_value_tracks_true"),
            weight_trees: a.ints(&format!("{prefix}_treeids")),
            weight_nodes: a.ints(&format!("{prefix}_nodeids")),
            weight_targets: a.ints(&format!("{prefix}_ids")),
            weight_values: a.floats(&format!("{prefix}_weights")),
            big_sets: Vec::new(),
        };
        let layout = Layout::build(&attributes, &|why| a.uncovered(why))?;
        let post = PostTransform::parse(&a.string("post_transform", "NONE"));
        let base = a.floats("base_values");
        let (kind, outputs) = if classifier {
            let strings = a.strings("classlabels_strings");
            let labels = if strings.is_empty() { ClassLabels::Ints(a.ints("classlabels_int64s")) } else { ClassLabels::Texts(strings) };
            if labels.is_empty() {
                return Err(a.uncovered("no class labels"));
            }
            let mut classes: Vec<i64> = attributes.weight_targets.clone();
            classes.sort_unstable();
            classes.dedup();
            let weights_all_positive = attributes.weight_values.iter().all(|&w| w >= 0.0);
            let n = labels.len();
            let kind = Kind::Classifier { binary_case: n == 2 && classes.len() == 1, weights_all_positive, labels };
            (kind, n)
        } else {
            let aggregate = Aggregate::parse(&a.string("aggregate_function", "SUM"));
            let n = a.int("n_targets", 0);
            if n <= 0 {
                return Err(a.uncovered("n_targets is missing"));
            }
            (Kind::Regressor { aggregate }, n as usize)
        };
        Ensemble::new(layout, kind, outputs, base, post, &a)
    }

    /// Read a `TreeEnsemble` node (ai.onnx.ml opset 5): a regressor of `n_targets` targets
    /// without base values (see [`Opset5`]).
    pub fn from_opset5(node: &NodeProto) -> Result<Ensemble, Uncovered> {
        let a = Attributes::of(node);
        let read = Opset5::read(node)?;
        let layout = Layout::build(&read.trees, &|why| a.uncovered(why))?;
        let kind = Kind::Regressor { aggregate: Aggregate::parse(read.aggregate) };
        Ensemble::new(layout, kind, read.targets, Vec::new(), PostTransform::parse(read.post), &a)
    }

    fn new(
        layout: Layout,
        kind: Kind,
        outputs: usize,
        base: Vec<f32>,
        post: PostTransform,
        a: &Attributes<'_>,
    ) -> Result<Ensemble, Uncovered> {
        if let Some(w) = layout.weights.iter().find(|w| w.target as usize >= outputs) {
            return Err(a.uncovered(format!("a weight is for class/target {} of {outputs}", w.target)));
        }
        let first = layout.weights.first().map(|w| w.target);
        let single = layout.leaf_weights.iter().all(|&(_, count)| count <= 1) && layout.weights.iter().all(|w| Some(w.target) == first);
        let single_target = if single { first.map(|t| t as usize) } else { None };
        let leaves = || layout.leaf_weights.iter().filter(|&&(_, count)| count > 0);
        let dense = leaves().all(|&(first, count)| {
            let mut seen = vec![false; outputs];
            count as usize == outputs
                && layout.weights[first as usize..(first + count) as usize]
                    .iter()
                    .all(|w| !std::mem::replace(&mut seen[w.target as usize], true))
        });
        let dense = (dense && single_target.is_none()).then(|| {
            let mut dense = vec![0.0; layout.leaf_weights.len() * outputs];
            for (i, &(first, count)) in layout.leaf_weights.iter().enumerate() {
                for w in &layout.weights[first as usize..(first + count) as usize] {
                    dense[i * outputs + w.target as usize] = w.value;
                }
            }
            dense
        });
        let one_weight = (single_target.is_none() && leaves().all(|&(_, count)| count == 1)).then(|| {
            layout.leaf_weights.iter().map(|&(first, count)| if count == 1 { layout.weights[first as usize].target } else { 0 }).collect()
        });
        let dense2 = match &dense {
            Some(dense) if outputs == 2 => dense.chunks_exact(2).map(|p| [p[0], p[1]]).collect(),
            _ => Vec::new(),
        };
        // A tree's nodes run from its root to the next tree's (depth-first copies, tree after tree).
        let tree_targets = one_weight.as_ref().and_then(|targets: &Vec<u32>| {
            let ends = layout.trees.iter().skip(1).map(|t| t.root as usize).chain([layout.leaf_weights.len()]);
            layout
                .trees
                .iter()
                .zip(ends)
                .map(|(tree, end)| {
                    let mut leaves = (tree.root as usize..end).filter(|&i| layout.leaf_weights[i].1 == 1);
                    let first = targets[leaves.next()?];
                    leaves.all(|i| targets[i] == first).then_some(first)
                })
                .collect::<Option<Vec<u32>>>()
        });
        let mut trees_mark = tree_targets.clone().unwrap_or_default();
        trees_mark.sort_unstable();
        trees_mark.dedup();
        Ok(Ensemble { layout, kind, outputs, base, post, single_target, dense, dense2, one_weight, tree_targets, trees_mark })
    }

    /// The number of trees.
    pub fn trees(&self) -> usize {
        self.layout.trees.len()
    }

    /// Score `rows` rows of `x` (row-major f32, `width` values each; `width` > the largest
    /// feature read).
    pub fn run(&self, x: &[f32], width: usize, rows: usize) -> Scored {
        // Rows are copied, a block at a time, into the fewest columns (a power of two) that hold
        // every feature read, so that the walk reads them without a bounds check.
        match self.layout.max_feature {
            0..16 => self.run_in::<16>(x, width, rows),
            16..32 => self.run_in::<32>(x, width, rows),
            32..64 => self.run_in::<64>(x, width, rows),
            64..128 => self.run_in::<128>(x, width, rows),
            _ => self.run_in::<0>(x, width, rows),
        }
    }

    /// [`Ensemble::run`] with rows copied into `W` columns (`W` = 0: read where they are).
    fn run_in<const W: usize>(&self, x: &[f32], width: usize, rows: usize) -> Scored {
        let n = self.outputs;
        let mut scored = Scored { labels: vec![0; rows], scores: vec![0.0; rows * n] };
        // The walks of BRANCH_LEQ and set nodes read each value's set key, computed once here.
        let keyed = W != 0 && self.layout.leq_and_sets;
        let block = BLOCK.min(rows);
        let mut sums = vec![0.0f32; block * n];
        let mut has = vec![false; block * n];
        let mut leaves = vec![0u32; block];
        let mut copy = vec![Keyed { values: [0.0f32; W], keys: [0u32; W] }; if W == 0 { 0 } else { block }];
        let columns = width.min(W);
        // Trees read [`Masked`] take the block's rows in columns too.
        let features = self.layout.max_feature + 1;
        let masked = self.layout.masked.iter().any(Option::is_some) && features <= width;
        let mut by_column = vec![0.0f32; if masked { features * block } else { 0 }];
        let mut keys_by_column = vec![0u32; if masked && self.layout.leq_and_sets { features * block } else { 0 }];
        // Binned trees read the block's bins, binned once from the columns.
        let binned = masked && !self.layout.bins.columns.is_empty();
        let mut bins = BinBlock::default();
        let mut start = 0;
        while start < rows {
            let len = BLOCK.min(rows - start);
            let block = &x[start * width..(start + len) * width];
            let by_column = masked.then(|| {
                for (f, column) in by_column.chunks_exact_mut(len).take(features).enumerate() {
                    for (to, row) in column.iter_mut().zip(block.chunks_exact(width)) {
                        *to = row[f];
                    }
                }
                let keys = &mut keys_by_column[..if self.layout.leq_and_sets { features * len } else { 0 }];
                for (key, &v) in keys.iter_mut().zip(&by_column[..features * len]) {
                    *key = set_keys(v);
                }
                if binned {
                    self.layout.bins.fill(&by_column[..features * len], len, &mut bins);
                    self.layout.bins.index_sets(keys, len, &mut bins);
                }
                Columns { values: &by_column[..features * len], keys, rows: len, bins: binned.then_some(&bins) }
            });
            sums[..len * n].iter_mut().for_each(|s| *s = 0.0);
            has[..len * n].iter_mut().for_each(|h| *h = false);
            if W == 0 {
                self.accumulate(
                    &Wide { x: block, width },
                    by_column.as_ref(),
                    &mut leaves[..len],
                    &mut sums[..len * n],
                    &mut has[..len * n],
                );
            } else {
                for (to, from) in copy.iter_mut().zip(block.chunks_exact(width)) {
                    to.values[..columns].copy_from_slice(&from[..columns]);
                    if keyed {
                        for (key, &v) in to.keys.iter_mut().zip(&from[..columns]) {
                            *key = set_keys(v);
                        }
                    }
                }
                self.accumulate(&copy[..len], by_column.as_ref(), &mut leaves[..len], &mut sums[..len * n], &mut has[..len * n]);
            }
            for r in 0..len {
                let row = start + r;
                let (label, out) = (&mut scored.labels[row], &mut scored.scores[row * n..(row + 1) * n]);
                self.finalize(&mut sums[r * n..(r + 1) * n], &mut has[r * n..(r + 1) * n], out, label);
            }
            start += len;
        }
        scored
    }

    /// Sum (or min/max) every tree's leaves into `sums`, tree after tree.
    fn accumulate<R: Rows + ?Sized>(&self, x: &R, columns: Option<&Columns<'_>>, leaves: &mut [u32], sums: &mut [f32], has: &mut [bool]) {
        let n = self.outputs;
        let layout = &self.layout;
        let one_target_regressor = matches!(self.kind, Kind::Regressor { .. }) && n == 1;
        let aggregate = match self.kind {
            Kind::Regressor { aggregate } => aggregate,
            Kind::Classifier { .. } => Aggregate::Sum,
        };
        // Leaves index the per-node lists, as long as the nodes (a power of two): masked, without
        // a bounds check.
        let values = layout.leaf_value.as_slice();
        let mask = values.len().wrapping_sub(1);
        if values.is_empty() {
            return;
        }
        let sum = matches!(aggregate, Aggregate::Sum | Aggregate::Average);
        // Every tree marks the same scores: marked once.
        if sum && !layout.trees.is_empty() {
            if let (false, Some(target)) = (one_target_regressor, self.single_target) {
                has.chunks_exact_mut(n).for_each(|h| h[target] = true);
            }
            if self.dense.is_some() {
                has.iter_mut().for_each(|h| *h = true);
            }
            // Trees of one class each: every row's scores of those classes are marked.
            for &target in &self.trees_mark {
                has.chunks_exact_mut(n).for_each(|h| h[target as usize] = true);
            }
        }
        for tree in 0..layout.trees.len() {
            layout.leaves(tree, x, columns, leaves);
            match (aggregate, one_target_regressor, self.single_target) {
                // One output: ONNX Runtime adds each leaf's first weight, without marking a score.
                (Aggregate::Sum | Aggregate::Average, true, _) => {
                    for (s, &leaf) in sums.iter_mut().zip(leaves.iter()) {
                        *s += values[leaf as usize & mask];
                    }
                }
                (Aggregate::Min | Aggregate::Max, true, _) => {
                    for (r, &leaf) in leaves.iter().enumerate() {
                        let v = values[leaf as usize & mask];
                        sums[r] = pick(aggregate, has[r], sums[r], v);
                        has[r] = true;
                    }
                }
                (Aggregate::Sum | Aggregate::Average, false, Some(target)) => {
                    for (s, &leaf) in sums.chunks_exact_mut(n).zip(leaves.iter()) {
                        s[target] += values[leaf as usize & mask];
                    }
                }
                (Aggregate::Sum | Aggregate::Average, false, None) if n == 2 && !self.dense2.is_empty() => {
                    // Two classes, two weights a leaf (CatBoost): pairs, masked like the leaves.
                    let pairs = self.dense2.as_slice();
                    let mask = pairs.len() - 1;
                    for (s, &leaf) in sums.chunks_exact_mut(2).zip(leaves.iter()) {
                        let [a, b] = pairs[leaf as usize & mask];
                        s[0] += a;
                        s[1] += b;
                    }
                }
                (Aggregate::Sum | Aggregate::Average, false, None) if self.dense.is_some() => {
                    let dense = self.dense.as_deref().unwrap_or_default();
                    for (s, &leaf) in sums.chunks_exact_mut(n).zip(leaves.iter()) {
                        let at = (leaf as usize & mask) * n;
                        s.iter_mut().zip(&dense[at..at + n]).for_each(|(s, w)| *s += w);
                    }
                }
                (Aggregate::Sum | Aggregate::Average, false, None) if self.tree_targets.is_some() => {
                    let target = self.tree_targets.as_deref().unwrap_or_default()[tree] as usize;
                    for (s, &leaf) in sums.chunks_exact_mut(n).zip(leaves.iter()) {
                        s[target] += values[leaf as usize & mask];
                    }
                }
                (Aggregate::Sum | Aggregate::Average, false, None) if self.one_weight.is_some() => {
                    let targets = self.one_weight.as_deref().unwrap_or_default();
                    let targets = &targets[..values.len()];
                    for ((s, h), &leaf) in sums.chunks_exact_mut(n).zip(has.chunks_exact_mut(n)).zip(leaves.iter()) {
                        let j = leaf as usize & mask;
                        let target = targets[j] as usize;
                        s[target] += values[j];
                        h[target] = true;
                    }
                }
                _ => {
                    for (r, &leaf) in leaves.iter().enumerate() {
                        let (first, count) = layout.leaf_weights[leaf as usize];
                        for w in &layout.weights[first as usize..(first + count) as usize] {
                            let k = r * n + w.target as usize;
                            sums[k] = match aggregate {
                                Aggregate::Sum | Aggregate::Average => sums[k] + w.value,
                                _ => pick(aggregate, has[k], sums[k], w.value),
                            };
                            has[k] = true;
                        }
                    }
                }
            }
        }
    }

    /// One row's final scores into `out` and its label, as ONNX Runtime's aggregators finish.
    fn finalize(&self, s: &mut [f32], has: &mut [bool], out: &mut [f32], label: &mut i64) {
        match &self.kind {
            Kind::Regressor { aggregate } => self.finalize_regressor(*aggregate, s, has, out),
            Kind::Classifier { labels, binary_case, weights_all_positive } => {
                *label = self.finalize_classifier(labels, *binary_case, *weights_all_positive, s, has, out);
            }
        }
    }

    fn finalize_regressor(&self, aggregate: Aggregate, s: &mut [f32], has: &mut [bool], out: &mut [f32]) {
        let n = self.outputs;
        let trees = self.trees() as f32;
        if n == 1 {
            let origin = if self.base.len() == 1 { self.base[0] } else { 0.0 };
            let v = match aggregate {
                Aggregate::Sum => s[0] + origin,
                Aggregate::Average => s[0] / trees + origin,
                Aggregate::Min | Aggregate::Max => {
                    if has[0] {
                        s[0] + origin
                    } else {
                        origin
                    }
                }
            };
            out[0] = if self.post == PostTransform::Probit { probit(v) } else { v };
            return;
        }
        let use_base = self.base.len() == n;
        for k in 0..n {
            let base = if use_base { self.base[k] } else { 0.0 };
            s[k] = match aggregate {
                Aggregate::Sum if use_base => s[k] + base,
                Aggregate::Sum => s[k],
                Aggregate::Average if use_base => s[k] / trees + base,
                Aggregate::Average => s[k] / trees,
                Aggregate::Min | Aggregate::Max => base + if has[k] { s[k] } else { 0.0 },
            };
        }
        write_scores(s, has, self.post, out, -1);
    }

    fn finalize_classifier(
        &self,
        labels: &ClassLabels,
        binary_case: bool,
        all_positive: bool,
        s: &mut [f32],
        has: &mut [bool],
        out: &mut [f32],
    ) -> i64 {
        let label_of = |k: usize| match labels {
            ClassLabels::Ints(v) => v[k],
            ClassLabels::Texts(_) => k as i64,
        };
        if self.outputs > 2 {
            for (k, &b) in self.base.iter().enumerate().take(s.len()) {
                if has[k] {
                    s[k] += b;
                } else {
                    has[k] = true;
                    s[k] = b;
                }
            }
            let mut best: Option<usize> = None;
            for k in 0..s.len() {
                if has[k] && best.is_none_or(|b| s[k] > s[b]) {
                    best = Some(k);
                }
            }
            write_scores(s, has, self.post, out, -1);
            return label_of(best.unwrap_or(0));
        }
        let mut add_second = -1;
        let mut len = 2;
        match self.base.len() {
            2 if has[1] => {
                s[1] = self.base[1] + s[0];
                s[0] = -s[1];
            }
            2 => {
                s[1] += self.base[1];
                s[0] += self.base[0];
            }
            1 => {
                s[0] += self.base[0];
                if !has[1] {
                    len = 1;
                }
            }
            0 => {
                add_second = 3;
                if !has[1] {
                    len = 1;
                }
            }
            _ => {}
        }
        // _set_score_binary
        let pos_weight = if len == 2 && has[1] {
            s[1]
        } else if has[0] {
            s[0]
        } else {
            0.0
        };
        let label = if binary_case {
            let (positive, code) = if all_positive { (pos_weight > 0.5, 0) } else { (pos_weight > 0.0, 2) };
            add_second = if positive { code } else { code + 1 };
            label_of(usize::from(positive))
        } else {
            i64::from(pos_weight > 0.0)
        };
        write_scores(&mut s[..len], &has[..len], self.post, out, add_second);
        label
    }
}

/// Min or max of a running value and a new one, as ONNX Runtime's aggregators pick.
fn pick(aggregate: Aggregate, has: bool, current: f32, v: f32) -> f32 {
    let take = match aggregate {
        Aggregate::Min => !has || v < current,
        _ => !has || v > current,
    };
    if take {
        v
    } else {
        current
    }
}

/// ONNX Runtime's `write_scores`: the row's scores (a score without a weight reads as 0) after
/// `post` into `out`; one score becomes two columns by `add_second` (0/1: `1 − p, p`; 2/3: the
/// logistic of `−x, x`, or `−x, x`).
fn write_scores(s: &mut [f32], has: &[bool], post: PostTransform, out: &mut [f32], add_second: i32) {
    for (v, &h) in s.iter_mut().zip(has) {
        if !h {
            *v = 0.0;
        }
    }
    if s.len() >= 2 {
        match post {
            PostTransform::Probit => s.iter().zip(out.iter_mut()).for_each(|(v, o)| *o = probit(*v)),
            PostTransform::Logistic => s.iter().zip(out.iter_mut()).for_each(|(v, o)| *o = logistic(*v)),
            PostTransform::Softmax => {
                softmax(s);
                out[..s.len()].copy_from_slice(s);
            }
            PostTransform::SoftmaxZero => {
                softmax_zero(s);
                out[..s.len()].copy_from_slice(s);
            }
            PostTransform::None => out[..s.len()].copy_from_slice(s),
        }
        return;
    }
    let v = s[0];
    if post == PostTransform::Probit {
        out[0] = probit(v);
        return;
    }
    match add_second {
        0 | 1 => {
            out[0] = 1.0 - v;
            out[1] = v;
        }
        2 | 3 if post == PostTransform::Logistic => {
            out[1] = logistic(v);
            out[0] = logistic(-v);
        }
        2 | 3 => {
            out[0] = -v;
            out[1] = v;
        }
        _ => {
            out[0] = v;
            if out.len() > 1 {
                out[1] = 0.0;
            }
        }
    }
}

/// ONNX Runtime's `ComputeLogistic` in f32.
pub fn logistic(x: f32) -> f32 {
    let v = 1.0 / (1.0 + (-x.abs()).exp());
    if x < 0.0 {
        1.0 - v
    } else {
        v
    }
}

/// ONNX Runtime's `ComputeSoftmax` in f32.
fn softmax(values: &mut [f32]) {
    let mut max = -f32::MAX;
    for &v in values.iter() {
        if v > max {
            max = v;
        }
    }
    let mut sum = 0.0f32;
    for v in values.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    values.iter_mut().for_each(|v| *v /= sum);
}

/// ONNX Runtime's `ComputeSoftmaxZero` in f32.
fn softmax_zero(values: &mut [f32]) {
    let mut max = -f32::MAX;
    for &v in values.iter() {
        if v > max {
            max = v;
        }
    }
    let exp_neg_max = (-max).exp();
    let mut sum = 0.0f32;
    for v in values.iter_mut() {
        if *v > 0.000_000_1 || *v < -0.000_000_1 {
            *v = (*v - max).exp();
            sum += *v;
        } else {
            *v *= exp_neg_max;
        }
    }
    values.iter_mut().for_each(|v| *v /= sum);
}

/// ONNX Runtime's `ComputeProbit` (with its `ErfInv` approximation) in f32.
fn probit(x: f32) -> f32 {
    std::f32::consts::SQRT_2 * erf_inv(2.0 * x - 1.0)
}

fn erf_inv(x: f32) -> f32 {
    let sign = if x < 0.0 { -1.0f32 } else { 1.0 };
    let x = (1.0 - x) * (1.0 + x);
    let log = x.ln();
    let v = 2.0 / (std::f32::consts::PI * 0.147) + 0.5 * log;
    let v2 = 1.0 / 0.147 * log;
    let v3 = -v + (v * v - v2).sqrt();
    sign * v3.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ONNX Runtime's logistic is symmetric by construction: p(−x) = 1 − p(x) exactly in f32.
    #[test]
    fn the_logistic_is_computed_on_the_absolute_value() {
        for x in [-3.5f32, -0.25, 0.0, 0.7, 12.0] {
            assert_eq!(logistic(-x), 1.0 - logistic(x), "{x}");
        }
        assert!((logistic(0.7) - 0.668_187_8).abs() < 1e-6);
    }

    #[test]
    fn softmax_rows_sum_to_one() {
        let mut v = [1.0f32, 2.0, -1.0];
        softmax(&mut v);
        assert!((v.iter().sum::<f32>() - 1.0).abs() < 1e-6 && v[1] > v[0] && v[0] > v[2], "{v:?}");
    }
}
