//! ONNX models through tract: a two-class probability tensor `[N,2]`, a single sigmoid `[N,1]`/`[N]`,
//! or a scikit-learn export (skl2onnx with `zipmap=False`: a label and a probability output). The
//! output used is chosen by name, or else the first float output whose name mentions "prob", or
//! else the first float output.
//!
//! When the graph is a plain stack of dense layers (every reference model is), the native
//! [`DenseNet`] executor is extracted too, and used instead of tract once
//! [`OnnxModel::verify_native`] has shown that it reproduces tract's output on real rows.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tract_onnx::prelude::*;

use crate::error::ModelError;
use crate::inputs::ElementType;
use crate::native::dense::DenseNet;
use crate::onnx::dense::dense_from_onnx;
use crate::outputs::{reader_for, Favourable, OutputReader, OutputTransform, RawOutput, ReadRule};
use crate::Model;

type Plan = Arc<TypedRunnableModel>;

/// A loaded, optimised ONNX classifier.
pub struct OnnxModel {
    path: PathBuf,
    plan: Plan,
    n_features: usize,
    output_name: String,
    /// Values per row of the chosen output (1 or 2).
    columns: usize,
    /// How P(favourable) is read from it (by default: P(class 1), checked).
    reader: OutputReader,
    /// The graph as a native dense network, if it is one (not yet trusted).
    candidate: Option<DenseNet>,
    /// The native executor, once verified against tract.
    native: Option<DenseNet>,
}

/// How the native executor compared with tract on real rows.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeCheck {
    /// Rows compared.
    pub rows: usize,
    /// Largest |P_native − P_tract|.
    pub max_abs_diff: f64,
    /// Rows whose predicted label differs.
    pub label_flips: usize,
    /// Whether the native executor is now used.
    pub used: bool,
}

/// Largest probability difference accepted between the native executor and tract.
const NATIVE_TOLERANCE: f64 = 1e-5;

impl std::fmt::Debug for OnnxModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OnnxModel({}, output {})", self.path.display(), self.output_name)
    }
}

impl OnnxModel {
    /// Load `path`, fix its input to `[N, n_features]` f32, choose the output (`output` by name, or
    /// the default rule) and check it on one row.
    pub fn load(path: &Path, n_features: usize, output: Option<&str>) -> Result<Self, ModelError> {
        let err = |e: TractError| ModelError::Onnx { path: path.to_path_buf(), message: format!("{e:#}") };
        let mut model = tract_onnx::onnx().model_for_path(path).map_err(err)?;
        let declared = model.input_fact(0).map(|f| format!("{f:?}")).unwrap_or_else(|_| "unknown".into());
        let width_err = |e: TractError| ModelError::Onnx {
            path: path.to_path_buf(),
            message: format!(
                "the data has {n_features} features; does the model take {n_features} inputs? (its input is declared as {declared}): {e:#}"
            ),
        };
        let batch = model.sym("N");
        model
            .set_input_fact(0, InferenceFact::dt_shape(f32::datum_type(), tvec![TDim::from(batch), TDim::from(n_features as i64)]))
            .map_err(err)?;
        let outlets = model.output_outlets().map_err(err)?.to_vec();
        let names: Vec<String> =
            outlets.iter().map(|o| model.outlet_label(*o).map(str::to_string).unwrap_or_else(|| model.node(o.node).name.clone())).collect();
        // Run every output once to see its type and shape.
        let probe = model.clone().into_optimized().map_err(width_err)?.into_runnable().map_err(err)?;
        let zeros = Tensor::zero::<f32>(&[1, n_features]).map_err(err)?;
        let values = probe.run(tvec![zeros.into()]).map_err(|e| ModelError::Onnx {
            path: path.to_path_buf(),
            message: format!("running one row of {n_features} features failed (does the model take {n_features} inputs?): {e:#}"),
        })?;
        let is_float = |i: usize| values[i].datum_type() == f32::datum_type() || values[i].datum_type() == f64::datum_type();
        let chosen = match output {
            Some(name) => names.iter().position(|n| n == name).ok_or_else(|| ModelError::MissingOutput {
                model: path.display().to_string(),
                wanted: name.to_string(),
                outputs: format!("its outputs are {}", names.join(", ")),
            })?,
            None => (0..names.len())
                .find(|&i| is_float(i) && names[i].to_lowercase().contains("prob"))
                .or_else(|| (0..names.len()).find(|&i| is_float(i)))
                .ok_or_else(|| ModelError::Onnx { path: path.to_path_buf(), message: format!("no float output among {names:?}") })?,
        };
        if !is_float(chosen) {
            return Err(ModelError::Onnx {
                path: path.to_path_buf(),
                message: format!("output {:?} is not a float tensor", names[chosen]),
            });
        }
        let shape = values[chosen].shape().to_vec();
        let columns = match shape.as_slice() {
            [1] | [1, 1] => 1,
            [1, 2] => 2,
            other => {
                return Err(ModelError::Onnx {
                    path: path.to_path_buf(),
                    message: format!(
                        "output {:?} has shape {other:?} for one row; expected [1,2] (two-class probabilities) or [1,1] (sigmoid)",
                        names[chosen]
                    ),
                })
            }
        };
        model.select_output_outlets(&[outlets[chosen]]).map_err(err)?;
        let plan = model.into_optimized().map_err(err)?.into_runnable().map_err(err)?;
        let candidate = dense_from_onnx(path).filter(|net| net.n_features() == n_features);
        let rule = if columns == 2 { ReadRule::Column { column: 1 } } else { ReadRule::Sigmoid { complement: false } };
        let reader =
            OutputReader { name: names[chosen].clone(), rule, transform: OutputTransform::None, assumed_class: false, classes: Vec::new() };
        Ok(OnnxModel {
            path: path.to_path_buf(),
            plan,
            n_features,
            output_name: names[chosen].clone(),
            columns,
            reader,
            candidate,
            native: None,
        })
    }

