//! A `serde::Deserializer` over the spanned values of phase one ([`fairpipe_data::toml_spans`]): a
//! `#[derive(Deserialize)]` config is filled from a [`Sp<Val>`] and every error carries the span
//! and key of the value or key that caused it (unknown key, wrong type, integer out of range,
//! unknown choice, missing key).
//!
//! **Variants.** A struct field whose serde name starts with `+` (e.g. `#[serde(rename =
//! "+algorithm")]`) holds a tagged enum whose tag sits beside the other keys: the tag key is the
//! name after `+` (`algorithm = "logistic"`, the first variant when absent) and the variant's own
//! struct is read from every key the outer struct does not declare. A key of another variant is
//! then an unknown key of this one, and the error says which variant was being read.
//!
//! **Flattened structs.** A struct field whose serde name starts with `*` (e.g.
//! `#[serde(rename(deserialize = "*page"))]`) holds a struct read from every key the outer struct
//! does not declare, so a group of keys can be one type without a table of its own; an unknown key
//! is then an unknown key of that struct (give it `deny_unknown_fields`).

use std::fmt::Display;
use std::ops::Range;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};

use crate::suggest::hint;
use fairpipe_data::toml_spans::{Sp, Val};

/// What went wrong while a config was read.
#[derive(Debug, Clone, PartialEq)]
pub enum DeProblem {
    /// A key the config does not declare; `expected` are the keys it does.
    UnknownKey {
        /// The key.
        key: String,
        /// The keys declared where it was found.
        expected: &'static [&'static str],
    },
    /// A required key is absent.
    MissingKey(&'static str),
    /// Anything else, phrased to follow "`key` " (e.g. "must be an integer, found a string").
    Message(String),
}

/// A located config error: what, at which key path (`trials`, `columns.age.min`) and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct DeError {
    /// What went wrong.
    pub problem: DeProblem,
    /// Dotted key path of the offending key or value, when known.
    pub key: Option<String>,
    /// Byte span of the offending key or value, when known.
    pub span: Option<Range<usize>>,
    /// `(tag key, tag value)` of the variant being read, when inside one.
    pub variant: Option<Box<(String, String)>>,
}

impl DeError {
    fn new(problem: DeProblem) -> Self {
        DeError { problem, key: None, span: None, variant: None }
    }

    fn msg(message: impl Into<String>) -> Self {
        Self::new(DeProblem::Message(message.into()))
    }

    /// Fill in the key and span if not known yet.
    fn locate(mut self, key: &str, span: &Range<usize>) -> Self {
        if self.key.is_none() && !key.is_empty() {
            self.key = Some(key.to_string());
        }
        if self.span.is_none() {
            self.span = Some(span.clone());
        }
        self
    }

    /// The message without the stage: "`trials` must be an integer, found a string".
    pub fn describe(&self) -> String {
        match &self.problem {
            DeProblem::UnknownKey { key, expected } => {
                let at = self.key.as_deref().and_then(|k| k.rsplit_once('.')).map(|(parent, _)| format!("{parent}: ")).unwrap_or_default();
                format!("{at}unknown key `{key}`{}; accepted: {}", hint(key, expected), expected.join(", "))
            }
            DeProblem::MissingKey(k) => format!("missing `{k}`"),
            DeProblem::Message(m) => match &self.key {
                Some(k) => format!("`{k}` {m}"),
                None => m.clone(),
            },
        }
    }
}

/// A value's kind in words, for "found …".
fn unexpected(u: &de::Unexpected<'_>) -> String {
    match u {
        de::Unexpected::Bool(_) => "a boolean".into(),
        de::Unexpected::Signed(_) | de::Unexpected::Unsigned(_) => "an integer".into(),
        de::Unexpected::Float(_) => "a float".into(),
        de::Unexpected::Str(_) | de::Unexpected::Char(_) => "a string".into(),
        de::Unexpected::Seq => "an array".into(),
        de::Unexpected::Map => "a table".into(),
        other => other.to_string(),
    }
}

