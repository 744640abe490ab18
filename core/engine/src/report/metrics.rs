//! The report's `group_metrics` sections: per attribute set one chart of the selection rate per
//! group and a folded table of every rate, then the true and false positive rates and precision by
//! group, and the threshold sweeps.
//!
//! One reference per attribute set throughout: its most favoured group (the group the impact ratio
//! divides by, [`crate::verdict::most_favoured`]). Bars are coloured by the verdict's grade of the
//! group ([`crate::verdict::grade_group`]); a difference is marked significant only where the
//! stage's test compared the group with that same reference (its `reference` key chose it).
//! Where it compared them with another group, the section says which groups its tests found
//! significant against that group (as the findings do), marking none in the chart or table.

use polars::prelude::*;
use serde::Serialize;
use serde_json::Value;

use super::charts::{Bar, BarChart, LineChart, Scale, Verdict};
use super::{cell, or0, pctf, section_id};
use crate::fairness::ParitySummary;
use crate::output::Table;
use crate::stages::group_metrics::{GroupFigure, GroupMetricsFigures};
use crate::verdict::{grade_group, most_favoured, Severity, Thresholds};

/// The metrics of the readable group table, with whether the stage tests each against its
/// reference.
const READ_FIRST: [(&str, &str, bool); 9] = [
    ("selection_rate", "selection rate", true),
    ("base_rate", "base rate (label)", false),
    ("tpr", "true positive rate", true),
    ("fpr", "false positive rate", true),
    ("fnr", "false negative rate", false),
    ("tnr", "true negative rate", false),
    ("ppv", "precision (PPV)", false),
    ("npv", "NPV", false),
    ("accuracy", "accuracy", false),
];

/// Groups charted per attribute set beyond which the smallest are left out.
const MAX_CHARTED_GROUPS: usize = 40;

/// Groups of an attribute set beyond which the set has no table (the CSV table has them).
const MAX_TABLED_GROUPS: usize = 40;

/// A group's figure `key` (the selection rate is a field of its own).
fn group_value(g: &GroupFigure, key: &str) -> f64 {
    if key == "selection_rate" {
        return g.selection_rate;
    }
    g.metrics.get(key).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

/// A group's interval of `key`.
fn group_ci(g: &GroupFigure, key: &str) -> [f64; 2] {
    if key == "selection_rate" {
        return g.ci95;
    }
    let v = g.metrics.get(&format!("{key}_ci95")).cloned().unwrap_or(Value::Null);
    let at = |i: usize| v.get(i).and_then(Value::as_f64).unwrap_or(f64::NAN);
    [at(0), at(1)]
}

/// Whether group `g`'s test of `key` is significant after the correction.
fn group_significant(g: &GroupFigure, key: &str) -> bool {
    if key == "selection_rate" {
        return g.significant;
    }
    g.metrics.get(&format!("{key}_significant")).and_then(Value::as_bool).unwrap_or(false)
}

/// A chart with the title of its heading.
#[derive(Serialize)]
pub(super) struct Titled<C> {
    title: String,
    chart: C,
}

/// A `group_metrics` stage as `metrics.html` shows it.
#[derive(Serialize)]
pub(super) struct MetricsView<'a> {
    name: &'a str,
    id: String,
    f: &'a GroupMetricsFigures,
    /// The failing impact ratio in force.
    fail_below: f64,
    /// The worst impact ratio over the single attributes, for the section's one line.
    gist: String,
    sets: Vec<SetView<'a>>,
    rate_charts: Vec<Titled<BarChart>>,
    sweeps: Vec<Titled<LineChart>>,
}

/// One attribute set of a `group_metrics` stage.
#[derive(Serialize)]
struct SetView<'a> {
    name: &'a str,
    /// How many groups it has.
    groups: usize,
    /// Its most favoured group, the reference of its ratios.
    reference: String,
    /// Whether the stage's significance tests compared the groups with that same group.
    tested_against_reference: bool,
    /// The group the stage's tests compared with (its `reference` key's choice).
    tested_against: String,
    /// When that is not `reference`: the groups whose selection rate differs significantly from
    /// `tested_against`'s, each with its adjusted p ("Black (p = 1.7e-16)"), as the findings read
    /// them, and how many groups were tested.
    significant_elsewhere: Vec<String>,
    tested_elsewhere: usize,
    /// The readable table (none when there are too many groups).
    table: Option<GroupTable<'a>>,
    /// Fairlearn's parity summaries of the set (with the table).
    parity: Option<&'a ParitySummary>,
    chart: Option<BarChart>,
    /// Under the chart: groups left out.
    caption: String,
}

