//! Statistics the audit figures rest on: quantiles of the normal and Student t distributions
//! (statrs, exact for every degree of freedom), tests of two proportions (Fisher's exact test for
//! small counts, the pooled two-proportion z test otherwise), Holm's step-down correction, the
//! area under the ROC curve, and a seeded percentile bootstrap.
//!
//! ```
//! use fairpipe_core::stats::{holm, proportions_test, t_quantile};
//! assert!((t_quantile(0.975, 30) - 2.042_272_456).abs() < 1e-6);
//! let p = proportions_test(30, 100, 50, 100).p_value;
//! assert!(p < 0.01);
//! let adjusted = holm(&[0.01, 0.04, 0.03]);
//! assert!((adjusted[0] - 0.03).abs() < 1e-12 && (adjusted[1] - 0.06).abs() < 1e-12);
//! ```

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use statrs::function::factorial::ln_binomial;

/// Wilson score interval for `successes` out of `n` at normal quantile `z`.
pub fn wilson(successes: usize, n: usize, z: f64) -> [f64; 2] {
    if n == 0 {
        return [0.0, 1.0];
    }
    wilson_of_share(successes as f64 / n as f64, n as f64, z)
}

/// Wilson score interval of the share `p` observed over a sample worth `n` independent
/// observations (an effective size, not necessarily whole) at normal quantile `z`.
pub fn wilson_of_share(p: f64, n: f64, z: f64) -> [f64; 2] {
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    [(centre - half).max(0.0), (centre + half).min(1.0)]
}

/// The `p` quantile of the standard normal distribution (`NaN` outside (0, 1)).
pub fn normal_quantile(p: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    Normal::new(0.0, 1.0).map(|n| n.inverse_cdf(p)).unwrap_or(f64::NAN)
}

/// P(|Z| ≥ |z|) for a standard normal Z.
pub fn normal_two_sided_p(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    Normal::new(0.0, 1.0).map(|n| 2.0 * n.sf(z.abs())).unwrap_or(f64::NAN).min(1.0)
}

/// The `p` quantile of Student's t with `df` degrees of freedom, exact for every `df`
/// (`+∞` at `df = 0`, the normal quantile as `df` grows without bound).
pub fn t_quantile(p: f64, df: usize) -> f64 {
    if df == 0 {
        return f64::INFINITY;
    }
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    StudentsT::new(0.0, 1.0, df as f64).map(|t| t.inverse_cdf(p)).unwrap_or(f64::NAN)
}

/// Student's t 95% interval of a mean `mean` of `n` values whose standard deviation is `sd`;
/// `None` under two values.
pub fn t_ci95(mean: f64, sd: f64, n: usize) -> Option<[f64; 2]> {
    (n > 1).then(|| {
        let half = t_quantile(0.975, n - 1) * sd / (n as f64).sqrt();
        [mean - half, mean + half]
    })
}

/// P(|T| ≥ |t|) for Student's T with `df` degrees of freedom (`NaN` for `df = 0` or a `NaN` t).
pub fn t_two_sided_p(t: f64, df: usize) -> f64 {
    if t.is_nan() || df == 0 {
        return f64::NAN;
    }
    StudentsT::new(0.0, 1.0, df as f64).map(|d| 2.0 * d.sf(t.abs())).unwrap_or(f64::NAN).min(1.0)
}

/// Which test gave a p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// Fisher's exact test (two-sided; used when an expected cell count is below 5).
    Fisher,
    /// The pooled two-proportion z test (two-sided).
    TwoProportion,
    /// No test: a side has no rows.
    None,
}

/// A p-value and the test that gave it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProportionTest {
    /// Two-sided p-value (`NaN` when a side is empty).
    pub p_value: f64,
    /// The test used.
    pub test: TestKind,
}

/// Expected cell counts below this send a 2×2 table to Fisher's exact test (Cochran's rule).
pub const FISHER_BELOW_EXPECTED: f64 = 5.0;

