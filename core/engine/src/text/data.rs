//! Text data: a column of texts and a label, read with Polars (CSV or Parquet, as `load` reads
//! tables). Texts are kept exactly as written; a row whose text is empty or missing is dropped and
//! counted, a missing label is an error naming its record.

use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::data::{encode_label, read_frame};
use crate::error::DataError;

/// Texts with a class per text (1 for the favourable label value).
#[derive(Debug, Clone)]
pub struct TextData {
    /// Where it was read from.
    pub path: PathBuf,
    /// The text column's name.
    pub text_name: String,
    /// The label column's name.
    pub label_name: String,
    /// The texts, in file order.
    pub texts: Vec<String>,
    /// Class per text.
    pub y: Vec<u8>,
    /// How the two classes are written: `[class 0, class 1 (favourable)]`.
    pub label_values: [String; 2],
    /// Rows dropped for an empty or missing text.
    pub dropped_rows: usize,
    /// Whether class 1 is a 0/1 label's 0 (`favourable = 0`): a loaded model's P(label = 1) is
    /// then read as 1 − P(class 1).
    pub label_flipped: bool,
}

impl TextData {
    /// Read `path`: texts from column `text`, classes from `label` (`favourable` names class 1; a
    /// 0/1 label defaults to 1).
    pub fn load(path: &Path, text: &str, label: &str, favourable: Option<&str>) -> Result<Self, DataError> {
        let df = read_frame(path, b',', None)?;
        if df.height() == 0 {
            return Err(DataError::Empty { path: path.to_path_buf() });
        }
        let names: Vec<String> = df.get_column_names().iter().map(|s| s.to_string()).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        for (column, role) in [(text, "the text"), (label, "the label")] {
            if !names.iter().any(|n| n == column) {
                return Err(DataError::MissingColumn {
                    path: path.to_path_buf(),
                    column: column.to_string(),
                    role: role.to_string(),
                    available: names.join(", "),
                    hint: crate::suggest::hint(column, &refs),
                });
            }
        }
        let strings = |name: &str| -> Result<Vec<Option<String>>, DataError> {
            let err = |e: PolarsError| DataError::Read { path: path.to_path_buf(), message: e.to_string() };
            let col = df.column(name).map_err(err)?.cast(&DataType::String).map_err(err)?;
            Ok(col.str().map_err(err)?.iter().map(|c| c.map(str::to_string)).collect())
        };
        let (texts, labels) = (strings(text)?, strings(label)?);
        let mut kept_texts = Vec::with_capacity(texts.len());
        let mut kept_labels = Vec::with_capacity(texts.len());
        let mut dropped_rows = 0;
        for (row, (t, l)) in texts.into_iter().zip(labels).enumerate() {
            let Some(l) = l.map(|l| l.trim().to_string()).filter(|l| !l.is_empty()) else {
                return Err(DataError::Column {
                    path: path.to_path_buf(),
                    column: label.to_string(),
                    message: format!("record {} has no label; every text needs one", row + 1),
                });
            };
            match t.filter(|t| !t.trim().is_empty()) {
                Some(t) => {
                    kept_texts.push(t);
                    kept_labels.push(l);
                }
                None => dropped_rows += 1,
            }
        }
        if kept_texts.is_empty() {
            return Err(DataError::Empty { path: path.to_path_buf() });
        }
        let cells: Vec<&str> = kept_labels.iter().map(String::as_str).collect();
        let (y, label_values, label_flipped) = encode_label(path, label, &cells, favourable)?;
        Ok(TextData {
            path: path.to_path_buf(),
            text_name: text.to_string(),
            label_name: label.to_string(),
            texts: kept_texts,
            y,
            label_values,
            dropped_rows,
            label_flipped,
        })
    }

    /// The texts as string slices.
    pub fn text_refs(&self) -> Vec<&str> {
        self.texts.iter().map(String::as_str).collect()
    }
}
