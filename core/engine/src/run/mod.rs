//! The runner, above the stages: a pipeline is a TOML file of named stages forming a DAG. [`Pipeline::load`] reads and validates the
//! whole file (every problem located as `file:line:col`); [`Pipeline::run`] executes the stages in
//! dependency order and writes the results.

pub mod builder;
pub mod registry;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Map, Value};

use crate::error::{ConfigError, ConfigProblem, Error, Result};
use crate::output::{write_atomic, write_json, write_table, Table};
use crate::pieces::Piece;
use crate::stage::kind::{StageEnv, StageKind, StageTable};
use crate::stage::problems::Problems;
use crate::stage::toml_spans::{self, Sp, Val};
use crate::stage::{Artifact, Inputs, Stage, StageContext};
use crate::suggest::hint;

/// A stage as read in phase two: name, kind, inputs by role, and the configured stage (if valid).
type BuiltStage = (Sp<String>, &'static StageKind, BTreeMap<String, Sp<String>>, Option<Box<dyn Stage>>);

/// A validated stage, ready to run.
pub struct PlannedStage {
    /// The stage's name (its key under `[stages]`).
    pub name: String,
    /// Its kind.
    pub kind: &'static StageKind,
    /// Role → name of the stage it reads.
    pub inputs: BTreeMap<String, String>,
    /// The configured stage.
    pub stage: Box<dyn Stage>,
}

/// A validated pipeline, stages in execution order.
pub struct Pipeline {
    /// The pipeline file.
    pub file: PathBuf,
    /// `[pipeline] name`, or the file stem.
    pub name: String,
    /// The run seed.
    pub seed: u64,
    /// `[pipeline] out`, resolved against the file's folder, if given.
    pub out: Option<PathBuf>,
    /// `[pipeline] report`: whether `report.html` is written (default true).
    pub report: bool,
    /// `[pipeline] plugin_path`: folders searched for plugin libraries, resolved against the
    /// file's folder, before `FAIRPIPE_PLUGIN_PATH` and the executable's folder.
    pub plugin_path: Vec<PathBuf>,
    /// Stages in dependency order.
    pub stages: Vec<PlannedStage>,
    /// `[gate] conditions` (and `--gate`): checked after the run, results in `summary.json`'s
    /// `gate` section.
    pub gate: Vec<crate::gate::Condition>,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The summary written to `summary.json`.
    pub summary: Value,
    /// Every file written.
    pub files: Vec<PathBuf>,
}

/// A stable 64-bit seed for stage `name` under pipeline seed `seed` (FNV-1a, then SplitMix64).
pub fn stage_seed(seed: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = h ^ seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Pipeline {
    /// Read and validate `file`; `seed` overrides `[pipeline] seed`.
    pub fn load(file: &Path, seed: Option<u64>) -> Result<Pipeline, ConfigError> {
        let text = read_text(file)?;
        Self::parse(file, &text, seed)
    }

    /// Validate pipeline `text` as if read from `file`.
    pub fn parse(file: &Path, text: &str, seed_override: Option<u64>) -> Result<Pipeline, ConfigError> {
        let root = parse_root(file, text)?;
        Self::from_root(file, text, &root, seed_override, false)
    }

    /// Validate the parsed pipeline `root` (of `text`, read from `file`). `in_sweep`: the caller
    /// has taken the `[matrix]` table out and applied one of its combinations
    /// ([`crate::sweep`]); otherwise a `[matrix]` table is refused here.
    pub(crate) fn from_root(
        file: &Path,
        text: &str,
        root: &Sp<Val>,
        seed_override: Option<u64>,
        in_sweep: bool,
    ) -> Result<Pipeline, ConfigError> {
        let mut p = Problems::new(file, text);
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let Val::Table(top) = &root.v else { unreachable!("a TOML document is a table") };

        let mut name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "pipeline".into());
        let mut seed = 0u64;
        let mut out = None;
        let mut report = true;
        let mut plugin_path: Vec<PathBuf> = Vec::new();
        let mut stage_entries: Option<&Sp<Val>> = None;
        let mut gate: Vec<(crate::gate::Condition, std::ops::Range<usize>)> = Vec::new();
        for (k, v) in top {
            match k.v.as_str() {
                "pipeline" => match &v.v {
                    Val::Table(entries) => {
                        for (pk, pv) in entries {
                            match (pk.v.as_str(), &pv.v) {
                                ("name", Val::Str(s)) => name = s.clone(),
                                ("seed", Val::Int(i)) if *i >= 0 => seed = *i as u64,
                                ("out", Val::Str(s)) => out = Some(dir.join(s)),
                                ("description", Val::Str(_)) => {}
                                ("report", Val::Bool(b)) => report = *b,
                                ("plugin_path", Val::Str(s)) => plugin_path = vec![dir.join(s)],
                                ("plugin_path", Val::Array(items)) => {
                                    for item in items {
                                        match &item.v {
                                            Val::Str(s) => plugin_path.push(dir.join(s)),
                                            other => p.at(
                                                &item.span,
                                                format!(
                                                    "[pipeline] `plugin_path` must list folders (strings), found {}",
                                                    other.type_name()
                                                ),
                                            ),
                                        }
                                    }
                                }
                                ("plugin_path", other) => p.at(
                                    &pv.span,
                                    format!("[pipeline] `plugin_path` must be a folder or a list of folders, found {}", other.type_name()),
                                ),
                                ("report", other) => {
                                    p.at(&pv.span, format!("[pipeline] `report` must be true or false, found {}", other.type_name()))
                                }
                                ("name" | "out" | "description", other) => {
                                    p.at(&pv.span, format!("[pipeline] `{}` must be a string, found {}", pk.v, other.type_name()))
                                }
                                ("seed", _) => p.at(&pv.span, "[pipeline] `seed` must be a non-negative integer"),
                                (other, _) => p.at(
                                    &pk.span,
                                    format!(
                                        "[pipeline]: unknown key `{other}`{}; accepted: name, seed, out, description, report, plugin_path",
                                        hint(other, &["name", "seed", "out", "description", "report", "plugin_path"])
                                    ),
                                ),
                            }
                        }
                    }
                    other => p.at(&v.span, format!("`pipeline` must be a table, found {}", other.type_name())),
                },
                "stages" => stage_entries = Some(v),
                "gate" => gate = gate_conditions(v, &mut p),
                "matrix" if in_sweep => {}
                "matrix" => p.at(
                    &k.span,
                    "[matrix] makes this file a sweep: run it with `fairpipe run` (or load it with fairpipe_core::sweep::Sweep)",
                ),
                other => p.at(
                    &k.span,
                    format!(
                        "unknown top-level key `{other}`{}; a pipeline has [pipeline], [stages.NAME], [gate] and [matrix] tables",
                        hint(other, &["pipeline", "stages", "gate", "matrix"])
                    ),
                ),
            }
        }
        let seed = seed_override.unwrap_or(seed);
        let stages_table: &[(Sp<String>, Sp<Val>)] = match stage_entries.map(|s| &s.v) {
            Some(Val::Table(t)) => t,
            Some(other) => {
                p.at(
                    &stage_entries.map(|s| s.span.clone()).unwrap_or(0..0),
                    format!("`stages` must be a table of stage tables, found {}", other.type_name()),
                );
                &[]
            }
            None => &[],
        };
        if stages_table.is_empty() {
            p.at(&(0..0), "the pipeline has no stages; add [stages.NAME] tables with a `kind`");
        }

        // Phase two: each stage's kind and keys.
        let kind_names: Vec<&str> = registry::STAGE_KINDS.iter().map(|k| k.name).collect();
        // "Did you mean" per distinct unknown kind, computed once (a file may repeat one typo
        // many times).
        let mut kind_hints: std::collections::HashMap<String, String> = std::collections::HashMap::new();
        let mut built: Vec<BuiltStage> = Vec::new();
        for (stage_name, body) in stages_table {
            if let Some(problem) = stage_name_problem(&stage_name.v) {
                p.at(&stage_name.span, format!("stage `{}`: {problem}", stage_name.v));
                continue;
            }
            let Val::Table(entries) = &body.v else {
                p.at(&body.span, format!("stage `{}` must be a table, found {}", stage_name.v, body.v.type_name()));
                continue;
            };
            let kind = entries.iter().find(|(k, _)| k.v == "kind");
            let kind = match kind.map(|(_, v)| &v.v) {
                None => {
                    p.at(&stage_name.span, format!("stage `{}`: missing `kind`; one of {}", stage_name.v, kind_names.join(", ")));
                    continue;
                }
                Some(Val::Str(k)) => match registry::find(k) {
                    Some(kind) => kind,
                    None => {
                        let span = &kind.map(|(_, v)| v.span.clone()).unwrap_or_default();
                        p.at(
                            span,
                            format!(
                                "stage `{}`: unknown stage kind `{k}`{}; kinds: {}",
                                stage_name.v,
                                kind_hints.entry(k.clone()).or_insert_with(|| hint(k, &kind_names)),
                                kind_names.join(", ")
                            ),
                        );
                        continue;
                    }
                },
                Some(other) => {
                    p.at(
                        &kind.map(|(_, v)| v.span.clone()).unwrap_or_default(),
                        format!("stage `{}`: `kind` must be a string, found {}", stage_name.v, other.type_name()),
                    );
                    continue;
                }
            };
            let mut inputs = BTreeMap::new();
            let mut config_entries = Vec::new();
            for entry in entries {
                let (key, value) = entry;
                if key.v == "kind" {
                    continue;
                }
                if !kind.inputs.iter().any(|i| i.role == key.v) {
                    config_entries.push(entry);
                    continue;
                }
                match &value.v {
                    Val::Str(target) => {
                        inputs.insert(key.v.clone(), Sp { v: target.clone(), span: value.span.clone() });
                    }
                    other => {
                        p.at(&value.span, format!("stage `{}`: `{}` must be a string, found {}", stage_name.v, key.v, other.type_name()))
                    }
                }
            }
            for input in kind.inputs {
                if input.required && !entries.iter().any(|(k, _)| k.v == input.role) {
                    p.at(
                        &stage_name.span,
                        format!(
                            "stage `{}` ({}): missing input `{}` ({}): name the stage it reads",
                            stage_name.v, kind.name, input.role, input.doc
                        ),
                    );
                }
            }
            let table = StageTable { name: &stage_name.v, header: stage_name.span.clone(), entries: config_entries };
            let env = StageEnv {
                dir: dir.clone(),
                seed: stage_seed(seed, &stage_name.v),
                plugin_path: plugin_path.clone(),
                kinds: registry::STAGE_KINDS,
            };
            let stage = (kind.configure)(kind, &table, &env, &mut p);
            built.push((stage_name.clone(), kind, inputs, stage));
        }

        // The graph: every input names an existing stage of a fitting kind, and there is no cycle.
        let by_name: BTreeMap<&str, &'static StageKind> = built.iter().map(|(n, k, _, _)| (n.v.as_str(), *k)).collect();
        // Stages whose own table is broken still exist: name them, but do not judge their kind.
        let stage_names: Vec<&str> = stages_table.iter().map(|(n, _)| n.v.as_str()).collect();
        let stage_name_set: std::collections::BTreeSet<&str> = stage_names.iter().copied().collect();
        for (name, kind, inputs, _) in &built {
            for (role, target) in inputs {
                let doc = kind.inputs.iter().find(|i| i.role == role).expect("declared role");
                match by_name.get(target.v.as_str()) {
                    None if stage_name_set.contains(target.v.as_str()) => {}
                    None => p.at(
                        &target.span,
                        format!(
                            "stage `{}`: input `{role}` names stage `{}`, which does not exist{}",
                            name.v,
                            target.v,
                            if stage_names.len() <= MAX_HINT_CANDIDATES { hint(&target.v, &stage_names) } else { String::new() }
                        ),
                    ),
                    Some(t) if !doc.accepts.contains(&t.output) => p.at(
                        &target.span,
                        format!(
                            "stage `{}`: input `{role}` expects {}, but stage `{}` is a `{}` stage producing {}",
                            name.v,
                            doc.accepts.iter().map(|a| a.name()).collect::<Vec<_>>().join(" or "),
                            target.v,
                            t.name,
                            t.output.name()
                        ),
                    ),
                    Some(_) => {}
                }
            }
        }
        for (c, span) in &gate {
            if !stage_names.contains(&c.stage()) {
                p.at(span, format!("[gate] `{c}`: no stage `{}`{}", c.stage(), hint(c.stage(), &stage_names)));
            }
        }
        let order = topological_order(
            &built
                .iter()
                .map(|(n, _, i, _)| (n.v.clone(), i.values().map(|t| t.v.clone()).collect()))
                .collect::<Vec<(String, Vec<String>)>>(),
        );
        let order = match order {
            Ok(o) => o,
            Err(cycle) => {
                let span = built.iter().find(|(n, ..)| n.v == cycle[0]).map(|(n, ..)| n.span.clone()).unwrap_or_default();
                let chain = if cycle.len() > 12 {
                    format!("{} → … → {} ({} stages)", cycle[..6].join(" → "), cycle[cycle.len() - 3..].join(" → "), cycle.len() - 1)
                } else {
                    cycle.join(" → ")
                };
                p.at(&span, format!("the stages form a cycle: {chain}"));
                Vec::new()
            }
        };
        p.into_result()?;
        let mut slots: Vec<Option<PlannedStage>> = built
            .into_iter()
            .map(|(n, kind, inputs, stage)| {
                stage.map(|stage| PlannedStage { name: n.v, kind, inputs: inputs.into_iter().map(|(r, t)| (r, t.v)).collect(), stage })
            })
            .collect();
        let stages = order.into_iter().filter_map(|i| slots[i].take()).collect();
        let gate = gate.into_iter().map(|(c, _)| c).collect();
        Ok(Pipeline { file: file.to_path_buf(), name, seed, out, report, plugin_path, stages, gate })
    }

    /// Add a gate condition (from `--gate`); an error when it reads a stage the pipeline lacks.
    pub fn add_gate(&mut self, condition: crate::gate::Condition) -> std::result::Result<(), String> {
        let names: Vec<&str> = self.stages.iter().map(|s| s.name.as_str()).collect();
        if !names.contains(&condition.stage()) {
            return Err(format!(
                "--gate `{condition}`: no stage `{}` in {}{}",
                condition.stage(),
                self.file.display(),
                hint(condition.stage(), &names)
            ));
        }
        self.gate.push(condition);
        Ok(())
    }

    /// Run every stage in order and, when all succeed, write the results into `out_dir`. Nothing
    /// is written when a stage fails: the out folder and the `save` paths are checked first, the
    /// folder is locked against a second run for the whole run, and the results are written into a
    /// staging folder moved into place at the end ([`crate::staging`]).
    pub fn run(&self, out_dir: &Path, show_progress: bool) -> Result<RunReport> {
        crate::staging::check_target(out_dir)?;
        let _lock = crate::staging::Lock::acquire(out_dir)?;
        let run = self.execute(show_progress)?;
        let files = run.write_unlocked(out_dir, self.report)?;
        Ok(RunReport { summary: run.summary, files })
    }

    /// Run every stage in order and keep the results in memory (nothing is written): the
    /// summary, the typed figures through [`Run::figures`], the tables and the artifacts.
    pub fn execute(&self, show_progress: bool) -> Result<Run> {
        Ok(self.execute_with(show_progress, &mut PieceMode::Whole)?.0)
    }

    /// The stages whose work splits into pieces and that a sharded run deals out, with their
    /// piece counts, in order: every stage with [`Stage::pieces`] above 0 that does not read
    /// (directly or through others) another such stage — one that does runs whole, after the
    /// merge.
    pub fn split_stages(&self) -> Vec<(String, usize)> {
        let mut below_split: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
        let mut split = Vec::new();
        for planned in &self.stages {
            let upstream = planned.inputs.values().any(|t| below_split.contains(t.as_str()));
            let pieces = planned.stage.pieces();
            if pieces > 0 && !upstream {
                split.push((planned.name.clone(), pieces));
            }
            if pieces > 0 || upstream {
                below_split.insert(&planned.name);
            }
        }
        split
    }

    /// The stages that `names` read, directly or through others (not `names` themselves).
    fn ancestors_of(&self, names: &[String]) -> std::collections::BTreeSet<String> {
        let mut found: std::collections::BTreeSet<String> = names.iter().cloned().collect();
        for planned in self.stages.iter().rev() {
            if found.contains(&planned.name) {
                found.extend(planned.inputs.values().cloned());
            }
        }
        found.retain(|n| !names.contains(n));
        found
    }

    /// [`Pipeline::execute`], with the split stages treated as `mode` says. In
    /// [`PieceMode::Compute`] only the pieces asked for and the stages they read run (the
    /// returned [`Run`] holds those stages' figures); the pieces come back in stage and piece
    /// order.
    pub(crate) fn execute_with(&self, show_progress: bool, mode: &mut PieceMode) -> Result<(Run, Vec<ComputedPiece>)> {
        let needed = match mode {
            PieceMode::Compute(held) => Some(self.ancestors_of(&held.keys().cloned().collect::<Vec<_>>())),
            _ => None,
        };
        let mut computed: Vec<ComputedPiece> = Vec::new();
        let mut artifacts: BTreeMap<String, Artifact> = BTreeMap::new();
        let mut stage_figures = Map::new();
        let mut tables: Vec<(String, Table)> = Vec::new();
        let mut extra_files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        // Every stage's warnings, in run order, as {"stage", "message"}.
        let mut warnings: Vec<Value> = Vec::new();
        let show = crate::progress::wanted(show_progress);
        // Warnings of the checks made before a stage runs (`Stage::preflight`), by stage name;
        // the stage keeps them when it runs.
        let mut early_warnings: BTreeMap<String, crate::warnings::Warnings> = BTreeMap::new();
        for (position, planned) in self.stages.iter().enumerate() {
            let held = match mode {
                PieceMode::Compute(held) => held.get(&planned.name).cloned(),
                _ => None,
            };
            if held.is_none() && needed.as_ref().is_some_and(|n| !n.contains(&planned.name)) {
                continue;
            }
            let mut inputs = Inputs::default();
            for (role, target) in &planned.inputs {
                let artifact =
                    artifacts.get(target).cloned().ok_or_else(|| Error::Invalid(format!("stage `{target}` produced nothing")))?;
                inputs.by_role.insert(role.clone(), artifact);
            }
            let progress = crate::progress::stage(&planned.name, planned.kind.name, show);
            let mut ctx = StageContext::new(&planned.name, stage_seed(self.seed, &planned.name));
            ctx.progress = progress;
            if let Some(early) = early_warnings.remove(&planned.name) {
                ctx.warnings = early;
            }
            let started = Instant::now();
            let in_stage =
                |e: Error| Error::Stage { stage: planned.name.clone(), kind: planned.kind.name.to_string(), source: Box::new(e) };
            if let Some(held) = held {
                for k in held {
                    computed.push((planned.name.clone(), k, planned.stage.run_piece(&ctx, &inputs, k).map_err(in_stage)?));
                }
                ctx.progress.finish_and_clear();
                continue;
            }
            let output = match mode {
                PieceMode::Combine(pieces) if pieces.contains_key(&planned.name) => {
                    let mine = pieces.remove(&planned.name).unwrap_or_default();
                    planned.stage.combine(&ctx, &inputs, mine)
                }
                _ => planned.stage.run(&ctx, &inputs),
            }
            .map_err(in_stage)?;
            ctx.progress.finish_and_clear();
            let mut figures = Map::new();
            figures.insert("kind".into(), json!(planned.kind.name));
            figures.insert("elapsed_s".into(), json!(started.elapsed().as_secs_f64()));
            figures.insert("model_queries".into(), json!(output.model_queries));
            figures.insert("inputs".into(), json!(planned.inputs));
            for (k, v) in output.figures {
                figures.insert(k, v);
            }
            let stage_warnings = ctx.warnings.take();
            if !stage_warnings.is_empty() {
                figures.insert("warnings".into(), json!(stage_warnings));
            }
            warnings.extend(stage_warnings.into_iter().map(|message| json!({ "stage": planned.name, "message": message })));
            stage_figures.insert(planned.name.clone(), Value::Object(figures));
            for t in output.tables {
                tables.push((planned.name.clone(), t));
            }
            extra_files.extend(ctx.files.into_inner().unwrap_or_else(|e| e.into_inner()));
            if let Artifact::Dataset(data) = &output.artifact {
                self.preflight_after(position, data, &mut early_warnings)?;
            }
            artifacts.insert(planned.name.clone(), output.artifact);
        }
        // A model behind a server: its traffic over the whole run, under the stage that loaded it.
        for (name, artifact) in &artifacts {
            if let (Artifact::Model(model), Some(Value::Object(figures))) = (artifact, stage_figures.get_mut(name)) {
                if let Some(usage) = model.oracle.model().remote_usage() {
                    figures.insert("remote".into(), serde_json::to_value(usage).unwrap_or(Value::Null));
                }
            }
        }
        let mut summary = json!({
            "pipeline": self.name,
            "file": self.file.file_name().map(|f| f.to_string_lossy().into_owned()),
            "seed": self.seed,
            "fairpipe_version": env!("CARGO_PKG_VERSION"),
            "stage_order": self.stages.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            "stages": Value::Object(stage_figures),
            "warnings": warnings,
        });
        if !self.gate.is_empty() {
            summary["gate"] = crate::gate::section(&crate::gate::evaluate(&self.gate, &summary));
        }
        Ok((Run { summary, tables, extra_files, artifacts }, computed))
    }
}

/// A piece computed by [`Pipeline::execute_with`]: its stage's name, its number and its result.
pub(crate) type ComputedPiece = (String, usize, Piece);

/// How [`Pipeline::execute_with`] treats the stages that split into pieces.
pub(crate) enum PieceMode {
    /// Run every stage whole: the ordinary run.
    Whole,
    /// Compute these pieces (stage name → piece numbers) and the stages they read; nothing else.
    Compute(BTreeMap<String, Vec<usize>>),
    /// Run every stage, the split ones from all their pieces (stage name → pieces in order).
    Combine(BTreeMap<String, Vec<Piece>>),
}

impl Pipeline {
    /// Once the stage at `position` has loaded `data`, run the checks of every later stage whose
    /// audit descends from it and that no earlier dataset has checked: a limit the audit would
    /// pass stops the run now, before the stages in between (training, say) take their time.
    fn preflight_after(
        &self,
        position: usize,
        data: &crate::data::Dataset,
        early_warnings: &mut BTreeMap<String, crate::warnings::Warnings>,
    ) -> Result<()> {
        let source = &self.stages[position].name;
        // The stages that read `source`, directly or through others: stages are in execution
        // order, so one forward pass finds them all.
        let mut descendants: std::collections::BTreeSet<&str> = std::collections::BTreeSet::from([source.as_str()]);
        for planned in &self.stages[position + 1..] {
            if !planned.inputs.values().any(|target| descendants.contains(target.as_str())) {
                continue;
            }
            descendants.insert(&planned.name);
            if early_warnings.contains_key(&planned.name) {
                continue;
            }
            let warnings = crate::warnings::Warnings::with_prefix(format!("stage `{}`: ", planned.name));
            planned.stage.preflight(data, &warnings).map_err(|e| Error::Stage {
                stage: planned.name.clone(),
                kind: planned.kind.name.to_string(),
                source: Box::new(Error::Invalid(format!("checked as soon as `{source}` was loaded, before it runs: {e}"))),
            })?;
            early_warnings.insert(planned.name.clone(), warnings);
        }
        Ok(())
    }
}

/// The text of pipeline file `file` (a folder, an unreadable file or invalid UTF-8 is an error at
/// `file:line:col`).
pub(crate) fn read_text(file: &Path) -> Result<String, ConfigError> {
    let problem = |line: usize, col: usize, message: String| ConfigError {
        problems: vec![ConfigProblem { file: file.to_path_buf(), line, col, message }],
    };
    if file.is_dir() {
        return Err(problem(1, 1, "is a folder, not a pipeline file; name a .toml file".into()));
    }
    let bytes = std::fs::read(file).map_err(|e| problem(1, 1, format!("cannot read the pipeline file: {e}")))?;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            // Locate the first invalid byte in the valid text before it.
            let at = e.utf8_error().valid_up_to();
            let bytes = e.as_bytes();
            let valid = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
            let (line, col) = toml_spans::line_col(valid, at);
            return Err(problem(
                line,
                col,
                format!("invalid UTF-8 (byte 0x{:02x} at byte offset {at}); a pipeline file must be UTF-8 text", bytes[at]),
            ));
        }
    };
    Ok(text)
}

