//! The data layer: reads CSV or Parquet with Polars into a [`Dataset`] — a [`Domain`], an encoded
//! `f64` feature matrix, a binary label and a train/validation/test split.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ndarray::Array2;
use polars::prelude::*;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::codes::{Codes, ColumnCodes};
use crate::domain::{Attribute, AttributeKind, Domain};
use crate::error::DataError;
use crate::suggest::hint;

/// Which part of the data a row belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// Training rows (also the seed pool of the generators).
    Train,
    /// Validation rows (held out, unused by default).
    Val,
    /// Test rows: accuracy is reported on them.
    Test,
}

/// How rows are assigned to train and test.
#[derive(Debug, Clone, PartialEq)]
pub enum SplitSpec {
    /// A column holding `train`, `val`/`validation` or `test` per row.
    Column(String),
    /// A seeded random share of the rows goes to test.
    Fraction {
        /// Share of rows in the test split, in `[0, 1)`.
        test: f64,
        /// Shuffle seed.
        seed: u64,
    },
}

/// What to do with rows that have a missing value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingPolicy {
    /// Stop with an error naming the first missing cell.
    Reject,
    /// Drop rows with any missing value in a used column.
    Drop,
}

/// A user's override of what fairpipe infers about one column.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnOverride {
    /// `integer`, `continuous` or `categorical`.
    pub kind: Option<String>,
    /// Lower bound of the encoded value.
    pub min: Option<f64>,
    /// Upper bound of the encoded value.
    pub max: Option<f64>,
    /// Grid step.
    pub step: Option<f64>,
    /// Category levels in encoding order.
    pub levels: Option<Vec<String>>,
}

/// Everything the `load` stage needs to read a file.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSpec {
    /// CSV or Parquet file (by extension: `.parquet`/`.pq` is Parquet, anything else CSV).
    pub path: PathBuf,
    /// The label column (`None`: a file with no label, such as a decision log audited over its own
    /// columns; the dataset is then [`Dataset::labelled`] `false`).
    pub label: Option<String>,
    /// The favourable label value as written in the file (default `1` for 0/1 labels).
    pub favourable: Option<String>,
    /// Protected attribute names.
    pub protected: Vec<String>,
    /// Columns to ignore (ids, row numbers).
    pub drop: Vec<String>,
    /// Feature columns to keep, in this order (default: every other column in file order).
    pub features: Option<Vec<String>>,
    /// Train/test assignment.
    pub split: SplitSpec,
    /// Missing-value handling.
    pub missing: MissingPolicy,
    /// Cell texts that mean "missing" (after trimming spaces).
    pub missing_markers: Vec<String>,
    /// CSV field separator.
    pub separator: u8,
    /// Per-column overrides.
    pub columns: BTreeMap<String, ColumnOverride>,
    /// Declared category codes (the `load` stage's `codes` file): a column they name is encoded
    /// with them, and the label's favourable value gets its code.
    pub codes: Option<Codes>,
}

impl LoadSpec {
    /// A spec with the defaults for everything but the path and label.
    pub fn new(path: impl Into<PathBuf>, label: impl Into<String>) -> Self {
        LoadSpec {
            path: path.into(),
            label: Some(label.into()),
            favourable: None,
            protected: Vec::new(),
            drop: Vec::new(),
            features: None,
            split: SplitSpec::Fraction { test: 0.2, seed: 0 },
            missing: MissingPolicy::Reject,
            missing_markers: vec![String::new(), "?".into(), "NA".into()],
            separator: b',',
            columns: BTreeMap::new(),
            codes: None,
        }
    }
}

