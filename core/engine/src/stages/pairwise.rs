//! `pairwise`: an LLM asked to choose between two candidates in one prompt, the design of the
//! pairwise hiring studies (Rozado's 30,800 pairwise decisions; Wilson & Caliskan 2024). Each row
//! (one document, e.g. a resume) becomes a pair of candidates that differ in one protected
//! attribute only (two values of it, the row's other values kept, each candidate named from the
//! model's `names` table at the same position of its list), and the pair is asked in both orders:
//! the first candidate listed is labelled `labels[0]` ("A"), the second `labels[1]` ("B").
//!
//! Figures, from P(the first listed is chosen) of each prompt (the first token's `top_logprobs`
//! normalised over the two labels, the share of samples, or one answer; [`LlmModel::choices`]):
//! - `position_effect`: P(the first listed is chosen) − 0.5, averaged over both orders of every
//!   pair, so that who the candidates are cancels (Yin et al. 2025 found position weighing more
//!   than gender);
//! - `chosen_rate`: per protected value, the mean share of the pairs it is in that it wins (each
//!   pair's win averaged over its two orders);
//! - `versus_reference`: per value other than the attribute's reference (its first), over the
//!   pairs of that value and the reference: both rates, their ratio, the interval of the value's
//!   rate, and the t test of that rate against 0.5 (two-sided).
//!
//! Pairs are not independent: the same first names serve many documents, and a model that
//! reacts to one name moves every pair showing it. Every interval and test is therefore
//! cluster-robust over the names each side shows, the document and the stage's `cluster_by` columns
//! ([`crate::clustered`], [`crate::cluster_keys`]); the independent (Student t over the pairs)
//! interval is kept beside as `…ci95_independent`.
//!
//! A pair whose answers name neither label in an order is left out of every figure and counted
//! (`unparsed_pairs`).
//!
//! [`LlmModel::choices`]: crate::models::llm::LlmModel::choices

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::estimate::MODEL_INPUT;
use super::llm_prompts::{asked_llm, check_template, unit_mean};
use super::options::{check_protected, Rows};
use crate::check::Checker;
use crate::cluster_keys::ClusterKeys;
use crate::error::Result;
use crate::models::llm::error::LlmError;
use crate::models::llm::LlmModel;
use crate::output::TableBuilder;
use crate::sequential::ConfidenceSequence;
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{FigureDoc, FigureNames, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{
    audited_rows, nan_if_null, Artifact, ArtifactKind, GroupMetricRow, GroupMetricsArtifact, Inputs, Stage, StageContext, StageOutput,
};
use crate::stats::t_two_sided_p;

/// The `pairwise` stage kind.
pub const KIND: StageKind = StageKind {
    name: "pairwise",
    doc: "Ask an LLM to choose between two candidates who differ only in a protected attribute (the same document under two names), each pair in both orders: the position effect (P(the first listed is chosen) − 0.5), each protected value's chosen rate, its ratio to the reference's and a t test.",
    inputs: MODEL_INPUT,
    output: ArtifactKind::GroupMetrics,
    keys: PairwiseConfig::keys,
    tag: None,
    example: "[stages.pairwise]\nkind = \"pairwise\"\nmodel = \"model\"\nprompt = \"prompts/resume-pairwise.j2\"",
    configure: configure::<PairwiseConfig>,
    fields: fields_of::<PairwiseConfig>,
    read: read_debug::<PairwiseConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::Runs,
    figures: FigureDoc::of::<PairwiseFigures>(),
};

fn default_labels() -> Vec<String> {
    vec!["A".into(), "B".into()]
}

fn default_split() -> Rows {
    Rows::All
}

/// The `pairwise` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields)]
pub struct PairwiseConfig {
    /// The pair's prompt template (minijinja), relative to the pipeline file: it sees the row's
    /// values as the model's template does, and each candidate's under `first` and `second`
    /// (`{{ first.name }}`, `{{ second.sex }}`).
    pub prompt: PathBuf,
    /// The answers naming the first and the second candidate listed.
    #[serde(default = "default_labels")]
    pub labels: Vec<String>,
    /// Rows made into pairs (one document each; an LLM is not trained, so every row by default).
    #[serde(default = "default_split")]
    pub split: Rows,
    /// Audit these protected attributes instead of the data's.
    #[serde(default)]
    #[key(shared = super::options::PROTECTED)]
    pub protected: Option<Vec<String>>,
    /// Columns the pairs share beyond the names and the document: the intervals are clustered
    /// over them.
    #[serde(default)]
    #[key(shared = super::options::CLUSTER_BY)]
    pub cluster_by: Vec<String>,
    /// Ask the pairs in a seeded random order and stop once the position effect and every
    /// value's rate against the reference are known to this half-width (confidence sequences,
    /// valid at the stop).
    #[serde(default)]
    #[key(shared = super::options::PRECISION)]
    pub precision: Option<f64>,
}

/// Pairs asked between two looks at a `precision` stop.
const PAIRS_PER_LOOK: usize = 32;

impl StageConfig for PairwiseConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        check_protected(c, &self.protected);
        if let Some(precision) = self.precision {
            if !(precision > 0.0 && precision < 0.5) {
                c.problem(
                    "precision",
                    format!("`precision` is the intervals' half-width: a number above 0 and below 0.5, not {precision}"),
                );
            }
        }
        if self.labels.len() != 2
            || self.labels.iter().any(|l| l.trim().is_empty())
            || self.labels[0].trim() == self.labels.get(1).map_or("", |l| l.trim())
        {
            c.problem(
                "labels",
                "`labels` must be two different answers, the first listed candidate's and the second's, e.g. [\"A\", \"B\"]",
            );
        }
        check_template(c, &self.prompt, "pairwise");
    }

    fn instantiate(self, _facts: (), env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(PairwiseStage { config: self, dir: env.dir.clone() }))
    }
}

