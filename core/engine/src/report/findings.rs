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
use crate::stages::pairwise::PairwiseFigures;
use crate::stages::retrain::RetrainFigures;
use crate::stages::retrain_text::RetrainTextFigures;
use crate::stages::verify::VerifyFigures;

/// One headline finding.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Finding {
    /// Its colour: fail (a rule fails, significantly), warn, pass, plain (a measurement).
    pub verdict: Verdict,
    /// The word before it ("fails", "found", "passes", "measured").
    pub tag: String,
    /// What it is about ("Four-fifths rule", "Discrimination estimate").
    pub topic: String,
    /// The finding, in words and figures.
    pub text: String,
    /// The id of the detail section it comes from.
    pub link: String,
}

impl Finding {
    fn new(verdict: Verdict, tag: &str, topic: &str, text: String, stage: &str) -> Self {
        Finding { verdict, tag: tag.to_string(), topic: topic.to_string(), text, link: super::section_id(stage) }
    }
}

/// The metrics tested against the reference group, with their names in a finding.
const TESTED: [(&str, &str); 3] = [("selection_rate", "selection rate"), ("tpr", "true positive rate"), ("fpr", "false positive rate")];

/// Whether the stage measures a model made by retraining (its findings are the mitigation's).
fn of_retrained(stages: &Stages<'_>, name: &str) -> bool {
    let Some((_, head, _)) = stages.get(name) else { return false };
    head.inputs.get("model").and_then(|m| stages.get(m)).is_some_and(|(_, h, _)| !Stages::meaning(h).audits_its_model)
}

/// The model a stage measures, for the text ("of model `model`").
fn model_of(stages: &Stages<'_>, name: &str) -> String {
    stages.get(name).and_then(|(_, head, _)| head.inputs.get("model").cloned()).unwrap_or_else(|| "?".into())
}

/// discrim-eval's measure of a `check` or `estimate` stage (or, for a model that rates, the
/// score shift), one finding for all its attributes: warn when an interval leaves out 0.
fn shift_lines(out: &mut Vec<Finding>, stage: &str, logit: &[crate::logit_shift::LogitShift], score: &[crate::logit_shift::LogitShift]) {
    if !logit.is_empty() {
        shift_line(
            out,
            stage,
            logit,
            "Logit shift (discrim-eval)",
            "Mean change in logit P(favourable) when one protected attribute alone changes from its reference value, over the same inputs",
        );
    }
    if !score.is_empty() {
        shift_line(
            out,
            stage,
            score,
            "Score shift (rating)",
            "Mean change in the expected rating, in the scale's points, when one protected attribute alone changes from its reference value, over the same inputs",
        );
    }
}

/// A `pairwise` stage's findings: the position effect, and each value against its reference,
/// warned of when the interval leaves out no effect (0 for the position, 0.5 for a rate).
fn pairwise_lines(out: &mut Vec<Finding>, stage: &str, f: &PairwiseFigures) {
    let [first, second] = [f.labels.first().cloned().unwrap_or_default(), f.labels.get(1).cloned().unwrap_or_default()];
    let positioned = f.position_effect_ci95.is_some_and(|[lo, hi]| lo > 0.0 || hi < 0.0);
    let interval = f.position_effect_ci95.map_or_else(|| "no interval".to_string(), |[lo, hi]| format!("95% interval {lo:+.3} – {hi:+.3}"));
    out.push(Finding::new(
        if positioned { Verdict::Warn } else { Verdict::Pass },
        if positioned { "found" } else { "none found" },
        "Position effect (pairwise)",
        format!(
            "P(the first listed candidate, {first}, is chosen) − 0.5 over both orders of {} pairs: {:+.3} ({interval}); the second is {second}.",
            thousands(f.pairs as usize),
            f.position_effect
        ),
        stage,
    ));
    if f.versus_reference.is_empty() {
        return;
    }
    let favoured = f.versus_reference.iter().any(|v| v.ci95.is_some_and(|[lo, hi]| lo > 0.5 || hi < 0.5));
    let parts: Vec<String> = f
        .versus_reference
        .iter()
        .map(|v| {
            format!(
                "{} = {} chosen in {} of its {} pairs with {} (ratio {:.3}, p = {})",
                v.attribute,
                v.value,
                pctf(v.rate),
                thousands(v.pairs as usize),
                v.reference,
                v.ratio,
                pvalue(v.p_value)
            )
        })
        .collect();
    out.push(Finding::new(
        if favoured { Verdict::Warn } else { Verdict::Pass },
        if favoured { "found" } else { "none found" },
        "Pairwise choices",
        format!("The same document under two names, each order asked: {}.", parts.join("; ")),
        stage,
    ));
}

