//! The encoders converters put before or after the trees, computed as ONNX Runtime computes them:
//! `LabelEncoder` (ai.onnx.ml opsets 1, 2 and 4: a map from floats, integers or strings to floats,
//! integers or strings, with its default) and `OneHotEncoder` (`cats_int64s` / `cats_strings`,
//! `zeros`).
//!
//! ONNX Runtime's rules kept here: a key listed twice maps to its first value (`emplace`) in a
//! `LabelEncoder` and to its last position in a `OneHotEncoder`; float keys match by `==` (so `-0`
//! matches `0`), and NaN matches a NaN key from opset 4 on only; the defaults when the attribute is
//! absent are −1, `"_Unused"`, and −0.0 (0.0 for integer or string keys from opset 4 on); a float
//! reaches a `OneHotEncoder`'s integer categories, and a `Cast` to int64, by C++'s truncating cast
//! (NaN and values beyond the int64 range become its minimum, as x86 converts them).

use std::collections::HashMap;
use std::sync::Arc;

use tract_onnx::pb::NodeProto;

use super::attributes::{tensor_floats, tensor_ints, tensor_strings, Attributes, Uncovered};
use super::value::{Elem, RunError, Value};

/// A float cast to int64 as C++'s `static_cast` does on x86: truncated toward zero; NaN and values
/// outside the int64 range give `i64::MIN` (the "integer indefinite" value).
pub fn f32_to_i64(v: f32) -> i64 {
    // 2^63 as f32 is exact.
    const LIMIT: f32 = 9_223_372_036_854_775_808.0;
    if v.is_nan() || !(-LIMIT..LIMIT).contains(&v) {
        i64::MIN
    } else {
        v as i64
    }
}

/// A float key as looked up: `-0` as `0`, every NaN as one NaN.
fn float_key(v: f32) -> u32 {
    if v == 0.0 {
        0
    } else if v.is_nan() {
        f32::NAN.to_bits()
    } else {
        v.to_bits()
    }
}

/// The keys of a [`LabelEncoder`], each with the position of its value.
#[derive(Debug, Clone)]
enum Keys {
    Floats(HashMap<u32, usize>),
    Ints(HashMap<i64, usize>),
    Texts(HashMap<String, usize>),
}

/// The values of a [`LabelEncoder`], its default last.
#[derive(Debug, Clone)]
enum Values {
    Floats(Vec<f32>),
    Ints(Vec<i64>),
    Texts(Arc<Vec<String>>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::Floats(v) => v.len(),
            Values::Ints(v) => v.len(),
            Values::Texts(v) => v.len(),
        }
    }
}

/// A `LabelEncoder` node.
#[derive(Debug, Clone)]
pub struct LabelEncoder {
    keys: Keys,
    values: Values,
    /// NaN finds a NaN key (opset 4).
    nan_matches: bool,
}

/// The element type a list of keys or values holds, by the attributes present.
fn typed(a: &Attributes<'_>, prefix: &str) -> Result<Option<(Elem, TypedList)>, Uncovered> {
    let floats = a.floats(&format!("{prefix}_floats"));
    let ints = a.ints(&format!("{prefix}_int64s"));
    let strings = a.strings(&format!("{prefix}_strings"));
    if !floats.is_empty() {
        return Ok(Some((Elem::Float, TypedList::Floats(floats))));
    }
    if !ints.is_empty() {
        return Ok(Some((Elem::Int, TypedList::Ints(ints))));
    }
    if !strings.is_empty() {
        return Ok(Some((Elem::Text, TypedList::Texts(strings))));
    }
    let Some(t) = a.tensor(&format!("{prefix}_tensor")) else { return Ok(None) };
    let list = match t.data_type {
        1 => tensor_floats(t).map(TypedList::Floats),
        6 | 7 => tensor_ints(t).map(TypedList::Ints),
        8 => tensor_strings(t).map(TypedList::Texts),
        _ => None,
    };
    match list {
        Some(list @ TypedList::Floats(_)) => Ok(Some((Elem::Float, list))),
        Some(list @ TypedList::Ints(_)) => Ok(Some((Elem::Int, list))),
        Some(list @ TypedList::Texts(_)) => Ok(Some((Elem::Text, list))),
        None => Err(a.uncovered(format!("{prefix}_tensor has element type {} (float, int64 and string are covered)", t.data_type))),
    }
}

