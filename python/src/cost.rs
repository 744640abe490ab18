//! What `fairpipe_rs.audit` needs to say a run's cost before it starts: the budgets its stages
//! take when the caller gives none, the standard audit's (`fairpipe_core::preset`;
//! `fairpipe_rs._progress.cost_line` does the sums).

use fairpipe_core::preset::stage_names::{ESTIMATE, RANKING, SEARCH};
use fairpipe_core::preset::{standard_estimate, standard_generate, SEARCH_METHOD};
use pyo3::prelude::*;

/// The keys of the `estimate` and `search` (generate) stages `audit` builds when not given, and
/// the candidates a `ranking` lists by default
/// (`{"estimate": {"trials": …, "samples": …}, "search": {"max_queries": …, …}, "ranking": {"candidates": …}}`).
#[pyfunction]
pub fn audit_defaults(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let defaults = serde_json::json!({
        ESTIMATE: serde_json::to_value(standard_estimate()).unwrap_or_default(),
        SEARCH: serde_json::to_value(standard_generate(SEARCH_METHOD)).unwrap_or_default(),
        RANKING: { "candidates": fairpipe_core::stages::ranking::DEFAULT_CANDIDATES },
    });
    crate::convert::to_py(py, &defaults)
}
