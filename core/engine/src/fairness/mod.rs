//! Labelled group metrics: the confusion counts of one group and the rates read from them
//! (selection rate, base rate, TPR, FPR, FNR, TNR, PPV, NPV, accuracy), and the parity summaries
//! of a set of groups defined exactly as Fairlearn defines them (`fairlearn.metrics`), so that a
//! figure here can be held against Fairlearn's on the same predictions.
//!
//! ```
//! use fairpipe_core::fairness::{parity, Confusion};
//! let mut a = Confusion::default();
//! let mut b = Confusion::default();
//! for (t, p) in [(true, true), (true, false), (false, false), (false, false)] { a.add(t, p); }
//! for (t, p) in [(true, true), (true, true), (false, true), (false, false)] { b.add(t, p); }
//! let s = parity(&[a, b]);
//! assert_eq!(s.demographic_parity_difference, 0.5); // 1/4 against 3/4
//! assert_eq!(s.equal_opportunity_ratio, 0.5); // TPR 1/2 against 2/2
//! ```
//!
//! [`measure`] measures the groups of a set of attributes on a model's outcomes (used by the
//! `group_metrics` stage).

pub(crate) mod measure;
pub mod situation;

use crate::stage::kind::FigureNames;
use serde::{Deserialize, Serialize};

use crate::serde_nan::nan_if_null;

/// Confusion counts of one group; "positive" is the favourable outcome (class 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confusion {
    /// Favourable and predicted favourable.
    pub tp: usize,
    /// Unfavourable but predicted favourable.
    pub fp: usize,
    /// Unfavourable and predicted unfavourable.
    pub tn: usize,
    /// Favourable but predicted unfavourable.
    pub fn_: usize,
}

impl Confusion {
    /// Count one row.
    pub fn add(&mut self, y_true: bool, y_pred: bool) {
        match (y_true, y_pred) {
            (true, true) => self.tp += 1,
            (false, true) => self.fp += 1,
            (false, false) => self.tn += 1,
            (true, false) => self.fn_ += 1,
        }
    }

    /// Rows counted.
    pub fn count(&self) -> usize {
        self.tp + self.fp + self.tn + self.fn_
    }

    /// `metric` as (numerator, denominator).
    pub fn fraction(&self, metric: Metric) -> (usize, usize) {
        let Confusion { tp, fp, tn, fn_ } = *self;
        match metric {
            Metric::SelectionRate => (tp + fp, self.count()),
            Metric::BaseRate => (tp + fn_, self.count()),
            Metric::Tpr => (tp, tp + fn_),
            Metric::Fpr => (fp, fp + tn),
            Metric::Fnr => (fn_, tp + fn_),
            Metric::Tnr => (tn, fp + tn),
            Metric::Ppv => (tp, tp + fp),
            Metric::Npv => (tn, tn + fn_),
            Metric::Accuracy => (tp + tn, self.count()),
        }
    }

    /// `metric` as a rate (`NaN` when its denominator is 0).
    pub fn rate(&self, metric: Metric) -> f64 {
        let (num, den) = self.fraction(metric);
        if den == 0 {
            f64::NAN
        } else {
            num as f64 / den as f64
        }
    }
}

/// A rate read from confusion counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// P(predicted favourable).
    SelectionRate,
    /// P(favourable) — the label's base rate.
    BaseRate,
    /// True positive rate (recall), P(predicted favourable | favourable).
    Tpr,
    /// False positive rate, P(predicted favourable | unfavourable).
    Fpr,
    /// False negative rate, 1 − TPR.
    Fnr,
    /// True negative rate, 1 − FPR.
    Tnr,
    /// Positive predictive value (precision), P(favourable | predicted favourable).
    Ppv,
    /// Negative predictive value, P(unfavourable | predicted unfavourable).
    Npv,
    /// P(predicted = true label).
    Accuracy,
}

impl Metric {
    /// Every metric, in table order.
    pub const ALL: [Metric; 9] = [
        Metric::SelectionRate,
        Metric::BaseRate,
        Metric::Tpr,
        Metric::Fpr,
        Metric::Fnr,
        Metric::Tnr,
        Metric::Ppv,
        Metric::Npv,
        Metric::Accuracy,
    ];

    /// The metric's name in `summary.json` and the tables.
    pub fn name(self) -> &'static str {
        match self {
            Metric::SelectionRate => "selection_rate",
            Metric::BaseRate => "base_rate",
            Metric::Tpr => "tpr",
            Metric::Fpr => "fpr",
            Metric::Fnr => "fnr",
            Metric::Tnr => "tnr",
            Metric::Ppv => "ppv",
            Metric::Npv => "npv",
            Metric::Accuracy => "accuracy",
        }
    }
}

