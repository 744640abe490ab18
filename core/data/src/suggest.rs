//! "Did you mean" suggestions for misspelt names (keys, stage kinds, columns, plugins): a thin
//! wrapper over the SDK's [`did_you_mean`], so every message phrases it the same way.

pub use fairpipe_abi::sdk::did_you_mean;

/// " (did you mean `x`?)" when a candidate is close to `name`, else "".
pub fn hint(name: &str, candidates: &[&str]) -> String {
    did_you_mean(name, candidates.iter().copied()).map(|c| format!(" (did you mean `{c}`?)")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(did_you_mean("protcted", ["protected", "label"]), Some("protected"));
        assert_eq!(did_you_mean("zzz", ["protected", "label"]), None);
        assert_eq!(hint("trails", &["trials", "samples"]), " (did you mean `trials`?)");
        assert_eq!(hint("zzz", &["trials"]), "");
    }
}
