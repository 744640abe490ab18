//! Identity terms in text (TestSGD §4.1 and Table 1, from Dixon et al., AIES 2018): categories of
//! terms, where a text mentions them, and the text with a category's mentions replaced by another
//! term — the counterfactual swap and TestSGD's sampling by term replacement (§4.3).
//!
//! Matching is case-insensitive on word boundaries (a term is not matched inside a longer word:
//! `trans` is not found in `transport`, `lgbt` not in `lgbtq`); the words of a multi-word term
//! (`african american`, `middle aged`) may be separated by any run of spaces or hyphens
//! (`middle-aged`). Where terms overlap, the longest match at the leftmost position wins
//! (`african american` is one mention, of that term, not of `african` and `american`). Word
//! characters are letters, digits and `_`, as in Python's `\w`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The paper's Table 1: 48 identity terms in four categories.
pub const PAPER_TERMS: &[(&str, &[&str])] = &[
    (
        "gender",
        &[
            "lesbian",
            "gay",
            "bisexual",
            "transgender",
            "trans",
            "queer",
            "lgbt",
            "lgbtq",
            "homosexual",
            "straight",
            "heterosexual",
            "male",
            "female",
            "nonbinary",
        ],
    ),
    (
        "race",
        &[
            "african",
            "african american",
            "black",
            "white",
            "european",
            "hispanic",
            "latino",
            "latina",
            "latinx",
            "mexican",
            "canadian",
            "american",
            "asian",
            "indian",
            "middle eastern",
            "chinese",
            "japanese",
        ],
    ),
    ("religion", &["christian", "muslim", "jewish", "buddhist", "catholic", "protestant", "sikh", "taoist", "atheist"]),
    ("age", &["old", "older", "young", "younger", "teenage", "millennial", "middle aged", "elderly"]),
];

/// Categories of identity terms, in order; terms are kept lower-case with single spaces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdentityTerms {
    categories: Vec<(String, Vec<String>)>,
}

/// Why a list of identity terms cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TermsError {
    /// A category has no term.
    #[error("identity-term category `{0}` has no term")]
    EmptyCategory(String),
    /// A term is empty or has no word character.
    #[error("identity term {term:?} of category `{category}` has no word character")]
    EmptyTerm {
        /// Its category.
        category: String,
        /// The term as given.
        term: String,
    },
    /// A term appears in two categories (or twice).
    #[error("identity term `{term}` is in both `{first}` and `{second}`; a term belongs to one category")]
    Duplicate {
        /// The term.
        term: String,
        /// Its first category.
        first: String,
        /// The other.
        second: String,
    },
}

/// Lower-case and join the words of `term` with single spaces (hyphens and runs of spaces are
/// word separators, as in matching).
fn normalise(term: &str) -> String {
    term.split(|c: char| c.is_whitespace() || c == '-').filter(|w| !w.is_empty()).map(str::to_lowercase).collect::<Vec<_>>().join(" ")
}

impl IdentityTerms {
    /// The paper's Table 1.
    pub fn paper() -> Self {
        let categories = PAPER_TERMS.iter().map(|(c, terms)| (c.to_string(), terms.iter().map(|t| t.to_string()).collect())).collect();
        IdentityTerms { categories }
    }

    /// Categories as given, in order (each term normalised); refuses an empty category or term and
    /// a term in two categories.
    pub fn new(categories: Vec<(String, Vec<String>)>) -> Result<Self, TermsError> {
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        let mut out = Vec::with_capacity(categories.len());
        for (category, terms) in categories {
            if terms.is_empty() {
                return Err(TermsError::EmptyCategory(category));
            }
            let mut list = Vec::with_capacity(terms.len());
            for term in terms {
                let t = normalise(&term);
                if t.is_empty() || !t.chars().any(super::is_word_char) {
                    return Err(TermsError::EmptyTerm { category, term });
                }
                if let Some(first) = seen.insert(t.clone(), category.clone()) {
                    return Err(TermsError::Duplicate { term: t, first, second: category });
                }
                list.push(t);
            }
            out.push((category, list));
        }
        Ok(IdentityTerms { categories: out })
    }

