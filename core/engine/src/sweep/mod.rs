//! Sweeps: a pipeline with a `[matrix]` runs once per combination of the matrix's values, each in
//! its own subfolder, in parallel up to `jobs`, and compares them ([`compare`]). A run — sweep or
//! plain pipeline — is made of **units**: one per matrix combination (a plain pipeline is one
//! unit, `run`). A unit's results depend on the pipeline file and its own combination alone (its
//! seed is the pipeline seed, or the combination's `pipeline.seed`; every stage derives its
//! stream from that seed and its name, and estimate trials from (stage seed, trial index)), never
//! on which other units run beside it, in which order or on which machine. That is what makes a
//! sharded run ([`shard`]) merge into exactly the unsharded result.

pub mod compare;
pub mod matrix;
pub mod shard;
pub mod summary;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ConfigError, Error, Result};
use crate::output::{write_atomic, write_json};
use crate::run::{parse_root, read_text, written_seed, Pipeline};
use crate::stage::problems::Problems;
use crate::stage::summary::Summary;
use compare::Best;
use compare::{Comparison, Row};
use fairpipe_data::toml_spans::{Sp, Val};
use matrix::{Combination, Matrix};
use summary::{MatrixSummary, SweepSummary};

/// The unit id of a plain pipeline (no `[matrix]`): its one unit.
pub const PLAIN_UNIT: &str = "run";

/// A unit of work: one matrix combination (or the whole plain pipeline), or one piece of a
/// plain pipeline's split stage ([`crate::pieces`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitInfo {
    /// Its id: the combination's folder name (`run` for a plain pipeline), or
    /// `run/STAGE/PIECE` for a piece.
    pub id: String,
    /// Matrix key → the combination's value.
    pub values: Map<String, Value>,
    /// Which piece of which stage, for a piece.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub piece: Option<PieceOf>,
}

/// The stage piece a unit is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PieceOf {
    /// The stage's name.
    pub stage: String,
    /// The piece's number, from 0.
    pub piece: usize,
    /// The stage's number of pieces.
    pub pieces: usize,
}

impl UnitInfo {
    /// Where a part keeps the unit, relative to the part's folder: the unit's folder, or a
    /// piece's file.
    pub fn path_in_part(&self) -> PathBuf {
        match &self.piece {
            None => PathBuf::from(&self.id),
            Some(p) => PathBuf::from(PLAIN_UNIT).join("pieces").join(format!("{}.{}.json", p.stage, p.piece)),
        }
    }
}

/// What `fairpipe merge` needs to run a pipeline's stages again around the pieces: the pipeline
/// file's path and text as the shards read them, and the run's options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineSource {
    /// The pipeline file, absolute (its relative paths resolve against its folder).
    pub path: PathBuf,
    /// Its text.
    pub text: String,
    /// `--seed`, if given.
    pub seed_override: Option<u64>,
    /// `--gate` conditions.
    pub gates: Vec<String>,
}

/// What identifies a sweep and everything needed to write its combined result: kept in a part's
/// manifest, so `fairpipe merge` needs nothing but the parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepInfo {
    /// `[pipeline] name`.
    pub pipeline: String,
    /// The pipeline file's name.
    pub file: Option<String>,
    /// The run seed (`--seed`, else `[pipeline] seed`).
    pub seed: u64,
    /// FNV-1a 64 of the pipeline text and the `--gate` conditions, as 16 hex digits.
    pub pipeline_hash: String,
    /// The fairpipe version that ran it.
    pub fairpipe_version: String,
    /// Whether the pipeline has a `[matrix]` (the result is a sweep folder) or not (one run).
    pub matrix: bool,
    /// The matrix keys in file order.
    pub keys: Vec<String>,
    /// How the best combination is chosen.
    pub best: Option<Best>,
    /// `[pipeline] report`.
    pub report: bool,
    /// Every unit, in order.
    pub units: Vec<UnitInfo>,
    /// The pipeline itself, when its units are stage pieces (the merge runs it again around them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<PipelineSource>,
}

