//! Running a planned pipeline: the stages in order, each given its inputs' artifacts, a progress
//! display and its warnings; the checks a later stage can make as soon as its data is loaded
//! (`preflight`); the summary and the gate. A sharded run computes or combines the pieces of the
//! stages that split ([`PieceMode`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{stage_seed, Pipeline, Run, RunReport};
use crate::error::{Error, Result};
use crate::output::Table;
use crate::pieces::Piece;
use crate::stage::summary::{GateSection, RunWarning, StageSummary, Summary};
use crate::stage::{Artifact, Inputs, StageContext};

impl Pipeline {
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
        // The inputs are hashed before any stage reads them.
        let mut trail = self.trail();
        let mut computed: Vec<ComputedPiece> = Vec::new();
        let mut artifacts: BTreeMap<String, Artifact> = BTreeMap::new();
        let mut stage_entries: BTreeMap<String, StageSummary> = BTreeMap::new();
        let mut tables: Vec<(String, Table)> = Vec::new();
        let mut extra_files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        // Every stage's warnings, in run order.
        let mut warnings: Vec<RunWarning> = Vec::new();
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
                    artifacts.get(target).cloned().ok_or_else(|| Error::Internal(format!("stage `{target}` produced nothing")))?;
                inputs.by_role.insert(role.clone(), artifact);
            }
            let progress = crate::progress::stage(&planned.name, planned.kind.name, show);
            let mut ctx = StageContext::new(&planned.name, stage_seed(self.seed, &planned.name));
            ctx.progress = progress;
            ctx.llm_answers = self.llm_answers.clone();
            if let Some(early) = early_warnings.remove(&planned.name) {
                ctx.warnings = early;
            }
            let started = Instant::now();
            let in_stage = |e: Error| {
                let place = self.refusal_place(planned, &e);
                Error::Stage { stage: planned.name.clone(), kind: planned.kind.name.to_string(), source: Box::new(e), place }
            };
            refuse_labels_only(planned, &inputs).map_err(in_stage)?;
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
            let stage_warnings = ctx.warnings.take();
            warnings.extend(stage_warnings.iter().map(|message| RunWarning { stage: planned.name.clone(), message: message.clone() }));
            let entry = StageSummary {
                kind: planned.kind.name.to_string(),
                elapsed_s: started.elapsed().as_secs_f64(),
                model_queries: output.model_queries,
                inputs: planned.inputs.clone(),
                warnings: stage_warnings,
                remote: None,
                figures: output.figures,
            };
            stage_entries.insert(planned.name.clone(), entry);
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
            if let (Artifact::Model(model), Some(entry)) = (artifact, stage_entries.get_mut(name)) {
                entry.remote = model.oracle.model().remote_usage();
                let warning = entry.remote.as_ref().and_then(|r| r.llm.as_ref()).and_then(|llm| {
                    trail.endpoints.insert(name.clone(), crate::trail::EndpointTrail::of(llm));
                    (llm.cache_from_another_model && llm.cache_hits > 0).then(|| {
                        format!(
                            "{} answers came from the response cache {}, which also holds answers stored while {} served another model (its `/v1/models` entry or `/props` differed): those answers may not be this model's; audit again with a new `cache` file (or none) to ask this model",
                            llm.cache_hits,
                            llm.cache.as_deref().unwrap_or("(the cache)"),
                            llm.base_url
                        )
                    })
                });
                let validity = entry.remote.as_ref().and_then(|r| r.llm.as_ref()).and_then(|llm| llm.validity.as_ref()).and_then(|v| {
                    (v.mean_abs_difference > fairpipe_models::model::VALIDITY_WARNING).then(|| {
                        format!(
                            "the logprob score is {:.3} from the share of favourable answers sampled at temperature {} (mean |difference| over {} prompts, {} samples each; more than {}): the model deployed at that temperature does not decide as its first token's probabilities say — audit with `scores = \"samples\"` and `temperature = {}` to measure the deployed model",
                            v.mean_abs_difference, v.temperature, v.prompts, v.samples, fairpipe_models::model::VALIDITY_WARNING, v.temperature
                        )
                    })
                });
                for message in warning.into_iter().chain(validity) {
                    entry.warnings.push(message.clone());
                    warnings.push(RunWarning { stage: name.clone(), message });
                }
            }
        }
        for (name, artifact) in &artifacts {
            let model = match artifact {
                Artifact::Model(m) => m.oracle.model().describe(),
                Artifact::TextModel(m) => m.model.describe(),
                _ => continue,
            };
            let executor =
                stage_entries.get(name).and_then(|e| e.figures.to_map().get("executor").and_then(|v| v.as_str().map(str::to_string)));
            trail.executors.insert(
                name.clone(),
                match executor {
                    Some(executor) => format!("{executor}: {model}"),
                    None => model,
                },
            );
        }
        let mut summary = Summary {
            pipeline: self.name.clone(),
            file: self.file.file_name().map(|f| f.to_string_lossy().into_owned()),
            seed: self.seed,
            fairpipe_version: env!("CARGO_PKG_VERSION").to_string(),
            stage_order: self.stages.iter().map(|s| s.name.clone()).collect(),
            stages: stage_entries,
            warnings,
            gate: None,
            verdicts: None,
            trail: Some(trail),
        };
        let verdicts = crate::verdict::verdicts(&summary, &self.verdict);
        summary.verdicts = (!verdicts.attributes.is_empty()).then_some(verdicts);
        if !self.gate.is_empty() {
            summary.gate = Some(GateSection::new(crate::gate::evaluate(&self.gate, &summary)));
        }
        Ok((Run { summary, tables, extra_files, artifacts }, computed))
    }
}

