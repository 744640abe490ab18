//! Whether a loaded model agrees with the data's labels better than chance: the check that
//! catches a model read the wrong way round (its probability is that of the *unfavourable*
//! class: trained with class 1 = "denied", exported with its classes in the other order, or
//! returning `1 − p`), which would otherwise be audited with every selection rate flipped.
//!
//! The model's scores on the labelled rows are held against the labels: accuracy at 0.5 and the
//! area under the ROC curve with its 95% interval. The interval is DeLong's (DeLong, DeLong &
//! Clarke-Pearson 1988: the variance of the Mann–Whitney statistic from each row's placement
//! values, computed from mid-ranks as in Sun & Xu 2014), `AUC ± 1.96·SE`, ties counted half, so
//! a labels-only model (scores 0 and 1) is measured the same way. Below chance is
//! [`Verdict::Below`]: the whole interval under 0.5, with at least [`MIN_PER_CLASS`] rows of each
//! class (with fewer, the placements' variances say nothing: three rows can give an interval of
//! width 0). A point AUC under 0.5 with accuracy under 0.5
//! while the interval still reaches 0.5 (few rows) is [`Verdict::Doubtful`].

use serde::{Deserialize, Serialize};

/// Rows of each class below which no verdict is drawn from the interval.
pub const MIN_PER_CLASS: usize = 10;

/// How a model's scores agree with the labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Labelled rows compared.
    pub rows: usize,
    /// Share of rows whose predicted class (P > 0.5) is the label.
    pub accuracy: f64,
    /// Area under the ROC curve of the scores for the favourable label (`null` with one class).
    pub auc: Option<f64>,
    /// DeLong's 95% interval of the AUC.
    pub auc_ci95: Option<[f64; 2]>,
    /// Rows of the rarer class.
    pub minority_rows: usize,
    /// How the interval is computed.
    pub method: String,
}

/// What the agreement says about the model's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// At or above chance, or too few rows to say.
    Fine,
    /// Accuracy and AUC under 0.5, but the AUC's interval reaches 0.5.
    Doubtful,
    /// The AUC's whole 95% interval lies under 0.5: the model ranks the unfavourable rows above
    /// the favourable ones.
    Below,
}

impl Agreement {
    /// Measure `scores` (P(favourable) per row) against `labels` (1 = favourable).
    pub fn measure(scores: &[f64], labels: &[u8]) -> Agreement {
        let rows = scores.len().min(labels.len());
        let (scores, labels) = (&scores[..rows], &labels[..rows]);
        let correct = scores.iter().zip(labels).filter(|(p, y)| u8::from(**p > 0.5) == **y).count();
        let accuracy = if rows == 0 { f64::NAN } else { correct as f64 / rows as f64 };
        let (auc, auc_ci95) = match delong(scores, labels) {
            Some((auc, se)) => {
                let half = 1.959_963_984_540_054 * se;
                (Some(auc), Some([(auc - half).max(0.0), (auc + half).min(1.0)]))
            }
            None => (None, None),
        };
        let positives = labels.iter().filter(|&&y| y == 1).count();
        let minority_rows = positives.min(rows - positives);
        Agreement { rows, accuracy, auc, auc_ci95, minority_rows, method: "DeLong 95% interval of the AUC".into() }
    }

    /// Whether the model agrees with the labels below chance.
    pub fn verdict(&self) -> Verdict {
        match (self.auc, self.auc_ci95) {
            (Some(_), Some([_, high])) if high < 0.5 && self.minority_rows >= MIN_PER_CLASS => Verdict::Below,
            (Some(auc), _) if auc < 0.5 && self.accuracy < 0.5 => Verdict::Doubtful,
            _ => Verdict::Fine,
        }
    }

    /// "accuracy 0.150, AUC 0.100 (95% CI 0.090–0.110, DeLong) on 48842 labelled rows".
    pub fn describe(&self) -> String {
        let auc = match (self.auc, self.auc_ci95) {
            (Some(a), Some([lo, hi])) => format!(", AUC {a:.3} (95% CI {lo:.3}–{hi:.3}, DeLong)"),
            _ => String::new(),
        };
        format!("accuracy {:.3}{auc} on {} labelled rows", self.accuracy, self.rows)
    }
}

/// The AUC of `scores` for `labels` and DeLong's standard error; `None` when a class is absent.
fn delong(scores: &[f64], labels: &[u8]) -> Option<(f64, f64)> {
    let positives: Vec<f64> = scores.iter().zip(labels).filter(|(_, y)| **y == 1).map(|(s, _)| *s).collect();
    let negatives: Vec<f64> = scores.iter().zip(labels).filter(|(_, y)| **y != 1).map(|(s, _)| *s).collect();
    let (m, n) = (positives.len(), negatives.len());
    if m == 0 || n == 0 {
        return None;
    }
    let all: Vec<f64> = positives.iter().chain(&negatives).copied().collect();
    let ranks_all = mid_ranks(&all);
    let ranks_pos = mid_ranks(&positives);
    let ranks_neg = mid_ranks(&negatives);
    let (mf, nf) = (m as f64, n as f64);
    // Placement of each positive: the share of negatives scored below it (ties half).
    let v10: Vec<f64> = (0..m).map(|i| (ranks_all[i] - ranks_pos[i]) / nf).collect();
    // Placement of each negative: the share of positives scored above it.
    let v01: Vec<f64> = (0..n).map(|j| 1.0 - (ranks_all[m + j] - ranks_neg[j]) / mf).collect();
    let auc = v10.iter().sum::<f64>() / mf;
    let variance = |v: &[f64]| {
        if v.len() < 2 {
            return 0.0;
        }
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64
    };
    let se = (variance(&v10) / mf + variance(&v01) / nf).sqrt();
    Some((auc, se))
}

