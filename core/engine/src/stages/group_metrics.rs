//! `group_metrics`: the model's outcomes per protected group and per intersection on the data's
//! own labelled rows — selection rate with impact ratios and the four-fifths rule, the error rates
//! (TPR, FPR, FNR, TNR, PPV, NPV, accuracy) with Wilson intervals, AUC (seeded bootstrap interval)
//! and calibration when the model gives probabilities, every rate's `_ratio` and `_difference`
//! against a reference group with DSSG Aequitas' fairness band, significance against the
//! reference with Holm's correction, Fairlearn's parity summaries per attribute set, and a
//! threshold sweep.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::group_score::MODEL_INPUT;
use super::options::{check_protected, Rows};
use crate::error::{Error, Result, StageError};
use crate::fairness::measure::{measure_set, rate_with_ci, select, worst_of, Measured, Outcomes};
use crate::fairness::{parity, Confusion, Metric, ParitySummary};
use crate::group_rule::number;
use crate::output::{Table, TableBuilder};
use crate::stage::config::{configure, fields_of, read_debug, Checks, StageConfig};
use crate::stage::keys::StageKeys;
use crate::stage::kind::{compare_as, FigureDoc, FigureNames, StageEnv, StageKind};
use crate::stage::meaning::{Impact, InRun, StageFigures};
use crate::stage::verdict::{ImpactMeasure, Severity, Thresholds};
use crate::stage::{
    audited_rows, nan_if_null, Artifact, ArtifactKind, GroupMetricRow, GroupMetricsArtifact, Inputs, Stage, StageContext, StageOutput,
};
use crate::stats::wilson;
use crate::stats::{holm, proportions_test, TestKind};

/// The `group_metrics` stage kind.
pub const KIND: StageKind = StageKind {
    name: "group_metrics",
    doc: "Outcomes of the model per value of each protected attribute and per intersection, on the data's labelled rows: selection rate with impact ratios and the four-fifths rule, base rate, TPR, FPR, FNR, TNR, PPV, NPV, accuracy (Wilson 95% intervals), AUC and calibration when the model gives probabilities; each rate's ratio and difference against a reference group (Aequitas band), p-values against it with Holm's correction, Fairlearn's parity summaries per attribute set, and a threshold sweep.",
    inputs: MODEL_INPUT,
    output: ArtifactKind::GroupMetrics,
    keys: GroupMetricsConfig::keys,
    tag: None,
    example: "[stages.metrics]\nkind = \"group_metrics\"\nmodel = \"model\"\nsplit = \"test\"\nprotected = [\"gender\", \"race\"]\nreference = { gender = \"1\" }",
    configure: configure::<GroupMetricsConfig>,
    fields: fields_of::<GroupMetricsConfig>,
    read: read_debug::<GroupMetricsConfig>,
    offline_plan: crate::stage::kind::OfflinePlan::Runs,
    figures: FigureDoc {
        compared: &["min_impact_ratio"],
        compare: compare_figures,
        ..FigureDoc::of::<GroupMetricsFigures>()
    },
};

/// The figures a sweep compares a `group_metrics` stage on (`FigureDoc::compared`).
fn compare_figures(entry: &crate::stage::summary::StageSummary) -> Vec<serde_json::Value> {
    use serde_json::Value;
    // The worst (lowest) impact ratio over the attribute sets.
    compare_as::<GroupMetricsFigures>(entry, 1, |f| {
        let lowest = f.min_impact_ratio.values().filter_map(|v| v.filter(|x| x.is_finite())).reduce(f64::min);
        vec![lowest.map(Value::from).unwrap_or(Value::Null)]
    })
}

/// The `group_metrics` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, StageKeys)]
#[serde(deny_unknown_fields, default)]
pub struct GroupMetricsConfig {
    /// Rows to measure.
    pub split: Rows,
    /// Decision threshold: a row is selected (favourable) when P(favourable) > threshold.
    pub threshold: f64,
    /// Select the k rows of highest score instead (a ranking system); excludes top_share.
    pub top_k: Option<usize>,
    /// Select this share of the rows of highest score instead.
    pub top_share: Option<f64>,
    /// Impact ratio below which a group is flagged (four-fifths rule).
    pub impact_threshold: f64,
    /// Groups smaller than this share of the rows are listed but not flagged by the four-fifths
    /// rule (LL144 audits may exclude categories under 2%).
    pub min_share: f64,
    /// Groups with fewer rows are listed as too small: no significance test, no flag.
    pub min_count: usize,
    /// Reference group of each attribute set for _ratio, _difference and the tests: the largest
    /// group, the most selected one, or named, e.g. { sex = "Male" }.
    #[key(ty = "\"largest\"|\"most_favoured\"|table")]
    pub reference: Value,
    /// A rate's ratio to the reference outside this band is flagged (DSSG Aequitas).
    pub ratio_band: [f64; 2],
    /// Significance level after Holm's correction across the table.
    pub alpha: f64,
    /// Bootstrap resamples of the AUC interval (seeded; 0: no interval).
    pub bootstrap: usize,
    /// Audit these protected attributes instead of the data's.
    #[key(shared = super::options::PROTECTED)]
    pub protected: Option<Vec<String>>,
}

