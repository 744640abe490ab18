//! The host's discrimination check: [`fairpipe_abi::variants::Variants`] scored against an
//! [`Oracle`] in batched calls.

use fairpipe_abi::variants::Variants;
pub use fairpipe_abi::variants::{Link, RowCheck};

use crate::domain::Domain;
use crate::error::ModelError;
use crate::oracle::Oracle;

/// Checks rows of one domain against one model.
#[derive(Debug, Clone)]
pub struct Checker {
    variants: Variants,
}

impl Checker {
    /// A checker for `domain`; `gamma` switches from label comparison to a probability threshold.
    pub fn new(domain: &Domain, gamma: Option<f64>) -> Self {
        Checker { variants: Variants::new(domain, gamma) }
    }

    /// This checker with `links` applied to every variant (a load stage's `linked`: a column that
    /// changes with its protected attribute, [`Link`]).
    pub fn with_links(self, links: &[Link]) -> Self {
        Checker { variants: self.variants.with_links(links) }
    }

    /// The links applied to every variant.
    pub fn links(&self) -> &[Link] {
        self.variants.links()
    }

    /// `rows` (row-major) made to agree with the links ([`Link::apply`]): what a row drawn from
    /// the domain becomes before it is checked, so that it is someone who could exist.
    pub fn make_plausible(&self, rows: &mut [f64]) {
        Link::apply_all(self.variants.links(), rows, self.variants.width());
    }

    /// `row` with the protected values of `counter` and its linked columns changed with them:
    /// the counterpart a case of `row` must have.
    pub fn counterpart_like(&self, row: &[f64], counter: &[f64]) -> Vec<f64> {
        let mut v = row.to_vec();
        for &idx in self.variants.protected() {
            v[idx] = counter[idx];
        }
        Link::apply_all(self.variants.links(), &mut v, self.variants.width());
        v
    }

    /// The columns a counterpart may differ in: the protected attributes and their linked
    /// columns, in column order.
    pub fn changed_columns(&self) -> Vec<usize> {
        let mut columns: Vec<usize> = self.variants.protected().to_vec();
        columns.extend(self.variants.links().iter().map(|l| l.column));
        columns.sort_unstable();
        columns.dedup();
        columns
    }

    /// Number of protected variants per row.
    pub fn n_variants(&self) -> usize {
        self.variants.n_variants()
    }

    /// `row` with its protected attributes set to combination `combo`.
    pub fn variant(&self, row: &[f64], combo: usize) -> Vec<f64> {
        self.variants.variant(row, combo)
    }

    /// Whether two probabilities count as different treatment.
    pub fn differs(&self, p: f64, q: f64) -> bool {
        self.variants.differs(p, q)
    }

    /// Rows of `rows` checked per model call: as many as fill [`Oracle::rows_per_call`] model
    /// rows (each row is sent with its other variants: `n_variants()` rows for a row whose
    /// protected values are one of the combinations).
    pub fn rows_per_call(&self, oracle: &Oracle) -> usize {
        (oracle.rows_per_call() / self.n_variants().max(1)).max(1)
    }

    /// Check every row of `rows` (row-major), in batched model calls.
    pub fn check(&self, oracle: &Oracle, rows: &[f64]) -> Result<Vec<RowCheck>, ModelError> {
        Ok(self.variants.verdicts(&self.scores(oracle, rows)?))
    }

    /// [`Checker::check`], advancing `progress` by the rows checked as each model call returns.
    pub fn check_shown(&self, oracle: &Oracle, rows: &[f64], progress: &indicatif::ProgressBar) -> Result<Vec<RowCheck>, ModelError> {
        Ok(self.variants.verdicts(&self.scores_shown(oracle, rows, progress)?))
    }

    /// [`Checker::check_shown`], and for each row whether changing each protected attribute alone
    /// (its linked columns with it, the other protected attributes kept) changes its treatment
    /// ([`Checker::alone_of`]).
    pub fn check_alone(
        &self,
        oracle: &Oracle,
        rows: &[f64],
        progress: &indicatif::ProgressBar,
    ) -> Result<(Vec<RowCheck>, Vec<Vec<bool>>), ModelError> {
        let scores = self.scores_shown(oracle, rows, progress)?;
        let verdicts = self.variants.verdicts(&scores);
        let alone = self.alone_of(oracle, rows, &scores, &verdicts)?;
        Ok((verdicts, alone))
    }

