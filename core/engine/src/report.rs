//! `report.html`: one self-contained page (inline CSS and SVG, no script, nothing fetched) that
//! shows a run's evidence — data, model accuracy, each search's IDIs over time, estimates with their
//! intervals, ranked groups with margins, selection rates with impact ratios, retraining before and
//! after, a sample of discriminatory pairs decoded with the differing attributes highlighted, and
//! for a text audit ([`text`]) the identity terms, the term swaps and the ranked term groups with
//! example texts, and their mitigation.
//! It is built from the same figures and tables as `summary.json` and the CSV files.
//!
//! Charts are a few lines of hand-written SVG each (a line chart, interval bars, score bars):
//! a plotting crate would add build time for three chart shapes.

use std::fmt::Write as _;

use std::collections::BTreeMap;

use polars::prelude::*;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use crate::output::Table;
use crate::stages::estimate::EstimateFigures;
use crate::stages::generate::GenerateFigures;
use crate::stages::group_metrics::{GroupFigure, GroupMetricsFigures};
use crate::stages::group_score::GroupScoreFigures;
use crate::stages::load::LoadFigures;
use crate::stages::model_output::ModelFigures;
use crate::stages::retrain::RetrainFigures;
use crate::stages::verify::VerifyFigures;

mod text;

/// Escape text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A number for display.
fn num(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.abs() >= 1000.0 || f == f.trunc() {
                format!("{f:.0}")
            } else {
                format!("{f:.4}")
            }
        }
        Value::Null => "—".into(),
        Value::String(s) => esc(s),
        other => esc(&other.to_string()),
    }
}

fn pct(v: &Value) -> String {
    v.as_f64().map(|f| format!("{:.2}%", 100.0 * f)).unwrap_or_else(|| "—".into())
}

/// A figure for display (a non-finite one was written as `null`: "—").
fn numf(f: f64) -> String {
    num(&Value::from(f))
}

