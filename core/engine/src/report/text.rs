//! The report's sections of a text audit: the texts and their identity terms, the text models, the
//! counterfactual swaps with example pairs, the ranked identity-term groups with an example text
//! each, and the mitigation by retraining.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{bar_chart, count, esc, numf, open_table, pctf, pvalue, ranked_bars, table_row, Stages};
use crate::output::Table;
use crate::stages::check_text::CheckTextFigures;
use crate::stages::group_score_text::GroupScoreTextFigures;
use crate::stages::load_text::LoadTextFigures;
use crate::stages::retrain_text::RetrainTextFigures;
use crate::text::is_word_char;

/// Characters of a text shown around its identity term.
const EXCERPT: usize = 110;

/// Every text section, in the order of the audit.
pub(super) fn text_sections(h: &mut String, stages: &Stages<'_>, tables: &[(String, Table)]) {
    let loads = stages.of_kind::<LoadTextFigures>(h, &["load_text"]);
    texts_section(h, &loads);
    let models = stages.of_kind::<TextModelView>(h, &["train_text", "load_text_model", "retrain_text"]);
    models_section(h, &models);
    let checks = stages.of_kind::<CheckTextFigures>(h, &["check_text"]);
    swaps_section(h, &checks, tables);
    let groups = stages.of_kind::<GroupScoreTextFigures>(h, &["group_score_text"]);
    groups_section(h, &groups);
    let retrains = stages.of_kind::<RetrainTextFigures>(h, &["retrain_text"]);
    mitigation_section(h, &retrains);
}

/// `text` escaped, cut to about [`EXCERPT`] characters around the first mention of `term`
/// (case-insensitive), the term marked.
fn excerpt(text: &str, term: &str) -> String {
    let lower = text.to_lowercase();
    let term_lower = term.to_lowercase();
    // The first mention on word boundaries ("catholic" is not in "Catholicism"). Lower-casing can
    // change byte lengths; then the positions disagree and the excerpt is the text's start.
    let is_word_at = |i: usize| {
        let before = lower[..i].chars().next_back().is_some_and(is_word_char);
        let after = lower[i + term_lower.len()..].chars().next().is_some_and(is_word_char);
        !before && !after
    };
    let found = (lower.len() == text.len() && !term.is_empty())
        .then(|| lower.match_indices(&term_lower).map(|(i, _)| i).find(|&i| is_word_at(i)))
        .flatten();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let Some(start) = found else {
        let cut: String = text.chars().take(2 * EXCERPT).collect();
        return format!("{}{}", esc(&cut), if cut.len() < text.len() { "…" } else { "" });
    };
    let end = start + term.len();
    let at = chars.iter().position(|&(b, _)| b == start).unwrap_or(0);
    let from = chars[at.saturating_sub(EXCERPT)].0;
    let to_index = chars.iter().position(|&(b, _)| b >= end).unwrap_or(chars.len());
    let to = chars.get(to_index + EXCERPT).map_or(text.len(), |&(b, _)| b);
    format!(
        "{}{}<mark>{}</mark>{}{}",
        if from > 0 { "…" } else { "" },
        esc(&text[from..start]),
        esc(&text[start..end]),
        esc(&text[end..to]),
        if to < text.len() { "…" } else { "" }
    )
}

/// "gender 231, race 115".
fn per_category(counts: &std::collections::BTreeMap<String, usize>) -> String {
    counts.iter().map(|(c, k)| format!("{} {}", esc(c), count(*k as u64))).collect::<Vec<_>>().join(", ")
}

fn texts_section(h: &mut String, loads: &[(String, LoadTextFigures)]) {
    if loads.is_empty() {
        return;
    }
    h.push_str("<h2>Texts and identity terms</h2>");
    open_table(h, &["stage", "texts", "train / test", "label: class 1 (share)", "texts with an identity term", "texts per category"]);
    for (n, f) in loads {
        let per_category = per_category(&f.texts_per_category);
        table_row(
            h,
            None,
            &[
                esc(n),
                count(f.rows as u64),
                format!("{} / {}", count(f.rows_train as u64), count(f.rows_test as u64)),
                format!("{}: {} ({})", esc(&f.label), esc(&f.label_values[1]), pctf(f.class_1_share)),
                count(f.texts_with_terms as u64),
                per_category,
            ],
        );
    }
    h.push_str("</table>");
}

