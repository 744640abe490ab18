//! The report's detail sections after the first screen: each kind's figures as the template
//! `detail.html` shows them, with the flip-rate and ranked-group charts.

use minijinja::context;
use serde_json::Value;

use super::charts::{Bar, BarChart, LineChart, Scale, Verdict};
use super::comparison::comparison;
use super::pairs::pairs;
use super::{metrics, named, or0, pctf, render_template, section_id, text, Stages};
use crate::output::Table;
use crate::stage::ArtifactKind;
use crate::stages::bias_audit::BiasAuditFigures;
use crate::stages::check::CheckFigures;
use crate::stages::estimate::EstimateFigures;
use crate::stages::group_metrics::GroupMetricsFigures;
use crate::stages::group_score::{GroupScoreFigures, TopGroup};
use crate::stages::load::LoadFigures;
use crate::stages::load_model::LoadModelFigures;
use crate::stages::model_output::ModelFigures;
use crate::stages::retrain::RetrainFigures;
use crate::stages::verify::VerifyFigures;

/// The detail sections after the first screen, each folded; the flip charts are drawn with the
/// verdicts' thresholds `t`.
pub(super) fn detail(stages: &Stages<'_>, tables: &[(String, Table)], t: &crate::verdict::Thresholds) -> Result<String, minijinja::Error> {
    let mut problems = Vec::new();
    let loads = stages.of::<LoadFigures>(&mut problems);
    let models = stages.giving::<ModelFigures>(&mut problems, ArtifactKind::Model);
    // What runs each loaded model, and how it was checked (a stage whose figures do not read is
    // already named by `models`).
    let executors: Vec<minijinja::Value> = stages
        .of::<LoadModelFigures>(&mut Vec::new())
        .into_iter()
        .filter_map(|(n, f)| {
            let o = f.opened;
            o.executor
                .map(|executor| context! { name => n, executor => executor, reason => o.executor_reason, reference => o.reference_check })
        })
        .collect();
    let verifies = stages.of::<VerifyFigures>(&mut problems);
    let curves: Vec<(String, Vec<(f64, f64)>)> = verifies
        .iter()
        .filter(|(_, f)| !f.idis_over_time_s.is_empty())
        .map(|(n, f)| (n.clone(), f.idis_over_time_s.iter().map(|&(t, k)| (t, k as f64)).collect()))
        .collect();
    let idi_chart = (!curves.is_empty()).then(|| {
        LineChart::new(
            "Cases found over time",
            &curves,
            ("seconds since the search started", Scale::Auto, None),
            ("cases found", Scale::Auto, None),
        )
    });
    let estimates = stages.of::<EstimateFigures>(&mut problems);
    let bars: Vec<(String, f64, [f64; 2])> = estimates.iter().map(|(n, f)| (n.clone(), f.rate, f.ci95)).collect();
    let estimate_chart =
        flip_bars("Estimated discrimination rate", &bars, t, "share of inputs drawn from the domain that flip (whisker: 95% interval)");
    let checks = stages.of::<CheckFigures>(&mut problems);
    let bars: Vec<(String, f64, [f64; 2])> = checks.iter().map(|(n, f)| (n.clone(), f.rate, f.ci95)).collect();
    let check_chart = flip_bars("Real rows flipped", &bars, t, "share of real rows flipped (whisker: 95% interval)");
    let groups = stages.of::<GroupScoreFigures>(&mut problems);
    let group_scores: Vec<minijinja::Value> = groups
        .iter()
        .map(|(n, f)| {
            // The auditor's own figures (TestSGD's rule-set counts and confidence).
            let own = |k: &str| f.plugin_figures.get(k).and_then(Value::as_f64);
            context! {
                name => n,
                id => section_id(n),
                f => f,
                own => context! { rule_sets_generated => own("rule_sets_generated"), rule_sets_kept => own("rule_sets_kept"), confidence => own("confidence") },
                chart => ranked_group_bars(&f.top),
            }
        })
        .collect();
    let metrics = stages.of::<GroupMetricsFigures>(&mut problems);
    let bias_audits = stages.of::<BiasAuditFigures>(&mut problems);
    let retrains = stages.of::<RetrainFigures>(&mut problems);
    let text = text::text_sections(&mut problems, stages, tables);
    let pair_sources: Vec<&str> =
        stages.entries.iter().filter(|(_, head, _)| Stages::meaning(head).writes_pairs).map(|(n, ..)| n.as_str()).collect();
    render_template(
        "detail.html",
        context! {
            problems => problems,
            loads => named(stages, &loads),
            models => named(stages, &models),
            executors => executors,
            searches => named(stages, &verifies),
            idi_chart => idi_chart,
            estimates => named(stages, &estimates),
            estimate_chart => estimate_chart,
            checks => named(stages, &checks),
            check_chart => check_chart,
            group_scores => group_scores,
            metrics => metrics::metrics_views(t, &metrics, tables),
            bias_audits => named(stages, &bias_audits),
            retrains => named(stages, &retrains),
            text => text,
            comparison => comparison(&models, stages),
            pairs => pairs(&pair_sources, tables),
        },
    )
}