/// Phase one of reading a pipeline: the TOML text as spanned values (a syntax error located as
/// `file:line:col`).
pub(crate) fn parse_root(file: &Path, text: &str) -> Result<Sp<Val>, ConfigError> {
    toml_spans::parse(text).map_err(|(message, span)| {
        let mut p = Problems::new(file, text);
        p.at(&span, format!("invalid TOML: {message}"));
        p.into_result().err().unwrap_or(ConfigError { problems: Vec::new() })
    })
}

/// The conditions of a `[gate]` table (`conditions = ["STAGE.FIELD OP NUMBER", …]`), each with
/// its span; problems are recorded.
fn gate_conditions(v: &Sp<Val>, p: &mut Problems) -> Vec<(crate::gate::Condition, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let Val::Table(entries) = &v.v else {
        p.at(&v.span, format!("`gate` must be a table (`[gate]` with `conditions = [...]`), found {}", v.v.type_name()));
        return out;
    };
    for (k, val) in entries {
        match (k.v.as_str(), &val.v) {
            ("conditions", Val::Array(items)) => {
                for item in items {
                    match &item.v {
                        Val::Str(s) => match s.parse::<crate::gate::Condition>() {
                            Ok(c) => out.push((c, item.span.clone())),
                            Err(e) => p.at(&item.span, format!("[gate] {e}")),
                        },
                        other => p.at(&item.span, format!("[gate] a condition must be a string, found {}", other.type_name())),
                    }
                }
            }
            ("conditions", other) => p.at(&val.span, format!("[gate] `conditions` must be a list of strings, found {}", other.type_name())),
            (other, _) => p.at(&k.span, format!("[gate]: unknown key `{other}`{}; accepted: conditions", hint(other, &["conditions"]))),
        }
    }
    out
}

