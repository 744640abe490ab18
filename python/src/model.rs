//! A Python object with `predict_proba` as the engine's model: bound to the dataset through
//! `fairpipe_rs._model.bind` (which builds the frame the model was fitted on), then called in
//! batches, the GIL taken for each batch only.

use std::sync::{Arc, Mutex};

use fairpipe_core::data::Dataset;
use fairpipe_core::domain::{AttributeKind, Domain};
use fairpipe_core::error::ModelError;
use fairpipe_core::models::outputs::{ClassKey, Favourable};
use fairpipe_core::models::provided::{BoundModel, ModelSource};
use fairpipe_core::oracle::Model;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// The Python exception behind the last failed model call, kept so the error raised in Python
/// can chain it (`raise ... from exc`).
pub type LastError = Arc<Mutex<Option<PyErr>>>;

/// A Python model as the engine's [`ModelSource`]: `spec` is a `fairpipe_rs._model.ModelSpec`.
pub struct PySource {
    spec: Py<PyAny>,
    name: String,
    batch_rows: usize,
    last_error: LastError,
}

impl PySource {
    /// Wrap `spec` (a `ModelSpec`, which names its model and batch size).
    pub fn new(spec: &Bound<'_, PyAny>, last_error: LastError) -> PyResult<Self> {
        let name: String = spec.getattr("description")?.extract()?;
        let batch_rows: usize = spec.getattr("batch_size")?.extract()?;
        Ok(PySource { spec: spec.clone().unbind(), name, batch_rows: batch_rows.max(1), last_error })
    }
}

/// The domain and label as `fairpipe_rs._model.bind` reads them (a dict once converted). A
/// category column with declared codes (`codes` on the load stage) is described as integer: the
/// model gets its codes.
fn describe_data(data: &Dataset) -> serde_json::Value {
    let attributes: Vec<serde_json::Value> = data
        .domain
        .attributes
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let (kind, levels) = match &a.kind {
                AttributeKind::Categorical { .. } if data.coded.get(i).copied().unwrap_or(false) => ("integer", None),
                AttributeKind::Categorical { levels } => ("categorical", Some(levels.clone())),
                AttributeKind::Integer => ("integer", None),
                AttributeKind::Continuous => ("continuous", None),
            };
            serde_json::json!({ "name": a.name, "kind": kind, "levels": levels, "protected": a.protected })
        })
        .collect();
    serde_json::json!({
        "attributes": attributes,
        "label": data.label_name,
        "label_values": data.label_values,
        "label_flipped": data.label_flipped,
    })
}

impl ModelSource for PySource {
    fn describe(&self) -> String {
        self.name.clone()
    }

    fn bind(&self, data: &Dataset) -> Result<BoundModel, ModelError> {
        let fail = |e: &PyErr| ModelError::Inference(format!("{}: {e}", self.name));
        let (scorer, classes, read, contract) = Python::attach(|py| -> PyResult<_> {
            let bind = py.import("fairpipe_rs._model")?.getattr("bind")?;
            let bound = bind.call1((self.spec.bind(py), crate::convert::to_py(py, &describe_data(data))?))?;
            let bound = bound.cast::<PyDict>()?;
            let get = |key: &str| bound.get_item(key)?.ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(key.to_string()));
            let scorer = get("scorer")?.unbind();
            let classes: Option<Vec<Bound<'_, PyAny>>> = get("classes")?.extract()?;
            let classes =
                match classes {
                    None => None,
                    Some(items) => Some(
                        items
                            .iter()
                            .map(|c| {
                                if let Ok(i) = c.extract::<i64>() {
                                    Ok(ClassKey::Int(i))
                                } else {
                                    c.extract::<String>().map(ClassKey::Text)
                                }
                            })
                            .collect::<PyResult<Vec<_>>>()?,
                    ),
                };
            let read: Vec<usize> = get("read")?.extract()?;
            let contract: String = get("contract")?.extract()?;
            Ok((scorer, classes, read, contract))
        })
        .map_err(|e| {
            let model_error = fail(&e);
            *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            model_error
        })?;
        let favourable = Favourable { label: data.label_values[1].clone(), is_zero: data.label_flipped, code: data.label_code };
        let (column, assumed, output_read) = match &classes {
            Some(classes) => {
                let (class, assumed) = favourable.class_among(classes).map_err(|m| ModelError::Inference(format!("{}: {m}", self.name)))?;
                let column = classes.iter().position(|c| *c == class).unwrap_or(0);
                let listed: Vec<String> = classes.iter().map(ToString::to_string).collect();
                (column, assumed, format!("column {column} of predict_proba (classes_ [{}])", listed.join(", ")))
            }
            None => (1, true, "column 1 of predict_proba (the model has no classes_; class 1 assumed favourable)".to_string()),
        };
        let model = PyModel {
            one_at_a_time: Mutex::new(()),
            scorer,
            column,
            domain: data.domain.clone(),
            name: self.name.clone(),
            batch_rows: self.batch_rows,
            last_error: Arc::clone(&self.last_error),
        };
        Ok(BoundModel { model: Arc::new(model), read, input_contract: contract, output_read, favourable_class_assumed: assumed })
    }
}

