//! `group_metrics`: the model's selection rate per protected group on the data's own rows, with
//! Wilson intervals, impact ratios and the four-fifths rule.

use std::collections::BTreeMap;
use std::sync::Arc;

use fairpipe_abi::domain::Domain;
use serde::{Deserialize, Serialize};

use super::group_score::MODEL_INPUT;
use super::options::{check_protected, Rows, PROTECTED};
use crate::error::Result;
use crate::estimate::wilson;
use crate::group_rule::number;
use crate::output::TableBuilder;
use crate::pipeline::config::{configure, fields_of, Checks, StageConfig};
use crate::pipeline::kind::{KeyDoc, StageEnv, StageKind};
use crate::pipeline::stage::{
    audited_rows, figures_map, nan_if_null, Artifact, ArtifactKind, GroupMetricRow, GroupMetricsArtifact, Inputs, Stage, StageContext,
    StageOutput,
};

/// The `group_metrics` stage kind.
pub const KIND: StageKind = StageKind {
    name: "group_metrics",
    doc: "Selection rate of the model per value of each protected attribute and per intersection, on the data's own rows: Wilson 95% intervals, impact ratio against the most selected group, and the four-fifths rule (the table of a NYC Local Law 144 bias audit).",
    inputs: MODEL_INPUT,
    output: ArtifactKind::GroupMetrics,
    keys: &[
        KeyDoc::new("split", "\"test\"|\"train\"|\"all\"", "\"all\"", "rows to measure"),
        KeyDoc::new("threshold", "float", "0.8", "impact ratio below which a group is flagged (four-fifths rule)"),
        KeyDoc::new(
            "min_share",
            "float",
            "0.02",
            "groups smaller than this share of the rows are listed but not flagged (LL144 audits may exclude categories under 2%)",
        ),
        PROTECTED,
    ],
    tag: None,
    example: "[stages.metrics]\nkind = \"group_metrics\"\nmodel = \"model\"\nprotected = [\"gender\", \"race\"]",
    configure: configure::<GroupMetricsConfig>,
    fields: fields_of::<GroupMetricsConfig>,
};

/// The `group_metrics` stage's config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GroupMetricsConfig {
    /// Rows to measure.
    pub split: Rows,
    /// Impact ratio below which a group is flagged.
    pub threshold: f64,
    /// Groups smaller than this share of the rows are listed but not flagged.
    pub min_share: f64,
    /// Audit these protected attributes instead of the data's.
    pub protected: Option<Vec<String>>,
}

impl Default for GroupMetricsConfig {
    fn default() -> Self {
        GroupMetricsConfig { split: Rows::All, threshold: 0.8, min_share: 0.02, protected: None }
    }
}

impl StageConfig for GroupMetricsConfig {
    fn kind() -> &'static StageKind {
        &KIND
    }

    fn validate(&self, c: &mut Checks<'_, '_>) {
        c.within("threshold", self.threshold, 0.0, 1.0);
        c.within("min_share", self.min_share, 0.0, 1.0);
        check_protected(c, &self.protected);
    }

    fn instantiate(self, _env: &StageEnv) -> Result<Box<dyn Stage>> {
        Ok(Box::new(self))
    }
}

/// A group below the threshold.
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

/// One group under the DESIGN.md contract's names.
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
}

/// Figures of a `group_metrics` stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupMetricsFigures {
    /// Rows measured.
    pub rows: usize,
    /// Share of all rows selected.
    #[serde(deserialize_with = "nan_if_null")]
    pub selection_rate: f64,
    /// Lowest impact ratio per attribute set (`null` when none is defined).
    pub min_impact_ratio: BTreeMap<String, Option<f64>>,
    /// Groups flagged.
    pub below_threshold: Vec<FlaggedGroup>,
    /// Every group.
    pub groups: Vec<GroupFigure>,
    /// The flag threshold.
    pub threshold: f64,
    /// The smallest share judged.
    pub min_share: f64,
}

/// Attributes with more distinct values than this are grouped into this many equal-width bins.
const MAX_LEVELS: usize = 10;

/// How one attribute's values map to groups: as they are, or into equal-width bins.
enum Grouping {
    Values,
    Bins { lower: f64, width: f64, step: f64, integer: bool },
}

