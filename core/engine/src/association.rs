//! How strongly each column goes with each protected attribute: the columns a counterfactual that
//! changes the attribute alone would leave implausible (a "Female Husband" when `sex` changes and
//! `relationship` does not). Measured on the data's encoded rows, by the kinds of the two columns:
//!
//! - both categorical: Cramér's V, √(χ² / (n · (min(r, c) − 1))) over their contingency table;
//! - one categorical, one numeric (integer or continuous): the correlation ratio η, √(SS between
//!   the categorical's groups / SS total) of the numeric column;
//! - both numeric: |Pearson r|.
//!
//! Each lies in [0, 1]: 0 when the columns are independent (exactly 0 for V and η when every
//! group has the same distribution, resp. mean), 1 when one determines the other.

use std::collections::HashMap;

use ndarray::Array2;
use serde::{Deserialize, Serialize};

use crate::domain::{AttributeKind, Domain};

/// How an association was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Cramér's V (two categorical columns).
    CramersV,
    /// The correlation ratio η (a categorical and a numeric column).
    CorrelationRatio,
    /// |Pearson r| (two numeric columns).
    Pearson,
}

impl Measure {
    /// The measure's name in messages.
    pub fn label(self) -> &'static str {
        match self {
            Measure::CramersV => "Cramér's V",
            Measure::CorrelationRatio => "correlation ratio η",
            Measure::Pearson => "|Pearson r|",
        }
    }
}

/// One column's association with one protected attribute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Association {
    /// The protected attribute.
    pub protected: String,
    /// The other column.
    pub column: String,
    /// How it was measured.
    pub measure: Measure,
    /// The measure's value, in [0, 1].
    pub value: f64,
}

/// Every column of `domain` that is not protected, measured against every protected attribute,
/// over the rows of `x` (encoded, one column per attribute): those whose value is at least
/// `threshold`, strongest first within each protected attribute (protected attributes in column
/// order). A pair that cannot be measured (a column with one value) is left out.
pub fn strong(domain: &Domain, x: &Array2<f64>, threshold: f64) -> Vec<Association> {
    let mut out = Vec::new();
    for p in domain.protected_indices() {
        let mut found: Vec<Association> = domain
            .free_indices()
            .into_iter()
            .filter_map(|c| {
                let (measure, value) = measure(domain, x, p, c)?;
                (value >= threshold).then(|| Association {
                    protected: domain.attributes[p].name.clone(),
                    column: domain.attributes[c].name.clone(),
                    measure,
                    value,
                })
            })
            .collect();
        found.sort_by(|a, b| b.value.total_cmp(&a.value));
        out.extend(found);
    }
    out
}

/// The association of columns `a` and `b` of `x`, by their kinds in `domain`; `None` when it is
/// undefined (a column with a single value, or no rows) or says nothing: a categorical column with
/// more distinct values than half the rows (an id, a free-text note), where nearly every value is
/// its own category, gives Cramér's V (and the correlation ratio) near 1 with any column.
pub fn measure(domain: &Domain, x: &Array2<f64>, a: usize, b: usize) -> Option<(Measure, f64)> {
    let categorical = |i: usize| matches!(domain.attributes[i].kind, AttributeKind::Categorical { .. });
    let (ca, cb) = (x.column(a), x.column(b));
    let (va, vb): (Vec<f64>, Vec<f64>) = (ca.iter().copied().collect(), cb.iter().copied().collect());
    let unique_per_row = |i: usize, v: &[f64]| categorical(i) && levels(v).1 * 2 > v.len();
    if unique_per_row(a, &va) || unique_per_row(b, &vb) {
        return None;
    }
    let value = match (categorical(a), categorical(b)) {
        (true, true) => (Measure::CramersV, cramers_v(&va, &vb)?),
        (true, false) => (Measure::CorrelationRatio, correlation_ratio(&va, &vb)?),
        (false, true) => (Measure::CorrelationRatio, correlation_ratio(&vb, &va)?),
        (false, false) => (Measure::Pearson, pearson(&va, &vb)?.abs()),
    };
    value.1.is_finite().then_some(value)
}

