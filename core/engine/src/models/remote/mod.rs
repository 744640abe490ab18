//! Models audited where they run: behind an inference server speaking the Open Inference Protocol
//! (KServe V2: KServe, MLServer, Triton), or as a long-running program reading batches on stdin
//! (`command`). Rows go in batches with several requests in flight, each row is scored once per run
//! (a cache keyed by the encoded row), and the traffic is counted.

pub mod command;
pub mod http;
pub mod v2;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use fairpipe_abi::domain::Domain;
use serde::{Deserialize, Serialize};

use super::model_inputs::{plan, DeclaredInput, ElementType, InputBatch, InputPlan};
use super::model_outputs::{choose_output, OutputChoice, OutputReader, RawOutput};
use crate::error::ModelError;
use crate::oracle::Model;

/// Rows used at load time to choose and check the output.
const PROBE_ROWS: usize = 256;

/// How rows are sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Traffic {
    /// Rows per request.
    pub batch_size: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Most rows the run may send (a paid or rate-limited endpoint); `None`: no cap.
    pub max_rows: Option<u64>,
}

/// Outputs returned for a batch: name, element type, values.
pub type Returned = Vec<(String, ElementType, RawOutput)>;

/// Where a remote model runs and how one batch is scored there.
pub trait Backend: Send + Sync {
    /// Where the model is, for messages and figures ("http://…/v2/models/NAME", "command …").
    fn location(&self) -> String;
    /// "kserve v2 http://…", "command python3 model.py".
    fn executor(&self) -> String;
    /// Score `rows` rows given as `inputs`; every output returned.
    fn infer(&self, inputs: Vec<InputBatch>, rows: usize) -> Result<Returned, ModelError>;
    /// Most batches it takes at once (a child process: one).
    fn max_in_flight(&self) -> usize {
        usize::MAX
    }
}

/// A model behind a server or a program.
pub struct RemoteModel {
    backend: Box<dyn Backend>,
    domain: Domain,
    plan: InputPlan,
    reader: OutputReader,
    traffic: Traffic,
    metadata_inputs: bool,
    cache: Mutex<HashMap<Vec<u64>, f64>>,
    stats: Stats,
}

#[derive(Default)]
struct Stats {
    requests: AtomicU64,
    rows_sent: AtomicU64,
    rows_asked: AtomicU64,
    cache_hits: AtomicU64,
    latencies_ms: Mutex<Vec<f64>>,
}

/// What a remote model sent and how fast it was answered (the `remote` figures of `load_model`
/// in `summary.json`, counted over the whole run).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RemoteUsage {
    /// HTTP requests sent to score rows (the load-time probe included).
    pub requests: u64,
    /// Rows sent in them.
    pub rows_sent: u64,
    /// Rows asked for by the stages.
    pub rows_asked: u64,
    /// Rows answered from the run's cache instead of the server.
    pub cache_hits: u64,
    /// Request latency percentiles, milliseconds.
    pub latency_ms_p50: f64,
    /// 95th percentile.
    pub latency_ms_p95: f64,
    /// 99th percentile.
    pub latency_ms_p99: f64,
    /// Rows per request.
    pub batch_size: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
}

impl std::fmt::Debug for RemoteModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteModel({}, output {})", self.backend.location(), self.reader.name)
    }
}

