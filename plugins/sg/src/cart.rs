//! A small deterministic CART for two classes (Gini impurity, binary splits at midpoints between
//! consecutive distinct values, grown until pure or `max_depth`).
//!
//! Why not linfa-trees: linfa-trees 0.8.1 sums class frequencies from a `HashMap`, whose iteration
//! order changes from run to run, so splits of equal impurity are chosen differently each time —
//! measured here as different cases from the same seed. SG's paths (and so its search) must be
//! reproducible; with two classes the impurity is computed exactly from integer counts. Splits are
//! found from per-feature histograms over the rows' value codes (tabular features take few distinct
//! values), so a node costs O(rows + distinct values) per feature.

use rayon::prelude::*;

/// Nodes with at least this many rows scan their features in parallel.
const PARALLEL_NODE: usize = 1024;

/// A node of the tree.
#[derive(Debug, Clone)]
pub enum Node {
    /// `x[feature] < threshold` goes to `left`, otherwise to `right`.
    Split {
        /// Feature index.
        feature: usize,
        /// Split value.
        threshold: f64,
        /// Left child index.
        left: usize,
        /// Right child index.
        right: usize,
    },
    /// A leaf with its majority class.
    Leaf {
        /// Predicted class.
        class: u8,
    },
}

/// A fitted tree.
#[derive(Debug, Clone)]
pub struct Cart {
    /// Nodes; 0 is the root.
    pub nodes: Vec<Node>,
}

/// A row's share of a histogram bin, both counts in one word: 1 row (low half) and its label
/// (high half), so that counting a row is one addition.
fn tally(label: u8) -> u64 {
    1 | u64::from(label == 1) << 32
}

/// (rows, rows of label 1) of a histogram bin.
fn untally(bin: u64) -> (usize, usize) {
    ((bin & u64::from(u32::MAX)) as usize, (bin >> 32) as usize)
}

/// Every row's [`tally`]. Counts must stay below 2³² rows (a node holds at most all the rows).
fn tallies(labels: &[u8]) -> Vec<u64> {
    assert!(u32::try_from(labels.len()).is_ok(), "a CART of at most 2^32 - 1 rows");
    labels.iter().map(|&l| tally(l)).collect()
}

fn gini(ones: usize, n: usize) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let p = ones as f64 / n as f64;
    2.0 * p * (1.0 - p)
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

/// The best split (lowest weighted Gini impurity, strictly below the node's) of the rows `idx`, of
/// which `ones` have label 1; `None` for a pure node or one no split improves. Features are scanned
/// in parallel on large nodes; ties go to the lower feature index and then the lower threshold, so
/// the result does not depend on the threads.
fn best_split(codes: &Codes, tallies: &[u64], idx: &[usize], ones: usize, counts: &mut Vec<u64>) -> Option<(usize, f64)> {
    let n = idx.len();
    if ones == 0 || ones == n {
        return None;
    }
    let parent = gini(ones, n);
    let scan = |f: usize, counts: &mut Vec<u64>| -> Option<(f64, usize, f64)> {
        let values = &codes.values[f];
        let column = &codes.codes[f];
        counts.clear();
        counts.resize(values.len(), 0);
        for &i in idx {
            counts[column[i] as usize] += tallies[i];
        }
        let mut best: Option<(f64, usize, f64)> = None;
        let (mut nl, mut left_ones) = (0, 0);
        let mut previous: Option<usize> = None;
        for (k, &tally) in counts.iter().enumerate() {
            let (c, o) = untally(tally);
            if c == 0 {
                continue;
            }
            if let Some(p) = previous {
                let nr = n - nl;
                let impurity = (nl as f64 * gini(left_ones, nl) + nr as f64 * gini(ones - left_ones, nr)) / n as f64;
                if impurity < parent - 1e-12 && best.is_none_or(|b| impurity < b.0 - 1e-12) {
                    best = Some((impurity, f, (values[p] + values[k]) / 2.0));
                }
            }
            nl += c;
            left_ones += o;
            previous = Some(k);
        }
        best
    };
    let width = codes.values.len();
    let per_feature: Vec<Option<(f64, usize, f64)>> = if n >= PARALLEL_NODE {
        (0..width).into_par_iter().map_init(Vec::new, |counts, f| scan(f, counts)).collect()
    } else {
        (0..width).map(|f| scan(f, counts)).collect()
    };
    let mut best: Option<(f64, usize, f64)> = None;
    for candidate in per_feature.into_iter().flatten() {
        if best.is_none_or(|b| candidate.0 < b.0 - 1e-12) {
            best = Some(candidate);
        }
    }
    best.map(|(_, feature, threshold)| (feature, threshold))
}