/// Keys or values as read.
#[derive(Debug, Clone)]
enum TypedList {
    Floats(Vec<f32>),
    Ints(Vec<i64>),
    Texts(Vec<String>),
}

impl TypedList {
    fn len(&self) -> usize {
        match self {
            TypedList::Floats(v) => v.len(),
            TypedList::Ints(v) => v.len(),
            TypedList::Texts(v) => v.len(),
        }
    }
}

impl LabelEncoder {
    /// Read the node for input elements `input`, under ai.onnx.ml opset `opset`; the encoder and
    /// the element type it outputs.
    pub fn read(node: &NodeProto, input: Elem, opset: i64) -> Result<(LabelEncoder, Elem), Uncovered> {
        let a = Attributes::of(node);
        let (keys, values, out) = if opset < 2 {
            // Opset 1: strings to their position in classes_strings, or positions to strings.
            let classes = a.strings("classes_strings");
            let positions: Vec<i64> = (0..classes.len() as i64).collect();
            match input {
                Elem::Text => (TypedList::Texts(classes), TypedList::Ints(positions), Elem::Int),
                Elem::Int => (TypedList::Ints(positions), TypedList::Texts(classes), Elem::Text),
                _ => return Err(a.uncovered("opset 1 maps strings or integers only")),
            }
        } else {
            let (kind, keys) = typed(&a, "keys")?.ok_or_else(|| a.uncovered("it has no keys"))?;
            if kind != input {
                return Err(a.uncovered(format!("its keys are {kind:?}, its input {input:?}")));
            }
            let (out, values) = typed(&a, "values")?.ok_or_else(|| a.uncovered("it has no values"))?;
            (keys, values, out)
        };
        if keys.len() != values.len() {
            return Err(a.uncovered(format!("{} keys and {} values", keys.len(), values.len())));
        }
        let v4 = opset >= 4;
        let default_tensor = a.tensor("default_tensor").filter(|t| t.data_type != 0);
        let values = match values {
            TypedList::Floats(mut v) => {
                let backup = if v4 && input != Elem::Float { 0.0 } else { -0.0 };
                let d = match default_tensor {
                    Some(t) => {
                        tensor_floats(t).and_then(|d| d.first().copied()).ok_or_else(|| a.uncovered("default_tensor is not float"))?
                    }
                    None => a.float("default_float", backup),
                };
                v.push(d);
                Values::Floats(v)
            }
            TypedList::Ints(mut v) => {
                let d = match default_tensor {
                    Some(t) => tensor_ints(t).and_then(|d| d.first().copied()).ok_or_else(|| a.uncovered("default_tensor is not int64"))?,
                    None => a.int("default_int64", -1),
                };
                v.push(d);
                Values::Ints(v)
            }
            TypedList::Texts(mut v) => {
                let d = match default_tensor {
                    Some(t) => {
                        tensor_strings(t).and_then(|d| d.first().cloned()).ok_or_else(|| a.uncovered("default_tensor is not a string"))?
                    }
                    None => a.string("default_string", "_Unused"),
                };
                v.push(d);
                Values::Texts(Arc::new(v))
            }
        };
        let keys = match keys {
            TypedList::Floats(k) => {
                let mut map = HashMap::new();
                for (i, v) in k.into_iter().enumerate() {
                    if v4 || !v.is_nan() {
                        map.entry(float_key(v)).or_insert(i);
                    }
                }
                Keys::Floats(map)
            }
            TypedList::Ints(k) => {
                let mut map = HashMap::new();
                for (i, v) in k.into_iter().enumerate() {
                    map.entry(v).or_insert(i);
                }
                Keys::Ints(map)
            }
            TypedList::Texts(k) => {
                let mut map = HashMap::new();
                for (i, v) in k.into_iter().enumerate() {
                    map.entry(v).or_insert(i);
                }
                Keys::Texts(map)
            }
        };
        Ok((LabelEncoder { keys, values, nan_matches: v4 }, out))
    }

