//! The data layer's errors: a data file that cannot be read or does not fit the pipeline
//! ([`DataError`]), and one located problem in a pipeline or codes file ([`ConfigProblem`]).

use std::path::PathBuf;

/// One problem found in a pipeline file, located by line and column.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigProblem {
    /// The pipeline file.
    pub file: PathBuf,
    /// 1-based line of the offending key or value.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong and what was expected.
    pub message: String,
}

impl std::fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file.display(), self.line, self.col, self.message)
    }
}

/// Reading or interpreting a data file failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// The file could not be opened or parsed; check the path and the format.
    #[error("{path}: cannot read: {message}")]
    Read {
        /// The data file.
        path: PathBuf,
        /// What the reader said.
        message: String,
    },
    /// The header names a column twice; a reader would rename the second copy and use it as a
    /// feature. Rename or remove one of them.
    #[error("{path}: column `{column}` appears twice in the header (columns {first} and {second}); rename or remove one")]
    DuplicateColumn {
        /// The data file.
        path: PathBuf,
        /// The repeated name.
        column: String,
        /// 1-based position of its first occurrence.
        first: usize,
        /// 1-based position of the second.
        second: usize,
    },
    /// A row does not fit the file's structure (field count, quotes); fix the line.
    #[error("{path}: line {line}: {message}")]
    Structure {
        /// The data file.
        path: PathBuf,
        /// 1-based line where the record starts.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file is not UTF-8 text; convert it (e.g. `iconv -f latin1 -t utf-8`).
    #[error("{path}: line {line}, column {col}: invalid UTF-8 (byte 0x{byte:02x}); convert the file to UTF-8")]
    Utf8 {
        /// The data file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        col: usize,
        /// The first invalid byte.
        byte: u8,
    },
    /// The file has a header but no data rows; point the stage at a file with data.
    #[error("{path}: the file has no data rows")]
    Empty {
        /// The data file.
        path: PathBuf,
    },
    /// A column named in the pipeline does not exist in the file.
    #[error("{path}: no column `{column}` (wanted as {role}); the file has: {available}{hint}")]
    MissingColumn {
        /// The data file.
        path: PathBuf,
        /// The missing column.
        column: String,
        /// What the column was wanted for (label, protected attribute…).
        role: String,
        /// The columns that exist.
        available: String,
        /// A "did you mean" hint, possibly empty.
        hint: String,
    },
    /// A cell in a numeric column is not a number; fix the cell or declare the column categorical.
    #[error("{path}: line {line}, column `{column}`: expected a number, found {value:?}{}", blank_hint(.value))]
    NotNumeric {
        /// The data file.
        path: PathBuf,
        /// 1-based line in the file (the header is line 1).
        line: usize,
        /// The column.
        column: String,
        /// The offending cell.
        value: String,
    },
    /// A cell is empty or a missing-value marker while `missing = "reject"`; clean the data or set
    /// `missing = "drop"`.
    #[error("{path}: line {line}, column `{column}`: missing value (set missing = \"drop\" on the load stage to drop such rows)")]
    MissingValue {
        /// The data file.
        path: PathBuf,
        /// 1-based line in the file.
        line: usize,
        /// The column.
        column: String,
    },
    /// A column's values do not fit what the pipeline says about it.
    #[error("{path}: column `{column}`: {message}")]
    Column {
        /// The data file.
        path: PathBuf,
        /// The column.
        column: String,
        /// What was expected.
        message: String,
    },
}

/// What to do about an empty cell that was read as a value (a load whose `missing_values` does not
/// list the empty text): nothing for any other cell.
fn blank_hint(value: &str) -> &'static str {
    if value.is_empty() {
        "; an empty field is a value here because `missing_values` does not list \"\": add \"\" to it (with `missing = \"drop\"` to leave such rows out)"
    } else {
        ""
    }
}
