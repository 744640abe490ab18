//! The flat layout of a tree ensemble for batch evaluation: every tree's nodes copied depth-first
//! into one array of 16-byte nodes (threshold, feature, the two children, indexed by the
//! comparison's outcome so that no branch is taken), leaves stepping to themselves so that a group
//! of rows walks a tree in lockstep without a test per step (stopping once every row of the group
//! stands on a leaf: a leaf's index carries the [`LEAF`] bit, so that is an AND of the group's
//! indices), and the leaves' weights beside them. A tree whose levels each make one comparison
//! (CatBoost's) is read as a table instead. A tree of plain comparisons, or of BRANCH_LEQ and
//! sets, with at most 32 leaves (gradient boosting, XGBoost, HistGradientBoosting, LightGBM) is
//! read [`Masked`]: every comparison made for a block of rows held in columns (vector
//! instructions), each failed one ruling out its true subtree's leaves, the leftmost leaf left
//! being the row's; a tree's set nodes on one feature are one table look-up by the row's key.
//! A chain of `BRANCH_EQ` nodes on one feature (how onnxmltools writes a LightGBM categorical
//! split), or one such node on a small integer, becomes one set-membership node; an ensemble of
//! `BRANCH_LEQ` and set nodes (LightGBM's) has a walk of its own.
//!
//! The walk has no bounds check per step: the nodes (and the sets) are padded to a power of two
//! and indices masked into them, and the rows are copied into a power-of-two number of columns
//! ([`Rows`] for `[[f32; W]]`) that a feature is masked into. (Its speed against ONNX Runtime is
//! measured by `scripts/bench_trees.py`, raw results in docs/figures/trees/.)
//!
//! Trees are read as ONNX Runtime reads them (`TreeEnsembleCommon::Init`): nodes are identified by
//! `(tree id, node id)`; each run of equal tree ids in attribute order is one tree whose root is the
//! run's first node; a leaf's weights are taken in the order of `(tree id, node id)` and then of
//! the attribute, weights naming a node that is not a leaf are ignored.
//!
//! One job per file: this one holds the layout's types, the rows a walk reads and the choice of
//! evaluator per tree ([`Layout::leaves`]); [`build`] lays an ensemble out (and finds the trees read
//! [`Oblivious`] or [`Masked`]); [`walk`] walks rows node by node; [`masked`] evaluates a [`Masked`]
//! tree over a block of columns; [`bins`] quantises the [`Masked`] trees' thresholds per feature,
//! so that their comparisons are made on small integer bins of the block's rows, binned once
//! (measured in docs/figures/trees/binning.md), and indexes their set tables once per block
//! (docs/figures/trees/blocked-avx2.md).

mod bins;
mod build;
mod masked;
#[cfg(test)]
mod tests;
mod walk;

use super::attributes::Uncovered;
pub use bins::{bin_of, binned, BinBlock, BinColumn, Binned, BinnedNode, Bins, Encoding, Plain, SetColumn, Word, MAX_EDGES};

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
    /// `x` is one of a set of small integers: a chain of `BRANCH_EQ` nodes on one feature that
    /// share their true child, collapsed into one node (see [`Layout::sets`]); or, given by
    /// [`TreeAttributes::big_sets`], ONNX Runtime's `BRANCH_MEMBER_BIGSET` of opset 5, which tests
    /// `x` truncated to an integer.
    Member = 14,
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

impl Mode {
    /// The outcomes of comparing `x` with `t` that send a row to the true child, as bits of
    /// [`Layout::flags`]: [`LESS`], [`EQUAL`], [`GREATER`], [`MISSING`] (x is NaN), [`UNORDERED`]
    /// (t is NaN, x is not).
    pub fn outcomes(self) -> u32 {
        match self {
            Mode::Leaf | Mode::Member => 0,
            Mode::Leq => LESS | EQUAL,
            Mode::Lt => LESS,
            Mode::Gte => GREATER | EQUAL,
            Mode::Gt => GREATER,
            Mode::Eq => EQUAL,
            Mode::Neq => LESS | GREATER | MISSING | UNORDERED,
        }
    }
}