    /// The paper's categories with some replaced (`overrides` whose name is a paper category) or
    /// added (any other name, after the paper's), e.g. from a pipeline's `terms.gender = [...]`.
    pub fn paper_with(overrides: &BTreeMap<String, Vec<String>>) -> Result<Self, TermsError> {
        let mut categories: Vec<(String, Vec<String>)> = IdentityTerms::paper().categories;
        for (name, terms) in overrides {
            match categories.iter_mut().find(|(c, _)| c == name) {
                Some((_, list)) => list.clone_from(terms),
                None => categories.push((name.clone(), terms.clone())),
            }
        }
        IdentityTerms::new(categories)
    }

    /// Category names, in order.
    pub fn category_names(&self) -> impl Iterator<Item = &str> {
        self.categories.iter().map(|(c, _)| c.as_str())
    }

    /// Number of categories.
    pub fn n_categories(&self) -> usize {
        self.categories.len()
    }

    /// The terms of category `c`.
    pub fn terms(&self, c: usize) -> &[String] {
        &self.categories[c].1
    }

    /// The name of category `c`.
    pub fn category(&self, c: usize) -> &str {
        &self.categories[c].0
    }

    /// Index of the category named `name`.
    pub fn category_index(&self, name: &str) -> Option<usize> {
        self.categories.iter().position(|(c, _)| c == name)
    }

    /// Every term with its category and index in it.
    pub fn all_terms(&self) -> impl Iterator<Item = (usize, usize, &str)> {
        self.categories.iter().enumerate().flat_map(|(c, (_, terms))| terms.iter().enumerate().map(move |(t, s)| (c, t, s.as_str())))
    }

    /// A matcher for these terms.
    pub fn matcher(&self) -> TermMatcher {
        let mut patterns: Vec<Pattern> = self
            .all_terms()
            .map(|(category, term, text)| Pattern { words: text.split(' ').map(str::to_string).collect(), category, term })
            .collect();
        // Longest first, so that the first pattern to match at a position is the longest.
        patterns.sort_by_key(|p| std::cmp::Reverse(p.words.iter().map(String::len).sum::<usize>() + p.words.len()));
        TermMatcher { terms: self.clone(), patterns }
    }
}

/// One mention of an identity term: byte offsets into the text as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mention {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// Category index.
    pub category: usize,
    /// Term index within the category.
    pub term: usize,
}

#[derive(Debug, Clone)]
struct Pattern {
    words: Vec<String>,
    category: usize,
    term: usize,
}

/// Finds identity-term mentions ([`IdentityTerms::matcher`]).
#[derive(Debug, Clone)]
pub struct TermMatcher {
    terms: IdentityTerms,
    patterns: Vec<Pattern>,
}

/// `text` lower-cased, with the byte offset in `text` of every byte of the lower-cased copy (one
/// more entry for its end).
fn lowered(text: &str) -> (String, Vec<usize>) {
    let mut lower = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len() + 1);
    for (b, c) in text.char_indices() {
        for l in c.to_lowercase() {
            let before = lower.len();
            lower.push(l);
            origin.extend(std::iter::repeat_n(b, lower.len() - before));
        }
    }
    origin.push(text.len());
    (lower, origin)
}

impl TermMatcher {
    /// The terms it matches.
    pub fn terms(&self) -> &IdentityTerms {
        &self.terms
    }

    /// Every mention in `text`, left to right, not overlapping.
    pub fn mentions(&self, text: &str) -> Vec<Mention> {
        let (lower, origin) = lowered(text);
        let bytes = lower.as_bytes();
        let mut found = Vec::new();
        let mut pos = 0;
        while pos < lower.len() {
            let c = lower[pos..].chars().next().expect("pos is a char boundary");
            let at_word_start = super::is_word_char(c) && lower[..pos].chars().next_back().is_none_or(|p| !super::is_word_char(p));
            if at_word_start {
                if let Some((p, end)) = self.patterns.iter().find_map(|p| match_at(&lower, bytes, pos, &p.words).map(|end| (p, end))) {
                    found.push(Mention { start: origin[pos], end: origin[end], category: p.category, term: p.term });
                    pos = end;
                    continue;
                }
            }
            pos += c.len_utf8();
        }
        found
    }

    /// Which categories `text` mentions, as a bit per category.
    pub fn categories_mentioned(mentions: &[Mention]) -> u64 {
        mentions.iter().fold(0, |acc, m| acc | (1u64 << m.category.min(63)))
    }

