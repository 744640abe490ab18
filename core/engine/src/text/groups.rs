//! TestSGD on text (§4.1 Eq. 3, §4.2 Algorithm 2, §4.3): rule sets of identity terms, their support,
//! and the group fairness score with its margin, sampling by term replacement.
//!
//! * A rule set R is a set of terms, at most one per category. Its support is the share of texts
//!   that mention every category of R (Eq. 3): those are the texts R's samples can be made from.
//!   Rule sets whose support reaches θ are kept.
//! * A sample of R is a random text mentioning R's categories with every mention of each of those
//!   categories replaced by R's term for it (§4.3: "I am a lesbian" → "I am a gay").
//! * The paper does not say how ¬R is sampled for text; its example compares the texts with R's
//!   terms against "other comments (those without one of these terms or both)". Here a sample of ¬R
//!   is a random text of the data that does not contain every term of R, as it is.
//! * Algorithm 2: pairs are drawn until, after at least `sample_thr`, the margin
//!   ε = z·√(φr(1−φr)/n) + z·√(φ¬r(1−φ¬r)/n) is at most `error_thr` (or `max_samples` pairs); the
//!   score is |φr − φ¬r|, with φ the share predicted class 1.
//!
//! Each rule set has its own random generator (from the seed and its index), so the scores do not
//! depend on how rule sets are batched.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;

use super::classifier::TextClassifier;
use super::terms::{Mention, TermMatcher};
use crate::error::ModelError;

/// A rule set: `(category, term)` pairs, categories increasing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TextRuleSet(pub Vec<(usize, usize)>);

impl TextRuleSet {
    /// The categories, as bits.
    pub fn categories(&self) -> u64 {
        self.0.iter().fold(0, |acc, &(c, _)| acc | (1 << c))
    }

    /// "gay, taoist".
    pub fn describe(&self, matcher: &TermMatcher) -> String {
        self.0.iter().map(|&(c, t)| matcher.terms().terms(c)[t].clone()).collect::<Vec<_>>().join(", ")
    }
}

/// Every rule set over at most `max_categories` categories whose support on texts with the given
/// `mentions` ([`TermMatcher::mentions`] per text) reaches `theta`, with its support.
pub fn frequent_text_rule_sets(
    mentions: &[Vec<Mention>],
    matcher: &TermMatcher,
    theta: f64,
    max_categories: usize,
) -> Vec<(TextRuleSet, f64)> {
    let mentioned: Vec<u64> = mentions.iter().map(|m| TermMatcher::categories_mentioned(m)).collect();
    let n = matcher.terms().n_categories();
    let mut out = Vec::new();
    for subset in 1u64..(1 << n) {
        if subset.count_ones() as usize > max_categories {
            continue;
        }
        let support = mentioned.iter().filter(|&&m| m & subset == subset).count() as f64 / mentioned.len().max(1) as f64;
        if support < theta || support == 0.0 {
            continue;
        }
        let cats: Vec<usize> = (0..n).filter(|c| subset & (1 << c) != 0).collect();
        let mut combos: Vec<Vec<(usize, usize)>> = vec![Vec::new()];
        for &c in &cats {
            combos = combos
                .into_iter()
                .flat_map(|prefix| (0..matcher.terms().terms(c).len()).map(move |t| [prefix.clone(), vec![(c, t)]].concat()))
                .collect();
        }
        out.extend(combos.into_iter().map(|r| (TextRuleSet(r), support)));
    }
    out
}

/// Algorithm 2's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TextScoreSettings {
    /// Pairs before the margin is first checked.
    pub sample_thr: usize,
    /// Target margin.
    pub error_thr: f64,
    /// z of the confidence level.
    pub z: f64,
    /// Pairs at most.
    pub max_samples: usize,
}

/// The score of one rule set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextGroupScore {
    /// The rule set.
    #[serde(skip)]
    pub rule_set: TextRuleSet,
    /// Its terms, "gay, taoist".
    pub rule: String,
    /// Its support.
    pub support: f64,
    /// φr.
    pub rate_in: f64,
    /// φ¬r.
    pub rate_out: f64,
    /// |φr − φ¬r|.
    pub score: f64,
    /// ε at the stop.
    pub margin: f64,
    /// Pairs drawn.
    pub samples: usize,
    /// Whether ε ≤ `error_thr` was reached.
    pub converged: bool,
    /// One generated text of R.
    pub example: String,
}

/// `text` with every mention of each category in `rule` replaced by the rule's term.
pub fn replace_terms(text: &str, mentions: &[Mention], rule: &TextRuleSet, matcher: &TermMatcher) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut last = 0;
    for m in mentions {
        if let Some(&(_, t)) = rule.0.iter().find(|(c, _)| *c == m.category) {
            out.push_str(&text[last..m.start]);
            out.push_str(&matcher.terms().terms(m.category)[t]);
            last = m.end;
        }
    }
    out.push_str(&text[last..]);
    out
}

