//! The run's verdicts: one line per protected attribute of each audited model, graded by the size
//! of what was measured — the share of decisions that flip when the attribute changes (a `check`
//! of real rows, an `estimate` over the domain, or, when neither measured it, the searches) and the
//! worst impact ratio of its groups (`group_metrics`) — against thresholds the pipeline may set
//! (`[pipeline.verdict]`), with what to do next. `summary.json` keeps them under `verdicts`; the
//! report and the terminal open with them.
//!
//! Grading (defaults, argued in docs/report.md): a flip rate of at least `flip_severe` (10%) is
//! severe, at least `flip_notable` (1%) notable; an impact ratio below `impact_fail` (the stage's
//! `impact_threshold`, 0.8 by default: the four-fifths rule) fails (severe), below
//! `impact_notable` (0.9) is notable. An impact ratio below `impact_fail` whose difference was
//! tested against the same group and is not significant is held to notable: it may be chance.
//! The attribute's severity is the worst of its measures.

use crate::numbers::percent as pct;
use crate::stage::meaning::{Flips, Impact, InRun, Meaning};
use crate::stage::summary::Summary;

pub use crate::stage::verdict::{AttributeVerdict, FlipMeasure, ImpactMeasure, Severity, Thresholds, VerdictSection, THRESHOLD_KEYS};
/// The group-rate measures, computed where their kinds are (re-exported for the report).
pub use crate::stages::bias_audit::bias_audit_impact;
pub use crate::stages::group_metrics::{grade_group, impact, most_favoured};

/// What the figures of the kind called so mean (the registry's [`crate::stages::meaning`], or a
/// test's kinds beside them).
type MeaningOf = fn(&str) -> Meaning;

pub(crate) use crate::numbers::thousands;

/// "sex" or "sex and race together".
fn changed(attributes: &[String]) -> String {
    match attributes {
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last} change together", init.join(", ")),
        [] => "the protected attributes".to_string(),
    }
}

/// The words of one flip measure of `attributes`, as the kind of the stage that made it says them.
fn flip_words(summary: &Summary, meaning_of: MeaningOf, attributes: &[String], m: &FlipMeasure) -> String {
    let what = match attributes {
        [one] => format!("{one} changes"),
        _ => changed(attributes),
    };
    (meaning_of_stage(summary, meaning_of, &m.stage).flip_words)(m, &what)
}

/// What the figures of stage `stage` of `summary` mean.
fn meaning_of_stage(summary: &Summary, meaning_of: MeaningOf, stage: &str) -> Meaning {
    summary.stages.get(stage).map_or(Meaning::NONE, |e| meaning_of(&e.kind))
}

/// The words of the impact measure.
fn impact_words(attribute: &str, m: &ImpactMeasure) -> String {
    let judged = match m.severity {
        Severity::Severe => format!("below {}: fails the four-fifths rule", m.fail_below),
        Severity::Notable if m.impact_ratio < m.fail_below => {
            format!("below {}, but the difference is not significant: it may be chance", m.fail_below)
        }
        Severity::Notable => "close to the four-fifths line".to_string(),
        _ => "within the four-fifths rule".to_string(),
    };
    let tested = match m.significant {
        Some(true) => ", significant",
        Some(false) => ", not significant",
        None => "",
    };
    format!(
        "{attribute} = {} {} {}, {:.2} of the rate of {attribute} = {} ({}; {judged}{tested}; {} `{}`)",
        m.group,
        if m.scored { "scores above the median at" } else { "is selected at" },
        pct(m.selection_rate),
        m.impact_ratio,
        m.reference,
        pct(m.reference_rate),
        m.measure,
        m.stage
    )
}

/// What to do next on `attributes` (one, or several changed together), from the measure that
/// sets the severity.
fn next_step(summary: &Summary, meaning_of: MeaningOf, attributes: &[String], v: &AttributeVerdict) -> String {
    let flips = v.flips.first();
    let flip_severity = flips.map_or(Severity::NotMeasured, |m| m.severity);
    let impact_severity = v.impact.as_ref().map_or(Severity::NotMeasured, |m| m.severity);
    let name = changed(attributes);
    let joint = attributes.len() > 1;
    // The advice of the kind that measured the group rates, where it has its own.
    let impact_step = v.impact.as_ref().and_then(|m| (meaning_of_stage(summary, meaning_of, &m.stage).impact_next_step)(m, &name));
    let step = match (v.severity, flip_severity >= impact_severity) {
        (Severity::NotMeasured, _) => {
            format!("Measure it: add a `check` stage (real rows) with protected = [\"{name}\"] and a `group_metrics` stage.")
        }
        (Severity::Severe, true) => format!(
            "Do not use this model for decisions as it is: read the flipped pairs, find the features that stand in for {}, retrain without them or with what was found (a `retrain` stage), and run the audit again.",
            if joint { "the protected attributes" } else { name.as_str() }
        ),
        (Severity::Severe | Severity::Notable, false) if impact_step.is_some() => impact_step.unwrap_or_default(),
        (Severity::Severe, false) => "Compare the groups' base rates and error rates (the group table): if the labels do not explain the gap, change the model or its decision threshold and run the audit again.".to_string(),
        (Severity::Notable, true) => {
            let gate = flips.filter(|m| m.rate.is_some()).map_or(String::new(), |m| format!(" (e.g. --gate \"{}.rate < {}\")", m.stage, round_up(m)));
            format!("Read the flipped pairs to see which inputs are affected, and hold the rate with a gate{gate}.")
        }
        (Severity::Notable, false) => {
            "Read the group table before relying on the model; a gate on the impact ratio holds it from getting worse.".to_string()
        }
        (Severity::Ok, _) => "No action at these thresholds; keep a gate so that the next model is held to them.".to_string(),
    };
    if joint && v.severity >= Severity::Notable {
        let first = &attributes[0];
        format!("{step} To see which attribute causes it, add a check per attribute (protected = [\"{first}\"], …).")
    } else {
        step
    }
}