/// Flip rates as bars on the fixed 0–100% axis with their intervals, coloured by the verdicts'
/// grade, the notable and severe thresholds drawn: (label, rate, [low, high]).
pub(super) fn flip_bars(title: &str, items: &[(String, f64, [f64; 2])], t: &crate::verdict::Thresholds, axis_title: &str) -> BarChart {
    let colour = |rate: f64| match t.grade_flips(rate) {
        crate::verdict::Severity::Severe => Verdict::Fail,
        crate::verdict::Severity::Notable => Verdict::Warn,
        crate::verdict::Severity::Ok => Verdict::Pass,
        crate::verdict::Severity::NotMeasured => Verdict::Neutral,
    };
    let bars = items
        .iter()
        .map(|(label, v, ci)| Bar {
            label: label.clone(),
            value: *v,
            interval: Some(*ci),
            verdict: colour(*v),
            reference: false,
            text: pctf(*v),
        })
        .collect();
    let rules = [
        (t.flip_notable, format!("notable {}", pctf(t.flip_notable)), true),
        (t.flip_severe, format!("severe {}", pctf(t.flip_severe)), true),
    ];
    BarChart::new(title, bars, 0.0, 1.0, Scale::Percent, axis_title, &rules).legend(&[
        (Verdict::Fail, "severe"),
        (Verdict::Warn, "notable"),
        (Verdict::Pass, "under the thresholds"),
    ])
}

/// Ranked groups as bars in rank order: the largest score (the value drawn) on top, on the fixed
/// 0–100% axis of a difference of rates, red where the difference is significant. Items are
/// (label, score, margin, significant).
pub(super) fn ranked_bars(title: &str, items: &[(String, f64, f64, bool)], axis_title: &str) -> BarChart {
    let mut ranked: Vec<&(String, f64, f64, bool)> = items.iter().collect();
    ranked.sort_by(|a, b| or0(b.1).total_cmp(&or0(a.1)));
    let bars = ranked
        .iter()
        .map(|(label, score, margin, significant)| Bar {
            label: label.clone(),
            value: *score,
            interval: Some([(score - margin).max(0.0), score + margin]),
            verdict: if *significant { Verdict::Fail } else { Verdict::Neutral },
            reference: false,
            text: format!("{score:.3} ± {margin:.3}"),
        })
        .collect();
    BarChart::new(title, bars, 0.0, 1.0, Scale::Percent, axis_title, &[])
        .legend(&[(Verdict::Fail, "significant after Holm's correction"), (Verdict::Neutral, "not significant")])
}

/// The ranked groups of a `group_score` stage as bars in rank order.
pub(super) fn ranked_group_bars(top: &[TopGroup]) -> BarChart {
    let items: Vec<(String, f64, f64, bool)> = top.iter().map(|g| (g.condition.clone(), g.score, g.margin, g.significant)).collect();
    ranked_bars("Worst groups by score", &items, "|P(favourable | group) − P(favourable | rest)| (whisker: ± margin)")
}