/// A finished run, in memory.
pub struct Run {
    /// What `summary.json` holds.
    pub summary: Value,
    /// Result tables by stage name.
    pub tables: Vec<(String, Table)>,
    /// Files stages asked to write (path, contents), e.g. a saved model.
    pub extra_files: Vec<(PathBuf, Vec<u8>)>,
    /// What each stage produced, by stage name.
    pub artifacts: BTreeMap<String, Artifact>,
}

/// Stage `stage`'s figures in `summary`, read as `F` (e.g. [`crate::stages::estimate::EstimateFigures`]).
fn figures_in<F: serde::de::DeserializeOwned>(summary: &Value, stage: &str) -> Result<F> {
    let entry = summary["stages"].get(stage).ok_or_else(|| Error::Invalid(format!("no stage `{stage}` in the run")))?;
    serde_json::from_value(entry.clone()).map_err(|e| Error::Invalid(format!("stage `{stage}`: figures do not read as expected: {e}")))
}

impl Run {
    /// Stage `stage`'s typed figures, e.g. `run.figures::<EstimateFigures>("estimate")`.
    pub fn figures<F: serde::de::DeserializeOwned>(&self, stage: &str) -> Result<F> {
        figures_in(&self.summary, stage)
    }

    /// Stage `stage`'s result table, if it has one.
    pub fn table(&self, stage: &str) -> Option<&polars::prelude::DataFrame> {
        self.tables.iter().find(|(s, _)| s == stage).map(|(_, t)| &t.frame)
    }

