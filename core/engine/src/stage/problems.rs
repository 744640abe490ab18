//! Located problems of one pipeline file, collected rather than raised, so validation reports
//! everything in one pass.

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::error::{ConfigError, ConfigProblem};
use fairpipe_data::toml_spans::LineIndex;

/// Collects located problems for one pipeline file.
#[derive(Debug)]
pub struct Problems {
    file: PathBuf,
    lines: LineIndex,
    list: Vec<(usize, ConfigProblem)>,
}

impl Problems {
    /// A collector for `file` whose text is `text`.
    pub fn new(file: &Path, text: &str) -> Self {
        Problems { file: file.to_path_buf(), lines: LineIndex::new(text), list: Vec::new() }
    }

    /// Record a problem at byte range `span` (located in time logarithmic in the file's size).
    pub fn at(&mut self, span: &Range<usize>, message: impl Into<String>) {
        let (line, col) = self.lines.line_col(span.start);
        self.list.push((span.start, ConfigProblem { file: self.file.clone(), line, col, message: message.into() }));
    }

    /// Where byte range `span` starts, as key `key`'s place (`written`: the span is the key's own).
    pub fn place(&self, span: &Range<usize>, key: &str, written: bool) -> crate::error::KeyPlace {
        let (line, col) = self.lines.line_col(span.start);
        crate::error::KeyPlace { key: key.to_string(), file: self.file.clone(), line, col, written }
    }

    /// How many problems have been recorded.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// `Ok(())` when empty, otherwise every problem in file order.
    pub fn into_result(mut self) -> Result<(), ConfigError> {
        if self.list.is_empty() {
            return Ok(());
        }
        self.list.sort_by_key(|(at, _)| *at);
        Err(ConfigError { problems: self.list.into_iter().map(|(_, p)| p).collect() })
    }
}