    /// Read the output as P(`favourable`) after `transform`, and check that it reads as
    /// probabilities on `probe` rows (row-major): refuses logits, NaN and values outside [0, 1].
    pub fn read_output_as(&mut self, favourable: &Favourable, transform: OutputTransform, probe: &[f64]) -> Result<(), ModelError> {
        let rows = probe.len() / self.n_features.max(1);
        let raw = self.raw_tract(probe, rows)?;
        let reader = reader_for(&self.output_name, &ElementType::Float32, &raw, favourable, transform, &[])
            .map_err(|e| ModelError::Onnx { path: self.path.clone(), message: e.to_string() })?;
        let mut out = vec![0.0; rows];
        reader.read(raw, &mut out, 0).map_err(|e| ModelError::Onnx { path: self.path.clone(), message: e.to_string() })?;
        if transform != OutputTransform::None {
            // The dense extraction ends at the graph's own head; a transform on top is tract's.
            self.candidate = None;
            self.native = None;
        }
        self.reader = reader;
        Ok(())
    }

    /// Refuse a graph that computes NaN for a row of `probe` (row-major) anywhere on the way to
    /// its output, even where tract turns it back into a number: tract computes `Relu`, `Max` and
    /// `Clip` with `max`/`min` (which drop a NaN) and clamps the input of `Sigmoid` and `Tanh`,
    /// so a NaN inside the graph can come out as an ordinary probability, while ONNX Runtime (and
    /// ONNX's rules) return NaN for the row. Scoring it would audit figures the model never gave.
    /// A tensor the graph itself tests with `IsNaN` is left to the graph. The error names the
    /// first such row, the tensor and the operator computing it.
    pub fn refuse_hidden_nan(&self, probe: &[f64]) -> Result<(), ModelError> {
        let rows = probe.len() / self.n_features.max(1);
        if rows == 0 {
            return Ok(());
        }
        let err = |e: TractError| ModelError::Onnx { path: self.path.clone(), message: format!("{e:#}") };
        let onnx = tract_onnx::onnx();
        // Decoded with its external tensors inlined: the parser is given a graph, not a path.
        let proto = super::external::read_model(&self.path)?;
        let Some(graph) = proto.graph.as_ref() else { return Ok(()) };
        // Which operator computes each tensor, and the tensors the graph tests for NaN itself.
        let mut computed_by: std::collections::HashMap<&str, (usize, &str, &str)> = std::collections::HashMap::new();
        for (position, node) in graph.node.iter().enumerate() {
            for output in &node.output {
                computed_by.insert(output.as_str(), (position, node.op_type.as_str(), node.name.as_str()));
            }
        }
        let tested: Vec<&str> =
            graph.node.iter().filter(|n| n.op_type == "IsNaN").flat_map(|n| n.input.iter().map(String::as_str)).collect();
        let mut model = onnx.model_for_proto_model(&proto).map_err(err)?;
        let batch = model.sym("N");
        model
            .set_input_fact(0, InferenceFact::dt_shape(f32::datum_type(), tvec![TDim::from(batch), TDim::from(self.n_features as i64)]))
            .map_err(err)?;
        // Every tensor an operator computes from the rows (not the constants), in graph order.
        let mut watched: Vec<(OutletId, String, usize)> = Vec::new();
        for (outlet, label) in &model.outlet_labels {
            let Some(&(position, _, _)) = computed_by.get(label.as_str()) else { continue };
            if !tested.contains(&label.as_str()) && !model.node(outlet.node).inputs.is_empty() {
                watched.push((*outlet, label.clone(), position));
            }
        }
        watched.sort_by_key(|(_, _, position)| *position);
        if watched.is_empty() {
            return Ok(());
        }
        model.select_output_outlets(&watched.iter().map(|(o, _, _)| *o).collect::<Vec<_>>()).map_err(err)?;
        let plan = model.into_optimized().map_err(err)?.into_runnable().map_err(err)?;
        let input: Vec<f32> = probe.iter().map(|&v| v as f32).collect();
        let tensor = Tensor::from_shape(&[rows, self.n_features], &input).map_err(err)?;
        let values = plan.run(tvec![tensor.into()]).map_err(err)?;
        // The first row with a NaN anywhere, and the first tensor (in graph order) holding it.
        let mut first: Option<(usize, &str)> = None;
        for (value, (_, tensor, _)) in values.iter().zip(&watched) {
            if value.shape().first() != Some(&rows) || !(value.datum_type() == f32::datum_type() || value.datum_type() == f64::datum_type())
            {
                continue;
            }
            let Ok(value) = value.cast_to::<f32>() else { continue };
            let Ok(view) = value.try_as_plain_ram() else { continue };
            let Ok(slice) = view.as_slice::<f32>() else { continue };
            let per_row = (slice.len() / rows).max(1);
            if let Some(i) = slice.iter().position(|v| v.is_nan()) {
                if first.is_none_or(|(row, _)| i / per_row < row) {
                    first = Some((i / per_row, tensor));
                }
            }
        }
        let Some((row, tensor)) = first else { return Ok(()) };
        let (_, op, name) = computed_by[tensor];
        let node = if name.is_empty() { op.to_string() } else { format!("{op} node {name:?}") };
        Err(ModelError::NotFinite {
            output: format!(
                "{} (its tensor {tensor:?}, computed by {node}, is NaN for the row; ONNX Runtime returns NaN, tract turned it into a number)",
                self.output_name
            ),
            row,
            value: f64::NAN,
            features: probe[row * self.n_features..(row + 1) * self.n_features].to_vec(),
        })
    }

