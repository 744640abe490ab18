//! Result files: tables of decoded rows as CSV and Parquet, and `summary.json`, each written to a
//! temporary file in the target folder and renamed into place, so a crash never leaves half a file.

use std::io::Write;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use crate::domain::{AttributeKind, Domain};
use crate::error::OutputError;

/// A named result table.
#[derive(Debug, Clone)]
pub struct Table {
    /// File stem suffix: the stage's table is written as `<stage>.csv` when empty, else
    /// `<stage>_<suffix>.csv`.
    pub suffix: String,
    /// The rows.
    pub frame: DataFrame,
}

/// Builds a table column by column.
#[derive(Default)]
pub struct TableBuilder {
    columns: Vec<Column>,
}

impl TableBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a numeric column.
    pub fn f64(mut self, name: &str, values: Vec<f64>) -> Self {
        self.columns.push(Column::new(name.into(), values));
        self
    }

    /// Add an integer column.
    pub fn i64(mut self, name: &str, values: Vec<i64>) -> Self {
        self.columns.push(Column::new(name.into(), values));
        self
    }

    /// Add a text column.
    pub fn str(mut self, name: &str, values: Vec<String>) -> Self {
        self.columns.push(Column::new(name.into(), values));
        self
    }

    /// Add one column per attribute with `rows` decoded to original values; `suffix` is appended to
    /// each column name (e.g. `_counterpart`); `only` restricts to some attribute indices.
    pub fn decoded(mut self, domain: &Domain, rows: &[f64], suffix: &str, only: Option<&[usize]>) -> Self {
        let width = domain.width();
        for (j, a) in domain.attributes.iter().enumerate() {
            if only.is_some_and(|o| !o.contains(&j)) {
                continue;
            }
            let name = format!("{}{suffix}", a.name);
            let values = rows.chunks_exact(width).map(|r| r[j]);
            self = match a.kind {
                AttributeKind::Categorical { .. } => self.str(&name, values.map(|v| a.decode(v)).collect()),
                AttributeKind::Integer => self.i64(&name, values.map(|v| v.round() as i64).collect()),
                AttributeKind::Continuous => self.f64(&name, values.collect()),
            };
        }
        self
    }

    /// The finished table.
    pub fn build(self, suffix: &str) -> Result<Table, OutputError> {
        let frame = DataFrame::new_infer_height(self.columns)
            .map_err(|e| OutputError { path: PathBuf::from(format!("<table {suffix}>")), message: e.to_string() })?;
        Ok(Table { suffix: suffix.to_string(), frame })
    }
}

/// Write `bytes` to `path` atomically (temporary file in the same folder, then rename).
pub fn write_atomic(path: &Path, write: impl FnOnce(&mut std::fs::File) -> Result<(), String>) -> Result<(), OutputError> {
    let err = |message: String| OutputError { path: path.to_path_buf(), message };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
    let file_name = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp).map_err(|e| e.to_string())?;
        write(&mut file)?;
        file.flush().map_err(|e| e.to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, path).map_err(|e| e.to_string())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
}

/// Write a table as `<stem>.csv` and `<stem>.parquet` in `dir`; returns the two paths.
pub fn write_table(dir: &Path, stem: &str, table: &Table) -> Result<Vec<PathBuf>, OutputError> {
    let csv = dir.join(format!("{stem}.csv"));
    let mut frame = table.frame.clone();
    write_atomic(&csv, |f| CsvWriter::new(f).include_header(true).finish(&mut frame).map_err(|e| e.to_string()))?;
    let parquet = dir.join(format!("{stem}.parquet"));
    let mut frame = table.frame.clone();
    write_atomic(&parquet, |f| ParquetWriter::new(f).finish(&mut frame).map(|_| ()).map_err(|e| e.to_string()))?;
    Ok(vec![csv, parquet])
}

/// Write a JSON value, pretty-printed, atomically.
pub fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), OutputError> {
    write_atomic(path, |f| {
        serde_json::to_writer_pretty(&mut *f, value).map_err(|e| e.to_string())?;
        f.write_all(b"\n").map_err(|e| e.to_string())
    })
}

/// Files a run writes outside its out folder (a trained model's `save` path), written to
/// temporary files beside their places first and renamed into place only after the out folder's
/// results are in place; dropped uncommitted, the temporary files are removed.
#[derive(Debug, Default)]
pub struct PendingFiles {
    moves: Vec<(PathBuf, PathBuf)>,
}

impl PendingFiles {
    /// Write every `(path, contents)` to a temporary file beside `path`.
    pub fn prepare(files: &[(PathBuf, Vec<u8>)]) -> Result<PendingFiles, OutputError> {
        let mut pending = PendingFiles::default();
        for (path, contents) in files {
            let err = |message: String| OutputError { path: path.clone(), message };
            if path.is_dir() {
                return Err(err("is a folder; give a file name".into()));
            }
            let dir = path.parent().unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
            let file_name = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let tmp = dir.join(format!(".{file_name}.{}.pending", std::process::id()));
            pending.moves.push((tmp.clone(), path.clone()));
            let written = (|| {
                let mut file = std::fs::File::create(&tmp)?;
                file.write_all(contents)?;
                file.sync_all()
            })();
            written.map_err(|e| err(e.to_string()))?;
        }
        Ok(pending)
    }

    /// Rename every temporary file into place; returns the paths.
    pub fn commit(mut self) -> Result<Vec<PathBuf>, OutputError> {
        let mut done = Vec::new();
        for (tmp, path) in std::mem::take(&mut self.moves) {
            std::fs::rename(&tmp, &path).map_err(|e| OutputError { path: path.clone(), message: e.to_string() })?;
            done.push(path);
        }
        Ok(done)
    }
}

impl Drop for PendingFiles {
    fn drop(&mut self) {
        for (tmp, _) in &self.moves {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A test hook at a named point of writing the results (`before-commit`), driven by the
/// `FAIRPIPE_TEST_HOOK` environment variable: `fail:POINT` fails there as a full disk would,
/// `pause:POINT[:SECONDS]` waits there (10 s unless told, or until Ctrl-C) so a test can act
/// while a run writes. Without the variable it does nothing.
pub fn fail_point(point: &str) -> Result<(), OutputError> {
    let Ok(hook) = std::env::var("FAIRPIPE_TEST_HOOK") else { return Ok(()) };
    let mut parts = hook.split(':');
    match (parts.next(), parts.next()) {
        (Some("fail"), Some(p)) if p == point => {
            Err(OutputError { path: PathBuf::from(point), message: "failed by FAIRPIPE_TEST_HOOK (a test of partial writes)".into() })
        }
        (Some("pause"), Some(p)) if p == point => {
            let seconds = parts.next().and_then(|s| s.parse::<f64>().ok()).filter(|s| s.is_finite() && *s >= 0.0).unwrap_or(10.0);
            eprintln!("test hook: pausing at {point}");
            let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds.min(60.0));
            while std::time::Instant::now() < until && !crate::interrupt::requested() {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}
