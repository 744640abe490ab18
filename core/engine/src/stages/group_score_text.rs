//! `group_score_text`: TestSGD on text (§4.1–4.3; [`crate::text::groups`]): rule sets of identity
//! terms whose support reaches θ, each scored by |φr − φ¬r| with its error margin, samples made by
//! replacing a text's terms with the rule set's; ranked, with an example text per rule set.
//!
//! Reported honestly, as `group_score` reports tabular groups: rule sets are ranked on one draw of
//! samples and the `leaders` are scored again on a fresh draw (their shown score, margin and rates
//! come from it, `selection_score` is the score that ranked them), so the top score is not the
//! maximum of noisy scores; each rule set has the p-value of its ranking draw (Fisher's exact test
//! or the two-proportion z test), Holm-adjusted over every rule set scored, and `significant` at 5%.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::options::Rows;
use crate::error::Result;
use crate::output::TableBuilder;
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{FigureDoc, FigureNames, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{nan_if_null, Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput, TextGroupsArtifact};
use crate::stats::{holm, proportions_test};
use crate::text::groups::{frequent_text_rule_sets, score_text_rule_sets, TextGroupScore, TextRuleSet, TextScoreSettings};

/// The `group_score_text` stage kind.
pub const KIND: StageKind = StageKind {
    name: "group_score_text",
    doc: "TestSGD on text: rule sets of identity terms (at most one per category) whose support — the share of texts mentioning each of their categories — reaches theta, each scored by |P(class 1 | R) - P(class 1 | not R)| with its error margin (Algorithm 2); samples of R are texts whose terms of R's categories are replaced by R's terms, samples of not-R the texts that do not contain all of R's terms. Ranked on one draw, the leaders scored again on fresh samples, each with its Holm-adjusted p-value and an example text; retrain_text mitigates the worst.",
    inputs: &[
        super::train_text::TEXT_MODEL_INPUT,
        super::train_text::OTHER_TEXTS_INPUT,
    ],
    output: ArtifactKind::TextGroups,
    keys: GroupScoreTextConfig::keys,
    tag: None,
    example: "[stages.groups]\nkind = \"group_score_text\"\nmodel = \"model\"\ntheta = 0.05",
    configure: configure::<GroupScoreTextConfig>,
    fields: fields_of::<GroupScoreTextConfig>,
    read: read_debug::<GroupScoreTextConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::LeftOut,
    figures: FigureDoc::of::<GroupScoreTextFigures>(),
};

/// The `group_score_text` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct GroupScoreTextConfig {
    /// Support threshold θ of a rule set.
    pub theta: f64,
    /// Terms per rule set at most (one per category).
    pub max_terms: usize,
    /// Pairs drawn before the margin is first checked.
    pub sample_thr: usize,
    /// Target error margin of the score.
    pub error_thr: f64,
    /// z of the confidence level.
    pub z: f64,
    /// Pairs per rule set at most.
    pub max_samples: usize,
    /// Texts the support and the samples come from.
    pub split: Rows,
    /// The top rule sets scored again on fresh samples after ranking (0: none).
    pub leaders: usize,
    /// Rule sets listed in summary.json (the table has all).
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
            leaders: 10,
            top_k: 10,
            seed: 0,
        }
    }
}

impl StageConfig for GroupScoreTextConfig {
    type Facts = ();

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

    fn instantiate(mut self, _facts: (), env: &StageEnv) -> Result<Box<dyn Stage>> {
        self.seed = env.seed;
        Ok(Box::new(self))
    }
}

/// Figures of a `group_score_text` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct GroupScoreTextFigures {
    /// Rule sets whose support reaches θ.
    pub rule_sets_kept: usize,
    /// Rule sets scored per second.
    pub rule_sets_per_second: f64,
    /// Texts scored by the model.
    pub texts_scored: u64,
    /// The first-ranked rule set's score, when any rule set was scored.
    pub worst_score: Option<f64>,
    /// Leaders scored again on fresh samples.
    pub leaders_reestimated: usize,
    /// Rule sets whose Holm-adjusted p-value is at most `alpha`.
    pub significant_rule_sets: usize,
    /// The significance level.
    pub alpha: f64,
    /// The `top_k` rule sets.
    pub top: Vec<TopTextGroup>,
}

/// Figures the verdict does not read.
impl StageFigures for GroupScoreTextFigures {
    const HEADLINE: &'static [&'static str] = &["rule_sets_kept", "worst_score"];
}