impl Grouping {
    fn of(domain: &Domain, rows: &[f64], attr: usize) -> Self {
        let width = domain.width();
        let mut distinct: Vec<u64> = rows.chunks_exact(width).map(|r| r[attr].to_bits()).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let a = &domain.attributes[attr];
        if distinct.len() <= MAX_LEVELS || matches!(a.kind, fairpipe_abi::domain::AttributeKind::Categorical { .. }) {
            return Grouping::Values;
        }
        let integer = !matches!(a.kind, fairpipe_abi::domain::AttributeKind::Continuous);
        Grouping::Bins { lower: a.lower, width: (a.upper - a.lower) / MAX_LEVELS as f64, step: a.step, integer }
    }

    /// The group key of value `v` (sortable).
    fn key(&self, v: f64) -> f64 {
        match self {
            Grouping::Values => v,
            Grouping::Bins { lower, width, .. } => (((v - lower) / width).floor()).clamp(0.0, (MAX_LEVELS - 1) as f64),
        }
    }

    /// The group's name.
    fn label(&self, domain: &Domain, attr: usize, key: f64) -> String {
        match self {
            Grouping::Values => domain.attributes[attr].decode(key),
            Grouping::Bins { lower, width, step, integer } => {
                let edge = |i: f64| {
                    let e = lower + width * i;
                    if *integer {
                        lower + ((e - lower) / step).ceil() * step
                    } else {
                        e
                    }
                };
                let (lo, hi) = (edge(key), edge(key + 1.0));
                if key as usize == MAX_LEVELS - 1 {
                    format!("{}–{}", number(lo), number(domain.attributes[attr].upper))
                } else if *integer {
                    format!("{}–{}", number(lo), number(hi - step))
                } else {
                    format!("[{}, {})", number(lo), number(hi))
                }
            }
        }
    }
}

/// Selection rates of the groups of `attrs` (one attribute, or an intersection); attributes with
/// many values are binned. Impact ratios are taken against the most selected group of at least
/// `min_n` rows.
fn rates(domain: &Domain, rows: &[f64], selected: &[bool], attrs: &[usize], min_n: usize) -> Vec<GroupMetricRow> {
    let width = domain.width();
    let groupings: Vec<Grouping> = attrs.iter().map(|&a| Grouping::of(domain, rows, a)).collect();
    let mut counts: BTreeMap<Vec<u64>, (usize, usize)> = BTreeMap::new();
    for (row, &sel) in rows.chunks_exact(width).zip(selected) {
        let key: Vec<u64> = attrs.iter().zip(&groupings).map(|(&a, g)| g.key(row[a]).to_bits()).collect();
        let c = counts.entry(key).or_default();
        c.0 += 1;
        c.1 += usize::from(sel);
    }
    let name = attrs.iter().map(|&a| domain.attributes[a].name.as_str()).collect::<Vec<_>>().join(" × ");
    let mut out: Vec<GroupMetricRow> = counts
        .into_iter()
        .map(|(key, (n, s))| GroupMetricRow {
            attributes: name.clone(),
            group: attrs
                .iter()
                .zip(&groupings)
                .zip(&key)
                .map(|((&a, g), &bits)| g.label(domain, a, f64::from_bits(bits)))
                .collect::<Vec<_>>()
                .join(" × "),
            n,
            selected: s,
            rate: s as f64 / n as f64,
            ci95: wilson(s, n, 1.96),
            impact_ratio: f64::NAN,
        })
        .collect();
    let large: Vec<f64> = out.iter().filter(|r| r.n >= min_n).map(|r| r.rate).collect();
    let best = if large.is_empty() { out.iter().map(|r| r.rate).fold(0.0, f64::max) } else { large.into_iter().fold(0.0, f64::max) };
    for r in &mut out {
        r.impact_ratio = if best > 0.0 { r.rate / best } else { f64::NAN };
    }
    out
}