/// A p-value for display: small ones in scientific notation ("—" when there is none).
fn pvalue(p: f64) -> String {
    if p.is_nan() {
        "—".into()
    } else if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// A count for display.
fn count(n: impl Into<u64>) -> String {
    n.into().to_string()
}

/// A share as a percentage (a non-finite one: "—").
fn pctf(f: f64) -> String {
    pct(&Value::from(f))
}

/// A figure drawn on a chart: a non-finite one (written as `null`) counts as 0.
fn or0(f: f64) -> f64 {
    if f.is_finite() {
        f
    } else {
        0.0
    }
}

/// What every stage's entry in the summary has besides its figures.
#[derive(Deserialize)]
struct Head {
    kind: String,
    #[serde(default)]
    inputs: BTreeMap<String, String>,
}

/// The summary's stages, in run order, with their kind and inputs.
struct Stages<'a> {
    entries: Vec<(String, Head, &'a Value)>,
}

impl<'a> Stages<'a> {
    fn new(summary: &'a Value) -> Self {
        let order = summary["stage_order"].as_array().into_iter().flatten().filter_map(|v| v.as_str());
        let entries = order
            .filter_map(|n| {
                let f = summary["stages"].get(n)?;
                let head = Head::deserialize(f).ok()?;
                Some((n.to_string(), head, f))
            })
            .collect();
        Stages { entries }
    }

    /// The stages of one of `kinds`, their figures read as `F`; a stage whose figures do not read
    /// is reported on the page instead of being drawn with gaps.
    fn of_kind<F: DeserializeOwned>(&self, h: &mut String, kinds: &[&str]) -> Vec<(String, F)> {
        let mut out = Vec::new();
        for (n, head, f) in &self.entries {
            if !kinds.contains(&head.kind.as_str()) {
                continue;
            }
            match F::deserialize(*f) {
                Ok(figures) => out.push((n.clone(), figures)),
                Err(e) => {
                    let _ = write!(h, "<p class=\"flag\">stage {}: its figures do not read: {}</p>", esc(n), esc(&e.to_string()));
                }
            }
        }
        out
    }

    fn get(&self, name: &str) -> Option<&(String, Head, &'a Value)> {
        self.entries.iter().find(|(n, ..)| n == name)
    }
}

/// Open a `<table>` with a header row of `columns` (plain text).
fn open_table(h: &mut String, columns: &[&str]) {
    h.push_str("<table><tr>");
    for c in columns {
        let _ = write!(h, "<th>{c}</th>");
    }
    h.push_str("</tr>");
}

/// One table row of `cells` (already formatted and escaped), with a `class` when given.
fn table_row(h: &mut String, class: Option<&str>, cells: &[String]) {
    match class {
        Some(c) => {
            let _ = write!(h, "<tr class=\"{c}\">");
        }
        None => h.push_str("<tr>"),
    }
    for c in cells {
        let _ = write!(h, "<td>{c}</td>");
    }
    h.push_str("</tr>");
}

/// The report's style sheet (the sweep report uses it too).
pub const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222;line-height:1.4}\
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:.5rem 0;font-size:.85rem}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left}\
th{background:#f4f4f4}.flag{background:#fde2e2}.diff{background:#fff3b0;font-weight:600}.muted{color:#777}\
.ok{background:#e3f4e1}.kv td:first-child{color:#555}svg{background:#fafafa;border:1px solid #eee}";

/// Render the report of a run.
pub fn render(summary: &Value, tables: &[(String, Table)]) -> String {
    let mut h = String::new();
    let name = summary["pipeline"].as_str().unwrap_or("pipeline");
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>fairpipe: {}</title><style>{STYLE}</style></head><body>",
        esc(name)
    );
    let _ = write!(
        h,
        "<h1>Fairness audit: {}</h1><p class=\"muted\">file {} · seed {} · fairpipe {}</p>",
        esc(name),
        num(&summary["file"]),
        num(&summary["seed"]),
        num(&summary["fairpipe_version"])
    );
    gate_section(&mut h, &summary["gate"]);
    warnings_section(&mut h, &summary["warnings"]);
    let stages = Stages::new(summary);
    let loads = stages.of_kind::<LoadFigures>(&mut h, &["load"]);
    data_section(&mut h, &loads);
    let models = stages.of_kind::<ModelFigures>(&mut h, &["train", "load_model", "retrain"]);
    model_section(&mut h, &models);
    let verifies = stages.of_kind::<VerifyFigures>(&mut h, &["verify"]);
    search_section(&mut h, &verifies);
    let estimates = stages.of_kind::<EstimateFigures>(&mut h, &["estimate"]);
    estimate_section(&mut h, &estimates);
    let groups = stages.of_kind::<GroupScoreFigures>(&mut h, &["group_score"]);
    groups_section(&mut h, &groups);
    let metrics = stages.of_kind::<GroupMetricsFigures>(&mut h, &["group_metrics"]);
    metrics_section(&mut h, &metrics, tables);
    let retrains = stages.of_kind::<RetrainFigures>(&mut h, &["retrain"]);
    retrain_section(&mut h, &retrains);
    text::text_sections(&mut h, &stages, tables);
    comparison_section(&mut h, &models, &stages);
    let pair_sources: Vec<&str> =
        stages.entries.iter().filter(|(_, head, _)| head.kind == "verify" || head.kind == "check").map(|(n, ..)| n.as_str()).collect();
    pairs_section(&mut h, &pair_sources, tables);
    h.push_str("</body></html>\n");
    h
}

fn data_section(h: &mut String, loads: &[(String, LoadFigures)]) {
    if loads.is_empty() {
        return;
    }
    h.push_str("<h2>Data</h2>");
    open_table(h, &["stage", "rows", "train / test", "features", "protected", "label (favourable)", "favourable share"]);
    for (n, f) in loads {
        let protected: Vec<String> = f.protected.iter().map(|p| esc(p)).collect();
        table_row(
            h,
            None,
            &[
                esc(n),
                count(f.rows as u64),
                format!("{} / {}", count(f.rows_train as u64), count(f.rows_test as u64)),
                count(f.features as u64),
                protected.join(", "),
                format!("{} ({})", esc(&f.label.column), esc(&f.label.favourable)),
                pctf(f.label.favourable_share),
            ],
        );
    }
    h.push_str("</table>");
}

fn model_section(h: &mut String, models: &[(String, ModelFigures)]) {
    if models.is_empty() {
        return;
    }
    h.push_str("<h2>Models</h2>");
    open_table(h, &["stage", "model", "train accuracy", "test accuracy"]);
    for (n, f) in models {
        let test = format!("{} ({} of {})", pctf(f.accuracy_test), count(f.correct_test as u64), count(f.total_test as u64));
        table_row(h, None, &[esc(n), esc(&f.model), pctf(f.accuracy_train), test]);
    }
    h.push_str("</table>");
}

/// A line chart of (seconds, IDIs) curves.
/// Curves on one chart; `x_unit` follows the x axis' largest value, and the y axis is labelled
/// with its largest value written with `y_decimals` decimals.
fn line_chart(curves: &[(String, Vec<(f64, f64)>)], x_unit: &str, y_decimals: usize) -> String {
    let (w, hgt, pad) = (640.0, 260.0, 45.0);
    let max_x = curves.iter().flat_map(|(_, c)| c.iter().map(|p| p.0)).fold(1e-9, f64::max);
    let max_y = curves.iter().flat_map(|(_, c)| c.iter().map(|p| p.1)).fold(1.0, f64::max);
    let colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{hgt}\" role=\"img\">");
    let _ = write!(
        s,
        "<line x1=\"{pad}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#999\"/><line x1=\"{pad}\" y1=\"10\" x2=\"{pad}\" y2=\"{}\" stroke=\"#999\"/>",
        hgt - pad,
        w - 10.0,
        hgt - pad,
        hgt - pad
    );
    let _ = write!(s, "<text x=\"{}\" y=\"{}\" font-size=\"11\">{max_x:.3} {}</text>", w - 90.0, hgt - pad + 15.0, esc(x_unit));
    let _ = write!(
        s,
        "<text x=\"2\" y=\"18\" font-size=\"11\">{max_y:.y_decimals$}</text><text x=\"{pad}\" y=\"{}\" font-size=\"11\">0</text>",
        hgt - pad + 15.0
    );
    for (k, (label, c)) in curves.iter().enumerate() {
        let colour = colours[k % colours.len()];
        let points: Vec<String> = c
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", pad + x / max_x * (w - pad - 10.0), hgt - pad - y / max_y * (hgt - pad - 10.0)))
            .collect();
        let _ = write!(s, "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>", points.join(" "));
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"{colour}\">{}</text>",
            pad + 10.0,
            20.0 + 15.0 * k as f64,
            esc(label)
        );
    }
    s.push_str("</svg>");
    s
}

