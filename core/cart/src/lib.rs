//! One CART for two classes, grown deterministically: Gini impurity from integer counts, binary
//! splits at the midpoint between consecutive distinct values of a feature, found from per-feature
//! histograms over the rows' value codes (tabular features take few distinct values, so a node
//! costs O(rows + distinct values) per feature), the first feature of the lowest impurity winning
//! whatever the thread schedule.
//!
//! Two users share it, each with its own [`Rule`]:
//! - fairpipe-models' `Tree` (`train`'s `algorithm = "tree"`, the model zoo): leaves keep their
//!   share of class-1 rows, a split must lower the impurity by 1e-5 a row (linfa-trees' default);
//! - the SG method plugin's local explanations: leaves vote their majority, any decrease above
//!   1e-12 splits and features within 1e-12 of each other count as tied (the first wins).
//!
//! Why not linfa-trees: linfa-trees 0.8.1 sums class frequencies from a `HashMap` whose iteration
//! order changes from run to run, so splits of equal impurity were chosen differently each time
//! (different trees, and different SG cases, from the same seed).
//!
//! Rows go left when their value's code is at most the split's `left_code`, the code the impurity
//! was counted for; a new row is sent by `value < threshold`, which is the same for every value seen
//! in training.

use rayon::prelude::*;

/// Each feature's distinct values, sorted, and every row's value as its index among them.
#[derive(Debug, Clone, PartialEq)]
pub struct Codes {
    /// `values[f]`: feature `f`'s distinct values in increasing order (`f64::total_cmp`).
    pub values: Vec<Vec<f64>>,
    /// `codes[f][r]`: the index of row `r`'s value of feature `f` in `values[f]`.
    pub codes: Vec<Vec<u32>>,
}

impl Codes {
    /// The codes of `rows`, row-major with `width` values a row (features coded in parallel).
    pub fn new(rows: &[f64], width: usize) -> Self {
        let n = rows.len() / width.max(1);
        let (values, codes) = (0..width)
            .into_par_iter()
            .map(|f| {
                let column: Vec<f64> = (0..n).map(|i| rows[i * width + f]).collect();
                let mut distinct = column.clone();
                distinct.sort_unstable_by(f64::total_cmp);
                distinct.dedup_by(|a, b| a.total_cmp(b).is_eq());
                let codes = column.iter().map(|v| distinct.partition_point(|d| d.total_cmp(v).is_lt()) as u32).collect();
                (distinct, codes)
            })
            .unzip();
        Codes { values, codes }
    }

    /// The number of features.
    pub fn width(&self) -> usize {
        self.values.len()
    }

    /// Row `row`'s value of feature `feature`.
    pub fn value(&self, feature: usize, row: usize) -> f64 {
        self.values[feature][self.codes[feature][row] as usize]
    }
}

/// When a node splits and how close two splits must be to count as tied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// The least decrease of the Gini impurity, per row of the node, for a split to be made.
    pub min_decrease: f64,
    /// Splits whose impurities (per row) differ by at most this much are tied: the first found
    /// (lowest feature, then lowest value) is kept.
    pub tie: f64,
    /// Nodes with at least this many rows scan their features in parallel (speed only: the split
    /// chosen is the same).
    pub parallel_rows: usize,
}

/// The split chosen at a node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    /// The feature split on.
    pub feature: usize,
    /// The midpoint between the last value going left and the first going right.
    pub threshold: f64,
    /// The largest value code going left.
    pub left_code: u32,
}

/// A node as grown: a split into two nodes, or a leaf with its rows' class counts.
#[derive(Debug, Clone, PartialEq)]
pub enum Grown {
    /// Rows whose value of `feature` is below `threshold` go to node `left`, the others to `right`.
    Split {
        /// The feature split on.
        feature: usize,
        /// The split value.
        threshold: f64,
        /// The left child's index.
        left: usize,
        /// The right child's index.
        right: usize,
    },
    /// A leaf: `rows` training rows reached it, `ones` of them of class 1.
    Leaf {
        /// Training rows of class 1 in the leaf.
        ones: usize,
        /// Training rows in the leaf.
        rows: usize,
    },
}

