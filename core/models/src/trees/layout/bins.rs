//! Thresholds quantised per feature: a [`Masked`] tree's plain comparisons made on small integer
//! bins, the block's rows binned once, instead of on f32 values.
//!
//! A feature's edges are the distinct thresholds its binned nodes compare with (`e_1 < … < e_m`).
//! A value `v` that is not NaN has the bin `#{e < v} + #{e <= v}` (0 to 2m): `v < e_k` exactly
//! when the bin is at most `2k − 2`, `v <= e_k` when it is at most `2k − 1`, `v > e_k` and
//! `v >= e_k` the opposites. NaN, which fails every one of those comparisons, takes the bin
//! `2m + 1` above them all ([`Encoding::NanHigh`]) or 0 below them (the others shifted up by one,
//! [`Encoding::NanLow`]); a column may also be read reversed (`2m + 1 − bin`). Every binned
//! comparison is then "the node fails when the column's bin is above its cut": BRANCH_LT and
//! BRANCH_LEQ on the NaN-high bins, the same with missing values to the true child on the NaN-low
//! bins, BRANCH_GT and BRANCH_GTE on the NaN-low bins reversed, or with missing values to the
//! true child on the NaN-high bins reversed (see [`binned`]). It is exact for every value, as the
//! tests check over every threshold of each fixture (values at, just below and just above it,
//! NaN, ±inf, ±0).
//!
//! The bins are as wide as the tree's leaf masks (`u8` for 8 leaves or fewer, `u16` for 16, `u32`
//! for 32), so that a vector instruction compares as many rows as it masks.

use super::*;

/// A comparison as a binned node reads it: the mode, the threshold, and whether a missing value
/// goes to the true child.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plain {
    /// [`Mode::Lt`], [`Mode::Leq`], [`Mode::Gt`] or [`Mode::Gte`].
    pub mode: Mode,
    /// The threshold (not NaN).
    pub threshold: f32,
    /// Whether NaN goes to the true child.
    pub missing: bool,
}

/// Where NaN's bin is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// NaN above every other bin (`2m + 1`).
    NanHigh,
    /// NaN at 0, the other bins shifted up by one.
    NanLow,
    /// [`Encoding::NanHigh`] read as `2m + 1 − bin`.
    NanHighReversed,
    /// [`Encoding::NanLow`] read as `2m + 1 − bin`.
    NanLowReversed,
}

/// One binned column of a block: a feature's bins in one [`Encoding`].
#[derive(Debug, Clone, PartialEq)]
pub struct BinColumn {
    /// The feature's place in [`Bins::edges`].
    pub feature: u32,
    /// How NaN is placed and whether the bins are reversed.
    pub encoding: Encoding,
}

/// The binned features of a layout and the columns a block's rows are binned into.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bins {
    /// Per binned feature: the feature (its column in [`Columns::values`]) and its edges, sorted,
    /// distinct, none NaN.
    pub edges: Vec<(u32, Vec<f32>)>,
    /// The columns the binned nodes read.
    pub columns: Vec<BinColumn>,
    /// Which widths of bins some tree reads: bit 0 `u8`, bit 1 `u16`, bit 2 `u32`.
    pub widths: u8,
    /// The set keys the binned trees' set tables are looked up by, one column per feature and
    /// key (exact or truncated).
    pub sets: Vec<SetColumn>,
}

/// A column of a block's set-table indices: a feature's [`set_keys`] (the exact key or the
/// truncated one) clamped to the last entry of the tables read by it, which every binned tree's
/// table on that feature and key is padded to. The key's shift and clamp are made once per row
/// and feature, not once per tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetColumn {
    /// The feature (its column in [`Columns::keys`]).
    pub feature: u32,
    /// As [`SetTable::shift`].
    pub shift: u32,
    /// The length of every table read by this column: one past the largest member of their sets,
    /// then one entry for every other key.
    pub length: u32,
}

/// A node of a binned tree: it fails (ruling out the leaves of its true subtree) when the bin in
/// column `column` is above `cut`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BinnedNode {
    /// The column in [`Bins::columns`].
    pub column: u32,
    /// The largest bin at which the comparison holds.
    pub cut: u32,
    /// As [`MaskedNode::keep`].
    pub keep: u32,
}

