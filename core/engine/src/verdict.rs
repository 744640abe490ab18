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

use crate::stage::summary::{StageSummary, Summary};
use crate::stages::bias_audit::{AuditTable, BiasAuditFigures, FOUR_FIFTHS};
use crate::stages::check::CheckFigures;
use crate::stages::estimate::EstimateFigures;
use crate::stages::generate::GenerateFigures;
use crate::stages::group_metrics::{GroupFigure, GroupMetricsFigures};
use crate::stages::load::LoadFigures;
use crate::stages::verify::VerifyFigures;

pub use crate::stage::verdict::{AttributeVerdict, FlipMeasure, ImpactMeasure, Severity, Thresholds, VerdictSection, THRESHOLD_KEYS};

/// A stage's entry and its name.
type Entry<'a> = (&'a str, &'a StageSummary);

/// The model stage a stage reads (through a `verify` stage's cases for a search), unless it is a
/// retrained model (measured to compare, not audited).
fn audited_model<'a>(summary: &'a Summary, entry: &StageSummary) -> Option<&'a str> {
    let model = entry.inputs.get("model")?;
    let (name, m) = summary.stages.get_key_value(model.as_str())?;
    (!matches!(m.kind.as_str(), "retrain" | "retrain_text")).then_some(name.as_str())
}

/// The protected attributes of the data a model stage read.
fn data_protected(summary: &Summary, model: &str) -> Vec<String> {
    summary
        .stages
        .get(model)
        .and_then(|m| m.inputs.get("data"))
        .and_then(|d| summary.stages.get(d))
        .and_then(|d| d.figures::<LoadFigures>().ok())
        .map(|l| l.protected)
        .unwrap_or_default()
}

/// `names`, or the data's protected attributes when the stage recorded none.
fn or_data(names: Vec<String>, summary: &Summary, model: &str) -> Vec<String> {
    if names.is_empty() {
        data_protected(summary, model)
    } else {
        names
    }
}

/// A measure of flips: the stage, its model, the attributes changed together, and the measure.
struct Flips<'a> {
    model: &'a str,
    attributes: Vec<String>,
    measure: FlipMeasure,
}

fn flips<'a>(summary: &'a Summary, t: &Thresholds, (name, entry): Entry<'a>) -> Option<Flips<'a>> {
    let measure = |kind: &str, rate: Option<f64>, ci95: Option<[f64; 2]>, flipped: u64, of: u64, severity| FlipMeasure {
        stage: name.to_string(),
        measure: kind.to_string(),
        rate,
        ci95,
        flipped,
        of,
        changed_with: Vec::new(),
        severity,
    };
    match entry.kind.as_str() {
        "check" => {
            let model = audited_model(summary, entry)?;
            let f = entry.figures::<CheckFigures>().ok()?;
            let m = measure("check", Some(f.rate), Some(f.ci95), f.discriminatory as u64, f.checked as u64, t.grade_flips(f.rate));
            Some(Flips { model, attributes: or_data(f.protected, summary, model), measure: m })
        }
        "estimate" => {
            let model = audited_model(summary, entry)?;
            let f = entry.figures::<EstimateFigures>().ok()?;
            let m = measure("estimate", Some(f.rate), Some(f.ci95), f.discriminatory as u64, f.samples as u64, t.grade_flips(f.rate));
            Some(Flips { model, attributes: or_data(f.protected, summary, model), measure: m })
        }
        "verify" => {
            let source = summary.stages.get(entry.inputs.get("cases")?)?;
            if source.kind != "generate" {
                return None;
            }
            let model = audited_model(summary, source)?;
            let g = source.figures::<GenerateFigures>().ok()?;
            let f = entry.figures::<VerifyFigures>().ok()?;
            // A search proves that some inputs flip; it does not measure how many do.
            let severity = if f.discriminatory_full > 0 { Severity::Notable } else { Severity::Ok };
            let m = measure("search", None, None, f.discriminatory_full as u64, f.generated, severity);
            Some(Flips { model, attributes: or_data(g.protected, summary, model), measure: m })
        }
        _ => None,
    }
}