impl de::Error for DeError {
    fn custom<T: Display>(msg: T) -> Self {
        DeError::msg(msg.to_string())
    }

    fn invalid_type(unexp: de::Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        DeError::msg(format!("must be {exp}, found {}", unexpected(&unexp)))
    }

    fn invalid_value(unexp: de::Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        DeError::msg(format!("must be {exp}, found {unexp}"))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        DeError::msg(format!("must be one of {}, found {variant:?}{}", expected.join(", "), hint(variant, expected)))
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        DeError::new(DeProblem::UnknownKey { key: field.to_string(), expected })
    }

    fn missing_field(field: &'static str) -> Self {
        DeError::new(DeProblem::MissingKey(field))
    }
}

type DeResult<T> = std::result::Result<T, DeError>;

/// What a [`ValueDe`] reads: a value, or a tagged variant assembled from a table's keys.
#[derive(Clone)]
enum Node<'a> {
    Val(&'a Sp<Val>),
    Tagged { tag_key: &'static str, tag: Option<&'a (Sp<String>, Sp<Val>)>, rest: Vec<&'a (Sp<String>, Sp<Val>)>, span: Range<usize> },
}

/// A `serde::Deserializer` over one spanned value; `path` is its dotted key path, for messages.
#[derive(Clone)]
pub struct ValueDe<'a> {
    node: Node<'a>,
    path: String,
}

impl<'a> ValueDe<'a> {
    /// A deserializer over `value`, known as `path` in messages.
    pub fn new(value: &'a Sp<Val>, path: impl Into<String>) -> Self {
        ValueDe { node: Node::Val(value), path: path.into() }
    }

    fn span(&self) -> Range<usize> {
        match &self.node {
            Node::Val(v) => v.span.clone(),
            Node::Tagged { span, .. } => span.clone(),
        }
    }

    fn val(&self) -> DeResult<&'a Sp<Val>> {
        match &self.node {
            Node::Val(v) => Ok(v),
            Node::Tagged { .. } => Err(DeError::msg("is a variant, not a value")),
        }
    }

    fn wrong(&self, expected: &str) -> DeError {
        let found = match &self.node {
            Node::Val(v) => v.v.type_name(),
            Node::Tagged { .. } => "a table",
        };
        DeError::msg(format!("must be {expected}, found {found}")).locate(&self.path, &self.span())
    }

    fn int(&self) -> DeResult<i64> {
        match self.val()?.v {
            Val::Int(i) => Ok(i),
            _ => Err(self.wrong("an integer")),
        }
    }

    fn unsigned(&self, max: u64) -> DeResult<u64> {
        let i = self.int()?;
        if i < 0 {
            return Err(DeError::msg(format!("must be a non-negative integer, found {i}")).locate(&self.path, &self.span()));
        }
        if i as u64 > max {
            return Err(DeError::msg(format!("must be at most {max}, found {i}")).locate(&self.path, &self.span()));
        }
        Ok(i as u64)
    }

    fn signed(&self, min: i64, max: i64) -> DeResult<i64> {
        let i = self.int()?;
        if i < min || i > max {
            return Err(DeError::msg(format!("must lie in [{min}, {max}], found {i}")).locate(&self.path, &self.span()));
        }
        Ok(i)
    }

    /// Locate an error raised by a visitor at this value.
    fn here<T>(&self, r: DeResult<T>) -> DeResult<T> {
        r.map_err(|e| e.locate(&self.path, &self.span()))
    }
}

macro_rules! unsigned {
    ($($method:ident $visit:ident $ty:ty),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
            let v = self.unsigned(<$ty>::MAX as u64)? as $ty;
            self.here(visitor.$visit(v))
        }
    )*};
}

macro_rules! signed {
    ($($method:ident $visit:ident $ty:ty),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
            let v = self.signed(<$ty>::MIN as i64, <$ty>::MAX as i64)? as $ty;
            self.here(visitor.$visit(v))
        }
    )*};
}

