//! The [`Oracle`]: every model under test, native or ONNX, behind one thread-safe, batched,
//! query-counting `predict_proba`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use crate::error::ModelError;

/// A binary classifier: maps encoded rows to the probability of class 1.
pub trait Model: Send + Sync {
    /// Number of input features.
    fn n_features(&self) -> usize;
    /// Write P(class 1) of each row of `x` (row-major, `out.len()` rows) into `out`.
    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError>;
    /// Short description for summaries ("mlp 12-64-32-16-8-4-2", "onnx census.onnx").
    fn describe(&self) -> String;
    /// What a model behind a server sent and how fast it was answered; `None` for a model run in
    /// this process.
    fn remote_usage(&self) -> Option<crate::models::remote::RemoteUsage> {
        None
    }

    /// Whether a large batch should be cut into chunks scored on several threads (a model run
    /// here); a model behind a server batches and overlaps its own requests, and wants the whole
    /// batch in one call.
    fn wants_thread_chunks(&self) -> bool {
        true
    }
}

/// Rows per chunk when a large batch is spread over threads.
const PARALLEL_CHUNK: usize = 1024;

/// A model plus counters of how often and with how many rows it was queried.
#[derive(Clone)]
pub struct Oracle {
    model: Arc<dyn Model>,
    counters: Arc<Counters>,
}

#[derive(Default)]
struct Counters {
    calls: AtomicU64,
    rows: AtomicU64,
    busy_nanos: AtomicU64,
}

impl std::fmt::Debug for Oracle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Oracle({}, {} calls, {} rows)", self.model.describe(), self.calls(), self.rows())
    }
}

impl Oracle {
    /// Wrap a model.
    pub fn new(model: Arc<dyn Model>) -> Self {
        Oracle { model, counters: Arc::default() }
    }

    /// The wrapped model.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.model
    }

    /// Number of input features.
    pub fn n_features(&self) -> usize {
        self.model.n_features()
    }

    /// P(class 1) for each row of `x` (row-major). Batches larger than a few thousand rows are split
    /// across the rayon pool. Counts one call and `rows` rows.
    pub fn predict_proba(&self, x: &[f64]) -> Result<Vec<f64>, ModelError> {
        let mut out = vec![0.0; x.len() / self.n_features().max(1)];
        self.predict_proba_into(x, &mut out)?;
        Ok(out)
    }

    /// As [`Oracle::predict_proba`], writing into `out` (one slot per row).
    pub fn predict_proba_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let width = self.n_features();
        if x.len() != out.len() * width {
            return Err(ModelError::Width { expected: width, found: if out.is_empty() { 0 } else { x.len() / out.len() } });
        }
        self.counters.calls.fetch_add(1, Ordering::Relaxed);
        self.counters.rows.fetch_add(out.len() as u64, Ordering::Relaxed);
        let started = Instant::now();
        let result = if out.len() <= 2 * PARALLEL_CHUNK || rayon::current_num_threads() == 1 || !self.model.wants_thread_chunks() {
            self.model.predict_into(x, out)
        } else {
            x.par_chunks(PARALLEL_CHUNK * width)
                .zip(out.par_chunks_mut(PARALLEL_CHUNK))
                .try_for_each(|(xc, oc)| self.model.predict_into(xc, oc))
        };
        self.counters.busy_nanos.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        result?;
        // A NaN would compare false everywhere and read as "never discriminatory": refuse it here,
        // whatever the model.
        if let Some(row) = out.iter().position(|p| !p.is_finite()) {
            return Err(ModelError::NotFinite {
                output: "P(favourable)".into(),
                row,
                value: out[row],
                features: x[row * width..(row + 1) * width].to_vec(),
            });
        }
        Ok(())
    }

    /// Predicted class (P > 0.5) of each row.
    pub fn predict_labels(&self, x: &[f64]) -> Result<Vec<u8>, ModelError> {
        Ok(self.predict_proba(x)?.into_iter().map(|p| u8::from(p > 0.5)).collect())
    }

    /// Number of calls so far.
    pub fn calls(&self) -> u64 {
        self.counters.calls.load(Ordering::Relaxed)
    }

    /// Wall-clock seconds spent inside the model so far (summed over calls).
    pub fn busy_seconds(&self) -> f64 {
        self.counters.busy_nanos.load(Ordering::Relaxed) as f64 * 1e-9
    }

    /// Number of rows scored so far.
    pub fn rows(&self) -> u64 {
        self.counters.rows.load(Ordering::Relaxed)
    }
}

/// Share of rows whose predicted class equals `y`, and the count of correct rows.
pub fn accuracy(oracle: &Oracle, x: &ndarray::Array2<f64>, y: &[u8]) -> Result<(f64, usize), ModelError> {
    if y.is_empty() {
        return Ok((f64::NAN, 0));
    }
    let flat: Vec<f64> = x.iter().copied().collect();
    let labels = oracle.predict_labels(&flat)?;
    let correct = labels.iter().zip(y).filter(|(a, b)| a == b).count();
    Ok((correct as f64 / y.len() as f64, correct))
}