/// A round figure for a suggested gate: the measured rate, rounded up to a percent.
fn round_up(m: &FlipMeasure) -> String {
    let rate = m.rate.unwrap_or(0.0);
    let up = ((rate * 100.0).ceil() / 100.0).max(0.01);
    format!("{up}")
}

/// An audited model: its name, its protected attributes, and the sets of them changed together.
type ModelAttributes = (String, Vec<String>, Vec<Vec<String>>);

/// One verdict: on `attributes` of `model` (one attribute, or several changed together), from its
/// flip measures and its group-rate measure.
fn verdict(
    (summary, meaning_of): (&Summary, MeaningOf),
    model: &str,
    attributes: &[String],
    mut measures: Vec<FlipMeasure>,
    impact: Option<ImpactMeasure>,
) -> AttributeVerdict {
    // A rate measured (check, estimate) grades; a search only when none did. The graded measure
    // comes first: the highest grade, real rows before the domain.
    let measured = measures.iter().any(|m| m.rate.is_some());
    let graded = |m: &FlipMeasure| if measured && m.rate.is_none() { Severity::NotMeasured } else { m.severity };
    let rank = |m: &FlipMeasure| meaning_of_stage(summary, meaning_of, &m.stage).flip_rank;
    measures.sort_by(|a, b| graded(b).cmp(&graded(a)).then(rank(a).cmp(&rank(b))));
    let flip_severity = measures.first().map_or(Severity::NotMeasured, graded);
    let severity = flip_severity.max(impact.as_ref().map_or(Severity::NotMeasured, |m| m.severity));
    let label = match attributes {
        [one] => one.clone(),
        _ => attributes.join(" + "),
    };
    let mut parts: Vec<String> = measures.iter().take(1).map(|m| flip_words(summary, meaning_of, attributes, m)).collect();
    if let Some(m) = &impact {
        parts.push(impact_words(&label, m));
    }
    let mut line =
        if parts.is_empty() { format!("{label}: nothing in this run measures it") } else { format!("{label}: {}", parts.join("; ")) };
    if measures.len() > 1 {
        let others = measures.len() - 1;
        line.push_str(&format!(" (and {others} more measure{} in the detail)", if others == 1 { "" } else { "s" }));
    }
    if attributes.len() == 1 && measures.is_empty() && impact.is_some() {
        line.push_str("; flips of this attribute alone are not measured");
    }
    let mut v = AttributeVerdict {
        attribute: label,
        together: if attributes.len() > 1 { attributes.to_vec() } else { Vec::new() },
        model: model.to_string(),
        severity,
        line: format!("{line}."),
        next: String::new(),
        flips: measures,
        impact,
    };
    v.next = next_step(summary, meaning_of, attributes, &v);
    v
}

/// The verdicts of `summary` under thresholds `t`. For each audited model (one read by a
/// `check`, `estimate`, search or `group_metrics` stage, not a retrained one), one verdict per
/// protected attribute, in the data's order, from the flips measured changing it alone and its
/// group rates; then one per set of attributes a stage changed together (the flips of such a
/// stage cannot be told apart by attribute).
pub fn verdicts(summary: &Summary, t: &Thresholds) -> VerdictSection {
    verdicts_with(summary, t, crate::stages::meaning)
}

