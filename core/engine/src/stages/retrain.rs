//! The `retrain` stage: add verified discriminatory inputs to the training data, retrain the model
//! the same way it was trained, and measure before and after.
//!
//! * `aequitas` (Aequitas Algorithm 5): round i = 2, 3, …: p_i drawn from (2^(i−2), 2^(i−1)) percent
//!   of the training size (stop when p_i > 100); that many IDIs drawn at random are added to the
//!   original training data; the new model is kept while its estimated discrimination rate (§4.3)
//!   is lower than the current one's, and the loop stops at the first round that does not improve.
//! * `pairs` (ADF, EIDIG): every IDI and all its protected variants are added with one label; one
//!   retraining.
//!
//! * `testsgd` (TestSGD RQ3, with a `groups` input): samples of the worst group labelled with the
//!   class it is given less often, in growing amounts, keeping the lowest group score within an
//!   accuracy tolerance (see [`super::mitigate`]). `select` picks the paper's samples (those the
//!   original model already labels so, the default) or samples it labels the other way, relabelled.
//!
//! IDIs are first reduced to one per non-protected projection: the set usually holds both an IDI
//! and its counterpart, and adding each with its own (opposite) label cancels out.
//!
//! Algorithm 5 adds the drawn inputs themselves. An IDI labelled with the model's own prediction
//! teaches the model the very dependence on the protected attribute that made it discriminatory
//! (measured on the census MLP: 615 IDIs added alone raised the estimated rate from 11.6% to 30.7%),
//! so by default each drawn IDI is added together with its protected variants, all with the IDI's
//! label (`variants = false` follows the pseudo-code literally).
//!
//! The paper leaves the labels of added inputs open (§4.4: "beyond the scope"); `label = "seed"`
//! gives each added input the original model's prediction on the IDI itself, `"majority"` the
//! majority of the original model's predictions over the IDI's protected variants (ties: the IDI's
//! own prediction). Every estimate of a stage uses the same fresh seed, so rates are compared on the
//! same inputs.

use std::sync::Arc;

use ndarray::{concatenate, Array2, Axis};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use super::mitigate::{mitigation_samples, GroupSampler};
use super::model_output::{model_output, ModelFigures};
use crate::check::Checker;
use crate::data::Split;
use crate::error::{Error, Result, StageError};
use crate::estimate::{estimate, Estimate};
use crate::models::Model;
use crate::models::Recipe;
use crate::oracle::{accuracy, Oracle};
use crate::output::TableBuilder;
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::{KeyType, StageKeys};
use crate::stage::kind::{FigureDoc, FigureNames, InputDoc, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{nan_if_null, Artifact, ArtifactKind, GroupsArtifact, Inputs, ModelArtifact, Stage, StageContext, StageOutput};

/// The `retrain` stage kind.
pub const KIND: StageKind = StageKind {
    name: "retrain",
    doc: "Augment the training data and retrain the model as it was trained: verified discriminatory inputs (Aequitas Algorithm 5, or ADF/EIDIG pairs), or samples of the worst TestSGD group labelled with the class it is given less often (RQ3); reports accuracy and the discrimination measure before and after, and passes the retrained model on.",
    inputs: &[
        InputDoc { role: "model", accepts: &[ArtifactKind::Model], required: true, doc: "a model trained by a train stage" },
        InputDoc {
            role: "cases",
            accepts: &[ArtifactKind::Cases],
            required: false,
            doc: "verified discriminatory inputs (a verify stage); needed by aequitas and pairs",
        },
        InputDoc { role: "groups", accepts: &[ArtifactKind::Groups], required: false, doc: "group scores (a group_score stage); needed by testsgd" },
    ],
    output: ArtifactKind::Model,
    keys: RetrainConfig::keys,
    tag: Some("strategy"),
    example: "[stages.fairer]\nkind = \"retrain\"\nmodel = \"model\"\ncases = \"verified\"\nstrategy = \"aequitas\"",
    configure: configure::<RetrainConfig>,
    fields: fields_of::<RetrainConfig>,
    read: read_debug::<RetrainConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::LeftOut,
    figures: FigureDoc::of::<RetrainFigures>(),
};

/// The `retrain` stage's config: the strategy, with its own keys.
#[derive(Debug, Clone, PartialEq, Deserialize, StageKeys)]
#[serde(deny_unknown_fields)]
pub struct RetrainConfig {
    /// How IDIs (or, for testsgd, samples of the worst group) are added (`strategy = "..."`), with
    /// keys of its own.
    #[serde(rename = "+strategy")]
    pub strategy: RetrainStrategy,
}

/// `strategy = "..."` and the keys of that strategy.
#[derive(Debug, Clone, PartialEq, Deserialize, StageKeys)]
pub enum RetrainStrategy {
    /// Aequitas Algorithm 5: growing random shares of the IDIs, kept while the rate falls.
    #[serde(rename = "aequitas")]
    Aequitas(AequitasParams),
    /// ADF / EIDIG: every IDI with all its variants, one retraining.
    #[serde(rename = "pairs")]
    Pairs(PairsParams),
    /// TestSGD RQ3: samples of the worst group labelled with the class it is given less often.
    #[serde(rename = "testsgd")]
    TestSgd(TestSgdParams),
}

/// `label = "seed" | "majority"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, KeyType)]
#[serde(rename_all = "snake_case")]
pub enum AddedLabel {
    /// The original model's prediction on the IDI.
    #[default]
    Seed,
    /// The majority of its predictions over the IDI's protected variants.
    Majority,
}

/// Keys of `strategy = "aequitas"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct AequitasParams {
    /// Label of added inputs: the original prediction on the IDI, or the majority over its
    /// variants.
    pub label: AddedLabel,
    /// Estimate trials K for each model compared.
    pub trials: usize,
    /// Estimate inputs m per trial.
    pub samples: usize,
    /// Rounds at most (p_i reaches 100% at round 8).
    pub max_rounds: usize,
    /// Add each drawn IDI together with its protected variants, all with its label (false: the
    /// IDI alone, as Algorithm 5 is written).
    pub variants: bool,
}