impl Pipeline {
    /// The audit trail of a run of this pipeline, before it runs: the pipeline file's and every
    /// named input file's hash, version, commit, seed, platform and text (the executors are added
    /// once the models are loaded).
    fn trail(&self) -> crate::trail::Trail {
        let dir = self.file.parent().map(Path::to_path_buf).unwrap_or_default();
        let path_keys = |kind: &str| -> Vec<&'static str> {
            super::registry::find(kind).map(|k| (k.keys)().iter().filter(|d| d.ty == "path").map(|d| d.name).collect()).unwrap_or_default()
        };
        let base = (!self.text.is_empty()).then_some(dir.as_path());
        let mut inputs: Vec<crate::trail::TrailFile> = crate::trail::entry("", "pipeline", &self.file, base).into_iter().collect();
        inputs.extend(
            crate::trail::named_files(&self.text, &dir, path_keys)
                .into_iter()
                .filter_map(|(stage, key, path)| crate::trail::entry(&stage, &key, &path, base)),
        );
        crate::trail::Trail {
            fairpipe_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: crate::trail::git_commit(),
            seed: self.seed,
            platform: crate::trail::platform(),
            inputs,
            executors: BTreeMap::new(),
            endpoints: BTreeMap::new(),
            pipeline: self.text.clone(),
        }
    }
}

/// A stage whose keys read the model's probabilities ([`crate::stage::Stage::score_needs`]),
/// connected to a model that gives labels only (known only now: a model behind a server, a
/// command): refused before it runs, keyed at the first such key.
fn refuse_labels_only(planned: &super::PlannedStage, inputs: &Inputs) -> Result<()> {
    let Some(Artifact::Model(model)) = inputs.by_role.get("model") else { return Ok(()) };
    if !model.oracle.model().labels_only() {
        return Ok(());
    }
    match planned.stage.score_needs().first() {
        Some(need) => {
            let from = planned.inputs.get("model").map(String::as_str).unwrap_or("model");
            let why = format!("{} returns labels", model.oracle.model().describe());
            Err(crate::error::StageError::cannot(need.key, need.refusal(from, &why)))
        }
        None => Ok(()),
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
    /// Where the key a refusal of stage `planned` names is: among `planned`'s own keys, or, for
    /// a key of one of its inputs' stages ([`Error::refused_input`]), among that stage's (then
    /// named by its whole path, `stages.NAME.KEY`).
    fn refusal_place(&self, planned: &super::PlannedStage, e: &Error) -> Option<Box<crate::error::KeyPlace>> {
        let key = e.refused_key()?;
        let Some(role) = e.refused_input() else { return planned.places.of(key).map(Box::new) };
        let name = planned.inputs.get(role)?;
        let holder = self.stages.iter().find(|s| s.name == *name)?;
        let place = holder.places.of(key)?;
        Some(Box::new(crate::error::KeyPlace { key: format!("stages.{name}.{key}"), ..place }))
    }

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
                place: self.refusal_place(planned, &e),
                source: Box::new(Error::Invalid(format!("checked as soon as `{source}` was loaded, before it runs: {e}"))),
            })?;
            early_warnings.insert(planned.name.clone(), warnings);
        }
        Ok(())
    }
}
