//! `group_score`: run an auditor plugin (TestSGD) over the dataset's rows: groups ranked by the
//! difference in favourable rate inside and outside, with error margins — reported honestly: a
//! rule set and its complement once, the leaders' scores from fresh samples drawn after ranking
//! (not the winner's curse of the maximum of noisy scores), and each rule set's p-value with
//! Holm's correction over every rule set compared.

use std::sync::Arc;
use std::time::Instant;

use fairpipe_abi::ffi::{self, FfiBudget};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::options::{check_protected, PluginChoice, Rows};
use crate::error::{PluginHostError, Result};
use crate::group_rule::GroupRule;
use crate::output::TableBuilder;
use crate::plugin::{Plugin, RunSpec};
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{compare_as, FigureDoc, FigureNames, InputDoc, StageEnv, StageKind};
use crate::stage::meaning::{InRun, Measurement, StageFigures};
use crate::stage::{
    audited_rows, nan_if_null, Artifact, ArtifactKind, GroupScoreRow, GroupsArtifact, Inputs, Stage, StageContext, StageOutput,
};
use crate::stats::{holm, proportions_test};

/// The input of the group stages: the model with its dataset.
pub(crate) const MODEL_INPUT: &[InputDoc] =
    &[InputDoc { role: "model", accepts: &[ArtifactKind::Model], required: true, doc: "the model under test (with its dataset)" }];

/// The `group_score` stage kind.
pub const KIND: StageKind = StageKind {
    name: "group_score",
    doc: "Run an auditor plugin (testsgd) over the dataset's rows: groups defined by rules on the protected attributes, ranked by the difference in favourable rate inside and outside the group, with error margins.",
    inputs: MODEL_INPUT,
    output: ArtifactKind::Groups,
    keys: GroupScoreConfig::keys,
    tag: None,
    example: "[stages.groups]\nkind = \"group_score\"\nmodel = \"model\"\nprotected = [\"gender\", \"race\", \"age\"]\nparams = { theta = 0.05 }",
    configure: configure::<GroupScoreConfig>,
    fields: fields_of::<GroupScoreConfig>,
    read: read_debug::<GroupScoreConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::Adaptive,
    figures: FigureDoc {
        compared: &["worst_score"],
        compare: compare_figures,
        ..FigureDoc::of::<GroupScoreFigures>()
    },
};

/// The figures a sweep compares a `group_score` stage on (`FigureDoc::compared`).
fn compare_figures(entry: &crate::stage::summary::StageSummary) -> Vec<serde_json::Value> {
    use serde_json::Value;
    compare_as::<GroupScoreFigures>(entry, 1, |f| vec![f.worst_score.map(Value::from).unwrap_or(Value::Null)])
}

/// The auditor used when a `group_score` stage names none.
const DEFAULT_AUDITOR: &str = "testsgd";

/// The `group_score` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct GroupScoreConfig {
    /// Auditor plugin name.
    #[key(default = "\"testsgd\"")]
    pub plugin: Option<String>,
    /// Load the plugin from this library file instead.
    pub path: Option<std::path::PathBuf>,
    /// The plugin's own parameters.
    #[key(default = "{}")]
    pub params: Option<Value>,
    /// Rows the rules' support and the samples come from.
    pub split: Rows,
    /// Groups listed in summary.json (the table has all).
    pub top_k: usize,
    /// Budget: wall time in seconds.
    #[key(default = "0 (no limit)")]
    pub max_seconds: f64,
    /// Audit these protected attributes instead of the data's.
    #[key(shared = super::options::PROTECTED)]
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
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        self.choice().validate(c, Some(DEFAULT_AUDITOR), ffi::kind::AUDITOR, "group_score needs an auditor (e.g. testsgd)");
        c.within("max_seconds", self.max_seconds, 0.0, 1e9);
        check_protected(c, &self.protected);
    }

    fn instantiate(self, _facts: (), env: &StageEnv) -> Result<Box<dyn Stage>> {
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
    /// The complementary rule set merged into this one (same two sides of the data), if any.
    #[serde(default)]
    pub complement: Option<String>,
    /// The score that ranked the group (the selection draw); `score` is the fresh re-estimate
    /// when `reestimated`.
    #[serde(default, deserialize_with = "nan_if_null")]
    pub selection_score: f64,
    /// Whether `score`, `margin` and the rates come from fresh samples drawn after ranking.
    #[serde(default)]
    pub reestimated: bool,
    /// p-value of rate_in = rate_out on the selection draw.
    #[serde(default, deserialize_with = "nan_if_null")]
    pub p_value: f64,
    /// The p-value after Holm's correction over every rule set scored.
    #[serde(default, deserialize_with = "nan_if_null")]
    pub p_adjusted: f64,
    /// Whether the difference is significant at 5% after the correction.
    #[serde(default)]
    pub significant: bool,
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

/// A ranked rule under the output contract's names.
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
    /// The score that ranked the rule (the selection draw).
    #[serde(default, deserialize_with = "nan_if_null")]
    pub selection_score: f64,
    /// Holm-corrected p-value over every rule set scored.
    #[serde(default, deserialize_with = "nan_if_null")]
    pub p_adjusted: f64,
    /// Significant at 5% after the correction.
    #[serde(default)]
    pub significant: bool,
}