/// A configured `pairwise` stage: its config and the folder its template is relative to.
struct PairwiseStage {
    config: PairwiseConfig,
    dir: PathBuf,
}

/// One protected value's chosen rate over every pair it is in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChosenRate {
    /// The protected attribute.
    pub attribute: String,
    /// The value (decoded).
    pub value: String,
    /// Pairs it is in.
    pub pairs: u64,
    /// Mean over those pairs of its win (P(chosen), averaged over the two orders).
    #[serde(deserialize_with = "nan_if_null")]
    pub rate: f64,
    /// 95% interval of the rate over the pairs, cluster-robust over the names each side shows,
    /// the document and the `cluster_by` columns ([`crate::clustered`]); none under two pairs (or
    /// two clusters).
    pub ci95: Option<[f64; 2]>,
    /// Student's t interval treating the pairs as independent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_independent: Option<[f64; 2]>,
}

/// A value against the attribute's reference, over the pairs of the two.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersusReference {
    /// The protected attribute.
    pub attribute: String,
    /// The value compared (decoded).
    pub value: String,
    /// The reference value (the attribute's first).
    pub reference: String,
    /// Pairs of the value and the reference.
    pub pairs: u64,
    /// The value's chosen rate over them.
    #[serde(deserialize_with = "nan_if_null")]
    pub rate: f64,
    /// The reference's (1 − `rate`: each answer chooses one of the two).
    #[serde(deserialize_with = "nan_if_null")]
    pub reference_rate: f64,
    /// `rate` / `reference_rate`.
    #[serde(deserialize_with = "nan_if_null")]
    pub ratio: f64,
    /// 95% interval of `rate`, cluster-robust as `chosen_rate`'s; none under two pairs (or two
    /// clusters).
    pub ci95: Option<[f64; 2]>,
    /// t statistic of `rate` against 0.5, with the cluster-robust standard error (the fewest
    /// clusters of one way − 1 degrees of freedom).
    #[serde(deserialize_with = "nan_if_null")]
    pub t: f64,
    /// Its two-sided p-value.
    #[serde(deserialize_with = "nan_if_null")]
    pub p_value: f64,
    /// Student's t interval treating the pairs as independent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_independent: Option<[f64; 2]>,
    /// The clusters of each way (`names (compared side)`, `names (reference side)`, `document`,
    /// each `cluster_by` column).
    #[serde(default)]
    pub clusters: BTreeMap<String, usize>,
}