impl Default for GroupMetricsConfig {
    fn default() -> Self {
        GroupMetricsConfig {
            split: Rows::All,
            threshold: 0.5,
            top_k: None,
            top_share: None,
            impact_threshold: 0.8,
            min_share: 0.02,
            min_count: 30,
            reference: json!("largest"),
            ratio_band: [0.8, 1.25],
            alpha: 0.05,
            bootstrap: 500,
            protected: None,
        }
    }
}

/// How the reference group of an attribute set is chosen.
#[derive(Debug, Clone, PartialEq)]
enum Reference {
    Largest,
    MostFavoured,
    /// Attribute name → group name; attribute sets it does not fully name use the largest of the
    /// groups that match what it names.
    Named(BTreeMap<String, String>),
}

impl Reference {
    fn read(v: &Value) -> std::result::Result<Reference, String> {
        match v {
            Value::String(s) if s == "largest" => Ok(Reference::Largest),
            Value::String(s) if s == "most_favoured" || s == "most_favored" => Ok(Reference::MostFavoured),
            Value::Object(m) if !m.is_empty() => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    Value::Number(n) => Ok((k.clone(), n.as_f64().map(number).unwrap_or_else(|| n.to_string()))),
                    other => Err(format!("`reference.{k}` must be a group name (string or number), found {other}")),
                })
                .collect::<std::result::Result<_, _>>()
                .map(Reference::Named),
            other => Err(format!(
                "`reference` must be \"largest\", \"most_favoured\" or a table naming the group, e.g. {{ sex = \"Male\" }}; found {other}"
            )),
        }
    }
}

impl StageConfig for GroupMetricsConfig {
    type Facts = ();

    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        c.within("threshold", self.threshold, 0.0, 1.0);
        c.within("impact_threshold", self.impact_threshold, 0.0, 1.0);
        c.within("min_share", self.min_share, 0.0, 1.0);
        c.within("alpha", self.alpha, 1e-12, 0.5);
        if let Some(k) = self.top_k {
            c.at_least("top_k", k, 1);
        }
        if let Some(s) = self.top_share {
            if !(s > 0.0 && s <= 1.0) {
                c.problem("top_share", format!("`top_share` must lie in (0, 1], found {s}"));
            }
        }
        if self.top_k.is_some() && self.top_share.is_some() {
            c.problem("top_share", "give `top_k` or `top_share`, not both");
        }
        let [lo, hi] = self.ratio_band;
        if !(lo > 0.0 && lo <= 1.0 && hi >= 1.0 && hi.is_finite()) {
            c.problem("ratio_band", format!("`ratio_band` must be [low, high] with 0 < low ≤ 1 ≤ high, found [{lo}, {hi}]"));
        }
        if let Err(e) = Reference::read(&self.reference) {
            c.problem("reference", e);
        }
        check_protected(c, &self.protected);
    }

    fn instantiate(self, _facts: (), _env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(self))
    }
}

/// A group below the impact threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlaggedGroup {
    /// Attribute names ("gender" or "gender × race").
    pub attributes: String,
    /// The group.
    pub group: String,
    /// Its impact ratio.
    #[serde(deserialize_with = "nan_if_null")]
    pub impact_ratio: f64,
    /// Rows in the group.
    pub n: usize,
}