/// What the text-model table shows of a `train_text`, `load_text_model` or `retrain_text` stage
/// (the figures all three write).
#[derive(Debug, Clone, Deserialize, Serialize)]
struct TextModelView {
    kind: String,
    #[serde(default)]
    model: String,
    accuracy_train: Option<f64>,
    #[serde(default)]
    accuracy_test: Option<f64>,
    #[serde(default)]
    accuracy_after: Option<f64>,
}

fn models_section(h: &mut String, models: &[(String, TextModelView)]) {
    if models.is_empty() {
        return;
    }
    h.push_str("<h2>Text models</h2>");
    open_table(h, &["stage", "model", "train accuracy", "test accuracy"]);
    for (n, f) in models {
        let accuracy = |v: Option<f64>| v.map(pctf).unwrap_or_else(|| "—".into());
        let test = if f.kind == "retrain_text" { accuracy(f.accuracy_after) } else { accuracy(f.accuracy_test) };
        table_row(h, None, &[esc(n), esc(&f.model), accuracy(f.accuracy_train), test]);
    }
    h.push_str("</table>");
}

fn swaps_section(h: &mut String, checks: &[(String, CheckTextFigures)], tables: &[(String, Table)]) {
    for (n, f) in checks {
        let per_category = per_category(&f.per_category);
        let (title, found) = if f.counterfactuals == "twins" {
            (
                "Counterfactual twins",
                format!(
                    "{} of the {} texts whose twin (the same text with identity terms swapped) differs get a different predicted label than their twin ({}; {}).",
                    count(f.discriminatory as u64),
                    count(f.texts_with_terms as u64),
                    pctf(f.rate),
                    per_category
                ),
            )
        } else {
            (
                "Counterfactual term swaps",
                format!(
                    "{} of {} texts with an identity term ({}) change their predicted label when the terms of one category are replaced by another term of it; {} of {} swaps change the label ({}).",
                    count(f.discriminatory as u64),
                    count(f.texts_with_terms as u64),
                    pctf(f.rate),
                    count(f.discriminatory_swaps as u64),
                    count(f.swaps as u64),
                    per_category
                ),
            )
        };
        let _ = write!(h, "<h2 id=\"{}\">{title}: {}</h2><p>{found}</p>", super::section_id(n), esc(n));
        let Some(t) = tables.iter().find(|(s, _)| s == n).map(|(_, t)| &t.frame) else { continue };
        // The first label-changing swap of each of the first texts that have one.
        let mut seen = std::collections::HashSet::new();
        let rows: Vec<usize> = (0..t.height()).filter(|&r| seen.insert(super::cell(t, "row", r))).take(8).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = write!(
            h,
            "<p class=\"muted\">A label-changing swap of each of the first {} texts that have one (P = probability of class 1):</p>",
            rows.len()
        );
        open_table(h, &["swap", "P", "text", "P after", "swapped text"]);
        for r in rows {
            let c = |col: &str| super::cell(t, col, r);
            table_row(
                h,
                None,
                &[
                    format!("{} → {}", esc(&c("term")), esc(&c("term_counterpart"))),
                    numf(c("probability").parse().unwrap_or(f64::NAN)),
                    // A text mentioning several terms of the category lists them as "gay/straight".
                    excerpt(&c("text"), c("term").split('/').next().unwrap_or("")),
                    numf(c("probability_counterpart").parse().unwrap_or(f64::NAN)),
                    excerpt(&c("text_counterpart"), &c("term_counterpart")),
                ],
            );
        }
        h.push_str("</table>");
    }
}

