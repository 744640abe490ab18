//! Measuring groups: each group's confusion counts, AUC with its bootstrap interval and
//! calibration bins (`measure_set`), which rows a threshold or a top-k selects (`select`), a rate
//! with its Wilson interval, and the worst parity over attribute sets. The `group_metrics` stage
//! (`crate::stages::group_metrics`) reads its config, picks the references, tests and writes tables.

use rayon::prelude::*;
use serde_json::{json, Value};

use super::{Confusion, Metric, ParitySummary};
use crate::grouping::{assign, set_name};
use crate::stats::{auc, bootstrap_ci95, wilson};

/// Calibration bins of the scores.
const CALIBRATION_BINS: usize = 10;

/// One group's measurements before the reference is known.
pub(crate) struct Measured {
    /// The attribute set's name (`sex × race`).
    pub(crate) attributes: String,
    /// The group's name (`F × A`).
    pub(crate) group: String,
    /// Its rows (indices into the measured rows).
    pub(crate) rows: Vec<usize>,
    /// Its confusion counts.
    pub(crate) confusion: Confusion,
    /// Its AUC (`NaN` for labels only).
    pub(crate) auc: f64,
    /// The AUC's bootstrap 95% interval.
    pub(crate) auc_ci95: [f64; 2],
    /// Its calibration bins (empty for labels only).
    pub(crate) calibration: Vec<Value>,
}

/// Labels, scores and selections of the measured rows.
pub(crate) struct Outcomes<'a> {
    /// Whether each row's label is favourable.
    pub(crate) y: &'a [bool],
    /// Each row's P(favourable).
    pub(crate) score: &'a [f64],
    /// Whether each row is selected.
    pub(crate) selected: &'a [bool],
    /// Whether the scores are probabilities (else labels only: no AUC, no calibration).
    pub(crate) probabilities: bool,
}

/// Measure every group of attribute set `attrs`.
pub(crate) fn measure_set(
    domain: &fairpipe_abi::domain::Domain,
    rows: &[f64],
    attrs: &[usize],
    o: &Outcomes<'_>,
    bootstrap: usize,
    seed: u64,
) -> Vec<Measured> {
    let (of_row, names) = assign(domain, rows, attrs);
    let attributes = set_name(domain, attrs);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
    for (i, &g) in of_row.iter().enumerate() {
        members[g].push(i);
    }
    names
        .into_par_iter()
        .zip(members)
        .enumerate()
        .map(|(k, (group, idx))| {
            let mut confusion = Confusion::default();
            for &i in &idx {
                confusion.add(o.y[i], o.selected[i]);
            }
            let (auc_v, auc_ci95, calibration) = if o.probabilities {
                let s: Vec<f64> = idx.iter().map(|&i| o.score[i]).collect();
                let l: Vec<bool> = idx.iter().map(|&i| o.y[i]).collect();
                let ci = bootstrap_ci95(idx.len(), bootstrap, seed ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15), |sample| {
                    let ss: Vec<f64> = sample.iter().map(|&j| s[j]).collect();
                    let ll: Vec<bool> = sample.iter().map(|&j| l[j]).collect();
                    auc(&ss, &ll)
                });
                (auc(&s, &l), ci, calibration(&s, &l))
            } else {
                (f64::NAN, [f64::NAN, f64::NAN], Vec::new())
            };
            Measured { attributes: attributes.clone(), group, rows: idx, confusion, auc: auc_v, auc_ci95, calibration }
        })
        .collect()
}

/// Mean predicted probability against the observed favourable rate, per equal-width score bin.
pub(crate) fn calibration(score: &[f64], y: &[bool]) -> Vec<Value> {
    let mut bins = [(0usize, 0.0f64, 0usize); CALIBRATION_BINS];
    for (&s, &l) in score.iter().zip(y) {
        let b = ((s * CALIBRATION_BINS as f64) as usize).min(CALIBRATION_BINS - 1);
        bins[b].0 += 1;
        bins[b].1 += s;
        bins[b].2 += usize::from(l);
    }
    bins.iter()
        .enumerate()
        .filter(|(_, b)| b.0 > 0)
        .map(|(i, &(n, sum, pos))| {
            json!({
                "bin": [i as f64 / CALIBRATION_BINS as f64, (i + 1) as f64 / CALIBRATION_BINS as f64],
                "n": n,
                "mean_predicted": sum / n as f64,
                "observed": pos as f64 / n as f64,
                "observed_ci95": wilson(pos, n, 1.96),
            })
        })
        .collect()
}

