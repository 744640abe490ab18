//! Intervals of a mean whose observations are not independent: cluster-robust (sandwich) variance
//! over one or more ways of clustering at once.
//!
//! An LLM audit's paired observations share things: the name shown on each side (Bertrand &
//! Mullainathan's 18 names serve hundreds of résumés), the document, a template. A model that
//! reacts to a particular name moves every pair showing it; the independent-pairs interval then
//! covers far less often than it says (`tests/llm_planted.rs`, the coverage simulation).
//!
//! For a mean ȳ of n observations clustered one way into G groups of n_g, with residual sums
//! `S_g = Σ_{i∈g} (y_i − ȳ)`, the cluster-robust variance is the bias-reduced one (CR2; Bell &
//! McCaffrey 2002, Pustejovsky & Tipton 2018), which for a mean is
//! `V = Σ_g S_g² / (1 − n_g/n) / n²` (each cluster's residuals scaled by `(1 − h_gg)^{−1/2}`, its
//! leverage `h_gg = n_g/n`), with Bell & McCaffrey's Satterthwaite degrees of freedom taken under
//! a working model of independent cluster effects: `(Σ_g a_g)² / Σ_g a_g²`, `a_g = n_g²/(1 −
//! n_g/n)`, at most G − 1. With the 17 or 18 clusters of Bertrand & Mullainathan's names and
//! unequal cluster sizes, the older CR1 (`G/(G − 1) · Σ_g S_g² / n²` with G − 1 degrees of
//! freedom) covered 91.5% in the simulation of `tests/llm_coverage.rs` where 95% was claimed.
//! Clustered several ways at once (a pair shares a name with some pairs and a document with
//! others), Cameron, Gelbach & Miller (2011) add the one-way variances and take out the double
//! counting by inclusion–exclusion over the intersections: `V = Σ_{S ≠ ∅} (−1)^{|S|+1} V_S`,
//! `V_S` the one-way variance clustered by the combination of the ways in `S`; where that sum is
//! not positive, the largest one-way `V` is used. The interval is Student's t with the fewest
//! degrees of freedom of one way (Cameron & Miller 2015).
//!
//! Everything is kept as sums per cluster ([`ClusterSums`]) so that pieces of a sharded run add
//! up to the same figure.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Separates the parts of a combined cluster key.
const JOIN: char = '\u{1f}';

/// Per-cluster sums of one quantity, for every non-empty combination of the ways of clustering
/// (`by_subset[mask − 1]` holds the clusters of the ways whose bits are set in `mask`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterSums {
    /// The ways' names, in order (e.g. `["names", "document"]`).
    pub ways: Vec<String>,
    /// Per combination of ways: cluster key → (observations, sum).
    pub by_subset: Vec<BTreeMap<String, (u64, f64)>>,
}

/// The interval a [`ClusterSums`] gives, beside the independent one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClusteredInterval {
    /// 95% interval of the mean, cluster-robust.
    pub ci95: [f64; 2],
    /// Its standard error.
    pub se: f64,
    /// Degrees of freedom of its t quantile (Bell & McCaffrey's, the fewest of one way).
    pub df: usize,
    /// Clusters per way.
    pub clusters: BTreeMap<String, usize>,
}

impl ClusterSums {
    /// Empty sums for `ways`.
    pub fn new(ways: Vec<String>) -> ClusterSums {
        let subsets = (1usize << ways.len()) - 1;
        ClusterSums { ways, by_subset: vec![BTreeMap::new(); subsets] }
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.by_subset.first().is_none_or(BTreeMap::is_empty)
    }

    /// Add observation `y` whose cluster in each way is `keys[way]`.
    pub fn push(&mut self, keys: &[String], y: f64) {
        debug_assert_eq!(keys.len(), self.ways.len());
        for (i, clusters) in self.by_subset.iter_mut().enumerate() {
            let mask = i + 1;
            let key: Vec<&str> = keys.iter().enumerate().filter(|(w, _)| mask >> w & 1 == 1).map(|(_, k)| k.as_str()).collect();
            let slot = clusters.entry(key.join(&JOIN.to_string())).or_insert((0, 0.0));
            slot.0 += 1;
            slot.1 += y;
        }
    }