impl Default for AequitasParams {
    fn default() -> Self {
        AequitasParams { label: AddedLabel::Seed, trials: 100, samples: 1000, max_rounds: 9, variants: true }
    }
}

/// Keys of `strategy = "pairs"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct PairsParams {
    /// Label of added inputs: the original prediction on the IDI, or the majority over its
    /// variants.
    pub label: AddedLabel,
    /// Estimate trials K for each model compared.
    pub trials: usize,
    /// Estimate inputs m per trial.
    pub samples: usize,
}

impl Default for PairsParams {
    fn default() -> Self {
        PairsParams { label: AddedLabel::Seed, trials: 100, samples: 1000 }
    }
}

/// Keys of `strategy = "testsgd"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct TestSgdParams {
    /// Largest test-accuracy drop accepted for the kept model.
    pub accuracy_tolerance: f64,
    /// Samples per side when a group's score is measured.
    pub group_samples: usize,
    /// Add group samples the original model already gives the other label, with it (the paper's
    /// RQ3), or samples it gives the over-given label, relabelled.
    pub select: SampleSelection,
}

impl Default for TestSgdParams {
    fn default() -> Self {
        TestSgdParams { accuracy_tolerance: 0.01, group_samples: 2000, select: SampleSelection::Opposite }
    }
}

/// `select = "..."` of `strategy = "testsgd"`: which generated samples of the worst group are added,
/// all labelled with the class the group is given less often than the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, KeyType)]
#[serde(rename_all = "snake_case")]
pub enum SampleSelection {
    /// The paper's (§5 RQ3: "we only select those generated instances with the opposite label",
    /// "labeled as 'True' according to the original model"): samples the original model already
    /// gives that class.
    Opposite,
    /// Samples the original model gives the over-given class, relabelled: they move the boundary
    /// where the model decides against the group, a stronger push than the paper's.
    Relabel,
}

