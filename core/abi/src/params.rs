//! Typed plugin parameters: the [`PluginParams`] trait a plugin's parameter struct implements, the
//! parsing of the host's JSON object into it (defaults, unknown keys with a "did you mean" hint,
//! wrong types and ranges, each naming the key), and the parameter part of `describe`.

use std::fmt::Display;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::error::ParamError;

/// Key every plugin accepts, for the conformance suite: `true` makes the run panic inside the
/// plugin (validation accepts it and ignores it).
pub const INJECT_PANIC_KEY: &str = "_inject_panic";

/// A plugin's parameter struct.
///
/// Derive `Serialize` and `Deserialize` with `#[serde(default, deny_unknown_fields)]` and implement
/// `Default` with the documented defaults: the defaults shown by `fairpipe list` are
/// `Self::default()` serialized, so they cannot drift from the code. Enumerations are strings
/// (`#[serde(rename_all = "snake_case")]`).
pub trait PluginParams: Serialize + DeserializeOwned + Default {
    /// One `(key, doc)` per field, in the order `fairpipe list` shows them. Every field needs a
    /// doc and every doc a field: `describe` fails otherwise (and so does
    /// [`crate::testing::check_params`]).
    const DOCS: &'static [(&'static str, &'static str)];

    /// Ranges and other checks beyond the types, each refusal naming the key (see [`at_least`]
    /// and [`in_range`]; [`ParamError::Other`] for a check of your own).
    fn check(&self) -> Result<(), ParamError> {
        Ok(())
    }
}

/// `Ok` when `value ≥ min`, else [`ParamError::TooSmall`] naming `key`.
pub fn at_least<T: PartialOrd + Display>(key: &str, value: T, min: T) -> Result<(), ParamError> {
    if value >= min {
        Ok(())
    } else {
        Err(ParamError::TooSmall { key: key.into(), min: min.to_string(), found: value.to_string() })
    }
}

/// `Ok` when `min ≤ value ≤ max`, else [`ParamError::OutOfRange`] naming `key`.
pub fn in_range<T: PartialOrd + Display>(key: &str, value: T, min: T, max: T) -> Result<(), ParamError> {
    if value >= min && value <= max {
        Ok(())
    } else {
        Err(ParamError::OutOfRange { key: key.into(), min: min.to_string(), max: max.to_string(), found: value.to_string() })
    }
}

/// The closest candidate to `name` by edit distance, if it is close enough to be a plausible typo
/// (shared by plugins and the host for "did you mean" hints).
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, c)| *d <= (c.len().max(name.len()) / 3).max(2) && *d < c.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance between `a` and `b`, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// `P::default()` as a JSON object.
fn defaults<P: PluginParams>() -> Map<String, Value> {
    match serde_json::to_value(P::default()) {
        Ok(Value::Object(m)) => m,
        Ok(other) => panic!("a parameter struct must serialize to an object, not {other}"),
        Err(e) => panic!("the default parameters do not serialize: {e}"),
    }
}

/// The given parameters as an object, `_inject_panic` removed; whether it was `true`.
fn given_object(params: &Value) -> Result<(Map<String, Value>, bool), ParamError> {
    let mut given = match params {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        other => return Err(ParamError::NotATable { found: other.to_string() }),
    };
    let inject = given.remove(INJECT_PANIC_KEY).and_then(|v| v.as_bool()) == Some(true);
    Ok((given, inject))
}

/// Parse the host's parameter object into `P`: missing keys take their defaults; an unknown key,
/// a value of the wrong type and a failed [`PluginParams::check`] are refused with the key named.
/// Also returns whether `_inject_panic = true` was given.
pub(crate) fn parse<P: PluginParams>(params: &Value) -> Result<(P, bool), ParamError> {
    let (given, inject) = given_object(params)?;
    let defaults = defaults::<P>();
    let names: Vec<&str> = P::DOCS.iter().map(|(name, _)| *name).collect();
    for key in given.keys() {
        if !defaults.contains_key(key) {
            let suggestion = did_you_mean(key, names.iter().copied()).map(String::from);
            return Err(ParamError::Unknown { key: key.clone(), suggestion, known: names.iter().map(|n| n.to_string()).collect() });
        }
    }
    let parsed: P = match serde_json::from_value(Value::Object(given.clone())) {
        Ok(p) => p,
        Err(e) => return Err(type_error::<P>(&given, &defaults, &e.to_string())),
    };
    parsed.check()?;
    Ok((parsed, inject))
}