fn search_section(h: &mut String, verifies: &[(String, VerifyFigures)]) {
    if verifies.is_empty() {
        return;
    }
    h.push_str("<h2>Individual discrimination (searches, re-checked by the host)</h2>");
    open_table(
        h,
        &[
            "stage",
            "IDIs (unique instances)",
            "IDIs (unique non-protected projections)",
            "generated",
            "success rate",
            "rejected",
            "model rows",
            "seconds",
            "IDIs/s",
        ],
    );
    let mut curves = Vec::new();
    for (n, f) in verifies {
        table_row(
            h,
            None,
            &[
                esc(n),
                count(f.discriminatory_full as u64),
                count(f.discriminatory as u64),
                count(f.generated),
                pctf(f.success_rate),
                count(f.rejected as u64),
                count(f.search_queries),
                numf(f.search_elapsed_s),
                numf(f.per_second),
            ],
        );
        let curve: Vec<(f64, f64)> = f.idis_over_time_s.iter().map(|&(t, n)| (t, n as f64)).collect();
        if !curve.is_empty() {
            curves.push((n.clone(), curve));
        }
    }
    h.push_str("</table>");
    if !curves.is_empty() {
        h.push_str("<p>IDIs found over time (unique projections):</p>");
        h.push_str(&line_chart(&curves, "s", 0));
    }
}

/// Horizontal bars with an interval: (label, value, low, high) on a 0..max scale.
fn interval_bars(items: &[(String, f64, f64, f64)], colour: &str) -> String {
    let (w, row) = (640.0, 26.0);
    let label_w = 300.0;
    let max = items.iter().map(|i| i.3.max(i.1)).fold(1e-9, f64::max);
    let hgt = row * items.len() as f64 + 10.0;
    let scale = |v: f64| label_w + v / max * (w - label_w - 60.0);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{hgt}\" role=\"img\">");
    for (k, (label, v, lo, hi)) in items.iter().enumerate() {
        let y = 5.0 + row * k as f64;
        let short: String = label.chars().take(48).collect();
        let _ = write!(s, "<text x=\"4\" y=\"{}\" font-size=\"11\">{}</text>", y + 15.0, esc(&short));
        let _ = write!(s, "<rect x=\"{label_w}\" y=\"{}\" width=\"{:.1}\" height=\"16\" fill=\"{colour}\"/>", y + 3.0, scale(*v) - label_w);
        let _ =
            write!(s, "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#000\"/>", scale(*lo), scale(*hi), y + 11.0, y + 11.0);
        let _ = write!(s, "<text x=\"{:.1}\" y=\"{}\" font-size=\"11\">{:.3}</text>", scale(*hi) + 4.0, y + 15.0, v);
    }
    s.push_str("</svg>");
    s
}

