//! `fairpipe model-speed`: how fast a model scores a data file's rows, opened as a `load_model`
//! stage opens it (the same executor choice and checks, `fairpipe_core::models::open`) and asked
//! through the same oracle the stages ask, batch after batch, on a pool of a given number of
//! threads. What it prints is a measure, not an audit: the rows scored, the wall and CPU seconds
//! of the scoring alone (not the loading), and, if asked, every row's P(favourable) of the first
//! pass. `scripts/bench_tree_peers.py` times fairpipe's executors with it beside other libraries.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::builder::TypedValueParser as _;

use fairpipe_core::data::{load, LoadSpec};
use fairpipe_core::models::llm::offline::AnswerSource;
use fairpipe_core::models::open::{Executor, OpenRequest, Place};
use fairpipe_core::models::outputs::OutputTransform;
use fairpipe_core::models::remote::Traffic;
use fairpipe_core::oracle::Oracle;

/// What to measure (`fairpipe model-speed`'s arguments).
#[derive(clap::Args)]
pub struct SpeedOptions {
    /// The model file (ONNX).
    pub model: PathBuf,
    /// The data file (CSV or Parquet): its feature rows are scored, read as a load stage reads
    /// them.
    pub data: PathBuf,
    /// The label column (not a feature).
    #[arg(long)]
    pub label: String,
    /// The favourable label value as written in the file (as the load stage's `favourable`).
    #[arg(long)]
    pub favourable: Option<String>,
    /// A category codes file (as the load stage's `codes`).
    #[arg(long, value_name = "FILE.toml")]
    pub codes: Option<PathBuf>,
    /// Columns that are not features, comma-separated (as the load stage's `drop`).
    #[arg(long = "drop", value_name = "COL,...", value_delimiter = ',')]
    pub drop: Vec<String>,
    /// Rows per call (default: every row in one call).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Threads the rows are scored on.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// What runs the model (as load_model's `executor`).
    #[arg(long, default_value = "auto", value_parser = executor_parser())]
    pub executor: Executor,
    /// Passes over the rows go on until this many seconds have passed (at least one pass).
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Write the first pass's P(favourable) to this file, one a line in row order.
    #[arg(long, value_name = "FILE")]
    pub predictions: Option<PathBuf>,
}

/// `--executor`'s values: load_model's `executor` names.
fn executor_parser() -> impl clap::builder::TypedValueParser<Value = Executor> {
    const ALL: [Executor; 4] = [Executor::Auto, Executor::Native, Executor::Tract, Executor::Onnxruntime];
    clap::builder::PossibleValuesParser::new(ALL.map(Executor::name))
        .map(|name| ALL.into_iter().find(|e| e.name() == name).unwrap_or_default())
}

/// What was measured.
#[derive(Debug, serde::Serialize)]
pub struct Speed {
    /// The executor that ran the model, as the `load_model` stage's figures name it.
    pub executor: String,
    /// Rows of the data file.
    pub rows: usize,
    /// Rows per call.
    pub batch: usize,
    /// Threads of the pool.
    pub threads: usize,
    /// Passes made over the rows.
    pub passes: usize,
    /// Rows scored in all (`rows × passes`).
    pub rows_scored: u64,
    /// Wall seconds of the scoring.
    pub wall_s: f64,
    /// CPU seconds every thread of the process ran during the scoring (Linux; `None` elsewhere).
    pub cpu_s: Option<f64>,
    /// Rows scored per wall second.
    pub rows_per_s: f64,
    /// Rows scored per CPU second.
    pub rows_per_cpu_s: Option<f64>,
    /// Wall seconds of opening the model (its checks included), before the scoring.
    pub open_s: f64,
}