    /// How the output is read.
    pub fn reader(&self) -> &OutputReader {
        &self.reader
    }

    /// Compare the native executor (if the graph has one) with tract on `rows` (row-major) and use
    /// it from now on when no label differs and no probability differs by more than 1e-5. `None`
    /// when the graph is not a dense stack.
    pub fn verify_native(&mut self, rows: &[f64]) -> Result<Option<NativeCheck>, ModelError> {
        let Some(candidate) = self.candidate.take() else { return Ok(None) };
        self.native = None;
        let n = rows.len() / self.n_features;
        let mut by_tract = vec![0.0; n];
        self.predict_tract(rows, &mut by_tract)?;
        let mut by_native = vec![0.0; n];
        candidate.predict_into(rows, &mut by_native);
        if self.reader.favourable_is_complement() {
            by_native.iter_mut().for_each(|p| *p = 1.0 - *p);
        }
        let max_abs_diff =
            by_tract.iter().zip(&by_native).map(|(a, b)| (a - b).abs()).fold(0.0, |m: f64, d| if d.is_nan() || d > m { d } else { m }); // a NaN on one side is a difference
        let label_flips = by_tract.iter().zip(&by_native).filter(|(a, b)| (**a > 0.5) != (**b > 0.5)).count();
        let used = n > 0 && label_flips == 0 && max_abs_diff <= NATIVE_TOLERANCE;
        if used {
            self.native = Some(candidate);
        }
        Ok(Some(NativeCheck { rows: n, max_abs_diff, label_flips, used }))
    }

