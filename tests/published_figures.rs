//! The figures README.md and docs/ publish, recomputed from the raw results checked in beside them
//! (issue 49 item 1). A published figure is marked in the Markdown as
//! `<!-- figure: ID -->TEXT<!-- /figure -->` (the comments render as nothing); every marked ID must
//! be one this file knows, every fixed ID it knows must be marked somewhere, and TEXT must equal what
//! the figure's function computes from its raw results with the rounding the text uses. Every
//! marker stands in docs/figures/markers.txt with its file: a marker deleted from a file, or
//! mistyped, fails (issue 57), as does a comment that looks like a marker but is not written as one.
//! docs/figures/INVENTORY.md lists every figure of README.md and docs/ with its producer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::common::{self, root, thousands};

/// A published figure: its ID in the markers and the function that computes its text from raw results.
struct Figure {
    id: &'static str,
    compute: fn(&Path) -> String,
}

/// A family of published figures: markers `PREFIX:ARGS` (e.g. `trees-ratio:4096:catboost`), the
/// function given the root and ARGS.
struct Family {
    prefix: &'static str,
    compute: fn(&Path, &str) -> String,
}

/// Every family of figures this test recomputes (a family's markers name their arguments, so a
/// family need not be marked).
const FAMILIES: &[Family] = &[
    Family { prefix: "trees-ratio", compute: trees_ratio },
    Family { prefix: "trees-rows", compute: trees_rows },
    Family { prefix: "tree-pipeline-ratio", compute: tree_pipeline_ratio },
    Family { prefix: "tree-pipeline-s", compute: tree_pipeline_seconds },
    Family { prefix: "tree-peers", compute: tree_peers },
    Family { prefix: "maft-port", compute: maft_port },
    Family { prefix: "label-only", compute: label_only },
    Family { prefix: "label-only-sds", compute: label_only_sds },
    Family { prefix: "bias-audit", compute: bias_audit_ratio },
    Family { prefix: "llm", compute: llm_bench },
    Family { prefix: "coverage", compute: coverage_summary },
    Family { prefix: "llm-precision", compute: precision_bench },
    Family { prefix: "wheel", compute: wheel_record },
    Family { prefix: "ci-steps", compute: ci_steps },
];

/// Every figure this test recomputes.
const FIGURES: &[Figure] = &[
    Figure { id: "grft-idis-vs-port", compute: grft_idis_vs_port },
    Figure { id: "grft-port-cells", compute: grft_port_cells },
    Figure { id: "aft-idis-vs-port-after-688a7fa", compute: aft_idis_vs_port_after },
    Figure { id: "aft-port-cells-after-688a7fa", compute: aft_port_cells_after },
    Figure { id: "grft-tests-s-vs-port-search-wall", compute: |r| port_ratio(r, "grft", Ratio::TestsWall) },
    Figure { id: "aft-tests-s-vs-port-search-wall", compute: |r| port_ratio(r, "aft", Ratio::TestsWall) },
    Figure { id: "grft-tests-s-vs-port-process-cpu", compute: |r| port_ratio(r, "grft", Ratio::TestsProcessCpu) },
    Figure { id: "aft-tests-s-vs-port-process-cpu", compute: |r| port_ratio(r, "aft", Ratio::TestsProcessCpu) },
    Figure { id: "tests-s-vs-published", compute: tests_s_vs_published },
    Figure { id: "tree-exports", compute: tree_exports },
    Figure { id: "fuzz-corpus-files", compute: fuzz_corpus_files },
    Figure { id: "footprint-venvs-gb", compute: |r| footprint_gb(r, "venv_bytes") },
    Figure { id: "footprint-target-gb", compute: |r| footprint_gb(r, "target_bytes") },
    Figure { id: "footprint-onnxruntime-venv-mb", compute: |r| venv_mb(r, "onnxruntime-venv") },
    Figure { id: "footprint-mlserver-venv-mb", compute: |r| venv_mb(r, "mlserver-venv") },
    Figure { id: "footprint-mlflow-venv-mb", compute: |r| venv_mb(r, "mlflow-venv") },
    Figure { id: "validate-100000-stages-s", compute: |r| validate_best(r, 100_000) },
    Figure { id: "validate-10000-stages-s", compute: |r| validate_best(r, 10_000) },
    Figure { id: "validate-1000-stages-s", compute: |r| validate_best(r, 1_000) },
];

/// The Markdown files whose figures are checked: README.md and every `.md` under docs/.
fn markdown_files(root: &Path) -> Vec<std::path::PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Every `<!-- figure: ID -->TEXT<!-- /figure -->` of `text`: (ID, TEXT, line number).
fn markers(text: &str) -> Result<Vec<(String, String, usize)>, String> {
    const OPEN: &str = "<!-- figure: ";
    const CLOSE: &str = "<!-- /figure -->";
    let mut found = Vec::new();
    let mut rest = text;
    let mut offset = 0;
    while let Some(at) = rest.find(OPEN) {
        let line = text[..offset + at].matches('\n').count() + 1;
        let after = &rest[at + OPEN.len()..];
        let id_end = after.find(" -->").ok_or(format!("line {line}: `{OPEN}` without ` -->`"))?;
        let id = after[..id_end].trim().to_string();
        let body = &after[id_end + 4..];
        let end = body.find(CLOSE).ok_or(format!("line {line}: figure `{id}` without `{CLOSE}`"))?;
        if body[..end].contains(OPEN) || body[..end].contains('\n') {
            return Err(format!("line {line}: figure `{id}` is not closed on its line"));
        }
        found.push((id, body[..end].to_string(), line));
        let consumed = at + OPEN.len() + id_end + 4 + end + CLOSE.len();
        offset += consumed;
        rest = &rest[consumed..];
    }
    Ok(found)
}

