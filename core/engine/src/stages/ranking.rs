//! `ranking`: an LLM asked to pick one of several candidates listed in one prompt, the design of
//! Bloomberg's 2024 audit of GPT résumé ranking (eight equally qualified résumés under names of
//! different groups; how often each group is ranked first, against 1/8). Each row (one document,
//! e.g. a resume) becomes `candidates` candidates that differ in one protected attribute only:
//! every value of it the same number of times (`candidates` / its values), the row's other
//! values kept, the candidates of one value shown under different names of the model's `names`
//! table (the names after the row's own in each list). The list is asked in `candidates` orders,
//! each a rotation of the one before, so every candidate is listed once at every position and
//! position cancels out of each value's share. The candidate listed `i`-th is labelled
//! `labels[i]` ("1", "2", … by default).
//!
//! Figures, from P(each label is chosen) of each prompt (the first token's `top_logprobs`
//! normalised over the labels, the share of samples, or one answer; [`LlmModel::picks`]):
//! - `top_share`: per protected value, P(the candidate picked has that value), averaged over a
//!   document's orders and then over the documents, beside its parity (its candidates' share of
//!   the list, 1 / the attribute's values), the ratio to parity, the ratio to the highest value's
//!   share (the four-fifths rule's impact ratio), the 95% interval and the t test against parity;
//! - `position_shares`: P(the candidate listed at each position is picked), and
//!   `first_position_effect`, the first position's share less 1 / `candidates`, with its interval.
//!
//! The unit is the document: its orders are averaged into one observation per value, and the
//! intervals are Student's t over the documents, cluster-robust over the `cluster_by` columns
//! when given ([`crate::clustered`]). A ranking shows `candidates` names, so it is not clustered
//! by name as a pair is.
//!
//! A document whose answer in some order names no label is left out of every figure and counted
//! (`unparsed_rankings`).
//!
//! [`LlmModel::picks`]: crate::models::llm::LlmModel::picks

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::estimate::MODEL_INPUT;
use super::llm_prompts::{asked_llm, check_template, unit_mean};
use super::options::{check_protected, Rows};
use crate::error::{Result, StageError};
use crate::models::llm::error::LlmError;
use crate::output::TableBuilder;
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{FigureDoc, FigureNames, StageEnv, StageKind};
use crate::stage::meaning::StageFigures;
use crate::stage::{
    audited_rows, nan_if_null, Artifact, ArtifactKind, GroupMetricRow, GroupMetricsArtifact, Inputs, Stage, StageContext, StageOutput,
};
use crate::stats::t_two_sided_p;

/// The `ranking` stage kind.
pub const KIND: StageKind = StageKind {
    name: "ranking",
    doc: "Ask an LLM to pick one of several candidates listed in one prompt who differ only in a protected attribute (the same document under different names; Bloomberg's design), the list asked in every rotation of its order: each protected value's share of the picks against parity (1 / its values), its impact ratio and a t test, and the share of each position.",
    inputs: MODEL_INPUT,
    output: ArtifactKind::GroupMetrics,
    keys: RankingConfig::keys,
    tag: None,
    example: "[stages.ranking]\nkind = \"ranking\"\nmodel = \"model\"\nprompt = \"prompts/resume-ranking.j2\"\ncandidates = 4",
    configure: configure::<RankingConfig>,
    fields: fields_of::<RankingConfig>,
    read: read_debug::<RankingConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::Runs,
    figures: FigureDoc::of::<RankingFigures>(),
};

/// The candidates one prompt lists unless `candidates` says otherwise.
pub const DEFAULT_CANDIDATES: usize = 4;

fn default_candidates() -> usize {
    DEFAULT_CANDIDATES
}

fn default_split() -> Rows {
    Rows::All
}

/// The most candidates one prompt lists.
const MAX_CANDIDATES: usize = 26;

/// The `ranking` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields)]
pub struct RankingConfig {
    /// The ranking's prompt template (minijinja), relative to the pipeline file: it sees the
    /// row's values as the model's template does, and `candidates`, the list in its order, each
    /// with its values and `label` (`{% for c in candidates %}{{ c.label }}: {{ c.name }}{% endfor %}`).
    pub prompt: PathBuf,
    /// Candidates per prompt: a multiple of each audited attribute's values (every value listed as
    /// often), at least 2.
    #[serde(default = "default_candidates")]
    pub candidates: usize,
    /// The answers naming the candidate listed first, second, …; default "1", "2", ….
    #[serde(default)]
    #[key(default = "[\"1\", \"2\", …]")]
    pub labels: Option<Vec<String>>,
    /// Rows made into rankings (one document each; an LLM is not trained, so every row by
    /// default).
    #[serde(default = "default_split")]
    pub split: Rows,
    /// Audit these protected attributes instead of the data's.
    #[serde(default)]
    #[key(shared = super::options::PROTECTED)]
    pub protected: Option<Vec<String>>,
    /// Columns the documents share: the intervals are clustered over them.
    #[serde(default)]
    #[key(shared = super::options::CLUSTER_BY)]
    pub cluster_by: Vec<String>,
}

