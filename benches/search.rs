//! Search benchmarks: each method plugin on the bundled reference ONNX models, run through the real
//! pipeline runner (load → load_model → cluster → generate → verify); then TestSGD (`group_score`)
//! with the paper's Table 5 beside it. (The reference implementations' figures that stood beside
//! ours were single runs kept without a log; the MAFT reference's own runs are now
//! `scripts/bench_maft_reference.py`'s, in docs/figures/maft-reference/.)
//!
//! ```text
//! cargo build --release --workspace && cargo bench --bench search [-- FILTER]
//! ```
//!
//! The plugins must be built in release first (`cargo bench` does not build cdylibs the bench does
//! not link). Each case runs `FAIRPIPE_BENCH_REPEATS` times (default 10) with pipeline seeds 1, 2, …;
//! the table gives means. Seconds are the generate stage's own wall time (the search, not loading
//! or clustering); IDIs are the verify stage's host-confirmed counts. The table is printed and
//! written to `target/bench/search.md`.
//!
//! The **methods table** (filter `methods`) runs every method on the four benchmarks twice: at the
//! same budget (50 global seeds × 1,000 local steps, as the MAFT and EIDIG papers; 50,000 inputs
//! for random; SG's own 1,000-input default) and at the same number of model queries (every method
//! with a budget it cannot finish, stopped by `max_queries` = `FAIRPIPE_BENCH_QUERIES`, default
//! 500,000 rows asked). It is written to `target/bench/methods.md`; `scripts/bench-methods.sh` puts
//! it into docs/benchmarks.md.
//!
//! The **text table** (filter `text`) runs the text audits `wikitalk-groups.toml` (TestSGD on the
//! comments) and `madlibs-groups.toml` (on the templated sentences) with seeds 1, 2, …: rule sets
//! per second beside the paper's Table 5, the top rule sets with their margins beside its Table 4,
//! and the mitigation beside its Table 7. Written to `target/bench/text.md`; `scripts/bench-text.sh`
//! puts it into docs/text-audits.md.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use fairpipe_core::run::Pipeline;

/// One benchmark case.
struct Case {
    name: &'static str,
    dataset: &'static str,
    protected: &'static str,
    plugin: &'static str,
    params: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "maft census-gender 50x1000",
        dataset: "census",
        protected: "gender",
        plugin: "maft",
        params: "{ global_num = 50, local_num = 1000 }",
    },
    Case {
        name: "maft census-gender 100x1000",
        dataset: "census",
        protected: "gender",
        plugin: "maft",
        params: "{ global_num = 100, local_num = 1000 }",
    },
    Case {
        name: "maft census-age 50x1000",
        dataset: "census",
        protected: "age",
        plugin: "maft",
        params: "{ global_num = 50, local_num = 1000 }",
    },
    Case {
        name: "maft credit-age 50x1000",
        dataset: "credit",
        protected: "AgeInYears",
        plugin: "maft",
        params: "{ global_num = 50, local_num = 1000 }",
    },
    Case {
        name: "maft bank-age 50x1000",
        dataset: "bank",
        protected: "age",
        plugin: "maft",
        params: "{ global_num = 50, local_num = 1000 }",
    },
    Case {
        name: "maft census-gender 1000x1000",
        dataset: "census",
        protected: "gender",
        plugin: "maft",
        params: "{ global_num = 1000, local_num = 1000 }",
    },
    Case {
        name: "maft census-race 1000x1000",
        dataset: "census",
        protected: "race",
        plugin: "maft",
        params: "{ global_num = 1000, local_num = 1000 }",
    },
    Case {
        name: "aequitas-random census-gender 1000x1000",
        dataset: "census",
        protected: "gender",
        plugin: "aequitas",
        params: "{ strategy = \"random\" }",
    },
    Case {
        name: "aequitas-semi census-gender 1000x1000",
        dataset: "census",
        protected: "gender",
        plugin: "aequitas",
        params: "{ strategy = \"semi_directed\" }",
    },
    Case {
        name: "aequitas-fully census-gender 1000x1000",
        dataset: "census",
        protected: "gender",
        plugin: "aequitas",
        params: "{ strategy = \"fully_directed\" }",
    },
    Case { name: "aequitas-fully credit-age 1000x1000", dataset: "credit", protected: "AgeInYears", plugin: "aequitas", params: "{}" },
    Case { name: "aequitas-fully bank-age 1000x1000", dataset: "bank", protected: "age", plugin: "aequitas", params: "{}" },
    Case { name: "sg census-gender 1000", dataset: "census", protected: "gender", plugin: "sg", params: "{ sample_limit = 1000 }" },
    Case { name: "random census-gender 10000", dataset: "census", protected: "gender", plugin: "random", params: "{ samples = 10000 }" },
];