/// A loaded, encoded dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Where it was read from.
    pub path: PathBuf,
    /// The feature domain (bounds inferred from all rows, then overridden).
    pub domain: Domain,
    /// Encoded features, one row per record.
    pub x: Array2<f64>,
    /// Class per row: 1 for the favourable label value, else 0. Every model's P(class 1) is the
    /// probability of the favourable outcome. All 0 when the dataset is not [`labelled`](Self::labelled).
    pub y: Vec<u8>,
    /// Whether the file had a label: `false` for a dataset read with no label column (a decision
    /// log), whose `y`, `label_name` and `label_values` mean nothing and which no stage reading a
    /// label may take.
    pub labelled: bool,
    /// Split per row.
    pub split: Vec<Split>,
    /// Label column name.
    pub label_name: String,
    /// How the two classes are written in the file: `[class 0 (unfavourable), class 1 (favourable)]`.
    pub label_values: [String; 2],
    /// Whether the class numbers are the opposite of a 0/1 label's own values (`favourable = 0`):
    /// a loaded model that outputs P(label = 1) must then be read as 1 − P(favourable).
    pub label_flipped: bool,
    /// The favourable label value's code when a codes file declares the label's codes: a model
    /// trained on that encoding names the favourable class by this number.
    pub label_code: Option<i64>,
    /// Per feature: whether its categories have declared codes (a model's numeric input then
    /// receives the code).
    pub coded: Vec<bool>,
    /// Rows dropped for missing values.
    pub dropped_rows: usize,
    /// Columns changed with a protected attribute whenever a counterpart is made (a load stage's
    /// `linked`); empty unless the stage sets them.
    pub links: Vec<fairpipe_abi::variants::Link>,
}

impl Dataset {
    /// Indices of the rows in `split`.
    pub fn rows_in(&self, split: Split) -> Vec<usize> {
        (0..self.y.len()).filter(|&i| self.split[i] == split).collect()
    }

    /// Features and labels of the rows in `split`.
    pub fn subset(&self, split: Split) -> (Array2<f64>, Vec<u8>) {
        let rows = self.rows_in(split);
        let x = self.x.select(ndarray::Axis(0), &rows);
        let y = rows.iter().map(|&i| self.y[i]).collect();
        (x, y)
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }
}

/// Column names of a data file, without reading its rows.
pub fn column_names(path: &Path, separator: u8) -> Result<Vec<String>, DataError> {
    if !is_parquet(path) && path.is_file() {
        return crate::csv_check::header(path, separator);
    }
    let df = read_frame(path, separator, Some(0))?;
    Ok(df.get_column_names().iter().map(|s| s.to_string()).collect())
}

/// One column of a data file as found in its cells, before any label or kind is chosen (what
/// `fairpipe init` proposes a pipeline from).
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnProfile {
    /// The column's name (trimmed).
    pub name: String,
    /// How many distinct cell texts it has (trimmed, missing markers excluded).
    pub distinct: usize,
    /// Each distinct text with its number of rows, sorted by text, when there are at most
    /// [`PROFILE_LEVELS`] of them (else empty).
    pub levels: Vec<(String, usize)>,
    /// Whether every cell that is not missing is a finite number.
    pub numeric: bool,
    /// Whether every cell that is not missing is a whole number.
    pub integer: bool,
    /// The smallest and largest number when `numeric` (and some cell is not missing).
    pub range: Option<(f64, f64)>,
    /// Cells that are missing (empty or a missing marker).
    pub missing: usize,
}

/// The most distinct values a [`ColumnProfile`] lists.
pub const PROFILE_LEVELS: usize = 50;

/// Profile every column of the file at `path` (CSV, after the same structural pre-scan as
/// [`load`], or Parquet): the number of rows and each column's [`ColumnProfile`], cells equal to
/// one of `missing_markers` counted as missing.
pub fn profile(path: &Path, separator: u8, missing_markers: &[String]) -> Result<(usize, Vec<ColumnProfile>), DataError> {
    let df = read_frame_as(path, separator, None, blank_is_missing(missing_markers))?;
    if df.height() == 0 {
        return Err(DataError::Empty { path: path.to_path_buf() });
    }
    let names: Vec<String> = df.get_column_names().iter().map(|s| s.to_string()).collect();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let cells = text_cells(&df, &name, missing_markers, path)?;
        let mut counts: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        let (mut numeric, mut integer, mut range) = (true, true, None::<(f64, f64)>);
        let mut missing = 0;
        for cell in &cells {
            let Some(text) = cell.as_deref() else {
                missing += 1;
                continue;
            };
            *counts.entry(text).or_default() += 1;
            match text.parse::<f64>() {
                Ok(v) if v.is_finite() => {
                    integer &= v.fract() == 0.0;
                    range = Some(range.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
                }
                _ => (numeric, integer) = (false, false),
            }
        }
        let distinct = counts.len();
        let mut levels: Vec<(String, usize)> =
            if distinct <= PROFILE_LEVELS { counts.into_iter().map(|(t, n)| (t.to_string(), n)).collect() } else { Vec::new() };
        levels.sort();
        out.push(ColumnProfile { name, distinct, levels, numeric, integer, range: if numeric { range } else { None }, missing });
    }
    Ok((df.height(), out))
}

