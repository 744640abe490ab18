//! A load stage's `linked` key resolved against the loaded domain: the column's and the
//! protected attribute's values as written in the file, turned into their encoded values
//! ([`Link`]).

use std::collections::BTreeMap;

use super::label_value::LabelValue;
use crate::check::Link;
use crate::domain::{AttributeKind, Domain};
use crate::error::{Result, StageError};

/// `linked` (column → attribute → { column value → attribute value }) as links over `domain`.
/// Refused at `linked` when a column is not a categorical feature, or a value is not one the
/// column or the attribute takes (the values it does take are listed).
pub fn resolve(linked: &BTreeMap<String, BTreeMap<String, BTreeMap<String, LabelValue>>>, domain: &Domain) -> Result<Vec<Link>> {
    let mut links = Vec::new();
    for (column, attributes) in linked {
        let Some(c) = domain.index_of(column) else {
            return Err(StageError::cannot("linked", format!("linked.{column}: `{column}` is not a feature column")));
        };
        if !matches!(domain.attributes[c].kind, AttributeKind::Categorical { .. }) {
            return Err(StageError::cannot(
                "linked",
                format!(
                    "linked.{column}: `{column}` is read as {} values; a linked column must be categorical (declare it with columns.{column}.kind = \"categorical\")",
                    domain.attributes[c].kind_name()
                ),
            ));
        }
        for (attribute, values) in attributes {
            let Some(p) = domain.index_of(attribute) else {
                return Err(StageError::cannot("linked", format!("linked.{column}.{attribute}: `{attribute}` is not a feature column")));
            };
            let goes_with = values
                .iter()
                .map(|(value, with)| {
                    let at = format!("linked.{column}.{attribute}");
                    Ok((code_of(domain, c, value, &at)?, code_of(domain, p, &with.text(), &at)?))
                })
                .collect::<Result<Vec<_>>>()?;
            links.push(Link { protected: p, column: c, goes_with });
        }
    }
    Ok(links)
}

/// The encoded value of `text` in attribute `i`: the grid point that decodes to it.
fn code_of(domain: &Domain, i: usize, text: &str, at: &str) -> Result<f64> {
    let a = &domain.attributes[i];
    let grid = if a.grid_len() <= 10_000 { a.grid() } else { Vec::new() };
    if let Some(&v) = grid.iter().find(|&&v| a.decode(v) == text) {
        return Ok(v);
    }
    if let (false, Ok(number)) = (matches!(a.kind, AttributeKind::Categorical { .. }), text.parse::<f64>()) {
        if let Some(&v) = grid.iter().find(|&&v| v == number) {
            return Ok(v);
        }
    }
    let shown: Vec<String> = grid.iter().take(30).map(|&v| a.decode(v)).collect();
    Err(StageError::cannot(
        "linked",
        format!(
            "{at}: {text:?} is not a value of `{}`; its values: {}{}",
            a.name,
            shown.join(", "),
            if grid.len() > 30 { ", …" } else { "" }
        ),
    ))
}