/// Each feature's distinct values (sorted) and every row's index into them.
pub struct Codes {
    /// Per feature: distinct values, sorted.
    pub values: Vec<Vec<f64>>,
    /// Per feature: each row's index into `values`.
    pub codes: Vec<Vec<u32>>,
}

impl Codes {
    /// Code `rows` (row-major, `width` columns).
    pub fn new(rows: &[f64], width: usize) -> Self {
        let n = rows.len() / width.max(1);
        let per_feature: Vec<(Vec<f64>, Vec<u32>)> = (0..width)
            .into_par_iter()
            .map(|f| {
                let column: Vec<f64> = (0..n).map(|i| rows[i * width + f]).collect();
                let mut v = column.clone();
                v.sort_unstable_by(f64::total_cmp);
                v.dedup();
                let c = column.iter().map(|x| v.partition_point(|y| y.total_cmp(x).is_lt()) as u32).collect();
                (v, c)
            })
            .collect();
        let (values, codes) = per_feature.into_iter().unzip();
        Codes { values, codes }
    }

    /// The value of `feature` in row `row`.
    fn value(&self, feature: usize, row: usize) -> f64 {
        self.values[feature][self.codes[feature][row] as usize]
    }
}

impl Cart {
    /// Fit on `rows` (row-major, `width` columns) and labels 0/1.
    pub fn fit(rows: &[f64], width: usize, labels: &[u8], max_depth: usize) -> Self {
        let mut cart = Cart { nodes: Vec::new() };
        let codes = Codes::new(rows, width);
        let idx: Vec<usize> = (0..labels.len()).collect();
        let mut counts = Vec::new();
        cart.grow(&codes, labels, &tallies(labels), idx, 0, max_depth, &mut counts);
        cart
    }

    #[allow(clippy::too_many_arguments)]
    fn grow(
        &mut self,
        codes: &Codes,
        labels: &[u8],
        tallies: &[u64],
        idx: Vec<usize>,
        depth: usize,
        max_depth: usize,
        counts: &mut Vec<u64>,
    ) -> usize {
        let me = self.nodes.len();
        let ones = idx.iter().filter(|&&i| labels[i] == 1).count();
        let class = u8::from(2 * ones > idx.len());
        self.nodes.push(Node::Leaf { class });
        if depth >= max_depth {
            return me;
        }
        let Some((feature, threshold)) = best_split(codes, tallies, &idx, ones, counts) else { return me };
        let (l, r): (Vec<usize>, Vec<usize>) = idx.into_iter().partition(|&i| codes.value(feature, i) < threshold);
        let left = self.grow(codes, labels, tallies, l, depth + 1, max_depth, counts);
        let right = self.grow(codes, labels, tallies, r, depth + 1, max_depth, counts);
        self.nodes[me] = Node::Split { feature, threshold, left, right };
        me
    }

    /// The splits on the way from the root to the leaf of row `row` of the coded rows, in the tree that
    /// [`Cart::fit`] would grow, with the number of rows reaching each split and taking `row`'s
    /// side — found without growing the branches `row` does not take (CART chooses each node's
    /// split from that node's rows alone), so it costs about twice a root split instead of a whole
    /// tree.
    pub fn path_of(codes: &Codes, labels: &[u8], row: usize, max_depth: usize) -> Vec<PathStep> {
        let mut idx: Vec<usize> = (0..labels.len()).collect();
        let tallies = tallies(labels);
        let mut counts = Vec::new();
        let mut steps = Vec::new();
        while steps.len() < max_depth {
            let ones = idx.iter().filter(|&&i| labels[i] == 1).count();
            let Some((feature, threshold)) = best_split(codes, &tallies, &idx, ones, &mut counts) else { break };
            let less = codes.value(feature, row) < threshold;
            let reaching = idx.len();
            // The values are sorted and distinct: a value is below the threshold exactly when its
            // code is below the first code at or above it.
            let cut = codes.values[feature].partition_point(|&v| v < threshold) as u32;
            let column = &codes.codes[feature];
            idx.retain(|&i| (column[i] < cut) == less);
            steps.push(PathStep { feature, threshold, less, reaching, taking: idx.len() });
        }
        steps
    }

    /// The nodes from the root to `row`'s leaf, with the turn taken at each split (`true`: left).
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

    /// The class predicted for `row`.
    pub fn predict(&self, row: &[f64]) -> u8 {
        let (leaf, _) = *self.path(row).last().expect("a path ends at a leaf");
        match self.nodes[leaf] {
            Node::Leaf { class } => class,
            Node::Split { .. } => 0,
        }
    }

    /// Number of leaves.
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