/// The table of an attribute set: a column per group, a row per metric of [`READ_FIRST`].
#[derive(Serialize)]
struct GroupTable<'a> {
    head: Vec<&'a GroupFigure>,
    reference: String,
    rows: Vec<MetricRow>,
    /// Each group's AUC, when the model gives probabilities.
    auc: Option<Vec<f64>>,
}

/// A metric's row of a [`GroupTable`].
#[derive(Serialize)]
struct MetricRow {
    label: &'static str,
    cells: Vec<MetricCell>,
}

/// A group's rate, with its ratio to the reference group's, coloured by the band.
#[derive(Serialize)]
struct MetricCell {
    /// "flag" outside the band, "ok" inside, empty when not judged.
    class: &'static str,
    value: f64,
    ratio: Option<f64>,
    /// Whether the difference from the reference is significant (tested metrics only, and only
    /// when the stage tested against the same reference).
    star: bool,
}

/// The colour of a bar of the verdict's grade.
fn colour(s: Severity) -> Verdict {
    match s {
        Severity::Severe => Verdict::Fail,
        Severity::Notable => Verdict::Warn,
        Severity::Ok => Verdict::Pass,
        Severity::NotMeasured => Verdict::Neutral,
    }
}

/// The chart of one attribute set: each group's selection rate on the 0–100% axis with its 95%
/// interval, the most favoured group's rate (the reference, solid) and the failing line (dashed:
/// `fail_below` × the reference's rate), coloured by the verdict's grade of each group. An
/// intersection's groups are charted largest rate first, without the groups too small to judge.
fn set_chart(
    t: &Thresholds,
    f: &GroupMetricsFigures,
    set: &str,
    groups: &[&GroupFigure],
    reference: &GroupFigure,
    tested: bool,
) -> (Option<BarChart>, String) {
    let intersection = set.contains(" × ");
    let min_share_n = (f.min_share * f.rows as f64).ceil() as usize;
    let mut shown: Vec<&GroupFigure> =
        groups.iter().copied().filter(|g| !intersection || g.n >= min_share_n.max(f.min_count) || g.group == reference.group).collect();
    if intersection {
        shown.sort_by(|a, b| or0(b.selection_rate).total_cmp(&or0(a.selection_rate)));
    }
    let left_out = groups.len() - shown.len().min(MAX_CHARTED_GROUPS);
    shown.truncate(MAX_CHARTED_GROUPS);
    if shown.is_empty() {
        return (None, String::new());
    }
    let fail = t.impact_fail.unwrap_or(f.threshold);
    let bars = shown
        .iter()
        .map(|g| {
            let (severity, significant) = grade_group(t, f, g, reference, tested);
            let is_ref = g.group == reference.group;
            Bar {
                label: g.group.clone(),
                value: g.selection_rate,
                interval: Some(g.ci95),
                verdict: colour(severity),
                reference: is_ref,
                text: if is_ref || !g.impact_ratio.is_finite() {
                    pctf(g.selection_rate)
                } else {
                    format!("{} ×{:.2}{}", pctf(g.selection_rate), g.impact_ratio, if significant == Some(true) { " *" } else { "" })
                },
            }
        })
        .collect();
    let rules = [
        (reference.selection_rate, format!("{} (ref)", pctf(reference.selection_rate)), false),
        (fail * reference.selection_rate, format!("×{fail}"), true),
    ];
    let mut legend = [
        (Verdict::Fail, format!("below ×{fail} of the reference's rate (fails)")),
        (Verdict::Warn, format!("below ×{}, or below ×{fail} but not significant", t.impact_notable)),
        (Verdict::Pass, "within the rule".to_string()),
        (Verdict::Neutral, "the reference, or too few rows to judge".to_string()),
    ];
    if !tested {
        legend[1].1 = format!("below ×{}", t.impact_notable);
    }
    let legend: Vec<(Verdict, &str)> = legend.iter().map(|(v, s)| (*v, s.as_str())).collect();
    let chart = BarChart::new(
        &format!("Selection rate by {set}"),
        bars,
        0.0,
        1.0,
        Scale::Percent,
        &format!("selection rate by {set} (whisker: 95% interval; ×: the rate over {} = {}'s)", set, reference.group),
        &rules,
    )
    .legend(&legend);
    let mut caption = String::new();
    if tested {
        caption.push_str(&format!("* the difference from {} is significant at {} after Holm's correction. ", reference.group, f.alpha));
    }
    if left_out > 0 {
        caption.push_str(&format!("{left_out} groups too small to judge are left out (see the table)."));
    }
    (Some(chart), caption.trim_end().to_string())
}

