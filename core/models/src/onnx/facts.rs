//! What an ONNX file's graph says before any executor runs it: which parts only ONNX Runtime can
//! run (ai.onnx.ml operators, string or float64 inputs, several inputs, sequence or map outputs),
//! and the class labels a classifier operator declares.

use std::collections::BTreeMap;
use std::path::Path;

use tract_onnx::pb::type_proto;
use tract_onnx::pb::ModelProto;
use tract_onnx::prelude::Framework;

use crate::error::ModelError;
use crate::inputs::{DeclaredInput, ElementType};
use crate::outputs::ClassKey;

/// ONNX TensorProto element types.
const FLOAT: i32 = 1;
/// The element types of a tensor of class labels: integers (8 to 64 bits, signed or not), string,
/// bool.
const LABEL_TYPES: [i32; 10] = [2, 3, 4, 5, 6, 7, 8, 9, 12, 13];

/// Facts read from the graph.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphFacts {
    /// Why tract should not run it (empty when tract can): "operator ai.onnx.ml.ZipMap",
    /// "string input sex", …
    pub needs_onnxruntime: Vec<String>,
    /// The classes the classifier operator declares, in its order (`classlabels_*`).
    pub classes: Vec<ClassKey>,
    /// Per string input, the categories the model knows: the `cats_strings` of a `OneHotEncoder`
    /// or the `keys_strings` of a `LabelEncoder` reading that input directly.
    pub categories: BTreeMap<String, Vec<String>>,
    /// The graph's inputs (initializers excluded) as declared: name, element type and shape (`-1`
    /// for a dynamic dimension), in graph order.
    pub inputs: Vec<DeclaredInput>,
    /// The graph's outputs as declared, in graph order.
    pub outputs: Vec<DeclaredOutput>,
}

/// An output of the graph as declared.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeclaredOutput {
    /// Its name (what `output = "…"` names).
    pub name: String,
    /// Whether it holds class labels (a tensor of integers, strings or booleans) and so no
    /// probability; a float tensor, a map or a sequence may hold probabilities.
    pub labels: bool,
}

impl GraphFacts {
    /// `Some(why)` when the model gives labels only: the output `chosen` (`output = "…"`) holds
    /// labels, or, none being chosen, every output does (`file` names the model in `why`).
    pub fn labels_only(&self, file: &str, chosen: Option<&str>) -> Option<String> {
        let read: Vec<&DeclaredOutput> = self.outputs.iter().filter(|o| chosen.is_none_or(|c| o.name == c)).collect();
        if read.is_empty() || !read.iter().all(|o| o.labels) {
            return None;
        }
        let names: Vec<&str> = read.iter().map(|o| o.name.as_str()).collect();
        Some(match (chosen, names.as_slice()) {
            (Some(name), _) => format!("{file}: its output {name:?} holds class labels, no probabilities"),
            (None, [one]) => format!("{file}: its one output, {one:?}, holds class labels, no probabilities"),
            (None, all) => format!("{file}: its outputs {} hold class labels, no probabilities", all.join(", ")),
        })
    }
}

/// Read the facts of the ONNX file at `path`.
pub fn graph_facts(path: &Path) -> Result<GraphFacts, ModelError> {
    let proto = tract_onnx::onnx().proto_model_for_path(path);
    facts_of(path, proto)
}

/// [`graph_facts`] of an ONNX file's bytes already read (`path` names them in messages).
pub fn graph_facts_from_bytes(path: &Path, bytes: &[u8]) -> Result<GraphFacts, ModelError> {
    let proto = tract_onnx::onnx().proto_model_for_read(&mut &bytes[..]);
    facts_of(path, proto)
}