/// Compare `x1` of `n1` with `x2` of `n2`: Fisher's exact test when an expected count of the 2×2
/// table is below [`FISHER_BELOW_EXPECTED`], the pooled two-proportion z test otherwise.
pub fn proportions_test(x1: usize, n1: usize, x2: usize, n2: usize) -> ProportionTest {
    if n1 == 0 || n2 == 0 || x1 > n1 || x2 > n2 {
        return ProportionTest { p_value: f64::NAN, test: TestKind::None };
    }
    let total = (n1 + n2) as f64;
    let successes = (x1 + x2) as f64;
    let failures = total - successes;
    let min_expected = [n1 as f64 * successes, n1 as f64 * failures, n2 as f64 * successes, n2 as f64 * failures]
        .into_iter()
        .fold(f64::INFINITY, f64::min)
        / total;
    if min_expected < FISHER_BELOW_EXPECTED {
        ProportionTest { p_value: fisher_exact(x1, n1 - x1, x2, n2 - x2), test: TestKind::Fisher }
    } else {
        ProportionTest { p_value: two_proportion_z(x1, n1, x2, n2), test: TestKind::TwoProportion }
    }
}

/// Two-sided p-value of the pooled two-proportion z test (1 when both proportions are 0 or 1).
pub fn two_proportion_z(x1: usize, n1: usize, x2: usize, n2: usize) -> f64 {
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let pooled = (x1 + x2) as f64 / (n1f + n2f);
    let se = (pooled * (1.0 - pooled) * (1.0 / n1f + 1.0 / n2f)).sqrt();
    if se == 0.0 {
        return 1.0;
    }
    normal_two_sided_p((x1 as f64 / n1f - x2 as f64 / n2f) / se)
}

/// Two-sided p-value of Fisher's exact test of the 2×2 table `[[a, b], [c, d]]`: the summed
/// probability of every table with the same margins that is no more likely than the observed one
/// (the definition R's `fisher.test` and SciPy's `fisher_exact` use, with the same 1e-7 relative
/// tolerance for ties).
pub fn fisher_exact(a: usize, b: usize, c: usize, d: usize) -> f64 {
    let (row1, col1, n) = ((a + b) as u64, (a + c) as u64, (a + b + c + d) as u64);
    let ln_denominator = ln_binomial(n, col1);
    let ln_p = |x: u64| ln_binomial(row1, x) + ln_binomial(n - row1, col1 - x) - ln_denominator;
    let lo = col1.saturating_sub(n - row1);
    let hi = row1.min(col1);
    let observed = ln_p(a as u64);
    let mut p = 0.0;
    for x in lo..=hi {
        let l = ln_p(x);
        if l <= observed + 1e-7_f64.ln_1p() {
            p += l.exp();
        }
    }
    p.min(1.0)
}

/// Holm's step-down adjusted p-values, in the input order (`NaN`s are left out of the count and
/// stay `NaN`). A hypothesis is rejected at level α when its adjusted p-value is at most α.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p.len()).filter(|&i| !p[i].is_nan()).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let m = order.len();
    let mut out = vec![f64::NAN; p.len()];
    let mut running = 0.0_f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// Area under the ROC curve of `scores` for the positives `labels` (the Mann–Whitney statistic,
/// ties counted half); `NaN` when either class is absent.
pub fn auc(scores: &[f64], labels: &[bool]) -> f64 {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&i, &j| scores[i].total_cmp(&scores[j]));
    let positives = labels.iter().filter(|&&l| l).count();
    let negatives = labels.len() - positives;
    if positives == 0 || negatives == 0 {
        return f64::NAN;
    }
    // Sum of the positives' mid-ranks.
    let mut rank_sum = 0.0;
    let mut k = 0;
    while k < idx.len() {
        let mut end = k;
        while end + 1 < idx.len() && scores[idx[end + 1]] == scores[idx[k]] {
            end += 1;
        }
        let mid_rank = (k + end) as f64 / 2.0 + 1.0;
        rank_sum += idx[k..=end].iter().filter(|&&i| labels[i]).count() as f64 * mid_rank;
        k = end + 1;
    }
    let (p, n) = (positives as f64, negatives as f64);
    (rank_sum - p * (p + 1.0) / 2.0) / (p * n)
}