/// One finding for the paired shifts `shifts`, titled `title`, its sentence starting `lead`.
fn shift_line(out: &mut Vec<Finding>, stage: &str, shifts: &[crate::logit_shift::LogitShift], title: &str, lead: &str) {
    let shifted = shifts.iter().any(|s| s.ci95.is_some_and(|[lo, hi]| lo > 0.0 || hi < 0.0));
    let parts: Vec<String> = shifts
        .iter()
        .map(|s| {
            let interval = s.ci95.map_or_else(|| "no interval".to_string(), |[lo, hi]| format!("95% interval {lo:+.3} – {hi:+.3}"));
            format!("{} = {} against {}: {:+.3} ({interval}, {} pairs)", s.attribute, s.value, s.reference, s.mean, s.pairs)
        })
        .collect();
    out.push(Finding::new(
        if shifted { Verdict::Warn } else { Verdict::Pass },
        if shifted { "found" } else { "none found" },
        title,
        format!("{lead}: {}.", parts.join("; ")),
        stage,
    ));
}

/// "p = 3.1e-12 after Holm's correction, significant" / "…, not significant".
fn significance(p: f64, significant: bool) -> String {
    if p.is_nan() {
        "not tested".into()
    } else {
        let p = pvalue(p);
        let p = p.strip_prefix('<').map_or_else(|| format!("p = {p}"), |small| format!("p < {small}"));
        format!("{} ({p}, Holm-corrected)", if significant { "significant" } else { "not significant" })
    }
}

/// [`significance`], naming the group tested against when it is not the one the ratio divides by:
/// "significant against race = White (p = 1.7e-16, Holm-corrected)".
pub(super) fn significance_against(p: f64, significant: bool, against: Option<&str>) -> String {
    let text = significance(p, significant);
    match against {
        Some(group) if !p.is_nan() => text.replacen(" (", &format!(" against {group} ("), 1),
        _ => text,
    }
}

