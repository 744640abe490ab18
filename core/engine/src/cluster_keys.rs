//! What an audit's observations share, as cluster keys for [`crate::clustered`]: the first names
//! an LLM's prompts show (its `names` table), the document (a row's unprotected values: the same
//! résumé under other protected values is the same document) and the columns a stage's `cluster_by`
//! key names (a decision template, say).
//!
//! Clustering is on for an LLM, and wherever a stage names `cluster_by` columns; elsewhere the
//! intervals are the independent ones, unchanged. Documents are a way only where the rows are the
//! data's own (`check`, `pairwise`: the data is a sample of documents, and one document under two
//! protected values is one unit); an `estimate` draws its inputs independently from the domain,
//! so an input drawn twice is two independent draws, not a shared document — but its names are
//! still the few of the `names` table.

use fairpipe_models::llm::LlmModel;

use crate::check::Checker;
use crate::domain::Domain;
use crate::error::{Result, StageError};
use crate::oracle::Oracle;

/// The way an observation's names are keyed.
pub const NAMES: &str = "names";
/// The way the names on a pair's compared side are keyed.
pub const NAMES_VALUE_SIDE: &str = "names (compared side)";
/// The way the names on a pair's reference side are keyed.
pub const NAMES_REFERENCE_SIDE: &str = "names (reference side)";
/// The way an observation's document is keyed.
pub const DOCUMENT: &str = "document";

/// How to key a stage's observations by what they share.
pub struct ClusterKeys<'a> {
    checker: &'a Checker,
    llm: Option<&'a LlmModel>,
    /// Whether the prompts show names.
    names: bool,
    /// Columns whose values make up a row's document (the unprotected ones); empty where
    /// documents are not a way.
    document: Vec<usize>,
    /// The stage's `cluster_by` columns: (name, index).
    columns: Vec<(String, usize)>,
}

impl<'a> ClusterKeys<'a> {
    /// The keys for rows of `domain` checked by `checker` against `oracle`'s model, with the
    /// stage's `cluster_by` columns, and documents as a way when `documents` (the rows are the
    /// data's); `None` where nothing is clustered (neither an LLM nor columns). A column not in the
    /// domain is an error naming the key.
    pub fn new(
        oracle: &'a Oracle,
        domain: &Domain,
        checker: &'a Checker,
        columns: &[String],
        documents: bool,
    ) -> Result<Option<ClusterKeys<'a>>> {
        let llm = oracle.model().as_any().and_then(|m| m.downcast_ref::<LlmModel>());
        if llm.is_none() && columns.is_empty() {
            return Ok(None);
        }
        let named = cluster_columns(domain, columns)?;
        let names = llm.is_some_and(LlmModel::shows_names);
        let document = if documents {
            domain.attributes.iter().enumerate().filter(|(_, a)| !a.protected).map(|(i, _)| i).collect()
        } else {
            Vec::new()
        };
        let keys = ClusterKeys { checker, llm, names, document, columns: named };
        // Nothing shared (an LLM estimate without names or columns): the independent intervals.
        Ok((!keys.row_ways().is_empty()).then_some(keys))
    }

    /// The ways a row's observation (a flip) is clustered.
    pub fn row_ways(&self) -> Vec<String> {
        let mut ways = Vec::new();
        if self.names {
            ways.push(NAMES.to_string());
        }
        if !self.document.is_empty() {
            ways.push(DOCUMENT.to_string());
        }
        ways.extend(self.columns.iter().map(|(c, _)| c.clone()));
        ways
    }

    /// The keys of `row`'s observation: every name its variants' prompts show, its document, its
    /// `cluster_by` columns.
    pub fn row_keys(&self, row: &[f64]) -> Vec<String> {
        let mut keys = Vec::new();
        if self.names {
            let mut shown: Vec<String> = Vec::new();
            for combo in 0..self.checker.n_variants() {
                shown.extend(self.names_of(&self.checker.variant(row, combo)));
            }
            shown.sort();
            shown.dedup();
            keys.push(shown.join("|"));
        }
        if !self.document.is_empty() {
            keys.push(self.document_of(row));
        }
        keys.extend(self.columns.iter().map(|(_, i)| key_of(row[*i])));
        keys
    }

    /// The flips of `rows` (of `width` columns; `flips[i]` of row `i`, 1 or 0) summed per cluster
    /// of each row's keys ([`ClusterKeys::row_keys`]): a flip rate's clustered variance.
    pub fn flip_sums(&self, rows: &[f64], width: usize, flips: impl IntoIterator<Item = bool>) -> crate::clustered::ClusterSums {
        let mut sums = crate::clustered::ClusterSums::new(self.row_ways());
        for (row, flip) in rows.chunks_exact(width.max(1)).zip(flips) {
            sums.push(&self.row_keys(row), f64::from(u8::from(flip)));
        }
        sums
    }

    /// The ways a pair (a row at a compared value against the reference) is clustered.
    pub fn pair_ways(&self) -> Vec<String> {
        let mut ways = Vec::new();
        if self.names {
            ways.push(NAMES_VALUE_SIDE.to_string());
            ways.push(NAMES_REFERENCE_SIDE.to_string());
        }
        if !self.document.is_empty() {
            ways.push(DOCUMENT.to_string());
        }
        ways.extend(self.columns.iter().map(|(c, _)| c.clone()));
        ways
    }

    /// The keys of the pair of `row`'s variants `compared` and `reference` (combination indices).
    pub fn pair_keys(&self, row: &[f64], compared: usize, reference: usize) -> Vec<String> {
        self.keys_of_two(&self.checker.variant(row, compared), &self.checker.variant(row, reference))
    }

    /// The keys of a pair of rows `compared` and `reference` that differ in protected values only
    /// (the document and the `cluster_by` columns read off `compared`).
    pub fn keys_of_two(&self, compared: &[f64], reference: &[f64]) -> Vec<String> {
        let mut keys = Vec::new();
        if self.names {
            keys.push(self.names_of(compared).join("|"));
            keys.push(self.names_of(reference).join("|"));
        }
        if !self.document.is_empty() {
            keys.push(self.document_of(compared));
        }
        keys.extend(self.columns.iter().map(|(_, i)| key_of(compared[*i])));
        keys
    }

    /// Whether the prompts show names (an LLM with a `names` table).
    pub fn shows_names(&self) -> bool {
        self.names
    }

    /// The names `row`'s prompt shows.
    pub fn names_of(&self, row: &[f64]) -> Vec<String> {
        self.llm.map(|m| m.names_shown(row)).unwrap_or_default()
    }

    fn document_of(&self, row: &[f64]) -> String {
        self.document.iter().map(|&i| key_of(row[i])).collect::<Vec<_>>().join(",")
    }
}

/// The stage's `cluster_by` columns with their places in `domain`; a column not in it is an error
/// naming the key (at validate, through the stages' preflight, and again at the run).
pub fn cluster_columns(domain: &Domain, columns: &[String]) -> Result<Vec<(String, usize)>> {
    let mut named = Vec::with_capacity(columns.len());
    for column in columns {
        let Some(index) = domain.attributes.iter().position(|a| &a.name == column) else {
            let known: Vec<&str> = domain.attributes.iter().map(|a| a.name.as_str()).collect();
            return Err(StageError::cannot(
                "cluster_by",
                format!("`{column}` is not a column of the model's input (its columns: {})", known.join(", ")),
            ));
        };
        named.push((column.clone(), index));
    }
    Ok(named)
}

/// An encoded value as a key (its bits, so that every value keys apart).
fn key_of(value: f64) -> String {
    format!("{:x}", value.to_bits())
}