/// One of a `group_score_text` stage's ranked identity-term rule sets (`top` in `summary.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopTextGroup {
    /// The rule set, as text (`term = muslim, term = gay`).
    pub rule: String,
    /// |P(class 1 | with the terms) − P(class 1 | the rest)|, the fresh draw's for a leader.
    #[serde(deserialize_with = "nan_if_null")]
    pub score: f64,
    /// The score's margin of error.
    #[serde(deserialize_with = "nan_if_null")]
    pub margin: f64,
    /// Share of class 1 among the texts with the terms.
    #[serde(deserialize_with = "nan_if_null")]
    pub rate_in: f64,
    /// Share of class 1 among the rest.
    #[serde(deserialize_with = "nan_if_null")]
    pub rate_out: f64,
    /// Share of the texts that mention the terms.
    #[serde(deserialize_with = "nan_if_null")]
    pub support: f64,
    /// Texts sampled on each side.
    pub samples: usize,
    /// Whether the estimate reached its error threshold.
    pub converged: bool,
    /// The score on the selection draw (what ranked it).
    #[serde(deserialize_with = "nan_if_null")]
    pub selection_score: f64,
    /// Whether the score shown is a fresh draw's (a leader's).
    pub reestimated: bool,
    /// The two-proportion test's p-value on the selection draw.
    #[serde(deserialize_with = "nan_if_null")]
    pub p_value: f64,
    /// The p-value after Holm's adjustment over all rule sets.
    #[serde(deserialize_with = "nan_if_null")]
    pub p_adjusted: f64,
    /// Whether `p_adjusted` is at most `alpha`.
    pub significant: bool,
    /// A text with the terms.
    pub example: String,
}

/// Significance level of the rule sets' tests.
const ALPHA: f64 = 0.05;

/// A ranked rule set: its shown score (fresh for a leader) and its test.
struct Ranked {
    shown: TextGroupScore,
    selection_score: f64,
    reestimated: bool,
    p_value: f64,
    p_adjusted: f64,
}

impl Ranked {
    fn significant(&self) -> bool {
        self.p_adjusted <= ALPHA
    }

    fn figures(&self) -> TopTextGroup {
        let g = &self.shown;
        TopTextGroup {
            rule: g.rule.clone(),
            score: g.score,
            margin: g.margin,
            rate_in: g.rate_in,
            rate_out: g.rate_out,
            support: g.support,
            samples: g.samples,
            converged: g.converged,
            selection_score: self.selection_score,
            reestimated: self.reestimated,
            p_value: self.p_value,
            p_adjusted: self.p_adjusted,
            significant: self.significant(),
            example: g.example.clone(),
        }
    }
}

/// Rank `selection` (sorted, worst first) with the fresh scores of its leaders and the tests of the
/// selection draw.
fn rank(selection: Vec<TextGroupScore>, fresh: Vec<TextGroupScore>) -> Vec<Ranked> {
    let count = |rate: f64, n: usize| (rate * n as f64).round() as usize;
    let p_values: Vec<f64> = selection
        .iter()
        .map(|g| proportions_test(count(g.rate_in, g.samples), g.samples, count(g.rate_out, g.samples), g.samples).p_value)
        .collect();
    let adjusted = holm(&p_values);
    selection
        .into_iter()
        .zip(p_values.into_iter().zip(adjusted))
        .map(|(g, (p_value, p_adjusted))| {
            let again = fresh.iter().find(|f| f.rule_set == g.rule_set);
            let selection_score = g.score;
            let shown = match again {
                Some(f) => TextGroupScore { example: g.example.clone(), ..f.clone() },
                None => g,
            };
            Ranked { shown, selection_score, reestimated: again.is_some(), p_value, p_adjusted }
        })
        .collect()
}