impl StageConfig for RetrainConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        match &self.strategy {
            RetrainStrategy::Aequitas(p) => {
                c.at_least("trials", p.trials, 2);
                c.at_least("samples", p.samples, 1);
                c.at_least("max_rounds", p.max_rounds, 1);
            }
            RetrainStrategy::Pairs(p) => {
                c.at_least("trials", p.trials, 2);
                c.at_least("samples", p.samples, 1);
            }
            RetrainStrategy::TestSgd(p) => {
                c.within("accuracy_tolerance", p.accuracy_tolerance, 0.0, 1.0);
                c.at_least("group_samples", p.group_samples, 10);
            }
        }
    }

    fn instantiate(self, _facts: (), _env: &StageEnv) -> Result<Box<dyn Stage>> {
        let (a, t) = (AequitasParams::default(), TestSgdParams::default());
        let mut r = Retrain {
            strategy: Strategy::Aequitas,
            majority: false,
            trials: a.trials,
            samples: a.samples,
            max_rounds: a.max_rounds,
            variants: a.variants,
            accuracy_tolerance: t.accuracy_tolerance,
            group_samples: t.group_samples,
            select: t.select,
        };
        match self.strategy {
            RetrainStrategy::Aequitas(p) => {
                r.majority = p.label == AddedLabel::Majority;
                (r.trials, r.samples, r.max_rounds, r.variants) = (p.trials, p.samples, p.max_rounds, p.variants);
            }
            RetrainStrategy::Pairs(p) => {
                r.strategy = Strategy::Pairs;
                r.majority = p.label == AddedLabel::Majority;
                (r.trials, r.samples) = (p.trials, p.samples);
            }
            RetrainStrategy::TestSgd(p) => {
                r.strategy = Strategy::TestSgd;
                (r.accuracy_tolerance, r.group_samples, r.select) = (p.accuracy_tolerance, p.group_samples, p.select);
            }
        }
        Ok(Box::new(r))
    }
}

/// The model measured before or after retraining: test accuracy and the strategy's measure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Test accuracy.
    #[serde(deserialize_with = "nan_if_null")]
    pub accuracy_test: f64,
    /// Estimated discrimination rate (aequitas, pairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Its 95% interval (t over trials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95: Option<[f64; 2]>,
    /// Its 95% Wilson interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_wilson: Option<[f64; 2]>,
    /// The worst group's score (testsgd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_score: Option<f64>,
    /// Favourable rate in the group (testsgd, before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_in: Option<f64>,
    /// Favourable rate outside the group (testsgd, before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_out: Option<f64>,
}

/// The figures every retraining stage reports under the output contract's names: its measure (a rate, or a
/// group score) and the test accuracy, before and after, and the IDIs used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct RetrainOutcome {
    /// 1 − after / before of the measure.
    #[serde(deserialize_with = "nan_if_null")]
    pub rate_reduction: f64,
    /// The measure before.
    #[serde(deserialize_with = "nan_if_null")]
    pub rate_before: f64,
    /// The measure after.
    #[serde(deserialize_with = "nan_if_null")]
    pub rate_after: f64,
    /// Distinct IDIs used (`null` when the strategy uses none).
    pub idis_before: Option<usize>,
    /// Of those, still discriminatory under the kept model (`null` when the strategy uses none).
    pub idis_after: Option<usize>,
    /// Test accuracy before.
    #[serde(deserialize_with = "nan_if_null")]
    pub accuracy_before: f64,
    /// Test accuracy after.
    #[serde(deserialize_with = "nan_if_null")]
    pub accuracy_after: f64,
    /// accuracy_after − accuracy_before.
    #[serde(deserialize_with = "nan_if_null")]
    pub accuracy_change: f64,
}

impl RetrainOutcome {
    /// The outcome of measures `rate` and test accuracies `accuracy` (before, after), with the IDIs
    /// (used, still discriminatory) when the strategy uses IDIs.
    pub fn new(rate: (f64, f64), accuracy: (f64, f64), idis: Option<(usize, usize)>) -> Self {
        RetrainOutcome {
            rate_reduction: if rate.0 > 0.0 { 1.0 - rate.1 / rate.0 } else { 0.0 },
            rate_before: rate.0,
            rate_after: rate.1,
            idis_before: idis.map(|i| i.0),
            idis_after: idis.map(|i| i.1),
            accuracy_before: accuracy.0,
            accuracy_after: accuracy.1,
            accuracy_change: accuracy.1 - accuracy.0,
        }
    }
}