impl RemoteModel {
    /// Plan the inputs the backend declares (`declared`; empty: one `[N,k]` FP64 input `input-0`)
    /// for rows of `domain`, and choose its output on up to 256 of `probe` rows (row-major).
    pub fn load(
        backend: Box<dyn Backend>,
        declared: Vec<DeclaredInput>,
        traffic: Traffic,
        domain: &Domain,
        choice: OutputChoice<'_>,
        probe: &[f64],
    ) -> Result<Self, ModelError> {
        let url = backend.location();
        let width = domain.width();
        let metadata_inputs = !declared.is_empty();
        let inputs = if metadata_inputs {
            declared
        } else {
            vec![DeclaredInput { name: "input-0".into(), ty: ElementType::Float64, shape: vec![-1, width as i64] }]
        };
        let input_plan = plan(Path::new(&url), &inputs, domain).map_err(|e| match e {
            ModelError::Onnx { message, .. } => ModelError::Remote { url: url.clone(), message },
            other => other,
        })?;
        let probe_rows = (probe.len() / width.max(1)).min(PROBE_ROWS);
        if probe_rows == 0 {
            return Err(ModelError::Remote { url, message: "no data rows to check the model's output on".into() });
        }
        let probe = &probe[..probe_rows * width];
        let returned = backend.infer(input_plan.batch(domain, probe, probe_rows), probe_rows)?;
        if let Some(wanted) = choice.name {
            if !returned.iter().any(|(n, _, _)| n == wanted) {
                let names: Vec<&str> = returned.iter().map(|(n, _, _)| n.as_str()).collect();
                return Err(ModelError::Remote {
                    url,
                    message: format!(
                        "no output named {wanted:?} in the answer (it returned {names:?}); ask for it with `outputs = [{wanted:?}]`"
                    ),
                });
            }
        }
        let typed: Vec<(String, ElementType)> = returned.iter().map(|(n, t, _)| (n.clone(), t.clone())).collect();
        let raw: Vec<Option<RawOutput>> = returned.into_iter().map(|(_, _, r)| Some(r)).collect();
        let fail = |message: String| ModelError::Remote { url: url.clone(), message };
        let reader = choose_output(&url, &typed, &raw, &choice, probe_rows, &fail)?;
        // The probe rows are scored: keep them.
        let mut cache = HashMap::new();
        if let Some(Some(value)) = typed.iter().position(|(n, _)| *n == reader.name).map(|i| raw[i].clone()) {
            let mut probabilities = vec![0.0; probe_rows];
            reader.read(value, &mut probabilities, 0)?;
            for (row, p) in probabilities.into_iter().enumerate() {
                cache.insert(probe[row * width..(row + 1) * width].iter().map(|v| v.to_bits()).collect::<Vec<u64>>(), p);
            }
        }
        let model = RemoteModel {
            backend,
            domain: domain.clone(),
            plan: input_plan,
            reader,
            traffic,
            metadata_inputs,
            cache: Mutex::new(cache),
            stats: Stats::default(),
        };
        model.stats.requests.fetch_add(1, Ordering::Relaxed);
        model.stats.rows_sent.fetch_add(probe_rows as u64, Ordering::Relaxed);
        Ok(model)
    }

    /// The output read.
    pub fn output_name(&self) -> &str {
        &self.reader.name
    }

    /// How the output is read.
    pub fn reader(&self) -> &OutputReader {
        &self.reader
    }

    /// How rows reach the model.
    pub fn input_plan(&self) -> &InputPlan {
        &self.plan
    }

    /// Whether the server's metadata listed the inputs (else one `[N,k]` FP64 input named
    /// `input-0` carries the encoded vector).
    pub fn metadata_lists_inputs(&self) -> bool {
        self.metadata_inputs
    }

    /// "kserve v2 http://host:port/v2/models/NAME", "command python3 model.py".
    pub fn executor(&self) -> String {
        self.backend.executor()
    }