/// One group: the output contract's names first, then the labelled metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupFigure {
    /// Attribute names.
    pub attributes: String,
    /// The group.
    pub group: String,
    /// Rows in the group.
    pub n: usize,
    /// Share of the group the model selects.
    #[serde(deserialize_with = "nan_if_null")]
    pub selection_rate: f64,
    /// Wilson 95% interval of the rate.
    pub ci95: [f64; 2],
    /// Rate / the highest rate of the same attributes.
    #[serde(deserialize_with = "nan_if_null")]
    pub impact_ratio: f64,
    /// Whether the group passes the four-fifths rule (or is too small to judge).
    pub four_fifths_ok: bool,
    /// Rows in the group (the same as `n`, under the name auditors use).
    pub count: usize,
    /// Whether this is its attribute set's reference group.
    pub reference: bool,
    /// Fewer rows than `min_count` (here or in the reference): listed, not tested, not flagged.
    pub too_small: bool,
    /// p-value of the selection rate against the reference's (`null` for the reference and small
    /// groups).
    #[serde(deserialize_with = "nan_if_null")]
    pub p_value: f64,
    /// The p-value after Holm's correction across every test of the table.
    #[serde(deserialize_with = "nan_if_null")]
    pub p_adjusted: f64,
    /// The selection rate differs from the reference's at `alpha` after the correction.
    pub significant: bool,
    /// Metrics whose ratio to the reference lies outside `ratio_band`.
    pub outside_band: Vec<String>,
    /// Every other figure: `base_rate`, `tpr`, `fpr`, `fnr`, `tnr`, `ppv`, `npv`, `accuracy` with
    /// `_ci95`, `_ratio` and `_difference`; `tpr_`/`fpr_` `p_value`, `p_adjusted`, `significant`;
    /// `auc`, `auc_ci95` and `calibration` with probabilities.
    #[serde(flatten)]
    pub metrics: Map<String, Value>,
}

/// Figures of a `group_metrics` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, FigureNames)]
pub struct GroupMetricsFigures {
    /// Rows measured.
    pub rows: usize,
    /// Share of all rows selected.
    #[serde(deserialize_with = "nan_if_null")]
    pub selection_rate: f64,
    /// Lowest impact ratio per attribute set (`null` when none is defined).
    pub min_impact_ratio: BTreeMap<String, Option<f64>>,
    /// Groups flagged by the four-fifths rule.
    pub below_threshold: Vec<FlaggedGroup>,
    /// Every group.
    pub groups: Vec<GroupFigure>,
    /// The four-fifths flag threshold on the impact ratio (the config's `impact_threshold`; the
    /// name predates the decision threshold).
    pub threshold: f64,
    /// The smallest share judged by the four-fifths rule.
    pub min_share: f64,
    /// The decision threshold used (with `top_k` / `top_share`: the lowest selected score).
    #[serde(deserialize_with = "nan_if_null")]
    pub decision_threshold: f64,
    /// How rows were selected: `threshold`, `top_k` or `top_share`.
    pub selection: String,
    /// Whether the model gave probabilities (not only 0/1), so AUC and calibration exist.
    pub probabilities: bool,
    /// Why AUC and calibration are not measured, when they are not: "not available: labels only"
    /// (the model gives labels, no probabilities), or "not available: every score is 0 or 1"
    /// (absent when they are measured, per group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auc_note: Option<String>,
    /// The reference rule as configured.
    pub reference: Value,
    /// The fairness band of a ratio.
    pub ratio_band: [f64; 2],
    /// Groups under this count are too small to test.
    pub min_count: usize,
    /// Significance level.
    pub alpha: f64,
    /// Tests run (groups × metrics against their reference).
    pub tests: usize,
    /// Groups whose selection rate differs significantly from their reference's.
    pub significant_groups: usize,
    /// Fairlearn's parity summaries per attribute set, over every group (as Fairlearn computes
    /// them).
    pub parity: BTreeMap<String, ParitySummary>,
    /// The same summaries over the groups of at least `min_count` rows only, so that a handful of
    /// rows in a rare intersection does not decide them.
    pub parity_min_count: BTreeMap<String, ParitySummary>,
    /// The worst of each summary of `parity_min_count` over the attribute sets (largest
    /// difference, smallest ratio): one figure per summary for a `[gate]` condition.
    #[serde(flatten)]
    pub worst: ParitySummary,
}

/// The metrics a group is tested on against its reference (one test each, all Holm-corrected
/// together).
const TESTED: [Metric; 3] = [Metric::SelectionRate, Metric::Tpr, Metric::Fpr];

/// What the `auc_note` figure says of a model that gives labels only.
pub const LABELS_ONLY: &str = "not available: labels only";

/// Thresholds of the sweep: 0, 0.05, …, 1.
const SWEEP_STEPS: usize = 20;

