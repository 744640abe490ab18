//! The host's discrimination check: [`fairpipe_abi::variants::Variants`] scored against an
//! [`Oracle`] in batched calls.

pub use fairpipe_abi::variants::RowCheck;
use fairpipe_abi::variants::Variants;

use crate::domain::Domain;
use crate::error::ModelError;
use crate::oracle::Oracle;

/// Rows per model call when checking many rows (variants included).
const ROWS_PER_CALL: usize = 8192;

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

    /// Check every row of `rows` (row-major), in batched model calls.
    pub fn check(&self, oracle: &Oracle, rows: &[f64]) -> Result<Vec<RowCheck>, ModelError> {
        Ok(self.variants.verdicts(&self.scores(oracle, rows)?))
    }

    /// P(class 1) of each row of `rows` followed by each of its protected variants (`1 +
    /// n_variants()` values per row), in batched model calls.
    pub fn scores(&self, oracle: &Oracle, rows: &[f64]) -> Result<Vec<f64>, ModelError> {
        let width = self.variants.width().max(1);
        let chunk_rows = (ROWS_PER_CALL / (self.n_variants() + 1)).max(1);
        let mut out = Vec::with_capacity(rows.len() / width * (self.n_variants() + 1));
        let mut batch = Vec::new();
        for chunk in rows.chunks(chunk_rows * width) {
            self.variants.batch(chunk, &mut batch);
            out.extend(oracle.predict_proba(&batch)?);
        }
        Ok(out)
    }
}