fn estimate_section(h: &mut String, estimates: &[(String, EstimateFigures)]) {
    if estimates.is_empty() {
        return;
    }
    h.push_str("<h2>Estimated discrimination rate (share of the input domain, 95% interval)</h2>");
    open_table(h, &["stage", "rate", "95% CI (t over trials)", "95% CI (Wilson)", "inputs"]);
    let mut bars = Vec::new();
    for (n, f) in estimates {
        let interval = |ci: &[f64; 2]| format!("[{}, {}]", pctf(ci[0]), pctf(ci[1]));
        table_row(h, None, &[esc(n), pctf(f.rate), interval(&f.ci95), interval(&f.ci95_wilson), count(f.samples as u64)]);
        bars.push((n.clone(), or0(f.rate), f.ci95[0], f.ci95[1]));
    }
    h.push_str("</table>");
    h.push_str(&interval_bars(&bars, "#4c78a8"));
}

fn groups_section(h: &mut String, groups: &[(String, GroupScoreFigures)]) {
    for (n, f) in groups {
        // The auditor's own figures (TestSGD's rule-set counts and confidence).
        let own = |k: &str| f.plugin_figures.get(k).cloned().unwrap_or(Value::Null);
        let _ = write!(
            h,
            "<h2>Group discrimination: {} ({})</h2><p>{} rule sets generated, {} scored; confidence {} per score. Worst groups (score = |P(favourable | group) − P(favourable | rest)|, bar = score, line = ± margin):</p>",
            esc(n),
            esc(&f.plugin),
            num(&own("rule_sets_generated")),
            num(&own("rule_sets_kept")),
            pct(&own("confidence"))
        );
        let top: Vec<(String, f64, f64, f64)> = f
            .top
            .iter()
            .map(|g| {
                let (s, m) = (or0(g.score), or0(g.margin));
                (g.condition.clone(), s, (s - m).max(0.0), s + m)
            })
            .collect();
        if f.significant_rule_sets == 0 {
            let _ = write!(
                h,
                "<p><b>Nothing is significant: no rule set's difference is beyond chance at {} after Holm's correction over the {} rule sets compared.</b> The scores below are noise-level.</p>",
                numf(f.alpha),
                count(f.groups as u64)
            );
        } else {
            let _ = write!(
                h,
                "<p>{} of {} rule sets differ significantly at {} after Holm's correction.</p>",
                count(f.significant_rule_sets as u64),
                count(f.groups as u64),
                numf(f.alpha)
            );
        }
        h.push_str("<p class=\"muted\">Scores of re-estimated groups come from fresh samples drawn after ranking (the ranking's own score is shown beside them); a rule set and its complement are one row.</p>");
        open_table(
            h,
            &[
                "group",
                "score",
                "margin",
                "ranking score",
                "p (Holm)",
                "significant",
                "favourable in group",
                "favourable outside",
                "support",
            ],
        );
        for g in &f.top {
            let name = match &g.complement {
                Some(c) => format!("{} <span class=\"muted\">(same as not {})</span>", esc(&g.condition), esc(c)),
                None => esc(&g.condition),
            };
            table_row(
                h,
                g.significant.then_some("flag"),
                &[
                    name,
                    format!("{}{}", numf(g.score), if g.reestimated { " <span class=\"muted\">(fresh)</span>" } else { "" }),
                    format!("±{}", numf(g.margin)),
                    numf(g.selection_score),
                    pvalue(g.p_adjusted),
                    if g.significant { "yes".into() } else { "no".into() },
                    pctf(g.rate_in),
                    pctf(g.rate_out),
                    pctf(g.support),
                ],
            );
        }
        h.push_str("</table>");
        h.push_str(&interval_bars(&top, "#e45756"));
    }
}

/// Cell `row` of column `col` as text.
fn cell(frame: &DataFrame, col: &str, row: usize) -> String {
    match frame.column(col).ok().and_then(|c| c.get(row).ok()) {
        Some(AnyValue::String(s)) => s.to_string(),
        Some(AnyValue::Float64(f)) => format!("{f:.4}"),
        Some(v) => v.to_string(),
        None => String::new(),
    }
}

/// What the run warned of (a value it adjusted, an audit that will be slow), near the top: a
/// reader of the report should not have to find it on a terminal.
fn warnings_section(h: &mut String, warnings: &Value) {
    let Some(list) = warnings.as_array().filter(|l| !l.is_empty()) else { return };
    h.push_str("<h2>Warnings</h2><ul class=\"warnings\">");
    for w in list {
        let _ = write!(h, "<li><b>{}</b>: {}</li>", esc(w["stage"].as_str().unwrap_or("?")), esc(w["message"].as_str().unwrap_or("")));
    }
    h.push_str("</ul>");
}