impl<'de, 'a> de::Deserializer<'de> for ValueDe<'a> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        let v = self.val()?;
        let r = match &v.v {
            Val::Str(s) | Val::Datetime(s) => visitor.visit_str(s),
            Val::Int(i) => visitor.visit_i64(*i),
            Val::Float(f) => visitor.visit_f64(*f),
            Val::Bool(b) => visitor.visit_bool(*b),
            Val::Array(items) => return self.deserialize_seq_items(items, visitor),
            Val::Table(entries) => return self.deserialize_table(entries.iter().collect(), &[], visitor),
        };
        self.here(r)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        match self.val()?.v {
            Val::Bool(b) => self.here(visitor.visit_bool(b)),
            _ => Err(self.wrong("true or false")),
        }
    }

    unsigned!(deserialize_u8 visit_u8 u8, deserialize_u16 visit_u16 u16, deserialize_u32 visit_u32 u32, deserialize_u64 visit_u64 u64);
    signed!(deserialize_i8 visit_i8 i8, deserialize_i16 visit_i16 i16, deserialize_i32 visit_i32 i32, deserialize_i64 visit_i64 i64);

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        match self.val()?.v {
            Val::Int(i) => self.here(visitor.visit_f64(i as f64)),
            Val::Float(f) => self.here(visitor.visit_f64(f)),
            _ => Err(self.wrong("a number")),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        match &self.val()?.v {
            Val::Str(s) => self.here(visitor.visit_str(s)),
            _ => Err(self.wrong("a string")),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, _visitor: V) -> DeResult<V::Value> {
        Err(self.wrong("nothing"))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> DeResult<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> DeResult<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    /// An array; a single value counts as a one-element list (`protected = "gender"`).
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        let v = self.val()?;
        match &v.v {
            Val::Array(items) => self.deserialize_seq_items(items, visitor),
            Val::Table(_) => Err(self.wrong("a list")),
            _ => self.deserialize_seq_items(std::slice::from_ref(v), visitor),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> DeResult<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(self, _name: &'static str, _len: usize, visitor: V) -> DeResult<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        match &self.val()?.v {
            Val::Table(entries) => self.deserialize_table(entries.iter().collect(), &[], visitor),
            _ => Err(self.wrong("a table")),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(self, _name: &'static str, fields: &'static [&'static str], visitor: V) -> DeResult<V::Value> {
        match &self.node {
            Node::Tagged { rest, .. } => {
                let rest = rest.clone();
                self.deserialize_table(rest, fields, visitor)
            }
            Node::Val(Sp { v: Val::Table(entries), .. }) => self.deserialize_table(entries.iter().collect(), fields, visitor),
            Node::Val(_) => Err(self.wrong("a table")),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(self, _name: &'static str, variants: &'static [&'static str], visitor: V) -> DeResult<V::Value> {
        match &self.node {
            Node::Val(Sp { v: Val::Str(s), span }) => {
                let r = visitor.visit_enum(UnitVariant { name: s.as_str(), span: span.clone() });
                self.here(r)
            }
            Node::Val(_) => Err(self.wrong("a string")),
            Node::Tagged { tag_key, tag, rest, span } => {
                let (name, tag_span, tag_path) = match tag {
                    Some((k, v)) => match &v.v {
                        Val::Str(s) => (s.clone(), v.span.clone(), k.v.clone()),
                        other => {
                            return Err(DeError::msg(format!("must be a string, found {}", other.type_name())).locate(&k.v, &v.span));
                        }
                    },
                    None => (variants.first().copied().unwrap_or_default().to_string(), span.clone(), tag_key.to_string()),
                };
                let content =
                    ValueDe { node: Node::Tagged { tag_key, tag: None, rest: rest.clone(), span: span.clone() }, path: self.path.clone() };
                let variant = (tag_key.to_string(), name.clone());
                visitor
                    .visit_enum(TaggedVariant { name, tag_span, tag_path, content })
                    .map_err(|mut e| {
                        if e.variant.is_none() {
                            e.variant = Some(Box::new(variant));
                        }
                        e
                    })
                    .map_err(|e| e.locate(&self.path, span))
            }
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> DeResult<V::Value> {
        visitor.visit_unit()
    }
}

impl<'a> ValueDe<'a> {
    fn deserialize_seq_items<'de, V: Visitor<'de>>(&self, items: &'a [Sp<Val>], visitor: V) -> DeResult<V::Value> {
        let r = visitor.visit_seq(Items { items: items.iter(), path: self.path.clone() });
        self.here(r)
    }

    /// A table's `entries` as a map, or as a struct declaring `fields` (a `+tag` field takes the
    /// tag and every undeclared key; a `*name` field, a struct, takes every undeclared key).
    fn deserialize_table<'de, V: Visitor<'de>>(
        &self,
        entries: Vec<&'a (Sp<String>, Sp<Val>)>,
        fields: &'static [&'static str],
        visitor: V,
    ) -> DeResult<V::Value> {
        let span = self.span();
        let mut items: Vec<(String, Range<usize>, Node<'a>)> = Vec::new();
        match fields.iter().find(|f| f.starts_with(['+', '*'])) {
            None => items.extend(entries.iter().map(|e| (e.0.v.clone(), e.0.span.clone(), Node::Val(&e.1)))),
            Some(flat) if flat.starts_with('*') => {
                // A `*name` field is a struct read from every key this one does not declare.
                let mut rest = Vec::new();
                for e in &entries {
                    if fields.contains(&e.0.v.as_str()) {
                        items.push((e.0.v.clone(), e.0.span.clone(), Node::Val(&e.1)));
                    } else {
                        rest.push(*e);
                    }
                }
                items.push((flat.to_string(), span.clone(), Node::Tagged { tag_key: "", tag: None, rest, span: span.clone() }));
            }
            Some(tagged) => {
                let tag_key = &tagged[1..];
                let mut rest = Vec::new();
                let mut tag = None;
                for e in &entries {
                    if e.0.v == tag_key {
                        tag = Some(*e);
                    } else if fields.contains(&e.0.v.as_str()) {
                        items.push((e.0.v.clone(), e.0.span.clone(), Node::Val(&e.1)));
                    } else {
                        rest.push(*e);
                    }
                }
                items.push((tagged.to_string(), span.clone(), Node::Tagged { tag_key, tag, rest, span: span.clone() }));
            }
        }
        let r = visitor.visit_map(Entries { items: items.into_iter(), value: None, parent: self.path.clone() });
        self.here(r)
    }
}

/// The elements of an array.
struct Items<'a> {
    items: std::slice::Iter<'a, Sp<Val>>,
    path: String,
}

impl<'de, 'a> de::SeqAccess<'de> for Items<'a> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> DeResult<Option<T::Value>> {
        match self.items.next() {
            None => Ok(None),
            Some(item) => seed.deserialize(ValueDe::new(item, self.path.clone())).map(Some),
        }
    }
}

/// The entries of a table.
struct Entries<'a> {
    items: std::vec::IntoIter<(String, Range<usize>, Node<'a>)>,
    value: Option<(String, Node<'a>)>,
    parent: String,
}

impl<'de, 'a> de::MapAccess<'de> for Entries<'a> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> DeResult<Option<K::Value>> {
        let Some((key, span, node)) = self.items.next() else { return Ok(None) };
        // A `+tag` or `*name` entry stands for keys of this same table: its keys keep this table's path.
        let path = if key.starts_with(['+', '*']) {
            self.parent.clone()
        } else if self.parent.is_empty() {
            key.clone()
        } else {
            format!("{}.{key}", self.parent)
        };
        let k = seed.deserialize(key.as_str().into_deserializer()).map_err(|e: DeError| e.locate(&path, &span))?;
        self.value = Some((path, node));
        Ok(Some(k))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> DeResult<V::Value> {
        let (path, node) = self.value.take().ok_or_else(|| DeError::msg("a value without a key"))?;
        seed.deserialize(ValueDe { node, path })
    }
}

/// A choice written as a string: `split = "test"`.
struct UnitVariant<'a> {
    name: &'a str,
    span: Range<usize>,
}

impl<'de, 'a> de::EnumAccess<'de> for UnitVariant<'a> {
    type Error = DeError;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> DeResult<(V::Value, Self)> {
        let v = seed.deserialize(self.name.into_deserializer())?;
        Ok((v, self))
    }
}

impl<'de, 'a> de::VariantAccess<'de> for UnitVariant<'a> {
    type Error = DeError;

    fn unit_variant(self) -> DeResult<()> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _seed: T) -> DeResult<T::Value> {
        Err(DeError::msg(format!("`{}` needs settings of its own, which a plain string cannot give", self.name)).locate("", &self.span))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> DeResult<V::Value> {
        Err(DeError::msg("a tuple variant cannot be written as a string"))
    }

    fn struct_variant<V: Visitor<'de>>(self, _fields: &'static [&'static str], _visitor: V) -> DeResult<V::Value> {
        Err(DeError::msg("a struct variant cannot be written as a string"))
    }
}

/// A variant picked by a tag key beside its own keys.
struct TaggedVariant<'a> {
    name: String,
    tag_span: Range<usize>,
    tag_path: String,
    content: ValueDe<'a>,
}

impl<'de, 'a> de::EnumAccess<'de> for TaggedVariant<'a> {
    type Error = DeError;
    type Variant = ValueDe<'a>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> DeResult<(V::Value, ValueDe<'a>)> {
        let v = seed.deserialize(self.name.as_str().into_deserializer()).map_err(|e: DeError| e.locate(&self.tag_path, &self.tag_span))?;
        Ok((v, self.content))
    }
}

impl<'de, 'a> de::VariantAccess<'de> for ValueDe<'a> {
    type Error = DeError;

    fn unit_variant(self) -> DeResult<()> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> DeResult<T::Value> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> DeResult<V::Value> {
        Err(DeError::msg("tuple variants are not supported"))
    }

    fn struct_variant<V: Visitor<'de>>(self, fields: &'static [&'static str], visitor: V) -> DeResult<V::Value> {
        de::Deserializer::deserialize_struct(self, "", fields, visitor)
    }
}

/// Read a `T` from table `entries` (the span `span` stands for the table as a whole, for missing
/// keys). On error, the offending key is dropped and the read retried, so that every problem of
/// the table is reported at once.
pub fn from_entries<T: DeserializeOwned>(entries: &[&(Sp<String>, Sp<Val>)], span: Range<usize>) -> std::result::Result<T, Vec<DeError>> {
    match read_all(entries, span) {
        (Some(t), errors) if errors.is_empty() => Ok(t),
        (_, errors) => Err(errors),
    }
}

/// Like [`from_entries`], but also return the value read once the offending keys are dropped
/// (their defaults in their place), so that it can be checked further.
pub fn read_all<T: DeserializeOwned>(entries: &[&(Sp<String>, Sp<Val>)], span: Range<usize>) -> (Option<T>, Vec<DeError>) {
    let mut entries: Vec<(Sp<String>, Sp<Val>)> = entries.iter().map(|e| (*e).clone()).collect();
    let mut errors = Vec::new();
    for _ in 0..64 {
        let table = Sp { v: Val::Table(entries.clone()), span: span.clone() };
        match T::deserialize(ValueDe::new(&table, "")) {
            Ok(t) => return (Some(t), errors),
            Err(e) => {
                let top = e.key.as_deref().map(|k| k.split(['.', '[']).next().unwrap_or(k).to_string());
                let before = entries.len();
                if let Some(top) = &top {
                    entries.retain(|(k, _)| &k.v != top);
                }
                // A bad tag (`algorithm = "lgistic"`): reading on with the default variant would
                // only report that variant's complaints about the other keys.
                let bad_tag = e.variant.as_ref().is_some_and(|v| e.key.as_deref() == Some(v.0.as_str()));
                errors.push(e);
                if entries.len() == before || bad_tag {
                    return (None, errors);
                }
            }
        }
    }
    (None, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    use crate::stage::config_fields::fields_of;
    use fairpipe_data::toml_spans::{line_col, parse};

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Flat {
        label: String,
        #[serde(default)]
        trials: u64,
        #[serde(default)]
        split: Option<Choice>,
        #[serde(default)]
        names: Vec<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Choice {
        Train,
        Test,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct WithVariants {
        #[serde(rename = "+algorithm")]
        algorithm: Algorithm,
        #[serde(default)]
        save: Option<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Algorithm {
        Mlp(Mlp),
        Logistic(Logistic),
    }

    #[derive(Debug, Deserialize, PartialEq, Default)]
    #[serde(deny_unknown_fields, default)]
    struct Mlp {
        hidden: Vec<u64>,
    }

    #[derive(Debug, Deserialize, PartialEq, Default)]
    #[serde(deny_unknown_fields, default)]
    struct Logistic {
        alpha: f64,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct WithFlattened {
        label: String,
        #[serde(rename = "*page")]
        page: Page,
    }

    #[derive(Debug, Deserialize, PartialEq, Default)]
    #[serde(deny_unknown_fields, default)]
    struct Page {
        tool: Option<String>,
        auditor: Option<String>,
    }

    /// Read `T` from TOML `text`; errors as (line, col, message).
    fn read<T: DeserializeOwned>(text: &str) -> std::result::Result<T, Vec<(usize, usize, String)>> {
        let root = parse(text).map_err(|(m, s)| vec![(line_col(text, s.start).0, line_col(text, s.start).1, m)])?;
        let Val::Table(entries) = &root.v else { unreachable!() };
        let refs: Vec<_> = entries.iter().collect();
        from_entries(&refs, 0..0).map_err(|errors| {
            errors
                .iter()
                .map(|e| {
                    let (l, c) = line_col(text, e.span.clone().unwrap_or(0..0).start);
                    (l, c, e.describe())
                })
                .collect()
        })
    }

    #[test]
    fn a_good_table_is_read() {
        let f: Flat = read("label = \"y\"\ntrials = 3\nsplit = \"test\"\nnames = \"a\"\n").unwrap();
        assert_eq!(f, Flat { label: "y".into(), trials: 3, split: Some(Choice::Test), names: vec!["a".into()] });
    }

    #[test]
    fn unknown_key_is_located_with_a_suggestion() {
        let e = read::<Flat>("label = \"y\"\ntrails = 3\n").unwrap_err();
        assert_eq!(e[0].0, 2);
        assert_eq!(e[0].1, 1);
        assert!(e[0].2.contains("unknown key `trails` (did you mean `trials`?)"), "{e:?}");
    }

    #[test]
    fn a_flattened_struct_reads_the_undeclared_keys_and_refuses_unknown_ones() {
        let f: WithFlattened = read("label = \"y\"\ntool = \"t\"\n").unwrap();
        assert_eq!(f, WithFlattened { label: "y".into(), page: Page { tool: Some("t".into()), auditor: None } });
        let f: WithFlattened = read("label = \"y\"\n").unwrap();
        assert_eq!(f.page, Page::default());
        let e = read::<WithFlattened>("label = \"y\"\nauditr = \"a\"\n").unwrap_err();
        assert_eq!((e[0].0, e[0].1), (2, 1), "{e:?}");
        assert!(e[0].2.contains("unknown key `auditr` (did you mean `auditor`?)"), "{e:?}");
        let e = read::<WithFlattened>("label = \"y\"\ntool = 3\n").unwrap_err();
        assert_eq!(e[0].2, "`tool` must be a string, found an integer", "{e:?}");
    }

    #[test]
    fn wrong_type_is_located_at_the_value() {
        let e = read::<Flat>("label = \"y\"\ntrials = \"ten\"\n").unwrap_err();
        assert_eq!((e[0].0, e[0].1), (2, 10));
        assert_eq!(e[0].2, "`trials` must be an integer, found a string");
    }

    #[test]
    fn out_of_range_integers_are_refused() {
        let e = read::<Flat>("label = \"y\"\ntrials = -3\n").unwrap_err();
        assert_eq!((e[0].0, e[0].1), (2, 10));
        assert_eq!(e[0].2, "`trials` must be a non-negative integer, found -3");
        let e = read::<Flat>("label = \"y\"\ntrials = 99999999999999999999\n").unwrap_err();
        assert_eq!((e[0].0, e[0].1), (2, 10), "{e:?}");
        assert!(e[0].2.contains("out of range"), "{e:?}");
    }

    #[test]
    fn missing_key_and_unknown_choice_are_reported_together() {
        let e = read::<Flat>("split = \"tset\"\n").unwrap_err();
        assert_eq!(e.len(), 2, "{e:?}");
        assert_eq!((e[0].0, e[0].1), (1, 9));
        assert_eq!(e[0].2, "`split` must be one of train, test, found \"tset\" (did you mean `test`?)");
        assert_eq!((e[1].0, e[1].1, e[1].2.as_str()), (1, 1, "missing `label`"), "located at the table");
    }

    #[test]
    fn list_items_are_located() {
        let e = read::<Flat>("label = \"y\"\nnames = [\"a\", 3]\n").unwrap_err();
        assert_eq!((e[0].0, e[0].1), (2, 15));
        assert_eq!(e[0].2, "`names` must be a string, found an integer");
    }

    #[test]
    fn variants_are_picked_by_their_tag_and_refuse_other_variants_keys() {
        let w: WithVariants = read("algorithm = \"logistic\"\nalpha = 2\nsave = \"m.json\"\n").unwrap();
        assert_eq!(w, WithVariants { algorithm: Algorithm::Logistic(Logistic { alpha: 2.0 }), save: Some("m.json".into()) });
        let w: WithVariants = read("hidden = [3]\n").unwrap();
        assert_eq!(w.algorithm, Algorithm::Mlp(Mlp { hidden: vec![3] }), "the first variant is the default");
        let text = "algorithm = \"logistic\"\nhidden = [3]\n";
        let root = parse(text).unwrap();
        let Val::Table(entries) = &root.v else { unreachable!() };
        let refs: Vec<_> = entries.iter().collect();
        let e = &from_entries::<WithVariants>(&refs, 0..0).unwrap_err()[0];
        assert_eq!(line_col(text, e.span.clone().unwrap().start), (2, 1));
        assert_eq!(e.problem, DeProblem::UnknownKey { key: "hidden".into(), expected: &["alpha"] });
        assert_eq!(e.variant.as_deref(), Some(&("algorithm".to_string(), "logistic".to_string())));
        assert_eq!(e.key.as_deref(), Some("hidden"));
        let e = read::<WithVariants>("algorithm = \"lgistic\"\n").unwrap_err();
        assert_eq!((e[0].0, e[0].1), (1, 13));
        assert!(e[0].2.contains("must be one of mlp, logistic, found \"lgistic\" (did you mean `logistic`?)"), "{e:?}");
    }

    #[test]
    fn fields_are_listed_per_variant() {
        assert_eq!(fields_of::<Flat>(), vec![(None, "label"), (None, "names"), (None, "split"), (None, "trials")]);
        assert_eq!(fields_of::<WithVariants>(), vec![(None, "save"), (Some("logistic"), "alpha"), (Some("mlp"), "hidden")]);
    }
}
