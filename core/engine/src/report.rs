//! `report.html`: one self-contained page (inline CSS and SVG, no script, nothing fetched) that
//! shows a run's evidence — data, model accuracy, each search's IDIs over time, estimates with their
//! intervals, ranked groups with margins, selection rates with impact ratios, retraining before and
//! after, a sample of discriminatory pairs decoded with the differing attributes highlighted, and
//! for a text audit ([`text`]) the identity terms, the term swaps and the ranked term groups with
//! example texts, and their mitigation.
//! It is built from the same figures and tables as `summary.json` and the CSV files.
//!
//! The page leads with its findings ([`findings`]): the gate's verdict when there is a gate, the
//! run's warnings, then one line per headline finding; the detail follows. Rust builds plain view
//! structs of the figures (and the chart geometry, [`charts`]: inline SVG with axes and ticks, on
//! fixed scales); all the HTML comes from the minijinja templates under
//! `core/engine/templates/report/`, built into the binary, which escape what they show.

use std::fmt::Write as _;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use minijinja::{context, Environment, UndefinedBehavior};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::output::Table;
use crate::stage::kind::StageKind;
use crate::stage::meaning::StageFigures;
use crate::stage::summary::{Figures, StageSummary, Summary};
use crate::stage::ArtifactKind;

pub(crate) mod bias_audit;
mod charts;
mod comparison;
mod detail;
mod findings;
mod format;
mod metrics;
mod overview;
mod pairs;
mod text;

use detail::ranked_bars;
pub(crate) use format::esc;
use format::{numf, or0, pctf, pvalue, thousands};
use pairs::cell;

/// The report's templates, built into the binary so that the page needs no file at run time.
const TEMPLATES: [(&str, &str); 8] = [
    ("page.html", include_str!("../templates/report/page.html")),
    ("detail.html", include_str!("../templates/report/detail.html")),
    ("metrics.html", include_str!("../templates/report/metrics.html")),
    ("text.html", include_str!("../templates/report/text.html")),
    ("verdict.html", include_str!("../templates/report/verdict.html")),
    ("findings.html", include_str!("../templates/report/findings.html")),
    ("charts.html", include_str!("../templates/report/charts.html")),
    ("sweep.html", include_str!("../templates/report/sweep.html")),
];

/// The templates with the report's filters: `num` (a figure), `pct` (a share as a percentage),
/// `pvalue`, `count` (with thousands separated), `interval` (two shares); "—" for none; and
/// `fixed(d)` (`d` decimals).
fn environment() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        for (name, source) in TEMPLATES {
            // A template that does not parse is reported when it is used (and by the tests).
            let _ = env.add_template(name, source);
        }
        env.add_filter("num", |v: Option<f64>| v.map_or_else(|| "—".to_string(), numf));
        env.add_filter("pct", |v: Option<f64>| v.map_or_else(|| "—".to_string(), pctf));
        env.add_filter("pvalue", |v: Option<f64>| v.map_or_else(|| "—".to_string(), pvalue));
        env.add_filter("count", |v: Option<f64>| match v {
            Some(n) if n.is_finite() && n >= 0.0 => thousands(n as usize),
            Some(n) => numf(n),
            None => "—".to_string(),
        });
        env.add_filter("fixed", |v: f64, decimals: usize| format!("{v:.decimals$}"));
        env.add_filter("interval", |v: Vec<Option<f64>>| match v.as_slice() {
            [lo, hi] => format!("[{}, {}]", lo.map_or_else(|| "—".to_string(), pctf), hi.map_or_else(|| "—".to_string(), pctf)),
            _ => "—".to_string(),
        });
        env
    })
}

/// Render template `name` with `ctx` (the sweep's page, `sweep.html`, is rendered by
/// `crate::sweep` through it, so both pages share the templates' escaping and style).
pub(crate) fn render_template(name: &str, ctx: minijinja::Value) -> Result<String, minijinja::Error> {
    environment().get_template(name)?.render(ctx)
}

/// The id of a stage's place in the report (the findings link to it).
fn section_id(stage: &str) -> String {
    let safe: String = stage.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '-' }).collect();
    format!("stage-{safe}")
}

/// A stage whose figures do not read, reported on the page in their place.
#[derive(Serialize)]
struct Problem {
    stage: String,
    error: String,
}

/// What every stage's entry in the summary has besides its figures.
struct Head {
    kind: String,
    inputs: BTreeMap<String, String>,
}

/// The summary's stages, in run order, with their kind and inputs.
struct Stages<'a> {
    summary: &'a Summary,
    entries: Vec<(String, Head, &'a StageSummary)>,
}