/// The error for a value serde refused: find the key by trying each given value alone.
fn type_error<P: PluginParams>(given: &Map<String, Value>, defaults: &Map<String, Value>, whole: &str) -> ParamError {
    for (key, value) in given {
        let alone = Map::from_iter([(key.clone(), value.clone())]);
        let Err(e) = serde_json::from_value::<P>(Value::Object(alone)) else { continue };
        let (key, found) = (key.clone(), value.to_string());
        let expected = defaults.get(&key).map(json_type).unwrap_or("");
        // An integer is a valid number.
        let number_for_float = expected == "float" && json_type(value) == "int";
        return if json_type(value) != expected && !number_for_float {
            ParamError::WrongType { key, expected, found }
        } else {
            ParamError::Refused { key, value: found, reason: e.to_string() }
        };
    }
    ParamError::Invalid { reason: whole.to_string() }
}

/// The schema type name of a JSON value.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::Bool(_) => "bool",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "table",
        Value::Null => "null",
    }
}

/// Where a parameter struct's docs and fields differ: a plugin author's mistake, which `describe`
/// and [`crate::testing::check_params`] refuse.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DocsMismatch(Vec<DocProblem>);

/// One difference between a parameter struct's docs and its fields.
#[derive(Debug, Clone, PartialEq)]
enum DocProblem {
    /// A field without a doc.
    Undocumented(String),
    /// A doc without a field.
    NotAField(String),
    /// A field whose doc is blank.
    EmptyDoc(String),
}

impl Display for DocsMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            match problem {
                DocProblem::Undocumented(key) => write!(f, "parameter `{key}` has no doc")?,
                DocProblem::NotAField(name) => write!(f, "doc for `{name}`, which is not a parameter")?,
                DocProblem::EmptyDoc(name) => write!(f, "parameter `{name}` has an empty doc")?,
            }
        }
        Ok(())
    }
}