/// Words of `fairpipe_rs._model._check_codes`'s message, which names the offending row itself.
const CODE_CHECK_MARK: &str = " not one of its ";

/// A bound Python model: `scorer(rows_bytes, n_rows, column)` returns P(favourable) as the bytes
/// of `n_rows` float64.
struct PyModel {
    /// Held for each call: one `predict_proba` at a time. Models that parallelise inside
    /// (OpenMP in scikit-learn's boosted trees, XGBoost, LightGBM) release the GIL while they
    /// work, and two such calls at once would run twice as many threads as there are cores.
    one_at_a_time: Mutex<()>,
    scorer: Py<PyAny>,
    column: usize,
    domain: Domain,
    name: String,
    batch_rows: usize,
    last_error: LastError,
}

impl PyModel {
    /// Row `x` as `name=value` pairs, categories by name.
    fn show_row(&self, x: &[f64]) -> String {
        let cells: Vec<String> = self
            .domain
            .attributes
            .iter()
            .zip(x)
            .map(|(a, v)| match &a.kind {
                AttributeKind::Categorical { .. } => format!("{}={:?}", a.name, a.decode(*v)),
                _ => format!("{}={v}", a.name),
            })
            .collect();
        cells.join(", ")
    }

    /// An error about the batch `x`, naming its first row.
    fn batch_error(&self, x: &[f64], rows: usize, message: impl std::fmt::Display) -> ModelError {
        let width = self.domain.width().max(1);
        ModelError::Inference(format!(
            "{}: {message} (batch of {rows} rows; its first row: {})",
            self.name,
            self.show_row(&x[..width.min(x.len())])
        ))
    }
}

impl Model for PyModel {
    fn n_features(&self) -> usize {
        self.domain.width()
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let width = self.domain.width();
        if x.len() != out.len() * width {
            return Err(ModelError::Width { expected: width, found: if out.is_empty() { 0 } else { x.len() / out.len() } });
        }
        for (xs, outs) in x.chunks(self.batch_rows * width.max(1)).zip(out.chunks_mut(self.batch_rows)) {
            self.predict_batch(xs, outs)?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        self.name.clone()
    }

    fn wants_thread_chunks(&self) -> bool {
        // One interpreter lock: threads would only queue for it.
        false
    }

    fn rows_per_call(&self) -> Option<usize> {
        Some(self.batch_rows)
    }
}

impl PyModel {
    /// Score one batch, taking the GIL for it.
    fn predict_batch(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let rows = out.len();
        if rows == 0 {
            return Ok(());
        }
        // The lock is taken before the GIL and released after it: no thread waits for it holding
        // the GIL.
        let _turn = self.one_at_a_time.lock().unwrap_or_else(|p| p.into_inner());
        let answer: PyResult<Option<String>> = Python::attach(|py| {
            // Ctrl-C in a notebook or a terminal: seen here (on the main thread) between batches,
            // and raised as KeyboardInterrupt once the run has stopped.
            py.check_signals()?;
            let batch = PyBytes::new_with(py, std::mem::size_of_val(x), |bytes| {
                for (cell, v) in bytes.chunks_exact_mut(8).zip(x) {
                    cell.copy_from_slice(&v.to_ne_bytes());
                }
                Ok(())
            })?;
            let result = self.scorer.bind(py).call1((batch, rows, self.column))?;
            let result = result.cast::<PyBytes>()?;
            let bytes = result.as_bytes();
            if bytes.len() != rows * 8 {
                return Ok(Some(format!("predict_proba gave {} values for {rows} rows", bytes.len() / 8)));
            }
            for (o, cell) in out.iter_mut().zip(bytes.chunks_exact(8)) {
                let mut value = [0u8; 8];
                value.copy_from_slice(cell);
                *o = f64::from_ne_bytes(value);
            }
            Ok(None)
        });
        match answer {
            Ok(None) => {}
            Ok(Some(problem)) => return Err(self.batch_error(x, rows, problem)),
            Err(e) => {
                // The decoder's refusal of a category code names its own row
                // (`fairpipe_rs._model._check_codes`); anything else is predict_proba's.
                let error = if e.to_string().contains(CODE_CHECK_MARK) {
                    ModelError::Inference(format!("{}: {e}", self.name))
                } else {
                    self.batch_error(x, rows, format!("predict_proba raised {e}"))
                };
                *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                return Err(error);
            }
        }
        if let Some(row) = out.iter().position(|p| !p.is_finite() || !(0.0..=1.0).contains(p)) {
            let width = self.domain.width();
            return Err(ModelError::Inference(format!(
                "{}: predict_proba gave {} for row {row} of a batch of {rows} ({}); a model that returns NaN or a value outside [0, 1] cannot be audited (the batch's first row: {})",
                self.name,
                out[row],
                self.show_row(&x[row * width..(row + 1) * width]),
                self.show_row(&x[..width])
            )));
        }
        Ok(())
    }
}