/// The list of every marker README.md and docs/ must hold, as (file, ID), from `MARKERS`.
fn listed_markers(root: &Path) -> Vec<(String, String)> {
    let path = root.join(MARKERS);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(i, l)| {
            let (file, id) = l.split_once(' ').unwrap_or_else(|| panic!("{MARKERS}:{}: `FILE ID` expected, found `{l}`", i + 1));
            (file.to_string(), id.to_string())
        })
        .collect()
}

/// The differences between the markers `found` in the files, (file, ID, line), and those `listed`
/// in `MARKERS`, (file, ID), each marker counted as often as it stands: a listed marker no file
/// holds (deleted, or mistyped where it stands) and a marker the list lacks (new, or mistyped).
fn marker_differences(found: &[(String, String, usize)], listed: &[(String, String)]) -> Vec<String> {
    let mut wanted: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (file, id) in listed {
        *wanted.entry((file.as_str(), id.as_str())).or_default() += 1;
    }
    let mut out = Vec::new();
    for (file, id, line) in found {
        match wanted.get_mut(&(file.as_str(), id.as_str())) {
            Some(n) if *n > 0 => *n -= 1,
            _ => out.push(format!(
                "{file}:{line}: figure `{id}` is not listed in {MARKERS} (a new marker is added there; a mistyped one is corrected)"
            )),
        }
    }
    for ((file, id), n) in wanted {
        for _ in 0..n {
            out.push(format!("{file}: figure `{id}` is listed in {MARKERS} but not marked in the file (deleted or mistyped)"));
        }
    }
    out
}

/// Lines of `text` with an HTML comment that looks like a figure marker but is not written as one
/// (`<!--figure: x-->`, `<!-- Figure: x -->`): [`markers`] would pass over it.
fn loose_markers(text: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    for (at, _) in text.match_indices("<!--") {
        let comment = &text[at..];
        let body = comment[4..comment.find("-->").unwrap_or(comment.len())].trim().to_lowercase();
        let exact = comment.starts_with("<!-- figure: ") || comment.starts_with("<!-- /figure -->");
        // `figure` as a word, after a `/` or not (`<!-- figures:start -->` is another marker).
        let word = body.trim_start_matches(['/', ' ']).strip_prefix("figure");
        if !exact && word.is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_')) {
            lines.push(text[..at].matches('\n').count() + 1);
        }
    }
    lines
}

/// The list of every figure marker of README.md and docs/ (`FILE ID` a line).
const MARKERS: &str = "docs/figures/markers.txt";

