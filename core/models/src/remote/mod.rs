//! Models audited where they run: behind an inference server speaking the Open Inference Protocol
//! (KServe V2: KServe, MLServer, Triton), or as a long-running program reading batches on stdin
//! (`command`). Rows go in batches with several requests in flight, a row is scored once per run
//! (the run's [`ScoreCache`], keyed by the encoded row and bounded like the plugins' caches:
//! `FAIRPIPE_CACHE_ROWS`, default 1,000,000 rows — past it the least recently used rows may be
//! sent again), and the traffic is counted.
//!
//! Every caller of one model shares one queue: rows asked for at the same time (the oracle's
//! parallel chunks, or any concurrent callers) go out merged into requests of up to `batch_size`
//! rows, and at most `concurrency` requests are in flight for the whole model, not per call. A
//! caller waiting for a free slot sends whatever is queued, its own rows and others', so merging
//! happens exactly when the server is the bottleneck and adds no wait when it is not. Callers that
//! can merge their own work (the host's checks, the estimate's trials) ask for `batch_size` rows a
//! call — more when `concurrency` exceeds the threads calling at once ([`Model::rows_per_call`]) —
//! so that requests are as large as the pipeline allows.

pub mod command;
pub mod error;
pub mod grpc;
pub mod http;
pub mod mlflow;
pub mod v2;

use std::collections::{HashMap, VecDeque};

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use fairpipe_abi::domain::Domain;
use serde_json::Value;

use self::error::AnswerError;
use crate::error::ModelError;
use crate::inputs::{plan, DeclaredInput, ElementType, Feeding, InputBatch, InputPlan, InputValues};
use crate::outputs::{choose_output, OutputChoice, OutputReader, RawOutput};
use crate::score_cache::ScoreCache;
use crate::{Model, RemoteUsage};

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
    fn infer(&self, inputs: &[InputBatch], rows: usize) -> Result<Returned, ModelError>;
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
    cache: ScoreCache,
    stats: Stats,
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// Batches waiting to be sent, requests in flight, and answers not yet collected, for all callers.
#[derive(Default)]
struct Queue {
    waiting: VecDeque<Pending>,
    in_flight: usize,
    /// Answers by batch id: the probabilities, or the error (`None`: withdrawn unsent after
    /// another batch of the same call failed).
    done: HashMap<u64, Result<Vec<f64>, Option<ModelError>>>,
    next_id: u64,
}

/// One caller's batch of rows (row-major), waiting to be sent.
struct Pending {
    id: u64,
    rows: usize,
    x: Vec<f64>,
}

#[derive(Default)]
struct Stats {
    requests: AtomicU64,
    rows_sent: AtomicU64,
    rows_asked: AtomicU64,
    cache_hits: AtomicU64,
    latencies_ms: Mutex<Vec<f64>>,
}

impl std::fmt::Debug for RemoteModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteModel({}, output {})", self.backend.location(), self.reader.name)
    }
}