/// The index of the reference group among `set` (groups of one attribute set).
fn reference_of(set: &[Measured], reference: &Reference, min_count: usize) -> Result<usize> {
    let largest = |candidates: &mut dyn Iterator<Item = usize>| candidates.max_by_key(|&i| (set[i].rows.len(), usize::MAX - i));
    match reference {
        Reference::Largest => largest(&mut (0..set.len())).ok_or_else(|| Error::Internal("group_metrics measured no group".into())),
        Reference::MostFavoured => {
            let rate = |i: usize| set[i].confusion.rate(Metric::SelectionRate);
            let big: Vec<usize> = (0..set.len()).filter(|&i| set[i].rows.len() >= min_count).collect();
            let pool = if big.is_empty() { (0..set.len()).collect() } else { big };
            pool.into_iter()
                .max_by(|&a, &b| rate(a).total_cmp(&rate(b)).then(b.cmp(&a)))
                .ok_or_else(|| Error::Internal("group_metrics measured no group".into()))
        }
        Reference::Named(named) => {
            let attrs: Vec<&str> = set[0].attributes.split(" × ").collect();
            let wanted: Vec<(usize, &String)> = attrs.iter().enumerate().filter_map(|(pos, a)| named.get(*a).map(|v| (pos, v))).collect();
            let matching: Vec<usize> = (0..set.len())
                .filter(|&i| {
                    let parts: Vec<&str> = set[i].group.split(" × ").collect();
                    wanted.iter().all(|(pos, v)| parts.get(*pos) == Some(&v.as_str()))
                })
                .collect();
            if matching.is_empty() {
                let (pos, v) = wanted[0];
                let mut values: Vec<&str> = set.iter().filter_map(|g| g.group.split(" × ").nth(pos)).collect();
                values.dedup();
                return Err(StageError::NotInData {
                    key: "reference",
                    column: attrs[pos].to_string(),
                    value: v.clone(),
                    present: values.iter().map(|v| v.to_string()).collect(),
                }
                .into());
            }
            largest(&mut matching.into_iter()).ok_or_else(|| Error::Internal("group_metrics measured no group".into()))
        }
    }
}

/// A group_metrics stage measures each protected attribute's group rates: its worst impact ratio
/// grades the attribute's verdict (the intersections are shown, not graded).
impl StageFigures for GroupMetricsFigures {
    const HEADLINE: &'static [&'static str] = &["rows", "selection_rate"];

    fn numbers_inside(figure: &str) -> Option<(&'static str, &'static str)> {
        Some(match figure {
            "min_impact_ratio" => (
                "one number per set of protected attributes measured, named by them (`min_impact_ratio.ATTRIBUTE`: `min_impact_ratio.sex`, `min_impact_ratio.\"sex × race\"`, …)",
                "sex",
            ),
            "parity" | "parity_min_count" => (
                "the parity figures per set of protected attributes (`parity.ATTRIBUTE.FIGURE`: `parity.sex.demographic_parity_ratio`, …; the worst over the sets is `demographic_parity_ratio`)",
                "sex.demographic_parity_ratio",
            ),
            _ => return None,
        })
    }

    fn impacts(&self, at: &InRun<'_>, t: &Thresholds) -> Vec<Impact> {
        let Some(model) = at.audited_model() else { return Vec::new() };
        let mut sets: Vec<&str> = self.groups.iter().map(|g| g.attributes.as_str()).filter(|s| !s.contains(" × ")).collect();
        sets.dedup();
        sets.into_iter()
            .map(|set| Impact { model: model.name.to_string(), attribute: set.to_string(), measure: impact(t, at.name, self, set) })
            .collect()
    }
}

/// How the four-fifths rule judges group `g` of a set whose impact ratios divide by `reference`'s
/// rate, under thresholds `t` for stage `f`: its grade and whether its difference was tested
/// against that same group (`Some(significant)`). A group under `min_share` of the rows, the
/// reference itself or one without a ratio is not judged (`NotMeasured`).
pub fn grade_group(
    t: &Thresholds,
    f: &GroupMetricsFigures,
    g: &GroupFigure,
    reference: &GroupFigure,
    tested_against_reference: bool,
) -> (Severity, Option<bool>) {
    let min_share_n = (f.min_share * f.rows as f64).ceil() as usize;
    if g.n < min_share_n || !g.impact_ratio.is_finite() || (g.group == reference.group && g.attributes == reference.attributes) {
        return (Severity::NotMeasured, None);
    }
    let significant = (tested_against_reference && !g.too_small && !g.p_adjusted.is_nan()).then_some(g.significant);
    (t.grade_impact_tested(g.impact_ratio, t.impact_fail.unwrap_or(f.threshold), significant), significant)
}

