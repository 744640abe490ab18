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

/// A column that changes with a protected attribute when a counterpart is made (a load stage's
/// `linked`): each of its listed values goes with one value of the attribute (`Husband` with
/// `Male`, `Wife` with `Female`), so a counterpart whose attribute is set to `Female` has its
/// `Husband` made `Wife`. Values not listed, and values listed for an attribute value that has no
/// linked value, are kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// Index of the protected attribute.
    pub protected: usize,
    /// Index of the linked column.
    pub column: usize,
    /// (the linked column's encoded value, the attribute's encoded value it goes with); at most
    /// one linked value per attribute value.
    pub goes_with: Vec<(f64, f64)>,
}

impl Link {
    /// Make `row` agree with the link: a listed value of the linked column that goes with another
    /// value of the attribute than the row's is replaced by the one that goes with the row's, when
    /// there is one. Returns whether the row changed. Applying it twice changes nothing more.
    pub fn apply(&self, row: &mut [f64]) -> bool {
        let (attribute, linked) = (row[self.protected], row[self.column]);
        let Some(&(_, owner)) = self.goes_with.iter().find(|(v, _)| v.to_bits() == linked.to_bits()) else { return false };
        if owner.to_bits() == attribute.to_bits() {
            return false;
        }
        match self.goes_with.iter().find(|(_, a)| a.to_bits() == attribute.to_bits()) {
            Some(&(value, _)) => {
                row[self.column] = value;
                true
            }
            None => false,
        }
    }

    /// [`Link::apply`] for each link of `links` on each row of `rows` (row-major, `width` values
    /// a row).
    pub fn apply_all(links: &[Link], rows: &mut [f64], width: usize) {
        if links.is_empty() || width == 0 {
            return;
        }
        for row in rows.chunks_exact_mut(width) {
            for link in links {
                link.apply(row);
            }
        }
    }
}

/// The protected combinations of a domain and the rule that compares two predictions.
#[derive(Debug, Clone)]
pub struct Variants {
    protected: Vec<usize>,
    combos: Vec<Vec<f64>>,
    width: usize,
    gamma: Option<f64>,
    /// Columns changed with their protected attribute in every variant.
    links: Vec<Link>,
}

impl Variants {
    /// Variants of `domain`; `gamma` switches from label comparison to a probability threshold.
    pub fn new(domain: &Domain, gamma: Option<f64>) -> Self {
        Variants {
            protected: domain.protected_indices(),
            combos: domain.protected_combinations(),
            width: domain.width(),
            gamma,
            links: Vec::new(),
        }
    }

    /// These variants with `links` applied to every variant: a linked column changes with its
    /// protected attribute ([`Link::apply`]).
    pub fn with_links(mut self, links: &[Link]) -> Self {
        self.links = links.to_vec();
        self
    }

    /// The links applied to every variant.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// The protected combinations, each one value per protected attribute in
    /// [`Variants::protected`] order.
    pub fn combos(&self) -> &[Vec<f64>] {
        &self.combos
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

    /// Set the protected attributes of `row` to combination `combo`, and its linked columns with
    /// them.
    pub fn set_combo(&self, row: &mut [f64], combo: usize) {
        for (k, &idx) in self.protected.iter().enumerate() {
            row[idx] = self.combos[combo][k];
        }
        for link in &self.links {
            link.apply(row);
        }
    }

    /// The combination `row` already has (its protected values, bit for bit), if it is one of
    /// them and its linked columns already agree with them: that variant is the row itself.
    pub fn own_combo(&self, row: &[f64]) -> Option<usize> {
        let consistent = || {
            let mut copy = row.to_vec();
            !self.links.iter().any(|l| l.apply(&mut copy))
        };
        self.combos
            .iter()
            .position(|combo| self.protected.iter().zip(combo).all(|(&idx, v)| row[idx].to_bits() == v.to_bits()))
            .filter(|_| self.links.is_empty() || consistent())
    }

    /// For each protected attribute (in [`Variants::protected`] order), whether some variant
    /// that changes that attribute alone (its linked columns with it; the other protected
    /// attributes as in `row`) is treated differently from the row scored `p`, from `variants`,
    /// the scores of the row's variants in combination order. `None` for an attribute when no
    /// combination keeps the row's other protected values (one of them lies off its grid): the
    /// caller scores [`Variants::single`] rows for it.
    pub fn alone(&self, row: &[f64], p: f64, variants: &[f64]) -> Vec<Option<bool>> {
        (0..self.protected.len())
            .map(|k| {
                let mut any = None;
                for (combo, &q) in self.combos.iter().zip(variants) {
                    let others_kept = self.protected.iter().enumerate().all(|(j, &idx)| j == k || combo[j].to_bits() == row[idx].to_bits());
                    if others_kept {
                        any = Some(any.unwrap_or(false) || self.differs(p, q));
                    }
                }
                any
            })
            .collect()
    }

    /// The values protected attribute `k` (in [`Variants::protected`] order) takes across the
    /// combinations, in grid order.
    pub fn values_of(&self, k: usize) -> Vec<f64> {
        let mut values: Vec<f64> = Vec::new();
        for combo in &self.combos {
            if !values.iter().any(|v| v.to_bits() == combo[k].to_bits()) {
                values.push(combo[k]);
            }
        }
        values
    }

    /// `row` with protected attribute `k` (in [`Variants::protected`] order) set to `value`, the
    /// other protected attributes kept, the linked columns changed with it.
    pub fn single(&self, row: &[f64], k: usize, value: f64) -> Vec<f64> {
        let mut v = row.to_vec();
        v[self.protected[k]] = value;
        for link in &self.links {
            link.apply(&mut v);
        }
        v
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