/// Outcome bit of [`Layout::flags`]: `x < t`.
pub const LESS: u32 = 1;
/// Outcome bit: `x == t`.
pub const EQUAL: u32 = 2;
/// Outcome bit: `x > t`.
pub const GREATER: u32 = 4;
/// Outcome bit: `x` is NaN (also set for a node whose missing value goes to the true child).
pub const MISSING: u32 = 8;
/// Outcome bit: `t` is NaN and `x` is not.
pub const UNORDERED: u32 = 16;
/// Flag of a [`Mode::Member`] node testing `x` truncated toward zero (as ONNX Runtime casts it to
/// an `int32` for a big set) rather than `x` itself.
pub const TRUNCATE: u32 = 32;

/// Bit of [`Node::feature`] telling that a missing value goes to the true child (as [`MISSING`]
/// in [`Layout::flags`]; read from the node, which the walk loads anyway). Rows are read with the
/// bit masked off.
pub const FEATURE_MISSING: u32 = 1 << 31;

/// The walk's mode for a [`Layout::signed`] layout of BRANCH_LEQ nodes.
const SIGNED: u8 = 3;
/// The walk's mode for a [`Layout::signed`] layout of BRANCH_LEQ and set nodes.
const SIGNED_SETS: u8 = 16;
/// [`SIGNED_SETS`] with sets testing the value truncated.
const SIGNED_SETS_TRUNCATED: u8 = 17;

/// Bit of a child's index in [`Node::children`] telling that the child is a leaf.
pub const LEAF: u32 = 1 << 31;

/// [`Layout::flags`]' bits above this hold the node's set in [`Layout::sets`].
const SET_SHIFT: u32 = 8;

/// One node: 16 bytes. A leaf has feature 0, threshold NaN and both children its own index (with
/// the [`LEAF`] bit), so it steps to itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Node {
    /// The threshold, as f32 (ONNX Runtime's threshold type for float input).
    pub threshold: f32,
    /// The feature compared, with [`FEATURE_MISSING`] when a missing value goes to the true child.
    pub feature: u32,
    /// The child when the comparison holds, then the child when it does not ([`LEAF`] marking a
    /// leaf).
    pub children: [u32; 2],
}

impl Node {
    /// The node's comparison.
    #[inline(always)]
    pub fn comparison(&self) -> Comparison {
        Comparison { threshold: self.threshold, feature: self.feature }
    }
}

/// One tree: its root and the shortest and longest paths from it to a leaf.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeRoot {
    /// Index of the root in [`Layout::nodes`].
    pub root: u32,
    /// Steps from the root to its deepest leaf.
    pub depth: u32,
    /// Steps from the root to its shallowest leaf.
    pub shallowest: u32,
}

/// A tree whose every level makes one comparison (the same feature, threshold and mode in every
/// node of the level; CatBoost's oblivious trees) and whose leaves are all on its last level: a
/// row's leaf is read from the outcomes of its levels, which do not wait on each other.
#[derive(Debug, Clone, PartialEq)]
pub struct Oblivious {
    /// Per level, the comparison (one of the level's nodes) and its [`Layout::flags`].
    pub levels: Vec<(Node, u32)>,
    /// The leaf for each pattern of outcomes: the first level's outcome is the highest bit, 0 when
    /// the comparison holds (the true child).
    pub leaves: Vec<u32>,
}