/// A [`Masked`] tree's plain comparisons on bins.
#[derive(Debug, Clone, PartialEq)]
pub struct Binned {
    /// The comparisons.
    pub nodes: Vec<BinnedNode>,
    /// Per set table of the tree ([`Masked::set_tables`], in order): its column in
    /// [`Bins::sets`].
    pub tables: Vec<u32>,
    /// Bytes of the leaf masks and bins: 1, 2 or 4.
    pub width: u8,
}

/// The most edges of a feature: its bins (2m + 2 of them) fit a `u8`.
pub const MAX_EDGES: usize = 127;

/// The least f32 below `t` (not NaN or -inf).
fn next_down(t: f32) -> f32 {
    if t == 0.0 {
        -f32::from_bits(1)
    } else if t > 0.0 {
        f32::from_bits(t.to_bits() - 1)
    } else {
        f32::from_bits(t.to_bits() + 1)
    }
}

/// The column and cut of `plain` when its threshold is the `k`-th edge (from 1) of `m`: the node
/// fails exactly when the bin in that encoding is above the cut.
pub fn binned(plain: Plain, k: u32, m: u32) -> (Encoding, u32) {
    let top = 2 * m + 1;
    match (plain.mode, plain.missing) {
        // Holds when the bin is at most 2k − 2 (LT) or 2k − 1 (LEQ); NaN fails above them.
        (Mode::Lt, false) => (Encoding::NanHigh, 2 * k - 2),
        (Mode::Leq, false) => (Encoding::NanHigh, 2 * k - 1),
        // The same one bin up, NaN at 0 holding.
        (Mode::Lt, true) => (Encoding::NanLow, 2 * k - 1),
        (Mode::Leq, true) => (Encoding::NanLow, 2 * k),
        // Fails when the bin is at most 2k − 1 (GT) or 2k − 2 (GTE), or NaN (at 0, one bin up):
        // reversed, when it is above top − 2k − 1 (GT) or top − 2k (GTE).
        (Mode::Gt, false) => (Encoding::NanLowReversed, top - 2 * k - 1),
        (Mode::Gte, false) => (Encoding::NanLowReversed, top - 2 * k),
        // Fails when the bin is at most 2k − 1 (GT) or 2k − 2 (GTE), NaN at the top holding.
        (Mode::Gt, true) => (Encoding::NanHighReversed, top - 2 * k),
        (Mode::Gte, true) => (Encoding::NanHighReversed, top - 2 * k + 1),
        _ => unreachable!("only plain comparisons are binned"),
    }
}

/// The bin of `v` among `edges` (sorted, distinct) in `encoding`.
pub fn bin_of(edges: &[f32], encoding: Encoding, v: f32) -> u32 {
    let m = edges.len() as u32;
    let top = 2 * m + 1;
    let count = edges.iter().map(|&e| u32::from(e < v) + u32::from(e <= v)).sum();
    finish(count, v.is_nan(), top, encoding)
}

/// The bin in `encoding` of a value `count` edges below or at which (each counted once for `<`
/// and once for `<=`) it is, NaN or not.
#[inline(always)]
fn finish(count: u32, nan: bool, top: u32, encoding: Encoding) -> u32 {
    let high = if nan { top } else { count };
    let low = if nan { 0 } else { count + 1 };
    match encoding {
        Encoding::NanHigh => high,
        Encoding::NanLow => low,
        Encoding::NanHighReversed => top - high,
        Encoding::NanLowReversed => top - low,
    }
}

/// A leaf mask and bin word: `u8`, `u16` or `u32`.
pub trait Word:
    Copy + PartialOrd + std::ops::BitAnd<Output = Self> + std::ops::BitAndAssign + std::ops::Not<Output = Self> + Default
{
    /// Every bit set.
    const ALL: Self;
    /// The low bits of `v`.
    fn from_u32(v: u32) -> Self;
    /// The index of the lowest bit set.
    fn lowest(self) -> u32;
    /// Every bit set when the bin `self` is above `cut`, none when not. Bins are below 256 (at
    /// most [`MAX_EDGES`] edges a feature), so a `u16` or `u32` bin is compared as signed: the
    /// one comparison SSE2 has for those widths (unsigned takes two more instructions a vector).
    fn above(self, cut: Self) -> Self;
}