/// (label column, model file) of a bundled dataset.
fn dataset(name: &str) -> (&'static str, &'static str) {
    match name {
        "census" => ("income", "census.onnx"),
        "credit" => ("label_CREDITRATING_eq_1", "credit.onnx"),
        _ => ("y", "bank.onnx"),
    }
}

fn pipeline_text(case: &Case, root: &Path) -> String {
    let (label, model) = dataset(case.dataset);
    let data = root.join(format!("pipelines/data/{}.csv", case.dataset));
    let model = root.join(format!("pipelines/models/{model}"));
    format!(
        r#"[pipeline]
name = "bench"

[stages.data]
kind = "load"
path = "{data}"
label = "{label}"
protected = ["{protected}"]
drop = ["row"]
split_column = "split"

[stages.model]
kind = "load_model"
data = "data"
path = "{model}"

[stages.seeds]
kind = "cluster"
data = "data"
k = 4
seeds = 1000

[stages.search]
kind = "generate"
model = "model"
seeds = "seeds"
plugin = "{plugin}"
params = {params}

[stages.verified]
kind = "verify"
cases = "search"
"#,
        data = data.display(),
        model = model.display(),
        protected = case.protected,
        plugin = case.plugin,
        params = case.params,
    )
}

/// Means over the repeats of one case.
#[derive(Default)]
struct Figures {
    idis_full: f64,
    /// Standard deviation of `idis_full` over the repeats.
    idis_sd: f64,
    idis_projection: f64,
    generated: f64,
    queries: f64,
    seconds: f64,
    model_share: f64,
}

