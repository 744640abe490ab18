//! Phase two of reading a pipeline: typed access to one stage's keys. Every getter records a problem
//! (with the key's span) instead of failing, so validation reports everything in one pass.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::error::{hint, ConfigError, ConfigProblem};
use crate::pipeline::toml_spans::{line_col, Sp, Val};

/// Collects located problems for one pipeline file.
#[derive(Debug)]
pub struct Problems {
    file: PathBuf,
    text: String,
    list: Vec<(usize, ConfigProblem)>,
}

impl Problems {
    /// A collector for `file` whose text is `text`.
    pub fn new(file: &Path, text: &str) -> Self {
        Problems { file: file.to_path_buf(), text: text.to_string(), list: Vec::new() }
    }

    /// Record a problem at byte range `span`.
    pub fn at(&mut self, span: &Range<usize>, message: impl Into<String>) {
        let (line, col) = line_col(&self.text, span.start);
        self.list.push((span.start, ConfigProblem { file: self.file.clone(), line, col, message: message.into() }));
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

/// The keys of one stage table, read by type.
pub struct Params<'a> {
    entries: &'a [(Sp<String>, Sp<Val>)],
    header: Range<usize>,
    stage: String,
    known: Vec<&'static str>,
    used: RefCell<BTreeSet<String>>,
    dir: PathBuf,
}

impl<'a> Params<'a> {
    /// Wrap a stage's entries; `known` are the keys its kind accepts; relative paths resolve in `dir`.
    pub fn new(stage: &str, entries: &'a [(Sp<String>, Sp<Val>)], header: Range<usize>, known: Vec<&'static str>, dir: &Path) -> Self {
        Params { entries, header, stage: stage.to_string(), known, used: RefCell::default(), dir: dir.to_path_buf() }
    }

    /// The stage name.
    pub fn stage(&self) -> &str {
        &self.stage
    }

    /// Span of the stage's table header, for problems about the stage as a whole.
    pub fn header(&self) -> &Range<usize> {
        &self.header
    }

    /// The raw entry for `key`.
    pub fn raw(&self, key: &str) -> Option<&'a Sp<Val>> {
        debug_assert!(self.known.contains(&key) || key == "kind", "key {key} read but not declared");
        self.used.borrow_mut().insert(key.to_string());
        self.entries.iter().find(|(k, _)| k.v == key).map(|(_, v)| v)
    }

    fn wrong(&self, p: &mut Problems, key: &str, v: &Sp<Val>, expected: &str) {
        p.at(&v.span, format!("stage `{}`: `{key}` must be {expected}, found {}", self.stage, v.v.type_name()));
    }

    fn missing(&self, p: &mut Problems, key: &str, expected: &str) {
        p.at(&self.header, format!("stage `{}`: missing `{key}` ({expected})", self.stage));
    }

    /// An optional string.
    pub fn opt_str(&self, p: &mut Problems, key: &str) -> Option<Sp<String>> {
        let v = self.raw(key)?;
        match &v.v {
            Val::Str(s) => Some(Sp { v: s.clone(), span: v.span.clone() }),
            _ => {
                self.wrong(p, key, v, "a string");
                None
            }
        }
    }

    /// A required string.
    pub fn str(&self, p: &mut Problems, key: &str, expected: &str) -> Option<Sp<String>> {
        if self.raw(key).is_none() {
            self.missing(p, key, expected);
            return None;
        }
        self.opt_str(p, key)
    }

    /// A string that must be one of `choices`, or `default`.
    pub fn choice(&self, p: &mut Problems, key: &str, choices: &[&str], default: &str) -> String {
        match self.opt_str(p, key) {
            None => default.to_string(),
            Some(s) if choices.contains(&s.v.as_str()) => s.v,
            Some(s) => {
                p.at(
                    &s.span,
                    format!(
                        "stage `{}`: `{key}` must be one of {}, found {:?}{}",
                        self.stage,
                        choices.join(", "),
                        s.v,
                        hint(&s.v, choices)
                    ),
                );
                default.to_string()
            }
        }
    }

    /// An optional number (integer or float).
    pub fn opt_f64(&self, p: &mut Problems, key: &str) -> Option<f64> {
        let v = self.raw(key)?;
        match v.v {
            Val::Int(i) => Some(i as f64),
            Val::Float(f) => Some(f),
            _ => {
                self.wrong(p, key, v, "a number");
                None
            }
        }
    }

