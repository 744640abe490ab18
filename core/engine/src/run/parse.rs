//! Reading a pipeline: the TOML text (phase one, spanned values), the `[pipeline]` header and the
//! top-level tables, each stage's kind, inputs and typed config (phase two, through the kind's
//! `configure`), and the graph (inputs of fitting kinds, no cycle, gate conditions naming
//! stages). Every problem is collected and located, so a file shows all its problems at once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{registry, stage_seed, Pipeline, PlannedStage, StagePlaces};
use crate::error::{ConfigError, ConfigProblem};
use crate::stage::kind::{StageEnv, StageKind, StageTable};
use crate::stage::problems::Problems;
use crate::stage::Stage;
use crate::suggest::hint;
use fairpipe_data::toml_spans::{self, Sp, Val};

/// A stage as read in phase two: name, kind, inputs by role, and the configured stage (if valid).
type BuiltStage = (Sp<String>, &'static StageKind, BTreeMap<String, Sp<String>>, Option<Box<dyn Stage>>, StagePlaces);

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
        let header = read_header(file, &dir, root, in_sweep, &mut p);
        let seed = seed_override.unwrap_or(header.seed);
        let built = configure_stages(header.stages, &dir, seed, &header.plugin_path, &mut p);
        let order = plan(header.stages, &built, &header.gate, &mut p);
        check_score_needs(header.stages, &built, &mut p);
        check_features(header.stages, &built, &mut p);
        p.into_result()?;
        let mut slots: Vec<Option<PlannedStage>> = built
            .into_iter()
            .map(|(n, kind, inputs, stage, places)| {
                stage.map(|stage| PlannedStage {
                    name: n.v,
                    kind,
                    inputs: inputs.into_iter().map(|(r, t)| (r, t.v)).collect(),
                    stage,
                    places,
                })
            })
            .collect();
        let stages = order.into_iter().filter_map(|i| slots[i].take()).collect();
        let gate = header.gate.into_iter().map(|(c, _)| c).collect();
        let Header { name, out, report, plugin_path, verdict, .. } = header;
        Ok(Pipeline {
            file: file.to_path_buf(),
            text: text.to_string(),
            name,
            seed,
            out,
            report,
            plugin_path,
            stages,
            gate,
            verdict,
            llm_answers: Default::default(),
        })
    }

    /// Add a gate condition (from `--gate`); an error when it reads a stage the pipeline lacks or
    /// a figure its stage's kind does not write.
    pub fn add_gate(&mut self, condition: crate::gate::Condition) -> std::result::Result<(), crate::gate::AddGateError> {
        let names: Vec<&str> = self.stages.iter().map(|s| s.name.as_str()).collect();
        if !names.contains(&condition.stage()) {
            return Err(crate::gate::AddGateError::NoStage {
                condition: condition.to_string(),
                stage: condition.stage().to_string(),
                file: self.file.display().to_string(),
                hint: hint(condition.stage(), &names),
            });
        }
        let stage_kinds: Vec<(&str, &StageKind)> = self.stages.iter().map(|s| (s.name.as_str(), s.kind)).collect();
        crate::gate::check_names(&condition, &stage_kinds)
            .map_err(|problem| crate::gate::AddGateError::Names { condition: condition.to_string(), problem: Box::new(problem) })?;
        self.gate.push(condition);
        Ok(())
    }
}

/// The top-level tables of a pipeline: `[pipeline]`'s settings, the `[stages]` table and the
/// `[gate]` conditions (with their spans).
struct Header<'a> {
    name: String,
    seed: u64,
    out: Option<PathBuf>,
    report: bool,
    plugin_path: Vec<PathBuf>,
    verdict: crate::verdict::Thresholds,
    stages: &'a [(Sp<String>, Sp<Val>)],
    gate: Vec<(crate::gate::Condition, std::ops::Range<usize>)>,
}

/// The seed `[pipeline] seed` of `root` gives (0 when absent or not a seed), read as a run reads
/// it; the problems of the rest are left to the validation that reports them.
pub(crate) fn written_seed(file: &Path, root: &Sp<Val>) -> u64 {
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    read_header(file, &dir, root, true, &mut Problems::new(file, "")).seed
}