/// A row's label as one histogram increment: the row in the low 32 bits, a class-1 row in the high.
fn tally(label: u8) -> u64 {
    1 | u64::from(label == 1) << 32
}

/// (rows, class-1 rows) of a histogram bin.
fn untally(bin: u64) -> (usize, usize) {
    ((bin & u64::from(u32::MAX)) as usize, (bin >> 32) as usize)
}

/// Gini impurity of `n` rows with `ones` of class 1, times `n` (so that children's add up).
fn weighted_gini(ones: usize, n: usize) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let (ones, n) = (ones as f64, n as f64);
    2.0 * ones * (n - ones) / n
}

/// Labels (0 or 1) and what a node's split search needs of them.
pub struct Labels<'a> {
    labels: &'a [u8],
    tallies: Vec<u64>,
}

impl<'a> Labels<'a> {
    /// The labels of the rows, each 0 or 1 (any other value counts as 0).
    ///
    /// # Panics
    /// With 2^32 rows or more (a row count must fit a histogram bin's 32 bits).
    pub fn new(labels: &'a [u8]) -> Self {
        assert!(u32::try_from(labels.len()).is_ok(), "a CART of at most 2^32 - 1 rows");
        Labels { labels, tallies: labels.iter().map(|&l| tally(l)).collect() }
    }

    /// The class-1 rows among `rows`.
    pub fn ones(&self, rows: &[u32]) -> usize {
        rows.iter().filter(|&&r| self.labels[r as usize] == 1).count()
    }

    /// The best split of the node holding `rows` (`ones` of them of class 1) under `rule`; `None`
    /// when the node is pure or no split lowers the impurity by `rule.min_decrease` a row.
    /// `counts` is a buffer the search reuses.
    pub fn best_split(&self, codes: &Codes, rows: &[u32], ones: usize, rule: &Rule, counts: &mut Vec<u64>) -> Option<Split> {
        let n = rows.len();
        if ones == 0 || ones == n {
            return None;
        }
        let parent = weighted_gini(ones, n);
        let tie = rule.tie * n as f64;
        // A split counts when it lowers the impurity enough; among those, the lowest (ties: the first).
        let better = |score: f64, best: Option<(f64, Split)>| {
            (parent - score) / n as f64 >= rule.min_decrease && best.is_none_or(|b| score < b.0 - tie)
        };
        let scan = |feature: usize, counts: &mut Vec<u64>| -> Option<(f64, Split)> {
            let values = &codes.values[feature];
            let column = &codes.codes[feature];
            counts.clear();
            counts.resize(values.len(), 0);
            for &r in rows {
                counts[column[r as usize] as usize] += self.tallies[r as usize];
            }
            let mut best = None;
            let (mut left_n, mut left_ones) = (0, 0);
            let mut previous: Option<usize> = None;
            for (code, &bin) in counts.iter().enumerate() {
                let (c, o) = untally(bin);
                if c == 0 {
                    continue;
                }
                if let Some(p) = previous {
                    let score = weighted_gini(left_ones, left_n) + weighted_gini(ones - left_ones, n - left_n);
                    if better(score, best) {
                        let threshold = (values[p] + values[code]) / 2.0;
                        best = Some((score, Split { feature, threshold, left_code: p as u32 }));
                    }
                }
                left_n += c;
                left_ones += o;
                previous = Some(code);
            }
            best
        };
        let per_feature: Vec<Option<(f64, Split)>> = if n >= rule.parallel_rows {
            (0..codes.width()).into_par_iter().map_init(Vec::new, |counts, f| scan(f, counts)).collect()
        } else {
            (0..codes.width()).map(|f| scan(f, counts)).collect()
        };
        let mut best = None;
        for candidate in per_feature.into_iter().flatten() {
            if better(candidate.0, best) {
                best = Some(candidate);
            }
        }
        best.map(|(_, split)| split)
    }