/// A pipeline file read as a sweep: its matrix (possibly empty) and its units, every combination
/// validated.
pub struct Sweep {
    /// The pipeline file.
    pub file: PathBuf,
    /// `[pipeline] out`, resolved, if given.
    pub out: Option<PathBuf>,
    /// Identity and units.
    pub info: SweepInfo,
    /// The matrix.
    pub matrix: Matrix,
    text: String,
    root: Sp<Val>,
    combinations: Vec<Combination>,
    seed_override: Option<u64>,
    gates: Vec<crate::gate::Condition>,
    /// Each unit's pipeline as [`Sweep::parse`] validated it, until [`Sweep::pipeline`] hands it
    /// out: a pipeline is validated once per run, so a served model's readiness is asked once.
    validated: Vec<Mutex<Option<Pipeline>>>,
    /// Where every unit's language models answer from ([`Pipeline::llm_answers`]): a server
    /// unless the caller sets it (`fairpipe run --responses`).
    pub llm_answers: crate::models::llm::offline::AnswerSource,
}

/// What a sweep run (or a merge) produced.
#[derive(Debug, Clone)]
pub struct SweepReport {
    /// The top-level `summary.json`, typed.
    pub summary: SweepSummary,
    /// Whether every gate passed (`None`: no gate).
    pub gate_passed: Option<bool>,
}

impl Sweep {
    /// Read `file`, its `[matrix]` and every combination (all problems at once, each once, as
    /// `file:line:col`); `seed` overrides `[pipeline] seed` (a swept `pipeline.seed` still wins);
    /// `gates` are `--gate` conditions added to every combination; `best` overrides
    /// `[matrix] best`.
    pub fn load(file: &Path, seed: Option<u64>, gates: Vec<crate::gate::Condition>, best: Option<Best>) -> Result<Sweep, ConfigError> {
        let text = read_text(file)?;
        Self::parse(file, text, seed, gates, best)
    }