    /// The traffic so far.
    pub fn usage(&self) -> RemoteUsage {
        let mut latencies = self.stats.latencies_ms.lock().unwrap_or_else(|p| p.into_inner()).clone();
        latencies.sort_by(f64::total_cmp);
        let pct = |q: f64| -> f64 {
            if latencies.is_empty() {
                return 0.0;
            }
            let rank = ((q * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len());
            latencies[rank - 1]
        };
        RemoteUsage {
            requests: self.stats.requests.load(Ordering::Relaxed),
            rows_sent: self.stats.rows_sent.load(Ordering::Relaxed),
            rows_asked: self.stats.rows_asked.load(Ordering::Relaxed),
            cache_hits: self.stats.cache_hits.load(Ordering::Relaxed),
            latency_ms_p50: pct(0.50),
            latency_ms_p95: pct(0.95),
            latency_ms_p99: pct(0.99),
            batch_size: self.traffic.batch_size,
            concurrency: self.traffic.concurrency,
        }
    }

    /// Score `rows` rows of `x` in one request.
    fn score_batch(&self, x: &[f64], rows: usize, out: &mut [f64]) -> Result<(), ModelError> {
        if let Some(cap) = self.traffic.max_rows {
            let sent = self.stats.rows_sent.fetch_add(rows as u64, Ordering::Relaxed) + rows as u64;
            if sent > cap {
                return Err(ModelError::Remote {
                    url: self.backend.location(),
                    message: format!("max_queries = {cap} reached: the run would send more rows than the pipeline allows"),
                });
            }
        } else {
            self.stats.rows_sent.fetch_add(rows as u64, Ordering::Relaxed);
        }
        let started = Instant::now();
        let returned = self.backend.infer(self.plan.batch(&self.domain, x, rows), rows)?;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        self.stats.latencies_ms.lock().unwrap_or_else(|p| p.into_inner()).push(elapsed);
        let raw = returned.into_iter().find(|(n, _, _)| *n == self.reader.name).map(|(_, _, r)| r).ok_or_else(|| ModelError::Remote {
            url: self.backend.location(),
            message: format!("the answer has no output {:?}", self.reader.name),
        })?;
        self.reader.read(raw, out, 0).map_err(|e| match e {
            ModelError::NotFinite { output, row, value, .. } => {
                let width = self.domain.width();
                ModelError::NotFinite { output, row, value, features: x[row * width..(row + 1) * width].to_vec() }
            }
            other => other,
        })
    }
}

impl Model for RemoteModel {
    fn n_features(&self) -> usize {
        self.domain.width()
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let width = self.domain.width();
        let rows = out.len();
        self.stats.rows_asked.fetch_add(rows as u64, Ordering::Relaxed);
        let key = |r: usize| -> Vec<u64> { x[r * width..(r + 1) * width].iter().map(|v| v.to_bits()).collect() };
        // Rows not scored yet, each once.
        let mut missing: Vec<usize> = Vec::new();
        let mut first_of: HashMap<Vec<u64>, usize> = HashMap::new();
        let mut pending: Vec<(usize, usize)> = Vec::new(); // (row, index in `missing`)
        {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            let mut hits = 0u64;
            for (r, slot) in out.iter_mut().enumerate() {
                let k = key(r);
                if let Some(p) = cache.get(&k) {
                    *slot = *p;
                    hits += 1;
                } else if let Some(&i) = first_of.get(&k) {
                    pending.push((r, i));
                    hits += 1;
                } else {
                    first_of.insert(k, missing.len());
                    pending.push((r, missing.len()));
                    missing.push(r);
                }
            }
            self.stats.cache_hits.fetch_add(hits, Ordering::Relaxed);
        }
        if missing.is_empty() {
            return Ok(());
        }
        let send: Vec<f64> = missing.iter().flat_map(|&r| x[r * width..(r + 1) * width].iter().copied()).collect();
        let mut scored = vec![0.0; missing.len()];
        let batch = self.traffic.batch_size.max(1);
        let chunks: Vec<(usize, &mut [f64])> = scored.chunks_mut(batch).enumerate().map(|(i, c)| (i * batch, c)).collect();
        let workers = self.traffic.concurrency.min(self.backend.max_in_flight()).max(1).min(chunks.len());
        let queue = Mutex::new(chunks);
        let failed: Mutex<Option<ModelError>> = Mutex::new(None);
        let stop = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| loop {
                    if stop.load(Ordering::Relaxed) > 0 {
                        return;
                    }
                    let Some((start, chunk)) = queue.lock().unwrap_or_else(|p| p.into_inner()).pop() else { return };
                    let n = chunk.len();
                    if let Err(e) = self.score_batch(&send[start * width..(start + n) * width], n, chunk) {
                        stop.fetch_add(1, Ordering::Relaxed);
                        failed.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                        return;
                    }
                });
            }
        });
        drop(queue);
        if let Some(e) = failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        for (i, &r) in missing.iter().enumerate() {
            cache.insert(key(r), scored[i]);
        }
        drop(cache);
        for (r, i) in pending {
            out[r] = scored[i];
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("{} (output {}, {})", self.executor(), self.reader.name, self.reader.describe())
    }

    fn remote_usage(&self) -> Option<RemoteUsage> {
        Some(self.usage())
    }
}