fn groups_section(h: &mut String, groups: &[(String, GroupScoreTextFigures)]) {
    for (n, f) in groups {
        let _ = write!(
            h,
            "<h2 id=\"{}\">Identity-term groups: {}</h2><p>{} rule sets of identity terms reach the support threshold; score = |P(class 1 | texts with the terms) − P(class 1 | the other texts)|, bar = score, line = ± margin. {} of them differ significantly at {} after Holm's correction{}.</p>",
            super::section_id(n),
            esc(n),
            count(f.rule_sets_kept as u64),
            count(f.significant_rule_sets as u64),
            numf(f.alpha),
            if f.significant_rule_sets == 0 { ": <b>nothing is beyond chance</b>" } else { "" }
        );
        h.push_str("<p class=\"muted\">The leaders' scores come from fresh samples drawn after ranking (the ranking's own score beside them). Samples of a group are texts whose terms of its categories were replaced by its terms.</p>");
        open_table(
            h,
            &[
                "terms",
                "score",
                "margin",
                "ranking score",
                "p (Holm)",
                "class 1 with the terms",
                "class 1 in the rest",
                "support",
                "example",
            ],
        );
        let mut bars = Vec::new();
        for g in &f.top {
            let rule = g.rule.as_str();
            let significant = g.significant;
            let first_term = rule.split(", ").next().unwrap_or("");
            table_row(
                h,
                significant.then_some("flag"),
                &[
                    esc(rule),
                    format!("{}{}", numf(g.score), if g.reestimated { " <span class=\"muted\">(fresh)</span>" } else { "" }),
                    format!("±{}", numf(g.margin)),
                    numf(g.selection_score),
                    pvalue(g.p_adjusted),
                    pctf(g.rate_in),
                    pctf(g.rate_out),
                    pctf(g.support),
                    excerpt(&g.example, first_term),
                ],
            );
            bars.push((rule.to_string(), g.score, g.margin, significant));
        }
        h.push_str("</table>");
        h.push_str(&bar_chart(
            &ranked_bars(
                "Identity-term groups by score",
                &bars,
                "|P(class 1 | texts with the terms) − P(class 1 | the rest)| (whisker: ± margin)",
            ),
            "",
        ));
    }
}

fn mitigation_section(h: &mut String, retrains: &[(String, RetrainTextFigures)]) {
    if retrains.is_empty() {
        return;
    }
    h.push_str("<h2>Mitigation by retraining on generated texts</h2>");
    open_table(h, &["stage", "terms", "added texts (label)", "score before → after", "reduction", "test accuracy before → after"]);
    for (n, f) in retrains {
        super::stage_row(
            h,
            n,
            &[
                esc(n),
                esc(&f.group),
                format!("{} of {} ({})", count(f.added as u64), count(f.samples_available as u64), esc(&f.label)),
                format!("{} → {}", numf(f.outcome.rate_before), numf(f.outcome.rate_after)),
                pctf(f.outcome.rate_reduction),
                format!("{} → {}", pctf(f.outcome.accuracy_before), pctf(f.outcome.accuracy_after)),
            ],
        );
    }
    h.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::excerpt;

    #[test]
    fn an_excerpt_marks_the_term_and_cuts_long_texts_around_it() {
        assert_eq!(excerpt("I am a Gay <man>", "gay"), "I am a <mark>Gay</mark> &lt;man&gt;");
        let long = format!("{}the gay one{}", "x".repeat(300), "y".repeat(300));
        let e = excerpt(&long, "gay");
        assert!(e.starts_with('…') && e.ends_with('…') && e.contains("<mark>gay</mark>"), "{e}");
        assert!(e.chars().count() < 260);
        // Only whole words are marked.
        assert_eq!(excerpt("Catholicism, catholic", "catholic"), "Catholicism, <mark>catholic</mark>");
        // No mention (or a lower-casing that changes lengths): the start of the text.
        assert_eq!(excerpt("İstanbul gay", "gay"), "İstanbul gay");
        assert_eq!(excerpt("gayety", "gay"), "gayety");
    }
}
