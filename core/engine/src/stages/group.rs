//! Group-level stages: `group_score` (an auditor plugin such as TestSGD: ranked groups with score
//! and error margin) and `group_metrics` (selection rate per protected group on the data's own
//! rows, impact ratios and the four-fifths rule).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use fairpipe_abi::domain::Domain;
use fairpipe_ffi::{self as ffi, FfiBudget};
use serde_json::{json, Map, Value};

use super::audit::{protected, PROTECTED};
use super::search::configured_plugin;
use crate::data::Split;
use crate::error::{Error, Result};
use crate::estimate::wilson;
use crate::group_rule::{number, GroupRule};
use crate::output::TableBuilder;
use crate::pipeline::params::{Params, Problems};
use crate::pipeline::registry::{InputDoc, ParamDoc, StageKind};
use crate::pipeline::stage::{
    audited_rows, put, Artifact, ArtifactKind, GroupMetricRow, GroupMetricsArtifact, GroupScoreRow, GroupsArtifact, Inputs, Stage,
    StageContext, StageOutput,
};
use crate::plugin::{Plugin, RunSpec};

const MODEL_INPUT: &[InputDoc] =
    &[InputDoc { role: "model", accepts: &[ArtifactKind::Model], required: true, doc: "the model under test (with its dataset)" }];

/// The `group_score` stage kind.
pub const GROUP_SCORE: StageKind = StageKind {
    name: "group_score",
    doc: "Run an auditor plugin (testsgd) over the dataset's rows: groups defined by rules on the protected attributes, ranked by the difference in favourable rate inside and outside the group, with error margins.",
    inputs: MODEL_INPUT,
    output: ArtifactKind::Groups,
    params: &[
        ParamDoc { name: "plugin", ty: "string", default: "\"testsgd\"", doc: "auditor plugin name" },
        ParamDoc { name: "path", ty: "path", default: "none", doc: "load the plugin from this library file instead" },
        ParamDoc { name: "params", ty: "table", default: "{}", doc: "the plugin's own parameters" },
        ParamDoc { name: "split", ty: "\"train\"|\"test\"|\"all\"", default: "\"train\"", doc: "rows the rules' support and the samples come from" },
        ParamDoc { name: "top_k", ty: "int", default: "10", doc: "groups listed in summary.json (the table has all)" },
        ParamDoc { name: "max_seconds", ty: "float", default: "0 (no limit)", doc: "budget: wall time" },
        PROTECTED,
    ],
    example: "[stages.groups]\nkind = \"group_score\"\nmodel = \"model\"\nprotected = [\"gender\", \"race\", \"age\"]\nparams = { theta = 0.05 }",
    build: build_group_score,
};

/// The `group_metrics` stage kind.
pub const GROUP_METRICS: StageKind = StageKind {
    name: "group_metrics",
    doc: "Selection rate of the model per value of each protected attribute and per intersection, on the data's own rows: Wilson 95% intervals, impact ratio against the most selected group, and the four-fifths rule (the table of a NYC Local Law 144 bias audit).",
    inputs: MODEL_INPUT,
    output: ArtifactKind::GroupMetrics,
    params: &[
        ParamDoc { name: "split", ty: "\"test\"|\"train\"|\"all\"", default: "\"all\"", doc: "rows to measure" },
        ParamDoc { name: "threshold", ty: "float", default: "0.8", doc: "impact ratio below which a group is flagged (four-fifths rule)" },
        ParamDoc {
            name: "min_share",
            ty: "float",
            default: "0.02",
            doc: "groups smaller than this share of the rows are listed but not flagged (LL144 audits may exclude categories under 2%)",
        },
        PROTECTED,
    ],
    example: "[stages.metrics]\nkind = \"group_metrics\"\nmodel = \"model\"\nprotected = [\"gender\", \"race\"]",
    build: build_group_metrics,
};

struct GroupScore {
    plugin: &'static Plugin,
    params: Value,
    split: Option<Split>,
    top_k: usize,
    max_seconds: f64,
    protected: Option<Vec<String>>,
}

struct GroupMetrics {
    split: Option<Split>,
    threshold: f64,
    min_share: f64,
    protected: Option<Vec<String>>,
}

fn split(params: &Params, p: &mut Problems, default: &str) -> Option<Split> {
    match params.choice(p, "split", &["train", "test", "all"], default).as_str() {
        "train" => Some(Split::Train),
        "test" => Some(Split::Test),
        _ => None,
    }
}