impl RemoteModel {
    /// Plan the inputs the backend declares (`declared`; empty: one `[N,k]` FP64 input `input-0`)
    /// for rows of `domain` fed as `feeding` says, and choose its output on up to 256 of `probe`
    /// rows (row-major).
    pub fn load(
        backend: Box<dyn Backend>,
        declared: Vec<DeclaredInput>,
        traffic: Traffic,
        domain: &Domain,
        feeding: &Feeding,
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
        let input_plan = plan(Path::new(&url), &inputs, domain, feeding).map_err(|e| match e {
            ModelError::Onnx { message, .. } => ModelError::Remote { url: url.clone(), message },
            other => other,
        })?;
        let probe_rows = (probe.len() / width.max(1)).min(PROBE_ROWS);
        if probe_rows == 0 {
            return Err(ModelError::Remote { url, message: "no data rows to check the model's output on".into() });
        }
        let probe = &probe[..probe_rows * width];
        let returned = backend.infer(&input_plan.batch(domain, probe, probe_rows), probe_rows)?;
        if let Some(wanted) = choice.name {
            if !returned.iter().any(|(n, _, _)| n == wanted) {
                let names: Vec<&str> = returned.iter().map(|(n, _, _)| n.as_str()).collect();
                return Err(ModelError::MissingOutput {
                    model: url,
                    wanted: wanted.to_string(),
                    outputs: format!("the answer holds {names:?}; ask for it with `outputs = [{wanted:?}]`"),
                });
            }
        }
        let typed: Vec<(String, ElementType)> = returned.iter().map(|(n, t, _)| (n.clone(), t.clone())).collect();
        let raw: Vec<Option<RawOutput>> = returned.into_iter().map(|(_, _, r)| Some(r)).collect();
        let fail = |message: String| ModelError::Remote { url: url.clone(), message };
        let reader = choose_output(&url, &typed, &raw, &choice, probe_rows, &fail)?;
        // The probe rows are scored: keep them.
        let cache_rows = ScoreCache::capacity_from_env().map_err(|e| ModelError::Remote { url: url.clone(), message: e.to_string() })?;
        let cache = ScoreCache::new(cache_rows);
        if let Some(Some(value)) = typed.iter().position(|(n, _)| *n == reader.name).map(|i| raw[i].clone()) {
            let mut probabilities = vec![0.0; probe_rows];
            reader.read(value, &mut probabilities, 0)?;
            for (row, p) in probabilities.into_iter().enumerate() {
                cache.insert(&probe[row * width..(row + 1) * width], p);
            }
        }
        let model = RemoteModel {
            backend,
            domain: domain.clone(),
            plan: input_plan,
            reader,
            traffic,
            metadata_inputs,
            cache,
            stats: Stats::default(),
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
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
        let [p50, p95, p99] = latency_percentiles(&self.stats.latencies_ms);
        RemoteUsage {
            requests: self.stats.requests.load(Ordering::Relaxed),
            rows_sent: self.stats.rows_sent.load(Ordering::Relaxed),
            rows_asked: self.stats.rows_asked.load(Ordering::Relaxed),
            cache_hits: self.stats.cache_hits.load(Ordering::Relaxed),
            latency_ms_p50: p50,
            latency_ms_p95: p95,
            latency_ms_p99: p99,
            batch_size: self.traffic.batch_size,
            concurrency: self.traffic.concurrency,
            llm: None,
        }
    }

    /// Score `rows` rows of `x` in one request (`x` becomes the request's input when the model
    /// takes the encoded rows as they are).
    fn score_batch(&self, x: Vec<f64>, rows: usize, out: &mut [f64]) -> Result<(), ModelError> {
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
        let (inputs, kept) = self.plan.batch_owned(&self.domain, x, rows);
        let returned = self.backend.infer(&inputs, rows)?;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        self.stats.latencies_ms.lock().unwrap_or_else(|p| p.into_inner()).push(elapsed);
        let raw = returned.into_iter().find(|(n, _, _)| *n == self.reader.name).map(|(_, _, r)| r).ok_or_else(|| ModelError::Remote {
            url: self.backend.location(),
            message: format!("the answer has no output {:?}", self.reader.name),
        })?;
        self.reader.read(raw, out, 0).map_err(|e| match e {
            ModelError::NotFinite { output, row, value, .. } => {
                // The rows: kept, or the request's one input.
                let x = match (&kept, inputs.first().map(|input| &input.values)) {
                    (Some(x), _) | (None, Some(InputValues::Float64(x))) => x.as_slice(),
                    _ => &[],
                };
                let width = self.domain.width();
                let features = x.get(row * width..(row + 1) * width).unwrap_or_default().to_vec();
                ModelError::NotFinite { output, row, value, features }
            }
            other => other,
        })
    }
}

impl RemoteModel {
    /// Score the rows of `x` (row-major) through the shared queue: cut into batches of up to
    /// `batch_size` rows, queued behind (and merged with) other callers' batches, sent with up to
    /// `concurrency` requests in flight for the whole model.
    fn score_rows(&self, x: Vec<f64>) -> Result<Vec<f64>, ModelError> {
        let width = self.domain.width().max(1);
        let batch = self.traffic.batch_size.max(1);
        let limit = self.in_flight_limit();
        let total_rows = x.len() / width;
        let ids: Vec<u64> = {
            let mut queue = self.lock_queue();
            let mut ids = Vec::new();
            let mut queue_rows = |queue: &mut Queue, x: Vec<f64>| {
                let id = queue.next_id;
                queue.next_id += 1;
                queue.waiting.push_back(Pending { id, rows: x.len() / width, x });
                ids.push(id);
            };
            if x.len() <= batch * width {
                // One batch: queued as it is, not copied.
                queue_rows(&mut queue, x);
            } else {
                for chunk in x.chunks(batch * width) {
                    queue_rows(&mut queue, chunk.to_vec());
                }
            }
            ids
        };
        // This call's own senders: enough to keep `limit` requests busy with its batches.
        let helpers = limit.min(ids.len());
        std::thread::scope(|scope| {
            for _ in 1..helpers {
                scope.spawn(|| self.pump(&ids, limit));
            }
            self.pump(&ids, limit);
        });
        let mut queue = self.lock_queue();
        let mut scored = Vec::with_capacity(total_rows);
        let mut failure: Option<ModelError> = None;
        let mut withdrawn = false;
        for id in &ids {
            match queue.done.remove(id) {
                Some(Ok(values)) => scored.extend(values),
                Some(Err(Some(e))) => {
                    failure.get_or_insert(e);
                }
                Some(Err(None)) | None => withdrawn = true,
            }
        }
        match failure {
            Some(e) => Err(e),
            None if withdrawn => Err(ModelError::Remote { url: self.backend.location(), message: "a batch was not answered".into() }),
            None => Ok(scored),
        }
    }