    /// Grow the tree of every row under `rule`, at most `max_depth` splits deep: its nodes, the
    /// root first, each split's children after it (left subtree, then right).
    pub fn grow(&self, codes: &Codes, rule: &Rule, max_depth: usize) -> Vec<Grown> {
        let mut nodes = Vec::new();
        let mut counts = Vec::new();
        let rows: Vec<u32> = (0..self.labels.len() as u32).collect();
        self.grow_node(codes, rule, rows, 0, max_depth, &mut nodes, &mut counts);
        nodes
    }

    #[allow(clippy::too_many_arguments)]
    fn grow_node(
        &self,
        codes: &Codes,
        rule: &Rule,
        rows: Vec<u32>,
        depth: usize,
        max_depth: usize,
        nodes: &mut Vec<Grown>,
        counts: &mut Vec<u64>,
    ) -> usize {
        let me = nodes.len();
        let ones = self.ones(&rows);
        nodes.push(Grown::Leaf { ones, rows: rows.len() });
        if depth >= max_depth {
            return me;
        }
        let Some(split) = self.best_split(codes, &rows, ones, rule, counts) else { return me };
        let column = &codes.codes[split.feature];
        let (left_rows, right_rows): (Vec<u32>, Vec<u32>) = rows.iter().partition(|&&r| column[r as usize] <= split.left_code);
        drop(rows);
        let left = self.grow_node(codes, rule, left_rows, depth + 1, max_depth, nodes, counts);
        let right = self.grow_node(codes, rule, right_rows, depth + 1, max_depth, nodes, counts);
        nodes[me] = Grown::Split { feature: split.feature, threshold: split.threshold, left, right };
        me
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    const RULE: Rule = Rule { min_decrease: 1e-12, tie: 1e-12, parallel_rows: 1024 };

    /// The Gini impurity of a node computed the textbook way, from scratch.
    fn gini(labels: &[u8]) -> f64 {
        let n = labels.len() as f64;
        let p = labels.iter().filter(|&&l| l == 1).count() as f64 / n;
        2.0 * p * (1.0 - p)
    }

    /// The best split of all rows found by trying every feature and every midpoint, scoring each
    /// by the children's textbook impurities.
    fn brute_force(rows: &[f64], width: usize, labels: &[u8]) -> (usize, f64, f64) {
        let n = labels.len();
        let mut best = (usize::MAX, f64::NAN, f64::INFINITY);
        for f in 0..width {
            let mut values: Vec<f64> = rows.chunks(width).map(|r| r[f]).collect();
            values.sort_by(f64::total_cmp);
            values.dedup();
            for pair in values.windows(2) {
                let t = (pair[0] + pair[1]) / 2.0;
                let (l, r): (Vec<u8>, Vec<u8>) = {
                    let mut l = Vec::new();
                    let mut r = Vec::new();
                    for (row, &y) in rows.chunks(width).zip(labels) {
                        if row[f] < t {
                            l.push(y)
                        } else {
                            r.push(y)
                        }
                    }
                    (l, r)
                };
                let score = (l.len() as f64 * gini(&l) + r.len() as f64 * gini(&r)) / n as f64;
                if score < best.2 - 1e-12 {
                    best = (f, t, score);
                }
            }
        }
        best
    }

    fn noisy(n: usize, width: usize, seed: u64) -> (Vec<f64>, Vec<u8>) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let rows: Vec<f64> = (0..n * width).map(|_| f64::from(rng.gen_range(0..7u8))).collect();
        let labels = rows.chunks(width).map(|r| u8::from(r[0] + r[1] * r[2] > 9.0 + r[3] || rng.gen_bool(0.1))).collect();
        (rows, labels)
    }

