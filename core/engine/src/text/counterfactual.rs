//! The counterfactual swap on text (Dixon et al.'s and Garg et al.'s counterfactual token
//! fairness): a text whose predicted label changes when the identity terms of one category are
//! replaced by another term of that category is a discriminatory instance. Every text is tried with
//! every other term of every category it mentions, all swapped texts scored in one batch.
//!
//! A data set can also bring its own counterfactuals: twin texts with the identity terms already
//! swapped, row by row (Dixon et al.'s "fuzzed" comments). [`check_twins`] scores both sides.

use serde::Serialize;

use super::classifier::TextClassifier;
use super::terms::{IdentityTerms, Mention, TermMatcher};
use crate::error::ModelError;

/// One discriminatory swap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwapCase {
    /// Index of the text.
    pub row: usize,
    /// The category swapped.
    pub category: String,
    /// The term(s) the text had in that category (`/`-joined when several).
    pub from: String,
    /// The term put in their place.
    pub to: String,
    /// The text.
    pub text: String,
    /// The swapped text.
    pub swapped: String,
    /// P(class 1) of the text.
    pub p: f64,
    /// P(class 1) of the swapped text.
    pub p_swapped: f64,
}

/// What the check found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwapReport {
    /// Texts checked.
    pub texts: usize,
    /// Texts that mention an identity term (the only ones a swap can change).
    pub texts_with_terms: usize,
    /// Swapped texts scored.
    pub swaps: usize,
    /// Texts with at least one label-changing swap.
    pub texts_discriminated: usize,
    /// Every label-changing swap, by text then category then term.
    pub cases: Vec<SwapCase>,
}

/// Try every text of `texts` with every other term of each category it mentions; a swap that
/// changes the predicted label (P > 0.5) is a case.
pub fn check_swaps(texts: &[&str], matcher: &TermMatcher, model: &dyn TextClassifier) -> Result<SwapReport, ModelError> {
    let terms = matcher.terms();
    let mentions: Vec<Vec<Mention>> = texts.iter().map(|t| matcher.mentions(t)).collect();
    // (text, category, term) of every swap, and its text.
    let mut swaps: Vec<(usize, usize, usize)> = Vec::new();
    let mut swapped: Vec<String> = Vec::new();
    for (i, (text, found)) in texts.iter().zip(&mentions).enumerate() {
        for c in 0..terms.n_categories() {
            let own: Vec<usize> = found.iter().filter(|m| m.category == c).map(|m| m.term).collect();
            if own.is_empty() {
                continue;
            }
            for t in 0..terms.terms(c).len() {
                if own.iter().all(|&o| o == t) {
                    continue;
                }
                if let Some(s) = matcher.replace(text, found, c, t) {
                    swaps.push((i, c, t));
                    swapped.push(s);
                }
            }
        }
    }
    let p = probabilities(model, texts)?;
    let q = probabilities(model, &swapped.iter().map(String::as_str).collect::<Vec<_>>())?;
    let mut cases = Vec::new();
    let mut discriminated = vec![false; texts.len()];
    for ((&(i, c, t), s), &ps) in swaps.iter().zip(swapped).zip(&q) {
        if (p[i] > 0.5) != (ps > 0.5) {
            discriminated[i] = true;
            let mut from: Vec<&str> = mentions[i].iter().filter(|m| m.category == c).map(|m| terms.terms(c)[m.term].as_str()).collect();
            from.dedup();
            cases.push(SwapCase {
                row: i,
                category: terms.category(c).to_string(),
                from: from.join("/"),
                to: terms.terms(c)[t].clone(),
                text: texts[i].to_string(),
                swapped: s,
                p: p[i],
                p_swapped: ps,
            });
        }
    }
    Ok(SwapReport {
        texts: texts.len(),
        texts_with_terms: mentions.iter().filter(|m| !m.is_empty()).count(),
        swaps: swaps.len(),
        texts_discriminated: discriminated.iter().filter(|&&d| d).count(),
        cases,
    })
}

/// P(class 1) of each of `texts`; an error when the model returns anything but a finite number.
fn probabilities(model: &dyn TextClassifier, texts: &[&str]) -> Result<Vec<f64>, ModelError> {
    let mut p = vec![0.0; texts.len()];
    model.predict_texts(texts, &mut p)?;
    match p.iter().position(|v| !v.is_finite()) {
        Some(k) => Err(ModelError::Inference(format!("the text model returned {} for text {k}: not a probability", p[k]))),
        None => Ok(p),
    }
}

