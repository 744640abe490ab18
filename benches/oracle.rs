//! Model throughput (rows/s) for the census reference ONNX model (through the native dense executor,
//! tract and ONNX Runtime) and the Rust MLP at batch 1, 64, 4096 and 32768, on one thread and on all
//! threads; the exports people ship (tests/fixtures/exports: tree ensembles, a scikit-learn
//! Pipeline with named string inputs) through ONNX Runtime, and a tree ensemble through tract for
//! comparison; discrimination-check throughput (rows checked/s); and the shared score cache's cost
//! (direct, all misses, all hits).
//!
//! The tree exports of tests/fixtures/onnx/trees (group `trees/…`, issue 38): the native tree
//! executor beside ONNX Runtime through `ort`, batch 64 and 4096, one thread and all threads, on
//! the census rows, and one thread timed by the CPU time it ran (`…/cpu1/…`: criterion's "time"
//! and "thrpt" are then CPU time and rows per CPU second); then ONNX Runtime in Python on the same rows (scripts/bench_trees_python.py,
//! run with `FAIRPIPE_TREES_PYTHON`, default ~/.cache/fairpipe/trees-venv/bin/python), printed as
//! `python-onnxruntime MODEL threadsT BATCH ROWS_PER_S` lines. `FAIRPIPE_BENCH_TREES=xgboost,…`
//! keeps to some exports.
//!
//! The native tree executor alone on the same exports (`trees-executor/EXPORT/native-trees/cpu1/4096`:
//! the graph on rows already f32, no oracle), one thread, CPU time.
//!
//! `cargo bench --bench oracle` (ONNX Runtime: `pip install onnxruntime`).

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fairpipe_core::check::Checker;
use fairpipe_core::data::{load, LoadSpec, MissingPolicy, Split, SplitSpec};
use fairpipe_core::models::inputs::Feeding;
use fairpipe_core::models::onnx::ort::OutputChoice;
use fairpipe_core::models::onnx::runtime::runtime;
use fairpipe_core::models::outputs::{Favourable, OutputTransform};
use fairpipe_core::models::trees::Graph;
use fairpipe_core::models::{Mlp, MlpConfig, OnnxModel, OrtModel, TreeModel};
use fairpipe_core::oracle::{Model, Oracle};

fn census() -> fairpipe_core::data::Dataset {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut spec = LoadSpec::new(root.join("pipelines/data/census.csv"), "income");
    spec.codes = Some(fairpipe_core::codes::read(&root.join("pipelines/data/census.codes.toml")).expect("the census codes"));
    spec.favourable = Some(">50K".into());
    spec.protected = vec!["gender".into()];
    spec.drop = vec!["row".into()];
    spec.split = SplitSpec::Column("split".into());
    load(&spec).expect("bundled census data")
}

fn models(data: &fairpipe_core::data::Dataset) -> Vec<(&'static str, Oracle)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("pipelines/models/census.onnx");
    let tract = OnnxModel::load(&path, data.domain.width(), None).expect("census onnx");
    let mut native = OnnxModel::load(&path, data.domain.width(), None).expect("census onnx");
    let rows: Vec<f64> = data.x.iter().copied().collect();
    let check = native.verify_native(&rows).expect("native check").expect("a dense graph");
    assert!(check.used, "the native executor must reproduce tract: {check:?}");
    let (x, y) = data.subset(Split::Train);
    let mlp = Mlp::train(&x, &y, &MlpConfig { epochs: 1, ..Default::default() }).expect("mlp");
    let ort = ort_model(&path, data, favourable_of(data));
    vec![
        ("onnx-native", Oracle::new(Arc::new(native) as Arc<dyn Model>)),
        ("onnx-tract", Oracle::new(Arc::new(tract) as Arc<dyn Model>)),
        ("onnx-onnxruntime", Oracle::new(Arc::new(ort) as Arc<dyn Model>)),
        ("mlp", Oracle::new(Arc::new(mlp) as Arc<dyn Model>)),
    ]
}

/// The data's favourable label, as a pipeline's `load` stage gives it to the model.
fn favourable_of(data: &fairpipe_core::data::Dataset) -> Favourable {
    Favourable { label: data.label_values[1].clone(), is_zero: data.label_flipped, code: data.label_code }
}

