//! `fairpipe page OUT --pdf` (and `fairpipe run … --pdf`): a run's bias audit pages
//! (`OUT/<stage>.html`, one per `bias_audit` stage) printed to `OUT/<stage>.pdf` by headless
//! Chromium, with no header or footer (so no local file path and no print date on the page), as
//! an auditor publishes them. The browser is `FAIRPIPE_BROWSER` when set, else the first of
//! chromium, chromium-browser and google-chrome on the PATH.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a page could not be printed.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// The out folder's summary.json cannot be read.
    #[error("{path}: {message}")]
    Summary {
        /// summary.json.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The run has no bias audit page (or not the one named).
    #[error("{out}: {message}")]
    NoPage {
        /// The out folder.
        out: PathBuf,
        /// What is missing, with the stages there are.
        message: String,
    },
    /// No browser to print with.
    #[error(
        "no headless browser to print the PDF with: install Chromium (`sudo apt-get install chromium` on Debian and Ubuntu) \
         or point FAIRPIPE_BROWSER at a Chromium or Chrome binary"
    )]
    NoBrowser,
    /// The browser did not write the PDF.
    #[error("{browser} did not print {page} to PDF ({status}): {stderr}")]
    Print {
        /// The browser run.
        browser: String,
        /// The page.
        page: PathBuf,
        /// Its exit status.
        status: String,
        /// What it said.
        stderr: String,
    },
}

/// The browser that prints: `FAIRPIPE_BROWSER`, else Chromium or Chrome found on the PATH.
pub fn browser() -> Option<PathBuf> {
    if let Some(b) = std::env::var_os("FAIRPIPE_BROWSER").filter(|b| !b.is_empty()) {
        return Some(PathBuf::from(b));
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
        .map(PathBuf::from)
}

/// The bias audit pages of the run in `out` (`stage`: that stage's only), as (stage, page).
pub fn pages(out: &Path, stage: Option<&str>) -> Result<Vec<(String, PathBuf)>, PageError> {
    let path = out.join("summary.json");
    let problem = |message: String| PageError::Summary { path: path.clone(), message };
    let text =
        std::fs::read_to_string(&path).map_err(|e| problem(format!("cannot read: {e} (is {} a run's out folder?)", out.display())))?;
    let summary: serde_json::Value = serde_json::from_str(&text).map_err(|e| problem(format!("not JSON: {e}")))?;
    let stages = summary["stages"].as_object().ok_or_else(|| problem("no `stages`".into()))?;
    let audits: Vec<String> = summary["stage_order"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str())
        .filter(|s| stages.get(*s).and_then(|e| e["kind"].as_str()) == Some(fairpipe_core::stages::bias_audit::KIND.name))
        .map(String::from)
        .collect();
    let chosen: Vec<String> = match stage {
        Some(s) if audits.iter().any(|a| a == s) => vec![s.to_string()],
        Some(s) => {
            let there = if audits.is_empty() { "none".to_string() } else { audits.join(", ") };
            return Err(PageError::NoPage {
                out: out.to_path_buf(),
                message: format!("no bias_audit stage `{s}` (bias_audit stages: {there})"),
            });
        }
        None if audits.is_empty() => {
            return Err(PageError::NoPage {
                out: out.to_path_buf(),
                message: "the run has no bias_audit stage, so no page to print (report.html prints from a browser)".into(),
            })
        }
        None => audits,
    };
    chosen
        .into_iter()
        .map(|s| {
            let page = out.join(format!("{s}.html"));
            if page.is_file() {
                Ok((s, page))
            } else {
                Err(PageError::NoPage { out: out.to_path_buf(), message: format!("{} is missing", page.display()) })
            }
        })
        .collect()
}

/// Print `page` to `pdf` with `browser`: headless, no header or footer, written beside `pdf` first
/// and renamed into place, so a failed print leaves no partial file.
pub fn print_pdf(browser: &Path, page: &Path, pdf: &Path) -> Result<(), PageError> {
    let page = std::path::absolute(page).unwrap_or_else(|_| page.to_path_buf());
    let partial = pdf.with_extension("pdf.partial");
    let profile = Profile::new();
    let run = Command::new(browser)
        // As the machine's closed network and a root user need it (no sandbox, no background
        // connections), in a profile of its own.
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync", "--no-pdf-header-footer"])
        .arg(format!("--user-data-dir={}", profile.0.display()))
        .arg(format!("--print-to-pdf={}", partial.display()))
        .arg(url_of(&page))
        .output();
    let failed =
        |status: String, stderr: String| PageError::Print { browser: browser.display().to_string(), page: page.clone(), status, stderr };
    let out = run.map_err(|e| failed("did not start".into(), e.to_string()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr.lines().filter(|l| !l.contains("dbus") && !l.trim().is_empty()).take(5).collect();
    if !out.status.success() || !partial.is_file() {
        let _ = std::fs::remove_file(&partial);
        return Err(failed(out.status.to_string(), said.join("\n")));
    }
    std::fs::rename(&partial, pdf).map_err(|e| failed("written, not moved into place".into(), e.to_string()))
}

/// A browser profile folder of its own, removed when dropped.
struct Profile(PathBuf);

impl Profile {
    fn new() -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        Profile(std::env::temp_dir().join(format!("fairpipe-page-{}-{nanos}", std::process::id())))
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `file://` URL of absolute path `path` (its bytes outside the unreserved set escaped).
fn url_of(path: &Path) -> String {
    let mut url = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            url.push(char::from(b));
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

/// Print every bias audit page of the run in `out` (`stage`: that one) to PDF beside it; the PDFs
/// written.
pub fn pdfs(out: &Path, stage: Option<&str>) -> Result<Vec<PathBuf>, PageError> {
    let pages = pages(out, stage)?;
    let browser = browser().ok_or(PageError::NoBrowser)?;
    pages
        .into_iter()
        .map(|(_, page)| {
            let pdf = page.with_extension("pdf");
            print_pdf(&browser, &page, &pdf).map(|()| pdf)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_path_is_escaped_in_its_url() {
        assert_eq!(super::url_of(std::path::Path::new("/tmp/a b/c#1.html")), "file:///tmp/a%20b/c%231.html");
    }
}
