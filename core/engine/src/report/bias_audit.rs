//! `<stage>.html` of a `bias_audit` stage: one self-contained page laid out as published Local Law
//! 144 audits are (the tool, the auditor, the dates, the data's source and range, then the §5-301
//! tables, then apart from them what fairpipe adds), made to print on A4 or Letter paper: every
//! table fits the page's width, rows are not split across pages and headers repeat. Rust builds
//! the view (numbers formatted); the template `core/engine/templates/report/bias_audit.html`
//! escapes and lays it out.

use minijinja::{context, Environment, UndefinedBehavior};
use serde::Serialize;

use crate::stage::summary::Summary;
use crate::stages::bias_audit::{AuditTable, BiasAuditFigures, FOUR_FIFTHS};

/// The page's template.
const TEMPLATE: &str = include_str!("../../templates/report/bias_audit.html");

/// One row of a table on the page, formatted.
#[derive(Serialize)]
struct RowView {
    sex: String,
    race: String,
    category: String,
    count: String,
    selected: String,
    rate: String,
    impact_ratio: String,
    excluded: bool,
    highest: bool,
    ci95: String,
    p_value: String,
    p_adjusted: String,
    significant: bool,
    below: bool,
}

/// One table on the page.
#[derive(Serialize)]
struct TableView {
    title: String,
    intersection: bool,
    rows: Vec<RowView>,
    unknown: String,
    unknown_rate: String,
}

/// The most applicants of one category listed on the page (every one is in the stage's
/// `_situation.csv`).
const SITUATION_ON_PAGE: usize = 25;

/// A rate or ratio as printed: three decimals.
fn fixed(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "—".into()
    }
}

fn table_view(t: &AuditTable) -> TableView {
    let title = match t.table.as_str() {
        "sex" => "Sex categories",
        "race" => "Race/ethnicity categories",
        _ => "Intersectional categories (sex × race/ethnicity)",
    };
    TableView {
        title: title.into(),
        intersection: t.table == "intersection",
        rows: t
            .rows
            .iter()
            .map(|r| RowView {
                sex: r.sex.clone().unwrap_or_default(),
                race: r.race.clone().unwrap_or_default(),
                category: r.category.clone(),
                count: super::thousands(r.count),
                selected: super::thousands(r.selected),
                rate: fixed(r.rate),
                impact_ratio: r.impact_ratio.map_or_else(|| "—".into(), fixed),
                excluded: r.excluded,
                highest: r.highest,
                ci95: format!("{} – {}", fixed(r.ci95[0]), fixed(r.ci95[1])),
                p_value: r.p_value.map_or_else(|| "—".into(), super::pvalue),
                p_adjusted: r.p_adjusted.map_or_else(|| "—".into(), super::pvalue),
                significant: r.significant,
                below: r.below_four_fifths,
            })
            .collect(),
        unknown: super::thousands(t.unknown.count),
        unknown_rate: if t.unknown.count > 0 { fixed(t.unknown.selected as f64 / t.unknown.count as f64) } else { "—".into() },
    }
}

/// The page of stage `stage` (its figures `f`) of the run `summary`.
pub(crate) fn render(stage: &str, f: &BiasAuditFigures, summary: &Summary) -> String {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    let score = f.outcome == "score";
    let ctx = context! {
        stage,
        pipeline => summary.pipeline,
        version => summary.fairpipe_version,
        page => f.page,
        score,
        rate_name => if score { "Scoring rate" } else { "Selection rate" },
        selected_name => if score { "Scoring above the median" } else { "Selected" },
        source => f.source,
        rows => super::thousands(f.rows),
        left_out => (f.left_out_at_load > 0).then(|| super::thousands(f.left_out_at_load)),
        excluded_decisions => (f.excluded_decisions > 0).then(|| super::thousands(f.excluded_decisions)),
        decision_values => f
            .decision_values
            .iter()
            .map(|v| context! { value => v.value, count => super::thousands(v.count), read_as => v.read_as })
            .collect::<Vec<_>>(),
        median => f.median_score.map(|m| format!("{m}")),
        exclude_below => f.exclude_below.map(|s| format!("{}%", s * 100.0)),
        justification => f.exclusion_justification,
        excluded_any => f.tables.iter().any(|t| t.rows.iter().any(|r| r.excluded)),
        alpha => f.alpha,
        four_fifths => FOUR_FIFTHS,
        tables => f.tables.iter().map(table_view).collect::<Vec<_>>(),
        category_values => f
            .category_values
            .iter()
            .map(|v| context! {
                column => v.column,
                value => if v.value.is_empty() { "(blank)".to_string() } else { v.value.clone() },
                count => super::thousands(v.count),
                category => v.category,
            })
            .collect::<Vec<_>>(),
        category_columns => {
            let mut columns: Vec<String> = Vec::new();
            for v in &f.category_values {
                let named = format!("`{}`", v.column);
                if !columns.contains(&named) {
                    columns.push(named);
                }
            }
            columns.join(", ").replace('`', "")
        },
        race_column => f.race_column,
        ethnicity_column => f.ethnicity_column,
        qualifications => f.qualifications.iter().map(|q| format!("`{q}`")).collect::<Vec<_>>().join(", ").replace('`', ""),
        situation => f.situation_testing.iter().map(|s| context! {
            table => if s.table == "sex" { "sex" } else { "race/ethnicity" },
            category => s.category,
            reference => s.reference,
            k => s.k,
            t => s.t,
            count => super::thousands(s.count),
            tested => super::thousands(s.tested),
            listed => super::thousands(s.listed),
            share => s.share.map_or_else(|| "—".into(), fixed),
            ci95 => s.ci95.map_or_else(|| "—".into(), |c| format!("{} – {}", fixed(c[0]), fixed(c[1]))),
            mean_diff => s.mean_diff.map_or_else(|| "—".into(), fixed),
            applicants => s.applicants.iter().take(SITUATION_ON_PAGE).map(|a| context! {
                who => a.id.clone().unwrap_or_else(|| format!("row {}", a.row)),
                own_rate => fixed(a.own_rate),
                reference_rate => fixed(a.reference_rate),
                diff => fixed(a.diff),
            }).collect::<Vec<_>>(),
            more => (s.listed > SITUATION_ON_PAGE).then(|| super::thousands(s.listed - SITUATION_ON_PAGE)),
        }).collect::<Vec<_>>(),
        situation_csv => format!("{stage}_situation.csv"),
    };
    env.render_str(TEMPLATE, ctx).unwrap_or_else(|e| format!("<!DOCTYPE html><p>the bias audit page failed to render: {e}</p>"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_template_parses() {
        let mut env = minijinja::Environment::new();
        env.add_template("bias_audit.html", super::TEMPLATE).expect("the template parses");
    }
}