/// `path` run by ONNX Runtime on `data`'s rows, `favourable` its class read.
fn ort_model(path: &std::path::Path, data: &fairpipe_core::data::Dataset, favourable: Favourable) -> OrtModel {
    let runtime = runtime(None).expect("ONNX Runtime (pip install onnxruntime)");
    let choice = OutputChoice { name: None, transform: OutputTransform::None, favourable, classes: Vec::new() };
    let rows: Vec<f64> = data.x.iter().copied().collect();
    let feeding = Feeding { coded: data.coded.clone(), ..Feeding::default() };
    OrtModel::load(path, runtime, &data.domain, &feeding, choice, &rows).expect("onnxruntime model")
}

/// The raw UCI Adult file as the exports were trained on it.
fn adult() -> fairpipe_core::data::Dataset {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut spec = LoadSpec::new(root.join("pipelines/data/adult.data.csv"), "Y");
    spec.favourable = Some(">50K".into());
    spec.protected = vec!["sex".into()];
    spec.drop = vec!["fnlwgt".into(), "education".into()];
    spec.missing = MissingPolicy::Drop;
    load(&spec).expect("bundled adult data")
}

/// The exports of tests/fixtures/exports through ONNX Runtime (and one tree ensemble through
/// tract, at small batches only: it scores ~100 rows/s).
fn exports_throughput(c: &mut Criterion) {
    let data = adult();
    let rows: Vec<f64> = data.x.iter().copied().collect();
    let width = data.domain.width();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/exports");
    for name in ["sklearn_rf100", "sklearn_gbc", "xgboost", "sklearn_vector_lr", "sklearn_named_zipmap"] {
        let oracle = Oracle::new(Arc::new(ort_model(&dir.join(format!("{name}.onnx")), &data, favourable_of(&data))) as Arc<dyn Model>);
        bench_batches(c, &format!("predict/onnxruntime-{name}"), &oracle, &rows, width, &[1, 64, 4096]);
    }
    let tract = OnnxModel::load(&dir.join("sklearn_rf100.onnx"), width, None).expect("tract runs the forest");
    let oracle = Oracle::new(Arc::new(tract) as Arc<dyn Model>);
    let mut group = c.benchmark_group("predict/tract-sklearn_rf100");
    for &batch in &[1usize, 64] {
        let x = &rows[..batch * width];
        group.throughput(Throughput::Elements(batch as u64));
        let pool = pool(1);
        group.bench_with_input(BenchmarkId::new("threads1", batch), &batch, |b, _| {
            pool.install(|| b.iter(|| oracle.predict_proba(x).expect("predict")))
        });
    }
    group.finish();
}