/// How the four-fifths rule judges group `g` of a set whose impact ratios divide by `reference`'s
/// rate, under thresholds `t` for stage `f`: its grade and whether its difference was tested
/// against that same group (`Some(significant)`). A group under `min_share` of the rows, the
/// reference itself or one without a ratio is not judged (`NotMeasured`).
pub fn grade_group(
    t: &Thresholds,
    f: &GroupMetricsFigures,
    g: &GroupFigure,
    reference: &GroupFigure,
    tested_against_reference: bool,
) -> (Severity, Option<bool>) {
    let min_share_n = (f.min_share * f.rows as f64).ceil() as usize;
    if g.n < min_share_n || !g.impact_ratio.is_finite() || (g.group == reference.group && g.attributes == reference.attributes) {
        return (Severity::NotMeasured, None);
    }
    let significant = (tested_against_reference && !g.too_small && !g.p_adjusted.is_nan()).then_some(g.significant);
    (t.grade_impact_tested(g.impact_ratio, t.impact_fail.unwrap_or(f.threshold), significant), significant)
}

/// The group rates of attribute set `set` measured by a `group_metrics` stage: its worst group
/// (the lowest impact ratio among the groups the rule judges).
pub fn impact(t: &Thresholds, stage: &str, f: &GroupMetricsFigures, set: &str) -> Option<ImpactMeasure> {
    let groups: Vec<&GroupFigure> = f.groups.iter().filter(|g| g.attributes == set).collect();
    let reference = most_favoured(f, &groups)?;
    let tested = groups.iter().any(|g| g.reference && g.group == reference.group);
    let (worst, (severity, significant)) = groups
        .iter()
        .map(|g| (*g, grade_group(t, f, g, reference, tested)))
        .filter(|(_, (s, _))| *s != Severity::NotMeasured)
        .min_by(|a, b| a.0.impact_ratio.total_cmp(&b.0.impact_ratio).then(b.0.n.cmp(&a.0.n)))?;
    Some(ImpactMeasure {
        stage: stage.to_string(),
        measure: "group_metrics".to_string(),
        group: worst.group.clone(),
        n: worst.n,
        selection_rate: worst.selection_rate,
        reference: reference.group.clone(),
        reference_rate: reference.selection_rate,
        impact_ratio: worst.impact_ratio,
        fail_below: t.impact_fail.unwrap_or(f.threshold),
        significant,
        severity,
    })
}

/// The impact ratios of one table (`sex`, `race`) of a `bias_audit` stage: its worst category
/// among those in the ratios (the lowest ratio, the larger category on a tie) against the most
/// selected one, graded as [`grade_group`] grades a group: below the failing line (the four-fifths
/// line unless `[pipeline.verdict]` sets `impact_fail`) is severe, held to notable when Fisher's
/// test after Holm's correction finds the difference not significant.
pub fn bias_audit_impact(t: &Thresholds, stage: &str, table: &AuditTable) -> Option<ImpactMeasure> {
    let reference = table.rows.iter().find(|r| r.highest && !r.excluded)?;
    let worst = table
        .rows
        .iter()
        .filter(|r| !r.excluded && !r.highest)
        .filter_map(|r| Some((r, r.impact_ratio.filter(|v| v.is_finite())?)))
        .min_by(|a, b| a.1.total_cmp(&b.1).then(b.0.count.cmp(&a.0.count)))?;
    let fail_below = t.impact_fail.unwrap_or(FOUR_FIFTHS);
    let significant = worst.0.p_adjusted.filter(|p| p.is_finite()).map(|_| worst.0.significant);
    let severity = t.grade_impact_tested(worst.1, fail_below, significant);
    Some(ImpactMeasure {
        stage: stage.to_string(),
        measure: "bias_audit".to_string(),
        group: worst.0.category.clone(),
        n: worst.0.count,
        selection_rate: worst.0.rate,
        reference: reference.category.clone(),
        reference_rate: reference.rate,
        impact_ratio: worst.1,
        fail_below,
        significant,
        severity,
    })
}

/// The group an attribute set's impact ratios divide by: the most selected group of at least
/// `min_share` of the rows (its impact ratio is 1), else the most selected group.
pub fn most_favoured<'g>(f: &GroupMetricsFigures, groups: &[&'g GroupFigure]) -> Option<&'g GroupFigure> {
    let min_share_n = (f.min_share * f.rows as f64).ceil() as usize;
    let best = |pool: &mut dyn Iterator<Item = &'g GroupFigure>| {
        pool.max_by(|a, b| a.selection_rate.total_cmp(&b.selection_rate).then(a.n.cmp(&b.n)).then(b.group.cmp(&a.group)))
    };
    best(&mut groups.iter().copied().filter(|g| g.n >= min_share_n)).or_else(|| best(&mut groups.iter().copied()))
}

