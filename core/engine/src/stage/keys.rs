//! A stage kind's keys, described once, by its config type: `#[derive(StageKeys)]` (from
//! `fairpipe-derive`, re-exported here) reads each key's name from serde, its description from
//! the field's `///` comment, its type text from [`KeyType`] and its default from what serde fills
//! in when the key is absent, serialized as TOML; the kind's [`KeyDoc`]s are the config's
//! [`StageKeys::keys`].

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde::de::{self, DeserializeOwned, Visitor};
use serde::Serialize;
use serde_json::Value;

use crate::stage::config_fields::Stop;
use crate::stage::kind::KeyDoc;

/// `#[derive(StageKeys)]`: implements [`StageKeys`] from a config struct's fields, or from a
/// tagged enum's variants.
pub use fairpipe_derive::StageKeys;

/// `#[derive(KeyType)]`: implements [`KeyType`] for an enum of choices, whose type text is its
/// serde names, `"a"|"b"`.
pub use fairpipe_derive::KeyType;

/// A config type's description of the keys it reads, in field order.
pub trait StageKeys {
    /// The keys, computed afresh.
    fn key_docs() -> Vec<KeyDoc>;
    /// The keys, computed once.
    fn keys() -> &'static [KeyDoc];
}

/// The text a key's type is documented with (`fairpipe list`).
pub trait KeyType {
    /// E.g. `int`, `string list`, `"rbf"|"linear"`.
    fn text() -> String;
}

macro_rules! key_types {
    ($text:literal: $($t:ty),*) => {
        $(impl KeyType for $t {
            fn text() -> String {
                $text.into()
            }
        })*
    };
}

key_types!("float": f64, f32);
key_types!("int": u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);
key_types!("bool": bool);
key_types!("string": String);
key_types!("path": PathBuf);
key_types!("table": serde_json::Value);

impl<T: KeyType> KeyType for Option<T> {
    fn text() -> String {
        T::text()
    }
}

impl<T: KeyType> KeyType for Vec<T> {
    fn text() -> String {
        format!("{} list", T::text())
    }
}

impl<T: KeyType, const N: usize> KeyType for [T; N] {
    fn text() -> String {
        format!("[{}]", vec![T::text(); N].join(", "))
    }
}

impl<K, V: KeyType> KeyType for BTreeMap<K, V> {
    fn text() -> String {
        format!("table of {}", V::text())
    }
}

impl<K, V: KeyType, S> KeyType for HashMap<K, V, S> {
    fn text() -> String {
        format!("table of {}", V::text())
    }
}

/// One key (the derive's constructor).
pub fn key(name: &'static str, ty: String, default: String, doc: &'static str) -> KeyDoc {
    KeyDoc { name, ty: Cow::Owned(ty), default: Cow::Owned(default), doc, only: Vec::new() }
}

/// Key `name` described as the shared key `like` (`#[key(shared = PATH)]`): a key several kinds
/// take, described once.
pub fn shared(name: &'static str, like: &KeyDoc) -> KeyDoc {
    KeyDoc { name, ..like.clone() }
}

/// A default value as the reference writes it: TOML, or `none` for an absent one.
pub fn default_text<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::Null) => "none".into(),
        Ok(v) => toml_value(&v),
        Err(e) => format!("(unwritable: {e})"),
    }
}

/// A deserializer that only notes the variants an enum asks for.
struct Variants<'c>(&'c Cell<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for Variants<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Stop> {
        self.0.set(variants);
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

/// The serde names of enum `T`'s variants, in order (none when `T` is read otherwise).
pub fn variant_names<T: DeserializeOwned>() -> &'static [&'static str] {
    let seen = Cell::new(&[][..]);
    let _ = T::deserialize(Variants(&seen));
    seen.get()
}

/// The type text of an enum of choices: `"a"|"b"`.
pub fn choices<T: DeserializeOwned>() -> String {
    variant_names::<T>().iter().map(|v| quote(v)).collect::<Vec<_>>().join("|")
}

