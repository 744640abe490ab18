//! The report's sections of a text audit: the texts and their identity terms, the text models, the
//! counterfactual swaps with example pairs, the ranked identity-term groups with an example text
//! each, and the mitigation by retraining.

use serde::{Deserialize, Serialize};

use super::charts::BarChart;
use super::{named, ranked_bars, section_id, Problem, Stages};
use crate::output::Table;
use crate::stage::ArtifactKind;
use crate::stages::check_text::CheckTextFigures;
use crate::stages::group_score_text::GroupScoreTextFigures;
use crate::stages::load_text::LoadTextFigures;
use crate::stages::retrain_text::RetrainTextFigures;
use crate::text::is_word_char;

/// Characters of a text shown around its identity term.
const EXCERPT: usize = 110;

/// Texts shown per `check_text` stage, one label-changing swap each.
const SWAPS_SHOWN: usize = 8;

/// A text audit's stages as `text.html` shows them, in the order of the audit.
#[derive(Serialize)]
pub(super) struct TextView {
    loads: Vec<minijinja::Value>,
    models: Vec<TextModelRow>,
    swaps: Vec<SwapsView>,
    groups: Vec<TermGroupsView>,
    retrains: Vec<minijinja::Value>,
}

/// Every text section's view; a stage whose figures do not read goes to `problems`.
pub(super) fn text_sections(problems: &mut Vec<Problem>, stages: &Stages<'_>, tables: &[(String, Table)]) -> TextView {
    let loads = stages.of::<LoadTextFigures>(problems);
    let models = stages.giving::<TextModelView>(problems, ArtifactKind::TextModel);
    let checks = stages.of::<CheckTextFigures>(problems);
    let groups = stages.of::<GroupScoreTextFigures>(problems);
    let retrains = stages.of::<RetrainTextFigures>(problems);
    TextView {
        loads: named(stages, &loads),
        models: models
            .into_iter()
            .map(|(name, f)| TextModelRow {
                name,
                // A retrained model (measured to be compared, not audited) is read after retraining.
                accuracy_test: if crate::stages::meaning(&f.kind).audits_its_model { f.accuracy_test } else { f.accuracy_after },
                model: f.model,
                accuracy_train: f.accuracy_train,
            })
            .collect(),
        swaps: checks.into_iter().map(|(n, f)| swaps_view(n, f, tables)).collect(),
        groups: groups.into_iter().map(|(n, f)| term_groups_view(n, f)).collect(),
        retrains: named(stages, &retrains),
    }
}

/// A text around its identity term: `before` and `after` the term (with "…" where cut), or the
/// text's start alone when the term is not found.
#[derive(Debug, PartialEq, Serialize)]
struct Excerpt {
    before: String,
    term: Option<String>,
    after: String,
}

/// `text` cut to about [`EXCERPT`] characters around the first mention of `term`
/// (case-insensitive, on word boundaries), the term apart for marking.
fn excerpt(text: &str, term: &str) -> Excerpt {
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
        let ellipsis = if cut.len() < text.len() { "…" } else { "" };
        return Excerpt { before: format!("{cut}{ellipsis}"), term: None, after: String::new() };
    };
    let end = start + term.len();
    let at = chars.iter().position(|&(b, _)| b == start).unwrap_or(0);
    let from = chars[at.saturating_sub(EXCERPT)].0;
    let to_index = chars.iter().position(|&(b, _)| b >= end).unwrap_or(chars.len());
    let to = chars.get(to_index + EXCERPT).map_or(text.len(), |&(b, _)| b);
    Excerpt {
        before: format!("{}{}", if from > 0 { "…" } else { "" }, &text[from..start]),
        term: Some(text[start..end].to_string()),
        after: format!("{}{}", &text[end..to], if to < text.len() { "…" } else { "" }),
    }
}

/// What the text-model table shows of a stage giving a text model (`train_text`,
/// `load_text_model`, `retrain_text`: the figures all three write).
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

/// A row of the text-model table (a retrained model's test accuracy is its accuracy after).
#[derive(Serialize)]
struct TextModelRow {
    name: String,
    model: String,
    accuracy_train: Option<f64>,
    accuracy_test: Option<f64>,
}