/// [`verdicts`], the kinds' meanings looked up by `meaning_of`: each kind's figures reach the
/// verdict through its [`StageFigures`](crate::stage::meaning::StageFigures) alone.
pub fn verdicts_with(summary: &Summary, t: &Thresholds, meaning_of: MeaningOf) -> VerdictSection {
    let all_flips: Vec<Flips> = InRun::all(summary, meaning_of).filter_map(|at| (at.meaning().flips)(&at, t)).collect();
    let impacts: Vec<Impact> = InRun::all(summary, meaning_of).flat_map(|at| (at.meaning().impacts)(&at, t)).collect();
    // Each audited model's attributes and sets changed together, in order.
    let mut models: Vec<ModelAttributes> = Vec::new();
    let mut entry = |model: &str| -> usize {
        match models.iter().position(|(m, ..)| m == model) {
            Some(at) => at,
            None => {
                let protected = InRun::named(summary, model, meaning_of).map(|at| at.data_protected()).unwrap_or_default();
                models.push((model.to_string(), protected, Vec::new()));
                models.len() - 1
            }
        }
    };
    let mut plan: Vec<(usize, Vec<String>)> = Vec::new();
    for f in &all_flips {
        plan.push((entry(&f.model), f.attributes.clone()));
    }
    for i in &impacts {
        plan.push((entry(&i.model), vec![i.attribute.clone()]));
    }
    for (at, names) in plan {
        let (_, attributes, joint) = &mut models[at];
        if names.len() > 1 {
            if !joint.contains(&names) {
                joint.push(names.clone());
            }
        } else if let Some(n) = names.first() {
            if !attributes.contains(n) {
                attributes.push(n.clone());
            }
        }
    }
    let mut out = Vec::new();
    for (model, attributes, joint) in &models {
        let singles = attributes.iter().map(|a| vec![a.clone()]);
        for set in singles.chain(joint.iter().cloned()) {
            let measures: Vec<FlipMeasure> = all_flips
                .iter()
                .filter(|f| f.model == *model && f.attributes == set)
                .map(|f| {
                    let mut m = f.measure.clone();
                    m.changed_with = if set.len() > 1 { set.clone() } else { Vec::new() };
                    m
                })
                .collect();
            let impact = impacts
                .iter()
                .filter(|i| i.model == *model && set.len() == 1 && i.attribute == set[0])
                .filter_map(|i| i.measure.clone())
                .min_by(|a, b| b.severity.cmp(&a.severity).then(a.impact_ratio.total_cmp(&b.impact_ratio)));
            out.push(verdict((summary, meaning_of), model, &set, measures, impact));
        }
    }
    VerdictSection { thresholds: *t, attributes: out }
}

/// The thresholds in words, as the report and the terminal show them ("flip rate ≥ 10% severe,
/// ≥ 1% notable; impact ratio < 0.8 fails, < 0.9 notable").
pub fn thresholds_words(section: &VerdictSection) -> String {
    let t = &section.thresholds;
    let fails: Vec<f64> = {
        let mut f: Vec<f64> = section.attributes.iter().filter_map(|a| a.impact.as_ref().map(|m| m.fail_below)).collect();
        f.sort_by(f64::total_cmp);
        f.dedup();
        f
    };
    let fail = match (t.impact_fail, fails.as_slice()) {
        (Some(f), _) => format!("{f}"),
        (None, [one]) => format!("{one}"),
        (None, _) => "each group_metrics stage's impact_threshold (0.8 by default)".to_string(),
    };
    format!(
        "flip rate ≥ {} severe, ≥ {} notable; impact ratio < {fail} fails, < {} notable",
        trim_pct(t.flip_severe),
        trim_pct(t.flip_notable),
        t.impact_notable
    )
}

/// A share as a short percentage ("10%", "2.5%").
fn trim_pct(v: f64) -> String {
    let p = 100.0 * v;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{}%", (p * 100.0).round() / 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flip_rates_and_impact_ratios_are_graded_at_their_thresholds() {
        let t = Thresholds::default();
        assert_eq!(t.grade_flips(0.15), Severity::Severe);
        assert_eq!(t.grade_flips(0.10), Severity::Severe);
        assert_eq!(t.grade_flips(0.0999), Severity::Notable);
        assert_eq!(t.grade_flips(0.01), Severity::Notable);
        assert_eq!(t.grade_flips(0.0099), Severity::Ok);
        assert_eq!(t.grade_flips(0.0), Severity::Ok);
        assert_eq!(t.grade_flips(f64::NAN), Severity::NotMeasured);
        assert_eq!(t.grade_impact(0.79, 0.8), Severity::Severe);
        assert_eq!(t.grade_impact(0.8, 0.8), Severity::Notable);
        assert_eq!(t.grade_impact(0.9, 0.8), Severity::Ok);
        let mut strict = t;
        strict.set("flip_severe", 0.05).unwrap();
        assert_eq!(strict.grade_flips(0.06), Severity::Severe);
        assert!(strict.set("flip_severe", 1.5).unwrap_err().to_string().contains("(0, 1]"));
        assert!(strict.set("flip_sever", 0.5).unwrap_err().to_string().contains("did you mean `flip_severe`"));
        strict.set("flip_notable", 0.2).unwrap();
        assert!(strict.check().unwrap_err().to_string().contains("above `flip_severe`"));
    }
}