/// A tree of at most [`MASKED_LEAVES`] leaves read node by node over a block of rows held in
/// columns: every comparison of the tree is made for every row (a loop over a column, which the
/// compiler turns into vector instructions), a comparison that fails rules out the leaves of its
/// true subtree, and the row's leaf is the leftmost one left (the exit leaf of QuickScorer,
/// Lucchese et al., SIGIR 2015). It reaches the leaf the walk reaches, with no step waiting on the
/// one before; it pays for every node instead of a path, so it is used for trees of few leaves
/// (gradient boosting, XGBoost, HistGradientBoosting, LightGBM with or without sets).
#[derive(Debug, Clone, PartialEq)]
pub struct Masked {
    /// The tree's branches of plain comparisons (any order).
    pub nodes: Vec<MaskedNode>,
    /// The tree's set nodes (LightGBM's categorical splits) that send missing values to their
    /// true child, with their [`Layout::flags`], tested a row at a time.
    pub set_nodes: Vec<(MaskedNode, u32)>,
    /// The tree's other set nodes, by the key they read: one look-up a row for all of them.
    pub set_tables: Vec<SetTable>,
    /// The leaves ([`Layout::nodes`] indices) from left (true side) to right, padded to
    /// [`MASKED_LEAVES`] with the last.
    pub leaves: Vec<u32>,
    /// The number of leaves before the padding.
    pub count: usize,
    /// The plain comparisons on bins ([`Layout::bins`]), when they can be.
    pub binned: Option<Binned>,
}

/// A branch of a [`Masked`] tree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaskedNode {
    /// The comparison, as in [`Layout::nodes`].
    pub comparison: Comparison,
    /// The leaves still possible when the comparison fails: every bit but those of the true
    /// subtree's leaves.
    pub keep: u32,
}

/// The set nodes of a [`Masked`] tree that read one feature's key (truncated or not), as one
/// table: for each key, the leaves still possible after all of them.
#[derive(Debug, Clone, PartialEq)]
pub struct SetTable {
    /// The feature read (its column in [`Columns::keys`]).
    pub feature: u32,
    /// Shift of the key read: 0 for [`set_key`], 16 for the value truncated (see [`set_keys`]).
    pub shift: u32,
    /// Per key `0..=m` (`m` the largest member of the nodes' sets) the AND of the masks of the
    /// nodes whose set lacks it; then one entry for every other key, [`NO_MEMBER`] included (in a
    /// binned tree, repeated up to its [`SetColumn`]'s length, which every table on that key
    /// shares).
    pub masks: Vec<u32>,
}

/// A comparison: a [`Node`] without children.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// As [`Node::threshold`].
    pub threshold: f32,
    /// As [`Node::feature`].
    pub feature: u32,
}

/// Most leaves of a [`Masked`] tree (the bits of a `u32`).
pub const MASKED_LEAVES: usize = 32;

/// Rows in columns: feature `f`'s values of the block's rows at `values[f * rows..(f + 1) * rows]`.
#[derive(Debug, Clone, Copy)]
pub struct Columns<'a> {
    /// The values, column after column.
    pub values: &'a [f32],
    /// Their [`set_keys`], the same way (empty unless the layout has set nodes).
    pub keys: &'a [u32],
    /// Rows in the block (at most [`MASKED_BLOCK`]).
    pub rows: usize,
    /// The rows' bins ([`Layout::bins`]), column after column, when the layout bins some tree.
    pub bins: Option<&'a BinBlock>,
}

/// Most rows of a [`Columns`] block.
pub const MASKED_BLOCK: usize = 128;

/// Deepest tree read as [`Oblivious`] (its table has 2^depth leaves).
const OBLIVIOUS_DEPTH: u32 = 12;

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
    /// The nodes of mode [`Mode::Member`] (by position in these lists) and their sets: integers
    /// of `0..SET_BITS`, which `x` truncated toward zero must be one of.
    pub big_sets: Vec<(usize, Vec<f32>)>,
}