/// The group rates of attribute set `set` measured by a `group_metrics` stage: its worst group
/// (the lowest impact ratio among the groups the rule judges).
pub fn impact(t: &Thresholds, stage: &str, f: &GroupMetricsFigures, set: &str) -> Option<ImpactMeasure> {
    let groups: Vec<&GroupFigure> = f.groups.iter().filter(|g| g.attributes == set).collect();
    let reference = most_favoured(f, &groups)?;
    let tested = groups.iter().any(|g| g.reference && g.group == reference.group);
    let (worst, (severity, significant)) = groups
        .iter()
        .map(|g| (*g, grade_group(t, f, g, reference, tested)))
        .filter(|(_, (s, _))| *s != Severity::NotMeasured)
        .min_by(|a, b| a.0.impact_ratio.total_cmp(&b.0.impact_ratio).then(b.0.n.cmp(&a.0.n)))?;
    Some(ImpactMeasure {
        stage: stage.to_string(),
        measure: KIND.name.to_string(),
        group: worst.group.clone(),
        n: worst.n,
        selection_rate: worst.selection_rate,
        reference: reference.group.clone(),
        reference_rate: reference.selection_rate,
        impact_ratio: worst.impact_ratio,
        fail_below: t.impact_fail.unwrap_or(f.threshold),
        significant,
        severity,
        scored: false,
    })
}

/// The group an attribute set's impact ratios divide by: the most selected group of at least
/// `min_share` of the rows (its impact ratio is 1), else the most selected group.
pub fn most_favoured<'g>(f: &GroupMetricsFigures, groups: &[&'g GroupFigure]) -> Option<&'g GroupFigure> {
    let min_share_n = (f.min_share * f.rows as f64).ceil() as usize;
    let best = |pool: &mut dyn Iterator<Item = &'g GroupFigure>| {
        pool.max_by(|a, b| a.selection_rate.total_cmp(&b.selection_rate).then(a.n.cmp(&b.n)).then(b.group.cmp(&a.group)))
    };
    best(&mut groups.iter().copied().filter(|g| g.n >= min_share_n)).or_else(|| best(&mut groups.iter().copied()))
}

