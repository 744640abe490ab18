//! A value of a label or a category as a pipeline writes it (a string, an integer or a boolean),
//! read by the load stage's `favourable`, a bias audit's `selected` and `linked` columns' values.

use serde::{Deserialize, Serialize};

/// The favourable label value as written in the file: a string, an integer or a boolean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LabelValue {
    /// Written as text.
    Text(String),
    /// Written as an integer.
    Int(i64),
    /// Written as a boolean.
    Bool(bool),
}

impl crate::stage::keys::KeyType for LabelValue {
    fn text() -> String {
        "string|int|bool".into()
    }
}

impl LabelValue {
    pub(crate) fn text(&self) -> String {
        match self {
            LabelValue::Text(s) => s.clone(),
            LabelValue::Int(i) => i.to_string(),
            LabelValue::Bool(b) => b.to_string(),
        }
    }
}

/// One value or a list of them as a pipeline writes it (`selected = "Yes"` or
/// `selected = ["Yes", "Advanced"]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum LabelValues {
    /// One value.
    One(LabelValue),
    /// A list of values.
    Many(Vec<LabelValue>),
}

impl crate::stage::keys::KeyType for LabelValues {
    fn text() -> String {
        "string|int|bool, or a list of them".into()
    }
}

impl LabelValues {
    /// The values as text, in the order written.
    pub(crate) fn texts(&self) -> Vec<String> {
        match self {
            LabelValues::One(v) => vec![v.text()],
            LabelValues::Many(v) => v.iter().map(LabelValue::text).collect(),
        }
    }
}
