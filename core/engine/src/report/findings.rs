//! The report's first section: what the run found, one line per headline finding, read from the
//! stages' own figures — each group that fails the four-fifths rule or lies outside the parity band
//! (with the significance of its difference), the discrimination estimate with its interval, the
//! real rows whose decision flips, the IDIs the searches found, the worst group TestSGD ranked,
//! what retraining changed, and a text audit's swaps and term groups.

use serde::Serialize;

use super::charts::Verdict;
use super::{pctf, pvalue, thousands, Stages};
use crate::stages::check::CheckFigures;
use crate::stages::check_text::CheckTextFigures;
use crate::stages::estimate::EstimateFigures;
use crate::stages::group_metrics::{GroupFigure, GroupMetricsFigures};
use crate::stages::group_score::GroupScoreFigures;
use crate::stages::group_score_text::GroupScoreTextFigures;
use crate::stages::retrain::RetrainFigures;
use crate::stages::retrain_text::RetrainTextFigures;
use crate::stages::verify::VerifyFigures;

/// Lines of one `group_metrics` stage beyond which the rest are counted, not listed.
const MAX_GROUP_LINES: usize = 6;

/// One headline finding.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Finding {
    /// Its colour: fail (a rule fails, significantly), warn, pass, plain (a measurement).
    pub verdict: Verdict,
    /// What it is about ("Four-fifths rule", "Discrimination estimate").
    pub topic: String,
    /// The finding, in words and figures.
    pub text: String,
    /// The id of the detail section it comes from.
    pub link: String,
}

impl Finding {
    fn new(verdict: Verdict, topic: &str, text: String, stage: &str) -> Self {
        Finding { verdict, topic: topic.to_string(), text, link: super::section_id(stage) }
    }
}

/// The metrics tested against the reference group, with their names in a finding.
const TESTED: [(&str, &str); 3] = [("selection_rate", "selection rate"), ("tpr", "true positive rate"), ("fpr", "false positive rate")];

/// Whether the stage measures a model made by retraining (its findings are the mitigation's).
fn of_retrained(stages: &Stages<'_>, name: &str) -> bool {
    let Some((_, head, _)) = stages.get(name) else { return false };
    head.inputs.get("model").and_then(|m| stages.get(m)).is_some_and(|(_, h, _)| h.kind == "retrain" || h.kind == "retrain_text")
}

/// The model a stage measures, for the text ("of model `model`").
fn model_of(stages: &Stages<'_>, name: &str) -> String {
    stages.get(name).and_then(|(_, head, _)| head.inputs.get("model").cloned()).unwrap_or_else(|| "?".into())
}

/// "p = 3.1e-12 after Holm's correction, significant" / "…, not significant".
fn significance(p: f64, significant: bool) -> String {
    if p.is_nan() {
        "not tested".into()
    } else {
        format!("{}, p = {} after Holm's correction", if significant { "significant" } else { "not significant" }, pvalue(p))
    }
}

/// A group's tested metric: (ratio to the reference, adjusted p, significant).
fn tested(g: &GroupFigure, key: &str) -> (f64, f64, bool) {
    let num = |k: String| g.metrics.get(&k).and_then(serde_json::Value::as_f64).unwrap_or(f64::NAN);
    if key == "selection_rate" {
        (num("selection_rate_ratio".into()), g.p_adjusted, g.significant)
    } else {
        let sig = g.metrics.get(&format!("{key}_significant")).and_then(serde_json::Value::as_bool).unwrap_or(false);
        (num(format!("{key}_ratio")), num(format!("{key}_p_adjusted")), sig)
    }
}