/// An ensemble laid out for evaluation.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// Every tree's nodes, depth-first, tree after tree.
    pub nodes: Vec<Node>,
    /// Per node: the outcomes that go to the true child ([`Mode::outcomes`], with [`MISSING`]
    /// when a missing value goes there) and, from bit 8, the node's set in [`Layout::sets`] (0:
    /// the empty set of every node that is not [`Mode::Member`]).
    pub flags: Vec<u32>,
    /// The trees, in ONNX Runtime's order (the order of their sum).
    pub trees: Vec<TreeRoot>,
    /// Per tree: its levels and leaf table when it is [`Oblivious`].
    pub oblivious: Vec<Option<Oblivious>>,
    /// Per tree: its branches and leaves when it is read [`Masked`].
    pub masked: Vec<Option<Masked>>,
    /// Per node (leaves only): the first weight (ONNX Runtime's `value_or_unique_weight`).
    pub leaf_value: Vec<f32>,
    /// Per node (leaves only): `(first, count)` in [`Layout::weights`].
    pub leaf_weights: Vec<(u32, u32)>,
    /// The leaves' weights.
    pub weights: Vec<Weight>,
    /// The mode every branch uses, when they all use one.
    pub same_mode: Option<Mode>,
    /// Whether every branch is [`Mode::Leq`] or [`Mode::Member`], some of them sets (LightGBM's).
    pub leq_and_sets: bool,
    /// Whether a set node tests its value truncated ([`TRUNCATE`]).
    pub truncates: bool,
    /// Whether every node tests `x < threshold` of its value `x` with the sign flipped at nodes
    /// with [`FEATURE_MISSING`] (see `Layout::sign_missing`).
    pub signed: bool,
    /// Whether any node sends a missing value to its true child.
    pub has_missing: bool,
    /// The largest feature index read.
    pub max_feature: usize,
    /// The features and columns the [`Masked`] trees' bins are read from.
    pub bins: Bins,
    /// The sets of [`Mode::Member`] nodes, the empty set first: bit `k` set when the value `k`
    /// (0 ≤ k < [`SET_BITS`]) goes to the true child.
    pub sets: Vec<[u64; SET_WORDS]>,
}

/// Words of a [`Mode::Member`] node's set.
pub const SET_WORDS: usize = 4;

/// The values a [`Mode::Member`] node's set can hold: the integers `0..SET_BITS`.
pub const SET_BITS: usize = 64 * SET_WORDS;

/// Whether `v` (truncated toward zero when `truncate`) is in `set`: an integer of `0..SET_BITS`
/// whose bit is set (NaN is in no set). Without a branch: `v as i32` truncates (NaN to 0, and
/// saturates), its low bits are the value when `v` is an integer of the set's range, which it is
/// exactly when it equals them back as f32; and they are its truncation when -1 < v < SET_BITS.
#[inline(always)]
pub fn in_set(set: &[u64; SET_WORDS], v: f32, truncate: bool) -> bool {
    let k = (v as i32 as u32) & (SET_BITS as u32 - 1);
    let exact = k as f32 == v;
    let truncated = truncate & (v > -1.0) & (v < SET_BITS as f32);
    (exact | truncated) & (set[(k / 64) as usize] >> (k % 64) & 1 == 1)
}

/// A row's value as a [`Layout::sets`] member: the integer of `0..SET_BITS` it is, or
/// [`NO_MEMBER`] (computed once per row and feature by [`Keyed`] rows). Without a conversion
/// instruction: adding 1.5 · 2^23 leaves `v` rounded to an integer in the low bits of the sum
/// when |v| < 2^22; `v` is that integer exactly when it equals its low bits back as f32 (never
/// for NaN, infinities, a fraction, or a value outside the set's range).
#[inline(always)]
pub fn set_key(v: f32) -> u32 {
    let k = (v + 12_582_912.0).to_bits() & (SET_BITS as u32 - 1);
    k | (u32::from(k as f32 != v) * NO_MEMBER)
}

/// [`set_key`] in the low 16 bits, and above them the key of `v` truncated toward zero (as
/// [`in_set`] with truncation reads it).
#[inline(always)]
pub fn set_keys(v: f32) -> u32 {
    let k = (v as i32 as u32) & (SET_BITS as u32 - 1);
    let truncated = k | (u32::from(!((v > -1.0) & (v < SET_BITS as f32))) * NO_MEMBER);
    set_key(v) | truncated << 16
}

/// The [`set_key`] of a value that is in no set.
pub const NO_MEMBER: u32 = SET_BITS as u32;

