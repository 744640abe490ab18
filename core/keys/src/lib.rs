//! Keys described once, by the config type that reads them: `#[derive(StageKeys)]` (from
//! `fairpipe-derive`, re-exported here) reads each key's name from serde, its description from
//! the field's `///` comment, its type text from [`KeyType`] and its default from what serde fills
//! in when the key is absent, serialized as TOML; the [`KeyDoc`]s are the config's
//! [`StageKeys::keys`].
//!
//! Below the models crate, so that a model's own config block (`load_model`'s `llm = { … }`,
//! `fairpipe_models::llm::config::LlmConfig`) describes its keys the way a stage kind's config
//! does, and the engine's stage reference, `fairpipe list --markdown llm` and docs/llm-audits.md
//! print them from the one description.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;
use std::path::PathBuf;

use serde::de::{self, DeserializeOwned, Visitor};
use serde::Serialize;
use serde_json::Value;

/// One key a config type reads, as its `#[derive(StageKeys)]` describes it.
#[derive(Debug, Clone)]
pub struct KeyDoc {
    /// TOML key.
    pub name: &'static str,
    /// Expected type.
    pub ty: Cow<'static, str>,
    /// Default value ("required" when there is none, "none" when the key is absent by default).
    pub default: Cow<'static, str>,
    /// What it does.
    pub doc: &'static str,
    /// The values of the kind's tag key (e.g. `algorithm`) under which the key applies; empty when
    /// it applies to every variant.
    pub only: Vec<&'static str>,
    /// The keys of the table this key holds (`#[key(nested)]`: `llm = { … }`'s), listed after it
    /// as `KEY.SUBKEY`; `None` for a plain value.
    pub nested: Option<fn() -> &'static [KeyDoc]>,
}

impl KeyDoc {
    /// A key described by hand, applying to every variant: for a key several kinds share
    /// (the engine's `stages::options::PROTECTED`), which their configs name with
    /// `#[key(shared = PATH)]`.
    pub const fn new(name: &'static str, ty: &'static str, default: &'static str, doc: &'static str) -> Self {
        KeyDoc { name, ty: Cow::Borrowed(ty), default: Cow::Borrowed(default), doc, only: Vec::new(), nested: None }
    }

    /// This key holding a table whose keys are `keys` (`#[key(nested)]`).
    pub fn holding(self, keys: fn() -> &'static [KeyDoc]) -> Self {
        KeyDoc { nested: Some(keys), ..self }
    }

    /// The key's lines in a reference (`fairpipe list`, the docs' generated blocks): its own, then
    /// those of the keys of the table it holds, as `KEY.SUBKEY`; `prefix` goes before each name.
    pub fn reference_lines(&self, prefix: &str) -> Vec<String> {
        // A key of some variants only says which (`tree/forest: depth limit`).
        let only = if self.only.is_empty() { String::new() } else { format!("{}: ", self.only.join("/")) };
        let name = format!("{prefix}{}", self.name);
        let mut lines = vec![format!("  param  {name:<16} {:<22} default {:<12} {only}{}", self.ty, self.default, self.doc)];
        if let Some(nested) = self.nested {
            let inner = format!("{name}.");
            lines.extend(nested().iter().flat_map(|k| k.reference_lines(&inner)));
        }
        lines
    }
}

/// Every line of `keys` in a reference ([`KeyDoc::reference_lines`]), each ending in a newline.
pub fn reference(keys: &[KeyDoc]) -> String {
    keys.iter().flat_map(|k| k.reference_lines("")).map(|l| l + "\n").collect()
}

/// Stops a capture once it has seen what it came for ([`variant_names`]; the engine's capture of
/// a config's fields too).
#[derive(Debug)]
pub struct Stop;

impl Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stop")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: Display>(_msg: T) -> Self {
        Stop
    }
}

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
    KeyDoc { name, ty: Cow::Owned(ty), default: Cow::Owned(default), doc, only: Vec::new(), nested: None }
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
/// absent (the engine's `stage::config_de`).
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
pub fn bare_or_quoted(key: &str) -> String {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        key.to_string()
    } else {
        quote(key)
    }
}