/// Whether an empty CSV field is a missing value under `missing_markers` (`missing_values` as
/// written: only when it lists the empty text).
fn blank_is_missing(missing_markers: &[String]) -> bool {
    missing_markers.iter().any(String::is_empty)
}

/// Read a file's columns as text cells (`None` for nulls; an empty CSV field is one).
pub fn read_frame(path: &Path, separator: u8, n_rows: Option<usize>) -> Result<DataFrame, DataError> {
    read_frame_as(path, separator, n_rows, true)
}

/// Read a file's columns as text cells as [`read_frame`] does, an empty CSV field read as a null
/// only when `blank_is_null` (else as the empty text: a load whose `missing_values` leaves the
/// empty text out keeps it as a value).
pub fn read_frame_as(path: &Path, separator: u8, n_rows: Option<usize>, blank_is_null: bool) -> Result<DataFrame, DataError> {
    let err = |e: PolarsError| DataError::Read { path: path.to_path_buf(), message: e.to_string() };
    if !path.exists() {
        return Err(DataError::Read { path: path.to_path_buf(), message: "no such file".into() });
    }
    if path.is_dir() {
        return Err(DataError::Read {
            path: path.to_path_buf(),
            message: "is a folder, not a data file; name a CSV or Parquet file".into(),
        });
    }
    let mut df = if is_parquet(path) {
        let file = std::fs::File::open(path).map_err(|e| DataError::Read { path: path.to_path_buf(), message: e.to_string() })?;
        let mut reader = ParquetReader::new(file);
        if let Some(n) = n_rows {
            reader = reader.with_slice(Some((0, n)));
        }
        reader.finish().map_err(err)?
    } else {
        if n_rows.is_none() {
            crate::csv_check::scan(path, separator)?;
        }
        CsvReadOptions::default()
            .with_has_header(true)
            .with_infer_schema_length(Some(0))
            .with_n_rows(n_rows)
            .map_parse_options(|o| o.with_separator(separator).with_missing_is_null(blank_is_null))
            .try_into_reader_with_file_path(Some(path.to_path_buf()))
            .map_err(err)?
            .finish()
            .map_err(err)?
    };
    // Headers written as "a, b, c" (UCI Adult) carry spaces: names are matched trimmed.
    let trimmed: Vec<String> = df.get_column_names().iter().map(|n| n.trim().to_string()).collect();
    df.set_column_names(&trimmed).map_err(err)?;
    Ok(df)
}

/// A seeded random share `test` of `n` rows in the test split, the rest in train (`load`'s
/// `test_fraction`, `load_text`'s).
pub fn fraction_split(n: usize, test: f64, seed: u64) -> Vec<Split> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed));
    let n_test = ((n as f64) * test).round() as usize;
    let mut split = vec![Split::Train; n];
    for &i in &order[..n_test.min(n)] {
        split[i] = Split::Test;
    }
    split
}

/// Whether `path` is read as Parquet (by its extension), else as CSV.
fn is_parquet(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    ext.eq_ignore_ascii_case("parquet") || ext.eq_ignore_ascii_case("pq")
}

/// Text cells of one column, trimmed, with missing markers turned into `None`.
fn text_cells(df: &DataFrame, name: &str, markers: &[String], path: &Path) -> Result<Vec<Option<String>>, DataError> {
    let err = |e: PolarsError| DataError::Read { path: path.to_path_buf(), message: e.to_string() };
    let col = df.column(name).map_err(err)?;
    let col = col.cast(&DataType::String).map_err(err)?;
    let strings = col.str().map_err(err)?;
    Ok(strings.iter().map(|c| c.map(|s| s.trim().trim_matches('"').to_string()).filter(|s| !markers.iter().any(|m| m == s))).collect())
}