/// The gate's verdict and every condition with its value, at the top of the page.
fn gate_section(h: &mut String, gate: &Value) {
    let Some(conditions) = gate["conditions"].as_array() else { return };
    let passed = gate["passed"].as_bool() == Some(true);
    let _ = write!(
        h,
        "<h2 class=\"{}\">Gate: {}</h2>",
        if passed { "ok" } else { "flag" },
        if passed { "passed" } else { "FAILED (exit code 3)" }
    );
    open_table(h, &["condition", "value", "result"]);
    for c in conditions {
        let ok = c["passed"].as_bool() == Some(true);
        let result = if ok { "pass".to_string() } else { format!("FAIL {}", c["note"].as_str().map(esc).unwrap_or_default()) };
        table_row(h, (!ok).then_some("flag"), &[esc(c["condition"].as_str().unwrap_or("")), num(&c["value"]), result]);
    }
    h.push_str("</table>");
}

/// The metrics of the readable group table, with whether each is tested against the reference.
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

fn metrics_section(h: &mut String, metrics: &[(String, GroupMetricsFigures)], tables: &[(String, Table)]) {
    for (n, f) in metrics {
        let _ = write!(
            h,
            "<h2>Selection rates per group: {}</h2><p>On {} rows; a row is selected when {}. Each attribute set's table reads first: \
             the rate per group with its ratio to the reference group (<b>ref</b>) — green inside the band [{}, {}], red outside — and \
             <b>*</b> where the difference from the reference is significant at {} after Holm's correction over {} tests. Groups under \
             {} rows are marked <i>small</i> and are neither tested nor flagged.</p>",
            esc(n),
            count(f.rows as u64),
            match f.selection.as_str() {
                "threshold" => format!("P(favourable) &gt; {}", numf(f.decision_threshold)),
                other => format!("it is in the {} by score (lowest selected score {})", esc(other), numf(f.decision_threshold)),
            },
            numf(f.ratio_band[0]),
            numf(f.ratio_band[1]),
            numf(f.alpha),
            count(f.tests as u64),
            count(f.min_count as u64)
        );
        if f.significant_groups == 0 {
            h.push_str("<p><b>No group's selection rate differs significantly from its reference group's.</b></p>");
        }
        let mut sets: Vec<&str> = f.groups.iter().map(|g| g.attributes.as_str()).collect();
        sets.dedup();
        for set in &sets {
            let groups: Vec<&GroupFigure> = f.groups.iter().filter(|g| g.attributes == *set).collect();
            if groups.len() > 40 {
                let _ = write!(h, "<p class=\"muted\">{}: {} groups; see the CSV table.</p>", esc(set), groups.len());
                continue;
            }
            let _ = write!(h, "<h3>{}</h3><table><tr><th>metric</th>", esc(set));
            for g in &groups {
                let note = if g.reference {
                    " <b>ref</b>"
                } else if g.too_small {
                    " <i>small</i>"
                } else {
                    ""
                };
                let _ = write!(h, "<th>{}{note}<br><span class=\"muted\">n = {}</span></th>", esc(&g.group), g.n);
            }
            h.push_str("</tr>");
            for (key, label, tested) in READ_FIRST {
                let _ = write!(h, "<tr><td>{label}</td>");
                for g in &groups {
                    let v = group_value(g, key);
                    let ratio = g.metrics.get(&format!("{key}_ratio")).and_then(Value::as_f64).unwrap_or(f64::NAN);
                    let class = if g.reference || g.too_small || ratio.is_nan() {
                        ""
                    } else if g.outside_band.iter().any(|m| m == key) {
                        " class=\"flag\""
                    } else {
                        " class=\"ok\""
                    };
                    let star = if tested && group_significant(g, key) { " *" } else { "" };
                    let ratio_text =
                        if g.reference || ratio.is_nan() { String::new() } else { format!(" <span class=\"muted\">×{ratio:.2}</span>") };
                    let _ = write!(h, "<td{class}>{}{ratio_text}{star}</td>", pctf(v));
                }
                h.push_str("</tr>");
            }
            if f.probabilities {
                h.push_str("<tr><td>AUC</td>");
                for g in &groups {
                    let _ = write!(h, "<td>{}</td>", numf(group_value(g, "auc")));
                }
                h.push_str("</tr>");
            }
            h.push_str("</table>");
            if let Some(p) = f.parity.get(*set) {
                let _ = write!(
                    h,
                    "<p class=\"muted\">Fairlearn parity: demographic parity difference {} (ratio {}), equalized odds difference {} \
                     (ratio {}), equal opportunity difference {} (ratio {}), predictive parity difference {}.</p>",
                    numf(p.demographic_parity_difference),
                    numf(p.demographic_parity_ratio),
                    numf(p.equalized_odds_difference),
                    numf(p.equalized_odds_ratio),
                    numf(p.equal_opportunity_difference),
                    numf(p.equal_opportunity_ratio),
                    numf(p.predictive_parity_difference)
                );
            }
        }
        // Error rates by group with their intervals (single attributes).
        let single: Vec<&GroupFigure> = f.groups.iter().filter(|g| !g.attributes.contains(" × ")).collect();
        for (key, label) in [
            ("selection_rate", "Selection rate"),
            ("tpr", "True positive rate"),
            ("fpr", "False positive rate"),
            ("ppv", "Precision (PPV)"),
        ] {
            let bars: Vec<(String, f64, f64, f64)> = single
                .iter()
                .filter(|g| !group_value(g, key).is_nan())
                .map(|g| {
                    let ci = group_ci(g, key);
                    (format!("{} = {}", g.attributes, g.group), group_value(g, key), or0(ci[0]), or0(ci[1]))
                })
                .collect();
            if !bars.is_empty() {
                let _ = write!(h, "<h3>{label} by group (95% interval)</h3>");
                h.push_str(&interval_bars(&bars, "#72b7b2"));
            }
        }
        if let Some((_, t)) = tables.iter().find(|(s, t)| s == n && t.suffix == "sweep") {
            sweep_charts(h, &t.frame);
        }
        let four_fifths: Vec<&GroupFigure> = f.groups.iter().filter(|g| !g.four_fifths_ok).collect();
        let _ = write!(
            h,
            "<p>Four-fifths rule (impact ratio = rate / rate of the most selected group of at least {} of the rows; flagged below {}): {}.</p>",
            pctf(f.min_share),
            numf(f.threshold),
            if four_fifths.is_empty() {
                "no group flagged".to_string()
            } else {
                four_fifths.iter().map(|g| format!("{} = {} ({})", esc(&g.attributes), esc(&g.group), numf(g.impact_ratio))).collect::<Vec<_>>().join(", ")
            }
        );
    }
}