    /// Send queued batches (anyone's, oldest first, merged up to `batch_size` rows) while a slot
    /// is free, until every batch in `ids` is answered; after a failure among them, withdraw the
    /// ones not sent yet.
    fn pump(&self, ids: &[u64], limit: usize) {
        let batch = self.traffic.batch_size.max(1);
        let width = self.domain.width().max(1);
        let mut queue = self.lock_queue();
        loop {
            if ids.iter().all(|id| queue.done.contains_key(id)) {
                return;
            }
            if ids.iter().any(|id| matches!(queue.done.get(id), Some(Err(_)))) {
                let unsent: Vec<u64> = queue.waiting.iter().filter(|p| ids.contains(&p.id)).map(|p| p.id).collect();
                if !unsent.is_empty() {
                    queue.waiting.retain(|p| !ids.contains(&p.id));
                    for id in unsent {
                        queue.done.insert(id, Err(None));
                    }
                    self.wake.notify_all();
                    continue;
                }
            }
            if queue.in_flight >= limit || queue.waiting.is_empty() {
                queue = self.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            let mut taken: Vec<Pending> = Vec::new();
            let mut rows = 0;
            while let Some(next) = queue.waiting.front() {
                if !taken.is_empty() && rows + next.rows > batch {
                    break;
                }
                rows += next.rows;
                taken.extend(queue.waiting.pop_front());
            }
            queue.in_flight += 1;
            drop(queue);
            let x: Vec<f64> =
                if taken.len() == 1 { std::mem::take(&mut taken[0].x) } else { taken.iter().flat_map(|p| p.x.iter().copied()).collect() };
            let mut scored = vec![0.0; x.len() / width];
            let result = self.score_batch(x, scored.len(), &mut scored);
            queue = self.lock_queue();
            queue.in_flight -= 1;
            match result {
                Ok(()) => {
                    let mut at = 0;
                    for p in &taken {
                        queue.done.insert(p.id, Ok(scored[at..at + p.rows].to_vec()));
                        at += p.rows;
                    }
                }
                Err(e) => {
                    // The first batch gets the error itself, the others a copy of what it says.
                    let copy = |e: &ModelError| match e {
                        ModelError::Remote { url, message } => ModelError::Remote { url: url.clone(), message: message.clone() },
                        other => ModelError::Inference(other.to_string()),
                    };
                    for p in taken.iter().skip(1) {
                        queue.done.insert(p.id, Err(Some(copy(&e))));
                    }
                    queue.done.insert(taken[0].id, Err(Some(e)));
                }
            }
            self.wake.notify_all();
        }
    }

    /// Most requests in flight at once for the whole model: `concurrency`, within what the
    /// backend takes.
    fn in_flight_limit(&self) -> usize {
        self.traffic.concurrency.min(self.backend.max_in_flight()).max(1)
    }

    fn lock_queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Model for RemoteModel {
    fn labels_only(&self) -> bool {
        self.reader.labels_only()
    }

    fn n_features(&self) -> usize {
        self.domain.width()
    }

    fn predict_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), ModelError> {
        let width = self.domain.width();
        let rows = out.len();
        self.stats.rows_asked.fetch_add(rows as u64, Ordering::Relaxed);
        // Rows already scored in this run, or repeated in `x`, are not sent again.
        let sent = self.cache.answer(x, width, out, |batch, answers| {
            answers.copy_from_slice(&self.score_rows(batch.into_owned())?);
            Ok::<(), ModelError>(())
        })?;
        self.stats.cache_hits.fetch_add((rows - sent) as u64, Ordering::Relaxed);
        Ok(())
    }

    fn describe(&self) -> String {
        format!("{} (output {}, {})", self.executor(), self.reader.name, self.reader.describe())
    }

    fn remote_usage(&self) -> Option<RemoteUsage> {
        Some(self.usage())
    }

    fn wants_thread_chunks(&self) -> bool {
        false
    }

    fn rows_per_call(&self) -> Option<usize> {
        // Calls made at once (one per thread of the pool) together fill the requests in flight.
        Some(self.traffic.batch_size.max(1).saturating_mul(self.in_flight_limit().div_ceil(rayon::current_num_threads().max(1))))
    }
}

/// The 50th, 95th and 99th percentiles (nearest rank) of request latencies; 0 when none.
pub fn latency_percentiles(latencies: &Mutex<Vec<f64>>) -> [f64; 3] {
    let mut latencies = latencies.lock().unwrap_or_else(|p| p.into_inner()).clone();
    latencies.sort_by(f64::total_cmp);
    [0.50, 0.95, 0.99].map(|q| {
        if latencies.is_empty() {
            return 0.0;
        }
        let rank = ((q * latencies.len() as f64).ceil() as usize).clamp(1, latencies.len());
        latencies[rank - 1]
    })
}

/// Parse a JSON answer, accepting the bare `NaN`, `Infinity` and `-Infinity` that Python's `json`
/// writes for non-finite floats (read as `null`, then as NaN by [`read_output`]): a model that
/// returns NaN is refused by the output reader naming the row, not as an unreadable answer.
pub fn parse_json(text: &str) -> serde_json::Result<Value> {
    let first = match serde_json::from_str(text) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    let mut cleaned = String::with_capacity(text.len());
    let (mut in_string, mut escaped, mut replaced) = (false, false, false);
    let mut rest = text;
    while let Some(ch) = rest.chars().next() {
        if in_string {
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == '"' {
                in_string = false;
            }
        } else if ch == '"' {
            in_string = true;
        } else if let Some(token) = ["-Infinity", "Infinity", "NaN"].into_iter().find(|t| rest.starts_with(t)) {
            cleaned.push_str("null");
            rest = &rest[token.len()..];
            replaced = true;
            continue;
        }
        cleaned.push(ch);
        rest = &rest[ch.len_utf8()..];
    }
    if !replaced {
        return Err(first);
    }
    serde_json::from_str(&cleaned).map_err(|_| first)
}

/// One output of a JSON answer (a program's line, MLflow's `predictions`): a value per row, each a
/// number, a list of numbers (probabilities), an integer label or a text label.
pub fn read_output(name: &str, values: &Value, rows: usize) -> Result<(String, ElementType, RawOutput), AnswerError> {
    let list = values.as_array().ok_or_else(|| AnswerError::NotAList { name: name.to_string() })?;
    if list.len() != rows {
        return Err(AnswerError::BatchLength { name: name.to_string(), found: list.len(), rows });
    }
    // `null` is how many JSON writers spell NaN (JavaScript, orjson, and [`parse_json`] for
    // Python's bare `NaN`): read as NaN, refused by the reader with its row.
    let number = |v: &Value| {
        if v.is_null() {
            Ok(f64::NAN)
        } else {
            v.as_f64().ok_or_else(|| AnswerError::NotANumber { name: name.to_string(), value: v.to_string() })
        }
    };
    let raw = match list.first() {
        Some(Value::Array(first)) => {
            let columns = first.len().max(1);
            let mut flat = Vec::with_capacity(rows * columns);
            for row in list {
                let row =
                    row.as_array().filter(|r| r.len() == columns).ok_or_else(|| AnswerError::RaggedRows { name: name.to_string() })?;
                for v in row {
                    flat.push(number(v)?);
                }
            }
            RawOutput::Floats { values: flat, columns }
        }
        Some(Value::String(_)) => {
            RawOutput::TextLabels(list.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).collect())
        }
        _ if list.iter().all(|v| v.is_i64()) => RawOutput::IntLabels(list.iter().filter_map(Value::as_i64).collect()),
        _ => RawOutput::Floats { values: list.iter().map(number).collect::<Result<_, _>>()?, columns: 1 },
    };
    let ty = match &raw {
        RawOutput::IntLabels(_) => ElementType::Int64,
        RawOutput::TextLabels(_) => ElementType::String,
        _ => ElementType::Float64,
    };
    Ok((name.to_string(), ty, raw))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::InputValues;
    use crate::outputs::{Favourable, OutputTransform};
    use fairpipe_abi::domain::{Attribute, AttributeKind};
    use serde_json::json;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::time::Duration;