/// The lines of one `group_metrics` stage: a line per group that fails the four-fifths rule or
/// lies outside the band on a tested metric, the significant ones first; or one line saying none
/// does.
fn group_metrics_lines(out: &mut Vec<Finding>, n: &str, f: &GroupMetricsFigures) {
    let reference_of = |set: &str| f.groups.iter().find(|g| g.attributes == set && g.reference).map(|g| g.group.clone());
    let mut lines: Vec<(u8, f64, Finding)> = Vec::new();
    for g in &f.groups {
        if g.reference {
            continue;
        }
        let four_fifths = !g.four_fifths_ok;
        let outside: Vec<&(&str, &str)> = TESTED.iter().filter(|(k, _)| g.outside_band.iter().any(|m| m == k)).collect();
        if !four_fifths && outside.is_empty() {
            continue;
        }
        let mut parts = Vec::new();
        let mut any_significant = false;
        if four_fifths {
            parts.push(format!(
                "fails the four-fifths rule: {} selected, {:.2} of the most selected group's rate (below {})",
                pctf(g.selection_rate),
                g.impact_ratio,
                f.threshold
            ));
        }
        if !outside.is_empty() {
            let reference = reference_of(&g.attributes).unwrap_or_else(|| "?".into());
            let each: Vec<String> = outside
                .iter()
                .map(|(k, label)| {
                    let (ratio, p, sig) = tested(g, k);
                    any_significant |= sig;
                    format!("{label} ×{ratio:.2} ({})", significance(p, sig))
                })
                .collect();
            parts.push(format!(
                "outside the band [{}, {}] against {} = {}: {}",
                f.ratio_band[0],
                f.ratio_band[1],
                g.attributes,
                reference,
                each.join("; ")
            ));
        } else if four_fifths {
            any_significant |= g.significant;
            parts.push(format!("difference from the reference group {}", significance(g.p_adjusted, g.significant)));
        }
        let verdict = if any_significant { Verdict::Fail } else { Verdict::Warn };
        let topic = if four_fifths { "Four-fifths rule" } else { "Parity band" };
        let text = format!("{} = {} ({} rows) {}.", g.attributes, g.group, thousands(g.n), parts.join("; "));
        lines.push((u8::from(!any_significant) * 2 + u8::from(!four_fifths), g.impact_ratio, Finding::new(verdict, topic, text, n)));
    }
    if lines.is_empty() {
        let judged = f.groups.iter().filter(|g| !g.reference && !g.too_small).count();
        out.push(Finding::new(
            Verdict::Pass,
            "Group rates",
            format!(
                "No group fails the four-fifths rule or lies outside the band [{}, {}] on selection rate, true or false positive rate ({} groups of {} compared with their reference).",
                f.ratio_band[0],
                f.ratio_band[1],
                judged,
                f.min_impact_ratio.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            n,
        ));
        return;
    }
    lines.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let more = lines.len().saturating_sub(MAX_GROUP_LINES);
    out.extend(lines.into_iter().take(MAX_GROUP_LINES).map(|(_, _, l)| l));
    if more > 0 {
        out.push(Finding::new(Verdict::Warn, "More groups", format!("{more} more groups fail a rule; see the tables below."), n));
    }
}

/// The findings of a run, in the order of the report's headlines.
pub(crate) fn findings(stages: &Stages<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut ignored = String::new();
    for (n, f) in stages.of_kind::<GroupMetricsFigures>(&mut ignored, &["group_metrics"]) {
        if !of_retrained(stages, &n) {
            group_metrics_lines(&mut out, &n, &f);
        }
    }
    for (n, f) in stages.of_kind::<EstimateFigures>(&mut ignored, &["estimate"]) {
        if of_retrained(stages, &n) {
            continue;
        }
        let verdict = if f.discriminatory > 0 { Verdict::Warn } else { Verdict::Pass };
        out.push(Finding::new(
            verdict,
            "Discrimination estimate",
            format!(
                "{} of random inputs (95% interval {} – {}) get a different decision from model `{}` when only their protected attributes change ({} inputs, {} trials).",
                pctf(f.rate),
                pctf(f.ci95[0]),
                pctf(f.ci95[1]),
                model_of(stages, &n),
                thousands(f.samples),
                f.trials
            ),
            &n,
        ));
    }
    for (n, f) in stages.of_kind::<CheckFigures>(&mut ignored, &["check"]) {
        if of_retrained(stages, &n) {
            continue;
        }
        let verdict = if f.discriminatory > 0 { Verdict::Warn } else { Verdict::Pass };
        out.push(Finding::new(
            verdict,
            "Real rows flipped",
            format!(
                "{} of {} real rows ({}, 95% interval {} – {}) get a different decision from model `{}` when only their protected attributes change.",
                thousands(f.discriminatory),
                thousands(f.checked),
                pctf(f.rate),
                pctf(f.ci95[0]),
                pctf(f.ci95[1]),
                model_of(stages, &n)
            ),
            &n,
        ));
    }
    searches_line(&mut out, stages);
    for (n, f) in stages.of_kind::<GroupScoreFigures>(&mut ignored, &["group_score"]) {
        if of_retrained(stages, &n) {
            continue;
        }
        let Some(g) = f.top.first() else { continue };
        let (verdict, judged) = if g.significant {
            (Verdict::Fail, significance(g.p_adjusted, true))
        } else {
            (Verdict::Pass, format!("not significant: no group of the {} rule sets scored differs beyond chance", f.groups))
        };
        out.push(Finding::new(
            verdict,
            "Worst group",
            format!(
                "{} ranks {} worst: favourable decision for {} of it against {} of the rest (difference {:.3} ± {:.3}; {judged}).",
                f.plugin.split(' ').next().unwrap_or("the auditor"),
                g.condition,
                pctf(g.rate_in),
                pctf(g.rate_out),
                g.score,
                g.margin
            ),
            &n,
        ));
    }
    for (n, f) in stages.of_kind::<RetrainFigures>(&mut ignored, &["retrain"]) {
        out.push(Finding::new(
            Verdict::Plain,
            "Retraining",
            format!(
                "`{n}` ({} strategy, {} rows added): {} {} → {} ({} lower); test accuracy {} → {}.",
                f.strategy,
                thousands(f.added),
                f.measure,
                pctf(f.outcome.rate_before),
                pctf(f.outcome.rate_after),
                pctf(f.outcome.rate_reduction),
                pctf(f.outcome.accuracy_before),
                pctf(f.outcome.accuracy_after)
            ),
            &n,
        ));
    }
    text_lines(&mut out, stages);
    out
}

/// One line for the searches of the audited models: the IDIs each found, re-checked by the host.
fn searches_line(out: &mut Vec<Finding>, stages: &Stages<'_>) {
    let mut ignored = String::new();
    let mut parts = Vec::new();
    let mut first = None;
    let mut found = 0;
    for (n, f) in stages.of_kind::<VerifyFigures>(&mut ignored, &["verify"]) {
        // The cases come from a generate stage of a model.
        let source = stages.get(&n).and_then(|(_, h, _)| h.inputs.get("cases").cloned()).unwrap_or_default();
        if of_retrained(stages, &source) {
            continue;
        }
        found += f.discriminatory_full;
        parts.push(format!("{n} {} of {}", thousands(f.discriminatory_full), thousands(f.generated as usize)));
        first.get_or_insert(n);
    }
    let Some(first) = first else { return };
    out.push(Finding::new(
        if found > 0 { Verdict::Warn } else { Verdict::Pass },
        "Searches",
        format!(
            "Individual discriminatory instances (inputs whose decision changes when only protected attributes change), each re-checked: {}.",
            parts.join(", ")
        ),
        &first,
    ));
}

/// A text audit's lines: the swaps that change a label, the worst identity-term group, the
/// mitigation.
fn text_lines(out: &mut Vec<Finding>, stages: &Stages<'_>) {
    let mut ignored = String::new();
    for (n, f) in stages.of_kind::<CheckTextFigures>(&mut ignored, &["check_text"]) {
        out.push(Finding::new(
            if f.discriminatory > 0 { Verdict::Warn } else { Verdict::Pass },
            "Identity-term swaps",
            format!(
                "{} of {} texts with an identity term ({}) get a different predicted label when the term is swapped for another.",
                thousands(f.discriminatory),
                thousands(f.texts_with_terms),
                pctf(f.rate)
            ),
            &n,
        ));
    }
    for (n, f) in stages.of_kind::<GroupScoreTextFigures>(&mut ignored, &["group_score_text"]) {
        let Some(g) = f.top.first() else { continue };
        let num = |k: &str| g[k].as_f64().unwrap_or(f64::NAN);
        let significant = g["significant"] == true;
        out.push(Finding::new(
            if significant { Verdict::Fail } else { Verdict::Pass },
            "Worst identity terms",
            format!(
                "{}: class 1 for {} of the texts with the terms against {} of the rest (difference {:.3} ± {:.3}; {}).",
                g["rule"].as_str().unwrap_or("?"),
                pctf(num("rate_in")),
                pctf(num("rate_out")),
                num("score"),
                num("margin"),
                if significant { significance(num("p_adjusted"), true) } else { "not significant".into() }
            ),
            &n,
        ));
    }
    for (n, f) in stages.of_kind::<RetrainTextFigures>(&mut ignored, &["retrain_text"]) {
        out.push(Finding::new(
            Verdict::Plain,
            "Retraining",
            format!(
                "`{n}` ({} texts added for {}): score {:.3} → {:.3} ({} lower); test accuracy {} → {}.",
                thousands(f.added),
                f.group,
                f.outcome.rate_before,
                f.outcome.rate_after,
                pctf(f.outcome.rate_reduction),
                pctf(f.outcome.accuracy_before),
                pctf(f.outcome.accuracy_after)
            ),
            &n,
        ));
    }
}