    /// Write the tables, the files stages asked for, `report.html` (when `report`) and
    /// `summary.json` into `out_dir`, all or nothing, under the folder's lock; returns every path
    /// written.
    pub fn write(&self, out_dir: &Path, report: bool) -> Result<Vec<PathBuf>> {
        crate::staging::check_target(out_dir)?;
        let _lock = crate::staging::Lock::acquire(out_dir)?;
        self.write_unlocked(out_dir, report)
    }

    /// [`Run::write`] for a caller holding the lock: everything goes into a staging folder first,
    /// the files stages asked for into temporary files beside their places; then the staging
    /// folder is moved into place and the temporary files renamed. A failure (or Ctrl-C) before
    /// that leaves the previous result and files untouched.
    pub(crate) fn write_unlocked(&self, out_dir: &Path, report: bool) -> Result<Vec<PathBuf>> {
        let (summary, tables) = (&self.summary, &self.tables);
        let staging = crate::staging::Staging::begin(out_dir)?;
        let dir = staging.dir().to_path_buf();
        let mut staged = Vec::new();
        for (stage, table) in tables {
            let stem = if table.suffix.is_empty() { stage.clone() } else { format!("{stage}_{}", table.suffix) };
            staged.extend(write_table(&dir, &stem, table)?);
        }
        if report {
            let html = crate::report::render(summary, tables);
            let path = dir.join("report.html");
            write_atomic(&path, |f| f.write_all(html.as_bytes()).map_err(|e| e.to_string()))?;
            staged.push(path);
        }
        let summary_path = dir.join("summary.json");
        write_json(&summary_path, summary)?;
        staged.push(summary_path);
        crate::output::fail_point("before-commit")?;
        let mut files: Vec<PathBuf> = staged.iter().map(|p| staging.final_path(p)).collect();
        let pending = crate::output::PendingFiles::prepare(&self.extra_files)?;
        staging.commit()?;
        files.extend(pending.commit()?);
        Ok(files)
    }
}