    /// Add `other`'s sums to these (an empty side takes the other's ways).
    pub fn add(&mut self, other: &ClusterSums) {
        if self.ways.is_empty() {
            *self = other.clone();
            return;
        }
        for (mine, theirs) in self.by_subset.iter_mut().zip(&other.by_subset) {
            for (key, (n, s)) in theirs {
                let slot = mine.entry(key.clone()).or_insert((0, 0.0));
                slot.0 += n;
                slot.1 += s;
            }
        }
    }

    /// The cluster-robust variance of the mean, its degrees of freedom and the clusters per way;
    /// `None` with fewer than two clusters in some way (no variance can be read off one cluster).
    pub fn variance(&self) -> Option<(f64, usize, BTreeMap<String, usize>)> {
        let all = self.by_subset.first()?;
        let (n, total) = all.values().fold((0u64, 0.0), |(n, s), (m, t)| (n + m, s + t));
        if n == 0 || self.ways.is_empty() {
            return None;
        }
        let mean = total / n as f64;
        let n_all = n as f64;
        // CR2: each cluster's residual sum over √(1 − its leverage n_g / n). A cluster holding
        // every observation has a residual sum of 0 (and leverage 1): it adds nothing.
        let leverage_scaled = |m: u64, s: f64| -> f64 {
            let h = m as f64 / n_all;
            if h >= 1.0 {
                0.0
            } else {
                (s - m as f64 * mean).powi(2) / (1.0 - h)
            }
        };
        let one_way = |clusters: &BTreeMap<String, (u64, f64)>| -> f64 {
            clusters.values().map(|&(m, s)| leverage_scaled(m, s)).sum::<f64>() / (n_all * n_all)
        };
        // Bell & McCaffrey's degrees of freedom under independent cluster effects.
        let satterthwaite = |clusters: &BTreeMap<String, (u64, f64)>| -> usize {
            let weights: Vec<f64> =
                clusters.values().map(|&(m, _)| (m as f64).powi(2) / (1.0 - (m as f64 / n_all).min(1.0 - 1e-12))).collect();
            let (sum, sum_sq) = weights.iter().fold((0.0, 0.0), |(a, b), w| (a + w, b + w * w));
            let df = if sum_sq > 0.0 { (sum * sum / sum_sq).floor() as usize } else { 0 };
            df.clamp(1, clusters.len().saturating_sub(1).max(1))
        };
        let mut counts = BTreeMap::new();
        let mut df = usize::MAX;
        for (w, name) in self.ways.iter().enumerate() {
            let clusters = &self.by_subset[(1 << w) - 1];
            counts.insert(name.clone(), clusters.len());
            df = df.min(satterthwaite(clusters));
        }
        let fewest = counts.values().copied().min().unwrap_or(0);
        if fewest < 2 {
            return None;
        }
        let mut v = 0.0;
        for (i, clusters) in self.by_subset.iter().enumerate() {
            let ways = (i + 1).count_ones();
            let sign = if ways % 2 == 1 { 1.0 } else { -1.0 };
            // A combination with one cluster per observation pattern still has ≥ 2 clusters
            // (it refines a way that has them).
            v += sign * one_way(clusters);
        }
        if v <= 0.0 || !v.is_finite() {
            v = (0..self.ways.len()).map(|w| one_way(&self.by_subset[(1 << w) - 1])).fold(0.0, f64::max);
        }
        Some((v, df, counts))
    }

    /// The mean of the observations.
    pub fn mean(&self) -> f64 {
        let Some(all) = self.by_subset.first() else { return f64::NAN };
        let (n, total) = all.values().fold((0u64, 0.0), |(n, s), (m, t)| (n + m, s + t));
        if n == 0 {
            f64::NAN
        } else {
            total / n as f64
        }
    }