/// Score every rule set of `rule_sets` (with its support) on `texts`, whose mentions are
/// `mentions`; `seed` seeds the samples.
pub fn score_text_rule_sets(
    texts: &[&str],
    mentions: &[Vec<Mention>],
    matcher: &TermMatcher,
    model: &dyn TextClassifier,
    rule_sets: &[(TextRuleSet, f64)],
    settings: &TextScoreSettings,
    seed: u64,
) -> Result<Vec<TextGroupScore>, ModelError> {
    let mentioned: Vec<u64> = mentions.iter().map(|m| TermMatcher::categories_mentioned(m)).collect();
    let mut scores = Vec::with_capacity(rule_sets.len());
    for (index, (rule, support)) in rule_sets.iter().enumerate() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed.wrapping_add(index as u64));
        let cats = rule.categories();
        let pool: Vec<usize> = (0..texts.len()).filter(|&i| mentioned[i] & cats == cats).collect();
        let satisfies = |i: usize| rule.0.iter().all(|&(c, t)| mentions[i].iter().any(|m| m.category == c && m.term == t));
        let rest: Vec<usize> = (0..texts.len()).filter(|&i| !satisfies(i)).collect();
        if pool.is_empty() || rest.is_empty() {
            continue;
        }
        let (mut hits_in, mut hits_out, mut n) = (0usize, 0usize, 0usize);
        let mut example = String::new();
        let mut margin = f64::INFINITY;
        while n < settings.max_samples {
            let batch = if n == 0 { settings.sample_thr.max(1) } else { 64 };
            let mut generated: Vec<String> = Vec::with_capacity(batch);
            let mut others: Vec<&str> = Vec::with_capacity(batch);
            for _ in 0..batch {
                let i = pool[rng.gen_range(0..pool.len())];
                generated.push(replace_terms(texts[i], &mentions[i], rule, matcher));
                others.push(texts[rest[rng.gen_range(0..rest.len())]]);
            }
            if example.is_empty() {
                example.clone_from(&generated[0]);
            }
            let refs: Vec<&str> = generated.iter().map(String::as_str).collect();
            let (mut p_in, mut p_out) = (vec![0.0; batch], vec![0.0; batch]);
            model.predict_texts(&refs, &mut p_in)?;
            model.predict_texts(&others, &mut p_out)?;
            let mut stop = false;
            for (a, b) in p_in.iter().zip(&p_out) {
                n += 1;
                hits_in += usize::from(*a > 0.5);
                hits_out += usize::from(*b > 0.5);
                let (r_in, r_out) = (hits_in as f64 / n as f64, hits_out as f64 / n as f64);
                margin = settings.z * (r_in * (1.0 - r_in) / n as f64).sqrt() + settings.z * (r_out * (1.0 - r_out) / n as f64).sqrt();
                if n >= settings.sample_thr && margin <= settings.error_thr || n >= settings.max_samples {
                    stop = true;
                    break;
                }
            }
            if stop {
                break;
            }
        }
        let (rate_in, rate_out) = (hits_in as f64 / n as f64, hits_out as f64 / n as f64);
        scores.push(TextGroupScore {
            rule_set: rule.clone(),
            rule: rule.describe(matcher),
            support: *support,
            rate_in,
            rate_out,
            score: (rate_in - rate_out).abs(),
            margin,
            samples: n,
            converged: margin <= settings.error_thr,
            example,
        });
    }
    scores.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(scores)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::terms::IdentityTerms;
    use crate::text::testing::Planted;

    #[test]
    fn the_planted_term_tops_the_ranking_with_the_exact_rates() {
        let m = IdentityTerms::paper().matcher();
        let texts: Vec<String> = (0..200)
            .map(|i| match i % 4 {
                0 => format!("comment {i} by a lesbian"),
                1 => format!("comment {i} about a muslim"),
                2 => format!("a gay and christian comment {i}"),
                _ => format!("plain comment {i}"),
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mentions: Vec<Vec<Mention>> = refs.iter().map(|t| m.mentions(t)).collect();
        let sets = frequent_text_rule_sets(&mentions, &m, 0.05, 2);
        // gender (50%), religion (50%), gender ∧ religion (25%): 14 + 9 + 14·9 rule sets.
        assert_eq!(sets.len(), 14 + 9 + 126);
        let settings = TextScoreSettings { sample_thr: 1000, error_thr: 0.05, z: 1.96, max_samples: 20_000 };
        let scores = score_text_rule_sets(&refs, &mentions, &m, &Planted, &sets, &settings, 3).unwrap();
        let top = &scores[0];
        // Samples of any rule set with "gay" say it: φr = 1; the rest are the texts without "gay"
        // (150 of 200), never toxic: φ¬r = 0.
        assert!(top.rule.contains("gay") && top.rate_in == 1.0 && top.rate_out == 0.0, "{top:?}");
        let lesbian = scores.iter().find(|s| s.rule == "lesbian").unwrap();
        // Samples of {lesbian} never say gay; the rest (all but the 50 lesbian texts) say it in 50 of 150.
        assert_eq!(lesbian.rate_in, 0.0);
        assert!((lesbian.rate_out - 1.0 / 3.0).abs() < 0.05, "{lesbian:?}");
        assert!(scores.iter().all(|s| s.samples >= 1000));
    }
}
