//! `retrain_text`: TestSGD's mitigation on text (RQ3; [`crate::text::mitigate`]). For the worst rule
//! set R of a `group_score_text` stage, texts generated from the training texts by term replacement
//! that the original model gives the class R is given less often are added to the training texts
//! in growing amounts: 50, 100, 200, … and last 10% of the training texts (the paper's "from 50 to
//! 10% of original dataset size"), or all generated texts when there are fewer. The native model
//! is retrained each time, and the model with the lowest score of R whose test accuracy drops by no
//! more than the tolerance is kept and passed on.
//! R's score is measured before and after on the same `group_samples` pairs of the texts the group
//! stage sampled (the model's own, or other texts such as templated sentences).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::retrain::{rounds_table, Measured, RetrainOutcome, Round};
use super::train_text::text_accuracy;
use crate::data::Split;
use crate::error::{Error, Result, StageError};
use crate::output::TableBuilder;
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{FigureDoc, FigureNames, InputDoc, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{nan_if_null, Artifact, ArtifactKind, Inputs, Stage, StageContext, StageOutput, TextModelArtifact};
use crate::text::classifier::{TextClassifier, TfidfLogistic};
use crate::text::mitigate::{fixed_score, mitigation_texts};
use crate::text::terms::Mention;

/// The `retrain_text` stage kind.
pub const KIND: StageKind = StageKind {
    name: "retrain_text",
    doc: "TestSGD's mitigation on text (RQ3): texts generated for the worst rule set of a group_score_text stage (its terms put into training texts that mention its categories) that the original model gives the class the rule set is given less often, with that label, added to the training texts in growing amounts (50, 100, 200, … up to 10% of them, or all there are); the train_text model is retrained each time and the one with the lowest score within the accuracy tolerance is kept and passed on. Reports the score and the test accuracy before and after.",
    inputs: &[InputDoc {
        role: "groups",
        accepts: &[ArtifactKind::TextGroups],
        required: true,
        doc: "the ranked rule sets of a group_score_text stage, whose model a train_text stage trained",
    }],
    output: ArtifactKind::TextModel,
    keys: RetrainTextConfig::keys,
    tag: None,
    example: "[stages.fairer]\nkind = \"retrain_text\"\ngroups = \"groups\"",
    configure: configure::<RetrainTextConfig>,
    fields: fields_of::<RetrainTextConfig>,
    read: read_debug::<RetrainTextConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::LeftOut,
    figures: FigureDoc::of::<RetrainTextFigures>(),
};

/// The `retrain_text` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct RetrainTextConfig {
    /// Largest test-accuracy drop accepted for the kept model.
    pub accuracy_tolerance: f64,
    /// Pairs on which the rule set's score is measured before and after.
    pub group_samples: usize,
    /// The stage's seed (set by the runner).
    #[serde(skip)]
    seed: u64,
}

impl Default for RetrainTextConfig {
    fn default() -> Self {
        RetrainTextConfig { accuracy_tolerance: 0.01, group_samples: 4000, seed: 0 }
    }
}

impl StageConfig for RetrainTextConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        c.within("accuracy_tolerance", self.accuracy_tolerance, 0.0, 1.0);
        c.at_least("group_samples", self.group_samples, 100);
    }

    fn instantiate(mut self, _facts: (), env: &StageEnv) -> Result<Box<dyn Stage>> {
        self.seed = env.seed;
        Ok(Box::new(self))
    }
}

/// Figures of a `retrain_text` stage: the contract names of `retrain` ([`RetrainOutcome`]), the
/// measure being the rule set's score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct RetrainTextFigures {
    /// Always "testsgd".
    pub strategy: String,
    /// What rate_before / rate_after measure.
    pub measure: String,
    /// The kept model.
    pub model: String,
    /// The rule set mitigated.
    pub group: String,
    /// The class it is given too often ("True" …), and the label of the added texts.
    pub over_given: String,
    /// Label of the added texts.
    pub label: String,
    /// Generated texts with that label available.
    pub samples_available: usize,
    /// Retraining rounds.
    pub rounds: usize,
    /// Texts added to the kept model's training texts.
    pub added: usize,
    /// The original model.
    pub before: Measured,
    /// The kept model.
    pub after: Measured,
    /// The score and the test accuracy before and after (no IDIs are used: `null`).
    #[serde(flatten)]
    pub outcome: RetrainOutcome,
    /// The kept model's accuracy on the original training texts.
    #[serde(deserialize_with = "nan_if_null")]
    pub accuracy_train: f64,
    /// Texts scored by the models (generation, measures, accuracy).
    pub texts_scored: u64,
}