    /// [`Sweep::load`] for `text` read from `file`.
    pub fn parse(
        file: &Path,
        text: String,
        seed: Option<u64>,
        gates: Vec<crate::gate::Condition>,
        best: Option<Best>,
    ) -> Result<Sweep, ConfigError> {
        let root = parse_root(file, &text)?;
        let mut p = Problems::new(file, &text);
        let matrix = Matrix::read(&root, &mut p);
        if let Err(e) = p.into_result() {
            // The stages' own problems too, so one pass shows everything.
            let mut problems = e.problems;
            if let Err(more) = Pipeline::from_root(file, &text, &root, seed, true) {
                problems.extend(more.problems);
            }
            return Err(ConfigError { problems: dedup(problems) });
        }
        let combinations = matrix.combinations();
        let mut sweep = Sweep {
            file: file.to_path_buf(),
            out: None,
            info: SweepInfo {
                pipeline: String::new(),
                file: file.file_name().map(|f| f.to_string_lossy().into_owned()),
                seed: 0,
                pipeline_hash: String::new(),
                fairpipe_version: env!("CARGO_PKG_VERSION").to_string(),
                matrix: !matrix.axes.is_empty(),
                keys: matrix.axes.iter().map(|a| a.key.clone()).collect(),
                best: best.or_else(|| matrix.best.as_ref().map(|(b, _)| b.clone())),
                report: true,
                units: Vec::new(),
                source: None,
            },
            matrix,
            text,
            root,
            combinations,
            seed_override: seed,
            gates,
            validated: Vec::new(),
            llm_answers: Default::default(),
        };
        let mut problems = Vec::new();
        for i in 0..sweep.combinations.len() {
            match sweep.validate(i) {
                Ok(p) => {
                    if i == 0 {
                        sweep.info.pipeline = p.name.clone();
                        sweep.info.report = p.report;
                        sweep.out = p.out.clone();
                    }
                    sweep.validated.push(Mutex::new(Some(p)));
                }
                Err(e) => problems.extend(e.problems),
            }
        }
        if !problems.is_empty() {
            return Err(ConfigError { problems: dedup(problems) });
        }
        // A matrix's combinations were validated above; its base need not be whole on its own (a
        // group axis may bring the data's favourable label or codes), so only its seed is read.
        // A plain pipeline is its one combination (the file as written, validated above), and its
        // split stages are its units.
        let (base_seed, split) = if sweep.info.matrix {
            (seed.unwrap_or_else(|| written_seed(file, &sweep.root)), Vec::new())
        } else {
            let slot = sweep.validated[0].lock().unwrap_or_else(|e| e.into_inner());
            let base = slot.as_ref().expect("validated above");
            (base.seed, base.split_stages())
        };
        sweep.info.seed = base_seed;
        sweep.info.units = sweep
            .combinations
            .iter()
            .enumerate()
            .map(|(i, c)| UnitInfo {
                id: if sweep.info.matrix { sweep.matrix.name(i, c) } else { PLAIN_UNIT.to_string() },
                values: sweep.matrix.values_json(c),
                piece: None,
            })
            .collect();
        // A plain pipeline's units are the pieces of its split stages (a sweep's are its
        // combinations): the shards compute them, the merge runs the rest around them.
        if !split.is_empty() {
            sweep.info.units = split
                .iter()
                .flat_map(|(stage, pieces)| {
                    (0..*pieces).map(move |k| UnitInfo {
                        id: format!("{PLAIN_UNIT}/{stage}/{k}"),
                        values: Map::new(),
                        piece: Some(PieceOf { stage: stage.clone(), piece: k, pieces: *pieces }),
                    })
                })
                .collect();
            sweep.info.source = Some(PipelineSource {
                path: std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf()),
                text: sweep.text.clone(),
                seed_override: seed,
                gates: sweep.gates.iter().map(|g| g.to_string()).collect(),
            });
        }
        let mut hashed = sweep.text.clone();
        for g in &sweep.gates {
            hashed.push_str(&format!("\n--gate {g}"));
        }
        sweep.info.pipeline_hash = format!("{:016x}", fnv1a(hashed.as_bytes()));
        Ok(sweep)
    }

    /// The pipeline of unit `index` (its combination applied), validated: the one [`Sweep::load`]
    /// validated the first time it is asked for (nothing is read or asked of a server again),
    /// validated anew after that.
    pub fn pipeline(&self, index: usize) -> Result<Pipeline, ConfigError> {
        let kept = self.validated.get(index).and_then(|slot| slot.lock().unwrap_or_else(|e| e.into_inner()).take());
        let mut p = match kept {
            Some(p) => p,
            None => self.validate(index)?,
        };
        p.llm_answers = self.llm_answers.clone();
        Ok(p)
    }

    /// Validate the pipeline of unit `index` (its combination applied, the `--gate` conditions
    /// added).
    fn validate(&self, index: usize) -> Result<Pipeline, ConfigError> {
        let combination = &self.combinations[index];
        let doc = self.matrix.apply(&self.root, combination);
        let seed_swept = self.matrix.sweeps_seed();
        let mut p = Pipeline::from_root(&self.file, &self.text, &doc, if seed_swept { None } else { self.seed_override }, true)?;
        for g in &self.gates {
            p.add_gate(g.clone()).map_err(|e| ConfigError {
                problems: vec![crate::error::ConfigProblem { file: self.file.clone(), line: 1, col: 1, message: e.to_string() }],
            })?;
        }
        Ok(p)
    }

    /// The first combination's stages as `name (kind)` (for `validate`'s one-line answer), read
    /// from the pipeline validated at load (validated again only if it was handed out).
    pub fn stage_names(&self) -> Vec<String> {
        let names = |p: &Pipeline| p.stages.iter().map(|s| format!("{} ({})", s.name, s.kind.name)).collect();
        if let Some(p) = self.validated.first().and_then(|slot| slot.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(names)) {
            return p;
        }
        self.validate(0).map(|p| names(&p)).unwrap_or_default()
    }

    /// Run every unit into `out` (all or nothing, under its lock): a plain pipeline writes its
    /// usual result there; a sweep writes one subfolder per combination and, beside them,
    /// `summary.json`, `matrix.csv`, `matrix.json` and `report.html` comparing them.
    pub fn run(&self, out: &Path, jobs: usize, show: bool) -> Result<SweepReport> {
        crate::staging::check_target(out)?;
        let _lock = crate::staging::Lock::acquire(out)?;
        if !self.info.matrix {
            let run = self.pipeline(0)?.execute(show)?;
            run.write_unlocked(out, self.info.report)?;
            return Ok(SweepReport { gate_passed: gate_passed(&run.summary), summary: SweepSummary::Run(Box::new(run.summary)) });
        }
        let staging = crate::staging::Staging::begin(out)?;
        let all: Vec<usize> = (0..self.info.units.len()).collect();
        let summaries = self.run_units(&all, staging.dir(), jobs, show)?;
        let report = finish(&self.info, staging.dir(), &summaries)?;
        staging.commit()?;
        Ok(report)
    }

    /// Run units `indices` into subfolders of `dir` (named by unit id), up to `jobs` at once;
    /// returns each unit's summary by id. Stops taking new units after the first failure.
    fn run_units(&self, indices: &[usize], dir: &Path, jobs: usize, show: bool) -> Result<BTreeMap<String, Summary>> {
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let results: Mutex<BTreeMap<String, Summary>> = Mutex::new(BTreeMap::new());
        let first_error: Mutex<Option<Error>> = Mutex::new(None);
        let total = indices.len();
        let bar = crate::progress::bar("sweep", total as u64, "combinations", crate::progress::wanted(show));
        std::thread::scope(|scope| {
            for _ in 0..jobs.clamp(1, total.max(1)) {
                scope.spawn(|| loop {
                    if failed.load(Ordering::SeqCst) {
                        return;
                    }
                    let Some(&index) = indices.get(next.fetch_add(1, Ordering::SeqCst)) else { return };
                    let unit = &self.info.units[index];
                    let outcome = (|| -> Result<Summary> {
                        let run = self.pipeline(index)?.execute(false)?;
                        run.write_unlocked(&dir.join(&unit.id), self.info.report)?;
                        Ok(run.summary)
                    })();
                    match outcome {
                        Ok(summary) => {
                            bar.inc(1);
                            results.lock().unwrap_or_else(|e| e.into_inner()).insert(unit.id.clone(), summary);
                        }
                        Err(e) => {
                            failed.store(true, Ordering::SeqCst);
                            let mut slot = first_error.lock().unwrap_or_else(|e| e.into_inner());
                            if slot.is_none() {
                                *slot = Some(Error::Invalid(format!("combination `{}`: {e}", unit.id)));
                            }
                            return;
                        }
                    }
                });
            }
        });
        bar.finish_and_clear();
        if let Some(e) = first_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(e);
        }
        Ok(results.into_inner().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Write the sweep's combined files into `dir` (which holds each unit's subfolder) from the units'
