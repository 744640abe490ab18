//! Text audits (TestSGD on text): identity terms and where texts mention them
//! ([`terms`]), TF-IDF features ([`tfidf`]), text classifiers and the native TF-IDF + logistic
//! regression ([`classifier`]), the counterfactual term swap ([`counterfactual`]), rule sets and
//! their scores ([`groups`]) and TestSGD's mitigation by retraining ([`mitigate`]).

pub mod classifier;
pub mod counterfactual;
pub mod data;
pub mod groups;
pub mod mitigate;
pub mod onnx_text;
pub mod terms;
pub mod tfidf;

/// A word character as Python's `\w` (scikit-learn's token pattern, the identity terms' word
/// boundaries): a letter or digit that is not a combining mark, or `_`. (Rust's alphanumeric
/// property also counts the vowel signs of Indic scripts and some Arabic marks, which would join
/// words that scikit-learn splits.)
pub fn is_word_char(c: char) -> bool {
    c == '_' || (c.is_alphanumeric() && !unicode_normalization::char::is_combining_mark(c))
}

/// A text classifier whose bias is known by construction, for the text modules' tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::classifier::TextClassifier;
    use crate::error::ModelError;

    /// Toxic (P = 0.9) exactly when the text says "gay", else P = 0.1: a planted bias.
    pub(crate) struct Planted;

    impl TextClassifier for Planted {
        fn predict_texts(&self, texts: &[&str], out: &mut [f64]) -> Result<(), ModelError> {
            for (o, t) in out.iter_mut().zip(texts) {
                *o = if t.to_lowercase().split(|c: char| !c.is_alphanumeric()).any(|w| w == "gay") { 0.9 } else { 0.1 };
            }
            Ok(())
        }
        fn describe(&self) -> String {
            "planted".into()
        }
    }
}