/// The parity summaries of one set of groups (one attribute, or an intersection), as Fairlearn
/// defines them: a `_difference` is the largest minus the smallest group value, a `_ratio` the
/// smallest over the largest (Fairlearn's `method="between_groups"`); equalized odds takes the
/// worse of TPR and FPR (Fairlearn's `agg="worst_case"`). Groups where a rate is undefined (no
/// row in its denominator) are left out of that rate; a summary with fewer than two defined
/// groups is `NaN` (written `null`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct ParitySummary {
    /// max − min selection rate (`fairlearn.metrics.demographic_parity_difference`).
    #[serde(deserialize_with = "nan_if_null")]
    pub demographic_parity_difference: f64,
    /// min / max selection rate (`demographic_parity_ratio`).
    #[serde(deserialize_with = "nan_if_null")]
    pub demographic_parity_ratio: f64,
    /// max(TPR difference, FPR difference) (`equalized_odds_difference`).
    #[serde(deserialize_with = "nan_if_null")]
    pub equalized_odds_difference: f64,
    /// min(TPR ratio, FPR ratio) (`equalized_odds_ratio`).
    #[serde(deserialize_with = "nan_if_null")]
    pub equalized_odds_ratio: f64,
    /// max − min TPR (`equal_opportunity_difference`).
    #[serde(deserialize_with = "nan_if_null")]
    pub equal_opportunity_difference: f64,
    /// min / max TPR (`equal_opportunity_ratio`).
    #[serde(deserialize_with = "nan_if_null")]
    pub equal_opportunity_ratio: f64,
    /// max − min PPV (precision); not a Fairlearn function, computed the same way
    /// (`MetricFrame(precision_score).difference()`).
    #[serde(deserialize_with = "nan_if_null")]
    pub predictive_parity_difference: f64,
}

/// The (min, max) of `metric` over the groups where it is defined.
fn extremes(groups: &[Confusion], metric: Metric) -> Option<(f64, f64)> {
    let values: Vec<f64> = groups.iter().map(|g| g.rate(metric)).filter(|v| !v.is_nan()).collect();
    if values.len() < 2 {
        return None;
    }
    Some((values.iter().copied().fold(f64::INFINITY, f64::min), values.iter().copied().fold(f64::NEG_INFINITY, f64::max)))
}

fn difference(groups: &[Confusion], metric: Metric) -> f64 {
    extremes(groups, metric).map_or(f64::NAN, |(lo, hi)| hi - lo)
}

/// min / max; `NaN` when every group's value is 0 (0 / 0, as Fairlearn's `ratio()`).
fn ratio(groups: &[Confusion], metric: Metric) -> f64 {
    match extremes(groups, metric) {
        Some((lo, hi)) if hi > 0.0 => lo / hi,
        _ => f64::NAN,
    }
}

/// The parity summaries of `groups` (see [`ParitySummary`]).
pub fn parity(groups: &[Confusion]) -> ParitySummary {
    let tpr_d = difference(groups, Metric::Tpr);
    let fpr_d = difference(groups, Metric::Fpr);
    let tpr_r = ratio(groups, Metric::Tpr);
    let fpr_r = ratio(groups, Metric::Fpr);
    ParitySummary {
        demographic_parity_difference: difference(groups, Metric::SelectionRate),
        demographic_parity_ratio: ratio(groups, Metric::SelectionRate),
        equalized_odds_difference: if tpr_d.is_nan() || fpr_d.is_nan() { f64::NAN } else { tpr_d.max(fpr_d) },
        equalized_odds_ratio: if tpr_r.is_nan() || fpr_r.is_nan() { f64::NAN } else { tpr_r.min(fpr_r) },
        equal_opportunity_difference: tpr_d,
        equal_opportunity_ratio: tpr_r,
        predictive_parity_difference: difference(groups, Metric::Ppv),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confusion(tp: usize, fp: usize, tn: usize, fn_: usize) -> Confusion {
        Confusion { tp, fp, tn, fn_ }
    }

    #[test]
    fn rates_read_the_confusion_counts() {
        let c = confusion(30, 10, 50, 10);
        assert_eq!(c.rate(Metric::SelectionRate), 0.4);
        assert_eq!(c.rate(Metric::BaseRate), 0.4);
        assert_eq!(c.rate(Metric::Tpr), 0.75);
        assert_eq!(c.rate(Metric::Fnr), 0.25);
        assert_eq!(c.rate(Metric::Fpr), 10.0 / 60.0);
        assert_eq!(c.rate(Metric::Ppv), 0.75);
        assert_eq!(c.rate(Metric::Npv), 50.0 / 60.0);
        assert_eq!(c.rate(Metric::Accuracy), 0.8);
        assert!(confusion(0, 3, 3, 0).rate(Metric::Tpr).is_nan());
    }

    #[test]
    fn equalized_odds_takes_the_worse_of_tpr_and_fpr() {
        // TPR 0.75 vs 0.5 (difference 0.25, ratio 2/3); FPR 0.1 vs 0.4 (difference 0.3, ratio 0.25).
        let a = confusion(3, 1, 9, 1);
        let b = confusion(2, 4, 6, 2);
        let s = parity(&[a, b]);
        assert!((s.equalized_odds_difference - 0.3).abs() < 1e-12);
        assert!((s.equalized_odds_ratio - 0.25).abs() < 1e-12);
        assert!((s.equal_opportunity_difference - 0.25).abs() < 1e-12);
        assert!((s.equal_opportunity_ratio - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn undefined_rates_leave_their_group_out() {
        // The second group has no favourable row: its TPR is undefined and not taken as 0.
        let s = parity(&[confusion(1, 0, 1, 1), confusion(0, 1, 1, 0), confusion(2, 0, 0, 0)]);
        assert_eq!(s.equal_opportunity_difference, 0.5);
        assert!(parity(&[confusion(1, 1, 1, 1)]).demographic_parity_ratio.is_nan());
    }
}