/// Figures of a `pairwise` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct PairwiseFigures {
    /// Pairs asked (rows × protected attributes × pairs of their values) whose answers were read
    /// in both orders.
    pub pairs: u64,
    /// Prompts asked (two per pair).
    pub prompts: u64,
    /// Pairs left out: an answer in one of the orders named neither label.
    pub unparsed_pairs: u64,
    /// The labels of the first and the second candidate listed.
    pub labels: Vec<String>,
    /// P(the first listed is chosen) − 0.5, averaged over both orders of every pair.
    #[serde(deserialize_with = "nan_if_null")]
    pub position_effect: f64,
    /// 95% interval of `position_effect`, cluster-robust over the names each side shows, the
    /// document and the `cluster_by` columns; none under two pairs (or two clusters).
    pub position_effect_ci95: Option<[f64; 2]>,
    /// Student's t interval of `position_effect` treating the pairs as independent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position_effect_ci95_independent: Option<[f64; 2]>,
    /// Per protected value, the mean share of its pairs it wins.
    pub chosen_rate: Vec<ChosenRate>,
    /// Per value other than its attribute's reference, against the reference.
    pub versus_reference: Vec<VersusReference>,
    /// With `precision`: how asking stopped (`reached` is the widest of the position effect's and
    /// each `versus_reference` rate's confidence sequences; `ci95` the position effect's, valid at
    /// the stop; `observations` the pairs read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<crate::sequential::PrecisionStop>,
}

/// A pairwise stage's headline: the position effect and the pairs.
impl StageFigures for PairwiseFigures {
    const HEADLINE: &'static [&'static str] = &["position_effect", "pairs"];
}

/// One pair's answers: which row, attribute and values, P(the first listed is chosen) in each
/// order (`ab`: the first value listed first), and the pair's cluster keys (the `ab` order's first
/// candidate taken as the compared side).
struct PairAnswer {
    row: usize,
    attribute: usize,
    values: (usize, usize),
    ab: Option<f64>,
    ba: Option<f64>,
    keys: Vec<String>,
}