    /// A number, `default` when absent; checked to lie in `[min, max]`.
    pub fn f64_in(&self, p: &mut Problems, key: &str, default: f64, min: f64, max: f64) -> f64 {
        match self.opt_f64(p, key) {
            None => default,
            Some(v) if (min..=max).contains(&v) => v,
            Some(v) => {
                let span = self.raw(key).map(|r| r.span.clone()).unwrap_or(self.header.clone());
                p.at(&span, format!("stage `{}`: `{key}` must lie in [{min}, {max}], found {v}", self.stage));
                default
            }
        }
    }

    /// A non-negative integer, `default` when absent; checked to be at least `min`.
    pub fn usize_min(&self, p: &mut Problems, key: &str, default: usize, min: usize) -> usize {
        let Some(v) = self.raw(key) else { return default };
        match v.v {
            Val::Int(i) if i >= min as i64 => i as usize,
            Val::Int(i) => {
                p.at(&v.span, format!("stage `{}`: `{key}` must be at least {min}, found {i}", self.stage));
                default
            }
            _ => {
                self.wrong(p, key, v, "an integer");
                default
            }
        }
    }

    /// A boolean, `default` when absent.
    pub fn bool(&self, p: &mut Problems, key: &str, default: bool) -> bool {
        let Some(v) = self.raw(key) else { return default };
        match v.v {
            Val::Bool(b) => b,
            _ => {
                self.wrong(p, key, v, "true or false");
                default
            }
        }
    }

    /// A string or an array of strings (a single string counts as a one-element list).
    pub fn str_list(&self, p: &mut Problems, key: &str) -> Vec<Sp<String>> {
        let Some(v) = self.raw(key) else { return Vec::new() };
        match &v.v {
            Val::Str(s) => vec![Sp { v: s.clone(), span: v.span.clone() }],
            Val::Array(items) => items
                .iter()
                .filter_map(|item| match &item.v {
                    Val::Str(s) => Some(Sp { v: s.clone(), span: item.span.clone() }),
                    _ => {
                        self.wrong(p, key, item, "a list of strings");
                        None
                    }
                })
                .collect(),
            _ => {
                self.wrong(p, key, v, "a string or a list of strings");
                Vec::new()
            }
        }
    }

    /// An array of non-negative integers.
    pub fn usize_list(&self, p: &mut Problems, key: &str) -> Option<Vec<usize>> {
        let v = self.raw(key)?;
        match &v.v {
            Val::Array(items) => {
                let mut out = Vec::new();
                for item in items {
                    match item.v {
                        Val::Int(i) if i > 0 => out.push(i as usize),
                        _ => self.wrong(p, key, item, "a list of positive integers"),
                    }
                }
                Some(out)
            }
            _ => {
                self.wrong(p, key, v, "a list of positive integers");
                None
            }
        }
    }

    /// A sub-table's entries.
    pub fn table(&self, p: &mut Problems, key: &str) -> Option<&'a [(Sp<String>, Sp<Val>)]> {
        let v = self.raw(key)?;
        match &v.v {
            Val::Table(t) => Some(t.as_slice()),
            _ => {
                self.wrong(p, key, v, "a table");
                None
            }
        }
    }

    /// A required path, resolved against the pipeline's folder, which must exist.
    pub fn existing_path(&self, p: &mut Problems, key: &str, expected: &str) -> Option<Sp<PathBuf>> {
        let s = self.str(p, key, expected)?;
        let path = self.dir.join(&s.v);
        if !path.exists() {
            p.at(
                &s.span,
                format!("stage `{}`: `{key}`: no such file {} (paths are relative to the pipeline file)", self.stage, path.display()),
            );
            return None;
        }
        Some(Sp { v: path, span: s.span })
    }

    /// An optional output path, resolved against the pipeline's folder.
    pub fn opt_path(&self, p: &mut Problems, key: &str) -> Option<Sp<PathBuf>> {
        self.opt_str(p, key).map(|s| Sp { v: self.dir.join(&s.v), span: s.span })
    }

    /// Record every key that the stage kind does not accept.
    pub fn finish(&self, p: &mut Problems) {
        for (k, _) in self.entries {
            if k.v != "kind" && !self.known.contains(&k.v.as_str()) {
                p.at(
                    &k.span,
                    format!(
                        "stage `{}`: unknown key `{}`{}; accepted keys: {}",
                        self.stage,
                        k.v,
                        hint(&k.v, &self.known),
                        self.known.join(", ")
                    ),
                );
            }
        }
    }
}
