//! Recognise an ONNX graph that is a plain stack of dense layers — `MatMul` (or `Gemm`) with a
//! constant weight, `Add` of a constant bias, `Relu`, ending in `Sigmoid` or `Softmax` — and
//! extract its weights as a [`DenseNet`]. Nodes after the probability head (the `1 − p`/`Concat`
//! that builds a two-column output) are ignored here: the extracted network is only used once it
//! has reproduced tract's chosen output on real rows.

use std::collections::HashMap;
use std::path::Path;

use tract_onnx::pb::{GraphProto, NodeProto, TensorProto};

use crate::native::dense::{Activation, DenseLayer, DenseNet};

/// ONNX TensorProto data types.
const FLOAT: i32 = 1;
const DOUBLE: i32 = 11;

/// The dense network inside the ONNX file at `path`, or `None` when the graph is anything else.
pub fn dense_from_onnx(path: &Path) -> Option<DenseNet> {
    let proto = super::external::read_model(path).ok()?;
    dense_from_graph(proto.graph.as_ref()?)
}

fn dense_from_graph(graph: &GraphProto) -> Option<DenseNet> {
    let constants: HashMap<&str, &TensorProto> = graph.initializer.iter().map(|t| (t.name.as_str(), t)).collect();
    let input = graph.input.iter().find(|i| !constants.contains_key(i.name.as_str()))?;
    let mut current = input.name.clone();
    let mut layers: Vec<DenseLayer> = Vec::new();
    for node in &graph.node {
        if layers.last().is_some_and(|l| matches!(l.act, Activation::Sigmoid | Activation::Softmax)) {
            break;
        }
        let other = |node: &NodeProto| -> Option<&TensorProto> {
            let mut names = node.input.iter().filter(|n| **n != current);
            let name = names.next()?;
            constants.get(name.as_str()).copied()
        };
        if !node.input.contains(&current) {
            return None;
        }
        match node.op_type.as_str() {
            "MatMul" if node.input.first() == Some(&current) => {
                let w = other(node)?;
                let [n_in, n_out] = dims2(w)?;
                layers.push(DenseLayer { n_in, n_out, w: floats(w)?, b: vec![0.0; n_out], act: Activation::Identity });
            }
            "Gemm" if node.input.first() == Some(&current) => {
                let (trans_a, trans_b) = (int_attr(node, "transA", 0), int_attr(node, "transB", 0));
                if trans_a != 0 || float_attr(node, "alpha", 1.0) != 1.0 || float_attr(node, "beta", 1.0) != 1.0 {
                    return None;
                }
                let w = constants.get(node.input.get(1)?.as_str())?;
                let [rows, cols] = dims2(w)?;
                let values = floats(w)?;
                let (n_in, n_out, w) = if trans_b == 0 { (rows, cols, values) } else { (cols, rows, transpose(&values, rows, cols)) };
                let b = match node.input.get(2) {
                    Some(name) => bias(constants.get(name.as_str())?, n_out)?,
                    None => vec![0.0; n_out],
                };
                layers.push(DenseLayer { n_in, n_out, w, b, act: Activation::Identity });
            }
            "Add" => {
                let layer = layers.last_mut().filter(|l| l.act == Activation::Identity)?;
                let b = bias(other(node)?, layer.n_out)?;
                layer.b.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            }
            "Relu" => set_act(&mut layers, Activation::Relu)?,
            "Sigmoid" => set_act(&mut layers, Activation::Sigmoid)?,
            "Softmax" => set_act(&mut layers, Activation::Softmax)?,
            _ => return None,
        }
        current = node.output.first()?.clone();
    }
    DenseNet::new(layers)
}

fn set_act(layers: &mut [DenseLayer], act: Activation) -> Option<()> {
    let layer = layers.last_mut().filter(|l| l.act == Activation::Identity)?;
    layer.act = act;
    Some(())
}

fn dims2(t: &TensorProto) -> Option<[usize; 2]> {
    match t.dims.as_slice() {
        &[a, b] if a > 0 && b > 0 => Some([a as usize, b as usize]),
        _ => None,
    }
}

/// A bias of `n` values, stored as `[n]` or `[1, n]`.
fn bias(t: &TensorProto, n: usize) -> Option<Vec<f32>> {
    let len: i64 = t.dims.iter().product();
    (len as usize == n).then(|| floats(t)).flatten()
}

/// The values of a float or double tensor, as f32.
fn floats(t: &TensorProto) -> Option<Vec<f32>> {
    let len = t.dims.iter().product::<i64>() as usize;
    let values: Vec<f32> = match t.data_type {
        FLOAT if !t.raw_data.is_empty() => t.raw_data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
        FLOAT => t.float_data.clone(),
        DOUBLE if !t.raw_data.is_empty() => {
            t.raw_data.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f32).collect()
        }
        DOUBLE => t.double_data.iter().map(|&v| v as f32).collect(),
        _ => return None,
    };
    (values.len() == len).then_some(values)
}

fn transpose(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
    out
}

fn int_attr(node: &NodeProto, name: &str, default: i64) -> i64 {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.i).unwrap_or(default)
}

fn float_attr(node: &NodeProto, name: &str, default: f32) -> f32 {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.f).unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_reference_models_are_recognised() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pipelines/models");
        for (file, shape) in
            [("census.onnx", "12-30-20-15-15-10-1"), ("credit.onnx", "24-50-30-15-10-5-1"), ("bank.onnx", "16-30-20-15-15-10-1")]
        {
            let net = dense_from_onnx(&root.join(file)).unwrap_or_else(|| panic!("{file} not recognised"));
            assert_eq!(net.shape(), shape, "{file}");
        }
    }
}