#[test]
fn every_marked_figure_matches_its_raw_results() {
    let root = root();
    let known: BTreeMap<&str, &Figure> = FIGURES.iter().map(|f| (f.id, f)).collect();
    let mut expected: BTreeMap<String, String> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    let mut found = Vec::new();
    for file in markdown_files(&root) {
        let text = std::fs::read_to_string(&file).unwrap();
        let rel = file.strip_prefix(&root).unwrap().display().to_string();
        for line in loose_markers(&text) {
            failures.push(format!("{rel}:{line}: a figure marker not written `<!-- figure: ID -->TEXT<!-- /figure -->`"));
        }
        for (id, published, line) in markers(&text).unwrap_or_else(|e| panic!("{rel}: {e}")) {
            found.push((rel.clone(), id, line, published));
        }
    }
    let places: Vec<(String, String, usize)> = found.iter().map(|(f, id, l, _)| (f.clone(), id.clone(), *l)).collect();
    let listed = listed_markers(&root);
    let differences = marker_differences(&places, &listed);
    let listed: BTreeSet<(String, String)> = listed.into_iter().collect();
    failures.extend(differences);
    for (rel, id, line, published) in found {
        // A marker the list lacks is a failure above; its producer may not even read its ID.
        if !listed.contains(&(rel.clone(), id.clone())) {
            continue;
        }
        let want = if let Some(figure) = known.get(id.as_str()) {
            seen.insert(figure.id);
            expected.entry(id.clone()).or_insert_with(|| (figure.compute)(&root)).clone()
        } else if let Some(family) = id.split_once(':').and_then(|(p, _)| FAMILIES.iter().find(|f| f.prefix == p)) {
            let args = &id[family.prefix.len() + 1..];
            expected.entry(id.clone()).or_insert_with(|| (family.compute)(&root, args)).clone()
        } else {
            failures.push(format!("{rel}:{line}: figure `{id}` has no producer in tests/published_figures.rs"));
            continue;
        };
        if published != want {
            failures.push(format!("{rel}:{line}: figure `{id}` reads `{published}`, its raw results give `{want}`"));
        }
    }
    for id in FIGURES.iter().map(|f| f.id) {
        if !seen.contains(id) {
            failures.push(format!("figure `{id}` is not marked in README.md or docs/ (its producer is unused)"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} published figure(s) differ from their raw results or the list:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_deleted_a_mistyped_and_a_loose_marker_are_found() {
    let listed = vec![
        ("README.md".to_string(), "a".to_string()),
        ("README.md".to_string(), "b".to_string()),
        ("docs/x.md".to_string(), "a".to_string()),
    ];
    let found =
        |ids: &[(&str, &str)]| -> Vec<(String, String, usize)> { ids.iter().map(|(f, id)| (f.to_string(), id.to_string(), 1)).collect() };
    assert!(marker_differences(&found(&[("README.md", "b"), ("README.md", "a"), ("docs/x.md", "a")]), &listed).is_empty());
    // Deleted: `b` no longer in README.md.
    let deleted = marker_differences(&found(&[("README.md", "a"), ("docs/x.md", "a")]), &listed);
    assert_eq!(deleted, vec![format!("README.md: figure `b` is listed in {MARKERS} but not marked in the file (deleted or mistyped)")]);
    // Mistyped: `b` written `bb`: both the stray ID and the missing one.
    let mistyped = marker_differences(&found(&[("README.md", "a"), ("README.md", "bb"), ("docs/x.md", "a")]), &listed);
    assert_eq!(mistyped.len(), 2, "{mistyped:?}");
    assert!(mistyped[0].contains("`bb` is not listed") && mistyped[1].contains("`b` is listed"), "{mistyped:?}");
    // Moved to another file, or marked twice where the list has it once.
    assert_eq!(marker_differences(&found(&[("README.md", "a"), ("README.md", "b"), ("docs/y.md", "a")]), &listed).len(), 2);
    assert_eq!(
        marker_differences(&found(&[("README.md", "a"), ("README.md", "a"), ("README.md", "b"), ("docs/x.md", "a")]), &listed).len(),
        1
    );
    let text = "ok <!-- figure: a -->1<!-- /figure -->\n<!--figure: b-->2<!-- /figure -->\n<!-- Figure: c -->3<!--/figure-->\n<!-- a note --><!-- figures:start -->";
    assert_eq!(loose_markers(text), vec![2, 3, 3]);
}

#[test]
fn the_tree_pipelines_validate() {
    for file in ["pipelines/trees/census-maft-trees.toml", "pipelines/trees/census-estimate-trees.toml"] {
        let (ok, stdout, stderr) = crate::common::fairpipe(&["validate", file]);
        assert!(ok && stdout.contains(": ok (") && stdout.contains("8 matrix combinations"), "{file}: {stdout}{stderr}");
    }
}

#[test]
fn markers_are_read_as_written() {
    let text = "a <!-- figure: x -->1.2–3.4<!-- /figure -->× and\n<!-- figure: y -->5<!-- /figure -->";
    let found = markers(text).unwrap();
    assert_eq!(found, vec![("x".into(), "1.2–3.4".into(), 1), ("y".into(), "5".into(), 2)]);
    assert!(markers("<!-- figure: z -->7").unwrap_err().contains("without"));
    assert_eq!((thousands(7), thousands(1153), thousands(1_234_567)), ("7".into(), "1,153".into(), "1,234,567".into()));
    assert!(markers("<!-- figure: z -->7\n<!-- /figure -->").unwrap_err().contains("not closed on its line"));
}

// ---- raw results ----

/// The JSON objects of a JSONL file, one a line.
fn jsonl(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1)))
        .collect()
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("`{key}` is not a number in {v}"))
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("`{key}` is not a string in {v}"))
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// "a–b" of the smallest and largest of `xs`, each with `decimals` decimals.
fn range(xs: &[f64], decimals: usize) -> String {
    let (lo, hi) = (common::finite_min(xs), common::finite_max(xs));
    format!("{lo:.decimals$}–{hi:.decimals$}")
}

// ---- the grid's reference-port cells (docs/grid/, scripts/bench_grid.py --reference) ----

/// A compared cell: fairpipe's runs and the port's, on the seeds both have.
struct Cell {
    ours: Vec<Value>,
    port: Vec<Value>,
    key: (String, String, String),
}

/// The cells where `method` ran in both `ours_file` (fairpipe, release, 200,000 rows asked) and
/// docs/grid/reference.jsonl, as `bench_grid.py`'s reference table pairs them.
fn port_cells(root: &Path, method: &str, ours_file: &str) -> Vec<Cell> {
    let ours = jsonl(&root.join(ours_file));
    let port = jsonl(&root.join("docs/grid/reference.jsonl"));
    let key = |r: &Value| (text(r, "dataset").to_string(), text(r, "model").to_string(), text(r, "protected").to_string());
    let cells: BTreeSet<_> = port.iter().filter(|r| text(r, "method") == method && num(r, "max_rows") == 200_000.0).map(key).collect();
    let mut out = Vec::new();
    for cell in cells {
        let mine: BTreeMap<i64, &Value> = ours
            .iter()
            .filter(|r| {
                key(r) == cell
                    && text(r, "method") == method
                    && text(r, "output") == "scores"
                    && text(r, "budget_key") == "max_queries"
                    && num(r, "budget") == 200_000.0
                    && text(r, "binary") == "release"
            })
            .map(|r| (r["seed"].as_i64().unwrap(), r))
            .collect();
        let theirs: BTreeMap<i64, &Value> = port
            .iter()
            .filter(|r| key(r) == cell && text(r, "method") == method && num(r, "max_rows") == 200_000.0)
            .map(|r| (r["seed"].as_i64().unwrap(), r))
            .collect();
        let seeds: Vec<i64> = mine.keys().filter(|s| theirs.contains_key(s)).copied().collect();
        if seeds.is_empty() {
            continue;
        }
        out.push(Cell {
            ours: seeds.iter().map(|s| mine[s].clone()).collect(),
            port: seeds.iter().map(|s| theirs[s].clone()).collect(),
            key: cell,
        });
    }
    out
}

fn mean_of(rows: &[Value], key: &str) -> f64 {
    mean(&rows.iter().map(|r| num(r, key)).collect::<Vec<_>>())
}

/// fairpipe's mean IDIs over the port's on each cell.
fn idis_ratios(cells: &[Cell]) -> Vec<f64> {
    cells.iter().map(|c| mean_of(&c.ours, "idis") / mean_of(&c.port, "ids")).collect()
}