impl Stage for GroupMetricsConfig {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let (domain, rows) = audited_rows(&model, self.protected.as_deref(), self.split.split())?;
        let before = model.oracle.rows();
        let selected: Vec<bool> = model.oracle.predict_proba(&rows)?.into_iter().map(|p| p > 0.5).collect();
        let protected = domain.protected_indices();
        let min_n = (self.min_share * (rows.len() / domain.width()) as f64).ceil() as usize;
        let mut all = Vec::new();
        for &a in &protected {
            all.extend(rates(&domain, &rows, &selected, &[a], min_n));
        }
        if protected.len() > 1 {
            all.extend(rates(&domain, &rows, &selected, &protected, min_n));
        }
        let n_rows = (rows.len() / domain.width()).max(1) as f64;
        let verdict = |r: &GroupMetricRow| {
            if (r.n as f64) < self.min_share * n_rows {
                "small"
            } else if r.impact_ratio >= self.threshold {
                "pass"
            } else {
                "FLAG"
            }
        };
        let mut min_impact_ratio: BTreeMap<String, f64> = BTreeMap::new();
        for r in &all {
            let entry = min_impact_ratio.entry(r.attributes.clone()).or_insert(f64::INFINITY);
            if r.impact_ratio < *entry {
                *entry = r.impact_ratio;
            }
        }
        let figures = GroupMetricsFigures {
            rows: rows.len() / domain.width(),
            selection_rate: selected.iter().filter(|s| **s).count() as f64 / selected.len().max(1) as f64,
            min_impact_ratio: min_impact_ratio.into_iter().map(|(k, v)| (k, v.is_finite().then_some(v))).collect(),
            below_threshold: all
                .iter()
                .filter(|r| verdict(r) == "FLAG")
                .map(|r| FlaggedGroup { attributes: r.attributes.clone(), group: r.group.clone(), impact_ratio: r.impact_ratio, n: r.n })
                .collect(),
            groups: all
                .iter()
                .map(|r| GroupFigure {
                    attributes: r.attributes.clone(),
                    group: r.group.clone(),
                    n: r.n,
                    selection_rate: r.rate,
                    ci95: r.ci95,
                    impact_ratio: r.impact_ratio,
                    four_fifths_ok: verdict(r) != "FLAG",
                })
                .collect(),
            threshold: self.threshold,
            min_share: self.min_share,
        };
        let table = TableBuilder::new()
            .str("attributes", all.iter().map(|r| r.attributes.clone()).collect())
            .str("group", all.iter().map(|r| r.group.clone()).collect())
            .i64("n", all.iter().map(|r| r.n as i64).collect())
            .i64("selected", all.iter().map(|r| r.selected as i64).collect())
            .f64("selection_rate", all.iter().map(|r| r.rate).collect())
            .f64("ci95_low", all.iter().map(|r| r.ci95[0]).collect())
            .f64("ci95_high", all.iter().map(|r| r.ci95[1]).collect())
            .f64("impact_ratio", all.iter().map(|r| r.impact_ratio).collect())
            .str("four_fifths", all.iter().map(|r| verdict(r).to_string()).collect())
            .build("")?;
        let model_queries = model.oracle.rows() - before;
        Ok(StageOutput {
            artifact: Artifact::GroupMetrics(Arc::new(GroupMetricsArtifact { rows: all })),
            figures: figures_map(&figures),
            tables: vec![table],
            model_queries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group_rule::tests::race_age_domain;

    #[test]
    fn impact_ratios_against_the_most_selected_group() {
        let d = race_age_domain();
        // Black: 2 of 4 selected; White: 4 of 4; Other: 1 of 4.
        let rows: Vec<f64> = (0..12).flat_map(|i| [f64::from(i / 4), 30.0]).collect();
        let selected = [true, true, false, false, true, true, true, true, true, false, false, false];
        let r = rates(&d, &rows, &selected, &[0], 0);
        let by_group: Vec<(&str, f64)> = r.iter().map(|g| (g.group.as_str(), g.impact_ratio)).collect();
        assert_eq!(by_group, vec![("Black", 0.5), ("White", 1.0), ("Other", 0.25)]);
        assert!(r.iter().all(|g| g.ci95[0] <= g.rate && g.rate <= g.ci95[1]));
    }

    #[test]
    fn many_valued_attributes_are_binned() {
        let d = race_age_domain();
        // Ages 0..90: 91 values, grouped into 10 bins of width 9.
        let rows: Vec<f64> = (0..91).flat_map(|i| [0.0, f64::from(i)]).collect();
        let selected = vec![true; 91];
        let r = rates(&d, &rows, &selected, &[1], 0);
        assert_eq!(r.len(), 10);
        assert_eq!(r[0].group, "0–8");
        assert_eq!(r[9].group, "81–90");
        assert_eq!(r.iter().map(|g| g.n).sum::<usize>(), 91);
    }

    #[test]
    fn small_groups_are_not_the_reference_group() {
        let d = race_age_domain();
        // Black: 1 of 10 selected; White: 5 of 10; Other: 1 of 1.
        let rows: Vec<f64> = (0..21).flat_map(|i| [f64::from(u8::from(i >= 10) + u8::from(i >= 20)), 30.0]).collect();
        let selected: Vec<bool> = (0..21).map(|i| i == 0 || (10..15).contains(&i) || i == 20).collect();
        let r = rates(&d, &rows, &selected, &[0], 2);
        let ratios: Vec<f64> = r.iter().map(|g| g.impact_ratio).collect();
        assert_eq!(ratios, vec![0.2, 1.0, 2.0]);
    }
}
