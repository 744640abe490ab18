//! `report.html`: one self-contained page (inline CSS and SVG, no script, nothing fetched) that
//! shows a run's evidence — data, model accuracy, each search's IDIs over time, estimates with their
//! intervals, ranked groups with margins, selection rates with impact ratios, retraining before and
//! after, and a sample of discriminatory pairs decoded with the differing attributes highlighted.
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
use crate::stages::group_metrics::GroupMetricsFigures;
use crate::stages::group_score::GroupScoreFigures;
use crate::stages::load::LoadFigures;
use crate::stages::model_output::ModelFigures;
use crate::stages::retrain::RetrainFigures;
use crate::stages::verify::VerifyFigures;

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

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222;line-height:1.4}\
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:.5rem 0;font-size:.85rem}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left}\
th{background:#f4f4f4}.flag{background:#fde2e2}.diff{background:#fff3b0;font-weight:600}.muted{color:#777}\
.kv td:first-child{color:#555}svg{background:#fafafa;border:1px solid #eee}";

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
fn line_chart(curves: &[(String, Vec<(f64, f64)>)]) -> String {
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
    let _ = write!(s, "<text x=\"{}\" y=\"{}\" font-size=\"11\">{max_x:.3} s</text>", w - 70.0, hgt - pad + 15.0);
    let _ = write!(
        s,
        "<text x=\"2\" y=\"18\" font-size=\"11\">{max_y:.0}</text><text x=\"{pad}\" y=\"{}\" font-size=\"11\">0</text>",
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
        h.push_str(&line_chart(&curves));
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
        open_table(h, &["group", "score", "margin", "favourable in group", "favourable outside", "support"]);
        for g in &f.top {
            table_row(
                h,
                None,
                &[esc(&g.condition), numf(g.score), format!("±{}", numf(g.margin)), pctf(g.rate_in), pctf(g.rate_out), pctf(g.support)],
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

fn metrics_section(h: &mut String, metrics: &[(String, GroupMetricsFigures)], tables: &[(String, Table)]) {
    for (n, f) in metrics {
        let Some(t) = tables.iter().find(|(s, _)| s == n).map(|(_, t)| &t.frame) else { continue };
        let _ = write!(
            h,
            "<h2>Selection rates per group: {}</h2><p>On {} rows; impact ratio = rate / rate of the most selected group (of at least {} of the rows); flagged below {} (four-fifths rule).</p>",
            esc(n),
            count(f.rows as u64),
            pctf(f.min_share),
            numf(f.threshold)
        );
        open_table(h, &["attributes", "group", "n", "selected", "rate", "95% CI", "impact ratio", "verdict"]);
        for r in 0..t.height().min(200) {
            let verdict = cell(t, "four_fifths", r);
            table_row(
                h,
                (verdict == "FLAG").then_some("flag"),
                &[
                    esc(&cell(t, "attributes", r)),
                    esc(&cell(t, "group", r)),
                    cell(t, "n", r),
                    cell(t, "selected", r),
                    cell(t, "selection_rate", r),
                    format!("[{}, {}]", cell(t, "ci95_low", r), cell(t, "ci95_high", r)),
                    cell(t, "impact_ratio", r),
                    esc(&verdict),
                ],
            );
        }
        h.push_str("</table>");
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
                format!("{} → {}", pctf(f.accuracy_before), pctf(f.accuracy_after)),
                esc(&f.measure),
                format!("{} → {}", pctf(f.rate_before), pctf(f.rate_after)),
                pctf(f.rate_reduction),
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
            stopped_by: None,
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
