//! `report.html`: one self-contained page (inline CSS and SVG, no script, nothing fetched) that
//! shows a run's evidence — data, model accuracy, each search's IDIs over time, estimates with their
//! intervals, ranked groups with margins, selection rates with impact ratios, retraining before and
//! after, and a sample of discriminatory pairs decoded with the differing attributes highlighted.
//! It is built from the same figures and tables as `summary.json` and the CSV files.
//!
//! Charts are a few lines of hand-written SVG each (a line chart, interval bars, score bars):
//! a plotting crate would add build time for three chart shapes.

use std::fmt::Write as _;

use polars::prelude::*;
use serde_json::Value;

use crate::output::Table;

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
    let stages = summary["stages"].as_object().cloned().unwrap_or_default();
    let order: Vec<String> = summary["stage_order"].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(String::from)).collect();
    let of_kind = |kinds: &[&str]| -> Vec<(String, Value)> {
        order
            .iter()
            .filter_map(|n| stages.get(n).map(|f| (n.clone(), f.clone())))
            .filter(|(_, f)| kinds.iter().any(|k| f["kind"] == *k))
            .collect()
    };
    data_section(&mut h, &of_kind(&["load"]));
    let models = of_kind(&["train", "load_model", "retrain"]);
    model_section(&mut h, &models);
    search_section(&mut h, &of_kind(&["verify"]));
    estimate_section(&mut h, &of_kind(&["estimate"]));
    groups_section(&mut h, &of_kind(&["group_score"]));
    metrics_section(&mut h, &of_kind(&["group_metrics"]), tables);
    retrain_section(&mut h, &of_kind(&["retrain"]));
    comparison_section(&mut h, &models, &order, &stages);
    pairs_section(&mut h, &of_kind(&["verify", "check"]), tables);
    h.push_str("</body></html>\n");
    h
}

fn data_section(h: &mut String, loads: &[(String, Value)]) {
    if loads.is_empty() {
        return;
    }
    h.push_str("<h2>Data</h2>");
    open_table(h, &["stage", "rows", "train / test", "features", "protected", "label (favourable)", "favourable share"]);
    for (n, f) in loads {
        let protected: Vec<String> = f["protected"].as_array().into_iter().flatten().map(num).collect();
        table_row(
            h,
            None,
            &[
                esc(n),
                num(&f["rows"]),
                format!("{} / {}", num(&f["rows_train"]), num(&f["rows_test"])),
                num(&f["features"]),
                protected.join(", "),
                format!("{} ({})", num(&f["label"]["column"]), num(&f["label"]["favourable"])),
                pct(&f["label"]["favourable_share"]),
            ],
        );
    }
    h.push_str("</table>");
}

fn model_section(h: &mut String, models: &[(String, Value)]) {
    if models.is_empty() {
        return;
    }
    h.push_str("<h2>Models</h2>");
    open_table(h, &["stage", "model", "train accuracy", "test accuracy"]);
    for (n, f) in models {
        let test = format!("{} ({} of {})", pct(&f["accuracy_test"]), num(&f["correct_test"]), num(&f["total_test"]));
        table_row(h, None, &[esc(n), num(&f["model"]), pct(&f["accuracy_train"]), test]);
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

fn search_section(h: &mut String, verifies: &[(String, Value)]) {
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
                num(&f["discriminatory_full"]),
                num(&f["discriminatory"]),
                num(&f["generated"]),
                pct(&f["success_rate"]),
                num(&f["rejected"]),
                num(&f["search_queries"]),
                num(&f["search_elapsed_s"]),
                num(&f["per_second"]),
            ],
        );
        let curve: Vec<(f64, f64)> = f["idis_over_time_s"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?)))
            .collect();
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

fn estimate_section(h: &mut String, estimates: &[(String, Value)]) {
    if estimates.is_empty() {
        return;
    }
    h.push_str("<h2>Estimated discrimination rate (share of the input domain, 95% interval)</h2>");
    open_table(h, &["stage", "rate", "95% CI (t over trials)", "95% CI (Wilson)", "inputs"]);
    let mut bars = Vec::new();
    for (n, f) in estimates {
        let ci = |k: &str, i: usize| f[k][i].as_f64().unwrap_or(f64::NAN);
        let interval = |k: &str| format!("[{}, {}]", pct(&f[k][0]), pct(&f[k][1]));
        table_row(h, None, &[esc(n), pct(&f["rate"]), interval("ci95"), interval("ci95_wilson"), num(&f["samples"])]);
        bars.push((n.clone(), f["rate"].as_f64().unwrap_or(0.0), ci("ci95", 0), ci("ci95", 1)));
    }
    h.push_str("</table>");
    h.push_str(&interval_bars(&bars, "#4c78a8"));
}

