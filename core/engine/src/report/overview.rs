//! The report's first screen: one verdict line per protected attribute (from `summary.json`'s
//! `verdicts`, [`crate::verdict`]) with what to do next, and one summary grid of attributes ×
//! measures (as DSSG Aequitas' summary plot): the flip rates, the worst impact ratio and the worst
//! true and false positive rate ratios of each attribute, each cell coloured by its grade.
//!
//! Every ratio on the page divides by one reference per attribute: its most favoured group (the
//! most selected group of at least `min_share` of the rows, the group the impact ratio divides by).

use serde::Serialize;
use serde_json::Value;

use super::{pctf, section_id};
use crate::stage::summary::Summary;
use crate::stages::group_metrics::{GroupFigure, GroupMetricsFigures};
use crate::verdict::{most_favoured, AttributeVerdict, FlipMeasure, Severity, VerdictSection};

/// The CSS class of a severity ("severe", "notable", "ok", "not_measured").
pub(crate) fn class(s: Severity) -> &'static str {
    match s {
        Severity::Severe => "severe",
        Severity::Notable => "notable",
        Severity::Ok => "ok",
        Severity::NotMeasured => "not_measured",
    }
}

/// One verdict line as the page shows it.
#[derive(Serialize)]
pub(crate) struct VerdictLine {
    class: &'static str,
    word: &'static str,
    /// The model, when the run audits more than one.
    model: Option<String>,
    line: String,
    next: String,
    /// The section that holds the measure that sets the grade.
    link: Option<String>,
}

/// A cell of the summary grid.
#[derive(Serialize, Default)]
pub(crate) struct Cell {
    /// Its colour: a severity class, "band_out", "band_in" or "" (nothing measured).
    class: &'static str,
    text: String,
    /// The cell's tooltip.
    title: String,
}

/// A row of the summary grid: an attribute (or an intersection) of a model.
#[derive(Serialize)]
pub(crate) struct Row {
    label: String,
    model: Option<String>,
    /// The verdict's grade (empty for an intersection, which has no verdict line).
    class: &'static str,
    cells: Vec<Cell>,
}

/// The summary grid: a column per measure the run took, a row per attribute.
#[derive(Serialize)]
pub(crate) struct Grid {
    columns: Vec<&'static str>,
    rows: Vec<Row>,
    /// The band of the rate ratios (the `group_metrics` stage's `ratio_band`).
    band: Option<[f64; 2]>,
}

/// The first screen.
#[derive(Serialize)]
pub(crate) struct Overview {
    verdicts: Vec<VerdictLine>,
    /// The thresholds in words.
    thresholds: String,
    grid: Option<Grid>,
}

/// The verdicts of the run: `summary.json`'s, or for a summary written before they were, the
/// verdicts under the default thresholds.
pub(crate) fn verdicts_of(summary: &Summary) -> VerdictSection {
    summary.verdicts.clone().unwrap_or_else(|| crate::verdict::verdicts(summary, &Default::default()))
}

/// The overview of `summary`.
pub(crate) fn overview(summary: &Summary) -> Overview {
    let section = verdicts_of(summary);
    let several_models = section.attributes.iter().any(|a| a.model != section.attributes[0].model);
    let model = |a: &AttributeVerdict| several_models.then(|| model_label(summary, &a.model));
    let verdicts = section
        .attributes
        .iter()
        .map(|a| VerdictLine {
            class: class(a.severity),
            word: a.severity.word(),
            model: model(a),
            line: a.line.clone(),
            next: a.next.clone(),
            link: grading_stage(a).map(section_id),
        })
        .collect();
    Overview { verdicts, thresholds: crate::verdict::thresholds_words(&section), grid: grid(summary, &section, several_models) }
}

/// What a verdict is about, in words: "model `xgb`", or for a bias audit of decisions recorded in
/// the data (no model), "the decisions audited by `decisions`".
pub(crate) fn model_label(summary: &Summary, model: &str) -> String {
    match summary.stages.get(model) {
        // Not a stage giving a model: decisions recorded in the data, audited by that stage.
        Some(e) if !crate::stages::meaning(&e.kind).model_stage => format!("the decisions audited by `{model}`"),
        _ => format!("model `{model}`"),
    }
}

/// The stage whose measure sets an attribute's grade.
fn grading_stage(a: &AttributeVerdict) -> Option<&str> {
    let flip = a.flips.first().map(|m| (m.severity, m.stage.as_str()));
    let impact = a.impact.as_ref().map(|m| (m.severity, m.stage.as_str()));
    match (flip, impact) {
        (Some(f), Some(i)) => Some(if i.0 > f.0 { i.1 } else { f.1 }),
        (f, i) => f.or(i).map(|x| x.1),
    }
}

/// The measures of the grid, in its order.
const COLUMNS: [&str; 6] = [
    "Real rows flipped",
    "Domain inputs flipped",
    "Search",
    "Impact ratio, worst group",
    "True positive rate ratio, worst group",
    "False positive rate ratio, worst group",
];

/// The cell of a flip measure of `kind` (the first of the attribute's).
fn flip_cell(flips: &[FlipMeasure], kind: &str) -> Cell {
    let Some(m) = flips.iter().find(|m| m.measure == kind) else { return Cell::default() };
    let together = if m.changed_with.is_empty() { String::new() } else { format!(" ({} changed together)", m.changed_with.join(", ")) };
    match m.rate {
        Some(rate) => Cell {
            class: class(m.severity),
            text: pctf(rate),
            title: format!("{} of {} flip{together} ({} `{}`)", m.flipped, m.of, m.measure, m.stage),
        },
        None => Cell {
            class: if m.flipped > 0 { "notable" } else { "ok" },
            text: if m.flipped > 0 { format!("{} found", m.flipped) } else { "none found".into() },
            title: format!("{} inputs found that flip{together}, of {} generated (search `{}`)", m.flipped, m.of, m.stage),
        },
    }
}