impl Stage for GroupScoreTextConfig {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.text_model("model")?;
        let texts = inputs.optional_texts("data")?.unwrap_or_else(|| Arc::clone(&model.texts));
        let split = self.split.split();
        let rows = texts.rows(split);
        let refs: Vec<&str> = rows.iter().map(|&i| texts.data.texts[i].as_str()).collect();
        let matcher = texts.terms.matcher();
        let mentions: Vec<_> = refs.iter().map(|t| matcher.mentions(t)).collect();
        let sets = frequent_text_rule_sets(&mentions, &matcher, self.theta, self.max_terms);
        let settings =
            TextScoreSettings { sample_thr: self.sample_thr, error_thr: self.error_thr, z: self.z, max_samples: self.max_samples };
        let started = std::time::Instant::now();
        let selection = score_text_rule_sets(&refs, &mentions, &matcher, model.model.as_ref(), &sets, &settings, self.seed)?;
        // Selection and estimation on separate draws: the leaders again, on samples of their own seed.
        let leader_sets: Vec<(TextRuleSet, f64)> = selection.iter().take(self.leaders).map(|g| (g.rule_set.clone(), g.support)).collect();
        let fresh_seed = self.seed ^ 0xf2e5_4d00;
        let fresh = score_text_rule_sets(&refs, &mentions, &matcher, model.model.as_ref(), &leader_sets, &settings, fresh_seed)?;
        let elapsed = started.elapsed().as_secs_f64();
        let texts_scored: u64 = selection.iter().chain(&fresh).map(|s| 2 * s.samples as u64).sum();
        let scored = selection.len();
        let ranked = rank(selection, fresh);
        let figures = GroupScoreTextFigures {
            rule_sets_kept: sets.len(),
            rule_sets_per_second: if elapsed > 0.0 { scored as f64 / elapsed } else { 0.0 },
            texts_scored,
            worst_score: ranked.first().map(|r| r.shown.score),
            leaders_reestimated: leader_sets.len(),
            significant_rule_sets: ranked.iter().filter(|r| r.significant()).count(),
            alpha: ALPHA,
            top: ranked.iter().take(self.top_k).map(Ranked::figures).collect(),
        };
        let column = |f: &dyn Fn(&Ranked) -> f64| ranked.iter().map(f).collect::<Vec<f64>>();
        let table = TableBuilder::new()
            .str("rule", ranked.iter().map(|r| r.shown.rule.clone()).collect())
            .f64("score", column(&|r| r.shown.score))
            .f64("margin", column(&|r| r.shown.margin))
            .f64("rate_in", column(&|r| r.shown.rate_in))
            .f64("rate_out", column(&|r| r.shown.rate_out))
            .f64("support", column(&|r| r.shown.support))
            .i64("samples", ranked.iter().map(|r| r.shown.samples as i64).collect())
            .f64("selection_score", column(&|r| r.selection_score))
            .str("reestimated", ranked.iter().map(|r| r.reestimated.to_string()).collect())
            .f64("p_value", column(&|r| r.p_value))
            .f64("p_adjusted", column(&|r| r.p_adjusted))
            .str("significant", ranked.iter().map(|r| r.significant().to_string()).collect())
            .str("example", ranked.iter().map(|r| r.shown.example.clone()).collect())
            .build("")?;
        let scores = ranked.into_iter().map(|r| r.shown).collect();
        Ok(StageOutput {
            artifact: Artifact::TextGroups(Arc::new(TextGroupsArtifact { model, texts, split, mentions, scores })),
            figures: Arc::new(figures),
            tables: vec![table],
            model_queries: texts_scored,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(term: usize, rate_in: f64, rate_out: f64, samples: usize) -> TextGroupScore {
        TextGroupScore {
            rule_set: TextRuleSet(vec![(0, term)]),
            rule: format!("term {term}"),
            support: 0.2,
            rate_in,
            rate_out,
            score: (rate_in - rate_out).abs(),
            margin: 0.03,
            samples,
            converged: true,
            example: format!("example {term}"),
        }
    }

    #[test]
    fn leaders_show_their_fresh_draw_and_every_rule_set_its_holm_adjusted_test() {
        let selection = vec![score(1, 0.30, 0.02, 1000), score(2, 0.06, 0.05, 1000), score(3, 0.05, 0.05, 1000)];
        let fresh = vec![score(1, 0.25, 0.03, 1000)];
        let ranked = rank(selection, fresh);
        assert!(ranked[0].reestimated && !ranked[1].reestimated);
        assert!((ranked[0].shown.score - 0.22).abs() < 1e-12 && (ranked[0].selection_score - 0.28).abs() < 1e-12);
        assert_eq!(ranked[0].shown.example, "example 1", "the example stays the ranking draw's");
        assert_eq!(ranked[1].shown.score, ranked[1].selection_score);
        // 300 of 1000 against 20 of 1000 is far beyond chance; 60 against 50 and 50 against 50 are not.
        assert!(ranked[0].significant() && !ranked[1].significant() && !ranked[2].significant());
        let p: Vec<f64> = ranked.iter().map(|r| r.p_value).collect();
        assert_eq!(ranked.iter().map(|r| r.p_adjusted).collect::<Vec<_>>(), holm(&p));
        assert!(ranked.iter().all(|r| r.p_adjusted >= r.p_value));
    }
}