/// Whether the value of [`set_key`] `key` is in `set`.
#[inline(always)]
fn key_in(set: &[u64; SET_WORDS], key: u32) -> bool {
    (set[(key as usize / 64) & (SET_WORDS - 1)] >> (key % 64) & 1 == 1) & (key < NO_MEMBER)
}

/// The rows a walk reads: row `r`'s value of feature `f`, and groups of 8 rows.
pub trait Rows {
    /// Eight consecutive rows.
    type Group<'a>: Copy
    where
        Self: 'a;
    /// Rows `r..r + 8`.
    fn group(&self, r: usize) -> Self::Group<'_>;
    /// Row `k` of the group's value of feature `f`.
    fn lane<'a>(group: Self::Group<'a>, k: usize, f: u32) -> f32
    where
        Self: 'a;
    /// Row `r`'s value of feature `f`.
    fn value(&self, r: usize, f: u32) -> f32;
    /// Row `k` of the group's value of feature `f` as [`set_keys`] reads it.
    #[inline(always)]
    fn lane_key<'a>(group: Self::Group<'a>, k: usize, f: u32) -> u32
    where
        Self: 'a,
    {
        set_keys(Self::lane(group, k, f))
    }
    /// Row `r`'s value of feature `f` as [`set_keys`] reads it.
    #[inline(always)]
    fn key(&self, r: usize, f: u32) -> u32 {
        set_keys(self.value(r, f))
    }
}

/// A row copied into `W` columns (a power of two above every feature read: a feature is masked
/// into the row, without a bounds check), with each value's [`set_keys`] beside it for the walks of
/// BRANCH_LEQ and set nodes (left zero for the others, which do not read them).
#[derive(Debug, Clone, Copy)]
pub struct Keyed<const W: usize> {
    /// The values.
    pub values: [f32; W],
    /// Their [`set_keys`].
    pub keys: [u32; W],
}

impl<const W: usize> Rows for [Keyed<W>] {
    type Group<'a> = &'a [Keyed<W>; 8];

    #[inline(always)]
    fn group(&self, r: usize) -> Self::Group<'_> {
        self[r..r + 8].try_into().expect("8 rows")
    }

    #[inline(always)]
    fn lane<'a>(group: Self::Group<'a>, k: usize, f: u32) -> f32
    where
        Self: 'a,
    {
        group[k].values[f as usize & (W - 1)]
    }

    #[inline(always)]
    fn value(&self, r: usize, f: u32) -> f32 {
        self[r].values[f as usize & (W - 1)]
    }

    #[inline(always)]
    fn lane_key<'a>(group: Self::Group<'a>, k: usize, f: u32) -> u32
    where
        Self: 'a,
    {
        group[k].keys[f as usize & (W - 1)]
    }

    #[inline(always)]
    fn key(&self, r: usize, f: u32) -> u32 {
        self[r].keys[f as usize & (W - 1)]
    }
}

/// Rows as they come, `width` values each (row-major).
#[derive(Debug, Clone, Copy)]
pub struct Wide<'a> {
    /// The values.
    pub x: &'a [f32],
    /// Values per row.
    pub width: usize,
}

impl Rows for Wide<'_> {
    type Group<'a>
        = (&'a [f32], usize)
    where
        Self: 'a;

    #[inline(always)]
    fn group(&self, r: usize) -> Self::Group<'_> {
        (&self.x[r * self.width..(r + 8) * self.width], self.width)
    }

    #[inline(always)]
    fn lane<'a>((x, width): Self::Group<'a>, k: usize, f: u32) -> f32
    where
        Self: 'a,
    {
        x[k * width + (f & !FEATURE_MISSING) as usize]
    }

    #[inline(always)]
    fn value(&self, r: usize, f: u32) -> f32 {
        self.x[r * self.width + (f & !FEATURE_MISSING) as usize]
    }
}