/// The worst ratio of a rate `key` to the most favoured group's, among the groups of `set` large
/// enough to judge, against the band: "×0.71 Female".
fn rate_cell(f: &GroupMetricsFigures, set: &str, key: &str, label: &str) -> Cell {
    let groups: Vec<&GroupFigure> = f.groups.iter().filter(|g| g.attributes == set).collect();
    let Some(reference) = most_favoured(f, &groups) else { return Cell::default() };
    let value = |g: &GroupFigure| g.metrics.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN);
    let base = value(reference);
    if base.is_nan() || base <= 0.0 {
        return Cell::default();
    }
    let judged: Vec<(&GroupFigure, f64)> = groups
        .iter()
        .filter(|g| g.group != reference.group && g.n >= f.min_count)
        .map(|g| (*g, value(g) / base))
        .filter(|(_, r)| r.is_finite() && *r > 0.0)
        .collect();
    // The furthest from parity, either way.
    let distance = |r: f64| r.ln().abs();
    let Some(&(worst, ratio)) = judged.iter().max_by(|a, b| distance(a.1).total_cmp(&distance(b.1))) else { return Cell::default() };
    let outside = judged.iter().filter(|(_, r)| *r < f.ratio_band[0] || *r > f.ratio_band[1]).count();
    Cell {
        class: if outside > 0 { "band_out" } else { "band_in" },
        text: format!("×{ratio:.2} {}", worst.group),
        title: format!(
            "{label} {} for {set} = {} against {} for {set} = {}; {outside} of {} groups outside the band [{}, {}]",
            pctf(value(worst)),
            worst.group,
            pctf(base),
            reference.group,
            judged.len(),
            f.ratio_band[0],
            f.ratio_band[1]
        ),
    }
}

/// The impact cell of an attribute set.
fn impact_cell(m: Option<&crate::verdict::ImpactMeasure>) -> Cell {
    let Some(m) = m else { return Cell::default() };
    Cell {
        class: class(m.severity),
        text: format!("{:.2} {}", m.impact_ratio, m.group),
        title: format!(
            "{} selected at {} against {} at {} ({} `{}`)",
            m.group,
            pctf(m.selection_rate),
            m.reference,
            pctf(m.reference_rate),
            m.measure,
            m.stage
        ),
    }
}

/// The summary grid, or none when no attribute was measured.
fn grid(summary: &Summary, section: &VerdictSection, several_models: bool) -> Option<Grid> {
    if section.attributes.is_empty() {
        return None;
    }
    let metrics = |stage: &str| summary.stages.get(stage).and_then(|e| e.figures::<GroupMetricsFigures>().ok());
    let mut rows = Vec::new();
    let mut band = None;
    let mut intersections: Vec<(String, String, GroupMetricsFigures)> = Vec::new();
    for a in &section.attributes {
        let f = a.impact.as_ref().and_then(|m| metrics(&m.stage));
        let rate = |key, label| f.as_ref().map_or_else(Cell::default, |f| rate_cell(f, &a.attribute, key, label));
        rows.push(Row {
            label: a.attribute.clone(),
            model: several_models.then(|| model_label(summary, &a.model)),
            class: class(a.severity),
            cells: vec![
                flip_cell(&a.flips, crate::stages::check::KIND.name),
                flip_cell(&a.flips, crate::stages::estimate::KIND.name),
                flip_cell(&a.flips, crate::stages::verify::SEARCH_MEASURE),
                impact_cell(a.impact.as_ref()),
                rate("tpr", "true positive rate"),
                rate("fpr", "false positive rate"),
            ],
        });
        if let (Some(m), Some(f)) = (&a.impact, f) {
            band.get_or_insert(f.ratio_band);
            if !intersections.iter().any(|(s, _, _)| *s == m.stage) {
                intersections.push((m.stage.clone(), a.model.clone(), f));
            }
        }
    }
    // The intersections each group_metrics stage measured, after the attributes.
    for (stage, model, f) in &intersections {
        let mut sets: Vec<&str> = f.groups.iter().map(|g| g.attributes.as_str()).filter(|s| s.contains(" × ")).collect();
        sets.dedup();
        for set in sets {
            let impact = crate::verdict::impact(&section.thresholds, stage, f, set);
            let mut cells = vec![Cell::default(), Cell::default(), Cell::default(), impact_cell(impact.as_ref())];
            cells.push(rate_cell(f, set, "tpr", "true positive rate"));
            cells.push(rate_cell(f, set, "fpr", "false positive rate"));
            rows.push(Row { label: set.to_string(), model: several_models.then(|| model_label(summary, model)), class: "", cells });
        }
    }
    // Only the columns some row has.
    let keep: Vec<bool> = (0..COLUMNS.len()).map(|k| rows.iter().any(|r| !r.cells[k].text.is_empty())).collect();
    let columns = COLUMNS.iter().zip(&keep).filter(|(_, k)| **k).map(|(c, _)| *c).collect();
    for r in &mut rows {
        let cells = std::mem::take(&mut r.cells);
        r.cells = cells.into_iter().zip(&keep).filter(|(_, k)| **k).map(|(c, _)| c).collect();
    }
    Some(Grid { columns, rows, band })
}
