//! TestSGD's mitigation on text (RQ3): new training texts for the worst rule set R, and the group
//! score measured the same way before and after retraining.
//!
//! * The texts are made as R's samples are (§4.3): every text mentioning each of R's categories,
//!   with those mentions replaced by R's terms. A text that the replacement leaves unchanged is not
//!   new and is left out, as are repeats.
//! * "We only select those generated instances with the opposite label" (§5, RQ3): of those, the
//!   texts the original model gives the class R is given *less* often than the rest, labelled as the
//!   original model labels them (the paper's COMPAS example keeps the generated instances "labeled
//!   as 'True' according to the original model"). For a toxicity model that calls texts saying "gay"
//!   toxic too often, these are the texts saying "gay" that it still calls non-toxic.
//! * They are shuffled with the stage's seed, so that the first n of them, added in growing amounts,
//!   are not the first n comments of the file.

use std::collections::HashSet;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::classifier::TextClassifier;
use super::groups::{replace_terms, score_text_rule_sets, TextGroupScore, TextRuleSet, TextScoreSettings};
use super::terms::{Mention, TermMatcher};
use crate::error::{Error, ModelError};

/// The texts generated for `rule` from `texts` (whose mentions are `mentions`) that `model` gives
/// class `label`, distinct, differing from their source, in an order shuffled by `seed`; and how
/// many generated texts the model scored.
pub fn mitigation_texts(
    texts: &[&str],
    mentions: &[Vec<Mention>],
    matcher: &TermMatcher,
    rule: &TextRuleSet,
    model: &dyn TextClassifier,
    label: u8,
    seed: u64,
) -> Result<(Vec<String>, usize), ModelError> {
    let categories = rule.categories();
    let mut seen = HashSet::new();
    let generated: Vec<String> = texts
        .iter()
        .zip(mentions)
        .filter(|(_, m)| TermMatcher::categories_mentioned(m) & categories == categories)
        .filter_map(|(text, m)| {
            let new = replace_terms(text, m, rule, matcher);
            (new != *text && seen.insert(new.clone())).then_some(new)
        })
        .collect();
    let scored = generated.len();
    let mut p = vec![0.0; scored];
    model.predict_texts(&generated.iter().map(String::as_str).collect::<Vec<_>>(), &mut p)?;
    let mut kept: Vec<String> = generated.into_iter().zip(&p).filter(|(_, &q)| u8::from(q > 0.5) == label).map(|(t, _)| t).collect();
    kept.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed));
    Ok((kept, scored))
}

/// `rule`'s score under `model` on exactly `pairs` pairs drawn with `seed` (Algorithm 2's sampling
/// without its early stop), so that scores of different models are measured on the same texts.
#[allow(clippy::too_many_arguments)]
pub fn fixed_score(
    texts: &[&str],
    mentions: &[Vec<Mention>],
    matcher: &TermMatcher,
    model: &dyn TextClassifier,
    rule: &TextRuleSet,
    support: f64,
    pairs: usize,
    seed: u64,
) -> Result<TextGroupScore, Error> {
    let settings = TextScoreSettings { sample_thr: pairs, error_thr: 0.0, z: 1.96, max_samples: pairs };
    score_text_rule_sets(texts, mentions, matcher, model, &[(rule.clone(), support)], &settings, seed)?.pop().ok_or_else(|| {
        Error::Invalid(format!(
            "cannot sample {{{}}}: no text mentions its categories, or every text says all its terms",
            rule.describe(matcher)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::terms::IdentityTerms;
    use crate::text::testing::Planted;

    #[test]
    fn only_new_texts_the_model_calls_non_toxic_are_kept() {
        let m = IdentityTerms::paper().matcher();
        let texts = ["a lesbian wrote this", "a lesbian wrote this", "the gay one", "hello", "my muslim friend", "lesbian gay"];
        let mentions: Vec<Vec<Mention>> = texts.iter().map(|t| m.mentions(t)).collect();
        let gay =
            TextRuleSet(vec![(m.terms().category_index("gender").unwrap(), m.terms().terms(0).iter().position(|t| t == "gay").unwrap())]);
        // Planted calls every text saying "gay" toxic: none of R's texts has the opposite label 0.
        let (none, scored) = mitigation_texts(&texts, &mentions, &m, &gay, &Planted, 0, 1).unwrap();
        assert!(none.is_empty());
        assert_eq!(scored, 2, "\"a gay wrote this\" and \"gay gay\" are new");
        // With label 1: "a gay wrote this" once (the repeat dropped); "the gay one" is unchanged
        // and "lesbian gay" becomes "gay gay".
        let (mut kept, _) = mitigation_texts(&texts, &mentions, &m, &gay, &Planted, 1, 1).unwrap();
        kept.sort();
        assert_eq!(kept, ["a gay wrote this", "gay gay"]);
    }

    #[test]
    fn the_fixed_score_draws_exactly_the_pairs_asked() {
        let m = IdentityTerms::paper().matcher();
        let texts: Vec<String> = (0..100).map(|i| if i % 2 == 0 { format!("a lesbian, {i}") } else { format!("plain {i}") }).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mentions: Vec<Vec<Mention>> = refs.iter().map(|t| m.mentions(t)).collect();
        let gay = TextRuleSet(vec![(0, m.terms().terms(0).iter().position(|t| t == "gay").unwrap())]);
        let s = fixed_score(&refs, &mentions, &m, &Planted, &gay, 0.5, 777, 3).unwrap();
        assert_eq!((s.samples, s.rate_in, s.rate_out, s.score), (777, 1.0, 0.0, 1.0));
    }
}