impl RankingConfig {
    /// The labels, given or "1" … "`candidates`".
    fn labels(&self) -> Vec<String> {
        self.labels.clone().unwrap_or_else(|| (1..=self.candidates).map(|i| i.to_string()).collect())
    }
}

impl StageConfig for RankingConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        check_protected(c, &self.protected);
        if !(2..=MAX_CANDIDATES).contains(&self.candidates) {
            c.problem(
                "candidates",
                format!("`candidates` is how many candidates one prompt lists: 2 to {MAX_CANDIDATES}, not {}", self.candidates),
            );
        }
        if let Some(labels) = &self.labels {
            let mut trimmed: Vec<&str> = labels.iter().map(|l| l.trim()).collect();
            let given = trimmed.len();
            trimmed.sort_unstable();
            trimmed.dedup();
            if given != self.candidates || trimmed.len() != given || trimmed.contains(&"") {
                c.problem(
                    "labels",
                    format!(
                        "`labels` must be {} different answers, one per candidate in the order listed, e.g. [\"A\", \"B\", \"C\", \"D\"]",
                        self.candidates
                    ),
                );
            }
        }
        check_template(c, &self.prompt, "ranking");
    }

    fn instantiate(self, _facts: (), env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(RankingStage { config: self, dir: env.dir.clone() }))
    }
}

/// A configured `ranking` stage: its config and the folder its template is relative to.
struct RankingStage {
    config: RankingConfig,
    dir: PathBuf,
}

/// One protected value's share of the picks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopShare {
    /// The protected attribute.
    pub attribute: String,
    /// The value (decoded).
    pub value: String,
    /// Its candidates in each list.
    pub candidates: u64,
    /// Documents read.
    pub rankings: u64,
    /// P(the candidate picked has this value), over each document's orders, then the documents.
    #[serde(deserialize_with = "nan_if_null")]
    pub share: f64,
    /// Its share of the list: its candidates / `candidates` (1 / the attribute's values).
    pub parity: f64,
    /// `share` / `parity`: 1 when the model picks regardless of the value.
    #[serde(deserialize_with = "nan_if_null")]
    pub ratio_to_parity: f64,
    /// `share` over the highest share of the attribute's values (the four-fifths rule's ratio).
    #[serde(deserialize_with = "nan_if_null")]
    pub impact_ratio: f64,
    /// 95% interval of `share` (t over the documents, cluster-robust over `cluster_by`); none
    /// under two documents.
    pub ci95: Option<[f64; 2]>,
    /// t statistic of `share` against `parity`.
    #[serde(deserialize_with = "nan_if_null")]
    pub t: f64,
    /// Its two-sided p-value.
    #[serde(deserialize_with = "nan_if_null")]
    pub p_value: f64,
}

/// Figures of a `ranking` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct RankingFigures {
    /// Documents (rows × audited attributes) read in every order.
    pub rankings: u64,
    /// Prompts asked (`candidates` per document and attribute).
    pub prompts: u64,
    /// Documents left out: an answer in some order named no label.
    pub unparsed_rankings: u64,
    /// Candidates per prompt.
    pub candidates: u64,
    /// The labels of the candidates listed first, second, ….
    pub labels: Vec<String>,
    /// Per position, P(the candidate listed there is picked), over every order of every document.
    pub position_shares: Vec<f64>,
    /// `position_shares[0]` − 1 / `candidates`: the first position's pull.
    #[serde(deserialize_with = "nan_if_null")]
    pub first_position_effect: f64,
    /// 95% interval of `first_position_effect` over the documents.
    pub first_position_effect_ci95: Option<[f64; 2]>,
    /// Per protected value, its share of the picks against parity.
    pub top_share: Vec<TopShare>,
}

/// A ranking stage's headline: the first position's pull and the documents read.
impl StageFigures for RankingFigures {
    const HEADLINE: &'static [&'static str] = &["first_position_effect", "rankings"];
}