/// Figures of a `group_score` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
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
    /// The worst group's score, when there is a group (its fresh re-estimate when it has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_score: Option<f64>,
    /// Rule sets whose difference is significant at `alpha` after Holm's correction.
    #[serde(default)]
    pub significant_rule_sets: usize,
    /// The family-wise significance level.
    #[serde(default)]
    pub alpha: f64,
    /// The budget that cut the audit short (`"max_seconds"`), when the host did: the groups are
    /// then scored on the samples drawn so far; absent when the auditor finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// Figures the auditor sent of its own (TestSGD: `rule_sets_generated`, `rule_sets_kept`,
    /// `confidence`).
    #[serde(flatten)]
    pub plugin_figures: Map<String, Value>,
}

/// A group score measures its model's worst group (for comparing models scored the same way).
impl StageFigures for GroupScoreFigures {
    const HEADLINE: &'static [&'static str] = &["samples", "worst_score"];

    fn measurement(&self, at: &InRun<'_>) -> Option<Measurement> {
        Some(Measurement {
            model: at.entry.inputs.get("model")?.clone(),
            family: "worst group score".into(),
            value: self.worst_score.map(crate::numbers::figure).unwrap_or_else(|| "—".into()),
        })
    }
}

/// Family-wise significance level of the rule sets' tests.
const ALPHA: f64 = 0.05;

/// What the host adds to a reported rule set: merged complement, selection score, p-value.
struct Honest {
    complement: Option<String>,
    selection_score: f64,
    reestimated: bool,
    p_value: f64,
}

struct GroupScore {
    plugin: &'static Plugin,
    params: Value,
    config: GroupScoreConfig,
}

impl Stage for GroupScore {
    fn score_needs(&self) -> Vec<crate::stage::ScoreNeed> {
        self.config.choice().score_need(self.plugin).into_iter().collect()
    }

