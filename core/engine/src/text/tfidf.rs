//! TF-IDF features of texts, as scikit-learn's `TfidfVectorizer` computes them with its defaults
//! (checked against it on the Wikipedia Talk comments in the tests): texts lower-cased, tokens are
//! maximal runs of two or more word characters (`(?u)\b\w\w+\b`), term counts weighted by the
//! smoothed idf ln((1 + n) / (1 + df)) + 1, each row scaled to unit Euclidean length; the
//! vocabulary is every token of the training texts, in sorted order.

use std::collections::HashMap;

/// A sparse row: (feature index, value), indices increasing.
pub type SparseRow = Vec<(u32, f64)>;

/// A fitted vectorizer: vocabulary and idf weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Tfidf {
    /// Tokens in feature order (sorted).
    vocabulary: Vec<String>,
    /// idf of each feature.
    idf: Vec<f64>,
    /// Feature index of each token.
    index: HashMap<String, u32>,
}

/// The tokens of `text`: lower-cased maximal runs of at least two word characters
/// ([`super::is_word_char`]).
pub fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !super::is_word_char(c)).filter(|t| t.chars().nth(1).is_some()).map(str::to_lowercase)
}

impl Tfidf {
    /// Learn the vocabulary and idf of `texts`.
    pub fn fit<S: AsRef<str>>(texts: &[S]) -> Self {
        let mut df: HashMap<String, u64> = HashMap::new();
        for text in texts {
            let mut seen: Vec<String> = tokens(text.as_ref()).collect();
            seen.sort_unstable();
            seen.dedup();
            for t in seen {
                *df.entry(t).or_default() += 1;
            }
        }
        let mut vocabulary: Vec<String> = df.keys().cloned().collect();
        vocabulary.sort_unstable();
        let n = texts.len() as f64;
        let idf = vocabulary.iter().map(|t| ((1.0 + n) / (1.0 + df[t] as f64)).ln() + 1.0).collect();
        let index = vocabulary.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        Tfidf { vocabulary, idf, index }
    }

    /// Number of features.
    pub fn n_features(&self) -> usize {
        self.vocabulary.len()
    }

    /// The vocabulary, in feature order.
    pub fn vocabulary(&self) -> &[String] {
        &self.vocabulary
    }

    /// The features of `text` (tokens outside the vocabulary are ignored; a text with none is
    /// the empty row).
    pub fn transform(&self, text: &str) -> SparseRow {
        let mut counts: HashMap<u32, f64> = HashMap::new();
        for t in tokens(text) {
            if let Some(&i) = self.index.get(&t) {
                *counts.entry(i).or_default() += 1.0;
            }
        }
        let mut row: SparseRow = counts.into_iter().map(|(i, c)| (i, c * self.idf[i as usize])).collect();
        row.sort_unstable_by_key(|&(i, _)| i);
        let norm = row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
        if norm > 0.0 {
            row.iter_mut().for_each(|(_, v)| *v /= norm);
        }
        row
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_runs_of_two_or_more_word_characters_lower_cased() {
        let t: Vec<String> = tokens("I'm a GAY_person, don't-care 42 x9 é").collect();
        assert_eq!(t, ["gay_person", "don", "care", "42", "x9"]);
        // A Bengali vowel sign (a combining mark) splits words, as in Python's `\w`.
        let t: Vec<String> = tokens("\u{9ae}\u{9b8}\u{9cb}\u{9ae}\u{9b8}").collect();
        assert_eq!(t, ["\u{9ae}\u{9b8}", "\u{9ae}\u{9b8}"]);
    }

    #[test]
    fn smoothed_idf_and_unit_rows_as_scikit_learn() {
        // Computed by hand: n = 3; "the" in all three (idf 1), "cat" in one (idf ln(4/2) + 1).
        let tf = Tfidf::fit(&["the cat", "the dog", "the the"]);
        assert_eq!(tf.vocabulary(), ["cat", "dog", "the"]);
        let row = tf.transform("The cat and the CAT");
        let idf_cat = 2f64.ln() + 1.0;
        let (cat, the) = (2.0 * idf_cat, 2.0);
        let norm = (cat * cat + the * the).sqrt();
        assert_eq!(row.len(), 2);
        assert!((row[0].1 - cat / norm).abs() < 1e-12 && row[0].0 == 0);
        assert!((row[1].1 - the / norm).abs() < 1e-12 && row[1].0 == 2);
        assert!(tf.transform("unknown words only").is_empty());
    }
}