/// The tree exports: native-trees vs ONNX Runtime through `ort`, then ONNX Runtime in Python.
fn trees_throughput(c: &mut Criterion) {
    let data = census();
    let rows: Vec<f64> = data.x.iter().copied().collect();
    let width = data.domain.width();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("tests/fixtures/onnx/trees");
    let wanted = std::env::var("FAIRPIPE_BENCH_TREES").ok();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/fixtures/onnx/trees")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "onnx"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .filter(|n| wanted.as_deref().is_none_or(|w| w.split(',').any(|x| x == n)))
        .collect();
    names.sort();
    names.dedup();
    for name in &names {
        let path = dir.join(format!("{name}.onnx"));
        if path.extension().is_none() || !path.exists() {
            continue;
        }
        let graph = Graph::read(&path, width).expect("the tree executor covers the export");
        // The census label's favourable class; the three-class exports (denied, review,
        // approved) read P(approved), as a pipeline naming `favourable = "approved"` does.
        let census = favourable_of(&data);
        let approved = Favourable { label: "approved".into(), is_zero: false, code: None };
        let choice = |favourable: &Favourable| OutputChoice {
            name: None,
            transform: OutputTransform::None,
            favourable: favourable.clone(),
            classes: Vec::new(),
        };
        let loaded = [census, approved]
            .into_iter()
            .find_map(|f| TreeModel::load(&path, graph.clone(), choice(&f), &rows).ok().map(|model| (model, f)));
        let Some((native, favourable)) = loaded else {
            eprintln!("{name}: not a classifier whose favourable class the bench can name; skipped");
            continue;
        };
        let ort = ort_model(&path, &data, favourable);
        bench_tree_executor(c, name, &graph, &rows, width);
        for (executor, oracle) in [
            ("native-trees", Oracle::new(Arc::new(native) as Arc<dyn Model>)),
            ("onnxruntime", Oracle::new(Arc::new(ort) as Arc<dyn Model>)),
        ] {
            bench_trees(c, &format!("trees/{name}/{executor}"), &oracle, &rows, width);
        }
    }
    let python = std::env::var("FAIRPIPE_TREES_PYTHON")
        .unwrap_or_else(|_| format!("{}/.cache/fairpipe/trees-venv/bin/python", std::env::var("HOME").unwrap_or_default()));
    let script = root.join("scripts/bench_trees_python.py");
    match std::process::Command::new(&python).arg(&script).args(&names).output() {
        Ok(out) if out.status.success() => print!("{}", String::from_utf8_lossy(&out.stdout)),
        Ok(out) => eprintln!("{python} {}: {}", script.display(), String::from_utf8_lossy(&out.stderr)),
        Err(e) => eprintln!("{python}: {e} (set FAIRPIPE_TREES_PYTHON to a Python with onnxruntime, pandas)"),
    }
}

/// The native tree executor alone (`trees-executor/EXPORT/native-trees/cpu1/4096`): the export's
/// graph run on 4,096 census rows already cast to f32, every output asked for, on the calling
/// thread, timed by the CPU time it ran; no oracle, no output reading (issue 62: the executor's
/// own speed, before and after a change to it).
fn bench_tree_executor(c: &mut Criterion, name: &str, graph: &Graph, rows: &[f64], width: usize) {
    if thread_cpu().is_none() {
        return;
    }
    let batch = 4096;
    let x: Vec<f32> = rows[..batch * width].iter().map(|&v| v as f32).collect();
    let all: Vec<usize> = (0..graph.output_names().len()).collect();
    let mut group = c.benchmark_group(format!("trees-executor/{name}/native-trees"));
    group.sample_size(10).measurement_time(std::time::Duration::from_secs(2));
    group.throughput(Throughput::Elements(batch as u64));
    group.bench_with_input(BenchmarkId::new("cpu1", batch), &batch, |b, _| {
        b.iter_custom(|iters| {
            let start = thread_cpu().unwrap_or_default();
            for _ in 0..iters {
                std::hint::black_box(graph.run(x.clone(), batch, &all).expect("run"));
            }
            thread_cpu().unwrap_or_default().saturating_sub(start)
        })
    });
    group.finish();
}

/// Batch 64 and 4096, each on one thread and on all threads.
fn bench_trees(c: &mut Criterion, group: &str, oracle: &Oracle, rows: &[f64], width: usize) {
    let all = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut group = c.benchmark_group(group);
    group.sample_size(10).measurement_time(std::time::Duration::from_secs(2));
    for batch in [64usize, 4096] {
        let x = &rows[..batch * width];
        group.throughput(Throughput::Elements(batch as u64));
        for threads in [1, all] {
            let pool = pool(threads);
            group.bench_with_input(BenchmarkId::new(format!("threads{threads}"), batch), &batch, |b, _| {
                pool.install(|| b.iter(|| oracle.predict_proba(x).expect("predict")))
            });
        }
        // One thread timed by the CPU time it ran (`cpu1`): wall time on a machine shared with
        // builds counts the time others held the core. Both executors run on the calling thread
        // (ONNX Runtime's sessions have one intra-op thread).
        if thread_cpu().is_some() {
            let pool = pool(1);
            group.bench_with_input(BenchmarkId::new("cpu1", batch), &batch, |b, _| {
                pool.install(|| {
                    b.iter_custom(|iters| {
                        let start = thread_cpu().unwrap_or_default();
                        for _ in 0..iters {
                            oracle.predict_proba(x).expect("predict");
                        }
                        thread_cpu().unwrap_or_default().saturating_sub(start)
                    })
                })
            });
        }
    }
    group.finish();
}