/// Why a measure could not be made: each names the file or the argument.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpeedError {
    /// The codes file's problems.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Codes(Vec<fairpipe_core::error::ConfigProblem>),
    /// The data file could not be read as a `load` stage reads it.
    #[error(transparent)]
    Data(#[from] fairpipe_core::error::DataError),
    /// The model could not be opened or scored.
    #[error("{}: {source}", .model.display())]
    Model {
        /// The model file.
        model: PathBuf,
        /// What failed (boxed: the error is large).
        source: Box<fairpipe_core::models::error::ModelError>,
    },
    /// `--batch 0`, `--threads 0` or a data file without rows.
    #[error("{0}")]
    Argument(String),
    /// The predictions file could not be written.
    #[error("{}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Open the model for the data's rows and score them batch after batch (see [`SpeedOptions`]).
pub fn measure(options: &SpeedOptions) -> Result<Speed, SpeedError> {
    if options.batch == Some(0) || options.threads == 0 {
        return Err(SpeedError::Argument("--batch and --threads must be at least 1".into()));
    }
    let mut spec = LoadSpec::new(&options.data, &options.label);
    spec.favourable = options.favourable.clone();
    spec.drop = options.drop.clone();
    if let Some(codes) = &options.codes {
        spec.codes = Some(fairpipe_core::codes::read(codes).map_err(SpeedError::Codes)?);
    }
    let data = load(&spec)?;
    let model_error = |source| SpeedError::Model { model: options.model.clone(), source: Box::new(source) };
    let started = Instant::now();
    let request = OpenRequest {
        place: Place::File(options.model.clone()),
        output: None,
        transform: OutputTransform::None,
        favourable_class: None,
        inputs: Default::default(),
        executor: options.executor,
        onnxruntime: None,
        traffic: Traffic { batch_size: 1000, concurrency: 1, max_rows: None },
    };
    let (model, opened) = request.open(&data, &AnswerSource::default()).map_err(model_error)?;
    let open_s = started.elapsed().as_secs_f64();
    let oracle = Oracle::new(model).without_cache();
    let width = data.domain.width();
    let rows: Vec<f64> = data.x.iter().copied().collect();
    let n = rows.len() / width.max(1);
    if n == 0 {
        return Err(SpeedError::Argument(format!("{}: no rows to score", options.data.display())));
    }
    let batch = options.batch.unwrap_or(n).min(n);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads)
        .build()
        .map_err(|e| SpeedError::Argument(format!("a pool of {} threads: {e}", options.threads)))?;
    let mut first = vec![0.0; n];
    let mut out = vec![0.0; n];
    let (passes, wall_s, cpu_s) = pool.install(|| -> Result<_, SpeedError> {
        let cpu_before = process_cpu_seconds();
        let start = Instant::now();
        let mut passes = 0;
        loop {
            let into = if passes == 0 { &mut first } else { &mut out };
            for (x, p) in rows.chunks(batch * width).zip(into.chunks_mut(batch)) {
                oracle.predict_proba_into(x, p).map_err(model_error)?;
            }
            passes += 1;
            if start.elapsed().as_secs_f64() >= options.seconds {
                break;
            }
        }
        let wall_s = start.elapsed().as_secs_f64();
        let cpu_s = cpu_before.zip(process_cpu_seconds()).map(|(before, after)| after - before);
        Ok((passes, wall_s, cpu_s))
    })?;
    if let Some(path) = &options.predictions {
        write_predictions(path, &first)?;
    }
    let rows_scored = (n * passes) as u64;
    Ok(Speed {
        executor: opened.executor.unwrap_or_else(|| oracle.model().describe()),
        rows: n,
        batch,
        threads: options.threads,
        passes,
        rows_scored,
        wall_s,
        cpu_s,
        rows_per_s: rows_scored as f64 / wall_s,
        rows_per_cpu_s: cpu_s.filter(|s| *s > 0.0).map(|s| rows_scored as f64 / s),
        open_s,
    })
}

/// One P(favourable) a line, written so that it reads back as the same `f64`.
fn write_predictions(path: &Path, p: &[f64]) -> Result<(), SpeedError> {
    let text: String = p.iter().map(|v| format!("{v:?}\n")).collect();
    std::fs::write(path, text).map_err(|source| SpeedError::Write { path: path.to_path_buf(), source })
}

/// The CPU seconds every thread of this process has run so far (Linux: each task's
/// `/proc/self/task/ID/schedstat`, in nanoseconds); `None` where the kernel does not say.
fn process_cpu_seconds() -> Option<f64> {
    let mut nanos: u64 = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let text = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        nanos += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(nanos as f64 / 1e9)
}
