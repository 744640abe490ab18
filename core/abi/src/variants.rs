//! Protected-variant enumeration and the discrimination verdict, shared by the host's checker and
//! by plugins: for each row, every combination of protected values is scored, and the row is
//! discriminatory when a variant's label differs from the row's own (or, with `gamma`, when
//! |f(x) − f(x')| > γ, Aequitas Definition 4.1).

use crate::domain::Domain;

/// The verdict on one row.
#[derive(Debug, Clone, PartialEq)]
pub struct RowCheck {
    /// Whether some protected variant is treated differently.
    pub discriminatory: bool,
    /// P(class 1) of the row itself.
    pub p: f64,
    /// Index of the counterpart combination: the label-flipping variant with the largest probability
    /// difference, or the variant with the largest difference when none flips.
    pub counterpart: usize,
    /// P(class 1) of the counterpart.
    pub p_counterpart: f64,
}

/// The protected combinations of a domain and the rule that compares two predictions.
#[derive(Debug, Clone)]
pub struct Variants {
    protected: Vec<usize>,
    combos: Vec<Vec<f64>>,
    width: usize,
    gamma: Option<f64>,
}

impl Variants {
    /// Variants of `domain`; `gamma` switches from label comparison to a probability threshold.
    pub fn new(domain: &Domain, gamma: Option<f64>) -> Self {
        Variants { protected: domain.protected_indices(), combos: domain.protected_combinations(), width: domain.width(), gamma }
    }

    /// Number of protected combinations.
    pub fn n_variants(&self) -> usize {
        self.combos.len()
    }

    /// Indices of the protected attributes.
    pub fn protected(&self) -> &[usize] {
        &self.protected
    }

    /// Row width.
    pub fn width(&self) -> usize {
        self.width
    }

    /// `row` with its protected attributes set to combination `combo`.
    pub fn variant(&self, row: &[f64], combo: usize) -> Vec<f64> {
        let mut v = row.to_vec();
        self.set_combo(&mut v, combo);
        v
    }

    /// Set the protected attributes of `row` to combination `combo`.
    pub fn set_combo(&self, row: &mut [f64], combo: usize) {
        for (k, &idx) in self.protected.iter().enumerate() {
            row[idx] = self.combos[combo][k];
        }
    }

    /// The combination `row` already has (its protected values, bit for bit), if it is one of
    /// them: that variant is the row itself.
    pub fn own_combo(&self, row: &[f64]) -> Option<usize> {
        self.combos.iter().position(|combo| self.protected.iter().zip(combo).all(|(&idx, v)| row[idx].to_bits() == v.to_bits()))
    }

    /// Whether two probabilities count as different treatment.
    pub fn differs(&self, p: f64, q: f64) -> bool {
        match self.gamma {
            Some(g) => (p - q).abs() > g,
            None => (p > 0.5) != (q > 0.5),
        }
    }

    /// Rows to score for `rows` (row-major): each row followed by its variants.
    pub fn batch(&self, rows: &[f64], out: &mut Vec<f64>) {
        out.clear();
        out.reserve(rows.len() * (self.combos.len() + 1));
        for row in rows.chunks_exact(self.width) {
            out.extend_from_slice(row);
            for combo in 0..self.combos.len() {
                let start = out.len();
                out.extend_from_slice(row);
                self.set_combo(&mut out[start..], combo);
            }
        }
    }

    /// Rows to score for `rows` (row-major) as [`Variants::batch`] lays them out, less the variant
    /// that is the row itself ([`Variants::own_combo`]; a model scores a row the same however it
    /// is batched): each row followed by its other variants. `own` gets each row's own
    /// combination, for [`Variants::spread`].
    pub fn batch_without_own(&self, rows: &[f64], out: &mut Vec<f64>, own: &mut Vec<Option<usize>>) {
        out.clear();
        own.clear();
        for row in rows.chunks_exact(self.width) {
            let mine = self.own_combo(row);
            own.push(mine);
            out.extend_from_slice(row);
            for combo in (0..self.combos.len()).filter(|&c| Some(c) != mine) {
                let start = out.len();
                out.extend_from_slice(row);
                self.set_combo(&mut out[start..], combo);
            }
        }
    }

    /// The scores of a [`Variants::batch_without_own`] (`scored`: one per row of it, in order)
    /// appended to `out` in [`Variants::batch`]'s layout: the variant that is the row itself gets
    /// the row's own score.
    pub fn spread(&self, scored: &[f64], own: &[Option<usize>], out: &mut Vec<f64>) {
        let mut at = 0;
        for &mine in own {
            let p = scored[at];
            at += 1;
            out.push(p);
            for combo in 0..self.combos.len() {
                if Some(combo) == mine {
                    out.push(p);
                } else {
                    out.push(scored[at]);
                    at += 1;
                }
            }
        }
    }

    /// Verdicts from the scores of a [`Variants::batch`].
    pub fn verdicts(&self, scores: &[f64]) -> Vec<RowCheck> {
        scores.chunks_exact(self.combos.len() + 1).map(|s| self.verdict(s[0], &s[1..])).collect()
    }

    /// The verdict for a row scored `p` whose variants scored `variants`.
    pub fn verdict(&self, p: f64, variants: &[f64]) -> RowCheck {
        let mut best: Option<(usize, f64, bool)> = None;
        for (c, &q) in variants.iter().enumerate() {
            let flips = self.differs(p, q);
            let gap = (p - q).abs();
            let better = match best {
                None => true,
                Some((_, g, f)) => (flips && !f) || (flips == f && gap > g),
            };
            if better {
                best = Some((c, gap, flips));
            }
        }
        let (counterpart, _, discriminatory) = best.unwrap_or((0, 0.0, false));
        RowCheck { discriminatory, p, counterpart, p_counterpart: variants.get(counterpart).copied().unwrap_or(p) }
    }
}
