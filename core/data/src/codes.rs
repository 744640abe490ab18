//! Category codes declared in a file: for each column, the integer code of each category name, so
//! data written with names is encoded exactly as a model was trained (the `load` stage's `codes`).
//!
//! The file is TOML, one table per column, one `"name" = code` line per category:
//!
//! ```toml
//! ["gender"]
//! "Female" = 0
//! "Male" = 1
//! ```
//!
//! A column's codes are distinct whole numbers without gaps (they may start anywhere: `1, 2, 3`);
//! every problem is reported as `file:line:col`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::ConfigProblem;
use crate::suggest::hint;
use crate::toml_spans::{self, LineIndex, Sp, Val};

/// The largest code magnitude accepted (2^53: every whole number up to it is exact in `f64`).
const MAX_CODE: i64 = 1 << 53;

/// One column's codes.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnCodes {
    /// The column.
    pub column: String,
    /// Each category name with its code, in code order (codes run from the first without gaps).
    pub names: Vec<(String, i64)>,
    /// 1-based line and column of the column's table in the file.
    pub at: (usize, usize),
    /// The codes file.
    pub file: PathBuf,
}

impl ColumnCodes {
    /// The code of category `name`.
    pub fn code(&self, name: &str) -> Option<i64> {
        self.names.iter().find(|(n, _)| n == name).map(|(_, c)| *c)
    }

    /// The smallest code.
    pub fn first(&self) -> i64 {
        self.names.first().map_or(0, |(_, c)| *c)
    }

    /// Where the column's codes are declared: `file:line:col`.
    pub fn at_text(&self) -> String {
        format!("{}:{}:{}", self.file.display(), self.at.0, self.at.1)
    }

    /// The categories with their codes, for messages (the first dozen).
    pub fn listing(&self) -> String {
        let shown: Vec<String> = self.names.iter().take(12).map(|(n, c)| format!("{n:?} = {c}")).collect();
        let more = if self.names.len() > 12 { format!(", … ({} more)", self.names.len() - 12) } else { String::new() };
        format!("{}{more}", shown.join(", "))
    }
}

/// A codes file, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Codes {
    /// The file.
    pub path: PathBuf,
    /// The columns, in file order.
    pub columns: Vec<ColumnCodes>,
}

impl Codes {
    /// The codes of column `name`, if the file declares it.
    pub fn column(&self, name: &str) -> Option<&ColumnCodes> {
        self.columns.iter().find(|c| c.column == name)
    }

    /// A problem for every column of the file that is not one of `columns` (the data's), with a
    /// did-you-mean.
    pub fn unknown_columns(&self, columns: &[String], source: &str) -> Vec<ConfigProblem> {
        let refs: Vec<&str> = columns.iter().map(String::as_str).collect();
        self.columns
            .iter()
            .filter(|c| !columns.contains(&c.column))
            .map(|c| ConfigProblem {
                file: self.path.clone(),
                line: c.at.0,
                col: c.at.1,
                message: format!(
                    "column `{}` is not a column of {source}{}; columns: {}",
                    c.column,
                    hint(&c.column, &refs),
                    columns.join(", ")
                ),
            })
            .collect()
    }
}

/// Read and check the codes file at `path`: every problem found, located in the file.
pub fn read(path: &Path) -> Result<Codes, Vec<ConfigProblem>> {
    let at = |line: usize, col: usize, message: String| ConfigProblem { file: path.to_path_buf(), line, col, message };
    let text = std::fs::read_to_string(path).map_err(|e| vec![at(1, 1, format!("cannot read the codes file: {e}"))])?;
    let lines = LineIndex::new(&text);
    let locate = |span: &std::ops::Range<usize>, message: String| {
        let (line, col) = lines.line_col(span.start);
        at(line, col, message)
    };
    let root = toml_spans::parse(&text).map_err(|(message, span)| vec![locate(&span, message)])?;
    let Val::Table(tables) = root.v else { return Err(vec![at(1, 1, "expected tables of codes".into())]) };
    let mut problems = Vec::new();
    let mut columns = Vec::new();
    for (column, value) in tables {
        let Val::Table(entries) = value.v else {
            problems.push(locate(
                &column.span,
                format!("`{}` should be a table of codes, one `\"name\" = code` line per category, under `[\"{}\"]`", column.v, column.v),
            ));
            continue;
        };
        match column_codes(path, &column, entries, &locate) {
            Ok(codes) => columns.push(codes),
            Err(mut found) => problems.append(&mut found),
        }
    }
    if columns.is_empty() && problems.is_empty() {
        problems.push(at(1, 1, "the file declares no column; write one `[\"column\"]` table of `\"name\" = code` lines".into()));
    }
    if problems.is_empty() {
        Ok(Codes { path: path.to_path_buf(), columns })
    } else {
        Err(problems)
    }
}