macro_rules! word {
    ($($t:ty, $compared:ty;)*) => {$(
        impl Word for $t {
            const ALL: Self = <$t>::MAX;
            #[inline(always)]
            fn from_u32(v: u32) -> Self {
                v as $t
            }
            #[inline(always)]
            fn lowest(self) -> u32 {
                self.trailing_zeros()
            }
            #[inline(always)]
            fn above(self, cut: Self) -> Self {
                <$t>::from((self as $compared) > (cut as $compared)).wrapping_neg()
            }
        }
    )*};
}
word!(u8, u8; u16, i16; u32, i32;);

/// A block's binned columns, column after column, in each width some tree reads.
#[derive(Debug, Clone, Default)]
pub struct BinBlock {
    /// `u8` bins.
    pub bytes: Vec<u8>,
    /// `u16` bins.
    pub halves: Vec<u16>,
    /// `u32` bins.
    pub words: Vec<u32>,
    /// The set-table indices of [`Bins::sets`], column after column.
    pub sets: Vec<u16>,
}

impl Bins {
    /// The set-table index of each of the block's rows (its [`Columns::keys`], `rows` each) in
    /// every column of [`Bins::sets`], into `block`.
    pub fn index_sets(&self, keys: &[u32], rows: usize, block: &mut BinBlock) {
        block.sets.resize(self.sets.len() * rows, 0);
        if rows == 0 {
            return;
        }
        for (column, index) in self.sets.iter().zip(block.sets.chunks_exact_mut(rows)) {
            let keys = &keys[column.feature as usize * rows..][..rows];
            let last = column.length - 1;
            for (i, &key) in index.iter_mut().zip(keys) {
                *i = (key >> column.shift & 0xffff).min(last) as u16;
            }
        }
    }

    /// Bin the block's rows (`values`: column after column, `rows` each, as [`Columns::values`])
    /// into `block`, every column of [`Bins::columns`] in each width of [`Bins::widths`].
    pub fn fill(&self, values: &[f32], rows: usize, block: &mut BinBlock) {
        let columns = self.columns.len();
        let resize = |bit: u8| if self.widths & bit != 0 { columns * rows } else { 0 };
        block.bytes.resize(resize(1), 0);
        block.halves.resize(resize(2), 0);
        block.words.resize(resize(4), 0);
        let mut high = [0u32; MASKED_BLOCK];
        let high = &mut high[..rows];
        for (at, (feature, edges)) in self.edges.iter().enumerate() {
            let column = &values[*feature as usize * rows..][..rows];
            // Counted edge by edge over the rows (a loop the compiler makes vector instructions).
            high.fill(0);
            for &e in edges {
                for (h, &v) in high.iter_mut().zip(column) {
                    *h += u32::from(e < v) + u32::from(e <= v);
                }
            }
            let top = 2 * edges.len() as u32 + 1;
            for (c, bin) in self.columns.iter().enumerate().filter(|(_, c)| c.feature as usize == at) {
                let encoding = bin.encoding;
                let bins = high.iter().zip(column).map(|(&h, &v)| finish(h, v.is_nan(), top, encoding));
                let at = c * rows;
                if self.widths & 1 != 0 {
                    block.bytes[at..at + rows].iter_mut().zip(bins.clone()).for_each(|(b, v)| *b = v as u8);
                }
                if self.widths & 2 != 0 {
                    block.halves[at..at + rows].iter_mut().zip(bins.clone()).for_each(|(b, v)| *b = v as u16);
                }
                if self.widths & 4 != 0 {
                    block.words[at..at + rows].iter_mut().zip(bins).for_each(|(b, v)| *b = v);
                }
            }
        }
    }
}