/// A retrained text model is measured to be compared with the audited one, not audited itself.
impl StageFigures for RetrainTextFigures {
    const HEADLINE: &'static [&'static str] = &["accuracy_train", "rate_before", "rate_after", "accuracy_before", "accuracy_after"];

    const MODEL_STAGE: bool = true;

    const AUDITS_ITS_MODEL: bool = false;
}

/// A model with its measure: the rule set's score and rates, and the test accuracy.
struct Measurement {
    model: Arc<dyn TextClassifier>,
    score: f64,
    accuracy: f64,
    rate_in: f64,
    rate_out: f64,
}

/// The amounts added in successive rounds: 50, 100, 200, … below the cap, then the cap, which is
/// the smaller of `limit` and the texts `available`.
fn amounts(limit: usize, available: usize) -> Vec<usize> {
    let cap = limit.min(available);
    let mut out: Vec<usize> = std::iter::successors(Some(50), |a| Some(a * 2)).take_while(|&a| a < cap).collect();
    if cap > 0 {
        out.push(cap);
    }
    out
}

impl Stage for RetrainTextConfig {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let groups = inputs.text_groups("groups")?;
        let original = &groups.model;
        let recipe = original.recipe.ok_or_else(|| {
            StageError::cannot(
                "groups",
                format!(
                "retrain_text retrains a model trained by a train_text stage, and this one ({}) was loaded; train the same kind of model (TF-IDF + logistic regression) with train_text to mitigate it",
                    original.model.describe()
                ),
            )
        })?;
        let worst = groups
            .scores
            .first()
            .ok_or_else(|| StageError::cannot("groups", "the group_score_text stage scored no rule set (is theta too high?)"))?;
        let texts = &original.texts;
        // The rule set's (category, term) indices are those of the group stage's identity terms.
        let matcher = groups.texts.terms.matcher();
        // The measure: R's score on the group stage's texts, the same pairs for every model.
        let measured_rows = groups.texts.rows(groups.split);
        let measured: Vec<&str> = measured_rows.iter().map(|&i| groups.texts.data.texts[i].as_str()).collect();
        let measure_seed = self.seed ^ 0x9_50c0;
        let mut texts_scored = 0u64;
        let mut score_of = |model: &dyn TextClassifier| -> Result<(f64, f64, f64)> {
            let s = fixed_score(
                &measured,
                &groups.mentions,
                &matcher,
                model,
                &worst.rule_set,
                worst.support,
                self.group_samples,
                measure_seed,
            )?;
            texts_scored += 2 * s.samples as u64;
            Ok((s.score, s.rate_in, s.rate_out))
        };
        let (score_before, rate_in, rate_out) = score_of(original.model.as_ref())?;
        let (accuracy_before, _, n_test) = text_accuracy(original.model.as_ref(), texts, Split::Test)?;
        if n_test == 0 {
            return Err(Error::Invalid(format!(
                "retrain_text keeps a model only when its test accuracy holds, and the texts of {} have no test split; set test_fraction above 0 (or a split column with test rows) in its load_text stage",
                texts.data.path.display()
            )));
        }
        let mut scored_outside = n_test as u64;
        // R is given class `over` too often: add texts of R the original model gives the other class.
        let over = u8::from(rate_in >= rate_out);
        let label = 1 - over;
        let train_rows = texts.rows(Some(Split::Train));
        let train: Vec<&str> = train_rows.iter().map(|&i| texts.data.texts[i].as_str()).collect();
        let train_y: Vec<u8> = train_rows.iter().map(|&i| texts.data.y[i]).collect();
        let train_mentions: Vec<Vec<Mention>> = train.iter().map(|t| matcher.mentions(t)).collect();
        let (generated, scored) =
            mitigation_texts(&train, &train_mentions, &matcher, &worst.rule_set, original.model.as_ref(), label, self.seed)?;
        scored_outside += scored as u64;
        let limit = (train.len() / 10).max(50);
        let mut rounds = Vec::new();
        let mut best: Option<Measurement> = None;
        for (i, &amount) in amounts(limit, generated.len()).iter().enumerate() {
            let mut x = train.clone();
            x.extend(generated[..amount].iter().map(String::as_str));
            let mut y = train_y.clone();
            y.resize(train_y.len() + amount, label);
            let retrained = TfidfLogistic::train(&x, &y, &recipe)?;
            let (score, r_in, r_out) = score_of(&retrained)?;
            let (accuracy, _, _) = text_accuracy(&retrained, texts, Split::Test)?;
            scored_outside += n_test as u64;
            let acceptable = accuracy_before - accuracy <= self.accuracy_tolerance;
            let better = acceptable && score < score_before && best.as_ref().is_none_or(|b| score < b.score);
            rounds.push(Round {
                round: i + 1,
                percent: 100.0 * amount as f64 / train.len() as f64,
                added: amount,
                rate: score,
                accuracy_test: accuracy,
                kept: better,
            });
            if better {
                best = Some(Measurement { model: Arc::new(retrained), score, accuracy, rate_in: r_in, rate_out: r_out });
            }
        }
        let Measurement { model: kept, score: score_after, accuracy: accuracy_after, rate_in: in_after, rate_out: out_after } = best
            .unwrap_or(Measurement {
                model: Arc::clone(&original.model),
                score: score_before,
                accuracy: accuracy_before,
                rate_in,
                rate_out,
            });
        let added = rounds.iter().rfind(|r| r.kept).map_or(0, |r| r.added);
        let (accuracy_train, _, _) = text_accuracy(kept.as_ref(), texts, Split::Train)?;
        scored_outside += train.len() as u64;
        let class = |c: u8| texts.data.label_values[usize::from(c)].clone();
        let figures = RetrainTextFigures {
            strategy: "testsgd".into(),
            measure: "group score of the worst rule set".into(),
            model: kept.describe(),
            group: worst.rule.clone(),
            over_given: class(over),
            label: class(label),
            samples_available: generated.len(),
            rounds: rounds.len(),
            added,
            before: Measured {
                accuracy_test: accuracy_before,
                group_score: Some(score_before),
                rate_in: Some(rate_in),
                rate_out: Some(rate_out),
                ..Measured::default()
            },
            after: Measured {
                accuracy_test: accuracy_after,
                group_score: Some(score_after),
                rate_in: Some(in_after),
                rate_out: Some(out_after),
                ..Measured::default()
            },
            outcome: RetrainOutcome::new((score_before, score_after), (accuracy_before, accuracy_after), None),
            accuracy_train,
            texts_scored: texts_scored + scored_outside,
        };
        let added_table = TableBuilder::new()
            .str("text", generated[..added].to_vec())
            .str(&texts.data.label_name, vec![class(label); added])
            .build("added")?;
        let artifact = TextModelArtifact { model: kept, texts: Arc::clone(texts), recipe: Some(recipe) };
        Ok(StageOutput {
            artifact: Artifact::TextModel(Arc::new(artifact)),
            model_queries: figures.texts_scored,
            figures: Arc::new(figures),
            tables: vec![rounds_table(&rounds, "group_score")?, added_table],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::amounts;

    #[test]
    fn amounts_double_from_50_up_to_the_limit_and_what_is_available() {
        assert_eq!(amounts(119, 500), [50, 100, 119]);
        assert_eq!(amounts(1000, 300), [50, 100, 200, 300]);
        assert_eq!(amounts(200, 500), [50, 100, 200]);
        assert_eq!(amounts(119, 30), [30]);
        assert!(amounts(119, 0).is_empty());
    }
}