impl<'a> Stages<'a> {
    fn new(summary: &'a Summary) -> Self {
        let entries =
            summary.in_order().map(|(n, f)| (n.to_string(), Head { kind: f.kind.clone(), inputs: f.inputs.clone() }, f)).collect();
        Stages { summary, entries }
    }

    /// The stages of the kinds whose figures struct is `F`, their figures read as it; a stage
    /// whose figures do not read is reported on the page (in `problems`) instead of being drawn
    /// with gaps.
    fn of<F: StageFigures>(&self, problems: &mut Vec<Problem>) -> Vec<(String, F)> {
        self.read_where(problems, |kind| (kind.figures.struct_type)() == std::any::TypeId::of::<F>())
    }

    /// The stages that make or load the `output` they pass on (a model, a text model), their
    /// figures read as `F`, a part every such kind's figures hold (a model's accuracy); a stage
    /// whose figures do not read goes to `problems`.
    fn giving<F: Figures + DeserializeOwned + Clone>(&self, problems: &mut Vec<Problem>, output: ArtifactKind) -> Vec<(String, F)> {
        self.read_where(problems, |kind| kind.output == output && kind.figures.meaning.model_stage)
    }

    /// The stages whose kind is `wanted`, their figures read as `F` (or the problem).
    fn read_where<F: Figures + DeserializeOwned + Clone>(
        &self,
        problems: &mut Vec<Problem>,
        wanted: impl Fn(&StageKind) -> bool,
    ) -> Vec<(String, F)> {
        let mut out = Vec::new();
        for (n, head, f) in &self.entries {
            if !crate::stages::kind(&head.kind).is_some_and(&wanted) {
                continue;
            }
            match f.figures::<F>() {
                Ok(figures) => out.push((n.clone(), figures)),
                Err(e) => problems.push(Problem { stage: n.clone(), error: e.to_string() }),
            }
        }
        out
    }

    /// Every stage of the run, in order, read in it.
    fn in_run(&self) -> impl Iterator<Item = crate::stage::meaning::InRun<'a>> + 'a {
        crate::stage::meaning::InRun::all(self.summary, crate::stages::meaning)
    }

    /// What the figures of the stage whose head is `head` mean.
    fn meaning(head: &Head) -> crate::stage::meaning::Meaning {
        crate::stages::meaning(&head.kind)
    }

    fn get(&self, name: &str) -> Option<&(String, Head, &'a StageSummary)> {
        self.entries.iter().find(|(n, ..)| n == name)
    }
}

/// The report's style sheet (the sweep report uses it too).
pub const STYLE: &str = include_str!("../templates/report/style.css");

/// Render the report of a run.
pub fn render(summary: &Summary, tables: &[(String, Table)]) -> String {
    render_page(summary, tables).unwrap_or_else(|e| {
        // The error and its causes, without the template listing of `{:#}`.
        let mut message = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            let _ = write!(message, ": {c}");
            cause = c.source();
        }
        format!(
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>fairpipe report</title></head><body>\
             <p>The report could not be rendered: {}. The run's figures are in summary.json.</p></body></html>\n",
            esc(&message)
        )
    })
}

fn render_page(summary: &Summary, tables: &[(String, Table)]) -> Result<String, minijinja::Error> {
    let stages = Stages::new(summary);
    let findings = findings::findings(&stages);
    let overview = overview::overview(summary);
    let thresholds = overview::verdicts_of(summary).thresholds;
    let detail = detail::detail(&stages, tables, &thresholds)?;
    let gate = summary.gate.as_ref();
    let warnings = &summary.warnings;
    let ctx = context! {
        name => summary.pipeline.as_str(),
        file => summary.file.clone().unwrap_or_else(|| "—".into()),
        seed => summary.seed.to_string(),
        version => if summary.fairpipe_version.is_empty() { "—".to_string() } else { summary.fairpipe_version.clone() },
        style => STYLE,
        gate => gate,
        warnings => warnings,
        overview => overview,
        findings => findings,
        detail => detail,
    };
    let mut html = render_template("page.html", ctx)?;
    if !html.ends_with('\n') {
        html.push('\n');
    }
    Ok(html)
}

/// Stages' figures for the templates: name, id, the model they measure and the figures.
fn named<F: serde::Serialize>(stages: &Stages<'_>, list: &[(String, F)]) -> Vec<minijinja::Value> {
    list.iter()
        .map(|(n, f)| {
            let model = stages.get(n).and_then(|(_, head, _)| head.inputs.get("model").cloned()).unwrap_or_default();
            context! { name => n, id => section_id(n), model => model, f => f }
        })
        .collect()
}

#[cfg(test)]
mod tests;
