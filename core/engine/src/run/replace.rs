//! Giving a read pipeline's stage an input in memory instead of its file
//! ([`Pipeline::replace_input`]): a `load` stage a Polars `DataFrame`, a `load_model` stage a
//! model handed in by the embedding program (the Python package's `run(data=…, models=…)`). The
//! stage is configured again from its own TOML table (every other key kept, each problem located
//! in the file), given the frame or model, validated and instantiated as a file's stages are.

use std::path::Path;

use fairpipe_data::toml_spans::{Sp, Val};
use polars::prelude::DataFrame;

use super::{parse_root, stage_seed, Pipeline};
use crate::error::ConfigError;
use crate::models::provided::ProvidedModel;
use crate::stage::config::{read_config, validate_and_build, Checks};
use crate::stage::kind::{StageEnv, StageTable};
use crate::stage::problems::Problems;
use crate::stages::load::LoadConfig;
use crate::stages::load_model::LoadModelConfig;

/// What replaces a stage's input.
pub enum Replacement {
    /// A `load` stage's data: this frame instead of its `path`.
    Frame(DataFrame),
    /// A `load_model` stage's model: this one instead of its `path`, `url` or `command`.
    Model(ProvidedModel),
}

impl Replacement {
    /// The kind of stage it replaces the input of, and how a caller names the replacement.
    fn wanted(&self) -> (&'static str, &'static str) {
        match self {
            Replacement::Frame(_) => (crate::stages::load::KIND.name, "data"),
            Replacement::Model(_) => (crate::stages::load_model::KIND.name, "a model"),
        }
    }
}

impl Pipeline {
    /// Give stage `stage` an input in memory instead of what its table names: a `load` stage a
    /// frame ([`Replacement::Frame`]), a `load_model` stage a model ([`Replacement::Model`]).
    /// The stage is configured again from its table in the pipeline's text (every other key kept)
    /// and validated; a problem is located in the pipeline file. A pipeline built in code has no
    /// text: give its `load` stage a frame with [`LoadConfig::from_frame`] instead.
    pub fn replace_input(&mut self, stage: &str, replacement: Replacement) -> Result<(), ConfigError> {
        let text = self.text.clone();
        let mut problems = Problems::new(&self.file, &text);
        let names: Vec<&str> = self.stages.iter().map(|s| s.name.as_str()).collect();
        let (wanted, given) = replacement.wanted();
        let Some(position) = self.stages.iter().position(|s| s.name == stage) else {
            problems.at(&(0..0), format!("no stage `{stage}` to give {given}; the stages are {}", names.join(", ")));
            return problems.into_result();
        };
        let root = parse_root(&self.file, &text)?;
        let (header, entries) = stage_table(&root, stage);
        let kind = self.stages[position].kind.name;
        if kind != wanted {
            problems.at(&header, format!("stage `{stage}` is a `{kind}` stage; {given} replaces the input of a `{wanted}` stage"));
            return problems.into_result();
        }
        let dir = self.file.parent().map(Path::to_path_buf).unwrap_or_default();
        let env = StageEnv {
            dir,
            seed: stage_seed(self.seed, stage),
            plugin_path: self.plugin_path.clone(),
            kinds: super::registry::STAGE_KINDS,
            audits_a_model: crate::stage::kind::audits_a_model(self.stages.iter().map(|s| s.kind)),
        };
        // The keys the config reads: inputs (`data = "…"`) and `kind` are the runner's.
        let inputs = self.stages[position].kind.inputs;
        let keys: Vec<&(Sp<String>, Sp<Val>)> =
            entries.iter().filter(|(k, _)| k.v != "kind" && !inputs.iter().any(|i| i.role == k.v)).collect();
        let table = StageTable { name: stage, header: header.clone(), entries: keys };
        let built = match replacement {
            Replacement::Frame(frame) => {
                let config: Option<LoadConfig> = read_config(&table, &env, &mut problems);
                config.and_then(|mut config| {
                    config.path = None;
                    config.frame = Some(frame);
                    validate_and_build(config, Checks::new(&mut problems, &table, &env))
                })
            }
            Replacement::Model(model) => {
                let config = LoadModelConfig::provided(model);
                validate_and_build(config, Checks::new(&mut problems, &table, &env))
            }
        };
        match built {
            Some(Ok(built)) => self.stages[position].stage = built,
            Some(Err(e)) => problems.at(&header, format!("stage `{stage}`: {e}")),
            None => {}
        }
        problems.into_result()
    }
}

/// One `key = value` of a stage's table, with spans.
type Entry = (Sp<String>, Sp<Val>);

/// Stage `stage`'s table in the pipeline: the span of its name (for problems about the whole
/// stage) and its entries.
fn stage_table(root: &Sp<Val>, stage: &str) -> (std::ops::Range<usize>, Vec<Entry>) {
    let Val::Table(top) = &root.v else { return (0..0, Vec::new()) };
    let Some((_, stages)) = top.iter().find(|(k, _)| k.v == "stages") else { return (0..0, Vec::new()) };
    let Val::Table(stages) = &stages.v else { return (0..0, Vec::new()) };
    match stages.iter().find(|(k, _)| k.v == stage) {
        Some((name, Sp { v: Val::Table(entries), .. })) => (name.span.clone(), entries.clone()),
        Some((name, _)) => (name.span.clone(), Vec::new()),
        None => (0..0, Vec::new()),
    }
}