/// The default of a tag key: its enum's first variant, which the engine reads when the tag is
/// absent ([`crate::stage::config_de`]).
pub fn first_variant<T: DeserializeOwned>() -> String {
    variant_names::<T>().first().map(|v| quote(v)).unwrap_or_else(|| "required".into())
}

/// The keys of a tagged enum: each variant's (`keys[i]` of variant `names[i]`), in order of first
/// appearance, each marked with the variants that have it. A key several variants have takes the
/// description of the first; its type and default must be the same in each (a debug assertion,
/// which the registry's tests reach for every kind).
pub fn variant_keys(names: &'static [&'static str], keys: Vec<Vec<KeyDoc>>) -> Vec<KeyDoc> {
    let mut out: Vec<KeyDoc> = Vec::new();
    for (variant, keys) in names.iter().zip(keys) {
        for key in keys {
            match out.iter_mut().find(|k| k.name == key.name) {
                Some(seen) => {
                    // One line of the reference describes the key for every variant that has it.
                    debug_assert!(
                        seen.ty == key.ty && seen.default == key.default,
                        "key `{}` has type {} default {} in one variant and type {} default {} in `{variant}`",
                        key.name,
                        seen.ty,
                        seen.default,
                        key.ty,
                        key.default
                    );
                    seen.only.push(variant)
                }
                None => out.push(KeyDoc { only: vec![*variant], ..key }),
            }
        }
    }
    out
}

/// A JSON value as a TOML value (inline tables and arrays).
pub fn toml_value(v: &Value) -> String {
    match v {
        Value::Null => "\"\"".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quote(s),
        Value::Array(items) => format!("[{}]", items.iter().map(toml_value).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => {
            let entries: Vec<String> =
                map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| format!("{} = {}", bare_or_quoted(k), toml_value(v))).collect();
            if entries.is_empty() {
                "{}".into()
            } else {
                format!("{{ {} }}", entries.join(", "))
            }
        }
    }
}

/// A TOML basic string.
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML key: bare when it may be, else quoted.
pub(crate) fn bare_or_quoted(key: &str) -> String {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        key.to_string()
    } else {
        quote(key)
    }
}