    fn preflight(&self, data: &crate::data::Dataset, warnings: &crate::warnings::Warnings) -> Result<()> {
        crate::stage::with_protected(&data.domain, self.config.protected.as_deref(), warnings).map(|_| ())
    }

    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let (domain, rows) = audited_rows(&model, self.config.protected.as_deref(), self.config.split.split(), &ctx.warnings)?;
        let before = model.oracle.rows();
        let started = Instant::now();
        let spec = RunSpec {
            params: &self.params,
            seeds: &rows,
            rng_seed: ctx.seed,
            budget: FfiBudget { max_seconds: self.config.max_seconds, ..FfiBudget::default() },
            gamma: None,
        };
        // The auditor's queries go through a cache of their own, which steps aside for a model
        // cheaper than its look-ups (as a generate stage's `cache = "auto"`).
        let oracle = model.oracle.for_plugin_run(crate::score_cache::CacheChoice::Auto);
        let output = self.plugin.generate(&oracle, &domain, &spec, &ctx.progress)?;
        let elapsed_s = started.elapsed().as_secs_f64();
        let bad_report = |message: String| PluginHostError::BadReport { plugin: self.plugin.name.clone(), message };
        let report = output.report.ok_or_else(|| bad_report("no report".into()))?;
        let mut groups = Vec::new();
        let mut honest = Vec::new();
        for g in report["groups"].as_array().into_iter().flatten() {
            let rule = GroupRule::parse(&Value::Array(g["conditions"].as_array().cloned().unwrap_or_default()), domain.width())
                .map_err(|e| bad_report(e.to_string()))?;
            let complement = match g["complement"].as_array() {
                Some(c) => Some(
                    GroupRule::parse(&Value::Array(c.clone()), domain.width()).map_err(|e| bad_report(e.to_string()))?.describe(&domain),
                ),
                None => None,
            };
            let num = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
            let samples = g["samples"].as_u64().unwrap_or(0);
            // The test of the selection draw: rate_in · n favourable of n against rate_out · n of n.
            let count = |r: f64| if r.is_finite() { (r * samples as f64).round() as usize } else { 0 };
            let test = proportions_test(count(num(g, "rate_in")), samples as usize, count(num(g, "rate_out")), samples as usize);
            // Reported figures: the fresh draw's when the auditor re-estimated the group.
            let shown = if g["fresh"].is_object() { &g["fresh"] } else { g };
            honest.push(Honest {
                complement,
                selection_score: num(g, "score"),
                reestimated: g["fresh"].is_object(),
                p_value: test.p_value,
            });
            groups.push(GroupScoreRow {
                condition: rule.describe(&domain),
                support: num(g, "support"),
                rate_in: num(shown, "rate_in"),
                rate_out: num(shown, "rate_out"),
                score: num(shown, "score"),
                margin: num(shown, "margin"),
                samples: shown["samples"].as_u64().unwrap_or(0),
                rule,
            });
        }
        let adjusted = holm(&honest.iter().map(|h| h.p_value).collect::<Vec<_>>());
        let significant: Vec<bool> = adjusted.iter().map(|&p| p <= ALPHA).collect();
        let top_k = self.config.top_k;
        let mut figures = GroupScoreFigures {
            plugin: format!("{} {}", self.plugin.name, self.plugin.version),
            params: self.params.clone(),
            run_elapsed_s: elapsed_s,
            groups: groups.len(),
            top: groups
                .iter()
                .zip(&honest)
                .zip(adjusted.iter().zip(&significant))
                .take(top_k)
                .map(|((g, h), (&p_adjusted, &significant))| TopGroup {
                    condition: g.condition.clone(),
                    complement: h.complement.clone(),
                    selection_score: h.selection_score,
                    reestimated: h.reestimated,
                    p_value: h.p_value,
                    p_adjusted,
                    significant,
                    score: g.score,
                    margin: g.margin,
                    rate_in: g.rate_in,
                    rate_out: g.rate_out,
                    support: g.support,
                })
                .collect(),
            rules: groups
                .iter()
                .zip(&honest)
                .zip(adjusted.iter().zip(&significant))
                .take(top_k)
                .map(|((g, h), (&p_adjusted, &significant))| RankedRule {
                    rule: g.condition.clone(),
                    score: g.score,
                    phi_in: g.rate_in,
                    phi_out: g.rate_out,
                    margin: g.margin,
                    samples: g.samples,
                    selection_score: h.selection_score,
                    p_adjusted,
                    significant,
                })
                .collect(),
            worst_score: groups.first().map(|g| g.score),
            significant_rule_sets: significant.iter().filter(|s| **s).count(),
            alpha: ALPHA,
            stopped_by: output.budget.clone().or_else(|| output.stopped_by_host.then(|| "max_seconds".to_string())),
            plugin_figures: Map::new(),
        };
        // The auditor's figures come after plugin and params (and may replace them), before the
        // host's own.
        if let Some(f) = report["figures"].as_object() {
            let host_last = ["run_elapsed_s", "groups", "top", "rules", "worst_score", "significant_rule_sets", "alpha"];
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
            .str("complement", honest.iter().map(|h| h.complement.clone().unwrap_or_default()).collect())
            .f64("support", groups.iter().map(|g| g.support).collect())
            .f64("rate_in", groups.iter().map(|g| g.rate_in).collect())
            .f64("rate_out", groups.iter().map(|g| g.rate_out).collect())
            .f64("score", groups.iter().map(|g| g.score).collect())
            .f64("margin", groups.iter().map(|g| g.margin).collect())
            .i64("samples", groups.iter().map(|g| g.samples as i64).collect())
            .f64("selection_score", honest.iter().map(|h| h.selection_score).collect())
            .str("reestimated", honest.iter().map(|h| if h.reestimated { "yes" } else { "" }.to_string()).collect())
            .f64("p_value", honest.iter().map(|h| h.p_value).collect())
            .f64("p_adjusted", adjusted.clone())
            .str("significant", significant.iter().map(|&s| if s { "yes" } else { "" }.to_string()).collect())
            .build("")?;
        let model_queries = model.oracle.rows() - before;
        let artifact = GroupsArtifact { model: model.clone(), domain, groups };
        Ok(StageOutput { artifact: Artifact::Groups(Arc::new(artifact)), figures: Arc::new(figures), tables: vec![table], model_queries })
    }
}