/// summaries: `summary.json`, `matrix.csv`, `matrix.json` and (when `info.report`) `report.html`.
/// The same function finishes an unsharded sweep and a merge, so both write the same bytes.
pub fn finish(info: &SweepInfo, dir: &Path, summaries: &BTreeMap<String, Summary>) -> Result<SweepReport> {
    let rows: Vec<Row> = info
        .units
        .iter()
        .map(|u| {
            let summary = summaries.get(&u.id).ok_or_else(|| Error::Internal(format!("unit `{}` has no summary", u.id)))?;
            Ok(Row::from_summary(&u.id, u.values.clone(), summary))
        })
        .collect::<Result<_>>()?;
    let comparison = Comparison::new(info.keys.clone(), rows, info.best.clone());
    let gates: Vec<bool> = info.units.iter().filter_map(|u| summaries.get(&u.id).and_then(gate_passed)).collect();
    let gate_passed = (!gates.is_empty()).then(|| gates.iter().all(|&g| g));
    let failed: Vec<String> =
        info.units.iter().filter(|u| summaries.get(&u.id).and_then(gate_passed_of) == Some(false)).map(|u| u.id.clone()).collect();
    let summary = MatrixSummary::new(info, &comparison, gate_passed, failed);
    let csv = dir.join("matrix.csv");
    write_atomic(&csv, |f| std::io::Write::write_all(f, comparison.to_csv().as_bytes()).map_err(|e| e.to_string()))?;
    write_json(&dir.join("matrix.json"), &serde_json::to_value(&summary.combinations).map_err(|e| Error::Internal(e.to_string()))?)?;
    if info.report {
        let html = report(info, &comparison, gate_passed);
        write_atomic(&dir.join("report.html"), |f| std::io::Write::write_all(f, html.as_bytes()).map_err(|e| e.to_string()))?;
    }
    write_json(&dir.join("summary.json"), &summary.to_json())?;
    Ok(SweepReport { summary: SweepSummary::Matrix(Box::new(summary)), gate_passed })
}