impl Stage for GroupMetricsConfig {
    /// `top_k` and `top_share` rank the rows by their probability: labels only tie them.
    fn score_needs(&self) -> Vec<crate::stage::ScoreNeed> {
        let ranking = |key: &'static str| crate::stage::ScoreNeed {
            key,
            what: format!("`{key}` (rows ranked by their probability)"),
            instead: "leave it out: rows are then selected by their label (`threshold`)".into(),
        };
        [self.top_k.map(|_| ranking("top_k")), self.top_share.map(|_| ranking("top_share"))].into_iter().flatten().collect()
    }

    fn preflight(&self, data: &crate::data::Dataset, warnings: &crate::warnings::Warnings) -> Result<()> {
        crate::stage::with_protected(&data.domain, self.protected.as_deref(), warnings).map(|_| ())
    }

    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let (domain, rows) = audited_rows(&model, self.protected.as_deref(), self.split.split(), &ctx.warnings)?;
        let labels: Vec<u8> = match self.split.split() {
            Some(s) => model.data.subset(s).1,
            None => model.data.y.clone(),
        };
        let y: Vec<bool> = labels.iter().map(|&l| l == 1).collect();
        let reference = Reference::read(&self.reference).map_err(|e| StageError::cannot("reference", e))?;
        let before = model.oracle.rows();
        let score = model.oracle.predict_proba(&rows)?;
        let n_rows = score.len();
        if n_rows == 0 {
            return Err(StageError::cannot(
                "split",
                format!("group_metrics: no rows in split `{:?}` to measure", self.split).to_lowercase(),
            ));
        }
        let probabilities = score.iter().any(|&p| p > 0.0 && p < 1.0);
        let (selected, decision_threshold, selection) = select(&score, self.threshold, self.top_k, self.top_share);
        let outcomes = Outcomes { y: &y, score: &score, selected: &selected, probabilities };

        let protected = domain.protected_indices();
        let mut sets: Vec<Vec<usize>> = protected.iter().map(|&a| vec![a]).collect();
        if protected.len() > 1 {
            sets.push(protected.clone());
        }
        let mut measured: Vec<Vec<Measured>> = Vec::new();
        crate::progress::start(&ctx.progress, sets.len() as u64, "attribute sets measured");
        for (k, attrs) in sets.iter().enumerate() {
            measured.push(measure_set(&domain, &rows, attrs, &outcomes, self.bootstrap, ctx.seed.wrapping_add(k as u64)));
            ctx.progress.inc(1);
        }
        let min_share_n = (self.min_share * n_rows as f64).ceil() as usize;

        // Per group: the figures, the reference index of its set, and its tests.
        let mut groups: Vec<GroupFigure> = Vec::new();
        let mut tests: Vec<(usize, Metric, f64, TestKind)> = Vec::new();
        let mut parity_by_set = BTreeMap::new();
        let mut parity_counted = BTreeMap::new();
        for set in &measured {
            let r = reference_of(set, &reference, self.min_count)?;
            let reference_c = set[r].confusion;
            let reference_small = set[r].rows.len() < self.min_count;
            let most_selected = set
                .iter()
                .filter(|g| g.rows.len() >= min_share_n)
                .map(|g| g.confusion.rate(Metric::SelectionRate))
                .fold(f64::NAN, f64::max);
            let best = if most_selected.is_nan() {
                set.iter().map(|g| g.confusion.rate(Metric::SelectionRate)).fold(0.0, f64::max)
            } else {
                most_selected
            };
            parity_by_set.insert(set[r].attributes.clone(), parity(&set.iter().map(|g| g.confusion).collect::<Vec<_>>()));
            parity_counted.insert(
                set[r].attributes.clone(),
                parity(&set.iter().filter(|g| g.rows.len() >= self.min_count).map(|g| g.confusion).collect::<Vec<_>>()),
            );
            for (i, g) in set.iter().enumerate() {
                let c = g.confusion;
                let n = g.rows.len();
                let mut metrics = Map::new();
                let mut outside_band = Vec::new();
                for m in Metric::ALL {
                    let (v, ci) = rate_with_ci(&c, m);
                    let rv = reference_c.rate(m);
                    let ratio = if rv > 0.0 { v / rv } else { f64::NAN };
                    if m != Metric::SelectionRate {
                        metrics.insert(m.name().into(), json!(v));
                        metrics.insert(format!("{}_ci95", m.name()), json!(ci));
                    }
                    metrics.insert(format!("{}_ratio", m.name()), json!(ratio));
                    metrics.insert(format!("{}_difference", m.name()), json!(v - rv));
                    if !ratio.is_nan() && !(self.ratio_band[0]..=self.ratio_band[1]).contains(&ratio) && n >= self.min_count {
                        outside_band.push(m.name().to_string());
                    }
                }
                if probabilities {
                    metrics.insert("auc".into(), json!(g.auc));
                    metrics.insert("auc_ci95".into(), json!(g.auc_ci95));
                    metrics.insert("calibration".into(), Value::Array(g.calibration.clone()));
                }
                let too_small = n < self.min_count || reference_small;
                if i != r && !too_small {
                    for m in TESTED {
                        let (x1, n1) = c.fraction(m);
                        let (x2, n2) = reference_c.fraction(m);
                        let t = proportions_test(x1, n1, x2, n2);
                        tests.push((groups.len(), m, t.p_value, t.test));
                    }
                }
                let rate = c.rate(Metric::SelectionRate);
                let impact_ratio = if best > 0.0 { rate / best } else { f64::NAN };
                let four_fifths_ok = n < min_share_n || impact_ratio >= self.impact_threshold || impact_ratio.is_nan();
                groups.push(GroupFigure {
                    attributes: g.attributes.clone(),
                    group: g.group.clone(),
                    n,
                    selection_rate: rate,
                    ci95: wilson(c.tp + c.fp, n, 1.96),
                    impact_ratio,
                    four_fifths_ok,
                    count: n,
                    reference: i == r,
                    too_small,
                    p_value: f64::NAN,
                    p_adjusted: f64::NAN,
                    significant: false,
                    outside_band,
                    metrics,
                });
            }
        }
        let adjusted = holm(&tests.iter().map(|t| t.2).collect::<Vec<_>>());
        for ((g, m, p, kind), adj) in tests.iter().zip(&adjusted) {
            let sig = *adj <= self.alpha;
            let group = &mut groups[*g];
            if *m == Metric::SelectionRate {
                group.p_value = *p;
                group.p_adjusted = *adj;
                group.significant = sig;
                group.metrics.insert("test".into(), json!(kind));
            } else {
                group.metrics.insert(format!("{}_p_value", m.name()), json!(p));
                group.metrics.insert(format!("{}_p_adjusted", m.name()), json!(adj));
                group.metrics.insert(format!("{}_significant", m.name()), json!(sig));
            }
        }

        let mut min_impact_ratio: BTreeMap<String, f64> = BTreeMap::new();
        for g in &groups {
            let entry = min_impact_ratio.entry(g.attributes.clone()).or_insert(f64::INFINITY);
            if g.impact_ratio < *entry {
                *entry = g.impact_ratio;
            }
        }
        let worst = worst_of(parity_counted.values());
        let figures = GroupMetricsFigures {
            rows: n_rows,
            selection_rate: selected.iter().filter(|s| **s).count() as f64 / n_rows as f64,
            min_impact_ratio: min_impact_ratio.into_iter().map(|(k, v)| (k, v.is_finite().then_some(v))).collect(),
            below_threshold: groups
                .iter()
                .filter(|g| !g.four_fifths_ok)
                .map(|g| FlaggedGroup { attributes: g.attributes.clone(), group: g.group.clone(), impact_ratio: g.impact_ratio, n: g.n })
                .collect(),
            threshold: self.impact_threshold,
            min_share: self.min_share,
            decision_threshold,
            selection: selection.into(),
            probabilities,
            auc_note: match (probabilities, model.oracle.model().labels_only()) {
                (true, _) => None,
                (false, true) => Some(LABELS_ONLY.into()),
                (false, false) => Some("not available: every score is 0 or 1".into()),
            },
            reference: self.reference.clone(),
            ratio_band: self.ratio_band,
            min_count: self.min_count,
            alpha: self.alpha,
            tests: tests.len(),
            significant_groups: groups.iter().filter(|g| g.significant).count(),
            parity: parity_by_set,
            parity_min_count: parity_counted,
            worst,
            groups,
        };
        let mut tables = vec![group_table(&figures)?];
        if probabilities {
            tables.push(sweep_table(&measured, &outcomes)?);
        }
        let model_queries = model.oracle.rows() - before;
        let rows_out = figures
            .groups
            .iter()
            .map(|g| GroupMetricRow {
                attributes: g.attributes.clone(),
                group: g.group.clone(),
                n: g.n,
                selected: (g.selection_rate * g.n as f64).round() as usize,
                rate: g.selection_rate,
                ci95: g.ci95,
                impact_ratio: g.impact_ratio,
            })
            .collect();
        Ok(StageOutput {
            artifact: Artifact::GroupMetrics(Arc::new(GroupMetricsArtifact { rows: rows_out })),
            figures: Arc::new(figures),
            tables,
            model_queries,
        })
    }
}