    /// The cluster-robust 95% interval of the mean (Student t with the fewest degrees of freedom
    /// of one way); `None` as [`ClusterSums::variance`].
    pub fn interval(&self) -> Option<ClusteredInterval> {
        let (v, df, clusters) = self.variance()?;
        let se = v.sqrt();
        let half = crate::stats::t_quantile(0.975, df) * se;
        let mean = self.mean();
        Some(ClusteredInterval { ci95: [mean - half, mean + half], se, df, clusters })
    }

    /// The design effect: the cluster-robust variance of the mean over the independent one
    /// (`variance` over `sd² / n`), at least 1; 1 when either is not known.
    pub fn design_effect(&self, independent_variance: f64) -> f64 {
        match self.variance() {
            Some((v, _, _)) if independent_variance > 0.0 => (v / independent_variance).max(1.0),
            _ => 1.0,
        }
    }
}

/// How clustered a share is: its design effect and the clusters of each way ([`ClusterSums::share_clustering`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ShareClustering {
    /// The cluster-robust variance of the share over the independent one, at least 1.
    pub design_effect: f64,
    /// Clusters per way (empty where no way has two clusters).
    pub clusters: BTreeMap<String, usize>,
}

impl ClusterSums {
    /// For sums of 0/1 observations (a flip per row): the share's design effect against the
    /// independent variance with the same small-sample factor (every row its own cluster, so that
    /// rows sharing nothing give exactly 1), and the clusters of each way.
    pub fn share_clustering(&self) -> ShareClustering {
        let (n, hits) = self.by_subset.first().map_or((0, 0.0), |all| all.values().fold((0u64, 0.0), |(n, s), (m, t)| (n + m, s + t)));
        let n = n as f64;
        let p = hits / n.max(1.0);
        let independent = if n > 1.0 { n / (n - 1.0) * n * p * (1.0 - p) / (n * n) } else { 0.0 };
        let clusters = self.variance().map_or_else(BTreeMap::new, |(_, _, c)| c);
        ShareClustering { design_effect: self.design_effect(independent), clusters }
    }
}

/// `interval` of a mean at `centre` widened by the design effect: each side's distance from the
/// centre times `√design_effect` (an interval made for independent observations, at Kish's
/// effective sample size), clipped to [0, 1].
pub fn widened(interval: [f64; 2], centre: f64, design_effect: f64) -> [f64; 2] {
    let scale = design_effect.max(1.0).sqrt();
    [(centre - (centre - interval[0]) * scale).max(0.0), (centre + (interval[1] - centre) * scale).min(1.0)]
}