/// One column's table: integer codes, distinct, without gaps.
fn column_codes(
    file: &Path,
    column: &Sp<String>,
    entries: Vec<(Sp<String>, Sp<Val>)>,
    locate: &dyn Fn(&std::ops::Range<usize>, String) -> ConfigProblem,
) -> Result<ColumnCodes, Vec<ConfigProblem>> {
    let mut problems = Vec::new();
    let mut names: Vec<(String, i64)> = Vec::new();
    let mut by_code: BTreeMap<i64, String> = BTreeMap::new();
    for (name, value) in entries {
        let code = match value.v {
            Val::Int(c) if c.abs() <= MAX_CODE => c,
            Val::Int(c) => {
                problems.push(locate(&value.span, format!("code {c} of {:?} is too large (at most ±2^53)", name.v)));
                continue;
            }
            other => {
                problems
                    .push(locate(&value.span, format!("the code of {:?} should be a whole number, found {}", name.v, other.type_name())));
                continue;
            }
        };
        if name.v.trim() != name.v || name.v.is_empty() {
            problems.push(locate(
                &name.span,
                format!("category {:?}: data cells are read trimmed, so write the name without surrounding spaces", name.v),
            ));
        }
        if let Some(other) = by_code.insert(code, name.v.clone()) {
            problems.push(locate(
                &value.span,
                format!("code {code} is given to both {other:?} and {:?}; each code stands for one category", name.v),
            ));
        }
        names.push((name.v, code));
    }
    let (line, col) = {
        let p = locate(&column.span, String::new());
        (p.line, p.col)
    };
    if names.is_empty() {
        problems.push(locate(&column.span, format!("column `{}` lists no category; add `\"name\" = code` lines", column.v)));
    }
    if let (Some((&lo, _)), Some((&hi, _))) = (by_code.first_key_value(), by_code.last_key_value()) {
        if let Some(gap) = (lo..=hi).find(|c| !by_code.contains_key(c)) {
            problems.push(locate(
                &column.span,
                format!("the codes of column `{}` skip {gap} (they run from {lo} to {hi}); a column's codes have no gaps, as a search may try every code between them", column.v),
            ));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    names.sort_by_key(|(_, c)| *c);
    Ok(ColumnCodes { column: column.v.clone(), names, at: (line, col), file: file.to_path_buf() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> Result<Codes, Vec<ConfigProblem>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, text).unwrap();
        read(&path)
    }

    #[test]
    fn codes_are_read_in_code_order_from_any_start() {
        let codes = read_text("[\"age\"]\n\"26–45\" = 2\n\"17–25\" = 1\n\n[gender]\nFemale = 0\nMale = 1\n").unwrap();
        let age = codes.column("age").unwrap();
        assert_eq!(age.names, vec![("17–25".to_string(), 1), ("26–45".to_string(), 2)]);
        assert_eq!((age.first(), age.code("26–45"), age.code("nope")), (1, Some(2), None));
        assert_eq!(codes.column("gender").unwrap().at, (5, 2));
    }

    #[test]
    fn every_problem_is_located_in_the_codes_file() {
        let problems = read_text("[race]\nWhite = 0\nBlack = \"4\"\nOther = 0\nAsian = 3\n[gender]\n").unwrap_err();
        let shown: Vec<String> = problems.iter().map(|p| format!("{}:{}: {}", p.line, p.col, p.message)).collect();
        assert!(shown.iter().any(|p| p.starts_with("3:9:") && p.contains("whole number, found a string")), "{shown:?}");
        assert!(shown.iter().any(|p| p.starts_with("4:9:") && p.contains("given to both \"White\" and \"Other\"")), "{shown:?}");
        assert!(shown.iter().any(|p| p.starts_with("1:2:") && p.contains("skip 1 (they run from 0 to 3)")), "{shown:?}");
        assert!(shown.iter().any(|p| p.starts_with("6:2:") && p.contains("lists no category")), "{shown:?}");
        let syntax = read_text("[race]\nWhite = \n").unwrap_err();
        assert_eq!((syntax[0].line, syntax.len()), (2, 1), "{syntax:?}");
        let codes = read_text("[gendr]\nF = 0\n").unwrap();
        let unknown = codes.unknown_columns(&["gender".into(), "race".into()], "d.csv");
        assert!(unknown[0].message.contains("did you mean `gender`"), "{:?}", unknown[0]);
        assert_eq!((unknown[0].line, unknown[0].col), (1, 2));
    }
}