/// The table of an attribute set's groups: each metric of [`READ_FIRST`] per group, with its
/// ratio to the reference's and whether it is outside the band (and, where the stage tested
/// against the same group, significant).
fn group_table<'a>(f: &GroupMetricsFigures, groups: &[&'a GroupFigure], reference: &GroupFigure, tested: bool) -> GroupTable<'a> {
    let rows = READ_FIRST
        .iter()
        .map(|&(key, label, tested_metric)| MetricRow {
            label,
            cells: groups
                .iter()
                .map(|g| {
                    let base = group_value(reference, key);
                    let is_ref = g.group == reference.group;
                    let ratio = if base > 0.0 { group_value(g, key) / base } else { f64::NAN };
                    let judged = !is_ref && g.n >= f.min_count && !ratio.is_nan();
                    MetricCell {
                        class: if !judged {
                            ""
                        } else if ratio < f.ratio_band[0] || ratio > f.ratio_band[1] {
                            "flag"
                        } else {
                            "ok"
                        },
                        value: group_value(g, key),
                        ratio: (!is_ref && !ratio.is_nan()).then_some(ratio),
                        star: tested && tested_metric && !is_ref && group_significant(g, key),
                    }
                })
                .collect(),
        })
        .collect();
    let auc = f.probabilities.then(|| groups.iter().map(|g| group_value(g, "auc")).collect());
    GroupTable { head: groups.to_vec(), reference: reference.group.clone(), rows, auc }
}

/// The `group_metrics` stages as `metrics.html` shows them.
pub(super) fn metrics_views<'a>(
    t: &Thresholds,
    metrics: &'a [(String, GroupMetricsFigures)],
    tables: &[(String, Table)],
) -> Vec<MetricsView<'a>> {
    metrics.iter().map(|(n, f)| metrics_view(t, n, f, tables)).collect()
}