/// The Wilson interval of `successes` of `n` with `n` shrunk by the design effect (Kish's effective
/// sample size): the interval for a share whose observations are clustered; Wilson's own when
/// `design_effect` is 1.
pub fn wilson_clustered(successes: usize, n: usize, design_effect: f64) -> [f64; 2] {
    if n == 0 {
        return [0.0, 1.0];
    }
    crate::stats::wilson_of_share(successes as f64 / n as f64, n as f64 / design_effect.max(1.0), 1.96)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[&str]) -> Vec<String> {
        k.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn one_way_variance_matches_the_sandwich_formula_by_hand() {
        // Clusters a: 1, 2; b: 4; c: 0, 0, 2 → mean 9/6 = 1.5.
        let mut sums = ClusterSums::new(keys(&["name"]));
        for (k, y) in [("a", 1.0), ("a", 2.0), ("b", 4.0), ("c", 0.0), ("c", 0.0), ("c", 2.0)] {
            sums.push(&keys(&[k]), y);
        }
        // Residual sums per cluster: a 3 − 3 = 0, b 4 − 1.5 = 2.5, c 2 − 4.5 = −2.5; leverages
        // 2/6, 1/6, 3/6.
        let want = (0.0 / (1.0 - 2.0 / 6.0) + 6.25 / (1.0 - 1.0 / 6.0) + 6.25 / (1.0 - 3.0 / 6.0)) / 36.0;
        let (v, df, clusters) = sums.variance().unwrap();
        assert!((v - want).abs() < 1e-15, "{v} vs {want}");
        // Weights n_g²/(1 − h_g): 4/(2/3) = 6, 1/(5/6) = 1.2, 9/(1/2) = 18; (25.2)² / (36 + 1.44 +
        // 324) = 1.757 → 1 degree of freedom.
        assert_eq!((df, clusters["name"]), (1, 3));
        let i = sums.interval().unwrap();
        let half = 12.706204736174705 * want.sqrt();
        assert!((i.ci95[0] - (1.5 - half)).abs() < 1e-9 && (i.ci95[1] - (1.5 + half)).abs() < 1e-9, "{i:?}");
    }

    #[test]
    fn a_way_that_refines_another_adds_nothing_and_singletons_give_the_independent_variance() {
        // Two ways where the second is nested in the first: V = V1 + V2 − V12 = V1.
        let data = [("a", "d1", 1.0), ("a", "d2", 3.0), ("b", "d3", 2.0), ("b", "d4", 6.0), ("c", "d5", 5.0)];
        let mut two = ClusterSums::new(keys(&["name", "document"]));
        let mut one = ClusterSums::new(keys(&["name"]));
        for (a, d, y) in data {
            two.push(&keys(&[a, d]), y);
            one.push(&keys(&[a]), y);
        }
        assert!((two.variance().unwrap().0 - one.variance().unwrap().0).abs() < 1e-15);
        // Every observation its own cluster: Σ(y − ȳ)² / (1 − 1/n) / n² = s² / n, with n − 1
        // degrees of freedom (the independent t interval).
        let mut each = ClusterSums::new(keys(&["row"]));
        for (i, (_, _, y)) in data.iter().enumerate() {
            each.push(&keys(&[&i.to_string()]), *y);
        }
        let ys: Vec<f64> = data.iter().map(|d| d.2).collect();
        let m = ys.iter().sum::<f64>() / 5.0;
        let s2 = ys.iter().map(|y| (y - m).powi(2)).sum::<f64>() / 4.0;
        let (v, df, _) = each.variance().unwrap();
        assert!((v - s2 / 5.0).abs() < 1e-15 && df == 4, "{v} {df}");
    }

    #[test]
    fn sums_added_in_pieces_equal_sums_of_the_whole() {
        let data = [("a", "x", 1.0), ("b", "y", 2.0), ("a", "y", 5.0), ("c", "x", 0.5)];
        let ways = keys(&["name", "template"]);
        let mut whole = ClusterSums::new(ways.clone());
        let (mut left, mut right) = (ClusterSums::default(), ClusterSums::new(ways.clone()));
        let mut first = ClusterSums::new(ways);
        for (i, (a, t, y)) in data.iter().enumerate() {
            whole.push(&keys(&[a, t]), *y);
            if i < 2 { &mut first } else { &mut right }.push(&keys(&[a, t]), *y);
        }
        left.add(&first);
        left.add(&right);
        assert_eq!(left, whole);
    }

    #[test]
    fn one_cluster_gives_no_interval_and_the_design_effect_widens_wilson() {
        let mut sums = ClusterSums::new(keys(&["name"]));
        sums.push(&keys(&["a"]), 1.0);
        sums.push(&keys(&["a"]), 0.0);
        assert!(sums.interval().is_none());
        assert_eq!(sums.design_effect(0.1), 1.0);
        assert_eq!(wilson_clustered(10, 100, 1.0), crate::stats::wilson(10, 100, 1.96));
        // A design effect of 4: 100 clustered observations count as 25 (the share kept).
        let [lo, hi] = wilson_clustered(10, 100, 4.0);
        let (z, n, p) = (1.96f64, 25.0f64, 0.1f64);
        let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
        let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
        assert!((lo - (centre - half)).abs() < 1e-15 && (hi - (centre + half)).abs() < 1e-15);
        assert!(hi - lo > 1.9 * (crate::stats::wilson(10, 100, 1.96)[1] - crate::stats::wilson(10, 100, 1.96)[0]));
    }
}