/// Figures of a `retrain` stage (output contract: `accuracy_before`, `accuracy_after`, `rate_before`,
/// `rate_after`, `idis_before`, `idis_after`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct RetrainFigures {
    /// The strategy.
    pub strategy: String,
    /// What rate_before / rate_after measure.
    pub measure: String,
    /// Label of added inputs (aequitas, pairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The group mitigated (testsgd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Which samples of the group were added (testsgd: "opposite" or "relabel").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub select: Option<String>,
    /// The model's algorithm.
    pub algorithm: String,
    /// Relabelled samples available (testsgd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_available: Option<usize>,
    /// Verified IDIs received (aequitas, pairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idis_available: Option<usize>,
    /// Of those, unique by non-protected projection (aequitas, pairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idis_unique_projections: Option<usize>,
    /// Retraining rounds.
    pub rounds: usize,
    /// Rows added to the kept model's training data.
    pub added: usize,
    /// The original model.
    pub before: Measured,
    /// The kept model.
    pub after: Measured,
    /// The measure and the accuracy before and after.
    #[serde(flatten)]
    pub outcome: RetrainOutcome,
    /// The kept model's accuracy.
    #[serde(flatten)]
    pub model: ModelFigures,
}

/// A retrained model is measured to be compared with the audited one, not audited itself.
impl StageFigures for RetrainFigures {
    const HEADLINE: &'static [&'static str] =
        &["accuracy_train", "accuracy_test", "rate_before", "rate_after", "accuracy_before", "accuracy_after"];

    const MODEL_STAGE: bool = true;

    const AUDITS_ITS_MODEL: bool = false;
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Strategy {
    Aequitas,
    Pairs,
    TestSgd,
}

struct Retrain {
    strategy: Strategy,
    majority: bool,
    trials: usize,
    samples: usize,
    max_rounds: usize,
    variants: bool,
    accuracy_tolerance: f64,
    group_samples: usize,
    select: SampleSelection,
}

/// One retraining round, for the table.
pub(crate) struct Round {
    /// 1, 2, …
    pub(crate) round: usize,
    /// Rows added, in percent of the training rows.
    pub(crate) percent: f64,
    /// Rows added.
    pub(crate) added: usize,
    /// The measure under the retrained model.
    pub(crate) rate: f64,
    /// Its test accuracy.
    pub(crate) accuracy_test: f64,
    /// Whether this model is the one kept.
    pub(crate) kept: bool,
}

impl Retrain {
    /// The label of each of `rows` (IDIs, `width` columns) under the original `oracle`.
    fn labels(&self, oracle: &Oracle, checker: &Checker, rows: &[f64], width: usize) -> Result<Vec<u8>> {
        if !self.majority {
            return Ok(oracle.predict_labels(rows)?);
        }
        let n_rows = rows.len() / width.max(1);
        let n_variants = checker.n_variants();
        let p = checker.scores(oracle, rows)?;
        Ok((0..n_rows)
            .map(|i| {
                // The variants include the IDI's own combination once; ties go to the IDI's own label.
                let scores = &p[i * (n_variants + 1)..(i + 1) * (n_variants + 1)];
                let ones = scores[1..].iter().filter(|&&q| q > 0.5).count();
                let zeros = n_variants - ones;
                if ones == zeros {
                    u8::from(scores[0] > 0.5)
                } else {
                    u8::from(ones > zeros)
                }
            })
            .collect())
    }
}

