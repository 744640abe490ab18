//! ONNX files whose tensors sit in a file beside the graph ("external data": `model.onnx` with
//! `model.onnx.data`, what `torch.onnx.export` writes for larger models). Every reader that
//! decodes the graph itself (tract given a decoded graph, the native dense and tree executors,
//! ONNX Runtime given rewritten bytes) reads it through [`read_model`], which puts each external
//! tensor's bytes into the graph, so that they all see one self-contained model. A location
//! outside the model's folder, or bytes past the end of its file, are refused.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use tract_onnx::pb::{tensor_proto::DataLocation, GraphProto, ModelProto, TensorProto};
use tract_onnx::prelude::Framework;

use crate::error::ModelError;

/// An external tensor that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExternalDataError {
    /// The tensor is stored outside the file but names no location.
    #[error("tensor {tensor:?} is stored outside the file but names no location")]
    NoLocation {
        /// The tensor.
        tensor: String,
    },
    /// An `offset` or `length` that is not a whole number.
    #[error("tensor {tensor:?}: its external data's {key} {value:?} is not a whole number")]
    NotANumber {
        /// The tensor.
        tensor: String,
        /// `offset` or `length`.
        key: String,
        /// The value given.
        value: String,
    },
    /// A location outside the model's folder.
    #[error("tensor {tensor:?}: its external data {location:?} is not a file inside the model's folder")]
    OutsideFolder {
        /// The tensor.
        tensor: String,
        /// The location given.
        location: String,
    },
    /// The external file cannot be read.
    #[error("tensor {tensor:?}: cannot read its external data {file}: {message}")]
    Unreadable {
        /// The tensor.
        tensor: String,
        /// The file.
        file: String,
        /// What the system said.
        message: String,
    },
    /// Bytes past the end of the external file.
    #[error("tensor {tensor:?}: its external data asks for bytes {offset}..{end} of {file}, which holds {size}")]
    OutOfRange {
        /// The tensor.
        tensor: String,
        /// The first byte asked for.
        offset: u64,
        /// The end asked for (a number, or `end`).
        end: String,
        /// The file.
        file: String,
        /// The file's size.
        size: u64,
    },
}

/// The ONNX file at `path`, decoded, with every external tensor's bytes read from beside it.
pub fn read_model(path: &Path) -> Result<ModelProto, ModelError> {
    let err = |message: String| ModelError::Onnx { path: path.to_path_buf(), message };
    let mut proto = tract_onnx::onnx().proto_model_for_path(path).map_err(|e| err(format!("not a readable ONNX file: {e:#}")))?;
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if let Some(graph) = proto.graph.as_mut() {
        inline_graph(graph, &mut Files { folder, read: HashMap::new() }).map_err(|e| err(e.to_string()))?;
    }
    Ok(proto)
}

/// Whether `tensor`'s bytes are in an external file.
fn is_external(tensor: &TensorProto) -> bool {
    tensor.data_location == Some(DataLocation::External as i32)
}

/// The external files of one model, each read once.
struct Files<'a> {
    folder: &'a Path,
    read: HashMap<PathBuf, Vec<u8>>,
}

/// Inline the external tensors of `graph` and of the graphs inside its nodes' attributes.
fn inline_graph(graph: &mut GraphProto, files: &mut Files) -> Result<(), ExternalDataError> {
    for tensor in &mut graph.initializer {
        inline_tensor(tensor, files)?;
    }
    for node in &mut graph.node {
        for attribute in &mut node.attribute {
            if let Some(t) = attribute.t.as_mut() {
                inline_tensor(t, files)?;
            }
            for t in &mut attribute.tensors {
                inline_tensor(t, files)?;
            }
            if let Some(g) = attribute.g.as_mut() {
                inline_graph(g, files)?;
            }
            for g in &mut attribute.graphs {
                inline_graph(g, files)?;
            }
        }
    }
    Ok(())
}

/// Read `tensor`'s bytes from its external file (`location`, `offset`, `length`, relative to
/// the model's folder) into `raw_data`.
fn inline_tensor(tensor: &mut TensorProto, files: &mut Files) -> Result<(), ExternalDataError> {
    if !is_external(tensor) {
        return Ok(());
    }
    let name = &tensor.name;
    let entry = |key: &str| tensor.external_data.iter().find(|e| e.key == key).map(|e| e.value.as_str());
    let location = entry("location").ok_or_else(|| ExternalDataError::NoLocation { tensor: name.clone() })?;
    let number = |key: &str| -> Result<Option<u64>, ExternalDataError> {
        entry(key)
            .map(|v| {
                v.parse::<u64>().map_err(|_| ExternalDataError::NotANumber {
                    tensor: name.clone(),
                    key: key.to_string(),
                    value: v.to_string(),
                })
            })
            .transpose()
    };
    let (offset, length) = (number("offset")?.unwrap_or(0), number("length")?);
    let relative = Path::new(location);
    if relative.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(ExternalDataError::OutsideFolder { tensor: name.clone(), location: location.to_string() });
    }
    let file = files.folder.join(relative);
    if !files.read.contains_key(&file) {
        let bytes = std::fs::read(&file).map_err(|e| ExternalDataError::Unreadable {
            tensor: name.clone(),
            file: file.display().to_string(),
            message: e.to_string(),
        })?;
        files.read.insert(file.clone(), bytes);
    }
    let bytes = &files.read[&file];
    let size = bytes.len() as u64;
    let end = match length {
        Some(length) => offset.checked_add(length),
        None => Some(size),
    };
    let Some(end) = end.filter(|&end| offset <= end && end <= size) else {
        return Err(ExternalDataError::OutOfRange {
            tensor: name.clone(),
            offset,
            end: length.map_or("end".to_string(), |l| offset.saturating_add(l).to_string()),
            file: file.display().to_string(),
            size,
        });
    };
    tensor.raw_data = bytes[offset as usize..end as usize].to_vec();
    tensor.external_data.clear();
    tensor.data_location = Some(DataLocation::Default as i32);
    Ok(())
}
