//! The walk: rows step through a tree's nodes in groups of 8 in lockstep (no bounds check, no
//! branch per node), a node's outcome computed for each comparison mode.

use super::*;

impl Layout {
    /// Whether node `i` is a leaf.
    #[inline(always)]
    pub(super) fn is_leaf(&self, i: u32) -> bool {
        self.nodes[i as usize].children[0] == i | LEAF
    }

    /// The set of a node with these flags ([`Layout::sets`] is a power of two long: the index is
    /// masked, without a bounds check).
    #[inline(always)]
    pub(super) fn set(sets: &[[u64; SET_WORDS]], flags: u32) -> &[u64; SET_WORDS] {
        &sets[(flags >> SET_SHIFT) as usize & sets.len().wrapping_sub(1)]
    }

    /// Whether `v` goes to `node`'s true child.
    #[inline(always)]
    pub(super) fn goes<const MODE: u8, const MISSING_TO_TRUE: bool>(
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

    pub(super) fn walk<const MODE: u8, const MISSING_TO_TRUE: bool, R: Rows + ?Sized>(&self, tree: usize, rows: &R, leaves: &mut [u32]) {
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