impl Stage for PairwiseStage {
    fn preflight(&self, data: &crate::data::Dataset, _warnings: &crate::warnings::Warnings) -> Result<()> {
        crate::cluster_keys::cluster_columns(&data.domain, &self.config.cluster_by).map(|_| ())
    }

    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let llm = asked_llm(&model, KIND.name, "to choose between two candidates")?;
        let (domain, rows) = audited_rows(&model, self.config.protected.as_deref(), self.config.split.split(), &ctx.warnings)?;
        let width = domain.width().max(1);
        let shown = self.config.prompt.display().to_string();
        let renderer = llm.pair_renderer(&self.dir.join(&self.config.prompt), &shown)?;
        let protected = domain.protected_indices();
        let grids: Vec<Vec<f64>> = protected.iter().map(|&i| domain.attributes[i].grid()).collect();
        let checker = Checker::new(&domain, None);
        let cluster_keys = ClusterKeys::new(&model.oracle, &domain, &checker, &self.config.cluster_by, true)?
            .ok_or_else(|| crate::error::Error::Internal("an LLM's pairs are always clustered".into()))?;
        let ways = cluster_keys.pair_ways();
        // Every pair: per row, per protected attribute, per two of its values (i < j).
        let mut pairs: Vec<PairAnswer> = Vec::new();
        let mut prompts: Vec<String> = Vec::new();
        let mut checked_template = false;
        for (r, row) in rows.chunks_exact(width).enumerate() {
            for (k, &column) in protected.iter().enumerate() {
                for i in 0..grids[k].len() {
                    for j in i + 1..grids[k].len() {
                        let (mut first, mut second) = (row.to_vec(), row.to_vec());
                        first[column] = grids[k][i];
                        second[column] = grids[k][j];
                        let fail = |e: LlmError| crate::error::Error::from(e.at(llm.base_url()));
                        if !checked_template {
                            renderer.check_pair_said(&first, &second).map_err(fail)?;
                            checked_template = true;
                        }
                        prompts.push(renderer.render_pair(&first, &second).map_err(fail)?);
                        prompts.push(renderer.render_pair(&second, &first).map_err(fail)?);
                        let keys = cluster_keys.keys_of_two(&first, &second);
                        pairs.push(PairAnswer { row: r, attribute: k, values: (i, j), ab: None, ba: None, keys });
                    }
                }
            }
        }
        crate::progress::start(&ctx.progress, prompts.len() as u64, "prompts asked");
        let labels = [self.config.labels[0].clone(), self.config.labels[1].clone()];
        let requests_before = crate::sequential::llm_requests(&model.oracle);
        let (asked, stop) = match self.config.precision {
            None => {
                let answers = llm.choices(&prompts, &labels)?;
                ctx.progress.inc(prompts.len() as u64);
                for (pair, two) in pairs.iter_mut().zip(answers.chunks_exact(2)) {
                    pair.ab = two[0];
                    pair.ba = two[1];
                }
                (pairs.len(), None)
            }
            Some(precision) => {
                let (asked, mut stop) = ask_until_precise(llm, &mut pairs, &prompts, &labels, precision, ctx)?;
                stop.requests = crate::sequential::llm_requests(&model.oracle).zip(requests_before).map(|(after, before)| after - before);
                stop.model_rows = 2 * asked as u64;
                (asked, Some(stop))
            }
        };
        // With a precision stop, the figures are over the pairs asked (the first `asked` of the
        // seeded order); the rest are not in the table either.
        let prompts_asked = 2 * asked;
        let pairs: Vec<PairAnswer> = pairs.into_iter().take(asked).collect();
        // The pairs read in both orders, with P(the first listed is chosen) in each.
        let read: Vec<(&PairAnswer, f64, f64)> = pairs.iter().filter_map(|p| Some((p, p.ab?, p.ba?))).collect();
        // P(the first value's candidate wins), averaged over its two positions.
        let win = |(_, ab, ba): &(&PairAnswer, f64, f64)| (ab + 1.0 - ba) / 2.0;
        let position: Vec<(Vec<String>, f64)> = read.iter().map(|(p, ab, ba)| (p.keys.clone(), (ab + ba) / 2.0 - 0.5)).collect();
        let position = unit_mean(&ways, &position);
        let mut chosen_rate = Vec::new();
        let mut versus_reference = Vec::new();
        let mut groups = Vec::new();
        for (k, &column) in protected.iter().enumerate() {
            let attribute = &domain.attributes[column];
            let names: Vec<String> = grids[k].iter().map(|&v| attribute.decode(v)).collect();
            let of_attribute: Vec<&(&PairAnswer, f64, f64)> = read.iter().filter(|r| r.0.attribute == k).collect();
            let rates: Vec<ChosenRate> = names
                .iter()
                .enumerate()
                .map(|(v, name)| {
                    let wins: Vec<(Vec<String>, f64)> = of_attribute
                        .iter()
                        .filter(|r| r.0.values.0 == v || r.0.values.1 == v)
                        .map(|r| (r.0.keys.clone(), if r.0.values.0 == v { win(r) } else { 1.0 - win(r) }))
                        .collect();
                    let m = unit_mean(&ways, &wins);
                    ChosenRate {
                        attribute: attribute.name.clone(),
                        value: name.clone(),
                        pairs: wins.len() as u64,
                        rate: m.mean,
                        ci95: m.ci95,
                        ci95_independent: m.independent,
                    }
                })
                .collect();
            for (v, name) in names.iter().enumerate().skip(1) {
                // Pairs of the reference (value 0, listed first in the pair's `ab` order) and v.
                let wins: Vec<(Vec<String>, f64)> =
                    of_attribute.iter().filter(|r| r.0.values == (0, v)).map(|r| (r.0.keys.clone(), 1.0 - win(r))).collect();
                let m = unit_mean(&ways, &wins);
                let t = if m.se > 0.0 { (m.mean - 0.5) / m.se } else { f64::NAN };
                versus_reference.push(VersusReference {
                    attribute: attribute.name.clone(),
                    value: name.clone(),
                    reference: names[0].clone(),
                    pairs: wins.len() as u64,
                    rate: m.mean,
                    reference_rate: 1.0 - m.mean,
                    ratio: m.mean / (1.0 - m.mean),
                    ci95: m.ci95,
                    t,
                    p_value: t_two_sided_p(t, m.df),
                    ci95_independent: m.independent,
                    clusters: m.clusters,
                });
            }
            let highest = rates.iter().map(|c| c.rate).filter(|r| r.is_finite()).fold(f64::NAN, f64::max);
            groups.extend(rates.iter().map(|c| GroupMetricRow {
                attributes: c.attribute.clone(),
                group: c.value.clone(),
                n: c.pairs as usize,
                selected: 0,
                rate: c.rate,
                ci95: c.ci95.unwrap_or([f64::NAN, f64::NAN]),
                impact_ratio: c.rate / highest,
            }));
            chosen_rate.extend(rates);
        }
        let figures = PairwiseFigures {
            pairs: read.len() as u64,
            prompts: prompts_asked as u64,
            unparsed_pairs: (pairs.len() - read.len()) as u64,
            labels: self.config.labels.clone(),
            position_effect: position.mean,
            position_effect_ci95: position.ci95,
            position_effect_ci95_independent: position.independent,
            chosen_rate,
            versus_reference,
            precision: stop,
        };
        let attribute_names: Vec<String> = pairs.iter().map(|p| domain.attributes[protected[p.attribute]].name.clone()).collect();
        let value_name = |p: &PairAnswer, v: usize| domain.attributes[protected[p.attribute]].decode(grids[p.attribute][v]);
        let table = TableBuilder::new()
            .i64("row", pairs.iter().map(|p| p.row as i64).collect())
            .str("attribute", attribute_names)
            .str("first", pairs.iter().map(|p| value_name(p, p.values.0)).collect())
            .str("second", pairs.iter().map(|p| value_name(p, p.values.1)).collect())
            .f64("p_first_chosen", pairs.iter().map(|p| p.ab.unwrap_or(f64::NAN)).collect())
            .f64("p_first_chosen_swapped", pairs.iter().map(|p| p.ba.unwrap_or(f64::NAN)).collect())
            .build("")?;
        Ok(StageOutput {
            artifact: Artifact::GroupMetrics(Arc::new(GroupMetricsArtifact { rows: groups })),
            figures: Arc::new(figures),
            tables: vec![table],
            model_queries: prompts_asked as u64,
        })
    }
}