/// Which rows are selected: score above the threshold, or the top k / top share by score (ties
/// broken by row order). Returns the selections and the decision threshold in effect.
pub(crate) fn select(score: &[f64], threshold: f64, top_k: Option<usize>, top_share: Option<f64>) -> (Vec<bool>, f64, &'static str) {
    let k = match (top_k, top_share) {
        (Some(k), _) => Some((k.min(score.len()), "top_k")),
        (None, Some(s)) => Some((((s * score.len() as f64).ceil() as usize).min(score.len()), "top_share")),
        (None, None) => None,
    };
    match k {
        None => (score.iter().map(|&p| p > threshold).collect(), threshold, "threshold"),
        Some((k, how)) => {
            let mut order: Vec<usize> = (0..score.len()).collect();
            order.sort_by(|&a, &b| score[b].total_cmp(&score[a]).then(a.cmp(&b)));
            let mut selected = vec![false; score.len()];
            for &i in &order[..k] {
                selected[i] = true;
            }
            let cut = if k == 0 { f64::NAN } else { score[order[k - 1]] };
            (selected, cut, how)
        }
    }
}

/// A rate and its Wilson interval (`NaN`s when undefined).
pub(crate) fn rate_with_ci(c: &Confusion, m: Metric) -> (f64, [f64; 2]) {
    let (num, den) = c.fraction(m);
    if den == 0 {
        (f64::NAN, [f64::NAN, f64::NAN])
    } else {
        (num as f64 / den as f64, wilson(num, den, 1.96))
    }
}

/// The largest difference and smallest ratio of each summary over `sets` (`NaN`s skipped).
pub(crate) fn worst_of<'a>(sets: impl Iterator<Item = &'a ParitySummary> + Clone) -> ParitySummary {
    let max = |f: fn(&ParitySummary) -> f64| sets.clone().map(f).filter(|v| !v.is_nan()).fold(f64::NAN, f64::max);
    let min = |f: fn(&ParitySummary) -> f64| sets.clone().map(f).filter(|v| !v.is_nan()).fold(f64::NAN, f64::min);
    ParitySummary {
        demographic_parity_difference: max(|s| s.demographic_parity_difference),
        demographic_parity_ratio: min(|s| s.demographic_parity_ratio),
        equalized_odds_difference: max(|s| s.equalized_odds_difference),
        equalized_odds_ratio: min(|s| s.equalized_odds_ratio),
        equal_opportunity_difference: max(|s| s.equal_opportunity_difference),
        equal_opportunity_ratio: min(|s| s.equal_opportunity_ratio),
        predictive_parity_difference: max(|s| s.predictive_parity_difference),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_and_top_share_select_the_highest_scores() {
        let score = [0.2, 0.9, 0.5, 0.9, 0.1];
        let (s, cut, how) = select(&score, 0.5, Some(2), None);
        assert_eq!((s, cut, how), (vec![false, true, false, true, false], 0.9, "top_k"));
        let (s, cut, _) = select(&score, 0.5, None, Some(0.5));
        assert_eq!((s, cut), (vec![false, true, true, true, false], 0.5));
        // The threshold is strict, as `p > 0.5` always was.
        assert_eq!(select(&score, 0.5, None, None).0, vec![false, true, false, true, false]);
    }

    #[test]
    fn calibration_bins_compare_predicted_and_observed() {
        let bins = calibration(&[0.05, 0.05, 0.95, 0.95], &[false, true, true, true]);
        assert_eq!(bins.len(), 2);
        assert_eq!(bins[0]["observed"], json!(0.5));
        assert_eq!(bins[1]["observed"], json!(1.0));
        assert!((bins[1]["mean_predicted"].as_f64().unwrap() - 0.95).abs() < 1e-12);
    }
}
