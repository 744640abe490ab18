//! Errors of `fairpipe_rs.audit` in the caller's terms. `audit` builds a pipeline in code, whose
//! problems the engine locates at a stage's key (`<code>:1:1`, stage `data`, key `protected`):
//! here each is said of the argument that set it (`protected`, `options["estimate"]["trials"]`,
//! `search`), and the column `audit` adds for `test=` is never named.

use fairpipe_core::error::Error;
use fairpipe_core::preset::stage_names::{CHECK, GROUP_METRICS, SEARCH, VERIFY};

/// A refusal of one of `audit`'s arguments, made by the binding before the engine runs: the
/// argument as the caller wrote it (`test`, `search["max_queries"]`, `options["estimate"]`) and
/// what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("{argument}: {message}")]
pub struct ArgumentError {
    /// The argument at fault.
    pub argument: String,
    /// What is wrong with it.
    pub message: String,
}

impl ArgumentError {
    /// Argument `argument` refused with `message`.
    pub fn new(argument: impl Into<String>, message: impl Into<String>) -> ArgumentError {
        ArgumentError { argument: argument.into(), message: message.into() }
    }
}

/// Why `audit` failed: one of its arguments refused by the binding, or the engine's error.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The binding refused an argument.
    #[error(transparent)]
    Argument(#[from] ArgumentError),
    /// The engine failed (building or running the pipeline).
    #[error(transparent)]
    Engine(#[from] Error),
}

/// The argument of `audit` that sets key `key` of its stage `stage` (the whole stage's argument
/// when no key is named).
pub fn argument(stage: &str, key: Option<&str>) -> String {
    let option = |stage: &str, key: &str| format!("options[\"{stage}\"][\"{key}\"]");
    match (stage, key) {
        ("data", Some(k @ ("label" | "protected" | "favourable" | "features" | "drop"))) => k.to_string(),
        // `audit` sets the measured rows' split from `test=`.
        ("data", Some("split_column")) | (GROUP_METRICS | CHECK, Some("split")) => "test".into(),
        ("data", Some(k)) => option("data", k),
        ("data", None) => "data".into(),
        ("model", _) => "model".into(),
        (SEARCH | VERIFY, Some(k)) if k != "params" => format!("search[\"{k}\"]"),
        (SEARCH | VERIFY, _) => "search".into(),
        (check, Some(k)) => option(check, k),
        (check, None) => format!("checks (\"{check}\") or options[\"{check}\"]"),
    }
}

/// The stage and the rest of a message the engine writes as ``stage `NAME`: REST`` (a problem of
/// a stage's config).
pub fn split_stage(message: &str) -> Option<(&str, &str)> {
    let rest = message.strip_prefix("stage `")?;
    let (stage, rest) = rest.split_once('`')?;
    let rest = rest.strip_prefix(": ").or_else(|| rest.strip_prefix(' '))?;
    Some((stage, rest))
}

/// The key `text` is about: the one it opens with (``protected attribute `x` …``), else its first
/// backquoted word that is one of `keys`.
pub fn first_key<'a>(text: &str, keys: &[&'a str]) -> Option<&'a str> {
    let opening = keys.iter().find(|k| text.starts_with(&format!("{k} ")) || text.starts_with(&format!("`{k}`"))).copied();
    opening.or_else(|| text.split('`').skip(1).step_by(2).find_map(|word| keys.iter().find(|k| **k == word).copied()))
}

/// `message` with `split_column` (the column `audit` adds for `test=`) no longer named: dropped
/// from a list of columns, said as the rows `test=` measures elsewhere.
pub fn without_column(message: &str, split_column: &str) -> String {
    let mut text = message.to_string();
    for quote in ["`", "\"", "'", ""] {
        let named = format!("{quote}{split_column}{quote}");
        text = text.replace(&format!(", {named}"), "").replace(&format!("{named}, "), "");
    }
    text.replace(&format!("`{split_column}`"), "the rows `test` measures")
        .replace(&format!("\"{split_column}\""), "the rows `test` measures")
        .replace(split_column, "the rows `test` measures")
}

/// `message` of a refusal `audit` made itself before the engine ran (``search: …``,
/// ``options["estimate"]: …``), said as the other problems are: ``argument `search`: …``.
pub fn of_argument(message: &str) -> String {
    const ARGUMENTS: [&str; 8] = ["data", "label", "favourable", "test", "model", "checks", "search", "options"];
    let named = ARGUMENTS.iter().find_map(|name| {
        let rest = message.strip_prefix(name)?;
        let end = if rest.starts_with('[') { rest.find("]: ").map(|i| i + 1)? } else { 0 };
        let rest_of = rest[end..].strip_prefix(": ")?;
        Some((format!("{name}{}", &rest[..end]), rest_of))
    });
    match named {
        Some((argument, rest)) => format!("argument `{argument}`: {rest}"),
        None => message.to_string(),
    }
}

/// `value` (an object of a stage's keys, given as argument `argument`) read as config `C`; when it
/// does not read, the refusal names the key at fault when serde's does not
/// (``search["max_queries"]: invalid value: integer `-3`, expected u64``): the key whose removal
/// makes the refusal go or change into another than a missing key's.
pub fn read_keys<C: serde::de::DeserializeOwned>(argument: &str, value: serde_json::Value) -> Result<C, ArgumentError> {
    let said = match serde_json::from_value::<C>(value.clone()) {
        Ok(config) => return Ok(config),
        Err(e) => e.to_string(),
    };
    let at_fault = value.as_object().and_then(|map| {
        map.keys().find(|key| {
            let mut rest = map.clone();
            rest.remove(*key);
            match serde_json::from_value::<C>(serde_json::Value::Object(rest)) {
                Ok(_) => true,
                Err(other) => {
                    let other = other.to_string();
                    other != said && !other.starts_with("missing field")
                }
            }
        })
    });
    Err(match at_fault {
        Some(key) if !said.contains(&format!("`{key}`")) => ArgumentError::new(format!("{argument}[{key:?}]"), said),
        _ => ArgumentError::new(argument, said),
    })
}
