//! The grammar that keeps an answer to the ones the prompt expects (`llm.grammar = true`): a GBNF
//! text, sent as llama.cpp's request field `grammar`, whose `root` is exactly one of the answers
//! listed — the favourable and unfavourable words, every whole number of a rating's scale, or a
//! pairwise prompt's two labels.
//!
//! llama.cpp reports `top_logprobs` from the model's own distribution, before the grammar, so a
//! grammar changes the answer a prompt is given (what `scores = "samples"` and `"labels"` read),
//! never a logprob score.

use super::config::Answers;

/// A GBNF string literal of `text`: quoted, with `"`, `\` and control characters escaped.
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The grammar allowing exactly one of `answers` (trimmed, each once, in the order listed): the
/// scale's numbers from low to high for a rating, else the favourable then the unfavourable
/// answers.
pub fn gbnf(answers: &Answers) -> String {
    let words: Vec<String> = match answers.scale() {
        Some((low, high)) => (low..=high).map(|v| v.to_string()).collect(),
        None => answers.favourable.iter().chain(&answers.unfavourable).map(|a| a.trim().to_string()).collect(),
    };
    let mut seen = std::collections::HashSet::new();
    let alternatives: Vec<String> = words.iter().filter(|w| seen.insert(w.as_str())).map(|w| literal(w)).collect();
    format!("root ::= {}\n", alternatives.join(" | "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(favourable: &[&str], unfavourable: &[&str], scale: Option<[i64; 2]>) -> Answers {
        Answers {
            favourable: favourable.iter().map(|s| s.to_string()).collect(),
            unfavourable: unfavourable.iter().map(|s| s.to_string()).collect(),
            scale,
        }
    }

    #[test]
    fn the_grammar_lists_each_answer_once_in_order() {
        assert_eq!(gbnf(&answers(&["yes", " Yes"], &["no", "No", "no"], None)), "root ::= \"yes\" | \"Yes\" | \"no\" | \"No\"\n");
        assert_eq!(gbnf(&answers(&["A"], &["B"], None)), "root ::= \"A\" | \"B\"\n");
    }

    #[test]
    fn a_rating_allows_every_number_of_its_scale() {
        assert_eq!(gbnf(&answers(&[], &[], Some([1, 5]))), "root ::= \"1\" | \"2\" | \"3\" | \"4\" | \"5\"\n");
        let ten = gbnf(&answers(&[], &[], Some([0, 10])));
        assert!(ten.starts_with("root ::= \"0\" | \"1\" |") && ten.ends_with("| \"9\" | \"10\"\n"), "{ten}");
    }

    #[test]
    fn quotes_and_backslashes_are_escaped() {
        assert_eq!(gbnf(&answers(&["say \"hi\""], &["a\\b\n"], None)), "root ::= \"say \\\"hi\\\"\" | \"a\\\\b\"\n");
        assert_eq!(literal("tab\there\u{1}"), "\"tab\\there\\x01\"");
    }
}