    /// `backend` with `declared` inputs for rows of `domain`, read as probabilities of class 1,
    /// sent 1,000 rows a request, one request at a time (probed on the row (999, 0)).
    fn load(backend: impl Backend + 'static, declared: Vec<DeclaredInput>, domain: &Domain) -> RemoteModel {
        let choice = OutputChoice {
            name: None,
            transform: OutputTransform::None,
            favourable: Favourable { label: "1".into(), is_zero: false, code: None },
            classes: Vec::new(),
        };
        let traffic = Traffic { batch_size: 1000, concurrency: 1, max_rows: None };
        RemoteModel::load(Box::new(backend), declared, traffic, domain, &Feeding::default(), choice, &[999.0, 0.0]).unwrap()
    }

    /// A server that answers p = x0 / 1000 after `delay`, counting requests and the most requests
    /// it had in flight at once; it holds its second request until `gate` callers have started.
    struct Slow {
        delay: Duration,
        in_flight: AtomicUsize,
        most: Arc<AtomicUsize>,
        requests: AtomicUsize,
        started: Arc<AtomicUsize>,
        gate: usize,
    }

    impl Backend for Slow {
        fn location(&self) -> String {
            "slow".into()
        }
        fn executor(&self) -> String {
            "slow".into()
        }
        fn infer(&self, inputs: &[InputBatch], rows: usize) -> Result<Returned, ModelError> {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            if self.requests.fetch_add(1, Ordering::SeqCst) == 1 {
                // The first request after the probe: let every caller queue its rows behind it.
                while self.started.load(Ordering::SeqCst) < self.gate {
                    std::thread::sleep(Duration::from_millis(1));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            std::thread::sleep(self.delay);
            let InputValues::Float64(x) = &inputs[0].values else { panic!("FP64 input") };
            assert_eq!(x.len(), rows * 2);
            let p: Vec<f64> = x.chunks(2).map(|r| r[0] / 1000.0).collect();
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok(vec![("p".into(), ElementType::Float64, RawOutput::Floats { values: p, columns: 1 })])
        }
    }

    #[test]
    fn python_non_finite_tokens_read_as_nan_rows() {
        let value = parse_json(r#"{"p": [0.5, NaN, -Infinity], "s": "NaN \" Infinity"}"#).unwrap();
        assert_eq!(value["s"], "NaN \" Infinity", "text is left alone");
        let (_, _, raw) = read_output("p", &value["p"], 3).unwrap();
        let RawOutput::Floats { values, columns: 1 } = raw else { panic!("{raw:?}") };
        assert_eq!(values[0], 0.5);
        assert!(values[1].is_nan() && values[2].is_nan());
        assert!(parse_json("{\"p\": [Nope]}").is_err());
    }

    #[test]
    fn concurrent_callers_share_the_concurrency_cap_and_their_rows_are_merged() {
        let int = |name: &str| Attribute {
            name: name.into(),
            kind: AttributeKind::Integer,
            lower: 0.0,
            upper: 999.0,
            step: 1.0,
            protected: false,
        };
        let domain = Domain { attributes: vec![int("a"), int("b")] };
        let callers = 8;
        let started = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let slow = Slow {
            delay: Duration::from_millis(5),
            in_flight: AtomicUsize::new(0),
            most: Arc::clone(&most),
            requests: AtomicUsize::new(0),
            started: Arc::clone(&started),
            gate: callers,
        };
        let model = load(slow, Vec::new(), &domain);
        // Each caller asks for 100 rows of its own (x0 = caller * 100 + i).
        let answers: Vec<Vec<f64>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..callers)
                .map(|c| {
                    let (model, started) = (&model, &started);
                    scope.spawn(move || {
                        let x: Vec<f64> = (0..100).flat_map(|i| [(c * 100 + i) as f64, 1.0]).collect();
                        let mut out = vec![0.0; 100];
                        started.fetch_add(1, Ordering::SeqCst);
                        model.predict_into(&x, &mut out).unwrap();
                        out
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (c, out) in answers.iter().enumerate() {
            for (i, p) in out.iter().enumerate() {
                assert_eq!(*p, (c * 100 + i) as f64 / 1000.0, "caller {c} row {i}");
            }
        }
        let usage = model.usage();
        // The probe, the first caller's batch alone, then the seven others merged into one request
        // of 700 rows (the first sent may belong to any caller).
        assert_eq!(usage.rows_sent, 1 + 800);
        assert_eq!(usage.requests, 3, "{usage:?}");
        assert_eq!(most.load(Ordering::SeqCst), 1, "concurrency = 1 holds across callers");
    }

    /// A server that answers p = a / 1000 for rows (a, b), and NaN when a is 7.
    struct NanAtSeven;

    impl Backend for NanAtSeven {
        fn location(&self) -> String {
            "nan-at-seven".into()
        }
        fn executor(&self) -> String {
            self.location()
        }
        fn infer(&self, inputs: &[InputBatch], _rows: usize) -> Result<Returned, ModelError> {
            // One [N, 2] vector, or one column per feature ("a" first).
            let a: Vec<f64> = match &inputs[0].values {
                InputValues::Float64(x) if inputs.len() == 1 => x.chunks(2).map(|r| r[0]).collect(),
                InputValues::Float64(a) => a.clone(),
                other => panic!("FP64 inputs, not {other:?}"),
            };
            let p = a.iter().map(|&a| if a == 7.0 { f64::NAN } else { a / 1000.0 }).collect();
            Ok(vec![("p".into(), ElementType::Float64, RawOutput::Floats { values: p, columns: 1 })])
        }
    }

    #[test]
    fn a_value_that_is_not_a_number_is_refused_naming_the_row_sent() {
        let attribute = |name: &str| Attribute::integer(name, 0.0, 999.0, false);
        let domain = Domain { attributes: vec![attribute("a"), attribute("b")] };
        let column = |name: &str| DeclaredInput { name: name.into(), ty: ElementType::Float64, shape: vec![-1, 1] };
        // The encoded vector (handed to the request as it is) and named columns (built from it).
        for declared in [Vec::new(), vec![column("a"), column("b")]] {
            let named = !declared.is_empty();
            let model = load(NanAtSeven, declared, &domain);
            assert_eq!(matches!(model.input_plan(), InputPlan::Named(_)), named);
            let mut out = [0.0; 3];
            let error = model.predict_into(&[5.0, 1.0, 7.0, 2.0, 9.0, 3.0], &mut out).unwrap_err();
            let ModelError::NotFinite { row, features, .. } = error else { panic!("named {named}: {error}") };
            assert_eq!((row, features), (1, vec![7.0, 2.0]), "named {named}");
        }
    }

    #[test]
    fn answers_read_as_probabilities_labels_or_text() {
        let (_, _, raw) = read_output("p", &json!([[0.25, 0.75], [1.0, 0.0]]), 2).unwrap();
        assert_eq!(raw, RawOutput::Floats { values: vec![0.25, 0.75, 1.0, 0.0], columns: 2 });
        let (_, ty, raw) = read_output("label", &json!([1, 0, 1]), 3).unwrap();
        assert_eq!((ty, raw), (ElementType::Int64, RawOutput::IntLabels(vec![1, 0, 1])));
        let (_, ty, _) = read_output("label", &json!(["<=50K", ">50K"]), 2).unwrap();
        assert_eq!(ty, ElementType::String);
        assert!(read_output("p", &json!([0.5]), 2).unwrap_err().to_string().contains("1 values for a batch of 2"));
        assert!(read_output("p", &json!([[0.5, 0.5], [1.0]]), 2).unwrap_err().to_string().contains("different lengths"));
    }
}
