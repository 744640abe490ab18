//! A small deterministic CART for two classes (Gini impurity, binary splits at midpoints between
//! consecutive distinct values, grown until pure or `max_depth`).
//!
//! Why not linfa-trees: linfa-trees 0.8.1 sums class frequencies from a `HashMap`, whose iteration
//! order changes from run to run, so splits of equal impurity are chosen differently each time —
//! measured here as different cases from the same seed. SG's paths (and so its search) must be
//! reproducible; with two classes the impurity is computed exactly from integer counts. Splits are
//! found from a per-feature histogram of values (tabular features take few distinct values).

use std::collections::BTreeMap;

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
    width: usize,
}

/// An f64 ordered by `total_cmp`, for the value histogram.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrderedValue(f64);

impl Eq for OrderedValue {}
impl PartialOrd for OrderedValue {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrderedValue {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

fn gini(ones: usize, n: usize) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let p = ones as f64 / n as f64;
    2.0 * p * (1.0 - p)
}

impl Cart {
    /// Fit on `rows` (row-major, `width` columns) and labels 0/1.
    pub fn fit(rows: &[f64], width: usize, labels: &[u8], max_depth: usize) -> Self {
        let mut cart = Cart { nodes: Vec::new(), width };
        let idx: Vec<usize> = (0..labels.len()).collect();
        cart.grow(rows, labels, idx, 0, max_depth);
        cart
    }

    fn grow(&mut self, rows: &[f64], labels: &[u8], idx: Vec<usize>, depth: usize, max_depth: usize) -> usize {
        let me = self.nodes.len();
        let ones = idx.iter().filter(|&&i| labels[i] == 1).count();
        let class = u8::from(2 * ones > idx.len());
        self.nodes.push(Node::Leaf { class });
        if ones == 0 || ones == idx.len() || depth >= max_depth {
            return me;
        }
        let n = idx.len();
        let parent = gini(ones, n);
        let mut best: Option<(f64, usize, f64)> = None;
        for f in 0..self.width {
            // Rows and class-1 rows per distinct value, in value order.
            let mut histogram: BTreeMap<OrderedValue, (usize, usize)> = BTreeMap::new();
            for &i in &idx {
                let e = histogram.entry(OrderedValue(rows[i * self.width + f])).or_default();
                e.0 += 1;
                e.1 += usize::from(labels[i] == 1);
            }
            let values: Vec<(f64, usize, usize)> = histogram.into_iter().map(|(v, (c, o))| (v.0, c, o)).collect();
            let (mut nl, mut left_ones) = (0, 0);
            for w in values.windows(2) {
                nl += w[0].1;
                left_ones += w[0].2;
                let nr = n - nl;
                let impurity = (nl as f64 * gini(left_ones, nl) + nr as f64 * gini(ones - left_ones, nr)) / n as f64;
                if impurity < parent - 1e-12 && best.is_none_or(|b| impurity < b.0 - 1e-12) {
                    best = Some((impurity, f, (w[0].0 + w[1].0) / 2.0));
                }
            }
        }
        let Some((_, feature, threshold)) = best else { return me };
        let (l, r): (Vec<usize>, Vec<usize>) = idx.into_iter().partition(|&i| rows[i * self.width + feature] < threshold);
        let left = self.grow(rows, labels, l, depth + 1, max_depth);
        let right = self.grow(rows, labels, r, depth + 1, max_depth);
        self.nodes[me] = Node::Split { feature, threshold, left, right };
        me
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
}
