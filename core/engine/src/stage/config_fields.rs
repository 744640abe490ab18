//! The fields of a config type, found by letting its `Deserialize` impl ask for them: used by the
//! test that keeps each stage kind's documented keys and its config struct in step.

use std::cell::RefCell;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};

/// Stops a capture once it has seen what it came for (`fairpipe-keys`' own, which
/// [`crate::stage::keys::variant_names`] stops with).
pub(crate) use fairpipe_keys::Stop;

/// A deserializer that records the fields of the structs it is asked for, entering variant
/// `pick` of a tagged enum.
struct Capture<'c> {
    seen: &'c RefCell<Vec<(Option<&'static str>, &'static str)>>,
    variants: &'c RefCell<usize>,
    pick: usize,
    variant: Option<&'static str>,
}

impl<'de, 'c> de::Deserializer<'de> for Capture<'c> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> std::result::Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, Stop> {
        for f in fields {
            if !f.starts_with(['+', '*']) {
                self.seen.borrow_mut().push((self.variant, f));
            }
        }
        let tagged: Vec<&'static str> = fields.iter().copied().filter(|f| f.starts_with(['+', '*'])).collect();
        visitor.visit_map(CaptureMap { keys: tagged.into_iter(), capture: self })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, Stop> {
        *self.variants.borrow_mut() = variants.len();
        let name = variants.get(self.pick).copied().ok_or(Stop)?;
        visitor.visit_enum(CaptureEnum { name, capture: Capture { variant: Some(name), ..self } })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map identifier ignored_any
    }
}

struct CaptureMap<'c> {
    keys: std::vec::IntoIter<&'static str>,
    capture: Capture<'c>,
}

impl<'de, 'c> de::MapAccess<'de> for CaptureMap<'c> {
    type Error = Stop;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> std::result::Result<Option<K::Value>, Stop> {
        match self.keys.next() {
            None => Err(Stop),
            Some(k) => seed.deserialize(k.into_deserializer()).map(Some),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> std::result::Result<V::Value, Stop> {
        let c = &self.capture;
        seed.deserialize(Capture { seen: c.seen, variants: c.variants, pick: c.pick, variant: c.variant })
    }
}

struct CaptureEnum<'c> {
    name: &'static str,
    capture: Capture<'c>,
}

impl<'de, 'c> de::EnumAccess<'de> for CaptureEnum<'c> {
    type Error = Stop;
    type Variant = Capture<'c>;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> std::result::Result<(V::Value, Capture<'c>), Stop> {
        let v = seed.deserialize(self.name.into_deserializer())?;
        Ok((v, self.capture))
    }
}

impl<'de, 'c> de::VariantAccess<'de> for Capture<'c> {
    type Error = Stop;

    fn unit_variant(self) -> std::result::Result<(), Stop> {
        Err(Stop)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> std::result::Result<T::Value, Stop> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> std::result::Result<V::Value, Stop> {
        Err(Stop)
    }

    fn struct_variant<V: Visitor<'de>>(self, fields: &'static [&'static str], visitor: V) -> std::result::Result<V::Value, Stop> {
        de::Deserializer::deserialize_struct(self, "", fields, visitor)
    }
}

/// The fields of config type `T` as `(variant, field)`: a tagged enum's variants are entered one
/// after the other.
pub fn fields_of<T: DeserializeOwned>() -> Vec<(Option<&'static str>, &'static str)> {
    let seen = RefCell::new(Vec::new());
    let variants = RefCell::new(0usize);
    let mut pick = 0;
    loop {
        let _ = T::deserialize(Capture { seen: &seen, variants: &variants, pick, variant: None });
        pick += 1;
        if pick >= *variants.borrow() {
            break;
        }
    }
    let mut out = seen.into_inner();
    out.sort();
    out.dedup();
    out
}
