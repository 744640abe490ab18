//! `group_score_text`: TestSGD on text (§4.1–4.3; [`crate::text::groups`]): rule sets of identity
//! terms whose support reaches θ, each scored by |φr − φ¬r| with its error margin, samples made by
//! replacing a text's terms with the rule set's; ranked, with an example text per rule set.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::options::Rows;
use crate::error::Result;
use crate::output::TableBuilder;
use crate::pipeline::config::{configure, fields_of, Checks, StageConfig};
use crate::pipeline::kind::{InputDoc, KeyDoc, StageEnv, StageKind};
use crate::pipeline::stage::{figures_map, Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput};
use crate::text::groups::{frequent_text_rule_sets, score_text_rule_sets, TextGroupScore, TextScoreSettings};

/// The `group_score_text` stage kind.
pub const KIND: StageKind = StageKind {
    name: "group_score_text",
    doc: "TestSGD on text: rule sets of identity terms (at most one per category) whose support — the share of texts mentioning each of their categories — reaches theta, each scored by |P(class 1 | R) - P(class 1 | not R)| with its error margin (Algorithm 2); samples of R are texts whose terms of R's categories are replaced by R's terms, samples of not-R the texts that do not contain all of R's terms. Ranked, with an example text per rule set.",
    inputs: &[InputDoc { role: "model", accepts: &[ArtifactKind::TextModel], required: true, doc: "the text model (train_text or load_text_model)" }],
    output: ArtifactKind::TextModel,
    keys: &[
        KeyDoc::new("theta", "float", "0.05", "support threshold θ of a rule set"),
        KeyDoc::new("max_terms", "int", "4", "terms per rule set at most (one per category)"),
        KeyDoc::new("sample_thr", "int", "1000", "pairs drawn before the margin is first checked"),
        KeyDoc::new("error_thr", "float", "0.05", "target error margin of the score"),
        KeyDoc::new("z", "float", "1.96", "z of the confidence level"),
        KeyDoc::new("max_samples", "int", "100000", "pairs per rule set at most"),
        KeyDoc::new("split", "\"test\"|\"train\"|\"all\"", "\"all\"", "texts the support and the samples come from"),
        KeyDoc::new("top_k", "int", "10", "rule sets listed in summary.json (the table has all)"),
    ],
    tag: None,
    example: "[stages.groups]\nkind = \"group_score_text\"\nmodel = \"model\"\ntheta = 0.05",
    configure: configure::<GroupScoreTextConfig>,
    fields: fields_of::<GroupScoreTextConfig>,
};

/// The `group_score_text` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GroupScoreTextConfig {
    /// Support threshold.
    pub theta: f64,
    /// Terms per rule set at most.
    pub max_terms: usize,
    /// Pairs before the margin is checked.
    pub sample_thr: usize,
    /// Target margin.
    pub error_thr: f64,
    /// z of the confidence level.
    pub z: f64,
    /// Pairs per rule set at most.
    pub max_samples: usize,
    /// Texts used.
    pub split: Rows,
    /// Rule sets in summary.json.
    pub top_k: usize,
    /// The stage's seed (set by the runner).
    #[serde(skip)]
    seed: u64,
}

impl Default for GroupScoreTextConfig {
    fn default() -> Self {
        GroupScoreTextConfig {
            theta: 0.05,
            max_terms: 4,
            sample_thr: 1000,
            error_thr: 0.05,
            z: 1.96,
            max_samples: 100_000,
            split: Rows::All,
            top_k: 10,
            seed: 0,
        }
    }
}

impl StageConfig for GroupScoreTextConfig {
    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        c.within("theta", self.theta, 0.0, 1.0);
        c.at_least("max_terms", self.max_terms, 1);
        c.at_least("sample_thr", self.sample_thr, 1);
        c.within("error_thr", self.error_thr, 1e-6, 1.0);
        c.within("z", self.z, 0.01, 10.0);
        c.at_least("max_samples", self.max_samples, self.sample_thr.max(1));
    }

    fn instantiate(mut self, env: &StageEnv) -> Result<Box<dyn Stage>> {
        self.seed = env.seed;
        Ok(Box::new(self))
    }
}

/// Figures of a `group_score_text` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupScoreTextFigures {
    /// Rule sets whose support reaches θ.
    pub rule_sets_kept: usize,
    /// Rule sets scored per second.
    pub rule_sets_per_second: f64,
    /// Texts scored by the model.
    pub texts_scored: u64,
    /// The highest score, when any rule set was scored.
    pub worst_score: Option<f64>,
    /// The `top_k` rule sets.
    pub top: Vec<serde_json::Value>,
}

fn row(g: &TextGroupScore) -> serde_json::Value {
    serde_json::json!({"rule": g.rule, "score": g.score, "margin": g.margin, "rate_in": g.rate_in, "rate_out": g.rate_out,
        "support": g.support, "samples": g.samples, "converged": g.converged, "example": g.example})
}

impl Stage for GroupScoreTextConfig {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.text_model("model")?;
        let texts = &model.texts;
        let rows = texts.rows(self.split.split());
        let refs: Vec<&str> = rows.iter().map(|&i| texts.data.texts[i].as_str()).collect();
        let matcher = texts.terms.matcher();
        let mentions: Vec<_> = refs.iter().map(|t| matcher.mentions(t)).collect();
        let sets = frequent_text_rule_sets(&mentions, &matcher, self.theta, self.max_terms);
        let settings =
            TextScoreSettings { sample_thr: self.sample_thr, error_thr: self.error_thr, z: self.z, max_samples: self.max_samples };
        let started = std::time::Instant::now();
        let scores = score_text_rule_sets(&refs, &mentions, &matcher, model.model.as_ref(), &sets, &settings, self.seed)?;
        let elapsed = started.elapsed().as_secs_f64();
        let texts_scored: u64 = scores.iter().map(|s| 2 * s.samples as u64).sum();
        let figures = GroupScoreTextFigures {
            rule_sets_kept: sets.len(),
            rule_sets_per_second: if elapsed > 0.0 { scores.len() as f64 / elapsed } else { 0.0 },
            texts_scored,
            worst_score: scores.first().map(|s| s.score),
            top: scores.iter().take(self.top_k).map(row).collect(),
        };
        let table = TableBuilder::new()
            .str("rule", scores.iter().map(|s| s.rule.clone()).collect())
            .f64("score", scores.iter().map(|s| s.score).collect())
            .f64("margin", scores.iter().map(|s| s.margin).collect())
            .f64("rate_in", scores.iter().map(|s| s.rate_in).collect())
            .f64("rate_out", scores.iter().map(|s| s.rate_out).collect())
            .f64("support", scores.iter().map(|s| s.support).collect())
            .i64("samples", scores.iter().map(|s| s.samples as i64).collect())
            .str("example", scores.iter().map(|s| s.example.clone()).collect())
            .build("")?;
        Ok(StageOutput {
            artifact: Artifact::TextModel(Arc::clone(&model)),
            figures: figures_map(&figures),
            tables: vec![table],
            model_queries: texts_scored,
        })
    }
}
