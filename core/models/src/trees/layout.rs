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
//! ([`Rows`] for `[[f32; W]]`) that a feature is masked into. Removing the checks made the walk
//! 1.2-1.6 times as fast (one thread, 4,096 census rows; docs/benchmarks.md).
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
    /// nodes whose set lacks it; then one entry for every other key, [`NO_MEMBER`] included.
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
    /// The sets of [`Mode::Member`] nodes, the empty set first: bit `k` set when the value `k`
    /// (0 ≤ k < [`SET_BITS`]) goes to the true child.
    pub sets: Vec<[u64; SET_WORDS]>,
}

/// Words of a [`Mode::Member`] node's set.
pub const SET_WORDS: usize = 4;

/// The values a [`Mode::Member`] node's set can hold: the integers `0..SET_BITS`.
pub const SET_BITS: usize = 64 * SET_WORDS;

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
        Ok(layout)
    }

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
        let mut tree = Masked { nodes: Vec::new(), set_nodes: Vec::new(), set_tables: Vec::new(), leaves: Vec::new() };
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

    /// The leaf each row of `rows` (as many as `leaves`, at most [`MASKED_BLOCK`]) reaches in
    /// [`Masked`] tree `tree`. Not inlined: one call per tree and block, kept out of the walks' code.
    #[inline(never)]
    fn masked_leaves<const MODE: u8, const MISSING_TO_TRUE: bool>(&self, tree: &Masked, rows: &Columns<'_>, leaves: &mut [u32]) {
        let n = leaves.len();
        let mut exits = [u32::MAX; MASKED_BLOCK];
        let exits = &mut exits[..n];
        // A plain comparison in a walk of BRANCH_LEQ and set nodes is that walk's comparison with
        // an empty set: the walk of BRANCH_LEQ (or of signed comparisons) without the set test.
        match MODE {
            14 | 15 => self.mask_plain::<{ Mode::Leq as u8 }, MISSING_TO_TRUE>(&tree.nodes, rows, exits),
            SIGNED_SETS | SIGNED_SETS_TRUNCATED => self.mask_plain::<SIGNED, MISSING_TO_TRUE>(&tree.nodes, rows, exits),
            _ => self.mask_plain::<MODE, MISSING_TO_TRUE>(&tree.nodes, rows, exits),
        }
        if !(tree.set_tables.is_empty() && tree.set_nodes.is_empty()) {
            self.mask_sets::<MODE, MISSING_TO_TRUE>(tree, rows, exits);
        }
        let table: &[u32; MASKED_LEAVES] = tree.leaves.as_slice().try_into().expect("padded");
        for (leaf, exit) in leaves.iter_mut().zip(exits.iter()) {
            *leaf = table[exit.trailing_zeros() as usize & (MASKED_LEAVES - 1)];
        }
    }

    /// The set nodes of a [`Masked`] tree over the rows' keys, each ruling its true subtree's
    /// leaves out of `exits` where it fails.
    #[inline(never)]
    fn mask_sets<const MODE: u8, const MISSING_TO_TRUE: bool>(&self, tree: &Masked, rows: &Columns<'_>, exits: &mut [u32]) {
        let n = exits.len();
        // Set nodes by their key: one look-up a row (keys past the members share the last entry).
        for table in &tree.set_tables {
            let f = (table.feature & !FEATURE_MISSING) as usize;
            let keys = &rows.keys[f * rows.rows..][..n];
            let (masks, last) = (table.masks.as_slice(), table.masks.len() - 1);
            for (exit, &key) in exits.iter_mut().zip(keys) {
                *exit &= masks[((key >> table.shift & 0xffff) as usize).min(last)];
            }
        }
        // Set nodes whose missing values go to the true child: the walk's own test, a row at a time.
        for (node, flags) in &tree.set_nodes {
            let Comparison { threshold, feature } = node.comparison;
            let comparison = Node { threshold, feature, children: [0, 0] };
            let f = (feature & !FEATURE_MISSING) as usize;
            let (values, keys) = (&rows.values[f * rows.rows..][..n], &rows.keys[f * rows.rows..][..n]);
            for ((exit, &v), &key) in exits.iter_mut().zip(values).zip(keys) {
                let go = Self::goes::<MODE, MISSING_TO_TRUE>(&self.sets, &comparison, *flags, v, || key);
                *exit &= node.keep | 0u32.wrapping_sub(u32::from(go));
            }
        }
    }

    /// The plain comparisons of a [`Masked`] tree over the rows' columns, each ruling its true
    /// subtree's leaves out of `exits` where it fails.
    #[inline(always)]
    fn mask_plain<const MODE: u8, const MISSING_TO_TRUE: bool>(&self, nodes: &[MaskedNode], rows: &Columns<'_>, exits: &mut [u32]) {
        let n = exits.len();
        for node in nodes {
            let Comparison { threshold, feature } = node.comparison;
            // The walk's comparison, children unused.
            let comparison = Node { threshold, feature, children: [0, 0] };
            let f = (feature & !FEATURE_MISSING) as usize;
            let column = &rows.values[f * rows.rows..][..n];
            for (exit, &v) in exits.iter_mut().zip(column) {
                let go = Self::goes::<MODE, MISSING_TO_TRUE>(&self.sets, &comparison, 0, v, || 0);
                *exit &= node.keep | 0u32.wrapping_sub(u32::from(go));
            }
        }
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

    /// Whether node `i` is a leaf.
    #[inline(always)]
    fn is_leaf(&self, i: u32) -> bool {
        self.nodes[i as usize].children[0] == i | LEAF
    }

    /// The set of a node with these flags ([`Layout::sets`] is a power of two long: the index is
    /// masked, without a bounds check).
    #[inline(always)]
    fn set(sets: &[[u64; SET_WORDS]], flags: u32) -> &[u64; SET_WORDS] {
        &sets[(flags >> SET_SHIFT) as usize & sets.len().wrapping_sub(1)]
    }

    /// Whether `v` goes to `node`'s true child.
    #[inline(always)]
    fn goes<const MODE: u8, const MISSING_TO_TRUE: bool>(
        sets: &[[u64; SET_WORDS]],
        node: &Node,
        flags: u32,
        v: f32,
        key: impl Fn() -> u32,
    ) -> bool {
        let t = node.threshold;
        let mut go = match MODE {
            2 => v <= t,
            SIGNED => f32::from_bits(v.to_bits() ^ (node.feature & FEATURE_MISSING)) < t,
            4 => v < t,
            6 => v >= t,
            8 => v > t,
            // BRANCH_LEQ and set nodes: a set node's threshold is NaN, a BRANCH_LEQ node's set empty.
            14 => (v <= t) | key_in(Self::set(sets, flags), key() & 0xffff),
            15 => (v <= t) | key_in(Self::set(sets, flags), key() >> ((flags & TRUNCATE) >> 1) & 0xffff),
            SIGNED_SETS => {
                (f32::from_bits(v.to_bits() ^ (node.feature & FEATURE_MISSING)) < t) | key_in(Self::set(sets, flags), key() & 0xffff)
            }
            SIGNED_SETS_TRUNCATED => {
                let key = key() >> ((flags & TRUNCATE) >> 1) & 0xffff;
                (f32::from_bits(v.to_bits() ^ (node.feature & FEATURE_MISSING)) < t) | key_in(Self::set(sets, flags), key)
            }
            _ => {
                let (less, equal, greater, missing) = (v < t, v == t, v > t, v.is_nan());
                let unordered = !(less | equal | greater | missing);
                let outcome = (u32::from(less) * LESS)
                    | (u32::from(equal) * EQUAL)
                    | (u32::from(greater) * GREATER)
                    | (u32::from(missing) * MISSING)
                    | (u32::from(unordered) * UNORDERED);
                (flags & outcome != 0) | in_set(Self::set(sets, flags), v, flags & TRUNCATE != 0)
            }
        };
        if MODE != 0 && MODE != SIGNED && MODE < SIGNED_SETS && MISSING_TO_TRUE {
            go |= (node.feature & FEATURE_MISSING != 0) & v.is_nan();
        }
        go
    }

    fn walk<const MODE: u8, const MISSING_TO_TRUE: bool, R: Rows + ?Sized>(&self, tree: usize, rows: &R, leaves: &mut [u32]) {
        const GROUP: usize = 8;
        let nodes = self.nodes.as_slice();
        let flags = &self.flags[..nodes.len()];
        if nodes.is_empty() {
            return;
        }
        // Indices are masked into the nodes (a power of two of them, at most LEAF, so that the mask
        // also clears the LEAF bit): no bounds check per step.
        let mask = nodes.len() - 1;
        let sets = self.sets.as_slice();
        if sets.is_empty() {
            return;
        }
        let step = |i: u32, v: &dyn Fn(u32) -> f32, key: &dyn Fn(u32) -> u32| -> u32 {
            let j = i as usize & mask;
            let node = &nodes[j];
            let flags = if MODE == 0 || MODE >= 14 { flags[j] } else { 0 };
            let go = Self::goes::<MODE, MISSING_TO_TRUE>(sets, node, flags, v(node.feature), || key(node.feature));
            // Indexed by the outcome: a select here would be compiled to a branch, mispredicted on
            // half the steps.
            node.children[usize::from(!go)]
        };
        let TreeRoot { root, depth, shallowest } = self.trees[tree];
        let start = if self.is_leaf(root) { root | LEAF } else { root };
        let n = leaves.len();
        let mut r = 0;
        // Rows walked together: 16 (two groups of 8); 8 for BRANCH_LEQ and sets; 4 for the longer
        // steps (any mode; sets with missing values or truncation), whose 8 lanes LLVM spills.
        let lanes = match MODE {
            0 | 14 | 15 | SIGNED_SETS_TRUNCATED => 4,
            SIGNED_SETS => 8,
            _ => 16,
        };
        while lanes == 16 && r + 2 * GROUP <= n {
            let (first, second) = (rows.group(r), rows.group(r + GROUP));
            let (mut a, mut b) = ([start; GROUP], [start; GROUP]);
            let mut s = 0;
            while s < depth {
                macro_rules! two_groups {
                    ($($k:literal)*) => {
                        $(
                            a[$k] = step(a[$k], &|f| R::lane(first, $k, f), &|f| R::lane_key(first, $k, f));
                            b[$k] = step(b[$k], &|f| R::lane(second, $k, f), &|f| R::lane_key(second, $k, f));
                        )*
                    };
                }
                two_groups!(0 1 2 3 4 5 6 7);
                s += 1;
                if s >= shallowest && a.iter().chain(&b).fold(LEAF, |all, &i| all & i) != 0 {
                    break;
                }
            }
            for (leaf, &i) in leaves[r..r + 2 * GROUP].iter_mut().zip(a.iter().chain(&b)) {
                *leaf = i & !LEAF;
            }
            r += 2 * GROUP;
        }
        while r + GROUP <= n {
            let group = rows.group(r);
            let mut at = [start; GROUP];
            macro_rules! walk_lanes {
                ($($k:literal)*) => {
                    let mut s = 0;
                    while s < depth {
                        // Unrolled by hand: LLVM keeps a longer step's lanes in a loop through memory.
                        $(at[$k] = step(at[$k], &|f| R::lane(group, $k, f), &|f| R::lane_key(group, $k, f));)*
                        s += 1;
                        // Stop once every row stands on a leaf.
                        if s >= shallowest && LEAF $(& at[$k])* != 0 {
                            break;
                        }
                    }
                };
            }
            if lanes == 4 {
                walk_lanes!(0 1 2 3);
                walk_lanes!(4 5 6 7);
            } else {
                walk_lanes!(0 1 2 3 4 5 6 7);
            }
            for (leaf, &i) in leaves[r..r + GROUP].iter_mut().zip(&at) {
                *leaf = i & !LEAF;
            }
            r += GROUP;
        }
        for (k, leaf) in leaves.iter_mut().enumerate().skip(r) {
            let mut i = start;
            while i & LEAF == 0 {
                i = step(i, &|f| rows.value(k, f), &|f| rows.key(k, f));
            }
            *leaf = i & !LEAF;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One node of a test tree: (node id, mode, feature, threshold, true id, false id, missing to
    /// true); leaves' weight is their node id.
    type Spec = (i64, Mode, i64, f32, i64, i64, bool);

    fn attributes(trees: &[&[Spec]]) -> TreeAttributes {
        let mut a = TreeAttributes::default();
        for (tree, nodes) in trees.iter().enumerate() {
            for &(id, mode, feature, threshold, yes, no, missing) in nodes.iter() {
                a.tree_ids.push(tree as i64);
                a.node_ids.push(id);
                a.modes.push(mode);
                a.features.push(feature);
                a.thresholds.push(threshold);
                a.true_ids.push(yes);
                a.false_ids.push(no);
                a.missing_true.push(i64::from(missing));
                if mode == Mode::Leaf {
                    a.weight_trees.push(tree as i64);
                    a.weight_nodes.push(id);
                    a.weight_targets.push(0);
                    a.weight_values.push(id as f32);
                }
            }
        }
        a
    }

    /// ONNX Runtime's walk over the attributes as written: the leaf (its id) a row reaches.
    fn reference(nodes: &[Spec], row: &[f32]) -> f32 {
        let mut at = nodes[0];
        loop {
            let (id, mode, feature, t, yes, no, missing) = at;
            let v = row[feature as usize];
            let go = match mode {
                Mode::Leaf => return id as f32,
                Mode::Leq => v <= t,
                Mode::Lt => v < t,
                Mode::Gte => v >= t,
                Mode::Gt => v > t,
                Mode::Eq => v == t,
                Mode::Neq | Mode::Member => v != t,
            } || (missing && v.is_nan());
            let next = if go { yes } else { no };
            at = *nodes.iter().find(|n| n.0 == next).expect("child");
        }
    }

    fn check(trees: &[&[Spec]], rows: &[[f32; 2]]) -> Layout {
        let layout =
            Layout::build(&attributes(trees), &|why| Uncovered { operator: "test".into(), node: String::new(), why }).expect("layout");
        let x: Vec<f32> = rows.iter().flatten().copied().collect();
        // The rows as they come, and copied into 16 columns with their set keys.
        let copied: Vec<Keyed<16>> = rows
            .iter()
            .map(|r| {
                let values: [f32; 16] = std::array::from_fn(|k| if k < 2 { r[k] } else { 0.0 });
                Keyed { values, keys: values.map(set_keys) }
            })
            .collect();
        for (tree, nodes) in trees.iter().enumerate() {
            let (mut leaves, mut from_copy) = (vec![0u32; rows.len()], vec![0u32; rows.len()]);
            layout.leaves(tree, &Wide { x: &x, width: 2 }, None, &mut leaves);
            layout.leaves(tree, copied.as_slice(), None, &mut from_copy);
            assert_eq!(leaves, from_copy, "tree {tree}");
            // A [`Masked`] tree read from columns, a block at a time (the last one short).
            let mut masked = vec![0u32; rows.len()];
            for (b, (block, out)) in rows.chunks(MASKED_BLOCK).zip(masked.chunks_mut(MASKED_BLOCK)).enumerate() {
                let values: Vec<f32> = (0..2).flat_map(|f| block.iter().map(move |row| row[f])).collect();
                let keys: Vec<u32> = values.iter().map(|&v| set_keys(v)).collect();
                let columns = Columns { values: &values, keys: &keys, rows: block.len() };
                layout.leaves(tree, &copied[b * MASKED_BLOCK..][..block.len()], Some(&columns), out);
            }
            assert_eq!(leaves, masked, "tree {tree}, read from columns");
            for (row, &leaf) in rows.iter().zip(&leaves) {
                assert_eq!(layout.leaf_value[leaf as usize].to_bits(), reference(nodes, row).to_bits(), "tree {tree}, row {row:?}");
            }
        }
        layout
    }

    /// Values around every threshold used below, NaN, signed zero, infinities, and values just
    /// outside and inside the range a set holds.
    fn rows() -> Vec<[f32; 2]> {
        let values = [
            -f32::INFINITY,
            -1.0,
            -0.0,
            0.0,
            0.25,
            0.5,
            1.0,
            1.5,
            2.0,
            5.0,
            7.0,
            63.0,
            64.0,
            255.0,
            255.5,
            256.0,
            1e9,
            f32::INFINITY,
            f32::NAN,
        ];
        // 19 × 19 rows: more than one group of 8 and a remainder walked row by row.
        values.iter().flat_map(|&a| values.iter().map(move |&b| [a, b])).collect()
    }

    #[test]
    fn an_equality_chain_becomes_one_set_node_with_the_chains_leaves() {
        use Mode::*;
        // f0 in {1, 5, 7, 64} -> node 4, else leaf 3; node 4: f1 <= 0.5 (NaN true).
        let chain: &[Spec] = &[
            (0, Eq, 0, 1.0, 4, 1, false),
            (1, Eq, 0, 5.0, 4, 2, false),
            (2, Eq, 0, 7.0, 4, 5, false),
            (5, Eq, 0, 64.0, 4, 3, false),
            (3, Leaf, 0, 0.0, 0, 0, false),
            (4, Leq, 1, 0.5, 6, 7, true),
            (6, Leaf, 0, 0.0, 0, 0, false),
            (7, Leaf, 0, 0.0, 0, 0, false),
        ];
        // A chain whose missing values go to the true child, and one on 255.5 (not a set).
        let missing: &[Spec] =
            &[(0, Eq, 1, 0.0, 2, 1, true), (1, Eq, 1, 255.0, 2, 3, true), (2, Leaf, 0, 0.0, 0, 0, false), (3, Leaf, 0, 0.0, 0, 0, false)];
        let fraction: &[Spec] =
            &[(0, Eq, 0, 255.5, 2, 1, false), (1, Eq, 0, 2.0, 2, 3, false), (2, Leaf, 0, 0.0, 0, 0, false), (3, Leaf, 0, 0.0, 0, 0, false)];
        let layout = check(&[chain, missing, fraction], &rows());
        // Three sets beside the empty one (the lone BRANCH_EQ on 2 is a set of one value); the
        // first tree is two levels deep, not five.
        assert_eq!(layout.sets.iter().filter(|s| s.iter().any(|&w| w != 0)).count(), 3);
        assert_eq!(layout.trees[0].depth, 2);
        assert_eq!(layout.trees[2].depth, 2);
        assert!(!layout.leq_and_sets);
        // BRANCH_LEQ and sets only: the walk made for them, with and without missing values.
        let layout = check(&[chain, missing], &rows());
        assert!(layout.leq_and_sets && layout.has_missing);
        // Read from columns: the chain's set by one table look-up, a set whose missing values go
        // to the true child by its own test (a one-level tree is read as oblivious).
        let masked_sets = |layout: &Layout| -> Vec<Option<(usize, usize)>> {
            layout.masked.iter().map(|m| m.as_ref().map(|m| (m.set_tables.len(), m.set_nodes.len()))).collect()
        };
        assert_eq!(masked_sets(&layout), [Some((1, 0)), None]);
        let deeper: &[Spec] = &[
            (0, Eq, 1, 0.0, 2, 1, true),
            (1, Eq, 1, 255.0, 2, 4, true),
            (2, Leaf, 0, 0.0, 0, 0, false),
            (4, Leq, 0, 0.5, 5, 6, false),
            (5, Leaf, 0, 0.0, 0, 0, false),
            (6, Leaf, 0, 0.0, 0, 0, false),
        ];
        assert_eq!(masked_sets(&check(&[chain, deeper], &rows())), [Some((1, 0)), Some((0, 1))]);
        let no_missing: Vec<Spec> = chain.iter().map(|&(id, mode, f, t, yes, no, _)| (id, mode, f, t, yes, no, false)).collect();
        let layout = check(&[&no_missing], &rows());
        assert!(layout.leq_and_sets && !layout.has_missing);
        // Missing values only at BRANCH_LEQ nodes: the walk of signed comparisons and sets.
        let layout = check(&[chain], &rows());
        assert!(layout.leq_and_sets && layout.signed);
    }

    #[test]
    fn an_oblivious_tree_reads_its_leaf_from_a_table() {
        use Mode::*;
        let tree = |second: f32, missing: bool| -> Vec<Spec> {
            vec![
                (0, Gt, 0, 0.5, 1, 2, missing),
                (1, Gt, 1, 1.5, 3, 4, missing),
                (2, Gt, 1, second, 5, 6, missing),
                (3, Leaf, 0, 0.0, 0, 0, false),
                (4, Leaf, 0, 0.0, 0, 0, false),
                (5, Leaf, 0, 0.0, 0, 0, false),
                (6, Leaf, 0, 0.0, 0, 0, false),
            ]
        };
        let (oblivious, other, missing) = (tree(1.5, false), tree(2.0, false), tree(1.5, true));
        let layout = check(&[&oblivious, &other], &rows());
        assert_eq!(layout.oblivious.iter().map(Option::is_some).collect::<Vec<_>>(), [true, false]);
        // With missing values to the true child, and mixed with an equality node: the walk that reads
        // each node's outcome bits.
        let equal: &[Spec] = &[(0, Eq, 0, 1.0, 1, 2, false), (1, Leaf, 0, 0.0, 0, 0, false), (2, Leaf, 0, 0.0, 0, 0, false)];
        let layout = check(&[&missing, equal], &rows());
        assert!(layout.oblivious[0].is_some() && layout.same_mode.is_none());
    }

    #[test]
    fn every_mode_goes_where_onnx_runtime_goes_alone_and_mixed() {
        use Mode::*;
        let modes = [Leq, Lt, Gte, Gt, Eq, Neq];
        let trees: Vec<Vec<Spec>> = modes
            .iter()
            .flat_map(|&mode| {
                [(0.5f32, false), (0.5, true), (f32::NAN, false), (f32::NAN, true)].map(|(t, missing)| {
                    vec![(0, mode, 1, t, 1, 2, missing), (1, Leaf, 0, 0.0, 0, 0, false), (2, Leaf, 0, 0.0, 0, 0, false)]
                })
            })
            .collect();
        let all: Vec<&[Spec]> = trees.iter().map(|t| t.as_slice()).collect();
        // Mixed modes: the walk that reads each node's outcome bits.
        assert_eq!(check(&all, &rows()).same_mode, None);
        // One mode per ensemble: the walks compiled for that mode.
        for one in all.chunks(4) {
            assert!(check(one, &rows()).same_mode.is_some());
        }
        // BRANCH_LEQ with missing values to the true child at some nodes: tested as `x < c`, the
        // sign of x flipped there; thresholds at ±0, ±inf, the largest finite value; not when a
        // threshold is NaN, or +inf where missing values go to the false child.
        let leq = |t: f32, missing: bool| -> Vec<Spec> {
            vec![
                (0, Leq, 1, t, 1, 2, missing),
                (1, Leq, 0, 1.0, 3, 4, !missing),
                (2, Leaf, 0, 0.0, 0, 0, false),
                (3, Leaf, 0, 0.0, 0, 0, false),
                (4, Leaf, 0, 0.0, 0, 0, false),
            ]
        };
        let thresholds = [0.5, 0.0, -0.0, 255.0, f32::MAX, -f32::INFINITY];
        let signed: Vec<Vec<Spec>> =
            thresholds.iter().flat_map(|&t| [leq(t, true), leq(t, false)]).chain([leq(f32::INFINITY, true)]).collect();
        let signed: Vec<&[Spec]> = signed.iter().map(|t| t.as_slice()).collect();
        assert!(check(&signed, &rows()).signed);
        for unsigned in [leq(f32::INFINITY, false), leq(f32::NAN, true)] {
            let layout = check(&[&unsigned], &rows());
            assert!(layout.has_missing && !layout.signed);
        }
    }

    /// A lopsided tree of plain comparisons on two features: `leaves` leaves, a branch on the
    /// left spine at each level (thresholds spread over the test values), missing values to the
    /// true child at every other branch.
    fn spine(mode: Mode, leaves: usize) -> Vec<Spec> {
        let branches = leaves - 1;
        let mut nodes = Vec::new();
        for k in 0..branches {
            let id = k as i64;
            let leaf = (branches + k) as i64;
            let next = if k + 1 < branches { id + 1 } else { (2 * branches) as i64 };
            let threshold = [0.5, -0.0, 1.5, 255.0, 63.0, f32::INFINITY, -1.0][k % 7];
            // Alternately the spine goes on through the true and the false child.
            let (yes, no) = if k % 2 == 0 { (next, leaf) } else { (leaf, next) };
            nodes.push((id, mode, (k % 2) as i64, threshold, yes, no, k % 2 == 1));
            nodes.push((leaf, Mode::Leaf, 0, 0.0, 0, 0, false));
        }
        nodes.push(((2 * branches) as i64, Mode::Leaf, 0, 0.0, 0, 0, false));
        // The root first, as the attributes list it.
        nodes.sort_by_key(|n| (n.1 == Mode::Leaf, n.0));
        nodes
    }

    /// A complete tree of `depth` levels in heap order (node `h`'s children `2h + 1`, `2h + 2`),
    /// alternating between the two features.
    fn complete(mode: Mode, depth: u32) -> Vec<Spec> {
        let branches = (1i64 << depth) - 1;
        (0..2 * branches + 1)
            .map(|h| match h < branches {
                true => (h, mode, h % 2, [0.5, -0.0, 1.5, 255.0, 63.0, -1.0][h as usize % 6], 2 * h + 1, 2 * h + 2, h % 3 == 0),
                false => (h, Mode::Leaf, 0, 0.0, 0, 0, false),
            })
            .collect()
    }

    #[test]
    fn a_tree_of_at_most_32_leaves_is_read_from_columns_with_the_walks_leaves() {
        use Mode::*;
        for mode in [Leq, Lt, Gte, Gt] {
            // 32 leaves, 31 levels deep: read from columns; 33: walked.
            let (fits, deep) = (spine(mode, MASKED_LEAVES), spine(mode, MASKED_LEAVES + 1));
            let balanced: &[Spec] = &[
                (0, mode, 0, 0.5, 1, 2, true),
                (1, mode, 1, 1.5, 3, 4, false),
                (2, mode, 1, -0.0, 5, 6, true),
                (3, Leaf, 0, 0.0, 0, 0, false),
                (4, Leaf, 0, 0.0, 0, 0, false),
                (5, Leaf, 0, 0.0, 0, 0, false),
                (6, Leaf, 0, 0.0, 0, 0, false),
            ];
            let layout = check(&[&fits, &deep, balanced], &rows());
            // BRANCH_GT/GTE with missing values keep the walk that reads each node's outcome bits.
            let expected = if matches!(mode, Leq | Lt) { [true, false, true] } else { [false; 3] };
            assert_eq!(layout.masked.iter().map(Option::is_some).collect::<Vec<_>>(), expected, "{mode:?}");
            let no_missing: Vec<Spec> = fits.iter().map(|&(id, m, f, t, yes, no, _)| (id, m, f, t, yes, no, false)).collect();
            assert!(check(&[&no_missing], &rows()).masked[0].is_some(), "{mode:?}");
            assert_eq!(layout.trees[0].depth, MASKED_LEAVES as u32 - 1);
        }
        // Complete trees: 32 leaves read from columns, 64 (a forest's) walked.
        let layout = check(&[&complete(Lt, 5), &complete(Lt, 6)], &rows());
        assert_eq!(layout.masked.iter().map(Option::is_some).collect::<Vec<_>>(), [true, false]);
        // BRANCH_LEQ with sets too (the one-level tree is read as oblivious); mixed modes keep
        // their walk.
        let set: &[Spec] = &[(0, Eq, 0, 1.0, 1, 2, false), (1, Leaf, 0, 0.0, 0, 0, false), (2, Leaf, 0, 0.0, 0, 0, false)];
        let layout = check(&[set, &spine(Leq, 4)], &rows());
        assert!(layout.leq_and_sets);
        assert_eq!(layout.masked.iter().map(Option::is_some).collect::<Vec<_>>(), [false, true]);
        let layout = check(&[&spine(Lt, 4), &spine(Leq, 4)], &rows());
        assert!(layout.same_mode.is_none() && layout.masked.iter().all(Option::is_none));
    }
}