impl Retrain {
    /// TestSGD RQ3 on the worst group of `groups` (see [`super::mitigate`]).
    fn mitigate_group(&self, ctx: &StageContext, model: &ModelArtifact, groups: &GroupsArtifact, recipe: Recipe) -> Result<StageOutput> {
        let worst = groups.groups.first().ok_or_else(|| StageError::cannot("groups", "the group_score stage reported no group"))?;
        let domain = &groups.domain;
        let rule = &worst.rule;
        let (x_train, y_train) = model.data.subset(Split::Train);
        let (x_test, y_test) = model.data.subset(Split::Test);
        let train_rows: Vec<f64> = x_train.iter().copied().collect();
        let sampler = GroupSampler::new(domain, &train_rows, rule)?;
        let measure_seed = ctx.seed ^ 0x9_50c0;
        let score_of = |oracle: &Oracle| -> Result<(f64, f64, f64)> {
            let (a, b) = sampler.rates(oracle, self.group_samples, measure_seed)?;
            Ok(((a - b).abs(), a, b))
        };
        let before_queries = model.oracle.rows();
        let (score_before, rate_in, rate_out) = score_of(&model.oracle)?;
        let (acc_before, _) = accuracy(&model.oracle, &x_test, &y_test)?;
        // The group is given label `over` more often than the rest: add in-group samples labelled
        // the other way, chosen by `select` among those the original model labels either way.
        let over = u8::from(rate_in >= rate_out);
        let label = 1 - over;
        let picked = match self.select {
            SampleSelection::Opposite => label,
            SampleSelection::Relabel => over,
        };
        let limit = (y_train.len() / 10).max(50);
        let samples = mitigation_samples(&sampler, &model.oracle, picked, limit, ctx.seed)?;
        let width = domain.width();
        let available = samples.len() / width;
        let mut amounts = Vec::new();
        let mut a = 50;
        while a <= limit.min(available) {
            amounts.push(a);
            a *= 2;
        }
        if amounts.is_empty() && available > 0 {
            amounts.push(available);
        }
        let mut rounds = Vec::new();
        let mut retrained_queries = 0u64;
        let mut best: Option<(Arc<dyn Model>, f64, f64)> = None;
        for (i, &amount) in amounts.iter().enumerate() {
            let labels = vec![label; amount];
            let (x, y) = augmented(&x_train, &y_train, &samples[..amount * width], &labels)?;
            let retrained = recipe.fit_augmented(&x, &y, x_train.nrows())?.into_model();
            let oracle = Oracle::new(retrained.clone());
            let (score, _, _) = score_of(&oracle)?;
            let (acc, _) = accuracy(&oracle, &x_test, &y_test)?;
            retrained_queries += oracle.rows();
            let acceptable = acc_before - acc <= self.accuracy_tolerance;
            let better = acceptable && best.as_ref().is_none_or(|b| score < b.1) && score < score_before;
            rounds.push(Round {
                round: i + 1,
                percent: 100.0 * amount as f64 / y_train.len() as f64,
                added: amount,
                rate: score,
                accuracy_test: acc,
                kept: better,
            });
            if better {
                best = Some((retrained, score, acc));
            }
        }
        let (best_model, score_after, acc_after) = best.unwrap_or((model.oracle.model().clone(), score_before, acc_before));
        let figures = RetrainFigures {
            strategy: "testsgd".into(),
            measure: "group score of the worst group".into(),
            label: None,
            group: Some(worst.condition.clone()),
            select: Some(match self.select {
                SampleSelection::Opposite => "opposite".into(),
                SampleSelection::Relabel => "relabel".into(),
            }),
            algorithm: recipe.name().into(),
            samples_available: Some(available),
            idis_available: None,
            idis_unique_projections: None,
            rounds: rounds.len(),
            added: rounds.iter().filter(|r| r.kept).map(|r| r.added).next_back().unwrap_or(0),
            before: Measured {
                accuracy_test: acc_before,
                group_score: Some(score_before),
                rate_in: Some(rate_in),
                rate_out: Some(rate_out),
                ..Measured::default()
            },
            after: Measured { accuracy_test: acc_after, group_score: Some(score_after), ..Measured::default() },
            // The contract's fields: here the measure is the worst group's score, and no IDIs are used.
            outcome: RetrainOutcome::new((score_before, score_after), (acc_before, acc_after), None),
            model: ModelFigures::default(),
        };
        let queries = model.oracle.rows() - before_queries + retrained_queries;
        retrained_output(model, recipe, best_model, figures, &rounds, "group_score", queries)
    }
}

/// The stage's output: the kept model, `figures` completed with its accuracy, the rounds as a
/// table whose measure column is `measure`, and `queries` model rows on top of the new model's.
fn retrained_output(
    model: &ModelArtifact,
    recipe: Recipe,
    best_model: Arc<dyn Model>,
    mut figures: RetrainFigures,
    rounds: &[Round],
    measure: &str,
    queries: u64,
) -> Result<StageOutput> {
    let table = rounds_table(rounds, measure)?;
    let (artifact, model_figures, model_queries) = model_output(best_model, model.data.clone(), Some(recipe))?;
    figures.model = model_figures;
    Ok(StageOutput {
        artifact: Artifact::Model(Arc::new(artifact)),
        figures: Arc::new(figures),
        tables: vec![table],
        model_queries: model_queries + queries,
    })
}