/// The CPU time the calling thread has run (Linux: /proc/thread-self/schedstat, in ns), if the
/// kernel reports it.
fn thread_cpu() -> Option<std::time::Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok().map(std::time::Duration::from_nanos)
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool")
}

fn oracle_throughput(c: &mut Criterion) {
    let data = census();
    let rows: Vec<f64> = data.x.iter().copied().collect();
    let width = data.domain.width();
    for (name, oracle) in models(&data) {
        bench_batches(c, &format!("predict/{name}"), &oracle, &rows, width, &[1, 64, 4096, 32768]);
    }
}

/// Time `oracle` on the first `batch` rows for each of `batches`: on one thread, and on every
/// thread from 4096 rows up.
fn bench_batches(c: &mut Criterion, group: &str, oracle: &Oracle, rows: &[f64], width: usize, batches: &[usize]) {
    let all = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut group = c.benchmark_group(group);
    for &batch in batches {
        let x = &rows[..batch * width];
        group.throughput(Throughput::Elements(batch as u64));
        for threads in [1, all] {
            if batch < 4096 && threads > 1 {
                continue;
            }
            let pool = pool(threads);
            group.bench_with_input(BenchmarkId::new(format!("threads{threads}"), batch), &batch, |b, _| {
                pool.install(|| b.iter(|| oracle.predict_proba(x).expect("predict")))
            });
        }
    }
    group.finish();
}

fn check_throughput(c: &mut Criterion) {
    let data = census();
    let rows: Vec<f64> = data.x.iter().copied().take(8192 * data.domain.width()).collect();
    let (_, oracle) = models(&data).remove(0);
    let checker = Checker::new(&data.domain, None);
    let all = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut group = c.benchmark_group("check/onnx-native-gender");
    group.throughput(Throughput::Elements(8192));
    for threads in [1, all] {
        let pool = pool(threads);
        group.bench_function(BenchmarkId::new(format!("threads{threads}"), 8192), |b| {
            pool.install(|| b.iter(|| checker.check(&oracle, &rows).expect("check")))
        });
    }
    group.finish();
}

/// The shared score cache's cost on the census model (native executor), 4,096 rows per call on
/// all threads: scoring directly, through the cache when every row is new (lookups, one batch
/// of the misses, inserts), and when every row is cached (no model call).
fn cache_overhead(c: &mut Criterion) {
    let data = census();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut native = OnnxModel::load(&root.join("pipelines/models/census.onnx"), data.domain.width(), None).expect("census onnx");
    let rows: Vec<f64> = data.x.iter().copied().collect();
    assert!(native.verify_native(&rows).expect("native check").expect("a dense graph").used);
    let model: Arc<dyn Model> = Arc::new(native);
    let batch = 4096;
    let width = data.domain.width();
    let x = &rows[..batch * width];
    let mut group = c.benchmark_group("cache/onnx-native");
    group.throughput(Throughput::Elements(batch as u64));
    let direct = Oracle::with_cache_rows(Arc::clone(&model), 0);
    group.bench_function("direct", |b| {
        let mut out = vec![0.0; batch];
        b.iter(|| direct.predict_proba_into(x, &mut out).expect("predict"))
    });
    group.bench_function("all-misses", |b| {
        b.iter_batched(
            || (Oracle::with_cache_rows(Arc::clone(&model), 1 << 20), vec![0.0; batch]),
            |(oracle, mut out)| oracle.predict_proba_cached_into(x, &mut out).expect("predict"),
            criterion::BatchSize::LargeInput,
        )
    });
    let warm = Oracle::with_cache_rows(Arc::clone(&model), 1 << 20);
    let mut out = vec![0.0; batch];
    warm.predict_proba_cached_into(x, &mut out).expect("predict");
    group.bench_function("all-hits", |b| b.iter(|| warm.predict_proba_cached_into(x, &mut out).expect("predict")));
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3)).warm_up_time(std::time::Duration::from_secs(1));
    targets = oracle_throughput, exports_throughput, check_throughput, cache_overhead, trees_throughput
}
criterion_main!(benches);