/// The stage's main table: one row per group.
fn group_table(f: &GroupMetricsFigures) -> Result<Table> {
    let g = &f.groups;
    let num = |key: &str| -> Vec<f64> { g.iter().map(|r| r.metrics.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN)).collect() };
    let verdict = |r: &GroupFigure| {
        if r.n < (f.min_share * f.rows as f64).ceil() as usize {
            "small"
        } else if r.four_fifths_ok {
            "pass"
        } else {
            "FLAG"
        }
    };
    let mut t = TableBuilder::new()
        .str("attributes", g.iter().map(|r| r.attributes.clone()).collect())
        .str("group", g.iter().map(|r| r.group.clone()).collect())
        .i64("n", g.iter().map(|r| r.n as i64).collect())
        .i64("selected", g.iter().map(|r| (r.selection_rate * r.n as f64).round() as i64).collect())
        .f64("selection_rate", g.iter().map(|r| r.selection_rate).collect())
        .f64("ci95_low", g.iter().map(|r| r.ci95[0]).collect())
        .f64("ci95_high", g.iter().map(|r| r.ci95[1]).collect())
        .f64("impact_ratio", g.iter().map(|r| r.impact_ratio).collect())
        .str("four_fifths", g.iter().map(|r| verdict(r).to_string()).collect())
        .str("reference", g.iter().map(|r| if r.reference { "yes" } else { "" }.to_string()).collect())
        .str("too_small", g.iter().map(|r| if r.too_small { "yes" } else { "" }.to_string()).collect())
        .f64("p_value", g.iter().map(|r| r.p_value).collect())
        .f64("p_adjusted", g.iter().map(|r| r.p_adjusted).collect())
        .str("significant", g.iter().map(|r| if r.significant { "yes" } else { "" }.to_string()).collect())
        .str("outside_band", g.iter().map(|r| r.outside_band.join(" ")).collect());
    for m in Metric::ALL {
        let name = m.name();
        if m != Metric::SelectionRate {
            t = t.f64(name, num(name));
            let ci: Vec<[f64; 2]> = g
                .iter()
                .map(|r| {
                    r.metrics
                        .get(&format!("{name}_ci95"))
                        .and_then(|v| serde_json::from_value::<[Option<f64>; 2]>(v.clone()).ok())
                        .map(|[a, b]| [a.unwrap_or(f64::NAN), b.unwrap_or(f64::NAN)])
                        .unwrap_or([f64::NAN, f64::NAN])
                })
                .collect();
            t = t.f64(&format!("{name}_ci95_low"), ci.iter().map(|c| c[0]).collect());
            t = t.f64(&format!("{name}_ci95_high"), ci.iter().map(|c| c[1]).collect());
        }
        t = t.f64(&format!("{name}_ratio"), num(&format!("{name}_ratio")));
        t = t.f64(&format!("{name}_difference"), num(&format!("{name}_difference")));
    }
    for m in [Metric::Tpr, Metric::Fpr] {
        t = t.f64(&format!("{}_p_adjusted", m.name()), num(&format!("{}_p_adjusted", m.name())));
    }
    if f.probabilities {
        t = t.f64("auc", num("auc"));
    }
    Ok(t.build("")?)
}