/// The facts of a decoded graph (or the decoder's error, as unreadable).
fn facts_of(path: &Path, proto: tract_onnx::prelude::TractResult<ModelProto>) -> Result<GraphFacts, ModelError> {
    let proto = proto.map_err(|e| ModelError::Onnx { path: path.to_path_buf(), message: format!("not a readable ONNX file: {e:#}") })?;
    let Some(graph) = proto.graph.as_ref() else {
        return Err(ModelError::Onnx { path: path.to_path_buf(), message: "the file holds no graph".into() });
    };
    let mut facts = GraphFacts::default();
    let mut ml_ops: Vec<String> =
        graph.node.iter().filter(|n| n.domain == "ai.onnx.ml").map(|n| format!("ai.onnx.ml.{}", n.op_type)).collect();
    ml_ops.sort();
    ml_ops.dedup();
    facts.needs_onnxruntime.extend(ml_ops.into_iter().map(|op| format!("operator {op}")));
    let initializers: Vec<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let inputs: Vec<_> = graph.input.iter().filter(|i| !initializers.contains(&i.name.as_str())).collect();
    if inputs.len() > 1 {
        facts.needs_onnxruntime.push(format!("its {} named inputs", inputs.len()));
    }
    for input in &inputs {
        facts.inputs.push(declared(input));
        match input.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(type_proto::Value::TensorType(t)) if t.elem_type == FLOAT => {}
            Some(type_proto::Value::TensorType(t)) => {
                facts.needs_onnxruntime.push(format!("input {} of element type {}", input.name, element_name(t.elem_type)))
            }
            None => facts.needs_onnxruntime.push(format!("input {} (not a tensor)", input.name)),
        }
    }
    for output in &graph.output {
        let labels = match output.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(type_proto::Value::TensorType(t)) => LABEL_TYPES.contains(&t.elem_type),
            _ => {
                facts.needs_onnxruntime.push(format!("output {} (a sequence or map)", output.name));
                false
            }
        };
        facts.outputs.push(DeclaredOutput { name: output.name.clone(), labels });
    }
    for node in graph.node.iter().filter(|n| n.domain == "ai.onnx.ml") {
        for attribute in &node.attribute {
            match attribute.name.as_str() {
                "classlabels_strings" if !attribute.strings.is_empty() => {
                    facts.classes = attribute.strings.iter().map(|s| ClassKey::Text(String::from_utf8_lossy(s).into_owned())).collect();
                }
                "classlabels_int64s" | "classlabels_ints" if !attribute.ints.is_empty() => {
                    facts.classes = attribute.ints.iter().map(|i| ClassKey::Int(*i)).collect();
                }
                _ => {}
            }
        }
    }
    let input_names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
    for node in graph.node.iter().filter(|n| n.domain == "ai.onnx.ml" && matches!(n.op_type.as_str(), "OneHotEncoder" | "LabelEncoder")) {
        let Some(input) = node.input.first().filter(|i| input_names.contains(&i.as_str())) else { continue };
        if let Some(list) =
            node.attribute.iter().find(|a| matches!(a.name.as_str(), "cats_strings" | "keys_strings") && !a.strings.is_empty())
        {
            let known: Vec<String> = list.strings.iter().map(|s| String::from_utf8_lossy(s).into_owned()).collect();
            facts.categories.insert(input.clone(), known);
        }
    }
    Ok(facts)
}

/// An input of the graph as declared (a non-tensor input has type `Other("not a tensor")`).
fn declared(input: &tract_onnx::pb::ValueInfoProto) -> DeclaredInput {
    use tract_onnx::pb::tensor_shape_proto::dimension::Value as Dim;
    let Some(type_proto::Value::TensorType(t)) = input.r#type.as_ref().and_then(|t| t.value.as_ref()) else {
        return DeclaredInput { name: input.name.clone(), ty: ElementType::Other("not a tensor".into()), shape: Vec::new() };
    };
    let ty = match t.elem_type {
        1 => ElementType::Float32,
        6 => ElementType::Int32,
        7 => ElementType::Int64,
        8 => ElementType::String,
        10 => ElementType::Float16,
        11 => ElementType::Float64,
        other => ElementType::Other(element_name(other)),
    };
    let shape = t
        .shape
        .as_ref()
        .map(|s| s.dim.iter().map(|d| if let Some(Dim::DimValue(v)) = d.value { v } else { -1 }).collect())
        .unwrap_or_default();
    DeclaredInput { name: input.name.clone(), ty, shape }
}

fn element_name(code: i32) -> String {
    match code {
        1 => "float32".into(),
        6 => "int32".into(),
        7 => "int64".into(),
        8 => "string".into(),
        10 => "float16".into(),
        11 => "float64".into(),
        other => format!("#{other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_as_the_file_and_garbage_is_an_error() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/exports/sklearn_named_zipmap.onnx"));
        let bytes = std::fs::read(path).unwrap();
        let facts = graph_facts_from_bytes(path, &bytes).unwrap();
        assert_eq!(facts, graph_facts(path).unwrap());
        assert!(facts.needs_onnxruntime.iter().any(|n| n == "operator ai.onnx.ml.ZipMap"), "{facts:?}");
        let e = graph_facts_from_bytes(Path::new("x.onnx"), b"\xff\xff\xff").unwrap_err().to_string();
        assert!(e.contains("x.onnx") && e.contains("not a readable ONNX file"), "{e}");
    }
}