    /// "native dense 12-30-20-15-15-10-1" or "tract".
    pub fn executor(&self) -> String {
        match &self.native {
            Some(net) => format!("native dense {}", net.shape()),
            None => "tract".into(),
        }
    }

    fn predict_tract(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let rows = out.len();
        if rows == 0 {
            return Ok(());
        }
        let raw = self.raw_tract(x, rows)?;
        self.reader.read(raw, out, 0)
    }

    /// The chosen output's values for `rows` rows of `x`.
    fn raw_tract(&self, x: &[f64], rows: usize) -> Result<RawOutput, ModelError> {
        if rows == 0 {
            return Ok(RawOutput::Floats { values: Vec::new(), columns: self.columns });
        }
        let input: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let tensor = Tensor::from_shape(&[rows, self.n_features], &input).map_err(|e| ModelError::Inference(format!("{e:#}")))?;
        let result = self.plan.run(tvec![tensor.into()]).map_err(|e| ModelError::Inference(format!("{e:#}")))?;
        let result = result[0].cast_to::<f32>().map_err(|e| ModelError::Inference(format!("{e:#}")))?;
        let view = result.try_as_plain_ram().map_err(|e| ModelError::Inference(format!("{e:#}")))?;
        let values = view.as_slice::<f32>().map_err(|e| ModelError::Inference(format!("{e:#}")))?;
        Ok(RawOutput::Floats { values: values.iter().map(|&v| f64::from(v)).collect(), columns: self.columns })
    }

    /// Name of the output the probabilities are read from.
    pub fn output_name(&self) -> &str {
        &self.output_name
    }
}

impl Model for OnnxModel {
    /// The encoded vector, read as numbers: any real input is scored.
    fn takes_any_real_input(&self) -> bool {
        true
    }

    fn labels_only(&self) -> bool {
        self.reader.labels_only()
    }

    fn n_features(&self) -> usize {
        self.n_features
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        match &self.native {
            Some(net) => {
                net.predict_into(x, out);
                if self.reader.favourable_is_complement() {
                    out.iter_mut().for_each(|p| *p = 1.0 - *p);
                }
                Ok(())
            }
            None => self.predict_tract(x, out),
        }
    }

    fn has_exact_gradient(&self) -> bool {
        self.native.is_some()
    }

    fn multiply_adds_per_row(&self) -> Option<u64> {
        self.native.as_ref().map(|net| net.multiply_adds())
    }

    fn gradient_into(&self, x: &[f64], out: &mut [f64], grad: &mut [f64]) -> Result<(), ModelError> {
        let Some(net) = &self.native else {
            return Err(ModelError::Inference(format!("{} has no exact gradient: tract runs it", self.describe())));
        };
        if x.len() != out.len() * self.n_features || grad.len() != x.len() {
            return Err(ModelError::Width { expected: self.n_features, found: x.len() / out.len().max(1) });
        }
        net.gradient_into(x, out, grad);
        if self.reader.favourable_is_complement() {
            out.iter_mut().for_each(|p| *p = 1.0 - *p);
            grad.iter_mut().for_each(|g| *g = -*g);
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "onnx {} (output {}, {})",
            self.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
            self.output_name,
            self.executor()
        )
    }
}