fn grft_idis_vs_port(root: &Path) -> String {
    range(&idis_ratios(&port_cells(root, "grft", "docs/grid/runs.jsonl")), 2)
}

fn grft_port_cells(root: &Path) -> String {
    port_cells(root, "grft", "docs/grid/runs.jsonl").len().to_string()
}

fn aft_idis_vs_port_after(root: &Path) -> String {
    range(&idis_ratios(&port_cells(root, "aft", "docs/grid/aft-after-688a7fa.jsonl")), 2)
}

fn aft_port_cells_after(root: &Path) -> String {
    port_cells(root, "aft", "docs/grid/aft-after-688a7fa.jsonl").len().to_string()
}

/// Which seconds divide fairpipe's tests: its search stage's wall time or its whole process's CPU.
enum Ratio {
    TestsWall,
    TestsProcessCpu,
}

/// fairpipe's tests per second over the port's tests per second of search CPU, per cell, one
/// decimal (the grid table's "tests/s ratio" columns), over the cells of docs/grid/runs.jsonl.
fn port_ratio(root: &Path, method: &str, ratio: Ratio) -> String {
    let cells = port_cells(root, method, "docs/grid/runs.jsonl");
    let ratios: Vec<f64> = cells
        .iter()
        .map(|c| {
            let seconds = match ratio {
                Ratio::TestsWall => mean_of(&c.ours, "secs"),
                Ratio::TestsProcessCpu => mean_of(&c.ours, "process_cpu_s"),
            };
            (mean_of(&c.ours, "tests") / seconds) / (mean_of(&c.port, "tests") / mean_of(&c.port, "cpu_secs"))
        })
        .collect();
    range(&ratios, 1)
}

/// fairpipe's tests per search-wall second over the published harness's tests/s on the same cell
/// (scripts/regionft_rq1_baseline.csv), over every compared cell the harness publishes.
fn tests_s_vs_published(root: &Path) -> String {
    let csv = std::fs::read_to_string(root.join("scripts/regionft_rq1_baseline.csv")).unwrap();
    let mut lines = csv.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    let mut published = BTreeMap::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let tests_s = f[col("n_test")].parse::<f64>().unwrap() / f[col("real_time")].parse::<f64>().unwrap();
        published.insert(
            (f[col("dataset")].to_string(), f[col("model")].to_string(), f[col("protected")].to_string(), f[col("method")].to_string()),
            tests_s,
        );
    }
    let dataset = |d: &str| match d {
        "census" => Some("Adult"),
        "credit" => Some("Credit"),
        "bank" => Some("Bank"),
        _ => None,
    };
    let protected = |p: &str| -> String {
        match p {
            "gender" | "PersonStatusSex" => "sex".into(),
            "AgeInYears" => "age".into(),
            other => other.into(),
        }
    };
    let mut ratios = Vec::new();
    for method in ["grft", "aft"] {
        for c in port_cells(root, method, "docs/grid/runs.jsonl") {
            let (d, m, p) = &c.key;
            let Some(d) = dataset(d) else { continue };
            if let Some(tests_s) = published.get(&(d.to_string(), m.clone(), protected(p), method.to_string())) {
                ratios.push(mean_of(&c.ours, "tests") / mean_of(&c.ours, "secs") / tests_s);
            }
        }
    }
    range(&ratios, 1)
}

// ---- fixtures and other raw results ----

/// The tree exports the executor is compared on (tests/fixtures/onnx/trees/*.onnx).
fn tree_exports(root: &Path) -> String {
    let dir = root.join("tests/fixtures/onnx/trees");
    std::fs::read_dir(&dir).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "onnx")).count().to_string()
}

/// The best of the three wall-clock tries of `Pipeline::load` on `stages` stages
/// (docs/validate/validate.jsonl), in seconds with three decimals.
fn validate_best(root: &Path, stages: u64) -> String {
    let runs = jsonl(&root.join("docs/validate/validate.jsonl"));
    let run = runs.iter().find(|r| r["stages"].as_u64() == Some(stages)).unwrap_or_else(|| panic!("no run of {stages} stages"));
    let best = common::finite_min(&run["wall_seconds"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect::<Vec<_>>());
    format!("{best:.3}")
}

/// The files of the fuzz corpus (fuzz/corpus/TARGET/*), the inputs `tests/fuzz_corpus.rs` replays.
fn fuzz_corpus_files(root: &Path) -> String {
    let mut count = 0;
    let mut dirs = vec![root.join("fuzz/corpus")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                count += 1;
            }
        }
    }
    thousands(count)
}