    /// Encode `input` (of the element type the encoder was read for).
    pub fn apply(&self, input: &Value) -> Result<Value, RunError> {
        let default = self.values.len() - 1;
        let positions: Vec<usize> = match (&self.keys, input) {
            (Keys::Floats(map), Value::Floats { values, .. }) => values
                .iter()
                .map(|&v| if v.is_nan() && !self.nan_matches { None } else { map.get(&float_key(v)).copied() }.unwrap_or(default))
                .collect(),
            (Keys::Ints(map), Value::Ints { values, .. }) => values.iter().map(|v| map.get(v).copied().unwrap_or(default)).collect(),
            (Keys::Texts(map), Value::Texts { index, table, .. }) => {
                let found: Vec<usize> = table.iter().map(|t| map.get(t).copied().unwrap_or(default)).collect();
                index.iter().map(|&i| found[i as usize]).collect()
            }
            _ => return Err(RunError::LabelEncoderType),
        };
        let columns = match input {
            Value::Floats { columns, .. } | Value::Ints { columns, .. } | Value::Texts { columns, .. } => *columns,
            Value::Maps { .. } => return Err(RunError::OfAMap("LabelEncoder")),
        };
        Ok(match &self.values {
            Values::Floats(v) => Value::Floats { values: positions.iter().map(|&p| v[p]).collect(), columns },
            Values::Ints(v) => Value::Ints { values: positions.iter().map(|&p| v[p]).collect(), columns },
            Values::Texts(v) => Value::Texts { index: positions.iter().map(|&p| p as u32).collect(), table: Arc::clone(v), columns },
        })
    }
}

/// A `OneHotEncoder` node.
#[derive(Debug, Clone)]
pub struct OneHotEncoder {
    ints: HashMap<i64, usize>,
    texts: HashMap<String, usize>,
    /// Categories (output columns per input value).
    pub count: usize,
    /// An unknown category gives zeros (else an error).
    zeros: bool,
}

impl OneHotEncoder {
    /// Read the node.
    pub fn read(node: &NodeProto) -> Result<OneHotEncoder, Uncovered> {
        let a = Attributes::of(node);
        let ints = a.ints("cats_int64s");
        let strings = a.strings("cats_strings");
        if !ints.is_empty() && !strings.is_empty() {
            return Err(a.uncovered("both cats_int64s and cats_strings"));
        }
        let count = ints.len().max(strings.len());
        if count == 0 {
            return Err(a.uncovered("no categories"));
        }
        Ok(OneHotEncoder {
            ints: ints.into_iter().enumerate().map(|(i, v)| (v, i)).collect(),
            texts: strings.into_iter().enumerate().map(|(i, v)| (v, i)).collect(),
            count,
            zeros: a.int("zeros", 1) != 0,
        })
    }

    /// One row of `count` floats per input value.
    pub fn apply(&self, input: &Value) -> Result<Value, RunError> {
        let positions: Vec<Option<usize>> = match input {
            Value::Floats { values, .. } => values.iter().map(|&v| self.ints.get(&f32_to_i64(v)).copied()).collect(),
            Value::Ints { values, .. } => values.iter().map(|v| self.ints.get(v).copied()).collect(),
            Value::Texts { index, table, .. } => {
                let found: Vec<Option<usize>> = table.iter().map(|t| self.texts.get(t).copied()).collect();
                index.iter().map(|&i| found[i as usize]).collect()
            }
            Value::Maps { .. } => return Err(RunError::OfAMap("OneHotEncoder")),
        };
        if !self.zeros && positions.iter().any(Option::is_none) {
            return Err(RunError::UnknownCategory);
        }
        let columns = match input {
            Value::Floats { columns, .. } | Value::Ints { columns, .. } | Value::Texts { columns, .. } => *columns,
            Value::Maps { .. } => 0,
        };
        let mut values = vec![0.0f32; positions.len() * self.count];
        for (k, p) in positions.iter().enumerate() {
            if let Some(p) = p {
                values[k * self.count + p] = 1.0;
            }
        }
        Ok(Value::Floats { values, columns: columns * self.count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_float_becomes_an_integer_as_cpp_casts_it_on_x86() {
        assert_eq!(f32_to_i64(2.9), 2);
        assert_eq!(f32_to_i64(-2.9), -2);
        assert_eq!(f32_to_i64(-0.0), 0);
        for v in [f32::NAN, f32::INFINITY, -f32::INFINITY, 1e19, -1e19] {
            assert_eq!(f32_to_i64(v), i64::MIN, "{v}");
        }
        assert_eq!(f32_to_i64(-9_223_372_036_854_775_808.0), i64::MIN);
    }
}