impl RunReport {
    /// Stage `stage`'s typed figures, e.g. `report.figures::<EstimateFigures>("estimate")`.
    pub fn figures<F: serde::de::DeserializeOwned>(&self, stage: &str) -> Result<F> {
        figures_in(&self.summary, stage)
    }
}

/// Stage names give file names in the out folder: letters, digits, `_` and `-`, not starting with `-`.
fn stage_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("a stage needs a name".into());
    }
    if name.len() > 100 {
        return Some(format!("the name is {} characters long; at most 100", name.len()));
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-')) {
        return Some(format!("the name has {c:?}; a stage name names its result files, so it may hold only letters, digits, `_` and `-`"));
    }
    if name.starts_with('-') {
        return Some("a stage name may not start with `-`".into());
    }
    None
}

/// Above this many stages, "did you mean" is not computed for unknown stage names (it compares
/// every pair, which would make validation quadratic in the file).
const MAX_HINT_CANDIDATES: usize = 1000;

/// Order nodes so each comes after the nodes it reads (file order among the ready ones); on a
/// cycle, return its chain of names, first name repeated at the end. Iterative, so a chain of any
/// length is ordered without deep recursion.
pub(crate) fn topological_order(nodes: &[(String, Vec<String>)]) -> std::result::Result<Vec<usize>, Vec<String>> {
    let index: BTreeMap<&str, usize> = nodes.iter().enumerate().map(|(i, (n, _))| (n.as_str(), i)).collect();
    let deps: Vec<Vec<usize>> = nodes.iter().map(|(_, d)| d.iter().filter_map(|t| index.get(t.as_str()).copied()).collect()).collect();
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut state = vec![0u8; nodes.len()];
    let mut order = Vec::new();
    for root in 0..nodes.len() {
        if state[root] != 0 {
            continue;
        }
        // (node, index of the next dependency to visit)
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        state[root] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&d) = deps[node].get(*next) {
                *next += 1;
                match state[d] {
                    0 => {
                        state[d] = 1;
                        stack.push((d, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|&(s, _)| s == d).unwrap_or(0);
                        let mut cycle: Vec<String> = stack[from..].iter().map(|&(s, _)| nodes[s].0.clone()).collect();
                        cycle.push(nodes[d].0.clone());
                        return Err(cycle);
                    }
                    _ => {}
                }
            } else {
                state[node] = 2;
                order.push(node);
                stack.pop();
            }
        }
    }
    Ok(order)
}