/// Whether a run's gate passed (`None`: it has no gate).
fn gate_passed(summary: &Summary) -> Option<bool> {
    summary.gate.as_ref().map(|g| g.passed)
}

/// [`gate_passed`] for filter_map over references.
fn gate_passed_of(summary: &Summary) -> Option<bool> {
    gate_passed(summary)
}

/// The sweep's `report.html` (template `sweep.html`, with the run report's style): what was
/// swept, the gate, and the comparison table.
fn report(info: &SweepInfo, comparison: &Comparison, gate: Option<bool>) -> String {
    let matrix: Vec<minijinja::Value> = info
        .keys
        .iter()
        .map(|key| {
            let mut values: Vec<String> = Vec::new();
            for value in info.units.iter().filter_map(|u| u.values.get(key)).map(|v| v.to_string()) {
                if !values.contains(&value) {
                    values.push(value);
                }
            }
            minijinja::context! { name => key, values => values }
        })
        .collect();
    let ctx = minijinja::context! {
        name => info.pipeline.as_str(),
        file => info.file.as_deref().unwrap_or(""),
        seed => info.seed.to_string(),
        combinations => info.units.len(),
        version => info.fairpipe_version.as_str(),
        pipeline_hash => info.pipeline_hash.as_str(),
        style => crate::report::STYLE,
        gate => gate,
        matrix => matrix,
        comparison => comparison.page_context(),
    };
    match crate::report::render_template("sweep.html", ctx) {
        Ok(html) if html.ends_with('\n') => html,
        Ok(html) => html + "\n",
        Err(e) => format!(
            "<!DOCTYPE html><html lang=\"en\"><body><p>The sweep's page could not be rendered: {}. The figures are in matrix.csv and matrix.json.</p></body></html>\n",
            crate::report::esc(&e.to_string())
        ),
    }
}

/// Problems in file order, each once (combinations repeat the same problem).
fn dedup(mut problems: Vec<crate::error::ConfigProblem>) -> Vec<crate::error::ConfigProblem> {
    let mut seen = std::collections::HashSet::new();
    problems.retain(|p| seen.insert((p.line, p.col, p.message.clone())));
    problems.sort_by_key(|p| (p.line, p.col));
    problems
}

/// FNV-1a, 64 bits: identifies a pipeline text (not a cryptographic hash).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep's page comes from the report's templates: what a pipeline names (its name, a
    /// matrix value) is escaped there, the best combination is highlighted and linked, the gate said.
    #[test]
    fn the_sweep_page_escapes_what_the_pipeline_names_and_highlights_the_best() {
        let info: SweepInfo = serde_json::from_value(serde_json::json!({
            "pipeline": "credit <b>audit</b>", "file": "p.toml", "seed": 7, "pipeline_hash": "00ff",
            "fairpipe_version": "0.1.0", "matrix": true, "keys": ["label"], "best": null, "report": true,
            "units": [{"id": "01_label=a", "values": {"label": "<script>x</script>"}}, {"id": "02_label=b", "values": {"label": "b"}}]
        }))
        .unwrap();
        let row = |name: &str, rate: f64| Row {
            name: name.into(),
            values: Map::new(),
            seed: Value::from(7),
            figures: vec![("est.rate".into(), Value::from(rate))],
        };
        let comparison =
            Comparison::new(info.keys.clone(), vec![row("01_label=a", 0.2), row("02_label=b", 0.1)], Some("min est.rate".parse().unwrap()));
        let html = report(&info, &comparison, Some(false));
        assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"), "{html}");
        assert!(!html.contains("<script>") && !html.contains("<b>audit</b>"), "{html}");
        assert!(html.contains("&lt;script&gt;") && html.contains("credit &lt;b&gt;audit&lt;&#x2f;b&gt;"), "{html}");
        assert!(
            html.contains("<tr class=\"ok\"><td><a href=\"02_label=b/report.html\">02_label=b</a></td><td>7</td><td></td><td>0.1000</td>"),
            "{html}"
        );
        assert!(html.contains("Best by <code>min est.rate</code>: <b>02_label=b</b>"), "{html}");
        assert!(html.contains("<p class=\"flag\">Gate: FAILED in at least one combination</p>"), "{html}");
        assert!(html.contains(crate::report::STYLE), "the report's style");
    }
}
