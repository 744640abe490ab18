//! Writing a run's results: the tables, `report.html` and `summary.json` into a staging folder
//! moved into place in one step, and the files stages asked for, all or nothing.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::Run;
use crate::error::Result;
use crate::output::{write_atomic, write_json, write_table};

impl Run {
    /// Write the tables, the files stages asked for, `report.html` (when `report`) and
    /// `summary.json` into `out_dir`, all or nothing, under the folder's lock; returns every path
    /// written.
    pub fn write(&self, out_dir: &Path, report: bool) -> Result<Vec<PathBuf>> {
        crate::staging::check_target(out_dir)?;
        let _lock = crate::staging::Lock::acquire(out_dir)?;
        self.write_unlocked(out_dir, report)
    }

    /// [`Run::write`] for a caller holding the lock: everything goes into a staging folder first,
    /// the files stages asked for into temporary files beside their places; then the staging
    /// folder is moved into place and the temporary files renamed. A failure (or Ctrl-C) before
    /// that leaves the previous result and files untouched.
    pub(crate) fn write_unlocked(&self, out_dir: &Path, report: bool) -> Result<Vec<PathBuf>> {
        let (summary, tables) = (&self.summary, &self.tables);
        let staging = crate::staging::Staging::begin(out_dir)?;
        let dir = staging.dir().to_path_buf();
        let mut staged = Vec::new();
        for (stage, table) in tables {
            let stem = if table.suffix.is_empty() { stage.clone() } else { format!("{stage}_{}", table.suffix) };
            staged.extend(write_table(&dir, &stem, table)?);
        }
        if report {
            let html = crate::report::render(summary, tables);
            let path = dir.join("report.html");
            write_atomic(&path, |f| f.write_all(html.as_bytes()).map_err(|e| e.to_string()))?;
            staged.push(path);
        }
        // A bias audit's printable page, `<stage>.html`, beside its tables.
        for (stage, entry) in summary.in_order().filter(|(_, e)| e.kind == crate::stages::bias_audit::KIND.name) {
            let figures =
                entry.figures::<crate::stages::bias_audit::BiasAuditFigures>().map_err(|e| crate::error::Error::Internal(e.to_string()))?;
            let html = crate::report::bias_audit::render(stage, &figures, summary);
            let path = dir.join(format!("{stage}.html"));
            write_atomic(&path, |f| f.write_all(html.as_bytes()).map_err(|e| e.to_string()))?;
            staged.push(path);
        }
        let summary_path = dir.join("summary.json");
        write_json(&summary_path, &summary.to_json())?;
        staged.push(summary_path);
        crate::output::fail_point("before-commit")?;
        let mut files: Vec<PathBuf> = staged.iter().map(|p| staging.final_path(p)).collect();
        let pending = crate::output::PendingFiles::prepare(&self.extra_files)?;
        staging.commit()?;
        files.extend(pending.commit()?);
        Ok(files)
    }
}