/// Selection rate and TPR against the decision threshold, one chart per attribute and measure.
fn sweep_charts(h: &mut String, frame: &DataFrame) {
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
            let _ = write!(h, "<h3>Threshold sweep: {label} by {} (threshold 0 → 1)</h3>", esc(attr));
            h.push_str(&line_chart(&curves, "threshold", 1));
        }
    }
}

fn retrain_section(h: &mut String, retrains: &[(String, RetrainFigures)]) {
    if retrains.is_empty() {
        return;
    }
    h.push_str("<h2>Retraining with what was found</h2>");
    open_table(h, &["stage", "strategy", "added rows", "test accuracy before → after", "measure", "before → after", "reduction"]);
    for (n, f) in retrains {
        // Every strategy reports its measure (a rate or a group score) as rate_before / rate_after.
        table_row(
            h,
            None,
            &[
                esc(n),
                esc(&f.strategy),
                count(f.added as u64),
                format!("{} → {}", pctf(f.outcome.accuracy_before), pctf(f.outcome.accuracy_after)),
                esc(&f.measure),
                format!("{} → {}", pctf(f.outcome.rate_before), pctf(f.outcome.rate_after)),
                pctf(f.outcome.rate_reduction),
            ],
        );
    }
    h.push_str("</table>");
}

/// One measurement of a model: the model, the family it belongs to (the same measurement taken of
/// another model has the same family) and its value.
fn measurement(stages: &Stages<'_>, head: &Head, f: &Value) -> Option<(String, String, String)> {
    let model = |head: &Head| head.inputs.get("model").cloned();
    match head.kind.as_str() {
        "estimate" => {
            let e = EstimateFigures::deserialize(f).ok()?;
            Some((
                model(head)?,
                format!("estimated rate ({} inputs)", count(e.samples as u64)),
                format!("{} [{}, {}]", pctf(e.rate), pctf(e.ci95[0]), pctf(e.ci95[1])),
            ))
        }
        "verify" => {
            let v = VerifyFigures::deserialize(f).ok()?;
            let (_, source_head, source) = stages.get(head.inputs.get("cases")?)?;
            // The cases come from a generate stage (or a check stage, which has no plugin).
            let g = GenerateFigures::deserialize(*source).ok();
            let plugin = esc(g.as_ref().map(|g| g.plugin.as_str()).unwrap_or("?").split(' ').next().unwrap_or("?"));
            let seed_source = g.as_ref().map(|g| esc(&g.seed_source)).unwrap_or_else(|| "—".into());
            let params = g.as_ref().map(|g| g.params.to_string()).unwrap_or_else(|| "null".into());
            Some((
                model(source_head)?,
                format!("IDIs found by {plugin} from {seed_source}, params {}", esc(&params)),
                format!("{} of {} inputs", count(v.discriminatory as u64), count(v.generated)),
            ))
        }
        "group_score" => {
            let g = GroupScoreFigures::deserialize(f).ok()?;
            Some((model(head)?, "worst group score".into(), g.worst_score.map(numf).unwrap_or_else(|| "—".into())))
        }
        _ => None,
    }
}