/// The rounds as a table; `measure` names the rate column.
pub(crate) fn rounds_table(rounds: &[Round], measure: &str) -> Result<crate::output::Table> {
    Ok(TableBuilder::new()
        .i64("round", rounds.iter().map(|r| r.round as i64).collect())
        .f64("percent", rounds.iter().map(|r| r.percent).collect())
        .i64("added", rounds.iter().map(|r| r.added as i64).collect())
        .f64(measure, rounds.iter().map(|r| r.rate).collect())
        .f64("accuracy_test", rounds.iter().map(|r| r.accuracy_test).collect())
        .str("kept", rounds.iter().map(|r| r.kept.to_string()).collect())
        .build("")?)
}

/// The IDIs `picked` (indices into `idis`, `width` columns) as training rows: each IDI, with its
/// protected variants when `variants`, all with the IDI's label.
fn expand(idis: &[f64], width: usize, checker: &Checker, labels: &[u8], picked: &[usize], variants: bool) -> (Vec<f64>, Vec<u8>) {
    let mut rows = Vec::new();
    let mut row_labels = Vec::new();
    for &k in picked {
        let row = &idis[k * width..(k + 1) * width];
        rows.extend_from_slice(row);
        row_labels.push(labels[k]);
        if variants {
            for c in 0..checker.n_variants() {
                let v = checker.variant(row, c);
                if v.as_slice() != row {
                    rows.extend(v);
                    row_labels.push(labels[k]);
                }
            }
        }
    }
    (rows, row_labels)
}

/// The training data plus `rows` labelled `labels`.
fn augmented(x: &Array2<f64>, y: &[u8], rows: &[f64], labels: &[u8]) -> Result<(Array2<f64>, Vec<u8>)> {
    let extra = Array2::from_shape_vec((labels.len(), x.ncols()), rows.to_vec()).map_err(|e| Error::Internal(e.to_string()))?;
    let x = concatenate(Axis(0), &[x.view(), extra.view()]).map_err(|e| Error::Internal(e.to_string()))?;
    let mut y = y.to_vec();
    y.extend_from_slice(labels);
    Ok((x, y))
}