/// docs/figures/footprint.json.
fn footprint(root: &Path) -> Value {
    let path = root.join("docs/figures/footprint.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Megabytes (10⁶ bytes, no decimal) of one venv of docs/figures/footprint.json.
fn venv_mb(root: &Path, venv: &str) -> String {
    let bytes = footprint(root)["venv_bytes"][venv].as_f64().unwrap_or_else(|| panic!("footprint.json: no venv {venv}"));
    format!("{:.0}", bytes / 1e6)
}

/// Gigabytes (10⁹ bytes, one decimal) of docs/figures/footprint.json's `key`: a number of bytes,
/// or an object of them (summed).
fn footprint_gb(root: &Path, key: &str) -> String {
    let record = footprint(root);
    let bytes = match &record[key] {
        Value::Object(parts) => parts.values().map(|v| v.as_f64().unwrap()).sum(),
        other => other.as_f64().unwrap_or_else(|| panic!("footprint.json: `{key}` is not a number")),
    };
    format!("{:.1}", bytes / 1e9)
}

// ---- the tree executor (docs/figures/trees/: scripts/bench_trees.py, scripts/bench_tree_pipelines.py) ----

/// The lines of docs/figures/trees/bench.jsonl for `export` at `batch` (one thread, CPU time),
/// by executor and round: rows per CPU second.
fn trees_lines(root: &Path, export: &str, batch: u64) -> BTreeMap<(String, i64), f64> {
    jsonl(&root.join("docs/figures/trees/bench.jsonl"))
        .iter()
        .filter(|r| text(r, "export") == export && r["batch"].as_u64() == Some(batch) && text(r, "mode") == "cpu1")
        .map(|r| ((text(r, "executor").to_string(), r["round"].as_i64().unwrap()), num(r, "rows_per_s")))
        .collect()
}

/// `BATCH:EXPORT[,EXPORT…]`: native-trees' rows per CPU second over ONNX Runtime's, per export
/// and round that has both (each the round's criterion estimate), as "a–b" with one decimal over
/// all of them (or "a" when they agree).
fn trees_ratio(root: &Path, args: &str) -> String {
    let (batch, exports) = args.split_once(':').expect("trees-ratio:BATCH:EXPORT[,EXPORT…]");
    let mut ratios = Vec::new();
    for export in exports.split(',') {
        let lines = trees_lines(root, export, batch.parse().unwrap());
        let rounds: BTreeSet<i64> = lines.keys().map(|(_, r)| *r).collect();
        let before = ratios.len();
        // A round counts where both executors' lines are there (criterion refuses a line whose
        // CPU clock read zero for a sample; bench.log says which).
        for r in rounds {
            if let (Some(native), Some(ort)) = (lines.get(&("native-trees".to_string(), r)), lines.get(&("onnxruntime".to_string(), r))) {
                ratios.push(native / ort);
            }
        }
        assert!(ratios.len() > before, "{export} {batch}: no round with both executors in docs/figures/trees/bench.jsonl");
    }
    collapse(range(&ratios, 1))
}

/// `BATCH:EXPORT:EXECUTOR`: the executor's rows per CPU second, in thousands, over the rounds
/// ("a–b k").
fn trees_rows(root: &Path, args: &str) -> String {
    let mut parts = args.splitn(3, ':');
    let (batch, export, executor) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().expect("trees-rows:BATCH:EXPORT:EXECUTOR"));
    let lines = trees_lines(root, export, batch.parse().unwrap());
    let rows: Vec<f64> = lines.iter().filter(|((e, _), _)| e == executor).map(|(_, v)| (v / 1000.0).round()).collect();
    let (lo, hi) = (common::finite_min(&rows), common::finite_max(&rows));
    collapse(format!("{}–{}", thousands(lo as u64), thousands(hi as u64)))
}

/// "a–a" written as "a".
fn collapse(range: String) -> String {
    match range.split_once('–') {
        Some((lo, hi)) if lo == hi => lo.to_string(),
        _ => range,
    }
}

/// The runs of docs/figures/trees/pipelines.jsonl of `pipeline` (its file stem) on the export
/// `model` (its file stem): (round, executor) → seconds of the stages after load_model.
fn pipeline_runs(root: &Path, pipeline: &str, model: &str) -> BTreeMap<(i64, String), f64> {
    jsonl(&root.join("docs/figures/trees/pipelines.jsonl"))
        .iter()
        .filter(|r| {
            Path::new(text(r, "pipeline")).file_stem().is_some_and(|s| s == pipeline)
                && Path::new(text(r, "model_path")).file_stem().is_some_and(|s| s == model)
        })
        .map(|r| {
            let executor = if text(r, "executor").starts_with("native") { "native" } else { "onnxruntime" };
            ((r["round"].as_i64().unwrap(), executor.to_string()), num(r, "stages_s"))
        })
        .collect()
}

/// `PIPELINE:MODEL[,MODEL…]`: ONNX Runtime's seconds of the stages after load_model over the
/// native executor's, paired within a round, "a–b" with one decimal over the models and rounds.
fn tree_pipeline_ratio(root: &Path, args: &str) -> String {
    let (pipeline, models) = args.split_once(':').expect("tree-pipeline-ratio:PIPELINE:MODEL[,MODEL…]");
    let mut ratios = Vec::new();
    for model in models.split(',') {
        let runs = pipeline_runs(root, pipeline, model);
        let rounds: BTreeSet<i64> = runs.keys().map(|(r, _)| *r).collect();
        assert!(!rounds.is_empty(), "{pipeline} {model}: no runs in docs/figures/trees/pipelines.jsonl");
        ratios.extend(rounds.iter().map(|r| runs[&(*r, "onnxruntime".to_string())] / runs[&(*r, "native".to_string())]));
    }
    collapse(range(&ratios, 1))
}

/// `PIPELINE:MODEL:EXECUTOR`: that executor's seconds of the stages after load_model over the
/// rounds, "a–b" with two decimals.
fn tree_pipeline_seconds(root: &Path, args: &str) -> String {
    let mut parts = args.splitn(3, ':');
    let (pipeline, model, executor) =
        (parts.next().unwrap(), parts.next().unwrap(), parts.next().expect("tree-pipeline-s:PIPELINE:MODEL:EXECUTOR"));
    let seconds: Vec<f64> = pipeline_runs(root, pipeline, model).iter().filter(|((_, e), _)| e == executor).map(|(_, s)| *s).collect();
    collapse(range(&seconds, 2))
}

// ---- the tree executors beside other libraries (docs/figures/trees/peers/: scripts/bench_tree_peers.py) ----

/// The largest |P − P_model| a library's record may have for its speed to count: a library that
/// scores wrongly posts no figure.
const PEER_MAX_ABS_DP: f64 = 1e-4;

/// The measures of docs/figures/trees/peers/runs.jsonl of `model` at `batch` ("1000", "all") on
/// `threads` threads, by library: every round's record.
fn peer_records(root: &Path, model: &str, batch: &str, threads: &str) -> BTreeMap<String, Vec<Value>> {
    let mut by_library: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for r in jsonl(&root.join("docs/figures/trees/peers/runs.jsonl")) {
        let this_batch = match &r["batch"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if text(&r, "model") == model && this_batch == batch && r["threads"] == threads.parse::<u64>().map_or(Value::Null, Value::from) {
            by_library.entry(text(&r, "library").to_string()).or_default().push(r);
        }
    }
    by_library
}

/// A library's figure over its rounds: the best rows/s (rows per CPU second on one thread, per
/// wall second on more; `None` when no round ran or one scored wrongly) and the largest peak MB.
fn peer_figure(records: &[Value]) -> (Option<f64>, Option<f64>) {
    let ran: Vec<&Value> = records.iter().filter(|r| r.get("error").is_none()).collect();
    if ran.is_empty() || ran.iter().any(|r| num(r, "max_abs_dp") > PEER_MAX_ABS_DP) {
        return (None, None);
    }
    let rows = common::finite_max(&ran.iter().map(|r| num(r, "rows_per_s")).collect::<Vec<_>>());
    let mb = common::finite_max(&ran.iter().map(|r| num(r, "max_rss_mb")).collect::<Vec<_>>());
    (Some(rows), Some(mb))
}

/// `WHAT:…` of docs/figures/trees/peers/runs.jsonl (BATCH `1000`, `16000` or `all`; THREADS `1`
/// or `2`):
/// - `cell:LIBRARY:MODEL:BATCH:THREADS`: "R k / M MB", R thousands of rows/s (whole, thousands
///   separated), M the peak MB (whole), "did not run" or "wrong P" (max |Δp| past 1e-4);
/// - `fastest:MODEL:BATCH:THREADS`: the library with the most rows/s;
/// - `vs:LIBRARY:MODEL:BATCH:THREADS`: fairpipe-native's rows/s over LIBRARY's, "N.N×";
/// - `vs-best-other:MODEL:BATCH:THREADS`: fairpipe-native's rows/s over the fastest other
///   library's, "N.N×" (below 1: that library is faster).
fn tree_peers(root: &Path, args: &str) -> String {
    let parts: Vec<&str> = args.split(':').collect();
    let speed = |library: &str, model: &str, batch: &str, threads: &str| {
        let records = peer_records(root, model, batch, threads);
        let found =
            records.get(library).unwrap_or_else(|| panic!("tree-peers:{args}: no record of {library} on {model} {batch} {threads}"));
        peer_figure(found)
            .0
            .unwrap_or_else(|| panic!("tree-peers:{args}: {library} on {model} {batch} {threads} did not run or scored wrongly"))
    };
    let fastest = |model: &str, batch: &str, threads: &str, except: Option<&str>| -> (String, f64) {
        peer_records(root, model, batch, threads)
            .iter()
            .filter(|(library, _)| Some(library.as_str()) != except)
            .filter_map(|(library, records)| peer_figure(records).0.map(|rows| (library.clone(), rows)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or_else(|| panic!("tree-peers:{args}: no library ran"))
    };
    match parts.as_slice() {
        ["cell", library, model, batch, threads] => {
            let records = peer_records(root, model, batch, threads);
            let found = records.get(*library).unwrap_or_else(|| panic!("tree-peers:{args}: no record"));
            match peer_figure(found) {
                (Some(rows), Some(mb)) => format!("{} k / {:.0} MB", thousands((rows / 1000.0).round() as u64), mb),
                _ if found.iter().all(|r| r.get("error").is_some()) => "did not run".to_string(),
                _ => "wrong P".to_string(),
            }
        }
        ["fastest", model, batch, threads] => fastest(model, batch, threads, None).0,
        ["vs", library, model, batch, threads] => {
            format!("{:.1}×", speed("fairpipe-native", model, batch, threads) / speed(library, model, batch, threads))
        }
        ["vs-best-other", model, batch, threads] => {
            let (_, best) = fastest(model, batch, threads, Some("fairpipe-native"));
            format!("{:.1}×", speed("fairpipe-native", model, batch, threads) / best)
        }
        _ => panic!("tree-peers:{args}: expected cell|fastest|vs|vs-best-other with their arguments"),
    }
}

// ---- the MAFT reference port (docs/figures/maft-reference/: scripts/bench_maft_reference.py) ----

/// `WHAT:DATASET:PROTECTED:GLOBAL:LOCAL` over every run of the port on that benchmark: `idis`
/// (mean ± sample sd, whole numbers), `runs`, `cpu-s` (mean process CPU seconds, one decimal),
/// `idis-per-cpu-s` (mean IDIs over mean CPU seconds, whole).
fn maft_port(root: &Path, args: &str) -> String {
    let (what, bench) = args.split_once(':').expect("maft-port:WHAT:DATASET:PROTECTED:GLOBAL:LOCAL");
    let runs: Vec<Value> = jsonl(&root.join("docs/figures/maft-reference/runs.jsonl"))
        .into_iter()
        .filter(|r| format!("{}:{}:{}:{}", text(r, "dataset"), text(r, "protected"), r["global_seeds"], r["local_iterations"]) == bench)
        .collect();
    assert!(!runs.is_empty(), "maft-port: no runs of {bench}");
    let idis: Vec<f64> = runs.iter().map(|r| num(r, "idis")).collect();
    let cpu = mean_of(&runs, "process_cpu_s");
    match what {
        "idis" => mean_sd_text(&idis),
        "runs" => runs.len().to_string(),
        "cpu-s" => format!("{cpu:.1}"),
        "idis-per-cpu-s" => thousands((mean(&idis) / cpu).round() as u64),
        other => panic!("maft-port: unknown figure {other}"),
    }
}

// ---- the label-only searches against their reference code (benches/label-only: scripts/bench_label_only.py) ----

/// The `ids` of every run of benches/label-only/FILE_STEM.jsonl.
fn label_only_ids(root: &Path, stem: &str) -> Vec<f64> {
    let ids: Vec<f64> = jsonl(&root.join(format!("benches/label-only/{stem}.jsonl"))).iter().map(|r| num(r, "ids")).collect();
    assert!(ids.len() > 1, "benches/label-only/{stem}.jsonl: {} runs", ids.len());
    ids
}

/// `FILE_STEM`: the mean ± sample sd of `ids` over the runs of benches/label-only/FILE_STEM.jsonl,
/// whole numbers; `FILE_STEM:mean`: the mean alone.
fn label_only(root: &Path, args: &str) -> String {
    match args.split_once(':') {
        None => mean_sd_text(&label_only_ids(root, args)),
        Some((stem, "mean")) => thousands(mean(&label_only_ids(root, stem)).round() as u64),
        Some((_, other)) => panic!("label-only:{args}: unknown figure {other} (mean)"),
    }
}

/// `PREFIX`: how many of the reference's sample standard deviations fairpipe's mean IDIs lie above
/// the reference's mean (PREFIX-fairpipe.jsonl against PREFIX-reference.jsonl), one decimal.
fn label_only_sds(root: &Path, prefix: &str) -> String {
    let ours = label_only_ids(root, &format!("{prefix}-fairpipe"));
    let theirs = label_only_ids(root, &format!("{prefix}-reference"));
    let m = mean(&theirs);
    let sd = (theirs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (theirs.len() as f64 - 1.0)).sqrt();
    format!("{:.1}", (mean(&ours) - m) / sd)
}

// ---- the bias audit example (docs/bias-audit/: scripts/bias_audit_example.sh) ----

/// `FILE:TABLE`: the lowest impact ratio of table TABLE (`sex`, `race`, `intersection`) of
/// docs/bias-audit/FILE.csv over its categories in the ratios (not excluded, not unknown), three
/// decimals.
fn bias_audit_ratio(root: &Path, args: &str) -> String {
    let (file, table) = args.split_once(':').expect("bias-audit:FILE:TABLE");
    let path = root.join(format!("docs/bias-audit/{file}.csv"));
    let ratios: Vec<f64> = common::read_csv(&path)
        .iter()
        .filter(|r| r["table"] == table && r["excluded"] != "yes" && r["unknown"] != "yes")
        .map(|r| {
            r["impact_ratio"].parse::<f64>().unwrap_or_else(|e| panic!("{}: impact_ratio `{}`: {e}", path.display(), r["impact_ratio"]))
        })
        .collect();
    format!("{:.3}", common::finite_min(&ratios))
}

/// A line of an LLM benchmark's raw output (`scripts/bench-llm.sh`): ARGS is `FILE:KEY`, FILE a
/// file of `benches/llm/` without `.txt`, KEY the line's words joined by `-` (`fairpipe-c8-requests_per_s`);
/// the value rounded to a whole number, thousands separated.
fn llm_bench(root: &Path, args: &str) -> String {
    let (file, key) = args.split_once(':').unwrap_or_else(|| panic!("llm:{args}: expected llm:FILE:KEY"));
    let path = root.join(format!("benches/llm/{file}.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let words = key.replace('-', " ");
    let value = text
        .lines()
        .find_map(|line| line.strip_prefix(words.as_str()).and_then(|rest| rest.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("{}: no line `{words} VALUE`", path.display()));
    let value: f64 = value.trim().parse().unwrap_or_else(|e| panic!("{}: `{words} {value}`: {e}", path.display()));
    thousands(value.round() as u64)
}

/// A figure of the clustered intervals' coverage simulation (`scripts/coverage_clustered.sh`,
/// `docs/figures/llm-coverage/coverage.txt`): ARGS is a key of its `coverage-summary` line
/// (`clustered`, `independent`, `runs`: counts; `clustered-percent`, `independent-percent`: the
/// count over `runs` in percent, one decimal). Each run's own line is checked against the summary.
fn coverage_summary(root: &Path, args: &str) -> String {
    let path = root.join("docs/figures/llm-coverage/coverage.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let summary: std::collections::HashMap<&str, &str> = text
        .lines()
        .find_map(|l| l.strip_prefix("coverage-summary "))
        .unwrap_or_else(|| panic!("{}: no coverage-summary line", path.display()))
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect();
    let count = |key: &str| -> u64 { summary[key].parse().unwrap_or_else(|e| panic!("{}: {key}: {e}", path.display())) };
    // The runs' own lines give the same counts (truth 1.5, each interval read as printed).
    let covered = |interval: &str| {
        text.lines()
            .filter(|l| l.starts_with("coverage-run "))
            .filter(|l| {
                let at = l.find(&format!(" {interval}=[")).unwrap_or_else(|| panic!("{l}: no {interval}")) + interval.len() + 3;
                let (lo, hi) = l[at..l[at..].find(']').unwrap() + at].split_once(',').unwrap();
                lo.parse::<f64>().unwrap() <= 1.5 && 1.5 <= hi.parse::<f64>().unwrap()
            })
            .count() as u64
    };
    assert_eq!(covered("ci95"), count("clustered"), "{}: the runs' lines against the summary", path.display());
    assert_eq!(covered("ci95_independent"), count("independent"), "{}: the runs' lines against the summary", path.display());
    match args {
        "clustered" | "independent" | "runs" => count(args).to_string(),
        "clustered-percent" => format!("{:.1}", 100.0 * count("clustered") as f64 / count("runs") as f64),
        "independent-percent" => format!("{:.1}", 100.0 * count("independent") as f64 / count("runs") as f64),
        other => panic!("coverage:{other}: unknown figure"),
    }
}

/// A figure of the `precision` benchmark (`scripts/bench_llm_precision.py`,
/// `docs/figures/llm-precision/runs.jsonl`), recomputed from its run lines: ARGS is `runs`,
/// `covered` (runs whose interval at the stop held the planted 0.06), `median-requests` (the whole
/// run's requests, load_model's 200 included, median over the runs with `precision`),
/// `max-half-width` (four decimals), `fixed-requests` (the fixed estimate's run), `ratio` (fixed
/// over median, one decimal) or `median-inputs`.
fn precision_bench(root: &Path, args: &str) -> String {
    let path = root.join("docs/figures/llm-precision/runs.jsonl");
    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let precise: Vec<&Value> = lines.iter().filter(|l| l["mode"] == "precision=0.01").collect();
    let fixed = lines.iter().find(|l| l["mode"] == "fixed 100 x 1000").unwrap_or_else(|| panic!("{}: no fixed run", path.display()));
    let median = |key: &str| {
        let mut v: Vec<u64> = precise.iter().map(|l| l[key].as_u64().unwrap()).collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    match args {
        "runs" => precise.len().to_string(),
        "covered" => precise.iter().filter(|l| l["covered"] == true).count().to_string(),
        "median-requests" => thousands(median("run_requests")),
        "median-inputs" => thousands(median("inputs")),
        "max-half-width" => format!("{:.4}", precise.iter().map(|l| l["half_width"].as_f64().unwrap()).fold(0.0, f64::max)),
        "fixed-requests" => thousands(fixed["run_requests"].as_u64().unwrap()),
        "ratio" => format!("{:.1}", fixed["run_requests"].as_f64().unwrap() / median("run_requests") as f64),
        other => panic!("llm-precision:{other}: unknown figure"),
    }
}

/// A figure of a record the wheel scripts wrote (`scripts/build-wheel.sh`, `build-cli.sh`,
/// `check-wheel.sh` with `--record docs/wheel`): ARGS is `FILE:PATH[:FORMAT]`, FILE a JSON file of
/// `docs/wheel/` without `.json`, PATH its dotted key (`startup.version.rust_binary.median_ms`),
/// FORMAT `D` (that many decimals; 0, the default, with thousands separated), `MB` (bytes in
/// MiB, one decimal) or `min` (seconds in whole minutes).
fn wheel_record(root: &Path, args: &str) -> String {
    let mut parts = args.split(':');
    let (file, key, format) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default(), parts.next().unwrap_or("0"));
    let path = root.join(format!("docs/wheel/{file}.json"));
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap();
    let value = key
        .split('.')
        .try_fold(&record, |v, k| v.get(k))
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{}: no number at {key}", path.display()));
    match format {
        "MB" => format!("{:.1}", value / (1024.0 * 1024.0)),
        "min" => format!("{:.0}", value / 60.0),
        "0" => thousands(value.round() as u64),
        decimals => format!("{value:.*}", decimals.parse::<usize>().unwrap_or_else(|e| panic!("wheel:{args}: format {decimals}: {e}"))),
    }
}

/// "mean ± sample sd" of `xs`, each a whole number with thousands separated.
fn mean_sd_text(xs: &[f64]) -> String {
    let m = mean(xs);
    let sd = (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() as f64 - 1.0)).sqrt();
    format!("{} ± {}", thousands(m.round() as u64), thousands(sd.round() as u64))
}

/// A NaN among the values fails (a fold over `f64::min` would pass over it and print "1.0–2.0").
#[test]
#[should_panic(expected = "value 1 of 3 is not finite: NaN")]
fn a_range_over_a_nan_fails() {
    range(&[1.0, f64::NAN, 2.0], 1);
}

/// `ci-steps:KEY[:FORMAT]`: KEY of the newest record of docs/ci/steps.jsonl (its last line, appended
/// by scripts/record_ci_steps.py from `.ci/run`'s `ci-steps:` line): a number as whole seconds with
/// thousands separated (FORMAT `min`: whole minutes), a text as it is (FORMAT `short`: its first 7
/// characters, for the commit).
fn ci_steps(root: &Path, args: &str) -> String {
    let records = jsonl(&root.join("docs/ci/steps.jsonl"));
    let newest = records.last().unwrap_or_else(|| panic!("docs/ci/steps.jsonl holds no record"));
    let (key, format) = args.split_once(':').unwrap_or((args, ""));
    match (&newest[key], format) {
        (Value::Number(n), "") => thousands(n.as_f64().unwrap().round() as u64),
        (Value::Number(n), "min") => format!("{:.0}", n.as_f64().unwrap() / 60.0),
        (Value::String(s), "") => s.clone(),
        (Value::String(s), "short") => s.chars().take(7).collect(),
        (value, _) => panic!("docs/ci/steps.jsonl: `{key}` is {value} in the newest record (format `{format}`)"),
    }
}