impl Layout {
    /// The leaf each row of `rows` reaches in tree `tree`, written to `leaves`. Rows walk in
    /// groups of 8 in lockstep, or read an [`Oblivious`] tree's table, or (given the same rows in
    /// `columns`, at most [`MASKED_BLOCK`] of them) a [`Masked`] tree's comparisons.
    pub fn leaves<R: Rows + ?Sized>(&self, tree: usize, rows: &R, columns: Option<&Columns<'_>>, leaves: &mut [u32]) {
        match (self.same_mode, self.has_missing) {
            (Some(Mode::Leq), false) => self.tree_leaves::<{ Mode::Leq as u8 }, false, R>(tree, rows, columns, leaves),
            (Some(Mode::Lt), false) => self.tree_leaves::<{ Mode::Lt as u8 }, false, R>(tree, rows, columns, leaves),
            (Some(Mode::Gt), false) => self.tree_leaves::<{ Mode::Gt as u8 }, false, R>(tree, rows, columns, leaves),
            (Some(Mode::Gte), false) => self.tree_leaves::<{ Mode::Gte as u8 }, false, R>(tree, rows, columns, leaves),
            (Some(Mode::Leq), true) if self.signed => self.tree_leaves::<SIGNED, true, R>(tree, rows, columns, leaves),
            (Some(Mode::Leq), true) => self.tree_leaves::<{ Mode::Leq as u8 }, true, R>(tree, rows, columns, leaves),
            (Some(Mode::Lt), true) => self.tree_leaves::<{ Mode::Lt as u8 }, true, R>(tree, rows, columns, leaves),
            _ if self.leq_and_sets && self.signed => match self.truncates {
                false => self.tree_leaves::<SIGNED_SETS, true, R>(tree, rows, columns, leaves),
                true => self.tree_leaves::<SIGNED_SETS_TRUNCATED, true, R>(tree, rows, columns, leaves),
            },
            _ if self.leq_and_sets => match (self.truncates, self.has_missing) {
                (false, true) => self.tree_leaves::<14, true, R>(tree, rows, columns, leaves),
                (false, false) => self.tree_leaves::<14, false, R>(tree, rows, columns, leaves),
                (true, true) => self.tree_leaves::<15, true, R>(tree, rows, columns, leaves),
                (true, false) => self.tree_leaves::<15, false, R>(tree, rows, columns, leaves),
            },
            _ => self.tree_leaves::<0, true, R>(tree, rows, columns, leaves),
        }
    }

    fn tree_leaves<const MODE: u8, const MISSING_TO_TRUE: bool, R: Rows + ?Sized>(
        &self,
        tree: usize,
        rows: &R,
        columns: Option<&Columns<'_>>,
        leaves: &mut [u32],
    ) {
        // The walk that reads each node's outcome bits (mode 0) has no masked trees.
        if let (true, Some(masked), Some(columns)) = (MODE != 0, &self.masked[tree], columns) {
            if columns.rows == leaves.len() && leaves.len() <= MASKED_BLOCK {
                return self.masked_leaves::<MODE, MISSING_TO_TRUE>(masked, columns, leaves);
            }
        }
        let Some(oblivious) = &self.oblivious[tree] else {
            return self.walk::<MODE, MISSING_TO_TRUE, R>(tree, rows, leaves);
        };
        // Level after level over all the rows (each level's comparison is the same for every
        // row), the pattern of outcomes gathered in `leaves`, then read from the table (2^depth
        // long: the pattern masked into it).
        leaves.fill(0);
        for (node, flags) in &oblivious.levels {
            for (r, pattern) in leaves.iter_mut().enumerate() {
                let go = Self::goes::<MODE, MISSING_TO_TRUE>(&self.sets, node, *flags, rows.value(r, node.feature), || {
                    rows.key(r, node.feature)
                });
                *pattern = 2 * *pattern + u32::from(!go);
            }
        }
        let table = oblivious.leaves.as_slice();
        let mask = table.len().wrapping_sub(1);
        if table.is_empty() {
            return;
        }
        for leaf in leaves.iter_mut() {
            *leaf = table[*leaf as usize & mask];
        }
    }
}