impl Stage for Retrain {
    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let recipe = model.recipe.clone().ok_or_else(|| {
            StageError::cannot("model", "retrain needs a model trained by a `train` stage (a loaded model's training procedure is unknown)")
        })?;
        if self.strategy == Strategy::TestSgd {
            let groups = inputs
                .optional_groups("groups")?
                .ok_or_else(|| StageError::cannot("groups", "strategy testsgd needs a `groups` input (a group_score stage)"))?;
            return self.mitigate_group(ctx, &model, &groups, recipe);
        }
        let cases = inputs
            .optional_cases("cases")?
            .ok_or_else(|| StageError::cannot("cases", "strategies aequitas and pairs need a `cases` input (a verify stage)"))?;
        let domain = &cases.domain;
        let width = domain.width();
        // One IDI per non-protected projection: an IDI and its counterpart are often both in the
        // set, and adding each with its own label would teach nothing.
        let protected = domain.protected_indices();
        let mut seen = std::collections::HashSet::new();
        let unique: Vec<usize> = (0..cases.instances.len() / width.max(1))
            .filter(|&k| {
                let row = &cases.instances[k * width..(k + 1) * width];
                seen.insert((0..width).filter(|j| !protected.contains(j)).map(|j| row[j].to_bits()).collect::<Vec<u64>>())
            })
            .collect();
        let n_cases = unique.len();
        if n_cases == 0 {
            return Err(StageError::cannot("cases", "no verified discriminatory inputs to retrain with"));
        }
        // The IDIs used, one per projection; labels and picks index into them.
        let used: Vec<f64> = unique.iter().flat_map(|&k| cases.instances[k * width..(k + 1) * width].iter().copied()).collect();
        let checker = Checker::new(domain, None).with_links(&model.data.links);
        let before_queries = model.oracle.rows();
        let labels = self.labels(&model.oracle, &checker, &used, width)?;
        let (x_train, y_train) = model.data.subset(Split::Train);
        let (x_test, y_test) = model.data.subset(Split::Test);
        let estimate_seed = ctx.seed ^ 0xe57_1a7e;
        let rate_of =
            |oracle: &Oracle| -> Result<Estimate> { Ok(estimate(oracle, domain, &checker, self.trials, self.samples, estimate_seed)?) };
        let before = rate_of(&model.oracle)?;
        let (acc_before, _) = accuracy(&model.oracle, &x_test, &y_test)?;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(ctx.seed);
        let mut retrained_queries = 0u64;
        let mut rounds = Vec::new();
        // Train on the training split plus `rows`, and measure: (model, estimate, test accuracy).
        let mut retrain_with = |rows: &[f64], row_labels: &[u8]| -> Result<(Arc<dyn Model>, Estimate, f64)> {
            let (x, y) = augmented(&x_train, &y_train, rows, row_labels)?;
            let retrained = recipe.fit_augmented(&x, &y, x_train.nrows())?.into_model();
            let oracle = Oracle::new(retrained.clone());
            let est = rate_of(&oracle)?;
            let (acc, _) = accuracy(&oracle, &x_test, &y_test)?;
            retrained_queries += oracle.rows();
            Ok((retrained, est, acc))
        };
        let (best_model, best_rate): (Arc<dyn Model>, Estimate) = match self.strategy {
            Strategy::Pairs => {
                let all: Vec<usize> = (0..n_cases).collect();
                let (rows, row_labels) = expand(&used, width, &checker, &labels, &all, true);
                let (retrained, est, acc) = retrain_with(&rows, &row_labels)?;
                rounds.push(Round {
                    round: 1,
                    percent: 100.0 * row_labels.len() as f64 / y_train.len() as f64,
                    added: row_labels.len(),
                    rate: est.rate,
                    accuracy_test: acc,
                    kept: true,
                });
                (retrained, est)
            }
            Strategy::TestSgd => unreachable!("handled above"),
            Strategy::Aequitas => {
                let mut current: (Arc<dyn Model>, Estimate) = (model.oracle.model().clone(), before.clone());
                for i in 2..2 + self.max_rounds {
                    let percent = rng.gen_range(2f64.powi(i as i32 - 2)..2f64.powi(i as i32 - 1));
                    if percent > 100.0 {
                        break;
                    }
                    let n_add = ((percent * y_train.len() as f64 / 100.0).round() as usize).clamp(1, n_cases);
                    let mut picked: Vec<usize> = (0..n_cases).collect();
                    for k in 0..n_add {
                        let j = rng.gen_range(k..n_cases);
                        picked.swap(k, j);
                    }
                    picked.truncate(n_add);
                    let (rows, row_labels) = expand(&used, width, &checker, &labels, &picked, self.variants);
                    let (retrained, est, acc) = retrain_with(&rows, &row_labels)?;
                    let kept = est.rate < current.1.rate;
                    rounds.push(Round { round: i, percent, added: row_labels.len(), rate: est.rate, accuracy_test: acc, kept });
                    if !kept {
                        break;
                    }
                    current = (retrained, est);
                }
                current
            }
        };
        let new_oracle = Oracle::new(best_model.clone());
        let (acc_after, _) = accuracy(&new_oracle, &x_test, &y_test)?;
        // output-contract names. idis_before: the distinct IDIs (by non-protected projection) used;
        // idis_after: how many of those the retrained model still treats differently.
        let still = checker.check(&new_oracle, &used)?.iter().filter(|v| v.discriminatory).count();
        let measured = |accuracy_test: f64, e: &Estimate| Measured {
            accuracy_test,
            rate: Some(e.rate),
            ci95: Some(e.ci95),
            ci95_wilson: Some(e.ci95_wilson),
            ..Measured::default()
        };
        let figures = RetrainFigures {
            strategy: if self.strategy == Strategy::Pairs { "pairs" } else { "aequitas" }.into(),
            measure: "estimated discrimination rate".into(),
            label: Some(if self.majority { "majority" } else { "seed" }.into()),
            group: None,
            select: None,
            algorithm: recipe.name().into(),
            samples_available: None,
            idis_available: Some(cases.instances.len() / width.max(1)),
            idis_unique_projections: Some(n_cases),
            rounds: rounds.len(),
            added: rounds.iter().filter(|r| r.kept).map(|r| r.added).max().unwrap_or(0),
            before: measured(acc_before, &before),
            after: measured(acc_after, &best_rate),
            outcome: RetrainOutcome::new((before.rate, best_rate.rate), (acc_before, acc_after), Some((n_cases, still))),
            model: ModelFigures::default(),
        };
        let queries = model.oracle.rows() - before_queries + retrained_queries + new_oracle.rows();
        retrained_output(&model, recipe, best_model, figures, &rounds, "rate", queries)
    }
}