    /// `text` with every mention of `category` replaced by `term` (an index in that category);
    /// `None` when the text does not mention the category.
    pub fn replace(&self, text: &str, mentions: &[Mention], category: usize, term: usize) -> Option<String> {
        let word = &self.terms.terms(category)[term];
        let mut out = String::with_capacity(text.len() + 16);
        let mut last = 0;
        let mut any = false;
        for m in mentions.iter().filter(|m| m.category == category) {
            out.push_str(&text[last..m.start]);
            out.push_str(word);
            last = m.end;
            any = true;
        }
        out.push_str(&text[last..]);
        any.then_some(out)
    }
}

/// The end (in `lower`) of `words` matched at `pos`, separated by runs of spaces or hyphens and
/// followed by a non-word character or the end.
fn match_at(lower: &str, bytes: &[u8], pos: usize, words: &[String]) -> Option<usize> {
    let mut at = pos;
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            let gap = lower[at..].chars().take_while(|&c| c.is_whitespace() || c == '-').map(char::len_utf8).sum::<usize>();
            if gap == 0 {
                return None;
            }
            at += gap;
        }
        if !bytes[at..].starts_with(w.as_bytes()) {
            return None;
        }
        at += w.len();
    }
    lower[at..].chars().next().is_none_or(|c| !super::is_word_char(c)).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(m: &TermMatcher, text: &str) -> Vec<String> {
        m.mentions(text).iter().map(|x| format!("{}:{}", m.terms().category(x.category), &text[x.start..x.end])).collect()
    }

    #[test]
    fn the_paper_has_48_terms_in_four_categories() {
        let t = IdentityTerms::paper();
        assert_eq!(t.category_names().collect::<Vec<_>>(), ["gender", "race", "religion", "age"]);
        assert_eq!(t.all_terms().count(), 48);
        assert_eq!(t.terms(0).len(), 14);
    }

    #[test]
    fn matching_is_case_insensitive_on_word_boundaries_and_prefers_the_longest_term() {
        let m = IdentityTerms::paper().matcher();
        assert_eq!(names(&m, "I am a GAY Person."), ["gender:GAY"]);
        assert_eq!(names(&m, "transport of lgbtq-friendly goods"), ["gender:lgbtq"]);
        assert_eq!(
            names(&m, "An African   American and an african; a Middle-Aged man"),
            ["race:African   American", "race:african", "age:Middle-Aged"]
        );
        assert_eq!(names(&m, "gayness, oldest, whitewash, _gay"), Vec::<String>::new());
        assert_eq!(names(&m, "Ünïcode: straight—old"), ["gender:straight", "age:old"]);
    }

    #[test]
    fn replacing_a_category_swaps_every_mention_of_it_and_nothing_else() {
        let m = IdentityTerms::paper().matcher();
        let text = "The Lesbian and the bisexual muslim.";
        let mentions = m.mentions(text);
        let gay = m.terms().terms(0).iter().position(|t| t == "gay").unwrap();
        assert_eq!(m.replace(text, &mentions, 0, gay).as_deref(), Some("The gay and the gay muslim."));
        assert_eq!(m.replace(text, &mentions, 1, 0), None, "no race term to replace");
        assert_eq!(TermMatcher::categories_mentioned(&mentions), 0b101);
    }

    #[test]
    fn categories_can_be_replaced_or_added_and_bad_lists_are_refused() {
        let mut over = BTreeMap::new();
        over.insert("gender".to_string(), vec!["Woman".to_string(), "man".to_string()]);
        over.insert("disability".to_string(), vec!["blind".to_string(), "deaf".to_string()]);
        let t = IdentityTerms::paper_with(&over).unwrap();
        assert_eq!(t.terms(0), ["woman", "man"]);
        assert_eq!(t.category(4), "disability");
        let m = t.matcher();
        assert_eq!(names(&m, "a deaf woman, gay"), ["disability:deaf", "gender:woman"]);
        over.insert("age".to_string(), vec!["man".to_string()]);
        assert!(matches!(IdentityTerms::paper_with(&over), Err(TermsError::Duplicate { .. })));
        assert!(matches!(IdentityTerms::new(vec![("x".into(), vec![])]), Err(TermsError::EmptyCategory(_))));
        assert!(matches!(IdentityTerms::new(vec![("x".into(), vec![" - ".into()])]), Err(TermsError::EmptyTerm { .. })));
    }
}
