//! `fairpipe_rs.run(..., data={"stage": frame}, models={"stage": object})`: a validated TOML
//! pipeline whose `load` stages read a frame in memory instead of their file, and whose
//! `load_model` stages use a Python object instead of their model. The replaced stages are read
//! again from their TOML tables (every other key kept), given the frame or model, checked and
//! instantiated as a file's stages are.

use std::path::Path;

use fairpipe_core::error::{ConfigError, ConfigProblem};
use fairpipe_core::models::provided::ProvidedModel;
use fairpipe_core::run::{stage_seed, Pipeline};
use fairpipe_core::stage::config::{Checks, StageConfig};
use fairpipe_core::stage::kind::{StageEnv, StageTable};
use fairpipe_core::stage::problems::Problems;
use fairpipe_core::stages::load::LoadConfig;
use fairpipe_core::stages::load_model::LoadModelConfig;
use polars::prelude::DataFrame;

/// What replaces a stage's input.
pub enum Replacement {
    /// A `load` stage's frame.
    Frame(DataFrame),
    /// A `load_model` stage's model.
    Model(ProvidedModel),
}

/// Replace the stages named in `replacements` in `pipeline` (read from `text`, file `file`).
pub fn apply(pipeline: &mut Pipeline, file: &Path, text: &str, replacements: Vec<(String, Replacement)>) -> Result<(), ConfigError> {
    let mut problems = Problems::new(file, text);
    let root: toml::Table = match text.parse() {
        Ok(root) => root,
        // The pipeline was validated already, so this does not happen; say so if it does.
        Err(e) => return Err(one_problem(file, format!("cannot read the pipeline again: {e}"))),
    };
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let names: Vec<String> = pipeline.stages.iter().map(|s| s.name.clone()).collect();
    for (name, replacement) in replacements {
        let header = text.find(&format!("[stages.{name}]")).map(|at| at + 1..at + 1 + "stages.".len() + name.len()).unwrap_or(0..0);
        let Some(position) = pipeline.stages.iter().position(|s| s.name == name) else {
            problems.at(&(0..0), format!("no stage `{name}` to replace; the stages are {}", names.join(", ")));
            continue;
        };
        let (wanted, given) = match &replacement {
            Replacement::Frame(_) => ("load", "data="),
            Replacement::Model(_) => ("load_model", "models="),
        };
        let kind = pipeline.stages[position].kind.name;
        if kind != wanted {
            problems.at(&header, format!("stage `{name}` is a `{kind}` stage; {given} replaces the input of a `{wanted}` stage"));
            continue;
        }
        let mut table = root.get("stages").and_then(|s| s.get(&name)).and_then(|t| t.as_table()).cloned().unwrap_or_default();
        table.remove("kind");
        let env = StageEnv {
            dir: dir.clone(),
            seed: stage_seed(pipeline.seed, &name),
            plugin_path: pipeline.plugin_path.clone(),
            kinds: fairpipe_core::run::registry::STAGE_KINDS,
        };
        let spot = StageTable { name: &name, header: header.clone(), entries: Vec::new() };
        let before = problems.len();
        let stage = match replacement {
            Replacement::Frame(frame) => match toml::Value::Table(table).try_into::<LoadConfig>() {
                Ok(mut config) => {
                    config.path = None;
                    config.frame = Some(frame);
                    config.validate(&mut Checks::new(&mut problems, &spot, &env));
                    (problems.len() == before).then(|| config.instantiate(&env))
                }
                Err(e) => {
                    problems.at(&header, format!("stage `{name}`: {e}"));
                    None
                }
            },
            Replacement::Model(model) => {
                let config = LoadModelConfig::provided(model);
                config.validate(&mut Checks::new(&mut problems, &spot, &env));
                (problems.len() == before).then(|| config.instantiate(&env))
            }
        };
        match stage {
            Some(Ok(stage)) => pipeline.stages[position].stage = stage,
            Some(Err(e)) => problems.at(&header, format!("stage `{name}`: {e}")),
            None => {}
        }
    }
    problems.into_result()
}

/// A single problem at the top of `file`.
pub fn one_problem(file: &Path, message: String) -> ConfigError {
    ConfigError { problems: vec![ConfigProblem { file: file.to_path_buf(), line: 1, col: 1, message }] }
}