/// Selection rate and TPR per group of each single attribute at thresholds 0, 0.05, …, 1.
fn sweep_table(measured: &[Vec<Measured>], o: &Outcomes<'_>) -> Result<Table> {
    let (mut attributes, mut group, mut threshold, mut rate, mut tpr) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for set in measured.iter().filter(|s| !s.first().is_some_and(|g| g.attributes.contains(" × "))) {
        for g in set {
            for step in 0..=SWEEP_STEPS {
                let t = step as f64 / SWEEP_STEPS as f64;
                let mut c = Confusion::default();
                for &i in &g.rows {
                    c.add(o.y[i], o.score[i] > t);
                }
                attributes.push(g.attributes.clone());
                group.push(g.group.clone());
                threshold.push(t);
                rate.push(c.rate(Metric::SelectionRate));
                tpr.push(c.rate(Metric::Tpr));
            }
        }
    }
    Ok(TableBuilder::new()
        .str("attributes", attributes)
        .str("group", group)
        .f64("threshold", threshold)
        .f64("selection_rate", rate)
        .f64("tpr", tpr)
        .build("sweep")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(attributes: &str, group: &str, n: usize, selected: usize) -> Measured {
        let mut confusion = Confusion::default();
        for i in 0..n {
            confusion.add(true, i < selected);
        }
        Measured {
            attributes: attributes.into(),
            group: group.into(),
            rows: (0..n).collect(),
            confusion,
            auc: f64::NAN,
            auc_ci95: [f64::NAN; 2],
            calibration: Vec::new(),
        }
    }

    #[test]
    fn references_are_the_largest_the_most_selected_or_the_named_group() {
        let set = vec![
            measured("sex × race", "F × A", 40, 30),
            measured("sex × race", "M × A", 100, 20),
            measured("sex × race", "M × B", 20, 20),
        ];
        assert_eq!(reference_of(&set, &Reference::Largest, 30).unwrap(), 1);
        // The 20-row group selects everyone but is under min_count.
        assert_eq!(reference_of(&set, &Reference::MostFavoured, 30).unwrap(), 0);
        assert_eq!(reference_of(&set, &Reference::MostFavoured, 10).unwrap(), 2);
        let named = |k: &str, v: &str| Reference::Named([(k.to_string(), v.to_string())].into());
        assert_eq!(reference_of(&set, &named("race", "B"), 30).unwrap(), 2);
        assert_eq!(reference_of(&set, &named("sex", "M"), 30).unwrap(), 1);
        let err = reference_of(&set, &named("sex", "X"), 30).unwrap_err().to_string();
        assert!(err.contains("sex has no group `X`") && err.contains("F, M"), "{err}");
    }

    #[test]
    fn the_reference_reads_strings_and_tables_and_rejects_the_rest() {
        assert_eq!(Reference::read(&json!("largest")), Ok(Reference::Largest));
        assert_eq!(Reference::read(&json!({"gender": 1})), Ok(Reference::Named([("gender".into(), "1".into())].into())));
        assert!(Reference::read(&json!("biggest")).unwrap_err().contains("\"largest\", \"most_favoured\""));
        assert!(Reference::read(&json!({"sex": [1]})).is_err());
    }
}
