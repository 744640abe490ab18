//! Errors of `fairpipe_rs.audit` in the caller's terms. `audit` builds a pipeline in code, whose
//! problems the engine locates at a stage's key (`<code>:1:1`, stage `data`, key `protected`):
//! here each is said of the argument that set it (`protected`, `options["estimate"]["trials"]`,
//! `search`), and the column `audit` adds for `test=` is never named.

/// The argument of `audit` that sets key `key` of its stage `stage` (the whole stage's argument
/// when no key is named).
pub fn argument(stage: &str, key: Option<&str>) -> String {
    let option = |stage: &str, key: &str| format!("options[\"{stage}\"][\"{key}\"]");
    match (stage, key) {
        ("data", Some(k @ ("label" | "protected" | "favourable" | "features" | "drop"))) => k.to_string(),
        // `audit` sets the measured rows' split from `test=`.
        ("data", Some("split_column")) | ("group_metrics" | "check", Some("split")) => "test".into(),
        ("data", Some(k)) => option("data", k),
        ("data", None) => "data".into(),
        ("model", _) => "model".into(),
        ("search" | "verify", Some(k)) if k != "params" => format!("search[\"{k}\"]"),
        ("search" | "verify", _) => "search".into(),
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
