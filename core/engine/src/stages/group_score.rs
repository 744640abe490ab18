//! `group_score`: run an auditor plugin (TestSGD) over the dataset's rows: groups ranked by the
//! difference in favourable rate inside and outside, with error margins.

use std::sync::Arc;
use std::time::Instant;

use fairpipe_abi::ffi::{self, FfiBudget};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::options::{check_protected, PluginChoice, Rows, PROTECTED};
use crate::error::{Error, Result};
use crate::group_rule::GroupRule;
use crate::output::TableBuilder;
use crate::pipeline::config::{configure, fields_of, Checks, StageConfig};
use crate::pipeline::kind::{InputDoc, KeyDoc, StageEnv, StageKind};
use crate::pipeline::stage::{
    audited_rows, figures_map, nan_if_null, Artifact, ArtifactKind, GroupScoreRow, GroupsArtifact, Inputs, Stage, StageContext, StageOutput,
};
use crate::plugin::{Plugin, RunSpec};

/// The input of the group stages: the model with its dataset.
pub(crate) const MODEL_INPUT: &[InputDoc] =
    &[InputDoc { role: "model", accepts: &[ArtifactKind::Model], required: true, doc: "the model under test (with its dataset)" }];

/// The `group_score` stage kind.
pub const KIND: StageKind = StageKind {
    name: "group_score",
    doc: "Run an auditor plugin (testsgd) over the dataset's rows: groups defined by rules on the protected attributes, ranked by the difference in favourable rate inside and outside the group, with error margins.",
    inputs: MODEL_INPUT,
    output: ArtifactKind::Groups,
    keys: &[
        KeyDoc::new("plugin", "string", "\"testsgd\"", "auditor plugin name"),
        KeyDoc::new("path", "path", "none", "load the plugin from this library file instead"),
        KeyDoc::new("params", "table", "{}", "the plugin's own parameters"),
        KeyDoc::new("split", "\"train\"|\"test\"|\"all\"", "\"train\"", "rows the rules' support and the samples come from"),
        KeyDoc::new("top_k", "int", "10", "groups listed in summary.json (the table has all)"),
        KeyDoc::new("max_seconds", "float", "0 (no limit)", "budget: wall time"),
        PROTECTED,
    ],
    tag: None,
    example: "[stages.groups]\nkind = \"group_score\"\nmodel = \"model\"\nprotected = [\"gender\", \"race\", \"age\"]\nparams = { theta = 0.05 }",
    configure: configure::<GroupScoreConfig>,
    fields: fields_of::<GroupScoreConfig>,
};

/// The auditor used when a `group_score` stage names none.
const DEFAULT_AUDITOR: &str = "testsgd";

/// The `group_score` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GroupScoreConfig {
    /// Auditor plugin name (default testsgd).
    pub plugin: Option<String>,
    /// Plugin library file instead.
    pub path: Option<std::path::PathBuf>,
    /// The plugin's own parameters.
    pub params: Option<Value>,
    /// Rows the rules' support and the samples come from.
    pub split: Rows,
    /// Groups listed in summary.json.
    pub top_k: usize,
    /// Budget: wall time in seconds (0: no limit).
    pub max_seconds: f64,
    /// Audit these protected attributes instead of the data's.
    pub protected: Option<Vec<String>>,
}

impl Default for GroupScoreConfig {
    fn default() -> Self {
        GroupScoreConfig { plugin: None, path: None, params: None, split: Rows::Train, top_k: 10, max_seconds: 0.0, protected: None }
    }
}

impl GroupScoreConfig {
    fn choice(&self) -> PluginChoice {
        PluginChoice { plugin: self.plugin.clone(), path: self.path.clone(), params: self.params.clone() }
    }
}

impl StageConfig for GroupScoreConfig {
    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        self.choice().validate(c, Some(DEFAULT_AUDITOR), ffi::kind::AUDITOR, "group_score needs an auditor (e.g. testsgd)");
        c.within("max_seconds", self.max_seconds, 0.0, 1e9);
        check_protected(c, &self.protected);
    }

    fn instantiate(self, env: &StageEnv) -> Result<Box<dyn Stage>> {
        let plugin = self.choice().load(&env.dir, &env.plugin_path, Some(DEFAULT_AUDITOR))?;
        let params = self.choice().params();
        Ok(Box::new(GroupScore { plugin, params, config: self }))
    }
}

/// One of the top groups in `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopGroup {
    /// The group's condition.
    pub condition: String,
    /// |rate_in − rate_out|.
    #[serde(deserialize_with = "nan_if_null")]
    pub score: f64,
    /// Error margin of the score.
    #[serde(deserialize_with = "nan_if_null")]
    pub margin: f64,
    /// P(favourable | in the group).
    #[serde(deserialize_with = "nan_if_null")]
    pub rate_in: f64,
    /// P(favourable | outside).
    #[serde(deserialize_with = "nan_if_null")]
    pub rate_out: f64,
    /// Share of rows in the group.
    #[serde(deserialize_with = "nan_if_null")]
    pub support: f64,
}