/// Read the top-level tables of `root` (of `file`, in folder `dir`), recording problems.
/// `in_sweep`: a `[matrix]` table was taken out by the caller; otherwise one is refused.
fn read_header<'a>(file: &Path, dir: &Path, root: &'a Sp<Val>, in_sweep: bool, p: &mut Problems) -> Header<'a> {
    let Val::Table(top) = &root.v else { unreachable!("a TOML document is a table") };

    let mut name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "pipeline".into());
    let mut seed = 0u64;
    let mut out = None;
    let mut report = true;
    let mut plugin_path: Vec<PathBuf> = Vec::new();
    let mut verdict = crate::verdict::Thresholds::default();
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
                                            format!("[pipeline] `plugin_path` must list folders (strings), found {}", other.type_name()),
                                        ),
                                    }
                                }
                            }
                            ("plugin_path", other) => p.at(
                                &pv.span,
                                format!("[pipeline] `plugin_path` must be a folder or a list of folders, found {}", other.type_name()),
                            ),
                            ("verdict", Val::Table(keys)) => verdict = verdict_thresholds(keys, &pv.span, p),
                            ("verdict", other) => p.at(
                                &pv.span,
                                format!(
                                    "[pipeline] `verdict` must be a table of thresholds ({}), found {}",
                                    crate::verdict::THRESHOLD_KEYS.join(", "),
                                    other.type_name()
                                ),
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
                                    "[pipeline]: unknown key `{other}`{}; accepted: name, seed, out, description, report, plugin_path, verdict",
                                    hint(other, &["name", "seed", "out", "description", "report", "plugin_path", "verdict"])
                                ),
                            ),
                        }
                    }
                }
                other => p.at(&v.span, format!("`pipeline` must be a table, found {}", other.type_name())),
            },
            "stages" => stage_entries = Some(v),
            "gate" => gate = gate_conditions(v, p),
            "matrix" if in_sweep => {}
            "matrix" => {
                p.at(&k.span, "[matrix] makes this file a sweep: run it with `fairpipe run` (or load it with fairpipe_core::sweep::Sweep)")
            }
            other => p.at(
                &k.span,
                format!(
                    "unknown top-level key `{other}`{}; a pipeline has [pipeline], [stages.NAME], [gate] and [matrix] tables",
                    hint(other, &["pipeline", "stages", "gate", "matrix"])
                ),
            ),
        }
    }
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

    Header { name, seed, out, report, plugin_path, verdict, stages: stages_table, gate }
}

/// `[pipeline.verdict]`'s thresholds (`keys`, the table at `span`), each a share in (0, 1]; a
/// problem at the key that is wrong (or at the table when two are out of order).
fn verdict_thresholds(keys: &[(Sp<String>, Sp<Val>)], span: &std::ops::Range<usize>, p: &mut Problems) -> crate::verdict::Thresholds {
    let mut t = crate::verdict::Thresholds::default();
    for (k, v) in keys {
        let value = match &v.v {
            Val::Float(f) => *f,
            Val::Int(i) => *i as f64,
            other => {
                p.at(&v.span, format!("[pipeline.verdict] `{}` must be a number, found {}", k.v, other.type_name()));
                continue;
            }
        };
        if let Err(problem) = t.set(&k.v, value) {
            let at = if crate::verdict::THRESHOLD_KEYS.contains(&k.v.as_str()) { &v.span } else { &k.span };
            p.at(at, problem.to_string());
        }
    }
    if let Err(problem) = t.check() {
        p.at(span, problem.to_string());
    }
    t
}

/// Phase two: each stage's kind, its inputs (by role, with spans) and its typed config, through
/// the kind's `configure`; a stage whose table has problems is kept without its config.
fn configure_stages(
    stages_table: &[(Sp<String>, Sp<Val>)],
    dir: &Path,
    seed: u64,
    plugin_path: &[PathBuf],
    p: &mut Problems,
) -> Vec<BuiltStage> {
    // Phase two: each stage's kind and keys.
    let kind_names: Vec<&str> = registry::STAGE_KINDS.iter().map(|k| k.name).collect();
    // "Did you mean" per distinct unknown kind, computed once (a file may repeat one typo
    // many times).
    let mut kind_hints: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut built: Vec<BuiltStage> = Vec::new();
    let kinds_written = stages_table.iter().filter_map(|(_, body)| match &body.v {
        Val::Table(entries) => match &entries.iter().find(|(k, _)| k.v == "kind")?.1.v {
            Val::Str(k) => registry::find(k),
            _ => None,
        },
        _ => None,
    });
    let audits_a_model = crate::stage::kind::audits_a_model(kinds_written);
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
                other => p.at(&value.span, format!("stage `{}`: `{}` must be a string, found {}", stage_name.v, key.v, other.type_name())),
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
            dir: dir.to_path_buf(),
            seed: stage_seed(seed, &stage_name.v),
            plugin_path: plugin_path.to_vec(),
            kinds: registry::STAGE_KINDS,
            audits_a_model,
        };
        let stage = (kind.configure)(kind, &table, &env, p);
        let places = StagePlaces {
            header: Some(p.place(&stage_name.span, "", false)),
            keys: entries.iter().map(|(k, _)| (k.v.clone(), p.place(&k.span, &k.v, true))).collect(),
        };
        built.push((stage_name.clone(), kind, inputs, stage, places));
    }

    built
}