/// A `check_text` stage with a label-changing swap of each of its first texts that have one.
#[derive(Serialize)]
struct SwapsView {
    name: String,
    id: String,
    f: CheckTextFigures,
    examples: Vec<SwapExample>,
}

/// A label-changing swap: the terms, the probabilities of class 1 and the two texts.
#[derive(Serialize)]
struct SwapExample {
    term: String,
    term_counterpart: String,
    p: f64,
    text: Excerpt,
    p_after: f64,
    text_after: Excerpt,
}

fn swaps_view(n: String, f: CheckTextFigures, tables: &[(String, Table)]) -> SwapsView {
    let mut examples = Vec::new();
    if let Some(t) = tables.iter().find(|(s, _)| *s == n).map(|(_, t)| &t.frame) {
        // The first label-changing swap of each of the first texts that have one.
        let mut seen = std::collections::HashSet::new();
        let rows: Vec<usize> = (0..t.height()).filter(|&r| seen.insert(super::cell(t, "row", r))).take(SWAPS_SHOWN).collect();
        for r in rows {
            let c = |col: &str| super::cell(t, col, r);
            let term = c("term");
            let term_counterpart = c("term_counterpart");
            examples.push(SwapExample {
                p: c("probability").parse().unwrap_or(f64::NAN),
                // A text mentioning several terms of the category lists them as "gay/straight".
                text: excerpt(&c("text"), term.split('/').next().unwrap_or("")),
                p_after: c("probability_counterpart").parse().unwrap_or(f64::NAN),
                text_after: excerpt(&c("text_counterpart"), &term_counterpart),
                term,
                term_counterpart,
            });
        }
    }
    SwapsView { id: section_id(&n), name: n, f, examples }
}

/// A `group_score_text` stage: its ranked groups, an example text of each, and their chart.
#[derive(Serialize)]
struct TermGroupsView {
    name: String,
    id: String,
    f: GroupScoreTextFigures,
    /// An example text of each group, its first term marked.
    examples: Vec<Excerpt>,
    chart: BarChart,
}

fn term_groups_view(n: String, f: GroupScoreTextFigures) -> TermGroupsView {
    let examples = f.top.iter().map(|g| excerpt(&g.example, g.rule.split(", ").next().unwrap_or(""))).collect();
    let bars: Vec<(String, f64, f64, bool)> = f.top.iter().map(|g| (g.rule.clone(), g.score, g.margin, g.significant)).collect();
    let chart = ranked_bars(
        "Identity-term groups by score",
        &bars,
        "|P(class 1 | texts with the terms) − P(class 1 | the rest)| (whisker: ± margin)",
    );
    TermGroupsView { id: section_id(&n), name: n, f, examples, chart }
}

#[cfg(test)]
mod tests {
    use super::{excerpt, Excerpt};

    /// The excerpt of `text` around `term` as the page shows it, the term in `[` `]`.
    fn shown(text: &str, term: &str) -> String {
        let Excerpt { before, term, after } = excerpt(text, term);
        format!("{before}{}{after}", term.map(|t| format!("[{t}]")).unwrap_or_default())
    }

    #[test]
    fn an_excerpt_marks_the_term_and_cuts_long_texts_around_it() {
        assert_eq!(
            excerpt("I am a Gay <man>", "gay"),
            Excerpt { before: "I am a ".into(), term: Some("Gay".into()), after: " <man>".into() }
        );
        let long = format!("{}the gay one{}", "x".repeat(300), "y".repeat(300));
        let e = shown(&long, "gay");
        assert!(e.starts_with('…') && e.ends_with('…') && e.contains("[gay]"), "{e}");
        assert!(e.chars().count() < 240);
        // Only whole words are marked.
        assert_eq!(shown("Catholicism, catholic", "catholic"), "Catholicism, [catholic]");
        // No mention (or a lower-casing that changes lengths): the start of the text.
        assert_eq!(excerpt("İstanbul gay", "gay"), Excerpt { before: "İstanbul gay".into(), term: None, after: String::new() });
        assert_eq!(shown("gayety", "gay"), "gayety");
        let e = shown(&"z".repeat(300), "gay");
        assert_eq!(e.chars().count(), 221, "cut at twice the context, with an ellipsis");
    }
}