impl Layout {
    /// A plain node's comparison as the walk of this layout makes it (see [`Layout::leaves`]):
    /// signed nodes back to BRANCH_LEQ (`x < next_up(t)`) or, where the sign is flipped, BRANCH_GT
    /// (`-x < -t` is `x > t`, NaN failing); `None` for a NaN threshold or another mode.
    pub fn plain(&self, comparison: &Comparison) -> Option<Plain> {
        let Comparison { threshold, feature } = *comparison;
        let missing = feature & FEATURE_MISSING != 0;
        let plain = if self.signed {
            match missing {
                true => Plain { mode: Mode::Gt, threshold: -threshold, missing: false },
                false => Plain { mode: Mode::Leq, threshold: next_down(threshold), missing: false },
            }
        } else {
            let mode = if self.leq_and_sets { Mode::Leq } else { self.same_mode? };
            Plain { mode, threshold, missing }
        };
        (matches!(plain.mode, Mode::Lt | Mode::Leq | Mode::Gt | Mode::Gte) && !plain.threshold.is_nan()).then_some(plain)
    }

    /// Bin the [`Masked`] trees that can be: no set node with missing values to its true child,
    /// no NaN threshold, and at most [`MAX_EDGES`] thresholds on any feature they compare.
    pub(super) fn bin_masked(&mut self) {
        let mut edges: HashMap<u32, Vec<f32>> = HashMap::new();
        let plains = |tree: &Masked| -> Option<Vec<(u32, Plain)>> {
            if !tree.set_nodes.is_empty() {
                return None;
            }
            tree.nodes.iter().map(|node| Some((node.comparison.feature & !FEATURE_MISSING, self.plain(&node.comparison)?))).collect()
        };
        let candidates: Vec<Option<Vec<(u32, Plain)>>> = self.masked.iter().map(|m| m.as_ref().and_then(plains)).collect();
        for (feature, plain) in candidates.iter().flatten().flatten() {
            edges.entry(*feature).or_default().push(plain.threshold);
        }
        for list in edges.values_mut() {
            list.sort_by(f32::total_cmp);
            list.dedup_by(|a, b| a == b);
        }
        let mut bins = Bins::default();
        let mut features: HashMap<u32, u32> = HashMap::new();
        let mut columns: HashMap<(u32, Encoding), u32> = HashMap::new();
        for (tree, plains) in self.masked.iter_mut().zip(candidates) {
            let (Some(tree), Some(plains)) = (tree, plains) else { continue };
            if plains.iter().any(|(f, _)| edges[f].len() > MAX_EDGES) {
                continue;
            }
            let leaves = tree.count;
            let width: u8 = match leaves {
                0..=8 => 1,
                9..=16 => 2,
                _ => 4,
            };
            let mut nodes = Vec::with_capacity(plains.len());
            for (node, (feature, plain)) in tree.nodes.iter().zip(plains) {
                let list = &edges[&feature];
                let k = list.partition_point(|&e| e < plain.threshold) as u32 + 1;
                let (encoding, cut) = binned(plain, k, list.len() as u32);
                let next = bins.edges.len() as u32;
                let at = *features.entry(feature).or_insert_with(|| {
                    bins.edges.push((feature, list.clone()));
                    next
                });
                let next = bins.columns.len() as u32;
                let column = *columns.entry((at, encoding)).or_insert_with(|| {
                    bins.columns.push(BinColumn { feature: at, encoding });
                    next
                });
                nodes.push(BinnedNode { column, cut, keep: node.keep });
            }
            let mut tables = Vec::with_capacity(tree.set_tables.len());
            for table in &tree.set_tables {
                let (feature, shift, length) = (table.feature, table.shift, table.masks.len() as u32);
                let at = match bins.sets.iter().position(|c| (c.feature, c.shift) == (feature, shift)) {
                    Some(at) => at,
                    None => {
                        bins.sets.push(SetColumn { feature, shift, length });
                        bins.sets.len() - 1
                    }
                };
                bins.sets[at].length = bins.sets[at].length.max(length);
                tables.push(at as u32);
            }
            bins.widths |= width;
            tree.binned = Some(Binned { nodes, tables, width });
        }
        // Every table padded to its column's length with its last entry (every other key's).
        for tree in self.masked.iter_mut().flatten() {
            let Some(binned) = &tree.binned else { continue };
            for (table, &column) in tree.set_tables.iter_mut().zip(&binned.tables) {
                let others = *table.masks.last().unwrap_or(&u32::MAX);
                table.masks.resize(bins.sets[column as usize].length as usize, others);
            }
        }
        self.bins = bins;
    }
}

use std::collections::HashMap;