/// A seeded percentile bootstrap 95% interval of `statistic` over `n` rows: `reps` resamples of
/// `n` row indices drawn with replacement; resamples where the statistic is undefined (`NaN`) are
/// left out. `[NaN, NaN]` when no resample gives a value.
pub fn bootstrap_ci95(n: usize, reps: usize, seed: u64, mut statistic: impl FnMut(&[usize]) -> f64) -> [f64; 2] {
    if n == 0 || reps == 0 {
        return [f64::NAN, f64::NAN];
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut values = Vec::with_capacity(reps);
    let mut sample = vec![0usize; n];
    for _ in 0..reps {
        for s in sample.iter_mut() {
            *s = rng.gen_range(0..n);
        }
        let v = statistic(&sample);
        if !v.is_nan() {
            values.push(v);
        }
    }
    if values.is_empty() {
        return [f64::NAN, f64::NAN];
    }
    values.sort_by(f64::total_cmp);
    [percentile(&values, 0.025), percentile(&values, 0.975)]
}

/// The `q` quantile of sorted `values`, linearly interpolated (NumPy's default).
fn percentile(values: &[f64], q: f64) -> f64 {
    let pos = q * (values.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    values[lo] + (values[hi] - values[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_published_tables_and_do_not_jump_after_30_df() {
        // Student t 0.975 quantiles (NIST/SEMATECH e-Handbook table 1.3.6.7.2, 3 decimals).
        for (df, q) in [(1, 12.706), (2, 4.303), (10, 2.228), (30, 2.042), (40, 2.021), (60, 2.000), (100, 1.984)] {
            assert!((t_quantile(0.975, df) - q).abs() < 5e-4, "df {df}: {}", t_quantile(0.975, df));
        }
        // Monotone in df and above the normal quantile everywhere: no step to 1.96 at 31.
        let z = normal_quantile(0.975);
        assert!((z - 1.959_963_985).abs() < 1e-8);
        for df in 1..200 {
            assert!(t_quantile(0.975, df) > t_quantile(0.975, df + 1));
            assert!(t_quantile(0.975, df + 1) > z);
        }
        assert!(t_quantile(0.975, 31) > 2.03);
    }

    #[test]
    fn fisher_matches_the_tea_tasting_example() {
        // Fisher's lady tasting tea: [[3, 1], [1, 3]], two-sided p = 34/70 = 0.4857.
        assert!((fisher_exact(3, 1, 1, 3) - 34.0 / 70.0).abs() < 1e-12);
        // The one-sided extreme [[4, 0], [0, 4]]: 2/70 two-sided.
        assert!((fisher_exact(4, 0, 0, 4) - 2.0 / 70.0).abs() < 1e-12);
    }

    #[test]
    fn small_counts_go_to_fisher_and_large_ones_to_the_z_test() {
        assert_eq!(proportions_test(1, 10, 6, 10).test, TestKind::Fisher);
        let big = proportions_test(300, 1000, 350, 1000);
        assert_eq!(big.test, TestKind::TwoProportion);
        // Hand computation: pooled 0.325, se = sqrt(0.325·0.675·0.002) = 0.020947, z = 2.3870,
        // two-sided p = 0.01699.
        assert!((big.p_value - 0.01699).abs() < 1e-4, "{}", big.p_value);
        assert!(proportions_test(0, 0, 1, 2).p_value.is_nan());
    }

    #[test]
    fn holm_adjusts_step_down_and_stays_monotone() {
        let adj = holm(&[0.01, 0.04, 0.03, f64::NAN, 0.005]);
        // Sorted 0.005, 0.01, 0.03, 0.04 with m = 4: 0.02, 0.03, 0.06, max(0.04, 0.06).
        assert!((adj[4] - 0.02).abs() < 1e-15);
        assert!((adj[0] - 0.03).abs() < 1e-15);
        assert!((adj[2] - 0.06).abs() < 1e-15 && (adj[1] - 0.06).abs() < 1e-15);
        assert!(adj[3].is_nan());
    }

    #[test]
    fn auc_counts_pairs_and_ties_half() {
        // Positives 0.8, 0.4; negatives 0.5, 0.1: 3 of 4 pairs ordered right.
        assert_eq!(auc(&[0.8, 0.4, 0.5, 0.1], &[true, true, false, false]), 0.75);
        // One tie between a positive and a negative counts half.
        assert_eq!(auc(&[0.5, 0.5], &[true, false]), 0.5);
        assert!(auc(&[0.1, 0.2], &[true, true]).is_nan());
    }

    #[test]
    fn the_bootstrap_is_seeded_and_covers_the_mean() {
        let x: Vec<f64> = (0..200).map(|i| f64::from(i % 2)).collect();
        let mean = |s: &[usize]| s.iter().map(|&i| x[i]).sum::<f64>() / s.len() as f64;
        let a = bootstrap_ci95(x.len(), 500, 7, mean);
        assert_eq!(a, bootstrap_ci95(x.len(), 500, 7, mean));
        assert!(a[0] < 0.5 && 0.5 < a[1] && a[1] - a[0] < 0.2, "{a:?}");
    }
}