/// Level codes of `v` as small indices, and how many there are.
fn levels(v: &[f64]) -> (Vec<usize>, usize) {
    let mut index: HashMap<u64, usize> = HashMap::new();
    let codes = v
        .iter()
        .map(|x| {
            let next = index.len();
            *index.entry(x.to_bits()).or_insert(next)
        })
        .collect();
    (codes, index.len())
}

/// Cramér's V of two categorical columns.
pub fn cramers_v(a: &[f64], b: &[f64]) -> Option<f64> {
    let n = a.len();
    let ((ia, r), (ib, c)) = (levels(a), levels(b));
    if n == 0 || r < 2 || c < 2 {
        return None;
    }
    let mut table = vec![0usize; r * c];
    for (&i, &j) in ia.iter().zip(&ib) {
        table[i * c + j] += 1;
    }
    let rows: Vec<usize> = (0..r).map(|i| table[i * c..(i + 1) * c].iter().sum()).collect();
    let cols: Vec<usize> = (0..c).map(|j| (0..r).map(|i| table[i * c + j]).sum()).collect();
    let mut chi2 = 0.0;
    for i in 0..r {
        for j in 0..c {
            let expected = rows[i] as f64 * cols[j] as f64 / n as f64;
            chi2 += (table[i * c + j] as f64 - expected).powi(2) / expected;
        }
    }
    Some((chi2 / (n as f64 * (r.min(c) - 1) as f64)).sqrt().min(1.0))
}

/// The correlation ratio η of numeric `values` grouped by categorical `groups`.
pub fn correlation_ratio(groups: &[f64], values: &[f64]) -> Option<f64> {
    let n = values.len();
    let (ig, k) = levels(groups);
    if n == 0 || k < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let (mut sums, mut counts) = (vec![0.0; k], vec![0usize; k]);
    for (&g, &v) in ig.iter().zip(values) {
        sums[g] += v;
        counts[g] += 1;
    }
    let between: f64 = sums.iter().zip(&counts).map(|(&s, &m)| m as f64 * (s / m as f64 - mean).powi(2)).sum();
    let total: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
    (total > 0.0).then(|| (between / total).sqrt().min(1.0))
}

/// Pearson's r of two numeric columns.
pub fn pearson(a: &[f64], b: &[f64]) -> Option<f64> {
    let n = a.len() as f64;
    if a.is_empty() {
        return None;
    }
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (&x, &y) in a.iter().zip(b) {
        sab += (x - ma) * (y - mb);
        saa += (x - ma).powi(2);
        sbb += (y - mb).powi(2);
    }
    (saa > 0.0 && sbb > 0.0).then(|| (sab / (saa * sbb).sqrt()).clamp(-1.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planted_tables_give_their_known_values() {
        // A column equal to the attribute (relabelled): V = 1.
        let sex = [0.0, 0.0, 1.0, 1.0, 0.0, 1.0];
        let copy = [5.0, 5.0, 3.0, 3.0, 5.0, 3.0];
        assert!((cramers_v(&sex, &copy).unwrap() - 1.0).abs() < 1e-12);
        // A balanced design (every level of b equally often within each sex): χ² = 0, V = 0.
        let sex = [0.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        let b = [0.0, 1.0, 2.0, 0.0, 1.0, 2.0];
        assert_eq!(cramers_v(&sex, &b), Some(0.0));
        // 2×2 table [[a, b], [c, d]] = [[3, 1], [1, 3]]: V = |ad − bc| / √(row and column
        // products) = 8 / 16 = 0.5 (the φ coefficient).
        let s = [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0];
        let t = [0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0];
        assert!((cramers_v(&s, &t).unwrap() - 0.5).abs() < 1e-12);
        // Equal group means: η = 0; values determined by the group: η = 1.
        assert_eq!(correlation_ratio(&sex, &[1.0, 2.0, 3.0, 3.0, 2.0, 1.0]), Some(0.0));
        assert!((correlation_ratio(&sex, &[7.0, 7.0, 7.0, 9.0, 9.0, 9.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((pearson(&[1.0, 2.0, 3.0], &[6.0, 4.0, 2.0]).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(cramers_v(&[1.0, 1.0], &[0.0, 1.0]), None, "one level: undefined");
    }
}
