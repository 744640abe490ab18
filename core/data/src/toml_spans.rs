//! Phase one of reading a pipeline: the TOML text as owned values that keep their byte spans, so every
//! later problem can be reported as `file:line:col`.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

/// A value with the byte range it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Sp<T> {
    /// The value.
    pub v: T,
    /// Byte range in the pipeline text.
    pub span: Range<usize>,
}

/// A TOML value with spans at every level.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A date or time (kept as text).
    Datetime(String),
    /// An array.
    Array(Vec<Sp<Val>>),
    /// A table, entries in file order.
    Table(Vec<(Sp<String>, Sp<Val>)>),
}

impl Val {
    /// The TOML type name, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Str(_) => "a string",
            Val::Int(_) => "an integer",
            Val::Float(_) => "a float",
            Val::Bool(_) => "a boolean",
            Val::Datetime(_) => "a datetime",
            Val::Array(_) => "an array",
            Val::Table(_) => "a table",
        }
    }

    /// Convert to plain JSON (for plugin parameters and summaries).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Val::Str(s) | Val::Datetime(s) => serde_json::Value::String(s.clone()),
            Val::Int(i) => serde_json::Value::from(*i),
            Val::Float(f) => serde_json::Value::from(*f),
            Val::Bool(b) => serde_json::Value::Bool(*b),
            Val::Array(a) => serde_json::Value::Array(a.iter().map(|v| v.v.to_json()).collect()),
            Val::Table(t) => serde_json::Value::Object(t.iter().map(|(k, v)| (k.v.clone(), v.v.to_json())).collect()),
        }
    }
}

/// Parse TOML text; on a syntax error return its message and byte span.
pub fn parse(text: &str) -> Result<Sp<Val>, (String, Range<usize>)> {
    let table = DeTable::parse(text).map_err(|e| (e.message().to_string(), e.span().unwrap_or(0..0)))?;
    let span = table.span();
    Ok(Sp { v: convert_table(table.get_ref())?, span })
}

type Converted = Result<Val, (String, Range<usize>)>;

fn convert_table(t: &DeTable<'_>) -> Converted {
    let mut entries: Vec<(Sp<String>, Sp<Val>)> = Vec::new();
    for (k, v) in t.iter() {
        entries.push((Sp { v: k.get_ref().to_string(), span: k.span() }, Sp { v: convert(v.get_ref(), v.span())?, span: v.span() }));
    }
    entries.sort_by_key(|(k, _)| k.span.start);
    Ok(Val::Table(entries))
}

/// Convert one value; an integer outside the 64-bit range is refused (at `span`), not saturated.
fn convert(v: &DeValue<'_>, span: Range<usize>) -> Converted {
    Ok(match v {
        DeValue::String(s) => Val::Str(s.to_string()),
        DeValue::Integer(i) => {
            let digits = i.as_str().replace('_', "");
            match i64::from_str_radix(&digits, i.radix()) {
                Ok(n) => Val::Int(n),
                Err(_) => return Err((format!("integer {} is out of range (a 64-bit integer is at most {})", i.as_str(), i64::MAX), span)),
            }
        }
        DeValue::Float(f) => {
            let text = f.as_str().replace('_', "");
            Val::Float(match text.as_str() {
                "inf" | "+inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                "nan" | "+nan" | "-nan" => f64::NAN,
                other => other.parse().unwrap_or(f64::NAN),
            })
        }
        DeValue::Boolean(b) => Val::Bool(*b),
        DeValue::Datetime(d) => Val::Datetime(d.to_string()),
        DeValue::Array(a) => {
            let mut items = Vec::new();
            for x in a.iter() {
                items.push(Sp { v: convert(x.get_ref(), x.span())?, span: x.span() });
            }
            Val::Array(items)
        }
        DeValue::Table(t) => convert_table(t)?,
    })
}

/// The line starts of a text, for locating many byte offsets without rescanning the text.
#[derive(Debug, Clone)]
pub struct LineIndex {
    text: String,
    starts: Vec<usize>,
}

impl LineIndex {
    /// Index `text`'s lines.
    pub fn new(text: &str) -> Self {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        LineIndex { text: text.to_string(), starts }
    }

    /// 1-based line and column (in characters) of byte offset `at`.
    pub fn line_col(&self, at: usize) -> (usize, usize) {
        let mut at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= at);
        let start = self.starts[line - 1];
        (line, self.text[start..at].chars().count() + 1)
    }
}

/// 1-based line and column of byte offset `at` in `text`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    LineIndex::new(text).line_col(at)
}