/// The graph: every input names an existing stage of a fitting kind, every gate condition an
/// existing stage, and there is no cycle. The stages' indices in execution order (empty on a
/// cycle).
fn plan(
    stages_table: &[(Sp<String>, Sp<Val>)],
    built: &[BuiltStage],
    gate: &[(crate::gate::Condition, std::ops::Range<usize>)],
    p: &mut Problems,
) -> Vec<usize> {
    let by_name: BTreeMap<&str, &'static StageKind> = built.iter().map(|(n, k, ..)| (n.v.as_str(), *k)).collect();
    // Stages whose own table is broken still exist: name them, but do not judge their kind.
    let stage_names: Vec<&str> = stages_table.iter().map(|(n, _)| n.v.as_str()).collect();
    let stage_name_set: std::collections::BTreeSet<&str> = stage_names.iter().copied().collect();
    for (name, kind, inputs, ..) in built {
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
    // Each condition's stage, and its figure against the stage kind's figures: a typo fails
    // here (exit 1), not after every stage has run as a failed gate (exit 3).
    let stage_kinds: Vec<(&str, &StageKind)> = built.iter().map(|(n, kind, ..)| (n.v.as_str(), *kind)).collect();
    for (c, span) in gate {
        if !stage_names.contains(&c.stage()) {
            p.at(span, format!("[gate] `{c}`: no stage `{}`{}", c.stage(), hint(c.stage(), &stage_names)));
        } else if stage_kinds.iter().any(|(n, _)| *n == c.stage()) {
            if let Err(problem) = crate::gate::check_names(c, &stage_kinds) {
                p.at(span, format!("[gate] `{c}`: {problem}"));
            }
        }
    }
    let order = topological_order(
        &built.iter().map(|(n, _, i, ..)| (n.v.clone(), i.values().map(|t| t.v.clone()).collect())).collect::<Vec<(String, Vec<String>)>>(),
    );
    match order {
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
    }
}

/// Every key that reads the probabilities of a model known now to give labels only
/// ([`Stage::score_needs`] against [`Stage::labels_only_before_run`] of the stage its `model`
/// input names), located at the key (or at the stage's name when the key is a default).
fn check_score_needs(stages_table: &[(Sp<String>, Sp<Val>)], built: &[BuiltStage], p: &mut Problems) {
    let by_name = stage_index(built);
    for (name, _, inputs, stage, _) in built {
        let (Some(stage), Some(target)) = (stage, inputs.get("model")) else { continue };
        let Some(why) = by_name.get(target.v.as_str()).and_then(|&i| built[i].3.as_ref()?.labels_only_before_run()) else {
            continue;
        };
        for need in stage.score_needs() {
            let span = key_span(stages_table, &name.v, need.key, None).unwrap_or_else(|| name.span.clone());
            p.at(&span, format!("stage `{}`: {}", name.v, need.refusal(&target.v, &why)));
        }
    }
}

/// Every problem a stage finds with the feature columns of its `data` input when the stage that
/// input names knows them before anything runs ([`Stage::check_features`] against
/// [`Stage::features_before_run`]), located at the key (or at the stage's name for a key to add).
fn check_features(stages_table: &[(Sp<String>, Sp<Val>)], built: &[BuiltStage], p: &mut Problems) {
    let by_name = stage_index(built);
    for (name, _, inputs, stage, _) in built {
        let (Some(stage), Some(target)) = (stage, inputs.get("data")) else { continue };
        let Some(features) = by_name.get(target.v.as_str()).and_then(|&i| built[i].3.as_ref()?.features_before_run()) else {
            continue;
        };
        let label = by_name.get(target.v.as_str()).and_then(|&i| built[i].3.as_ref()?.label_before_run()).flatten();
        for problem in stage.check_features(&features, label.as_deref()) {
            let span = key_span(stages_table, &name.v, problem.key, problem.nested.as_deref()).unwrap_or_else(|| name.span.clone());
            p.at(&span, format!("stage `{}`: {}", name.v, problem.message));
        }
    }
    for (name, _, inputs, stage, _) in built {
        let (Some(stage), Some(target)) = (stage, inputs.get("data")) else { continue };
        let label = by_name.get(target.v.as_str()).and_then(|&i| built[i].3.as_ref()?.label_before_run());
        if let (Some(None), Some(label_use)) = (label, stage.reads_label()) {
            let span = label_use.key.and_then(|k| key_span(stages_table, &name.v, k, None)).unwrap_or_else(|| name.span.clone());
            p.at(&span, format!("stage `{}`: {}", name.v, label_use.refusal(&target.v)));
        }
    }
}

/// Each built stage's position by its name, so that following an input is one look-up (the checks
/// that follow every stage's input stay linear in the number of stages).
fn stage_index(built: &[BuiltStage]) -> BTreeMap<&str, usize> {
    built.iter().enumerate().map(|(i, (n, ..))| (n.v.as_str(), i)).collect()
}

/// Where key `key` of stage `stage` is written (`nested`: a key inside that table, when written),
/// if it is.
fn key_span(stages_table: &[(Sp<String>, Sp<Val>)], stage: &str, key: &str, nested: Option<&str>) -> Option<std::ops::Range<usize>> {
    let (_, body) = stages_table.iter().find(|(n, _)| n.v == stage)?;
    let Val::Table(entries) = &body.v else { return None };
    let (k, v) = entries.iter().find(|(k, _)| k.v == key)?;
    match (nested, &v.v) {
        (Some(nested), Val::Table(inner)) => {
            Some(inner.iter().find(|(n, _)| n.v == nested).map_or(k.span.clone(), |(n, _)| n.span.clone()))
        }
        _ => Some(k.span.clone()),
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