/// The split a split column's cell names: `train`, `val` (`valid`, `validation`) or `test`, in any
/// case; otherwise what was expected.
pub fn split_of_cell(cell: &str) -> Result<Split, String> {
    match cell.trim().to_ascii_lowercase().as_str() {
        "train" => Ok(Split::Train),
        "val" | "valid" | "validation" => Ok(Split::Val),
        "test" => Ok(Split::Test),
        other => Err(format!("expected train, val or test, found {other:?}")),
    }
}

/// 1-based line of data row `row` in a CSV with a header (or the 1-based row of a Parquet file).
fn line_of(path: &Path, row: usize) -> usize {
    if is_parquet(path) {
        row + 1
    } else {
        row + 2
    }
}

/// Read and encode a dataset as `spec` says.
pub fn load(spec: &LoadSpec) -> Result<Dataset, DataError> {
    let df = read_frame_as(&spec.path, spec.separator, None, blank_is_missing(&spec.missing_markers))?;
    load_frame(df, spec)
}

/// Encode a table already in memory as `spec` says (its `path` only names the table in messages);
/// cells are read as text, as from a CSV file.
pub fn load_frame(df: DataFrame, spec: &LoadSpec) -> Result<Dataset, DataError> {
    let path = spec.path.as_path();
    if df.height() == 0 {
        return Err(DataError::Empty { path: path.to_path_buf() });
    }
    let names: Vec<String> = df.get_column_names().iter().map(|s| s.to_string()).collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let require = |column: &str, role: &str| -> Result<(), DataError> {
        if names.iter().any(|n| n == column) {
            Ok(())
        } else {
            Err(DataError::MissingColumn {
                path: path.to_path_buf(),
                column: column.to_string(),
                role: role.to_string(),
                available: names.join(", "),
                hint: hint(column, &name_refs),
            })
        }
    };
    if let Some(label) = &spec.label {
        require(label, "the label")?;
    }
    for p in &spec.protected {
        require(p, "a protected attribute")?;
    }
    for d in &spec.drop {
        require(d, "a column to drop")?;
    }
    for c in spec.columns.keys() {
        require(c, "a column override")?;
    }
    let codes_of = |column: &str| spec.codes.as_ref().and_then(|c| c.column(column));
    for c in spec.codes.iter().flat_map(|c| &c.columns) {
        require(&c.column, "a column of the codes file")?;
    }
    let split_column = match &spec.split {
        SplitSpec::Column(c) => {
            require(c, "the split column")?;
            Some(c.clone())
        }
        SplitSpec::Fraction { .. } => None,
    };
    let features: Vec<String> = match &spec.features {
        Some(f) => {
            for c in f {
                require(c, "a feature")?;
            }
            f.clone()
        }
        None => names
            .iter()
            .filter(|n| Some(*n) != spec.label.as_ref() && Some(*n) != split_column.as_ref() && !spec.drop.contains(n))
            .cloned()
            .collect(),
    };
    for p in &spec.protected {
        if !features.contains(p) {
            return Err(DataError::Column {
                path: path.to_path_buf(),
                column: p.clone(),
                message: "is protected but not among the features (it is dropped or not listed)".into(),
            });
        }
    }

    // Cells of every used column, then the rows to keep.
    let mut used: Vec<String> = features.clone();
    used.extend(spec.label.clone());
    used.extend(split_column.clone());
    let mut cells: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
    for c in &used {
        cells.insert(c.clone(), text_cells(&df, c, &spec.missing_markers, path)?);
    }
    let n_all = df.height();
    let mut keep = Vec::with_capacity(n_all);
    // Rows index several columns at once, so a range loop is the clear form here.
    #[allow(clippy::needless_range_loop)]
    for row in 0..n_all {
        let missing = used.iter().find(|c| cells[*c][row].is_none());
        match (missing, spec.missing) {
            (None, _) => keep.push(row),
            (Some(_), MissingPolicy::Drop) => {}
            (Some(c), MissingPolicy::Reject) => {
                return Err(DataError::MissingValue { path: path.to_path_buf(), line: line_of(path, row), column: c.clone() })
            }
        }
    }
    if keep.is_empty() {
        return Err(DataError::Empty { path: path.to_path_buf() });
    }
    let cell = |c: &str, row: usize| -> &str { cells[c][row].as_deref().unwrap_or("") };

    // Features.
    let mut attributes = Vec::with_capacity(features.len());
    let mut x = Array2::<f64>::zeros((keep.len(), features.len()));
    for (j, name) in features.iter().enumerate() {
        let over = spec.columns.get(name).cloned().unwrap_or_default();
        let texts: Vec<&str> = keep.iter().map(|&r| cell(name, r)).collect();
        let (attr, values) = match codes_of(name) {
            Some(codes) => encode_codes(path, codes, &texts, &keep, spec.protected.contains(name))?,
            None => encode_column(path, name, &texts, &keep, &over, spec.protected.contains(name))?,
        };
        for (i, v) in values.into_iter().enumerate() {
            x[[i, j]] = v;
        }
        attributes.push(attr);
    }
    for a in attributes.iter().filter(|a| a.protected) {
        if a.grid_len() < 2 {
            return Err(DataError::Column {
                path: path.to_path_buf(),
                column: a.name.clone(),
                message: "is protected but takes a single value; a protected attribute needs at least two".into(),
            });
        }
    }

    // Label.
    let EncodedLabel { y, values: label_values, flipped: label_flipped, code: label_code } = match &spec.label {
        Some(label) => {
            let labels: Vec<&str> = keep.iter().map(|&r| cell(label, r)).collect();
            encode_label_with_codes(path, label, &labels, spec.favourable.as_deref(), codes_of(label))?
        }
        None => EncodedLabel { y: vec![0; keep.len()], values: [String::new(), String::new()], flipped: false, code: None },
    };
    // Split.
    let split = match &spec.split {
        SplitSpec::Column(c) => keep
            .iter()
            .map(|&r| {
                split_of_cell(cell(c, r)).map_err(|m| DataError::Column {
                    path: path.to_path_buf(),
                    column: c.clone(),
                    message: format!("line {}: {m}", line_of(path, r)),
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        SplitSpec::Fraction { test, seed } => fraction_split(keep.len(), *test, *seed),
    };

    Ok(Dataset {
        path: path.to_path_buf(),
        domain: Domain { attributes },
        x,
        y,
        split,
        label_name: spec.label.clone().unwrap_or_default(),
        labelled: spec.label.is_some(),
        label_values,
        label_flipped,
        label_code,
        coded: features.iter().map(|f| codes_of(f).is_some()).collect(),
        dropped_rows: n_all - keep.len(),
        links: Vec::new(),
    })
}

/// The largest magnitude up to which `f64` represents every whole number (2^53); integer columns
/// must stay within it.
pub const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// Infer (or take from `over`) a column's kind and bounds, and encode its cells.
fn encode_column(
    path: &Path,
    name: &str,
    texts: &[&str],
    rows: &[usize],
    over: &ColumnOverride,
    protected: bool,
) -> Result<(Attribute, Vec<f64>), DataError> {
    let column_err = |message: String| DataError::Column { path: path.to_path_buf(), column: name.to_string(), message };
    let parsed: Vec<Option<f64>> = texts.iter().map(|t| t.parse::<f64>().ok().filter(|v| v.is_finite())).collect();
    let n_numeric = parsed.iter().filter(|p| p.is_some()).count();
    let kind = match over.kind.as_deref() {
        Some(k @ ("integer" | "continuous" | "categorical")) => k.to_string(),
        Some(other) => return Err(column_err(format!("unknown kind {other:?}; expected integer, continuous or categorical"))),
        None if over.levels.is_some() => "categorical".into(),
        None if n_numeric == texts.len() => {
            if parsed.iter().all(|v| v.is_some_and(|v| v.fract() == 0.0)) {
                "integer".into()
            } else {
                "continuous".into()
            }
        }
        // Mostly numbers with a few stray cells: a broken numeric column, not a categorical one.
        None if n_numeric * 2 > texts.len() => {
            let bad = parsed.iter().position(|p| p.is_none()).unwrap_or(0);
            return Err(DataError::NotNumeric {
                path: path.to_path_buf(),
                line: line_of(path, rows[bad]),
                column: name.to_string(),
                value: texts[bad].to_string(),
            });
        }
        None => "categorical".into(),
    };
    if kind == "categorical" {
        let levels: Vec<String> = match &over.levels {
            Some(l) => l.clone(),
            None => {
                let mut l: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
                l.sort();
                l.dedup();
                l
            }
        };
        let index: BTreeMap<&str, usize> = levels.iter().enumerate().map(|(i, l)| (l.as_str(), i)).collect();
        let mut values = Vec::with_capacity(texts.len());
        for (i, t) in texts.iter().enumerate() {
            match index.get(t) {
                Some(&k) => values.push(k as f64),
                None => {
                    return Err(column_err(format!(
                        "line {}: value {t:?} is not among the declared levels {levels:?}",
                        line_of(path, rows[i])
                    )))
                }
            }
        }
        return Ok((Attribute::categorical(name, levels, protected), values));
    }
    let mut values = Vec::with_capacity(texts.len());
    for (i, p) in parsed.iter().enumerate() {
        match p {
            Some(v) => values.push(*v),
            None => {
                return Err(DataError::NotNumeric {
                    path: path.to_path_buf(),
                    line: line_of(path, rows[i]),
                    column: name.to_string(),
                    value: texts[i].to_string(),
                })
            }
        }
    }
    if kind == "integer" {
        if let Some(i) = values.iter().position(|v| v.abs() > MAX_EXACT_INTEGER) {
            return Err(column_err(format!(
                "line {}: integer {} is beyond ±2^53 ({MAX_EXACT_INTEGER}), where not every whole number can be represented; rescale the column or declare it continuous",
                line_of(path, rows[i]),
                texts[i]
            )));
        }
    }
    let data_min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let data_max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    for (key, bound) in [("min", over.min), ("max", over.max), ("step", over.step)] {
        if bound.is_some_and(|b| !b.is_finite()) {
            return Err(column_err(format!("columns.{name}.{key} must be a finite number")));
        }
    }
    let lower = over.min.unwrap_or(data_min);
    let upper = over.max.unwrap_or(data_max);
    if upper < lower {
        return Err(column_err(format!("bounds are inverted: min {lower} > max {upper}")));
    }
    if !(upper - lower).is_finite() {
        return Err(column_err(format!("values span [{lower}, {upper}], a range too wide to compute with; rescale the column")));
    }
    // Declared bounds must hold the data: a value outside them would be audited as a value the
    // model never sees.
    if let Some(i) = values.iter().position(|&v| v < lower || v > upper) {
        return Err(column_err(format!(
            "line {}: value {} lies outside the declared bounds [{lower}, {upper}] (columns.{name}); widen min/max or fix the cell",
            line_of(path, rows[i]),
            texts[i]
        )));
    }
    let (kind, default_step) = if kind == "integer" {
        (AttributeKind::Integer, 1.0)
    } else {
        let range = upper - lower;
        (AttributeKind::Continuous, if range >= 10.0 || range == 0.0 { 1.0 } else { range / 10.0 })
    };
    let step = over.step.unwrap_or(default_step);
    if step.is_nan() || step <= 0.0 {
        return Err(column_err(format!("step must be positive, found {step}")));
    }
    let attr = Attribute { name: name.into(), kind, lower, upper, step, protected };
    Ok((attr, values))
}

/// Encode a column with its declared codes: categorical, one level per code from the first code
/// on; a cell without a code is refused, naming its line and the codes file.
fn encode_codes(
    path: &Path,
    codes: &ColumnCodes,
    texts: &[&str],
    rows: &[usize],
    protected: bool,
) -> Result<(Attribute, Vec<f64>), DataError> {
    let mut values = Vec::with_capacity(texts.len());
    for (i, t) in texts.iter().enumerate() {
        let Some(code) = codes.code(t) else {
            return Err(DataError::Column {
                path: path.to_path_buf(),
                column: codes.column.clone(),
                message: format!(
                    "line {}: value {t:?} has no code in {} (its codes: {}); add it there or fix the cell",
                    line_of(path, rows[i]),
                    codes.at_text(),
                    codes.listing()
                ),
            });
        };
        values.push(code as f64);
    }
    let levels: Vec<String> = codes.names.iter().map(|(n, _)| n.clone()).collect();
    let lower = codes.first() as f64;
    let upper = lower + levels.len().saturating_sub(1) as f64;
    let attr = Attribute { name: codes.column.clone(), kind: AttributeKind::Categorical { levels }, lower, upper, step: 1.0, protected };
    Ok((attr, values))
}

/// A label column encoded: the fields of [`Dataset`] it gives.
struct EncodedLabel {
    y: Vec<u8>,
    values: [String; 2],
    flipped: bool,
    code: Option<i64>,
}

/// The label encoded as [`encode_label`] does, with the favourable value's code when a codes file
/// declares the label's codes (a model trained on the codes gives P(code 1): a favourable value
/// coded 0 is then read as its complement, as for a 0/1 label with `favourable = 0`).
fn encode_label_with_codes(
    path: &Path,
    label: &str,
    cells: &[&str],
    favourable: Option<&str>,
    codes: Option<&crate::codes::ColumnCodes>,
) -> Result<EncodedLabel, DataError> {
    let (y, values, flipped) = encode_label(path, label, cells, favourable)?;
    let Some(codes) = codes else { return Ok(EncodedLabel { y, values, flipped, code: None }) };
    let code = codes.code(&values[1]).ok_or_else(|| DataError::Column {
        path: path.to_path_buf(),
        column: label.to_string(),
        message: format!(
            "the favourable label {:?} has no code in {} (its codes: {}); add it there",
            values[1],
            codes.at_text(),
            codes.listing()
        ),
    })?;
    Ok(EncodedLabel { y, values, flipped: code == 0, code: Some(code) })
}

/// Encode the label as class 1 = favourable, 0 = the rest; the names of the two classes; and whether
/// a 0/1 label was flipped (its favourable value is 0).
pub fn encode_label(path: &Path, name: &str, cells: &[&str], favourable: Option<&str>) -> Result<(Vec<u8>, [String; 2], bool), DataError> {
    let column_err = |message: String| DataError::Column { path: path.to_path_buf(), column: name.to_string(), message };
    let mut distinct: Vec<&str> = cells.to_vec();
    distinct.sort();
    distinct.dedup();
    let numeric: Option<Vec<f64>> = cells.iter().map(|c| c.parse::<f64>().ok()).collect();
    if let Some(values) = numeric {
        if values.iter().all(|&v| v == 0.0 || v == 1.0) {
            let fav = match favourable {
                None => 1,
                Some(f) => match f.parse::<f64>() {
                    Ok(v) if v == 0.0 || v == 1.0 => v as u8,
                    _ => return Err(column_err(format!("favourable = {f:?}, but the label takes only the values 0 and 1"))),
                },
            };
            let y = values.iter().map(|&v| u8::from(v as u8 == fav)).collect();
            let names = if fav == 1 { ["0".into(), "1".into()] } else { ["1".into(), "0".into()] };
            return Ok((y, names, fav == 0));
        }
    }
    let Some(fav) = favourable else {
        return Err(column_err(format!(
            "the label has the values {:?}; say which is favourable with `favourable = \"…\"`",
            distinct.iter().take(10).collect::<Vec<_>>()
        )));
    };
    if !distinct.contains(&fav) {
        return Err(column_err(format!(
            "favourable = {fav:?} does not occur; the label has {:?}",
            distinct.iter().take(10).collect::<Vec<_>>()
        )));
    }
    let y = cells.iter().map(|c| u8::from(*c == fav)).collect();
    let other =
        if distinct.len() == 2 { distinct.iter().find(|d| **d != fav).unwrap_or(&"other").to_string() } else { format!("not {fav}") };
    Ok((y, [other, fav.to_string()], false))
}