/// A ranked rule under the DESIGN.md contract's names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankedRule {
    /// The rule (condition).
    pub rule: String,
    /// Its score.
    #[serde(deserialize_with = "nan_if_null")]
    pub score: f64,
    /// P(favourable | rule holds).
    #[serde(deserialize_with = "nan_if_null")]
    pub phi_in: f64,
    /// P(favourable | rule does not hold).
    #[serde(deserialize_with = "nan_if_null")]
    pub phi_out: f64,
    /// Error margin.
    #[serde(deserialize_with = "nan_if_null")]
    pub margin: f64,
    /// Samples per side.
    pub samples: u64,
}

/// Figures of a `group_score` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupScoreFigures {
    /// Plugin name and version.
    pub plugin: String,
    /// The plugin's parameters.
    pub params: Value,
    /// Wall time of the plugin run.
    pub run_elapsed_s: f64,
    /// Groups scored.
    pub groups: usize,
    /// The top_k worst groups.
    pub top: Vec<TopGroup>,
    /// The same, under the contract's names.
    pub rules: Vec<RankedRule>,
    /// The worst group's score, when there is a group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_score: Option<f64>,
    /// The budget that cut the audit short (`"max_seconds"`), when the host did: the groups are
    /// then scored on the samples drawn so far; absent when the auditor finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// Figures the auditor sent of its own (TestSGD: `rule_sets_generated`, `rule_sets_kept`,
    /// `confidence`).
    #[serde(flatten)]
    pub plugin_figures: Map<String, Value>,
}

struct GroupScore {
    plugin: &'static Plugin,
    params: Value,
    config: GroupScoreConfig,
}

impl Stage for GroupScore {
    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let (domain, rows) = audited_rows(&model, self.config.protected.as_deref(), self.config.split.split())?;
        let before = model.oracle.rows();
        let started = Instant::now();
        let spec = RunSpec {
            params: &self.params,
            seeds: &rows,
            rng_seed: ctx.seed,
            budget: FfiBudget { max_seconds: self.config.max_seconds, ..FfiBudget::default() },
            gamma: None,
        };
        let output = self.plugin.generate(&model.oracle, &domain, &spec, &ctx.progress)?;
        let elapsed_s = started.elapsed().as_secs_f64();
        let report = output.report.ok_or_else(|| Error::Invalid(format!("auditor `{}` sent no report", self.plugin.name)))?;
        let mut groups = Vec::new();
        for g in report["groups"].as_array().into_iter().flatten() {
            let rule = GroupRule::parse(&Value::Array(g["conditions"].as_array().cloned().unwrap_or_default()), domain.width())?;
            let num = |k: &str| g[k].as_f64().unwrap_or(f64::NAN);
            groups.push(GroupScoreRow {
                condition: rule.describe(&domain),
                support: num("support"),
                rate_in: num("rate_in"),
                rate_out: num("rate_out"),
                score: num("score"),
                margin: num("margin"),
                samples: g["samples"].as_u64().unwrap_or(0),
                rule,
            });
        }
        let top_k = self.config.top_k;
        let mut figures = GroupScoreFigures {
            plugin: format!("{} {}", self.plugin.name, self.plugin.version),
            params: self.params.clone(),
            run_elapsed_s: elapsed_s,
            groups: groups.len(),
            top: groups
                .iter()
                .take(top_k)
                .map(|g| TopGroup {
                    condition: g.condition.clone(),
                    score: g.score,
                    margin: g.margin,
                    rate_in: g.rate_in,
                    rate_out: g.rate_out,
                    support: g.support,
                })
                .collect(),
            rules: groups
                .iter()
                .take(top_k)
                .map(|g| RankedRule {
                    rule: g.condition.clone(),
                    score: g.score,
                    phi_in: g.rate_in,
                    phi_out: g.rate_out,
                    margin: g.margin,
                    samples: g.samples,
                })
                .collect(),
            worst_score: groups.first().map(|g| g.score),
            stopped_by: output.stopped_by_host.then(|| "max_seconds".to_string()),
            plugin_figures: Map::new(),
        };
        // The auditor's figures come after plugin and params (and may replace them), before the
        // host's own.
        if let Some(f) = report["figures"].as_object() {
            let host_last = ["run_elapsed_s", "groups", "top", "rules", "worst_score"];
            for (k, v) in f {
                match k.as_str() {
                    "plugin" => figures.plugin = v.as_str().map(String::from).unwrap_or_else(|| v.to_string()),
                    "params" => figures.params = v.clone(),
                    k if host_last.contains(&k) => {}
                    _ => {
                        figures.plugin_figures.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        let table = TableBuilder::new()
            .i64("rank", (1..=groups.len() as i64).collect())
            .str("condition", groups.iter().map(|g| g.condition.clone()).collect())
            .f64("support", groups.iter().map(|g| g.support).collect())
            .f64("rate_in", groups.iter().map(|g| g.rate_in).collect())
            .f64("rate_out", groups.iter().map(|g| g.rate_out).collect())
            .f64("score", groups.iter().map(|g| g.score).collect())
            .f64("margin", groups.iter().map(|g| g.margin).collect())
            .i64("samples", groups.iter().map(|g| g.samples as i64).collect())
            .build("")?;
        let model_queries = model.oracle.rows() - before;
        let artifact = GroupsArtifact { model: model.clone(), domain, groups };
        Ok(StageOutput {
            artifact: Artifact::Groups(Arc::new(artifact)),
            figures: figures_map(&figures),
            tables: vec![table],
            model_queries,
        })
    }
}
