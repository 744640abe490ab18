//! Upper bounds on the work a pipeline may ask for, checked before the work starts: budgets read
//! from the TOML (at validation), the protected combinations a domain implies and the model rows an
//! audit will need (before the stage runs). Past a bound the run stops with the figure and the fix;
//! past a tenth of it a warning says so (on standard error and in `summary.json`). The README's
//! "Limits" table lists these constants.

use crate::domain::Domain;
use crate::error::{Error, LimitError};
use crate::warnings::Warnings;

/// `estimate`: trials K at most.
pub const MAX_TRIALS: usize = 100_000;
/// `estimate`: inputs per trial m at most.
pub const MAX_SAMPLES: usize = 10_000_000;
/// Seed counts at most (`cluster` seeds, `generate` random_seeds and max_seeds).
pub const MAX_SEEDS: usize = 10_000_000;
/// Iteration limits at most (`cluster` max_iterations, `generate` max_iterations).
pub const MAX_ITERATIONS: u64 = 1_000_000_000;
/// `cluster`: clusters k at most.
pub const MAX_CLUSTERS: usize = 1_000;
/// Protected combinations (the product of the protected attributes' grid sizes) at most.
pub const MAX_PROTECTED_COMBINATIONS: u128 = 100_000;
/// Model rows one auditing stage may need at most (e.g. `estimate`: trials × samples ×
/// combinations).
pub const MAX_MODEL_ROWS: u128 = 2_000_000_000;

/// The protected attributes of `domain` with their grid sizes, as "sex (2) × age (45000)".
fn describe_protected(domain: &Domain) -> String {
    domain
        .protected_indices()
        .iter()
        .map(|&i| format!("{} ({})", domain.attributes[i].name, domain.attributes[i].grid_len()))
        .collect::<Vec<_>>()
        .join(" × ")
}

/// The number of protected combinations of `domain`, refused past
/// [`MAX_PROTECTED_COMBINATIONS`] with the figure and the fix; a warning in `warnings` past a tenth
/// of it.
pub fn check_protected_combinations(domain: &Domain, warnings: &Warnings) -> Result<u128, Error> {
    let count = domain.protected_combination_count();
    let fix = "use a coarser `step` (columns.NAME.step on the load stage; it bins a continuous attribute) or fewer levels";
    match count {
        Some(n) if n <= MAX_PROTECTED_COMBINATIONS => {
            if n > MAX_PROTECTED_COMBINATIONS / 10 {
                warnings.warn(format!(
                    "the protected attributes {} give {n} combinations, each a model row per audited input; {fix} to make the audit faster",
                    describe_protected(domain)
                ));
            }
            Ok(n)
        }
        _ => Err(LimitError::ProtectedCombinations {
            attributes: describe_protected(domain),
            count: count.map(|n| n.to_string()).unwrap_or_else(|| "more than 2^128".into()),
            limit: MAX_PROTECTED_COMBINATIONS as u64,
            fix,
        }
        .into()),
    }
}

/// Refuse an audit needing more than [`MAX_MODEL_ROWS`] model rows (`rows`, as `formula`, e.g.
/// "trials × samples × combinations = 400 × 1000 × 90000"); a warning in `warnings` past a tenth
/// of it.
pub fn check_model_rows(rows: Option<u128>, formula: &str, warnings: &Warnings) -> Result<(), Error> {
    let fix = "lower `trials`/`samples`, or reduce the protected combinations (a coarser columns.NAME.step, fewer levels)";
    match rows {
        Some(n) if n <= MAX_MODEL_ROWS => {
            if n > MAX_MODEL_ROWS / 10 {
                warnings.warn(format!("this audit needs {n} model rows ({formula}); it will take long — {fix}"));
            }
            Ok(())
        }
        _ => Err(LimitError::ModelRows {
            rows: rows.map(|n| n.to_string()).unwrap_or_else(|| "more than 2^128".into()),
            formula: formula.to_string(),
            limit: MAX_MODEL_ROWS as u64,
            fix,
        }
        .into()),
    }
}
