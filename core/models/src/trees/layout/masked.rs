//! The evaluator of a [`Masked`] tree: every comparison made for a block of rows held in columns,
//! each failed one ruling out its true subtree's leaves; the row's leaf is the leftmost left.

use super::*;

impl Layout {
    /// The leaf each row of `rows` (as many as `leaves`, at most [`MASKED_BLOCK`]) reaches in
    /// [`Masked`] tree `tree`. Not inlined: one call per tree and block, kept out of the walks' code.
    #[inline(never)]
    pub(super) fn masked_leaves<const MODE: u8, const MISSING_TO_TRUE: bool>(&self, tree: &Masked, rows: &Columns<'_>, leaves: &mut [u32]) {
        if let (Some(binned), Some(bins)) = (&tree.binned, rows.bins) {
            return match binned.width {
                1 => Self::binned_leaves(tree, binned, &bins.bytes, rows, leaves),
                2 => Self::binned_leaves(tree, binned, &bins.halves, rows, leaves),
                _ => Self::binned_leaves(tree, binned, &bins.words, rows, leaves),
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
    /// column after column, in the width of its leaf masks), its set nodes by their tables.
    fn binned_leaves<M: Word>(tree: &Masked, binned: &Binned, bins: &[M], rows: &Columns<'_>, leaves: &mut [u32]) {
        let n = leaves.len();
        let mut exits = [M::ALL; MASKED_BLOCK];
        let exits = &mut exits[..n];
        for node in &binned.nodes {
            let column = &bins[node.column as usize * n..][..n];
            let (cut, keep) = (M::from_u32(node.cut), M::from_u32(node.keep));
            for (exit, &bin) in exits.iter_mut().zip(column) {
                *exit &= if bin > cut { keep } else { M::ALL };
            }
        }
        for table in &tree.set_tables {
            let f = (table.feature & !FEATURE_MISSING) as usize;
            let keys = &rows.keys[f * rows.rows..][..n];
            let (masks, last) = (table.masks.as_slice(), table.masks.len() - 1);
            for (exit, &key) in exits.iter_mut().zip(keys) {
                *exit &= M::from_u32(masks[((key >> table.shift & 0xffff) as usize).min(last)]);
            }
        }
        let table: &[u32; MASKED_LEAVES] = tree.leaves.as_slice().try_into().expect("padded");
        for (leaf, exit) in leaves.iter_mut().zip(exits.iter()) {
            *leaf = table[exit.lowest() as usize & (MASKED_LEAVES - 1)];
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