/// A share as a percentage with up to two decimals ("15.00%").
fn pct(v: f64) -> String {
    format!("{:.2}%", 100.0 * v)
}

pub(crate) use crate::numbers::thousands;

/// "sex" or "sex and race together".
fn changed(attributes: &[String]) -> String {
    match attributes {
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last} change together", init.join(", ")),
        [] => "the protected attributes".to_string(),
    }
}

/// The words of one flip measure of `attributes`.
fn flip_words(attributes: &[String], m: &FlipMeasure) -> String {
    let what = match attributes {
        [one] => format!("{one} changes"),
        _ => changed(attributes),
    };
    match m.measure.as_str() {
        "check" => format!(
            "{} of real rows ({} of {}) get a different decision when {what} (check `{}`)",
            pct(m.rate.unwrap_or(f64::NAN)),
            thousands(m.flipped),
            thousands(m.of),
            m.stage
        ),
        "estimate" => format!(
            "{} of inputs drawn from the data's domain (95% interval {} – {}) get a different decision when {what} (estimate `{}`)",
            pct(m.rate.unwrap_or(f64::NAN)),
            pct(m.ci95.map_or(f64::NAN, |c| c[0])),
            pct(m.ci95.map_or(f64::NAN, |c| c[1])),
            m.stage
        ),
        _ if m.flipped > 0 => format!(
            "the search `{}` found {} inputs whose decision changes when {what} (how common they are is not measured)",
            m.stage,
            thousands(m.flipped)
        ),
        _ => format!("the search `{}` found no input whose decision changes when {what}", m.stage),
    }
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
        "{attribute} = {} is selected at {}, {:.2} of the rate of {attribute} = {} ({}; {judged}{tested}; {} `{}`)",
        m.group,
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
fn next_step(attributes: &[String], v: &AttributeVerdict) -> String {
    let flips = v.flips.first();
    let flip_severity = flips.map_or(Severity::NotMeasured, |m| m.severity);
    let impact_severity = v.impact.as_ref().map_or(Severity::NotMeasured, |m| m.severity);
    let name = changed(attributes);
    let joint = attributes.len() > 1;
    let step = match (v.severity, flip_severity >= impact_severity) {
        (Severity::NotMeasured, _) => {
            format!("Measure it: add a `check` stage (real rows) with protected = [\"{name}\"] and a `group_metrics` stage.")
        }
        (Severity::Severe, true) => format!(
            "Do not use this model for decisions as it is: read the flipped pairs, find the features that stand in for {}, retrain without them or with what was found (a `retrain` stage), and run the audit again.",
            if joint { "the protected attributes" } else { name.as_str() }
        ),
        (Severity::Severe | Severity::Notable, false) if v.impact.as_ref().is_some_and(|m| m.measure == "bias_audit") => {
            let stage = v.impact.as_ref().map_or("", |m| m.stage.as_str());
            format!(
                "Read the audit page `{stage}.html` (what the law asks to publish: every category's rate and impact ratio) and, beside it, whether the gap is significant; then find what in the tool's inputs or threshold selects {name} categories unequally, change it, and audit again."
            )
        }
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
type ModelAttributes<'a> = (&'a str, Vec<String>, Vec<Vec<String>>);

/// One verdict: on `attributes` of `model` (one attribute, or several changed together), from its
/// flip measures and its group-rate measure.
fn verdict(model: &str, attributes: &[String], mut measures: Vec<FlipMeasure>, impact: Option<ImpactMeasure>) -> AttributeVerdict {
    // A rate measured (check, estimate) grades; a search only when none did. The graded measure
    // comes first: the highest grade, real rows before the domain.
    let measured = measures.iter().any(|m| m.rate.is_some());
    let graded = |m: &FlipMeasure| if measured && m.rate.is_none() { Severity::NotMeasured } else { m.severity };
    let rank = |m: &FlipMeasure| match m.measure.as_str() {
        "check" => 0,
        "estimate" => 1,
        _ => 2,
    };
    measures.sort_by(|a, b| graded(b).cmp(&graded(a)).then(rank(a).cmp(&rank(b))));
    let flip_severity = measures.first().map_or(Severity::NotMeasured, graded);
    let severity = flip_severity.max(impact.as_ref().map_or(Severity::NotMeasured, |m| m.severity));
    let label = match attributes {
        [one] => one.clone(),
        _ => attributes.join(" + "),
    };
    let mut parts: Vec<String> = measures.iter().take(1).map(|m| flip_words(attributes, m)).collect();
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
    v.next = next_step(attributes, &v);
    v
}

/// The verdicts of `summary` under thresholds `t`. For each audited model (one read by a
/// `check`, `estimate`, search or `group_metrics` stage, not a retrained one), one verdict per
/// protected attribute, in the data's order, from the flips measured changing it alone and its
/// group rates; then one per set of attributes a stage changed together (the flips of such a
/// stage cannot be told apart by attribute).
pub fn verdicts<'a>(summary: &'a Summary, t: &Thresholds) -> VerdictSection {
    let all_flips: Vec<Flips<'_>> = summary.in_order().filter_map(|e| flips(summary, t, e)).collect();
    let impacts = impacts(summary, t);
    // Each audited model's attributes and sets changed together, in order.
    let mut models: Vec<ModelAttributes> = Vec::new();
    let mut entry = |model: &'a str| -> usize {
        match models.iter().position(|(m, ..)| *m == model) {
            Some(at) => at,
            None => {
                models.push((model, data_protected(summary, model), Vec::new()));
                models.len() - 1
            }
        }
    };
    let mut plan: Vec<(usize, Vec<String>)> = Vec::new();
    for f in &all_flips {
        plan.push((entry(f.model), f.attributes.clone()));
    }
    for (model, attribute, _) in &impacts {
        plan.push((entry(model), vec![attribute.clone()]));
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
                .filter(|(m, a, _)| m == model && set.len() == 1 && *a == set[0])
                .filter_map(|(.., i)| i.clone())
                .min_by(|a, b| b.severity.cmp(&a.severity).then(a.impact_ratio.total_cmp(&b.impact_ratio)));
            out.push(verdict(model, &set, measures, impact));
        }
    }
    VerdictSection { thresholds: *t, attributes: out }
}

