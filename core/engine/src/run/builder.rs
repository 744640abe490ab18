//! Building a pipeline in code instead of TOML: stage configs are Rust values (a `load` stage may
//! take a Polars `DataFrame` already in memory), checked the same way as a file's.
//!
//! ```no_run
//! use fairpipe_core::run::Pipeline;
//! use fairpipe_core::stages::{estimate::EstimateConfig, load::LoadConfig, load_model::LoadModelConfig};
//! # let frame = polars::prelude::DataFrame::empty();
//! let pipeline = Pipeline::builder("audit")
//!     .seed(1)
//!     .stage("data", LoadConfig::from_frame(frame, "income", &["gender"]), &[])
//!     .stage("model", LoadModelConfig::new("pipelines/models/census.onnx"), &[("data", "data")])
//!     .stage("estimate", EstimateConfig { trials: 20, ..Default::default() }, &[("model", "model")])
//!     .build()?;
//! # Ok::<(), fairpipe_core::error::ConfigError>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use crate::run::{stage_seed, topological_order, Pipeline, PlannedStage};
use crate::stage::config::{validate_and_build, Checks, StageConfig};
use crate::stage::kind::{StageEnv, StageKind, StageTable};
use crate::stage::problems::Problems;
use crate::stage::Stage;

/// Validates and instantiates one stage, given its environment.
type Make = Box<dyn FnOnce(&str, &StageEnv, &mut Problems) -> Option<Box<dyn Stage>>>;

/// Builds a [`Pipeline`] from stage configs.
pub struct PipelineBuilder {
    name: String,
    seed: u64,
    dir: PathBuf,
    plugin_path: Vec<PathBuf>,
    stages: Vec<(String, &'static StageKind, BTreeMap<String, String>, Make)>,
}

impl Pipeline {
    /// A builder for a pipeline called `name` (seed 0, relative paths resolved in the current folder).
    pub fn builder(name: &str) -> PipelineBuilder {
        PipelineBuilder { name: name.to_string(), seed: 0, dir: PathBuf::new(), plugin_path: Vec::new(), stages: Vec::new() }
    }
}

impl PipelineBuilder {
    /// The run seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Folders searched for plugin libraries before `FAIRPIPE_PLUGIN_PATH` (as `[pipeline]
    /// plugin_path`; built-in plugins need none).
    pub fn plugin_path(mut self, dirs: Vec<PathBuf>) -> Self {
        self.plugin_path = dirs;
        self
    }

    /// The folder relative paths resolve against.
    pub fn dir(mut self, dir: &Path) -> Self {
        self.dir = dir.to_path_buf();
        self
    }

    /// Add stage `name` configured by `config`, reading the stages named in `inputs` as
    /// `(role, stage)` pairs, e.g. `&[("model", "model")]`.
    pub fn stage<C: StageConfig + 'static>(mut self, name: &str, config: C, inputs: &[(&str, &str)]) -> Self {
        let make: Make = Box::new(move |name, env, problems| {
            let table = StageTable { name, header: 0..0, entries: Vec::new() };
            match validate_and_build(config, Checks::new(problems, &table, env))? {
                Ok(stage) => Some(stage),
                Err(e) => {
                    problems.at(&(0..0), format!("stage `{name}`: {e}"));
                    None
                }
            }
        });
        let inputs = inputs.iter().map(|(r, s)| (r.to_string(), s.to_string())).collect();
        self.stages.push((name.to_string(), C::kind(), inputs, make));
        self
    }

    /// Check the stages and their graph (every problem reported at once, located at `<code>:1:1`).
    pub fn build(self) -> Result<Pipeline, ConfigError> {
        let file = PathBuf::from("<code>");
        let mut p = Problems::new(&file, "");
        let kinds: BTreeMap<String, &'static StageKind> = self.stages.iter().map(|(n, k, _, _)| (n.clone(), *k)).collect();
        let mut planned = Vec::new();
        let audits_a_model = crate::stage::kind::audits_a_model(kinds.values().copied());
        for (name, kind, inputs, make) in self.stages {
            for input in kind.inputs {
                if input.required && !inputs.contains_key(input.role) {
                    p.at(&(0..0), format!("stage `{name}` ({}): missing input `{}` ({})", kind.name, input.role, input.doc));
                }
            }
            for (role, target) in &inputs {
                match (kind.inputs.iter().find(|i| i.role == role), kinds.get(target)) {
                    (None, _) => p.at(&(0..0), format!("stage `{name}` ({}) has no input `{role}`", kind.name)),
                    (_, None) => p.at(&(0..0), format!("stage `{name}`: input `{role}` names stage `{target}`, which does not exist")),
                    (Some(doc), Some(t)) if !doc.accepts.contains(&t.output) => p.at(
                        &(0..0),
                        format!(
                            "stage `{name}`: input `{role}` expects {}, but stage `{target}` produces {}",
                            doc.accepts[0].name(),
                            t.output.name()
                        ),
                    ),
                    _ => {}
                }
            }
            let env = StageEnv {
                dir: self.dir.clone(),
                seed: stage_seed(self.seed, &name),
                plugin_path: self.plugin_path.clone(),
                kinds: crate::run::registry::STAGE_KINDS,
                audits_a_model,
            };
            let stage = make(&name, &env, &mut p);
            planned.push((name, kind, inputs, stage));
        }
        let nodes: Vec<(String, Vec<String>)> = planned.iter().map(|(n, _, i, _)| (n.clone(), i.values().cloned().collect())).collect();
        let order = topological_order(&nodes).unwrap_or_else(|cycle| {
            p.at(&(0..0), format!("the stages form a cycle: {}", cycle.join(" → ")));
            Vec::new()
        });
        p.into_result()?;
        let mut slots: Vec<Option<PlannedStage>> = planned
            .into_iter()
            .map(|(name, kind, inputs, stage)| stage.map(|stage| PlannedStage { name, kind, inputs, stage, places: Default::default() }))
            .collect();
        let stages = order.into_iter().filter_map(|i| slots[i].take()).collect();
        Ok(Pipeline {
            file,
            text: String::new(),
            name: self.name,
            seed: self.seed,
            out: None,
            report: true,
            plugin_path: self.plugin_path,
            stages,
            gate: Vec::new(),
            verdict: Default::default(),
            llm_answers: Default::default(),
        })
    }
}