fn metrics_view<'a>(t: &Thresholds, n: &'a str, f: &'a GroupMetricsFigures, tables: &[(String, Table)]) -> MetricsView<'a> {
    let mut names: Vec<&str> = f.groups.iter().map(|g| g.attributes.as_str()).collect();
    names.dedup();
    let mut references: Vec<(&str, &GroupFigure)> = Vec::new();
    let sets = names
        .into_iter()
        .filter_map(|set| {
            let groups: Vec<&GroupFigure> = f.groups.iter().filter(|g| g.attributes == set).collect();
            let reference = most_favoured(f, &groups)?;
            references.push((set, reference));
            let tested_against = groups.iter().find(|g| g.reference).map_or_else(|| "?".to_string(), |g| g.group.clone());
            let tested = tested_against == reference.group;
            let elsewhere: Vec<&GroupFigure> = if tested {
                Vec::new()
            } else {
                groups.iter().copied().filter(|g| g.group != tested_against && !g.too_small && !g.p_adjusted.is_nan()).collect()
            };
            let significant_elsewhere = elsewhere
                .iter()
                .filter(|g| g.significant)
                .map(|g| {
                    let p = super::pvalue(g.p_adjusted);
                    format!("{} (p {})", g.group, p.strip_prefix('<').map_or_else(|| format!("= {p}"), |small| format!("< {small}")))
                })
                .collect();
            let tabled = groups.len() <= MAX_TABLED_GROUPS;
            let (chart, caption) = set_chart(t, f, set, &groups, reference, tested);
            Some(SetView {
                name: set,
                groups: groups.len(),
                reference: reference.group.clone(),
                tested_against_reference: tested,
                tested_against,
                significant_elsewhere,
                tested_elsewhere: elsewhere.len(),
                table: tabled.then(|| group_table(f, &groups, reference, tested)),
                parity: if tabled { f.parity.get(set) } else { None },
                chart,
                caption,
            })
        })
        .collect();
    // True and false positive rates and precision by group with their intervals (single
    // attributes), coloured by the band around each attribute's reference.
    let single: Vec<&GroupFigure> = f.groups.iter().filter(|g| !g.attributes.contains(" × ")).collect();
    let rate_charts = [("tpr", "True positive rate"), ("fpr", "False positive rate"), ("ppv", "Precision (PPV)")]
        .into_iter()
        .filter_map(|(key, label)| {
            let bars: Vec<Bar> = single
                .iter()
                .filter(|g| !group_value(g, key).is_nan())
                .map(|g| {
                    let v = group_value(g, key);
                    let reference = references.iter().find(|(s, _)| *s == g.attributes).map(|(_, r)| *r);
                    let is_ref = reference.is_some_and(|r| r.group == g.group);
                    let base = reference.map_or(f64::NAN, |r| group_value(r, key));
                    let ratio = v / base;
                    let verdict = if is_ref || g.n < f.min_count || !ratio.is_finite() {
                        Verdict::Neutral
                    } else if ratio < f.ratio_band[0] || ratio > f.ratio_band[1] {
                        Verdict::Warn
                    } else {
                        Verdict::Pass
                    };
                    Bar {
                        label: format!("{} = {}", g.attributes, g.group),
                        value: v,
                        interval: Some(group_ci(g, key)),
                        verdict,
                        reference: is_ref,
                        text: if is_ref || !ratio.is_finite() { pctf(v) } else { format!("{} ×{ratio:.2}", pctf(v)) },
                    }
                })
                .collect();
            let band = format!("[{}, {}]", f.ratio_band[0], f.ratio_band[1]);
            let legend = [
                (Verdict::Warn, format!("ratio to the attribute's reference outside {band}")),
                (Verdict::Pass, format!("inside {band}")),
                (Verdict::Neutral, "the reference, or too few rows to judge".to_string()),
            ];
            let legend: Vec<(Verdict, &str)> = legend.iter().map(|(v, s)| (*v, s.as_str())).collect();
            (!bars.is_empty()).then(|| Titled {
                title: label.to_string(),
                chart: BarChart::new(
                    label,
                    bars,
                    0.0,
                    1.0,
                    Scale::Percent,
                    &format!("{} (whisker: 95% interval; ×: ratio to the reference)", label.to_lowercase()),
                    &[],
                )
                .legend(&legend),
            })
        })
        .collect();
    let sweeps = tables.iter().find(|(s, t)| s == n && t.suffix == "sweep").map(|(_, t)| sweep_charts(&t.frame)).unwrap_or_default();
    let gist = f
        .min_impact_ratio
        .keys()
        .filter(|s| !s.contains(" × "))
        .filter_map(|s| crate::verdict::impact(t, n, f, s).map(|m| format!("{s}: worst impact ratio {:.2} ({})", m.impact_ratio, m.group)))
        .collect::<Vec<_>>()
        .join("; ");
    MetricsView { name: n, id: section_id(n), f, fail_below: t.impact_fail.unwrap_or(f.threshold), gist, sets, rate_charts, sweeps }
}

/// Selection rate and TPR against the decision threshold, one chart per attribute and measure
/// (titled "selection rate by race").
fn sweep_charts(frame: &DataFrame) -> Vec<Titled<LineChart>> {
    let rows = frame.height();
    let text = |c: &str| -> Vec<String> { (0..rows).map(|i| cell(frame, c, i)).collect() };
    let float = |c: &str| -> Vec<f64> {
        (0..rows)
            .map(|i| match frame.column(c).ok().and_then(|col| col.get(i).ok()) {
                Some(AnyValue::Float64(f)) => f,
                _ => f64::NAN,
            })
            .collect()
    };
    let (attrs, groups, thresholds) = (text("attributes"), text("group"), float("threshold"));
    let mut names: Vec<&String> = attrs.iter().collect();
    names.dedup();
    let mut out = Vec::new();
    for (measure, label) in [("selection_rate", "selection rate"), ("tpr", "true positive rate")] {
        let values = float(measure);
        for attr in &names {
            let mut curves: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
            for i in (0..attrs.len()).filter(|&i| &attrs[i] == *attr && !values[i].is_nan()) {
                match curves.last_mut() {
                    Some((g, c)) if *g == groups[i] => c.push((thresholds[i], values[i])),
                    _ => curves.push((groups[i].clone(), vec![(thresholds[i], values[i])])),
                }
            }
            if curves.is_empty() || curves.len() > 10 {
                continue;
            }
            let title = format!("{label} by {attr}");
            let chart = LineChart::new(
                &format!("Threshold sweep: {title}"),
                &curves,
                ("decision threshold on P(favourable)", Scale::Auto, Some(1.0)),
                (label, Scale::Percent, Some(1.0)),
            );
            out.push(Titled { title, chart });
        }
    }
    out
}
