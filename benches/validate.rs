//! Validation time against the number of stages: a pipeline of one `load`, one `train` and a chain
//! of `retrain` stages, each retraining the model of the one before, read and validated by
//! `Pipeline::load` (every key of every stage checked, the graph planned; nothing runs).
//!
//! ```text
//! cargo bench --bench validate [-- N N …]     (default 1000 10000 100000 stages)
//! ```
//!
//! Each size is validated three times; the wall-clock seconds of each try (one process, the
//! runner's own threads) are printed and appended as one JSON line per size to
//! `target/bench/validate.jsonl`. Validation must stay linear in the number of stages: the seconds
//! per 1,000 stages should not grow with the size.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

use fairpipe_core::run::Pipeline;

/// A pipeline of `stages` stages in all: load, train, then `stages - 2` chained retrain stages.
fn chain(stages: usize, data: &Path) -> String {
    let mut text = format!(
        "[pipeline]\nseed = 1\n\n[stages.data]\nkind = \"load\"\npath = \"{}\"\nlabel = \"income\"\nfavourable = \">50K\"\nprotected = [\"gender\"]\ndrop = [\"row\"]\nsplit_column = \"split\"\n\n[stages.model]\nkind = \"train\"\ndata = \"data\"\nalgorithm = \"logistic\"\n\n[stages.groups]\nkind = \"group_score\"\nmodel = \"model\"\nplugin = \"testsgd\"\n",
        data.display()
    );
    let mut previous = "model".to_string();
    for i in 0..stages.saturating_sub(3) {
        let name = format!("retrain{i}");
        let _ =
            write!(text, "\n[stages.{name}]\nkind = \"retrain\"\nmodel = \"{previous}\"\ngroups = \"groups\"\nstrategy = \"testsgd\"\n");
        previous = name;
    }
    text
}

fn main() {
    fairpipe::register_builtins().expect("the built-in methods register");
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![1_000, 10_000, 100_000] } else { sizes };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = root.join("target/bench");
    std::fs::create_dir_all(&out).unwrap();
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(out.join("validate.jsonl")).unwrap();
    for stages in sizes {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("chain.toml");
        std::fs::write(&file, chain(stages, &root.join("pipelines/data/census.csv"))).unwrap();
        let mut seconds = Vec::new();
        for _ in 0..3 {
            let start = Instant::now();
            let pipeline = Pipeline::load(&file, None).unwrap_or_else(|e| panic!("the {stages}-stage chain does not validate: {e}"));
            seconds.push(start.elapsed().as_secs_f64());
            assert_eq!(pipeline.stages.len(), stages);
        }
        let best = seconds.iter().copied().fold(f64::INFINITY, f64::min);
        println!("{stages:>7} stages: validated in {best:.3} s (best of 3, wall; {:.4} s per 1,000 stages)", best / stages as f64 * 1000.0);
        writeln!(
            log,
            "{}",
            serde_json::json!({"bench": "validate", "stages": stages, "wall_seconds": seconds, "measure": "wall, best of 3"})
        )
        .unwrap();
    }
}