/// Score each text of `texts` and its twin (`twins[i]`, the same text with identity terms swapped);
/// a pair whose texts differ and whose predicted labels differ is a case. The case's category and
/// terms are those the twin changes (`/`-joined; empty when the texts differ elsewhere only).
pub fn check_twins(texts: &[&str], twins: &[&str], matcher: &TermMatcher, model: &dyn TextClassifier) -> Result<SwapReport, ModelError> {
    let terms = matcher.terms();
    // A twin equal to its text cannot change the label: only the differing pairs are scored.
    let differing: Vec<usize> = (0..texts.len()).filter(|&i| texts[i] != twins[i]).collect();
    let p = probabilities(model, &differing.iter().map(|&i| texts[i]).collect::<Vec<_>>())?;
    let q = probabilities(model, &differing.iter().map(|&i| twins[i]).collect::<Vec<_>>())?;
    let mut cases = Vec::new();
    for (k, &i) in differing.iter().enumerate() {
        let (text, twin) = (texts[i], twins[i]);
        if (p[k] > 0.5) == (q[k] > 0.5) {
            continue;
        }
        let named = |found: &[Mention]| -> Vec<(usize, String)> {
            let mut v: Vec<(usize, String)> = found.iter().map(|m| (m.category, terms.terms(m.category)[m.term].clone())).collect();
            v.sort();
            v.dedup();
            v
        };
        let (own, other) = (named(&matcher.mentions(text)), named(&matcher.mentions(twin)));
        let only = |a: &[(usize, String)], b: &[(usize, String)]| -> Vec<(usize, String)> {
            a.iter().filter(|x| !b.contains(x)).cloned().collect()
        };
        let (from, to) = (only(&own, &other), only(&other, &own));
        let mut categories: Vec<usize> = from.iter().chain(&to).map(|(c, _)| *c).collect();
        categories.sort_unstable();
        categories.dedup();
        let join = |v: &[(usize, String)]| v.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join("/");
        cases.push(SwapCase {
            row: i,
            category: categories.iter().map(|&c| terms.category(c)).collect::<Vec<_>>().join("/"),
            from: join(&from),
            to: join(&to),
            text: text.to_string(),
            swapped: twin.to_string(),
            p: p[k],
            p_swapped: q[k],
        });
    }
    let n = differing.len();
    Ok(SwapReport { texts: texts.len(), texts_with_terms: n, swaps: n, texts_discriminated: cases.len(), cases })
}

/// How many texts mention each term and each category, from each text's mentions
/// ([`TermMatcher::mentions`]): `(category, term or None for the category as a whole, texts)`, in
/// the terms' order.
pub fn term_counts(mentions: &[Vec<Mention>], terms: &IdentityTerms) -> Vec<(String, Option<String>, usize)> {
    let mut per_term: Vec<Vec<usize>> = (0..terms.n_categories()).map(|c| vec![0; terms.terms(c).len()]).collect();
    let mut per_category = vec![0; terms.n_categories()];
    for found in mentions {
        let mut seen_term: Vec<(usize, usize)> = found.iter().map(|m| (m.category, m.term)).collect();
        seen_term.sort_unstable();
        seen_term.dedup();
        for &(c, t) in &seen_term {
            per_term[c][t] += 1;
        }
        let mut cats: Vec<usize> = seen_term.iter().map(|&(c, _)| c).collect();
        cats.dedup();
        for c in cats {
            per_category[c] += 1;
        }
    }
    let mut out = Vec::new();
    for c in 0..terms.n_categories() {
        out.push((terms.category(c).to_string(), None, per_category[c]));
        for (t, &n) in per_term[c].iter().enumerate() {
            out.push((terms.category(c).to_string(), Some(terms.terms(c)[t].clone()), n));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::terms::IdentityTerms;
    use crate::text::testing::Planted;

    /// Returns NaN for every text.
    struct Broken;

    impl TextClassifier for Broken {
        fn predict_texts(&self, _texts: &[&str], out: &mut [f64]) -> Result<(), ModelError> {
            out.fill(f64::NAN);
            Ok(())
        }
        fn describe(&self) -> String {
            "broken".into()
        }
    }

    #[test]
    fn twins_score_only_differing_pairs_and_a_nan_model_is_refused() {
        let m = IdentityTerms::paper().matcher();
        let texts = ["I am a lesbian", "I am gay", "same text"];
        let twins = ["I am a gay", "I am a christian", "same text"];
        let report = check_twins(&texts, &twins, &m, &Planted).unwrap();
        assert_eq!((report.texts, report.swaps, report.texts_discriminated), (3, 2, 2));
        let c = &report.cases[1];
        assert_eq!((c.row, c.category.as_str(), c.from.as_str(), c.to.as_str()), (1, "gender/religion", "gay", "christian"));
        for err in [check_twins(&texts, &twins, &m, &Broken).unwrap_err(), check_swaps(&texts, &m, &Broken).unwrap_err()] {
            assert!(err.to_string().contains("returned NaN for text 0: not a probability"), "{err}");
        }
    }

    #[test]
    fn swaps_find_exactly_the_planted_term() {
        let m = IdentityTerms::paper().matcher();
        let texts = ["I am a lesbian", "I am gay and old", "nothing here", "a muslim teacher"];
        let report = check_swaps(&texts, &m, &Planted).unwrap();
        assert_eq!((report.texts, report.texts_with_terms), (4, 3));
        // lesbian → 13 other gender terms; gay → 13, old → 7; muslim → 8.
        assert_eq!(report.swaps, 13 + 13 + 7 + 8);
        assert_eq!(report.texts_discriminated, 2);
        // "lesbian" → "gay" flips to toxic; "gay" → any of the 13 other gender terms flips back.
        assert_eq!(report.cases.len(), 1 + 13);
        let first = &report.cases[0];
        assert_eq!((first.row, first.from.as_str(), first.to.as_str(), first.swapped.as_str()), (0, "lesbian", "gay", "I am a gay"));
        assert!(report.cases[1..].iter().all(|c| c.row == 1
            && c.category == "gender"
            && c.from == "gay"
            && c.p > 0.5
            && c.p_swapped < 0.5));
        let mentions: Vec<_> = texts.iter().map(|t| m.mentions(t)).collect();
        let counts = term_counts(&mentions, m.terms());
        assert!(counts.contains(&("gender".into(), None, 2)));
        assert!(counts.contains(&("gender".into(), Some("gay".into()), 1)));
        assert!(counts.contains(&("religion".into(), None, 1)));
    }
}