    #[test]
    fn the_root_split_is_the_one_a_brute_force_search_finds() {
        for seed in 0..5 {
            let (rows, labels) = noisy(500, 4, seed);
            let (feature, threshold, _) = brute_force(&rows, 4, &labels);
            let codes = Codes::new(&rows, 4);
            let all: Vec<u32> = (0..500).collect();
            let l = Labels::new(&labels);
            let split = l.best_split(&codes, &all, l.ones(&all), &RULE, &mut Vec::new()).expect("a split");
            assert_eq!((split.feature, split.threshold), (feature, threshold), "seed {seed}");
        }
    }

    #[test]
    fn a_tree_is_pure_on_its_training_data_and_the_same_on_any_thread_count() {
        let (rows, labels) = noisy(3000, 4, 7);
        let codes = Codes::new(&rows, 4);
        let tree = Labels::new(&labels).grow(&codes, &RULE, 64);
        // Send every training row down the tree: each leaf counts the rows and class-1 rows that
        // reach it, and an impure leaf is one that no split (found by brute force) makes purer.
        let mut reached: Vec<Vec<usize>> = vec![Vec::new(); tree.len()];
        for (r, row) in rows.chunks(4).enumerate() {
            let mut i = 0;
            while let Grown::Split { feature, threshold, left, right } = tree[i] {
                i = if row[feature] < threshold { left } else { right };
            }
            reached[i].push(r);
        }
        for (node, members) in tree.iter().zip(&reached) {
            if let Grown::Leaf { ones, rows: n } = *node {
                assert_eq!(n, members.len(), "{node:?}");
                assert_eq!(ones, members.iter().filter(|&&r| labels[r] == 1).count(), "{node:?}");
                if ones != 0 && ones != n {
                    let leaf_rows: Vec<f64> = members.iter().flat_map(|&r| rows[r * 4..r * 4 + 4].iter().copied()).collect();
                    let leaf_labels: Vec<u8> = members.iter().map(|&r| labels[r]).collect();
                    let (_, _, best) = brute_force(&leaf_rows, 4, &leaf_labels);
                    assert!(best >= gini(&leaf_labels) - 1e-12, "an impure leaf a split would make purer ({best}): {node:?}");
                }
            }
        }
        assert!(
            reached
                .iter()
                .zip(&tree)
                .any(|(m, node)| matches!(node, Grown::Leaf { ones, rows } if *ones != 0 && ones != rows) && m.len() > 1),
            "the noisy data gives an impure leaf"
        );
        let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let serial = one_thread.install(|| Labels::new(&labels).grow(&codes, &Rule { parallel_rows: 1, ..RULE }, 64));
        assert_eq!(tree, serial);
        assert!(tree.len() > 100, "a bushy tree: {} nodes", tree.len());
    }

    #[test]
    fn a_split_must_lower_the_impurity_by_the_rules_least_decrease() {
        // x0 separates 60 of 100 rows' labels only slightly (decrease well under 0.01 a row).
        let rows: Vec<f64> = (0..100).map(|i| f64::from(u8::from(i % 2 == 0))).collect();
        let labels: Vec<u8> = (0..100).map(|i| u8::from(i % 2 == 0 && i % 10 != 0 || i % 7 == 0)).collect();
        let codes = Codes::new(&rows, 1);
        let l = Labels::new(&labels);
        let all: Vec<u32> = (0..100).collect();
        let lax = l.best_split(&codes, &all, l.ones(&all), &RULE, &mut Vec::new());
        assert!(lax.is_some());
        let strict = Rule { min_decrease: 0.5, ..RULE };
        assert_eq!(l.best_split(&codes, &all, l.ones(&all), &strict, &mut Vec::new()), None);
    }

    #[test]
    fn codes_are_the_ranks_of_the_distinct_values() {
        let codes = Codes::new(&[3.0, 10.0, 1.0, 10.0, 3.0, 5.0], 2);
        assert_eq!(codes.values, vec![vec![1.0, 3.0], vec![5.0, 10.0]]);
        assert_eq!(codes.codes, vec![vec![1, 0, 1], vec![1, 1, 0]]);
        assert_eq!(codes.value(1, 2), 5.0);
    }
}