/// A relative reduction in words: "21.09% lower", "40.08% higher".
fn change(reduction: f64) -> String {
    if reduction < 0.0 {
        format!("{} higher", pctf(-reduction))
    } else {
        format!("{} lower", pctf(reduction))
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

/// Groups of one attribute set failing a rule beyond which they are summed up in one line.
const MAX_LINES_PER_SET: usize = 2;

/// A group that fails the four-fifths rule or lies outside the band on a tested metric.
struct Failing<'a> {
    g: &'a GroupFigure,
    four_fifths: bool,
    /// The tested metrics outside the band: (name, ratio, adjusted p, significant).
    outside: Vec<(&'static str, f64, f64, bool)>,
    significant: bool,
}

/// "selection rate ×0.32*, true positive rate ×0.86*" (* significant).
fn outside_text(outside: &[(&str, f64, f64, bool)]) -> String {
    outside
        .iter()
        .map(|(label, ratio, _, sig)| format!("{label} ×{ratio:.2}{}", if *sig { "*" } else { "" }))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lines of one `group_metrics` stage: for each attribute set, a line per group that fails the
/// four-fifths rule or lies outside the band on a tested metric (selection rate, TPR, FPR), with
/// the significance of its difference from the reference group; an attribute set with more such
/// groups (an intersection) gets one line naming the worst. One line says so when no group fails.
fn group_metrics_lines(out: &mut Vec<Finding>, n: &str, f: &GroupMetricsFigures) {
    let band = format!("[{}, {}]", f.ratio_band[0], f.ratio_band[1]);
    let mut sets: Vec<&str> = f.groups.iter().map(|g| g.attributes.as_str()).collect();
    sets.dedup();
    let before = out.len();
    for set in sets {
        let groups: Vec<&GroupFigure> = f.groups.iter().filter(|g| g.attributes == set).collect();
        let reference = groups.iter().find(|g| g.reference).map(|g| g.group.as_str()).unwrap_or("?");
        // The impact ratio divides by the most favoured group's rate; where the stage's tests
        // compared with another group, a line's significance names that group.
        let highest = crate::verdict::most_favoured(f, &groups).map(|g| g.group.as_str());
        let against = (highest != Some(reference)).then(|| format!("{set} = {reference}"));
        let mut failing: Vec<Failing<'_>> = groups
            .iter()
            .filter(|g| !g.reference)
            .filter_map(|g| {
                let outside: Vec<(&'static str, f64, f64, bool)> = TESTED
                    .iter()
                    .filter(|(k, _)| g.outside_band.iter().any(|m| m == k))
                    .map(|(k, label)| {
                        let (ratio, p, sig) = tested(g, k);
                        (*label, ratio, p, sig)
                    })
                    .collect();
                let four_fifths = !g.four_fifths_ok;
                let significant = outside.iter().any(|o| o.3) || (four_fifths && g.significant);
                (four_fifths || !outside.is_empty()).then_some(Failing { g, four_fifths, outside, significant })
            })
            .collect();
        if failing.is_empty() {
            continue;
        }
        // The significant first, then the lowest impact ratio.
        failing.sort_by(|a, b| b.significant.cmp(&a.significant).then(a.g.impact_ratio.total_cmp(&b.g.impact_ratio)));
        if failing.len() <= MAX_LINES_PER_SET {
            for x in &failing {
                let g = x.g;
                let highest = g.selection_rate / g.impact_ratio;
                let mut text = if x.four_fifths {
                    format!(
                        "{set} = {} ({} rows) is selected at {}, {:.2} of the highest group's rate ({}): below {}; {}.",
                        g.group,
                        thousands(g.n),
                        pctf(g.selection_rate),
                        g.impact_ratio,
                        pctf(highest),
                        f.threshold,
                        significance_against(g.p_adjusted, g.significant, against.as_deref())
                    )
                } else {
                    format!("{set} = {} ({} rows) against {set} = {reference}:", g.group, thousands(g.n))
                };
                if !x.outside.is_empty() {
                    let lead = if x.four_fifths {
                        format!(" Outside the band {band} against {set} = {reference}:")
                    } else {
                        format!(" outside the band {band}:")
                    };
                    text.push_str(&format!("{lead} {} (* significant after Holm's correction).", outside_text(&x.outside)));
                }
                let (verdict, tag) = if x.significant { (Verdict::Fail, "fails") } else { (Verdict::Warn, "fails, not significant") };
                let topic = if x.four_fifths { "Four-fifths rule" } else { "Parity band" };
                out.push(Finding::new(verdict, tag, topic, text, n));
            }
        } else {
            let four_fifths = failing.iter().filter(|x| x.four_fifths).count();
            let significant = failing.iter().filter(|x| x.significant).count();
            let worst: Vec<String> = failing
                .iter()
                .take(3)
                .map(|x| {
                    let ratio = tested(x.g, "selection_rate").0;
                    format!(
                        "{} ({} rows, selected at {}, ×{ratio:.2} the reference's rate)",
                        x.g.group,
                        thousands(x.g.n),
                        pctf(x.g.selection_rate)
                    )
                })
                .collect();
            let judged = groups.iter().filter(|g| !g.reference && !g.too_small).count();
            let text = format!(
                "{} of the {judged} groups of {set} judged fail a rule ({four_fifths} the four-fifths rule, the others the band {band} on selection rate, TPR or FPR against {set} = {reference}); {significant} of them significantly. Worst: {}.",
                failing.len(),
                worst.join("; ")
            );
            let (verdict, tag) = if significant > 0 { (Verdict::Fail, "fails") } else { (Verdict::Warn, "fails, not significant") };
            let topic = if set.contains(" × ") { "Intersections" } else { "Four-fifths rule and parity band" };
            out.push(Finding::new(verdict, tag, topic, text, n));
        }
    }
    if out.len() == before {
        let judged = f.groups.iter().filter(|g| !g.reference && !g.too_small).count();
        out.push(Finding::new(
            Verdict::Pass,
            "passes",
            "Group rates",
            format!(
                "No group fails the four-fifths rule or lies outside the band {band} on selection rate, true or false positive rate ({judged} groups of {} compared with their reference).",
                f.min_impact_ratio.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            n,
        ));
    }
}

/// What each protected attribute changes alone, when more than one is changed together: " Alone:
/// `sex` 4 rows, `race` 10 (together 158)." Empty for one attribute, or for figures written
/// before these were recorded.
fn alone_sentence(alone: &std::collections::BTreeMap<String, usize>, together: usize, what: &str) -> String {
    if alone.len() < 2 {
        return String::new();
    }
    let each: Vec<String> = alone.iter().map(|(name, &n)| format!("`{name}` {} {what}", thousands(n))).collect();
    format!(" Changing one protected attribute alone: {} (all together: {}).", each.join(", "), thousands(together))
}

/// The findings of a run, in the order of the report's headlines.
pub(crate) fn findings(stages: &Stages<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut ignored = Vec::new();
    for (n, f) in stages.of::<GroupMetricsFigures>(&mut ignored) {
        if !of_retrained(stages, &n) {
            group_metrics_lines(&mut out, &n, &f);
        }
    }
    for (n, f) in stages.of::<EstimateFigures>(&mut ignored) {
        if of_retrained(stages, &n) {
            continue;
        }
        let verdict = if f.discriminatory > 0 { Verdict::Warn } else { Verdict::Pass };
        out.push(Finding::new(
            verdict,
            if f.discriminatory > 0 { "found" } else { "none found" },
            "Discrimination estimate",
            format!(
                "{} of random inputs (95% interval {} – {}) get a different decision from model `{}` when only their protected attributes change ({} inputs, {} trials).",
                pctf(f.rate),
                pctf(f.ci95[0]),
                pctf(f.ci95[1]),
                model_of(stages, &n),
                thousands(f.samples),
                f.trials
            ) + &alone_sentence(&f.discriminatory_alone, f.discriminatory, "inputs"),
            &n,
        ));
        shift_lines(&mut out, &n, &f.logit_shift, &f.score_shift);
    }
    for (n, f) in stages.of::<CheckFigures>(&mut ignored) {
        if of_retrained(stages, &n) {
            continue;
        }
        let verdict = if f.discriminatory > 0 { Verdict::Warn } else { Verdict::Pass };
        out.push(Finding::new(
            verdict,
            if f.discriminatory > 0 { "found" } else { "none found" },
            "Real rows flipped",
            format!(
                "{} of {} real rows ({}, 95% interval {} – {}) get a different decision from model `{}` when only their protected attributes change.",
                thousands(f.discriminatory),
                thousands(f.checked),
                pctf(f.rate),
                pctf(f.ci95[0]),
                pctf(f.ci95[1]),
                model_of(stages, &n)
            ) + &alone_sentence(&f.discriminatory_alone, f.discriminatory, "rows"),
            &n,
        ));
        shift_lines(&mut out, &n, &f.logit_shift, &f.score_shift);
    }
    for (n, f) in stages.of::<PairwiseFigures>(&mut ignored) {
        pairwise_lines(&mut out, &n, &f);
    }
    searches_line(&mut out, stages);
    for (n, f) in stages.of::<GroupScoreFigures>(&mut ignored) {
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
            if g.significant { "fails" } else { "not significant" },
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
    let retrains = stages.of::<RetrainFigures>(&mut ignored);
    if let Some((first, _)) = retrains.first() {
        let each: Vec<String> = retrains
            .iter()
            .map(|(n, f)| {
                format!(
                    "`{n}` ({}, {} rows added): {} {} → {} ({}), test accuracy {} → {}",
                    f.strategy,
                    thousands(f.added),
                    f.measure,
                    pctf(f.outcome.rate_before),
                    pctf(f.outcome.rate_after),
                    change(f.outcome.rate_reduction),
                    pctf(f.outcome.accuracy_before),
                    pctf(f.outcome.accuracy_after)
                )
            })
            .collect();
        out.push(Finding::new(Verdict::Plain, "measured", "Retraining", format!("{}.", each.join("; ")), first));
    }
    text_lines(&mut out, stages);
    out
}

/// One line for the searches of the audited models: the IDIs each found, re-checked by the host.
fn searches_line(out: &mut Vec<Finding>, stages: &Stages<'_>) {
    let mut ignored = Vec::new();
    let mut parts = Vec::new();
    let mut first = None;
    let mut found = 0;
    for (n, f) in stages.of::<VerifyFigures>(&mut ignored) {
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
        if found > 0 { "found" } else { "none found" },
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
    let mut ignored = Vec::new();
    for (n, f) in stages.of::<CheckTextFigures>(&mut ignored) {
        out.push(Finding::new(
            if f.discriminatory > 0 { Verdict::Warn } else { Verdict::Pass },
            if f.discriminatory > 0 { "found" } else { "none found" },
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
    for (n, f) in stages.of::<GroupScoreTextFigures>(&mut ignored) {
        let Some(g) = f.top.first() else { continue };
        let significant = g.significant;
        out.push(Finding::new(
            if significant { Verdict::Fail } else { Verdict::Pass },
            if significant { "fails" } else { "not significant" },
            "Worst identity terms",
            format!(
                "{}: class 1 for {} of the texts with the terms against {} of the rest (difference {:.3} ± {:.3}; {}).",
                g.rule,
                pctf(g.rate_in),
                pctf(g.rate_out),
                g.score,
                g.margin,
                if significant { significance(g.p_adjusted, true) } else { "not significant".into() }
            ),
            &n,
        ));
    }
    for (n, f) in stages.of::<RetrainTextFigures>(&mut ignored) {
        out.push(Finding::new(
            Verdict::Plain,
            "measured",
            "Retraining",
            format!(
                "`{n}` ({} texts added for {}): score {:.3} → {:.3} ({}); test accuracy {} → {}.",
                thousands(f.added),
                f.group,
                f.outcome.rate_before,
                f.outcome.rate_after,
                change(f.outcome.rate_reduction),
                pctf(f.outcome.accuracy_before),
                pctf(f.outcome.accuracy_after)
            ),
            &n,
        ));
    }
}