fn run_case(case: &Case, root: &Path, repeats: u64, dir: &Path) -> Figures {
    let file = dir.join(format!("{}.toml", case.name.replace(' ', "_")));
    std::fs::write(&file, pipeline_text(case, root)).expect("write bench pipeline");
    let mut f = Figures::default();
    let mut per_run = Vec::new();
    for seed in 1..=repeats {
        let pipeline = Pipeline::load(&file, Some(seed)).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let report = pipeline.run(&dir.join("out"), false).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let summary = report.summary.to_json();
        let search = &summary["stages"]["search"];
        let verified = &summary["stages"]["verified"];
        assert_eq!(verified["rejected"], 0, "{}: the host rejected cases", case.name);
        per_run.push(verified["discriminatory_full"].as_f64().unwrap_or(0.0));
        f.idis_projection += verified["discriminatory"].as_f64().unwrap_or(0.0);
        f.generated += search["generated"].as_f64().unwrap_or(0.0);
        f.queries += search["model_queries"].as_f64().unwrap_or(0.0);
        f.seconds += search["run_elapsed_s"].as_f64().unwrap_or(0.0);
        f.model_share += search["model_time_share"].as_f64().unwrap_or(0.0);
    }
    let n = repeats as f64;
    f.idis_full = per_run.iter().sum::<f64>();
    f.idis_sd = (per_run.iter().map(|x| (x - f.idis_full / n).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    for v in [&mut f.idis_full, &mut f.idis_projection, &mut f.generated, &mut f.queries, &mut f.seconds, &mut f.model_share] {
        *v /= n;
    }
    f
}

/// One group-score benchmark case: TestSGD over the given protected attributes.
struct GroupCase {
    name: &'static str,
    dataset: &'static str,
    protected: &'static str,
    params: &'static str,
    /// The paper's Table 5 (rule sets, seconds).
    paper: (f64, f64),
}

const GROUP_CASES: &[GroupCase] = &[
    GroupCase {
        name: "testsgd census gender,race,age",
        dataset: "census",
        protected: "\"gender\", \"race\", \"age\"",
        params: "{}",
        paper: (880.0, 869.0),
    },
    GroupCase {
        name: "testsgd credit gender,age",
        dataset: "credit",
        protected: "\"PersonStatusSex\", \"AgeInYears\"",
        params: "{}",
        paper: (53.0, 105.0),
    },
    GroupCase {
        name: "testsgd compas sex,race,age",
        dataset: "compas",
        protected: "\"sex\", \"race\", \"age\"",
        params: "{}",
        paper: (1590.0, 909.0),
    },
    GroupCase {
        name: "testsgd compas sex,race,age (single values)",
        dataset: "compas",
        protected: "\"sex\", \"race\", \"age\"",
        params: "{ rules = \"values\" }",
        paper: (1590.0, 909.0),
    },
];

fn group_pipeline_text(case: &GroupCase, root: &Path) -> String {
    let model = if case.dataset == "compas" {
        "kind = \"train\"\ndata = \"data\"\nalgorithm = \"mlp\"\nepochs = 30".to_string()
    } else {
        format!(
            "kind = \"load_model\"\ndata = \"data\"\npath = \"{}\"",
            root.join(format!("pipelines/models/{}", dataset(case.dataset).1)).display()
        )
    };
    let (label, extra) = match case.dataset {
        "compas" => ("two_year_recid", "favourable = 0"),
        other => (dataset(other).0, "drop = [\"row\"]"),
    };
    format!(
        "[stages.data]\nkind = \"load\"\npath = \"{}\"\nlabel = \"{label}\"\n{extra}\nprotected = [{}]\nsplit_column = \"split\"\n\n[stages.model]\n{model}\n\n[stages.groups]\nkind = \"group_score\"\nmodel = \"model\"\nparams = {}\n",
        root.join(format!("pipelines/data/{}.csv", case.dataset)).display(),
        case.protected,
        case.params
    )
}

fn group_table(root: &Path, dir: &Path, filter: Option<&str>) -> String {
    let mut table = String::from(
        "| case | rule sets generated | rule sets scored | samples | model rows | seconds | rule sets/s | paper rule sets | paper s | paper rule sets/s | rule sets/s ratio |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for case in GROUP_CASES.iter().filter(|c| filter.is_none_or(|f| c.name.contains(f))) {
        let file = dir.join("groups.toml");
        std::fs::write(&file, group_pipeline_text(case, root)).expect("write bench pipeline");
        let pipeline = Pipeline::load(&file, Some(1)).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let report = pipeline.run(&dir.join("out"), false).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let summary = report.summary.to_json();
        let g = &summary["stages"]["groups"];
        let (kept, seconds) = (g["rule_sets_kept"].as_f64().unwrap_or(0.0), g["run_elapsed_s"].as_f64().unwrap_or(0.0));
        let rate = kept / seconds.max(1e-9);
        let paper_rate = case.paper.0 / case.paper.1;
        let _ = writeln!(
            table,
            "| {} | {:.0} | {kept:.0} | {} | {} | {seconds:.2} | {rate:.0} | {:.0} | {:.0} | {paper_rate:.2} | {:.0}× |",
            case.name,
            g["rule_sets_generated"].as_f64().unwrap_or(0.0),
            g["samples"],
            g["model_queries"],
            case.paper.0,
            case.paper.1,
            rate / paper_rate,
        );
        eprintln!("{} done", case.name);
    }
    table
}

/// The benchmarks of the methods table: (dataset, protected attribute, name).
const BENCHMARKS: &[(&str, &str, &str)] = &[
    ("census", "gender", "census-gender"),
    ("census", "age", "census-age"),
    ("credit", "AgeInYears", "credit-age"),
    ("bank", "age", "bank-age"),
];

/// A method of the methods table: its plugin, its parameters at the common budget, and its
/// parameters with a budget it cannot finish (for the equal-queries run, stopped by `max_queries`).
struct Method {
    name: &'static str,
    plugin: &'static str,
    budget: &'static str,
    unbounded: &'static str,
}

const METHODS: &[Method] = &[
    Method { name: "random", plugin: "random", budget: "{ samples = 50000 }", unbounded: "{ samples = 100000000 }" },
    Method {
        name: "aequitas random",
        plugin: "aequitas",
        budget: "{ strategy = \"random\", global_iterations = 50, local_iterations = 1000 }",
        unbounded: "{ strategy = \"random\", global_iterations = 1000, local_iterations = 1000000 }",
    },
    Method {
        name: "aequitas semi-directed",
        plugin: "aequitas",
        budget: "{ strategy = \"semi_directed\", global_iterations = 50, local_iterations = 1000 }",
        unbounded: "{ strategy = \"semi_directed\", global_iterations = 1000, local_iterations = 1000000 }",
    },
    Method {
        name: "aequitas fully directed",
        plugin: "aequitas",
        budget: "{ strategy = \"fully_directed\", global_iterations = 50, local_iterations = 1000 }",
        unbounded: "{ strategy = \"fully_directed\", global_iterations = 1000, local_iterations = 1000000 }",
    },
    Method { name: "sg", plugin: "sg", budget: "{ sample_limit = 1000 }", unbounded: "{ sample_limit = 1000000 }" },
    Method {
        name: "maft",
        plugin: "maft",
        budget: "{ global_num = 50, local_num = 1000 }",
        unbounded: "{ global_num = 1000, local_num = 100000 }",
    },
    Method {
        name: "eidig",
        plugin: "eidig",
        budget: "{ global_num = 50, local_num = 1000 }",
        unbounded: "{ global_num = 1000, local_num = 100000 }",
    },
];

/// Mean and sample standard deviation.
fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = (values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    (mean, sd)
}

/// One row of the methods table: the runs of `method` on `benchmark` over seeds 1..=repeats.
fn methods_row(
    method: &Method,
    benchmark: (&'static str, &'static str, &'static str),
    params: &'static str,
    max_queries: u64,
    root: &Path,
    repeats: u64,
    dir: &Path,
) -> Option<(String, serde_json::Value)> {
    let (dataset, protected, name) = benchmark;
    let case = Case { name: "methods", dataset, protected, plugin: method.plugin, params };
    let mut text = pipeline_text(&case, root);
    if max_queries > 0 {
        text = text.replace("[stages.verified]", &format!("max_queries = {max_queries}\n\n[stages.verified]"));
    }
    let file = dir.join("methods.toml");
    std::fs::write(&file, text).expect("write bench pipeline");
    let (mut full, mut projection, mut rows, mut seconds, mut to_1000) = (vec![], vec![], vec![], vec![], vec![]);
    for seed in 1..=repeats {
        let pipeline = match Pipeline::load(&file, Some(seed)) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("{} {name}: skipped ({e})", method.name);
                return None;
            }
        };
        let report = pipeline.run(&dir.join("out"), false).unwrap_or_else(|e| panic!("{} {name}: {e}", method.name));
        let summary = report.summary.to_json();
        let search = &summary["stages"]["search"];
        let verified = &summary["stages"]["verified"];
        assert_eq!(verified["rejected"], 0, "{} {name}: the host rejected cases", method.name);
        full.push(verified["discriminatory_full"].as_f64().unwrap_or(0.0));
        projection.push(verified["discriminatory"].as_f64().unwrap_or(0.0));
        rows.push(search["rows_scored"].as_f64().or_else(|| search["model_queries"].as_f64()).unwrap_or(0.0));
        seconds.push(search["run_elapsed_s"].as_f64().unwrap_or(0.0));
        if let Some(t) = verified["time_to_1000_idis_s"].as_f64() {
            to_1000.push(t);
        }
    }
    let (full_mean, full_sd) = mean_sd(&full);
    let (projection_mean, projection_sd) = mean_sd(&projection);
    let (rows_mean, _) = mean_sd(&rows);
    let (seconds_mean, _) = mean_sd(&seconds);
    let rate = full_mean / seconds_mean.max(1e-9);
    let first = if to_1000.len() as u64 == repeats {
        format!("{:.3}", mean_sd(&to_1000).0)
    } else {
        format!("— ({} of {repeats} runs)", to_1000.len())
    };
    let row = format!(
        "| {} | {name} | {full_mean:.0} ± {full_sd:.0} | {projection_mean:.0} ± {projection_sd:.0} | {rows_mean:.0} | {:.1} | {first} | {seconds_mean:.3} | {rate:.0} |\n",
        method.name,
        1000.0 * full_mean / rows_mean.max(1.0),
    );
    // The same row for scripts/bench_compare.py --methods (one commit's figures against another's).
    let figures = serde_json::json!({
        "method": method.name,
        "benchmark": name,
        "mode": if max_queries > 0 { "queries" } else { "budget" },
        "idis_full_mean": full_mean,
        "idis_full_sd": full_sd,
        "model_rows_mean": rows_mean,
        "search_s_mean": seconds_mean,
        "idis_per_s": rate,
        "repeats": repeats,
    });
    Some((row, figures))
}

/// The methods table: every method × benchmark at the common budget and at equal model queries,
/// as Markdown and as one JSON row per cell (for scripts/bench_compare.py --methods).
fn methods_table(root: &Path, dir: &Path, repeats: u64) -> (String, Vec<serde_json::Value>) {
    let queries: u64 = std::env::var("FAIRPIPE_BENCH_QUERIES").ok().and_then(|v| v.parse().ok()).unwrap_or(500_000);
    let header = "| method | benchmark | IDIs (full) ± sd | IDIs (projection) ± sd | model rows | IDIs per 1,000 model rows | s to 1,000 IDIs | search s | IDIs/s |\n|---|---|---|---|---|---|---|---|---|\n";
    let mut out = format!(
        "**At the same budget** (50 global seeds × 1,000 local steps; random 50,000 inputs; SG its default 1,000 inputs), mean ± sd over {repeats} seeds:\n\n{header}"
    );
    let mut rows = Vec::new();
    for method in METHODS {
        for &benchmark in BENCHMARKS {
            if let Some((row, figures)) = methods_row(method, benchmark, method.budget, 0, root, repeats, dir) {
                out.push_str(&row);
                rows.push(figures);
            }
            eprintln!("{} {} (budget) done", method.name, benchmark.2);
        }
    }
    let _ = write!(out, "\n**At the same number of model queries** (each stopped by `max_queries = {queries}` rows asked; model rows are those the score cache did not answer), mean ± sd over {repeats} seeds:\n\n{header}");
    for method in METHODS {
        for &benchmark in BENCHMARKS {
            if let Some((row, figures)) = methods_row(method, benchmark, method.unbounded, queries, root, repeats, dir) {
                out.push_str(&row);
                rows.push(figures);
            }
            eprintln!("{} {} (queries) done", method.name, benchmark.2);
        }
    }
    (out, rows)
}

/// The paper's Wikipedia Talk model (a CNN-LSTM on the full corpus): Table 5's rule sets and
/// seconds, Table 4's top three, Table 7's mitigation.
const PAPER_TEXT: (f64, f64) = (732.0, 34982.28);
const PAPER_TOP: &str =
    "{gay, taoist} 6.5% (13.0%, 6.5%); {gay, protestant} 5.4% (12.9%, 7.5%); {gay, african american} 5.1% (12.5%, 7.4%)";
const PAPER_MITIGATION: &str = "{gay, taoist}: 6.5% → 0.4%, accuracy 93.9% → 95.5%";

/// The text table: TestSGD on text and its mitigation, over seeds 1..=repeats.
fn text_table(root: &Path, dir: &Path, repeats: u64) -> String {
    let mut speed = String::from(
        "| pipeline | texts sampled from | rule sets scored | texts scored (model rows) | group stage s | ms per rule set | rule sets/s | paper: rule sets in s | paper rule sets/s | ratio |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut tops = String::from(
        "| pipeline | top 3 rule sets (seed 1): score ± margin (φr, φ¬r) | top score, mean ± sd | paper, Table 4 |\n|---|---|---|---|\n",
    );
    let mut mitigation = String::from(
        "| pipeline | rule set | texts added | score before → after (mean ± sd) | test accuracy before → after | label-changing swaps before → after | paper, Table 7 |\n|---|---|---|---|---|---|---|\n",
    );
    for (file, sampled) in [("wikitalk-groups.toml", "1,492 comments"), ("madlibs-groups.toml", "76,564 templated sentences")] {
        let path = root.join("pipelines").join(file);
        let (mut kept, mut scored, mut seconds, mut worst, mut before, mut after, mut added) =
            (0.0, vec![], vec![], vec![], vec![], vec![], vec![]);
        let (mut acc, mut swaps, mut top3, mut group) = (String::new(), String::new(), String::new(), String::new());
        for seed in 1..=repeats {
            let pipeline = Pipeline::load(&path, Some(seed)).unwrap_or_else(|e| panic!("{file}: {e}"));
            let report = pipeline.run(&dir.join("out"), false).unwrap_or_else(|e| panic!("{file}: {e}"));
            let summary = report.summary.to_json();
            let stages = &summary["stages"];
            let (g, f) = (&stages["groups"], &stages["fairer"]);
            let num = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
            kept = num(&g["rule_sets_kept"]);
            scored.push(num(&g["texts_scored"]));
            seconds.push(num(&g["elapsed_s"]));
            worst.push(num(&g["worst_score"]));
            before.push(num(&f["rate_before"]));
            after.push(num(&f["rate_after"]));
            added.push(num(&f["added"]));
            if seed == 1 {
                let pct = |v: &serde_json::Value| format!("{:.1}%", 100.0 * num(v));
                top3 = g["top"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .take(3)
                    .map(|t| {
                        format!(
                            "{{{}}} {:.3} ± {:.3} ({}, {})",
                            t["rule"].as_str().unwrap_or(""),
                            num(&t["score"]),
                            num(&t["margin"]),
                            pct(&t["rate_in"]),
                            pct(&t["rate_out"])
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ");
                group = format!("{{{}}}", f["group"].as_str().unwrap_or(""));
                acc = format!("{} → {}", pct(&f["accuracy_before"]), pct(&f["accuracy_after"]));
                swaps = format!("{} → {}", stages["swaps"]["discriminatory_swaps"], stages["swaps_after"]["discriminatory_swaps"]);
            }
            eprintln!("{file} seed {seed} done");
        }
        let (seconds_mean, _) = mean_sd(&seconds);
        let rate = kept / seconds_mean.max(1e-9);
        let paper_rate = PAPER_TEXT.0 / PAPER_TEXT.1;
        let _ = writeln!(
            speed,
            "| `{file}` | {sampled} | {kept:.0} | {:.0} | {seconds_mean:.3} | {:.1} | {rate:.0} | {:.0} in {:.0} | {paper_rate:.3} | {:.0}× |",
            mean_sd(&scored).0,
            1000.0 * seconds_mean / kept.max(1.0),
            PAPER_TEXT.0,
            PAPER_TEXT.1,
            rate / paper_rate
        );
        let (w, wsd) = mean_sd(&worst);
        let _ = writeln!(tops, "| `{file}` | {top3} | {w:.3} ± {wsd:.3} | {PAPER_TOP} |");
        let ((b, bsd), (a, asd)) = (mean_sd(&before), mean_sd(&after));
        let _ = writeln!(
            mitigation,
            "| `{file}` | {group} | {:.0} | {b:.3} ± {bsd:.3} → {a:.3} ± {asd:.3} | {acc} | {swaps} | {PAPER_MITIGATION} |",
            mean_sd(&added).0
        );
    }
    format!(
        "Release build, pipeline seeds 1–{repeats} (the seed also draws the train/test split, so each seed trains its own model); the group stage's time includes re-scoring the 10 leaders; single-run figures are seed 1's:\n\n{speed}\n{tops}\n{mitigation}"
    )
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let repeats: u64 = std::env::var("FAIRPIPE_BENCH_REPEATS").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // The methods are linked in, built with this bench's (release) profile.
    fairpipe::register_builtins().expect("the built-in methods register");
    let dir = tempfile::tempdir().expect("temp dir");
    if filter.as_deref() == Some("text") {
        let table = text_table(&root, dir.path(), repeats);
        println!("{table}");
        let out = root.join("target/bench");
        if std::fs::create_dir_all(&out).is_ok() {
            let _ = std::fs::write(out.join("text.md"), &table);
        }
        return;
    }
    if filter.as_deref() == Some("methods") {
        let (table, rows) = methods_table(&root, dir.path(), repeats);
        println!("{table}");
        let out = root.join("target/bench");
        if std::fs::create_dir_all(&out).is_ok() {
            let _ = std::fs::write(out.join("methods.md"), &table);
            let json = serde_json::to_string_pretty(&rows).unwrap_or_default();
            let _ = std::fs::write(out.join("methods.json"), json);
        }
        return;
    }
    let mut table = String::from(
        "| case | IDIs (full) ± sd | IDIs (projection) | generated | model rows | search s | IDIs/s | model share |\n|---|---|---|---|---|---|---|---|\n",
    );
    for case in CASES.iter().filter(|c| filter.as_ref().is_none_or(|f| c.name.contains(f.as_str()))) {
        let f = run_case(case, &root, repeats, dir.path());
        let rate = f.idis_full / f.seconds.max(1e-9);
        let _ = writeln!(
            table,
            "| {} | {:.0} ± {:.0} | {:.0} | {:.0} | {:.0} | {:.3} | {:.0} | {:.0}% |",
            case.name,
            f.idis_full,
            f.idis_sd,
            f.idis_projection,
            f.generated,
            f.queries,
            f.seconds,
            rate,
            100.0 * f.model_share,
        );
        eprintln!("{} done", case.name);
    }
    let groups = group_table(&root, dir.path(), filter.as_deref());
    println!("{table}\n{groups}");
    let out = root.join("target/bench");
    if std::fs::create_dir_all(&out).is_ok() {
        let _ = std::fs::write(out.join("search.md"), format!("{table}\n{groups}"));
    }
}