/// Every impact measure of one protected attribute in the run (`None` where a stage measured the
/// attribute but no group could be judged), with the model it audits: each
/// `group_metrics` stage's (per attribute, not the intersections) and each `bias_audit` stage's
/// sex and race tables. A bias audit of decisions recorded in the data audits no model: it stands
/// for itself, under its own name.
fn impacts<'a>(summary: &'a Summary, t: &Thresholds) -> Vec<(&'a str, String, Option<ImpactMeasure>)> {
    let mut out = Vec::new();
    for (name, e) in summary.in_order() {
        match e.kind.as_str() {
            "group_metrics" => {
                let (Some(model), Ok(f)) = (audited_model(summary, e), e.figures::<GroupMetricsFigures>()) else { continue };
                let mut sets: Vec<&str> = f.groups.iter().map(|g| g.attributes.as_str()).filter(|s| !s.contains(" × ")).collect();
                sets.dedup();
                for set in sets {
                    out.push((model, set.to_string(), impact(t, name, &f, set)));
                }
            }
            "bias_audit" => {
                let model = if e.inputs.contains_key("model") { audited_model(summary, e) } else { Some(name) };
                let (Some(model), Ok(f)) = (model, e.figures::<BiasAuditFigures>()) else { continue };
                for (table, column) in [("sex", &f.sex_column), ("race", &f.race_column)] {
                    let (Some(column), Some(table)) = (column, f.tables.iter().find(|x| x.table == table)) else { continue };
                    out.push((model, column.clone(), bias_audit_impact(t, name, table)));
                }
            }
            _ => {}
        }
    }
    out
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
        assert!(strict.set("flip_severe", 1.5).unwrap_err().contains("(0, 1]"));
        assert!(strict.set("flip_sever", 0.5).unwrap_err().contains("did you mean `flip_severe`"));
        strict.set("flip_notable", 0.2).unwrap();
        assert!(strict.check().unwrap_err().contains("above `flip_severe`"));
    }
}