/// Whether every field of `P` has a doc and every doc a field; the problems otherwise.
pub(crate) fn docs_match<P: PluginParams>() -> Result<(), DocsMismatch> {
    let defaults = defaults::<P>();
    let mut problems = Vec::new();
    for key in defaults.keys() {
        if !P::DOCS.iter().any(|(name, _)| name == key) {
            problems.push(DocProblem::Undocumented(key.clone()));
        }
    }
    for (name, doc) in P::DOCS {
        if !defaults.contains_key(*name) {
            problems.push(DocProblem::NotAField(name.to_string()));
        } else if doc.trim().is_empty() {
            problems.push(DocProblem::EmptyDoc(name.to_string()));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(DocsMismatch(problems))
    }
}

/// The `describe` document: `{"name", "version", "doc", "params": [{"name", "schema", "default",
/// "doc"}]}`, with each schema the JSON type of the default (`{"type": "int"}`, `"float"`,
/// `"bool"`, `"string"`). Fails when the docs and the fields differ.
pub(crate) fn describe_json<P: PluginParams>(name: &str, version: &str, doc: &str) -> Result<Value, DocsMismatch> {
    docs_match::<P>()?;
    let defaults = defaults::<P>();
    let params: Vec<Value> = P::DOCS
        .iter()
        .map(|(key, doc)| {
            let default = &defaults[*key];
            json!({"name": key, "schema": {"type": json_type(default)}, "default": default, "doc": doc})
        })
        .collect();
    Ok(json!({"name": name, "version": version, "doc": doc, "params": params}))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast,
        Exact,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Demo {
        samples: usize,
        rate: f64,
        verbose: bool,
        mode: Mode,
    }

    impl Default for Demo {
        fn default() -> Self {
            Demo { samples: 100, rate: 0.5, verbose: false, mode: Mode::Fast }
        }
    }

    impl PluginParams for Demo {
        const DOCS: &'static [(&'static str, &'static str)] =
            &[("samples", "inputs to draw"), ("rate", "a share"), ("verbose", "say more"), ("mode", "fast or exact")];
        fn check(&self) -> Result<(), ParamError> {
            at_least("samples", self.samples, 1)?;
            in_range("rate", self.rate, 0.0, 1.0)
        }
    }

    fn err(v: Value) -> String {
        match parse::<Demo>(&v) {
            Err(e) => e.to_string(),
            other => panic!("expected invalid params, got {other:?}"),
        }
    }

    #[test]
    fn missing_keys_take_the_defaults() {
        assert_eq!(parse::<Demo>(&json!({})).unwrap(), (Demo::default(), false));
        assert_eq!(parse::<Demo>(&Value::Null).unwrap().0, Demo::default());
        let (p, _) = parse::<Demo>(&json!({"samples": 7, "mode": "exact", "rate": 1})).unwrap();
        assert_eq!(p, Demo { samples: 7, mode: Mode::Exact, rate: 1.0, ..Demo::default() });
    }

    #[test]
    fn unknown_keys_are_refused_with_a_hint_and_the_list() {
        assert_eq!(
            err(json!({"sample": 3})),
            "unknown parameter `sample` (did you mean `samples`?); parameters: samples, rate, verbose, mode"
        );
        assert_eq!(err(json!({"zzzzzzzz": 3})), "unknown parameter `zzzzzzzz`; parameters: samples, rate, verbose, mode");
    }

    #[test]
    fn wrong_types_name_the_key() {
        assert_eq!(err(json!({"samples": "many"})), "parameter `samples` must be an integer, found \"many\"");
        assert_eq!(err(json!({"samples": 1.5})), "parameter `samples` must be an integer, found 1.5");
        assert_eq!(err(json!({"verbose": 1})), "parameter `verbose` must be true or false, found 1");
        let m = err(json!({"samples": -3}));
        assert!(m.starts_with("parameter `samples` = -3: invalid value"), "{m}");
        let m = err(json!({"mode": "slow", "samples": 2}));
        assert!(m.starts_with("parameter `mode` = \"slow\": unknown variant `slow`, expected"), "{m}");
        assert_eq!(err(json!([1])), "parameters must be a table, found [1]");
    }

    #[test]
    fn refusals_are_typed_and_name_their_key() {
        let e = parse::<Demo>(&json!({"samples": 0})).unwrap_err();
        assert_eq!(e, ParamError::TooSmall { key: "samples".into(), min: "1".into(), found: "0".into() });
        assert_eq!(e.key(), Some("samples"));
        let e = parse::<Demo>(&json!({"verbose": 1})).unwrap_err();
        assert!(matches!(&e, ParamError::WrongType { key, expected: "bool", .. } if key == "verbose"), "{e:?}");
        let e = parse::<Demo>(&json!({"sample": 3})).unwrap_err();
        assert!(matches!(&e, ParamError::Unknown { suggestion: Some(s), .. } if s == "samples"), "{e:?}");
        assert_eq!(parse::<Demo>(&json!([1])).unwrap_err().key(), None);
    }

    #[test]
    fn ranges_are_checked_by_the_hook() {
        assert_eq!(err(json!({"samples": 0})), "parameter `samples` must be ≥ 1, found 0");
        assert_eq!(err(json!({"rate": 2.5})), "parameter `rate` must be in [0, 1], found 2.5");
    }

    #[test]
    fn the_inject_panic_key_is_accepted_and_reported() {
        assert_eq!(parse::<Demo>(&json!({INJECT_PANIC_KEY: true})).unwrap(), (Demo::default(), true));
        assert_eq!(parse::<Demo>(&json!({INJECT_PANIC_KEY: false})).unwrap(), (Demo::default(), false));
    }

    #[test]
    fn describe_lists_every_parameter_with_its_default_type_and_doc() {
        let d = describe_json::<Demo>("demo", "1.2.3", "A demo.").unwrap();
        assert_eq!((d["name"].as_str(), d["version"].as_str(), d["doc"].as_str()), (Some("demo"), Some("1.2.3"), Some("A demo.")));
        let params = d["params"].as_array().unwrap();
        let names: Vec<&str> = params.iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["samples", "rate", "verbose", "mode"]);
        assert_eq!(params[0], json!({"name": "samples", "schema": {"type": "int"}, "default": 100, "doc": "inputs to draw"}));
        assert_eq!(params[1]["schema"], json!({"type": "float"}));
        assert_eq!(params[1]["default"], json!(0.5));
        assert_eq!(params[2]["schema"], json!({"type": "bool"}));
        assert_eq!(params[3]["default"], json!("fast"));
    }

    #[derive(Debug, Default, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Undocumented {
        a: usize,
        b: usize,
    }

    impl PluginParams for Undocumented {
        const DOCS: &'static [(&'static str, &'static str)] = &[("a", "documented"), ("c", "no such field")];
    }

    #[test]
    fn describe_fails_when_docs_and_fields_differ() {
        let e = describe_json::<Undocumented>("x", "0", "doc").unwrap_err();
        assert_eq!(e.to_string(), "parameter `b` has no doc; doc for `c`, which is not a parameter");
    }

    #[test]
    fn did_you_mean_takes_close_names_only() {
        assert_eq!(did_you_mean("globl_iterations", ["global_iterations", "local_iterations"]), Some("global_iterations"));
        assert_eq!(did_you_mean("xyz", ["global_iterations"]), None);
    }
}