/// 1-based mid-ranks of `values` (ties share the mean of their ranks).
fn mid_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut k = 0;
    while k < order.len() {
        let mut end = k;
        while end + 1 < order.len() && values[order[end + 1]] == values[order[k]] {
            end += 1;
        }
        let mid = (k + end) as f64 / 2.0 + 1.0;
        for &i in &order[k..=end] {
            ranks[i] = mid;
        }
        k = end + 1;
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_auc_matches_the_pair_count_and_delong_matches_a_hand_computation() {
        // Positives 0.9, 0.6, 0.4; negatives 0.7, 0.3, 0.2, 0.4.
        let scores = [0.9, 0.6, 0.4, 0.7, 0.3, 0.2, 0.4];
        let labels = [1, 1, 1, 0, 0, 0, 0];
        let (auc, se) = delong(&scores, &labels).unwrap();
        // Pairs won: 0.9 beats 4, 0.6 beats 3, 0.4 beats 2 and ties 1 → 9.5 of 12.
        assert!((auc - 9.5 / 12.0).abs() < 1e-12, "{auc}");
        // Placements by hand: each positive's share of negatives below it (0.4 ties one: half),
        // each negative's share of positives above it (0.7: 1 of 3; 0.4: 2 and a tie of 3).
        let v10 = [1.0, 0.75, 0.625];
        let v01 = [1.0 / 3.0, 1.0, 1.0, 2.5 / 3.0];
        let var = |v: &[f64]| {
            let m = v.iter().sum::<f64>() / v.len() as f64;
            v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
        };
        let want = (var(&v10) / 3.0 + var(&v01) / 4.0).sqrt();
        assert!((se - want).abs() < 1e-12, "{se} against {want}");
        assert!((v01.iter().sum::<f64>() / 4.0 - auc).abs() < 1e-12);
    }

    #[test]
    fn an_inverted_model_is_below_chance_and_the_right_way_round_is_fine() {
        // 400 rows: the score rises with the label, with noise.
        let labels: Vec<u8> = (0..400).map(|i| u8::from(i % 3 == 0)).collect();
        let scores: Vec<f64> =
            (0..400).map(|i| if i % 3 == 0 { 0.6 + (i % 7) as f64 * 0.05 } else { 0.1 + (i % 11) as f64 * 0.05 }).collect();
        let right = Agreement::measure(&scores, &labels);
        assert_eq!(right.verdict(), Verdict::Fine);
        assert!(right.accuracy > 0.8 && right.auc.unwrap() > 0.9, "{right:?}");
        let flipped: Vec<f64> = scores.iter().map(|p| 1.0 - p).collect();
        let wrong = Agreement::measure(&flipped, &labels);
        assert_eq!(wrong.verdict(), Verdict::Below, "{wrong:?}");
        assert!((wrong.auc.unwrap() - (1.0 - right.auc.unwrap())).abs() < 1e-12);
        // Labels only, inverted: the same verdict.
        let labels_only: Vec<f64> = flipped.iter().map(|p| f64::from(u8::from(*p > 0.5))).collect();
        assert_eq!(Agreement::measure(&labels_only, &labels).verdict(), Verdict::Below);
    }

    #[test]
    fn few_rows_or_one_class_cannot_say_below_chance() {
        let few = Agreement::measure(&[0.2, 0.8, 0.7], &[1, 0, 1]);
        assert_ne!(few.verdict(), Verdict::Below, "{few:?}");
        let one_class = Agreement::measure(&[0.2, 0.1], &[1, 1]);
        assert_eq!(one_class.auc, None);
        assert_eq!(one_class.verdict(), Verdict::Fine);
        // A model that leans positive on imbalanced data has accuracy under 0.5 but ranks well.
        let labels: Vec<u8> = (0..1000).map(|i| u8::from(i % 10 == 0)).collect();
        let scores: Vec<f64> = (0..1000)
            .map(|i| {
                if i % 10 == 0 {
                    0.9
                } else if i % 10 < 7 {
                    0.6
                } else {
                    0.3
                }
            })
            .collect();
        let leaning = Agreement::measure(&scores, &labels);
        assert!(leaning.accuracy < 0.5);
        assert_eq!(leaning.verdict(), Verdict::Fine);
    }
}
