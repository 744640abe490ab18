//! Model throughput (rows/s) for the census reference ONNX model (through the native dense executor
//! and through tract) and the Rust MLP at batch 1, 64, 4096 and 32768, on one thread and on all
//! threads; and discrimination-check throughput (rows checked/s).
//!
//! `cargo bench --bench oracle`

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fairpipe_core::check::Checker;
use fairpipe_core::data::{load, LoadSpec, Split, SplitSpec};
use fairpipe_core::models::{Mlp, MlpConfig, OnnxModel};
use fairpipe_core::oracle::{Model, Oracle};

fn census() -> fairpipe_core::data::Dataset {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut spec = LoadSpec::new(root.join("pipelines/data/census.csv"), "income");
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
    vec![
        ("onnx-native", Oracle::new(Arc::new(native) as Arc<dyn Model>)),
        ("onnx-tract", Oracle::new(Arc::new(tract) as Arc<dyn Model>)),
        ("mlp", Oracle::new(Arc::new(mlp) as Arc<dyn Model>)),
    ]
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool")
}

fn oracle_throughput(c: &mut Criterion) {
    let data = census();
    let rows: Vec<f64> = data.x.iter().copied().collect();
    let width = data.domain.width();
    let all = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    for (name, oracle) in models(&data) {
        let mut group = c.benchmark_group(format!("predict/{name}"));
        for &batch in &[1usize, 64, 4096, 32768] {
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

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3)).warm_up_time(std::time::Duration::from_secs(1));
    targets = oracle_throughput, check_throughput
}
criterion_main!(benches);
