//! The first discriminatory pairs of each `verify` and `check` stage's table, decoded, with the
//! attributes where the instance and its counterpart differ marked.

use polars::prelude::*;
use serde::Serialize;

use crate::output::Table;

/// Cell `row` of column `col` as text.
pub(super) fn cell(frame: &DataFrame, col: &str, row: usize) -> String {
    match frame.column(col).ok().and_then(|c| c.get(row).ok()) {
        Some(AnyValue::String(s)) => s.to_string(),
        Some(AnyValue::Float64(f)) => format!("{f:.4}"),
        Some(v) => v.to_string(),
        None => String::new(),
    }
}

/// The first discriminatory pairs of a `verify` or `check` stage's table.
#[derive(Serialize)]
pub(super) struct PairsView {
    name: String,
    /// How many pairs are shown, of how many.
    shown: usize,
    total: usize,
    columns: Vec<String>,
    rows: Vec<PairRow>,
}

/// The instance's or its counterpart's row of a pair.
#[derive(Serialize)]
pub(super) struct PairRow {
    label: &'static str,
    cells: Vec<PairCell>,
    p: String,
}

/// A value of a pair's row, highlighted where the instance and its counterpart differ.
#[derive(Serialize)]
pub(super) struct PairCell {
    text: String,
    differs: bool,
}

/// Pairs shown per stage.
pub(super) const PAIRS_SHOWN: usize = 10;

/// The first pairs of each of the `sources` stages' tables (those that have rows).
pub(super) fn pairs(sources: &[&str], tables: &[(String, Table)]) -> Vec<PairsView> {
    let mut out = Vec::new();
    for n in sources {
        let Some(t) = tables.iter().find(|(s, _)| s == n).map(|(_, t)| &t.frame) else { continue };
        if t.height() == 0 {
            continue;
        }
        let names: Vec<String> = t.get_column_names().iter().map(|c| c.to_string()).collect();
        let columns: Vec<String> = names
            .iter()
            .filter(|c| !c.ends_with("_counterpart") && *c != "p" && *c != "p_counterpart" && *c != "origin")
            .cloned()
            .collect();
        let shown = t.height().min(PAIRS_SHOWN);
        let mut rows = Vec::new();
        for r in 0..shown {
            for (label, suffix, p) in [("instance", "", "p"), ("counterpart", "_counterpart", "p_counterpart")] {
                let cells = columns
                    .iter()
                    .map(|a| {
                        let counterpart_col = format!("{a}_counterpart");
                        let paired = names.contains(&counterpart_col);
                        let differs = paired && cell(t, a, r) != cell(t, &counterpart_col, r);
                        let col = if suffix.is_empty() || !paired { a.as_str() } else { counterpart_col.as_str() };
                        PairCell { text: cell(t, col, r), differs }
                    })
                    .collect();
                rows.push(PairRow { label, cells, p: cell(t, p, r) });
            }
        }
        out.push(PairsView { name: n.to_string(), shown, total: t.height(), columns, rows });
    }
    out
}