/// Ask `pairs` (whose two prompts each are `prompts[2i]`, `prompts[2i + 1]`) in a random order
/// seeded by the stage, [`PAIRS_PER_LOOK`] at a time, until the confidence sequences of the
/// position effect and of every value's rate against its reference (pairs with the reference) are
/// within `precision` on each side. `pairs` is reordered so that the pairs asked come first, with
/// their answers; returns how many were asked and how it stopped (`requests` left for the
/// caller).
fn ask_until_precise(
    llm: &LlmModel,
    pairs: &mut Vec<PairAnswer>,
    prompts: &[String],
    labels: &[String; 2],
    precision: f64,
    ctx: &StageContext,
) -> Result<(usize, crate::sequential::PrecisionStop)> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.shuffle(&mut rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(ctx.seed));
    let mut position = ConfidenceSequence::new(0.05);
    // One sequence per (attribute, compared value) with the reference.
    let mut versus: BTreeMap<(usize, usize), ConfidenceSequence> = BTreeMap::new();
    for p in pairs.iter().filter(|p| p.values.0 == 0) {
        versus.entry((p.attribute, p.values.1)).or_insert_with(|| ConfidenceSequence::new(0.05));
    }
    let widest = |position: &ConfidenceSequence, versus: &BTreeMap<(usize, usize), ConfidenceSequence>| {
        versus.values().map(ConfidenceSequence::half_width).fold(position.half_width(), f64::max)
    };
    let mut asked = 0;
    for look in order.chunks(PAIRS_PER_LOOK) {
        let look_prompts: Vec<String> = look.iter().flat_map(|&i| [prompts[2 * i].clone(), prompts[2 * i + 1].clone()]).collect();
        let answers = llm.choices(&look_prompts, labels)?;
        ctx.progress.inc(look_prompts.len() as u64);
        for (&i, two) in look.iter().zip(answers.chunks_exact(2)) {
            let pair = &mut pairs[i];
            pair.ab = two[0];
            pair.ba = two[1];
            if let (Some(ab), Some(ba)) = (pair.ab, pair.ba) {
                position.push((ab + ba) / 2.0);
                if let Some(sequence) = versus.get_mut(&(pair.attribute, pair.values.1)).filter(|_| pair.values.0 == 0) {
                    // The compared value's win: listed second in the `ab` order.
                    sequence.push(1.0 - (ab + 1.0 - ba) / 2.0);
                }
            }
        }
        asked += look.len();
        // A plan's placeholder answers say nothing: it lists every pair the run may ask.
        if widest(&position, &versus) <= precision && !crate::models::Model::answers_are_placeholders(llm) {
            break;
        }
    }
    // The pairs asked first, in the seeded order.
    let mut taken: Vec<Option<PairAnswer>> = std::mem::take(pairs).into_iter().map(Some).collect();
    let mut reordered: Vec<PairAnswer> = order.iter().filter_map(|&i| taken[i].take()).collect();
    pairs.append(&mut reordered);
    let [lo, hi] = position.interval();
    Ok((asked, crate::sequential::PrecisionStop::new(precision, widest(&position, &versus), position.n(), [lo - 0.5, hi - 0.5])))
}