/// Each model (trained, loaded, retrained) beside the others, measured the same way: the same
/// estimate, the same generator from the same seeds, the same group scoring.
fn comparison_section(h: &mut String, models: &[(String, ModelFigures)], stages: &Stages<'_>) {
    let mut families: Vec<String> = Vec::new();
    let mut cells: Vec<(String, String, String)> = Vec::new();
    for (_, head, f) in &stages.entries {
        if let Some((model, family, value)) = measurement(stages, head, f) {
            if !families.contains(&family) {
                families.push(family.clone());
            }
            cells.push((model, family, value));
        }
    }
    // Only measurements taken of more than one model compare anything.
    families
        .retain(|fam| cells.iter().filter(|(_, f, _)| f == fam).map(|(m, _, _)| m).collect::<std::collections::BTreeSet<_>>().len() > 1);
    if families.is_empty() {
        return;
    }
    h.push_str("<h2>Each model, measured the same way</h2>");
    let columns: Vec<&str> = ["model", "test accuracy"].into_iter().chain(families.iter().map(String::as_str)).collect();
    open_table(h, &columns);
    for (m, f) in models {
        let mut row = vec![esc(m), pctf(f.accuracy_test)];
        for fam in &families {
            let values: Vec<&str> = cells.iter().filter(|(cm, cf, _)| cm == m && cf == fam).map(|(_, _, v)| v.as_str()).collect();
            row.push(if values.is_empty() { "—".to_string() } else { values.join("; ") });
        }
        table_row(h, None, &row);
    }
    h.push_str("</table>");
}