fn groups_section(h: &mut String, groups: &[(String, Value)]) {
    for (n, f) in groups {
        let _ = write!(
            h,
            "<h2>Group discrimination: {} ({})</h2><p>{} rule sets generated, {} scored; confidence {} per score. Worst groups (score = |P(favourable | group) − P(favourable | rest)|, bar = score, line = ± margin):</p>",
            esc(n),
            num(&f["plugin"]),
            num(&f["rule_sets_generated"]),
            num(&f["rule_sets_kept"]),
            pct(&f["confidence"])
        );
        let top: Vec<(String, f64, f64, f64)> = f["top"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|g| {
                let (s, m) = (g["score"].as_f64().unwrap_or(0.0), g["margin"].as_f64().unwrap_or(0.0));
                (g["condition"].as_str().unwrap_or("").to_string(), s, (s - m).max(0.0), s + m)
            })
            .collect();
        open_table(h, &["group", "score", "margin", "favourable in group", "favourable outside", "support"]);
        for g in f["top"].as_array().into_iter().flatten() {
            table_row(
                h,
                None,
                &[
                    num(&g["condition"]),
                    num(&g["score"]),
                    format!("±{}", num(&g["margin"])),
                    pct(&g["rate_in"]),
                    pct(&g["rate_out"]),
                    pct(&g["support"]),
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

fn metrics_section(h: &mut String, metrics: &[(String, Value)], tables: &[(String, Table)]) {
    for (n, f) in metrics {
        let Some(t) = tables.iter().find(|(s, _)| s == n).map(|(_, t)| &t.frame) else { continue };
        let _ = write!(
            h,
            "<h2>Selection rates per group: {}</h2><p>On {} rows; impact ratio = rate / rate of the most selected group (of at least {} of the rows); flagged below {} (four-fifths rule).</p>",
            esc(n),
            num(&f["rows"]),
            pct(&f["min_share"]),
            num(&f["threshold"])
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

fn retrain_section(h: &mut String, retrains: &[(String, Value)]) {
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
                num(&f["strategy"]),
                num(&f["added"]),
                format!("{} → {}", pct(&f["accuracy_before"]), pct(&f["accuracy_after"])),
                num(&f["measure"]),
                format!("{} → {}", pct(&f["rate_before"]), pct(&f["rate_after"])),
                pct(&f["rate_reduction"]),
            ],
        );
    }
    h.push_str("</table>");
}

/// One measurement of a model: the family it belongs to (the same measurement taken of another
/// model has the same family) and its value.
fn measurement(stages: &serde_json::Map<String, Value>, f: &Value) -> Option<(String, String, String)> {
    let input = |v: &Value, role: &str| v["inputs"][role].as_str().map(String::from);
    match f["kind"].as_str()? {
        "estimate" => Some((
            input(f, "model")?,
            format!("estimated rate ({} inputs)", num(&f["samples"])),
            format!("{} [{}, {}]", pct(&f["rate"]), pct(&f["ci95"][0]), pct(&f["ci95"][1])),
        )),
        "verify" => {
            let generate = stages.get(&input(f, "cases")?)?;
            let plugin = esc(generate["plugin"].as_str().unwrap_or("?").split(' ').next().unwrap_or("?"));
            Some((
                input(generate, "model")?,
                format!("IDIs found by {plugin} from {}, params {}", num(&generate["seed_source"]), esc(&generate["params"].to_string())),
                format!("{} of {} inputs", num(&f["discriminatory"]), num(&f["generated"])),
            ))
        }
        "group_score" => Some((input(f, "model")?, "worst group score".into(), num(&f["worst_score"]))),
        _ => None,
    }
}

/// Each model (trained, loaded, retrained) beside the others, measured the same way: the same
/// estimate, the same generator from the same seeds, the same group scoring.
fn comparison_section(h: &mut String, models: &[(String, Value)], order: &[String], stages: &serde_json::Map<String, Value>) {
    let mut families: Vec<String> = Vec::new();
    let mut cells: Vec<(String, String, String)> = Vec::new();
    for f in order.iter().filter_map(|n| stages.get(n)) {
        if let Some((model, family, value)) = measurement(stages, f) {
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
        let mut row = vec![esc(m), pct(&f["accuracy_test"])];
        for fam in &families {
            let values: Vec<&str> = cells.iter().filter(|(cm, cf, _)| cm == m && cf == fam).map(|(_, _, v)| v.as_str()).collect();
            row.push(if values.is_empty() { "—".to_string() } else { values.join("; ") });
        }
        table_row(h, None, &row);
    }
    h.push_str("</table>");
}

fn pairs_section(h: &mut String, sources: &[(String, Value)], tables: &[(String, Table)]) {
    for (n, _) in sources {
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
    use serde_json::json;

    #[test]
    fn the_report_escapes_text_and_draws_what_the_summary_has() {
        let summary = json!({
            "pipeline": "a<b>",
            "seed": 1,
            "stage_order": ["est", "v"],
            "stages": {
                "est": {"kind": "estimate", "rate": 0.1, "ci95": [0.09, 0.11], "ci95_wilson": [0.09, 0.11], "samples": 1000},
                "v": {"kind": "verify", "discriminatory_full": 5, "discriminatory": 5, "idis_over_time_s": [[0.0, 1], [0.5, 5]]}
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
    fn models_are_compared_on_the_measurements_taken_of_more_than_one() {
        let summary = json!({
            "pipeline": "p", "seed": 1,
            "stage_order": ["m", "fair", "g1", "v1", "g2", "v2", "e1"],
            "stages": {
                "m": {"kind": "train", "accuracy_test": 0.8},
                "fair": {"kind": "retrain", "accuracy_test": 0.79, "inputs": {"model": "m"}},
                "g1": {"kind": "generate", "plugin": "maft 0.1.0", "seed_source": "10 uniform random seeds (seed 7)", "params": {}, "inputs": {"model": "m"}},
                "v1": {"kind": "verify", "discriminatory": 40, "generated": 100, "inputs": {"cases": "g1"}},
                "g2": {"kind": "generate", "plugin": "maft 0.1.0", "seed_source": "10 uniform random seeds (seed 7)", "params": {}, "inputs": {"model": "fair"}},
                "v2": {"kind": "verify", "discriminatory": 4, "generated": 100, "inputs": {"cases": "g2"}},
                "e1": {"kind": "estimate", "rate": 0.1, "ci95": [0.09, 0.11], "samples": 1000, "inputs": {"model": "m"}}
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