#[cfg(test)]
mod tests {
    use super::{KeyType, StageKeys};
    use crate::stage::config_fields::fields_of;
    use serde::{Deserialize, Serialize};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, KeyType)]
    #[serde(rename_all = "snake_case")]
    enum Colour {
        DeepRed,
        #[default]
        Blue,
    }

    #[derive(Debug, Serialize, Deserialize, StageKeys)]
    #[serde(deny_unknown_fields, default)]
    struct FastParams {
        /// Steps taken.
        steps: usize,
        /// Shade used, and a second line
        /// of text.
        colour: Colour,
    }

    impl Default for FastParams {
        fn default() -> Self {
            FastParams { steps: 3, colour: Colour::Blue }
        }
    }

    #[derive(Debug, Serialize, Deserialize, StageKeys)]
    #[serde(deny_unknown_fields, default)]
    struct SlowParams {
        /// Steps taken.
        steps: usize,
        /// Pause in seconds.
        pause: f64,
    }

    impl Default for SlowParams {
        fn default() -> Self {
            SlowParams { steps: 3, pause: 0.5 }
        }
    }

    #[derive(Debug, Deserialize, StageKeys)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast(FastParams),
        #[serde(rename = "slowly")]
        Slow(SlowParams),
    }

    fn default_rows() -> u64 {
        5000
    }

    #[derive(Debug, Deserialize, StageKeys)]
    #[serde(deny_unknown_fields)]
    struct Example {
        /// The CSV file to read.
        path: PathBuf,
        /// Column names kept.
        #[serde(rename = "keep")]
        columns: Option<Vec<String>>,
        /// Rows at most.
        #[serde(default = "default_rows")]
        rows: u64,
        /// SVM kernel width.
        #[serde(default)]
        #[key(default = "1 / features")]
        width: Option<f64>,
        /// How it runs.
        #[serde(rename = "+mode")]
        mode: Mode,
        /// Weight of each group.
        #[serde(default)]
        weights: BTreeMap<String, f64>,
        #[serde(skip)]
        #[allow(dead_code)]
        cache: u8,
        /// Which side.
        #[serde(default)]
        #[key(ty = "\"left\"|\"right\"")]
        side: String,
    }

    /// A key two variants give different defaults cannot be one line of the reference.
    #[test]
    #[should_panic(expected = "key `steps` has type int default 3 in one variant and type int default 4 in `slowly`")]
    fn a_key_whose_variants_disagree_is_refused() {
        let steps = |default: &str| super::key("steps", "int".into(), default.into(), "steps taken");
        super::variant_keys(&["fast", "slowly"], vec![vec![steps("3")], vec![steps("4")]]);
    }

    type Row = (&'static str, String, String, &'static str, Vec<&'static str>);

    fn rows<C: StageKeys>() -> Vec<Row> {
        C::key_docs().into_iter().map(|k| (k.name, k.ty.into_owned(), k.default.into_owned(), k.doc, k.only)).collect()
    }

    fn row(name: &'static str, ty: &str, default: &str, doc: &'static str, only: &[&'static str]) -> Row {
        (name, ty.into(), default.into(), doc, only.to_vec())
    }

    /// The derive names each key as serde reads it (rename, `+tag`, skip), types it by
    /// `KeyType` (an `Option` looked through, an enum's choices) or `#[key(ty)]`, defaults it as
    /// serde does (a required key, `None`, a field's default function, the params struct's
    /// `Default`, the tag's first variant) or by `#[key(default)]`, describes it by its comment,
    /// and marks a variant's key with the variants that have it.
    #[test]
    fn the_derive_describes_each_key_as_serde_reads_it() {
        let expected = vec![
            row("path", "path", "required", "the CSV file to read", &[]),
            row("keep", "string list", "none", "column names kept", &[]),
            row("rows", "int", "5000", "rows at most", &[]),
            row("width", "float", "1 / features", "SVM kernel width", &[]),
            row("mode", "\"fast\"|\"slowly\"", "\"fast\"", "how it runs", &[]),
            row("steps", "int", "3", "steps taken", &["fast", "slowly"]),
            row("colour", "\"deep_red\"|\"blue\"", "\"blue\"", "shade used, and a second line of text", &["fast"]),
            row("pause", "float", "0.5", "pause in seconds", &["slowly"]),
            row("weights", "table of float", "{}", "weight of each group", &[]),
            row("side", "\"left\"|\"right\"", "\"\"", "which side", &[]),
        ];
        assert_eq!(rows::<Example>(), expected);
        assert_eq!(Example::keys().len(), expected.len(), "computed once, the same");

        // Against serde itself: the keys are the fields its `Deserialize` asks for, each under
        // the variants that have it.
        let mut asked: Vec<(Option<&str>, &str)> = fields_of::<Example>();
        asked.sort_unstable();
        let mut documented: Vec<(Option<&str>, &str)> = Vec::new();
        for (name, _, _, _, only) in &expected {
            if *name == "mode" {
                continue;
            }
            if only.is_empty() {
                documented.push((None, name));
            }
            documented.extend(only.iter().map(|v| (Some(*v), *name)));
        }
        documented.sort_unstable();
        assert_eq!(asked, documented);

        // The defaults written as values are what serde fills in.
        let read: Example = serde_json::from_str(r#"{"path": "a.csv", "+mode": {"fast": {}}}"#).unwrap();
        assert_eq!((read.rows, read.side.as_str(), read.weights.len(), read.columns), (5000, "", 0, None));
        let Mode::Fast(fast) = read.mode else { panic!("fast") };
        assert_eq!((fast.steps, fast.colour), (3, Colour::Blue));
        assert!(read.width.is_none() && read.cache == 0);
        assert_eq!(read.path, PathBuf::from("a.csv"));
        let slow: Example = serde_json::from_str(r#"{"path": "a.csv", "+mode": {"slowly": {}}}"#).unwrap();
        let Mode::Slow(slow) = slow.mode else { panic!("slowly") };
        assert_eq!((slow.steps, slow.pause), (3, 0.5));
        assert_eq!(Colour::text(), "\"deep_red\"|\"blue\"");
    }
}
