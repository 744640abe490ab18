//! The evaluator of a [`Masked`] tree: every comparison made for a block of rows held in columns,
//! each failed one ruling out its true subtree's leaves; the row's leaf is the leftmost left.

use super::*;
use multiversion::multiversion;

impl Layout {
    /// The leaf each row of `rows` (as many as `leaves`, at most [`MASKED_BLOCK`]) reaches in
    /// [`Masked`] tree `tree`. Not inlined: one call per tree and block, kept out of the walks' code.
    #[inline(never)]
    pub(super) fn masked_leaves<const MODE: u8, const MISSING_TO_TRUE: bool>(&self, tree: &Masked, rows: &Columns<'_>, leaves: &mut [u32]) {
        if let (Some(binned), Some(bins)) = (&tree.binned, rows.bins) {
            return match binned.width {
                1 => Self::binned_leaves::<u8, 128>(tree, binned, &bins.bytes, &bins.sets, leaves),
                2 => Self::binned_leaves::<u16, 64>(tree, binned, &bins.halves, &bins.sets, leaves),
                _ => Self::binned_leaves::<u32, 32>(tree, binned, &bins.words, &bins.sets, leaves),
            };
        }
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

    /// [`Layout::masked_leaves`] of a [`Binned`] tree: its comparisons on the block's bins (`bins`,
    /// column after column, in the width of its leaf masks), then its set nodes by their tables,
    /// looked up by the block's set-table indices (`sets`, [`Bins::index_sets`]), in the same pass
    /// over the rows as their leaves.
    fn binned_leaves<M: Word, const C: usize>(tree: &Masked, binned: &Binned, bins: &[M], sets: &[u16], leaves: &mut [u32]) {
        let n = leaves.len();
        let mut exits = [M::ALL; MASKED_BLOCK];
        let exits = &mut exits[..n];
        rule_out::<M, C>(&binned.nodes, bins, exits);
        let index = |column: u32| &sets[column as usize * n..][..n];
        let leaf_of: &[u32; MASKED_LEAVES] = tree.leaves.as_slice().try_into().expect("padded");
        let tables = tree.set_tables.iter().zip(&binned.tables).map(|(table, &column)| (table.masks.as_slice(), index(column)));
        // Up to four tables with the leaves, the rest before them (no tree here has more than six).
        let before = tree.set_tables.len().saturating_sub(4);
        for (masks, index) in tables.clone().take(before) {
            for (exit, &i) in exits.iter_mut().zip(index) {
                *exit &= M::from_u32(masks[i as usize]);
            }
        }
        let mut last = tables.skip(before);
        let mut next = || last.next().expect("counted");
        match tree.set_tables.len() - before {
            0 => leaves_with::<M, 0>(exits, [], leaf_of, leaves),
            1 => leaves_with::<M, 1>(exits, [next()], leaf_of, leaves),
            2 => leaves_with::<M, 2>(exits, [next(), next()], leaf_of, leaves),
            3 => leaves_with::<M, 3>(exits, [next(), next(), next()], leaf_of, leaves),
            _ => leaves_with::<M, 4>(exits, [next(), next(), next(), next()], leaf_of, leaves),
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
}

/// Rule out of `exits` (one leaf mask a row, as many rows as the block) the leaves of every
/// binned node's true subtree where its comparison fails, the bins read from `bins` (column after
/// column, as many rows each as `exits`).
///
/// The rows go `C` at a time (128 bytes of masks: eight SSE2 registers, four AVX2 ones) through
/// all the nodes, so that their masks stay in registers from node to node instead of being loaded
/// and stored for each; the rows left over go node after node. Compiled twice: for the baseline x86-64 (SSE2) and
/// for AVX2, picked at run time by the CPU (twice the rows a vector instruction, and three-operand
/// forms that need no register copies).
#[multiversion(targets("x86_64+avx2"))]
fn rule_out<M: Word, const C: usize>(nodes: &[BinnedNode], bins: &[M], exits: &mut [M]) {
    let n = exits.len();
    let whole = n - n % C;
    for (at, chunk) in exits[..whole].chunks_exact_mut(C).enumerate() {
        let mut masks = [M::ALL; C];
        for node in nodes {
            let column: &[M; C] = bins[node.column as usize * n + at * C..][..C].try_into().expect("C bins");
            let (cut, ruled_out) = (M::from_u32(node.cut), !M::from_u32(node.keep));
            for (mask, &bin) in masks.iter_mut().zip(column) {
                *mask &= !(bin.above(cut) & ruled_out);
            }
        }
        chunk.copy_from_slice(&masks);
    }
    for node in nodes {
        let column = &bins[node.column as usize * n + whole..][..n - whole];
        let (cut, ruled_out) = (M::from_u32(node.cut), !M::from_u32(node.keep));
        for (exit, &bin) in exits[whole..].iter_mut().zip(column) {
            *exit &= !(bin.above(cut) & ruled_out);
        }
    }
}

/// Each row's leaf: its mask in `exits` narrowed by `K` set tables (each the table's masks and
/// the block's indices into it, one a row), the lowest leaf left looked up in `leaf_of`.
#[inline(always)]
fn leaves_with<M: Word, const K: usize>(exits: &[M], tables: [(&[u32], &[u16]); K], leaf_of: &[u32; MASKED_LEAVES], leaves: &mut [u32]) {
    let n = exits.len();
    let tables = tables.map(|(masks, index)| (masks, &index[..n]));
    for (r, (leaf, &exit)) in leaves[..n].iter_mut().zip(exits).enumerate() {
        let mut exit = exit;
        for (masks, index) in &tables {
            exit &= M::from_u32(masks[index[r] as usize]);
        }
        *leaf = leaf_of[exit.lowest() as usize & (MASKED_LEAVES - 1)];
    }
}
