//! Reading an ONNX node's attributes and the graph's constant tensors (initializers), as the tree
//! executor needs them: by name, with the node named in every error.

use tract_onnx::pb::{AttributeProto, NodeProto, TensorProto};

/// A node's attributes, looked up by name.
pub struct Attributes<'a> {
    node: &'a NodeProto,
}

/// Why a node cannot be run natively: the operator and what is missing or not supported.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("operator {operator}{}: {why}", if node.is_empty() { String::new() } else { format!(" (node {node:?})") })]
pub struct Uncovered {
    /// `ai.onnx.ml.TreeEnsembleClassifier`, `ai.onnx.Cast`, …
    pub operator: String,
    /// The node's name (may be empty).
    pub node: String,
    /// What is not supported.
    pub why: String,
}

/// The operator's full name: `ai.onnx.ml.ZipMap`, or `ai.onnx.Cast` for the default domain.
pub fn operator_name(node: &NodeProto) -> String {
    let domain = if node.domain.is_empty() { "ai.onnx" } else { node.domain.as_str() };
    format!("{domain}.{}", node.op_type)
}

impl<'a> Attributes<'a> {
    /// The attributes of `node`.
    pub fn of(node: &'a NodeProto) -> Self {
        Attributes { node }
    }

    /// An error about this node.
    pub fn uncovered(&self, why: impl Into<String>) -> Uncovered {
        Uncovered { operator: operator_name(self.node), node: self.node.name.clone(), why: why.into() }
    }

    fn get(&self, name: &str) -> Option<&'a AttributeProto> {
        self.node.attribute.iter().find(|a| a.name == name)
    }

    /// Whether the attribute is present (with any value).
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some_and(|a| !a.ints.is_empty() || !a.floats.is_empty() || !a.strings.is_empty() || a.t.is_some())
    }

    /// A list of integers (empty when absent).
    pub fn ints(&self, name: &str) -> Vec<i64> {
        self.get(name).map(|a| a.ints.clone()).unwrap_or_default()
    }

    /// A list of floats (empty when absent).
    pub fn floats(&self, name: &str) -> Vec<f32> {
        self.get(name).map(|a| a.floats.clone()).unwrap_or_default()
    }

    /// A list of strings (empty when absent).
    pub fn strings(&self, name: &str) -> Vec<String> {
        self.get(name).map(|a| a.strings.iter().map(|s| String::from_utf8_lossy(s).into_owned()).collect()).unwrap_or_default()
    }

    /// One string, or `default` when absent.
    pub fn string(&self, name: &str, default: &str) -> String {
        self.get(name).map(|a| String::from_utf8_lossy(&a.s).into_owned()).unwrap_or_else(|| default.to_string())
    }

    /// One float, or `default` when absent.
    pub fn float(&self, name: &str, default: f32) -> f32 {
        self.get(name).map_or(default, |a| a.f)
    }

    /// One integer, or `default` when absent.
    pub fn int(&self, name: &str, default: i64) -> i64 {
        self.get(name).map_or(default, |a| a.i)
    }

    /// A tensor attribute (`keys_tensor`, `nodes_splits`, …), if present.
    pub fn tensor(&self, name: &str) -> Option<&'a TensorProto> {
        self.get(name).and_then(|a| a.t.as_ref())
    }

    /// A float list given as a float tensor attribute (`nodes_splits`, `leaf_weights`); empty when
    /// absent. A tensor of another type (double thresholds, which need float64 input) is refused.
    pub fn float_tensor(&self, name: &str) -> Result<Vec<f32>, Uncovered> {
        match self.tensor(name) {
            None => Ok(Vec::new()),
            Some(t) => {
                tensor_floats(t).ok_or_else(|| self.uncovered(format!("{name} is a tensor of element type {}, not float", t.data_type)))
            }
        }
    }

    /// Refuse any attribute among `names` that is present: the executor does not support it.
    pub fn refuse(&self, names: &[&str]) -> Result<(), Uncovered> {
        match names.iter().find(|n| self.has(n)) {
            Some(name) => Err(self.uncovered(format!("attribute {name} is not supported"))),
            None => Ok(()),
        }
    }
}

/// A constant tensor's values as floats, if it holds float or integer numbers.
pub fn tensor_floats(tensor: &TensorProto) -> Option<Vec<f32>> {
    match tensor.data_type {
        1 if !tensor.float_data.is_empty() => Some(tensor.float_data.clone()),
        1 => Some(tensor.raw_data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()),
        _ => None,
    }
}

/// A constant tensor's values as 64-bit integers, if it holds integers.
pub fn tensor_ints(tensor: &TensorProto) -> Option<Vec<i64>> {
    match tensor.data_type {
        7 if !tensor.int64_data.is_empty() => Some(tensor.int64_data.clone()),
        7 => Some(tensor.raw_data.chunks_exact(8).map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])).collect()),
        6 if !tensor.int32_data.is_empty() => Some(tensor.int32_data.iter().map(|&v| i64::from(v)).collect()),
        6 => Some(tensor.raw_data.chunks_exact(4).map(|b| i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))).collect()),
        _ => None,
    }
}

/// A constant tensor's values as small unsigned integers (`uint8`: ONNX keeps them in `int32_data`
/// or as raw bytes), if it holds them.
pub fn tensor_u8(tensor: &TensorProto) -> Option<Vec<u8>> {
    match tensor.data_type {
        2 if !tensor.int32_data.is_empty() => tensor.int32_data.iter().map(|&v| u8::try_from(v).ok()).collect(),
        2 => Some(tensor.raw_data.clone()),
        _ => None,
    }
}

/// A constant tensor's strings, if it holds strings.
pub fn tensor_strings(tensor: &TensorProto) -> Option<Vec<String>> {
    (tensor.data_type == 8).then(|| tensor.string_data.iter().map(|s| String::from_utf8_lossy(s).into_owned()).collect())
}
