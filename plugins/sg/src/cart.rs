//! SG's decision trees: the surrogate tree (`Cart::fit`, its leaves counted for the coverage
//! figures) and the path of one row through the tree of a local explanation's samples
//! (`Cart::path_of`, grown along that path alone). Both are grown by fairpipe-cart, the CART the
//! native tree model shares, under SG's [`RULE`]; leaves vote their majority class.

pub use fairpipe_cart::Codes;
use fairpipe_cart::{Labels, Rule};

/// SG's rule: any split lowering the impurity (by more than rounding, 1e-12 a row) is made, splits
/// whose impurities are within 1e-12 a row are tied (the lower feature, then the lower value,
/// wins), nodes of 1,024 rows or more scan their features in parallel.
const RULE: Rule = Rule { min_decrease: 1e-12, tie: 1e-12, parallel_rows: 1024 };

/// A node of the tree: a split, or a leaf with its training rows' class counts (its class is the
/// majority's, 0 on a tie).
pub use fairpipe_cart::Grown as Node;

/// A fitted tree: its nodes, the root first.
#[derive(Debug, Clone)]
pub struct Cart {
    /// The nodes; a split's children follow it.
    pub nodes: Vec<Node>,
}

/// One split on a row's path: `x[feature] < threshold` when `less`, else `x[feature] ≥ threshold`;
/// `reaching` rows reach the split and `taking` of them go the row's way.
#[derive(Debug, Clone, PartialEq)]
pub struct PathStep {
    /// Feature index.
    pub feature: usize,
    /// Split value.
    pub threshold: f64,
    /// Whether the row goes left (`<`).
    pub less: bool,
    /// Rows reaching the split.
    pub reaching: usize,
    /// Rows reaching it that go the row's way.
    pub taking: usize,
}

impl Cart {
    /// Grow the tree of `rows` (row-major, `width` values a row) labelled `labels` (0/1), at most
    /// `max_depth` splits deep.
    pub fn fit(rows: &[f64], width: usize, labels: &[u8], max_depth: usize) -> Self {
        let codes = Codes::new(rows, width);
        Cart { nodes: Labels::new(labels).grow(&codes, &RULE, max_depth) }
    }

    /// The splits, at most `max_depth`, on `row`'s path through the tree [`Cart::fit`] would grow,
    /// with the number of rows reaching each split and taking `row`'s side — found without growing
    /// the branches `row` does not take (CART chooses each node's split from that node's rows
    /// alone), so it costs about twice a root split instead of a whole tree.
    pub fn path_of(codes: &Codes, labels: &[u8], row: usize, max_depth: usize) -> Vec<PathStep> {
        let mut rows: Vec<u32> = (0..labels.len() as u32).collect();
        let labels = Labels::new(labels);
        let mut counts = Vec::new();
        let mut steps = Vec::new();
        while steps.len() < max_depth {
            let ones = labels.ones(&rows);
            let Some(split) = labels.best_split(codes, &rows, ones, &RULE, &mut counts) else { break };
            let column = &codes.codes[split.feature];
            let less = column[row] <= split.left_code;
            let reaching = rows.len();
            rows.retain(|&r| (column[r as usize] <= split.left_code) == less);
            steps.push(PathStep { feature: split.feature, threshold: split.threshold, less, reaching, taking: rows.len() });
        }
        steps
    }

    /// The nodes `row` passes, each with whether it goes left, ending at its leaf (`false`).
    pub fn path(&self, row: &[f64]) -> Vec<(usize, bool)> {
        let mut out = Vec::new();
        let mut i = 0;
        while let Node::Split { feature, threshold, left, right } = self.nodes[i] {
            let go_left = row[feature] < threshold;
            out.push((i, go_left));
            i = if go_left { left } else { right };
        }
        out.push((i, false));
        out
    }

    /// The class the tree gives `row`.
    pub fn predict(&self, row: &[f64]) -> u8 {
        let (leaf, _) = *self.path(row).last().expect("a path ends at a leaf");
        match self.nodes[leaf] {
            Node::Leaf { ones, rows } => u8::from(2 * ones > rows),
            Node::Split { .. } => 0,
        }
    }

    /// The number of leaves.
    pub fn leaves(&self) -> usize {
        self.nodes.iter().filter(|n| matches!(n, Node::Leaf { .. })).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn learns_a_threshold_and_is_pure_on_its_training_data() {
        let rows: Vec<f64> = (0..100).flat_map(|i| [f64::from(i % 10), f64::from(i % 3)]).collect();
        let labels: Vec<u8> = rows.chunks(2).map(|r| u8::from(r[0] >= 5.0 && r[1] != 2.0)).collect();
        let tree = Cart::fit(&rows, 2, &labels, 64);
        assert!(rows.chunks(2).zip(&labels).all(|(r, &l)| tree.predict(r) == l));
        match tree.nodes[0] {
            Node::Split { feature, threshold, .. } => assert!((feature == 0 && threshold == 4.5) || feature == 1, "{:?}", tree.nodes[0]),
            Node::Leaf { .. } => panic!("no split"),
        }
        // Deterministic: the same data gives the same tree.
        let again = Cart::fit(&rows, 2, &labels, 64);
        assert_eq!(format!("{:?}", tree.nodes), format!("{:?}", again.nodes));
    }

    #[test]
    fn the_path_grown_alone_is_the_path_in_the_whole_tree() {
        // Noisy labels over 4 features with few values, so the tree is deep and bushy.
        let width = 4;
        let n = 3000;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let rows: Vec<f64> = (0..n * width).map(|_| f64::from(rng.gen_range(0..7u8))).collect();
        let labels: Vec<u8> = rows.chunks(width).map(|r| u8::from(r[0] + r[1] * r[2] > 9.0 + r[3] || rng.gen_bool(0.1))).collect();
        let tree = Cart::fit(&rows, width, &labels, 64);
        assert!(tree.leaves() > 50, "a bushy tree: {} leaves", tree.leaves());
        for row in [0, 1, 17, 500, 2999] {
            let r = &rows[row * width..(row + 1) * width];
            let whole: Vec<(usize, f64, bool)> = tree
                .path(r)
                .into_iter()
                .filter_map(|(node, left)| match tree.nodes[node] {
                    Node::Split { feature, threshold, .. } => Some((feature, threshold, left)),
                    Node::Leaf { .. } => None,
                })
                .collect();
            let alone: Vec<(usize, f64, bool)> =
                Cart::path_of(&Codes::new(&rows, width), &labels, row, 64).into_iter().map(|s| (s.feature, s.threshold, s.less)).collect();
            assert_eq!(whole, alone, "row {row}");
        }
    }
}
