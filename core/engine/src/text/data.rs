//! Text data: a column of texts and a label, read with Polars (CSV or Parquet, as `load` reads
//! tables). Texts are kept exactly as written; a row whose text is empty or missing is dropped and
//! counted, a missing label is an error naming its record.

use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::data::{encode_label, read_frame, split_of_cell, Split};
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
    /// The split of each text, when read from a split column.
    pub split: Option<Vec<Split>>,
}

impl TextData {
    /// Read `path`: texts from column `text`, classes from `label` (`favourable` names class 1; a
    /// 0/1 label defaults to 1).
    pub fn load(path: &Path, text: &str, label: &str, favourable: Option<&str>) -> Result<Self, DataError> {
        Self::load_with_split(path, text, label, favourable, None)
    }

    /// [`load`](Self::load), with each text's split read from `split_column` (`train`, `val` or
    /// `test`) when given.
    pub fn load_with_split(
        path: &Path,
        text: &str,
        label: &str,
        favourable: Option<&str>,
        split_column: Option<&str>,
    ) -> Result<Self, DataError> {
        let df = read_frame(path, b',', None)?;
        if df.height() == 0 {
            return Err(DataError::Empty { path: path.to_path_buf() });
        }
        let names: Vec<String> = df.get_column_names().iter().map(|s| s.to_string()).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let split_role = split_column.map(|c| (c, "the split"));
        for (column, role) in [(text, "the text"), (label, "the label")].into_iter().chain(split_role) {
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
        let splits = split_column.map(strings).transpose()?;
        let mut kept_texts = Vec::with_capacity(texts.len());
        let mut kept_labels = Vec::with_capacity(texts.len());
        let mut kept_splits = Vec::new();
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
                    if let (Some(column), Some(cells)) = (split_column, &splits) {
                        let split = split_of_cell(cells[row].as_deref().unwrap_or("")).map_err(|m| DataError::Column {
                            path: path.to_path_buf(),
                            column: column.to_string(),
                            message: format!("record {}: {m}", row + 1),
                        })?;
                        kept_splits.push(split);
                    }
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
            split: split_column.map(|_| kept_splits),
        })
    }

    /// The texts as string slices.
    pub fn text_refs(&self) -> Vec<&str> {
        self.texts.iter().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn a_split_column_gives_each_kept_text_its_split() {
        let (_dir, path) = write("text,label,part\n\"a, b\",1,train\n\"\",0,test\nc,0,TEST\nd,1,val\n");
        let data = TextData::load_with_split(&path, "text", "label", None, Some("part")).unwrap();
        // The empty text is dropped with its split.
        assert_eq!(data.texts, ["a, b", "c", "d"]);
        assert_eq!(data.split, Some(vec![Split::Train, Split::Test, Split::Val]));
        assert_eq!(TextData::load(&path, "text", "label", None).unwrap().split, None);
    }

    #[test]
    fn a_bad_split_cell_names_the_record_and_what_was_expected() {
        let (_dir, path) = write("text,label,part\na,1,train\nb,0,holdout\n");
        let err = TextData::load_with_split(&path, "text", "label", None, Some("part")).unwrap_err().to_string();
        assert!(err.contains("part") && err.contains("record 2: expected train, val or test, found \"holdout\""), "{err}");
        let err = TextData::load_with_split(&path, "text", "label", None, Some("prt")).unwrap_err().to_string();
        assert!(err.contains("prt") && err.contains("the split"), "{err}");
    }
}