fn pairs_section(h: &mut String, sources: &[&str], tables: &[(String, Table)]) {
    for n in sources {
        let Some(t) = tables.iter().find(|(s, _)| s == n).map(|(_, t)| &t.frame) else { continue };
        if t.height() == 0 {
            continue;
        }
        let names: Vec<String> = t.get_column_names().iter().map(|c| c.to_string()).collect();
        let attrs: Vec<&String> =
            names.iter().filter(|c| !c.ends_with("_counterpart") && *c != "p" && *c != "p_counterpart" && *c != "origin").collect();
        let _ = write!(
            h,
            "<h2>Discriminatory pairs: {} (first {} of {}; highlighted: what differs)</h2><table><tr><th></th>",
            esc(n),
            t.height().min(10),
            t.height()
        );
        for a in &attrs {
            let _ = write!(h, "<th>{}</th>", esc(a));
        }
        h.push_str("<th>P(favourable)</th></tr>");
        for r in 0..t.height().min(10) {
            for (label, suffix, p) in [("instance", "", "p"), ("counterpart", "_counterpart", "p_counterpart")] {
                let _ = write!(h, "<tr><td class=\"muted\">{label}</td>");
                for a in &attrs {
                    let counterpart_col = format!("{a}_counterpart");
                    let differs = names.contains(&counterpart_col) && cell(t, a, r) != cell(t, &counterpart_col, r);
                    let col = if suffix.is_empty() || !names.contains(&counterpart_col) { (*a).clone() } else { counterpart_col };
                    let class = if differs { " class=\"diff\"" } else { "" };
                    let _ = write!(h, "<td{class}>{}</td>", esc(&cell(t, &col, r)));
                }
                let _ = write!(h, "<td>{}</td></tr>", esc(&cell(t, p, r)));
            }
        }
        h.push_str("</table>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::stage::figures_map;
    use serde_json::json;

    /// A summary entry: `figures` with the engine's kind and inputs.
    fn entry<F: serde::Serialize>(kind: &str, inputs: Value, figures: &F) -> Value {
        let mut map = figures_map(figures);
        map.insert("kind".into(), json!(kind));
        map.insert("inputs".into(), inputs);
        Value::Object(map)
    }

    fn estimate(rate: f64) -> EstimateFigures {
        EstimateFigures {
            rate,
            ci95: [rate - 0.01, rate + 0.01],
            ci95_wilson: [rate - 0.01, rate + 0.01],
            samples: 1000,
            trials: 10,
            per_trial: 100,
            discriminatory: 100,
            variants_per_input: 1,
        }
    }

    fn verify(discriminatory: usize, curve: Vec<(f64, usize)>) -> VerifyFigures {
        VerifyFigures {
            checked: discriminatory,
            confirmed: discriminatory,
            rejected: 0,
            discriminatory,
            discriminatory_full: discriminatory,
            generated: 100,
            success_rate: discriminatory as f64 / 100.0,
            success_rate_projection: discriminatory as f64 / 100.0,
            search_queries: 1000,
            search_elapsed_s: 0.5,
            per_second: 10.0,
            idis_over_time_s: curve,
            time_to_1000_idis_s: None,
        }
    }

    fn model(accuracy_test: f64) -> ModelFigures {
        ModelFigures { model: "mlp".into(), accuracy_train: accuracy_test, accuracy_test, correct_test: 8, total_test: 10 }
    }

    fn generate() -> GenerateFigures {
        GenerateFigures {
            plugin: "maft 0.1.0".into(),
            params: json!({}),
            seed_source: "10 uniform random seeds (seed 7)".into(),
            generated: 100,
            emitted: 50,
            run_elapsed_s: 0.5,
            model_time_s: 0.1,
            model_time_share: 0.2,
            queries_asked: 300,
            rows_scored: 120,
            cache_hits: 180,
            cache: true,
            gradient: None,
            gradient_rows: None,
            gradient_model_rows: None,
            stopped_by: None,
            units: None,
            duplicates_dropped: None,
            unit_figures: None,
            plugin_figures: Default::default(),
        }
    }

    #[test]
    fn the_report_escapes_text_and_draws_what_the_summary_has() {
        let summary = json!({
            "pipeline": "a<b>",
            "seed": 1,
            "stage_order": ["est", "v"],
            "stages": {
                "est": entry("estimate", json!({"model": "m"}), &estimate(0.1)),
                "v": entry("verify", json!({"cases": "g"}), &verify(5, vec![(0.0, 1), (0.5, 5)])),
            }
        });
        let html = render(&summary, &[]);
        assert!(html.contains("a&lt;b&gt;") && !html.contains("a<b>"));
        assert!(html.contains("10.00%"), "the estimate's rate");
        assert!(html.contains("<polyline"), "the IDI curve");
        assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
        assert!(!html.contains("<script") && !html.contains("http://") || html.contains("xmlns=\"http://www.w3.org/2000/svg\""));
    }

    #[test]
    fn figures_that_do_not_read_are_reported_not_drawn_with_gaps() {
        let summary = json!({
            "pipeline": "p", "seed": 1, "stage_order": ["est"],
            "stages": {"est": {"kind": "estimate", "inputs": {}, "rates": 0.1}}
        });
        let html = render(&summary, &[]);
        assert!(html.contains("stage est: its figures do not read"), "{html}");
    }

    #[test]
    fn models_are_compared_on_the_measurements_taken_of_more_than_one() {
        let summary = json!({
            "pipeline": "p", "seed": 1,
            "stage_order": ["m", "fair", "g1", "v1", "g2", "v2", "e1"],
            "stages": {
                "m": entry("train", json!({"data": "d"}), &model(0.8)),
                "fair": entry("retrain", json!({"model": "m"}), &model(0.79)),
                "g1": entry("generate", json!({"model": "m"}), &generate()),
                "v1": entry("verify", json!({"cases": "g1"}), &verify(40, vec![])),
                "g2": entry("generate", json!({"model": "fair"}), &generate()),
                "v2": entry("verify", json!({"cases": "g2"}), &verify(4, vec![])),
                "e1": entry("estimate", json!({"model": "m"}), &estimate(0.1)),
            }
        });
        let html = render(&summary, &[]);
        let section = &html[html.find("Each model, measured the same way").expect("the comparison")..];
        assert!(section.contains("IDIs found by maft from 10 uniform random seeds (seed 7)"), "{section}");
        assert!(section.contains("<td>m</td><td>80.00%</td><td>40 of 100 inputs</td>"), "{section}");
        assert!(section.contains("<td>fair</td><td>79.00%</td><td>4 of 100 inputs</td>"), "{section}");
        // The estimate was taken of one model only: no column.
        assert!(!section.contains("estimated rate"), "{section}");
    }
}