    /// For each row of `rows` (whose [`Checker::scores`] are `scores` and verdicts `verdicts`),
    /// whether changing each protected attribute alone changes its treatment
    /// ([`Variants::alone`]; one flag per protected attribute, in column order). A row whose other
    /// protected values lie off their grids has its single-attribute variants scored besides.
    pub fn alone_of(&self, oracle: &Oracle, rows: &[f64], scores: &[f64], verdicts: &[RowCheck]) -> Result<Vec<Vec<bool>>, ModelError> {
        let width = self.variants.width().max(1);
        let per_row = self.n_variants() + 1;
        let mut alone: Vec<Vec<Option<bool>>> =
            rows.chunks_exact(width).zip(scores.chunks_exact(per_row)).map(|(row, s)| self.variants.alone(row, s[0], &s[1..])).collect();
        // Rows off the grids: their single-attribute variants, scored in batched calls.
        let mut extra = Vec::new();
        let mut owners = Vec::new();
        for (i, flags) in alone.iter().enumerate() {
            for (k, flag) in flags.iter().enumerate() {
                if flag.is_none() {
                    for value in self.variants.values_of(k) {
                        extra.extend(self.variants.single(&rows[i * width..(i + 1) * width], k, value));
                        owners.push((i, k));
                    }
                }
            }
        }
        let mut scored = Vec::with_capacity(owners.len());
        for chunk in extra.chunks(oracle.rows_per_call().max(1) * width) {
            scored.extend(oracle.predict_proba(chunk)?);
        }
        for (&(i, k), &q) in owners.iter().zip(&scored) {
            let flips = self.differs(verdicts[i].p, q);
            alone[i][k] = Some(alone[i][k].unwrap_or(false) || flips);
        }
        Ok(alone.into_iter().map(|f| f.into_iter().map(|x| x.unwrap_or(false)).collect()).collect())
    }

    /// HInter's hidden intersectional flips: for each row of `verdicts` (with its
    /// [`Checker::alone_of`] flags `alone`), whether its treatment changes when two or more
    /// protected attributes change together while no single attribute's change (its linked
    /// columns with it) changes it. With one protected attribute no flip is hidden.
    pub fn hidden_intersectional(verdicts: &[RowCheck], alone: &[Vec<bool>]) -> Vec<bool> {
        verdicts.iter().zip(alone).map(|(v, flags)| flags.len() >= 2 && v.discriminatory && !flags.iter().any(|f| *f)).collect()
    }

    /// The verdicts of rows whose scores [`Checker::scores`] gave.
    pub fn verdicts(&self, scores: &[f64]) -> Vec<RowCheck> {
        self.variants.verdicts(scores)
    }

    /// P(class 1) of each row of `rows` followed by each of its protected variants (`1 +
    /// n_variants()` values per row), in batched model calls. The variant that is the row itself
    /// is not sent again ([`Variants::batch_without_own`]): a binary attribute costs two rows per
    /// row, not three.
    pub fn scores(&self, oracle: &Oracle, rows: &[f64]) -> Result<Vec<f64>, ModelError> {
        self.scores_shown(oracle, rows, &indicatif::ProgressBar::hidden())
    }

    /// [`Checker::scores`], advancing `progress` by the rows scored as each model call returns.
    pub fn scores_shown(&self, oracle: &Oracle, rows: &[f64], progress: &indicatif::ProgressBar) -> Result<Vec<f64>, ModelError> {
        let width = self.variants.width().max(1);
        let chunk_rows = self.rows_per_call(oracle);
        let mut out = Vec::with_capacity(rows.len() / width * (self.n_variants() + 1));
        let (mut batch, mut own) = (Vec::new(), Vec::new());
        for chunk in rows.chunks(chunk_rows * width) {
            self.variants.batch_without_own(chunk, &mut batch, &mut own);
            // One probability per row of `batch` (predict_proba's contract).
            self.variants.spread(&oracle.predict_proba(&batch)?, &own, &mut out);
            progress.inc((chunk.len() / width) as u64);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use fairpipe_abi::domain::Attribute;

    use super::*;
    use crate::models::testing::Counting;

    #[test]
    fn the_variant_that_is_the_row_itself_is_answered_with_the_rows_own_score() {
        // Counting scores (a + 2b) / 100: here a = x and b = race.
        let attributes = vec![Attribute::integer("x", 0.0, 99.0, false), Attribute::integer("race", 0.0, 2.0, true)];
        let checker = Checker::new(&Domain { attributes }, None);
        let model = Arc::new(Counting(AtomicU64::new(0)));
        let oracle = Oracle::new(model.clone());
        // The last row's race (0.5) is none of the three combinations: all three are sent for it.
        let rows = [49.0, 0.0, 10.0, 1.0, 50.0, 2.0, 5.0, 0.5];
        let scores = checker.scores(&oracle, &rows).unwrap();
        let expected: Vec<f64> = rows
            .chunks_exact(2)
            .flat_map(|r| {
                let p = |race: f64| (r[0] + 2.0 * race) / 100.0;
                [p(r[1]), p(0.0), p(1.0), p(2.0)]
            })
            .collect();
        assert_eq!(scores, expected, "the same scores as sending every variant");
        assert_eq!(model.0.load(Ordering::Relaxed), 3 * 3 + 4, "each row and its other variants, once");
        let verdicts = checker.check(&oracle, &rows).unwrap();
        let found: Vec<bool> = verdicts.iter().map(|v| v.discriminatory).collect();
        assert_eq!(found, [true, false, true, false], "0.49 → 0.53 and 0.54 → 0.50 cross 0.5: {verdicts:?}");
    }
}