/// One document's ranking of one attribute: its row, the attribute, each listed slot's value
/// index, and P(each position is picked) in each order (`None` where unread).
struct Ranked {
    row: usize,
    attribute: usize,
    /// Slot `s` of the base order holds value `values[s]`.
    values: Vec<usize>,
    /// Per rotation `r`: P(the candidate at position `p` is picked); the candidate at position
    /// `p` is slot `(r + p) % candidates`.
    picks: Vec<Option<Vec<f64>>>,
    keys: Vec<String>,
}

impl Stage for RankingStage {
    fn preflight(&self, data: &crate::data::Dataset, _warnings: &crate::warnings::Warnings) -> Result<()> {
        crate::cluster_keys::cluster_columns(&data.domain, &self.config.cluster_by).map(|_| ())
    }

    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let llm = asked_llm(&model, KIND.name, "to pick one of several candidates")?;
        let (domain, rows) = audited_rows(&model, self.config.protected.as_deref(), self.config.split.split(), &ctx.warnings)?;
        let width = domain.width().max(1);
        let k = self.config.candidates;
        let labels = self.config.labels();
        let shown = self.config.prompt.display().to_string();
        let renderer = llm.pair_renderer(&self.dir.join(&self.config.prompt), &shown)?;
        let protected = domain.protected_indices();
        let grids: Vec<Vec<f64>> = protected.iter().map(|&i| domain.attributes[i].grid()).collect();
        for (a, grid) in grids.iter().enumerate() {
            if grid.len() < 2 || k % grid.len() != 0 {
                return Err(StageError::cannot(
                    "candidates",
                    format!(
                        "`candidates = {k}` cannot list each of {}'s {} values equally often: give a multiple of {}",
                        domain.attributes[protected[a]].name,
                        grid.len(),
                        grid.len()
                    ),
                ));
            }
        }
        let columns = crate::cluster_keys::cluster_columns(&domain, &self.config.cluster_by)?;
        let ways: Vec<String> = columns.iter().map(|(c, _)| c.clone()).collect();
        let fail = |e: LlmError| crate::error::Error::from(e.at(llm.base_url()));
        let mut ranked: Vec<Ranked> = Vec::new();
        let mut prompts: Vec<String> = Vec::new();
        let mut checked_template = false;
        for (r, row) in rows.chunks_exact(width).enumerate() {
            for (a, &column) in protected.iter().enumerate() {
                let grid = &grids[a];
                // Slot s: value s mod V, its (s / V)-th candidate (names that many places on).
                let values: Vec<usize> = (0..k).map(|s| s % grid.len()).collect();
                let offsets: Vec<usize> = (0..k).map(|s| s / grid.len()).collect();
                let candidates: Vec<Vec<f64>> = values
                    .iter()
                    .map(|&v| {
                        let mut c = row.to_vec();
                        c[column] = grid[v];
                        c
                    })
                    .collect();
                let listed = |rotation: usize| -> Result<String> {
                    let order: Vec<usize> = (0..k).map(|p| (rotation + p) % k).collect();
                    let rows: Vec<&[f64]> = order.iter().map(|&s| candidates[s].as_slice()).collect();
                    let offsets: Vec<usize> = order.iter().map(|&s| offsets[s]).collect();
                    renderer.render_candidates(&rows, &offsets, &labels).map_err(fail)
                };
                if !checked_template {
                    // The template must say who is who: a rotated list must read differently.
                    if listed(0)? == listed(1)? {
                        return Err(fail(LlmError::PairUnsaid { shown: shown.clone() }));
                    }
                    checked_template = true;
                }
                for rotation in 0..k {
                    prompts.push(listed(rotation)?);
                }
                let keys = columns.iter().map(|(_, i)| format!("{}", row[*i])).collect();
                ranked.push(Ranked { row: r, attribute: a, values, picks: Vec::new(), keys });
            }
        }
        crate::progress::start(&ctx.progress, prompts.len() as u64, "prompts asked");
        let answers = llm.picks(&prompts, &labels)?;
        ctx.progress.inc(prompts.len() as u64);
        for (ranking, picks) in ranked.iter_mut().zip(answers.chunks_exact(k)) {
            ranking.picks = picks.to_vec();
        }
        // The documents read in every order: per position and per value, P(picked) over its orders.
        let read: Vec<(&Ranked, Vec<Vec<f64>>)> =
            ranked.iter().filter_map(|d| d.picks.iter().cloned().collect::<Option<Vec<Vec<f64>>>>().map(|p| (d, p))).collect();
        let mut position_sums = vec![0.0; k];
        let mut first: Vec<(Vec<String>, f64)> = Vec::new();
        for (d, picks) in &read {
            for p in picks {
                for (pos, share) in p.iter().enumerate() {
                    position_sums[pos] += share / (k * read.len()) as f64;
                }
            }
            let first_share = picks.iter().map(|p| p[0]).sum::<f64>() / k as f64;
            first.push((d.keys.clone(), first_share - 1.0 / k as f64));
        }
        let first = unit_mean(&ways, &first);
        let mut top_share = Vec::new();
        let mut groups = Vec::new();
        for (a, &column) in protected.iter().enumerate() {
            let attribute = &domain.attributes[column];
            let of_attribute: Vec<&(&Ranked, Vec<Vec<f64>>)> = read.iter().filter(|(d, _)| d.attribute == a).collect();
            let per_value = k / grids[a].len();
            let parity = per_value as f64 / k as f64;
            let mut shares: Vec<TopShare> = (0..grids[a].len())
                .map(|v| {
                    let per_document: Vec<(Vec<String>, f64)> = of_attribute
                        .iter()
                        .map(|(d, picks)| {
                            let share: f64 = picks
                                .iter()
                                .enumerate()
                                .map(|(rotation, p)| {
                                    (0..k).filter(|pos| d.values[(rotation + pos) % k] == v).map(|pos| p[pos]).sum::<f64>()
                                })
                                .sum::<f64>()
                                / k as f64;
                            (d.keys.clone(), share)
                        })
                        .collect();
                    let m = unit_mean(&ways, &per_document);
                    let t = if m.se > 0.0 { (m.mean - parity) / m.se } else { f64::NAN };
                    TopShare {
                        attribute: attribute.name.clone(),
                        value: attribute.decode(grids[a][v]),
                        candidates: per_value as u64,
                        rankings: per_document.len() as u64,
                        share: m.mean,
                        parity,
                        ratio_to_parity: m.mean / parity,
                        impact_ratio: f64::NAN,
                        ci95: m.ci95,
                        t,
                        p_value: t_two_sided_p(t, m.df),
                    }
                })
                .collect();
            let highest = shares.iter().map(|s| s.share).filter(|s| s.is_finite()).fold(f64::NAN, f64::max);
            for s in &mut shares {
                s.impact_ratio = s.share / highest;
            }
            groups.extend(shares.iter().map(|s| GroupMetricRow {
                attributes: s.attribute.clone(),
                group: s.value.clone(),
                n: s.rankings as usize,
                selected: 0,
                rate: s.share,
                ci95: s.ci95.unwrap_or([f64::NAN, f64::NAN]),
                impact_ratio: s.impact_ratio,
            }));
            top_share.extend(shares);
        }
        let figures = RankingFigures {
            rankings: read.len() as u64,
            prompts: prompts.len() as u64,
            unparsed_rankings: (ranked.len() - read.len()) as u64,
            candidates: k as u64,
            labels: labels.clone(),
            position_shares: position_sums,
            first_position_effect: first.mean,
            first_position_effect_ci95: first.ci95,
            top_share,
        };
        // One line per prompt: the document, the attribute, the order and each position's value
        // and P(picked).
        let (mut row_of, mut attribute_of, mut order_of, mut listed_of, mut picked_of) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for d in &ranked {
            let attribute = &domain.attributes[protected[d.attribute]];
            for (rotation, p) in d.picks.iter().enumerate() {
                let listed: Vec<String> = (0..k).map(|pos| attribute.decode(grids[d.attribute][d.values[(rotation + pos) % k]])).collect();
                row_of.push(d.row as i64);
                attribute_of.push(attribute.name.clone());
                order_of.push(rotation as i64);
                listed_of.push(listed.join("|"));
                picked_of.push(p.as_ref().map_or_else(String::new, |p| p.iter().map(|x| format!("{x}")).collect::<Vec<_>>().join("|")));
            }
        }
        let table = TableBuilder::new()
            .i64("row", row_of)
            .str("attribute", attribute_of)
            .i64("order", order_of)
            .str("listed", listed_of)
            .str("p_picked", picked_of)
            .build("")?;
        Ok(StageOutput {
            artifact: Artifact::GroupMetrics(Arc::new(GroupMetricsArtifact { rows: groups })),
            figures: Arc::new(figures),
            tables: vec![table],
            model_queries: prompts.len() as u64,
        })
    }
}