fn build_group_score(params: &Params, p: &mut Problems, _seed: u64) -> Option<Box<dyn Stage>> {
    let (plugin, plugin_params) =
        configured_plugin(params, p, Some("testsgd"), ffi::kind::AUDITOR, "group_score needs an auditor (e.g. testsgd)")?;
    Some(Box::new(GroupScore {
        plugin,
        params: plugin_params,
        split: split(params, p, "train"),
        top_k: params.usize_min(p, "top_k", 10, 0),
        max_seconds: params.f64_in(p, "max_seconds", 0.0, 0.0, 1e9),
        protected: protected(params, p),
    }))
}

fn build_group_metrics(params: &Params, p: &mut Problems, _seed: u64) -> Option<Box<dyn Stage>> {
    Some(Box::new(GroupMetrics {
        split: split(params, p, "all"),
        threshold: params.f64_in(p, "threshold", 0.8, 0.0, 1.0),
        min_share: params.f64_in(p, "min_share", 0.02, 0.0, 1.0),
        protected: protected(params, p),
    }))
}

impl Stage for GroupScore {
    fn run(&self, ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let (domain, rows) = audited_rows(&model, self.protected.as_deref(), self.split)?;
        let before = model.oracle.rows();
        let started = Instant::now();
        let spec = RunSpec {
            params: &self.params,
            seeds: &rows,
            rng_seed: ctx.seed,
            budget: FfiBudget { max_seconds: self.max_seconds, ..FfiBudget::default() },
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
        let mut figures = Map::new();
        put(&mut figures, "plugin", format!("{} {}", self.plugin.name, self.plugin.version));
        put(&mut figures, "params", self.params.clone());
        if let Some(f) = report["figures"].as_object() {
            for (k, v) in f {
                figures.insert(k.clone(), v.clone());
            }
        }
        put(&mut figures, "run_elapsed_s", elapsed_s);
        put(&mut figures, "groups", groups.len());
        let top: Vec<Value> = groups
            .iter()
            .take(self.top_k)
            .map(|g| json!({"condition": g.condition, "score": g.score, "margin": g.margin, "rate_in": g.rate_in, "rate_out": g.rate_out, "support": g.support}))
            .collect();
        put(&mut figures, "top", top);
        // The DESIGN.md contract's names for the ranked rules (the top_k listed here; all in the table).
        let rules: Vec<Value> = groups
            .iter()
            .take(self.top_k)
            .map(|g| json!({"rule": g.condition, "score": g.score, "phi_in": g.rate_in, "phi_out": g.rate_out, "margin": g.margin, "samples": g.samples}))
            .collect();
        put(&mut figures, "rules", rules);
        if let Some(worst) = groups.first() {
            put(&mut figures, "worst_score", worst.score);
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
        Ok(StageOutput { artifact: Artifact::Groups(Arc::new(artifact)), figures, tables: vec![table], model_queries })
    }
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

impl Stage for GroupMetrics {
    fn run(&self, _ctx: &StageContext, inputs: &Inputs) -> Result<StageOutput> {
        let model = inputs.model("model")?;
        let (domain, rows) = audited_rows(&model, self.protected.as_deref(), self.split)?;
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
        let mut figures = Map::new();
        put(&mut figures, "rows", rows.len() / domain.width());
        put(&mut figures, "selection_rate", selected.iter().filter(|s| **s).count() as f64 / selected.len().max(1) as f64);
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
        let flagged: Vec<Value> = all
            .iter()
            .filter(|r| verdict(r) == "FLAG")
            .map(|r| json!({"attributes": r.attributes, "group": r.group, "impact_ratio": r.impact_ratio, "n": r.n}))
            .collect();
        let mut min_ratio = Map::new();
        for r in &all {
            let entry = min_ratio.entry(r.attributes.clone()).or_insert(json!(f64::INFINITY));
            if r.impact_ratio < entry.as_f64().unwrap_or(f64::INFINITY) {
                *entry = json!(r.impact_ratio);
            }
        }
        put(&mut figures, "min_impact_ratio", Value::Object(min_ratio));
        put(&mut figures, "below_threshold", flagged);
        // The DESIGN.md contract's names, one entry per group (the table has the same rows).
        let contract: Vec<Value> = all
            .iter()
            .map(|r| {
                json!({
                    "attributes": r.attributes, "group": r.group, "n": r.n, "selection_rate": r.rate, "ci95": r.ci95,
                    "impact_ratio": r.impact_ratio, "four_fifths_ok": verdict(r) != "FLAG",
                })
            })
            .collect();
        put(&mut figures, "groups", contract);
        put(&mut figures, "threshold", self.threshold);
        put(&mut figures, "min_share", self.min_share);
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
            figures,
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
