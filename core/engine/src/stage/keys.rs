//! A stage kind's keys, described once, by its config type: the `fairpipe-keys` crate (below the
//! models crate, so that a model's config block describes its keys the same way), re-exported
//! here where the stage kinds have always found it. A kind's [`KeyDoc`]s are its config's
//! [`StageKeys::keys`].

pub use fairpipe_keys::*;

#[cfg(test)]
mod tests {
    use super::{KeyType, StageKeys};
    use crate::stage::config_fields::fields_of;
    use serde::{Deserialize, Serialize};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, KeyType)]
    #[serde(rename_all = "snake_case")]
    enum Colour {
        DeepRed,
        #[default]
        Blue,
    }

    #[derive(Debug, Serialize, Deserialize, StageKeys)]
    #[serde(deny_unknown_fields, default)]
    struct FastParams {
        /// Steps taken.
        steps: usize,
        /// Shade used, and a second line
        /// of text.
        colour: Colour,
    }

    impl Default for FastParams {
        fn default() -> Self {
            FastParams { steps: 3, colour: Colour::Blue }
        }
    }

    #[derive(Debug, Serialize, Deserialize, StageKeys)]
    #[serde(deny_unknown_fields, default)]
    struct SlowParams {
        /// Steps taken.
        steps: usize,
        /// Pause in seconds.
        pause: f64,
    }

    impl Default for SlowParams {
        fn default() -> Self {
            SlowParams { steps: 3, pause: 0.5 }
        }
    }

    #[derive(Debug, Deserialize, StageKeys)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast(FastParams),
        #[serde(rename = "slowly")]
        Slow(SlowParams),
    }

    fn default_rows() -> u64 {
        5000
    }

    #[derive(Debug, Deserialize, StageKeys)]
    #[serde(deny_unknown_fields)]
    struct Example {
        /// The CSV file to read.
        path: PathBuf,
        /// Column names kept.
        #[serde(rename = "keep")]
        columns: Option<Vec<String>>,
        /// Rows at most.
        #[serde(default = "default_rows")]
        rows: u64,
        /// SVM kernel width.
        #[serde(default)]
        #[key(default = "1 / features")]
        width: Option<f64>,
        /// How it runs.
        #[serde(rename = "+mode")]
        mode: Mode,
        /// Weight of each group.
        #[serde(default)]
        weights: BTreeMap<String, f64>,
        #[serde(skip)]
        #[allow(dead_code)]
        cache: u8,
        /// Which side.
        #[serde(default)]
        #[key(ty = "\"left\"|\"right\"")]
        side: String,
    }

    /// A key two variants give different defaults cannot be one line of the reference.
    #[test]
    #[should_panic(expected = "key `steps` has type int default 3 in one variant and type int default 4 in `slowly`")]
    fn a_key_whose_variants_disagree_is_refused() {
        let steps = |default: &str| super::key("steps", "int".into(), default.into(), "steps taken");
        super::variant_keys(&["fast", "slowly"], vec![vec![steps("3")], vec![steps("4")]]);
    }

    type Row = (&'static str, String, String, &'static str, Vec<&'static str>);

    fn rows<C: StageKeys>() -> Vec<Row> {
        C::key_docs().into_iter().map(|k| (k.name, k.ty.into_owned(), k.default.into_owned(), k.doc, k.only)).collect()
    }

    fn row(name: &'static str, ty: &str, default: &str, doc: &'static str, only: &[&'static str]) -> Row {
        (name, ty.into(), default.into(), doc, only.to_vec())
    }

    /// The derive names each key as serde reads it (rename, `+tag`, skip), types it by
    /// `KeyType` (an `Option` looked through, an enum's choices) or `#[key(ty)]`, defaults it as
    /// serde does (a required key, `None`, a field's default function, the params struct's
    /// `Default`, the tag's first variant) or by `#[key(default)]`, describes it by its comment,
    /// and marks a variant's key with the variants that have it.
    #[test]
    fn the_derive_describes_each_key_as_serde_reads_it() {
        let expected = vec![
            row("path", "path", "required", "the CSV file to read", &[]),
            row("keep", "string list", "none", "column names kept", &[]),
            row("rows", "int", "5000", "rows at most", &[]),
            row("width", "float", "1 / features", "SVM kernel width", &[]),
            row("mode", "\"fast\"|\"slowly\"", "\"fast\"", "how it runs", &[]),
            row("steps", "int", "3", "steps taken", &["fast", "slowly"]),
            row("colour", "\"deep_red\"|\"blue\"", "\"blue\"", "shade used, and a second line of text", &["fast"]),
            row("pause", "float", "0.5", "pause in seconds", &["slowly"]),
            row("weights", "table of float", "{}", "weight of each group", &[]),
            row("side", "\"left\"|\"right\"", "\"\"", "which side", &[]),
        ];
        assert_eq!(rows::<Example>(), expected);
        assert_eq!(Example::keys().len(), expected.len(), "computed once, the same");

        // Against serde itself: the keys are the fields its `Deserialize` asks for, each under
        // the variants that have it.
        let mut asked: Vec<(Option<&str>, &str)> = fields_of::<Example>();
        asked.sort_unstable();
        let mut documented: Vec<(Option<&str>, &str)> = Vec::new();
        for (name, _, _, _, only) in &expected {
            if *name == "mode" {
                continue;
            }
            if only.is_empty() {
                documented.push((None, name));
            }
            documented.extend(only.iter().map(|v| (Some(*v), *name)));
        }
        documented.sort_unstable();
        assert_eq!(asked, documented);

        // The defaults written as values are what serde fills in.
        let read: Example = serde_json::from_str(r#"{"path": "a.csv", "+mode": {"fast": {}}}"#).unwrap();
        assert_eq!((read.rows, read.side.as_str(), read.weights.len(), read.columns), (5000, "", 0, None));
        let Mode::Fast(fast) = read.mode else { panic!("fast") };
        assert_eq!((fast.steps, fast.colour), (3, Colour::Blue));
        assert!(read.width.is_none() && read.cache == 0);
        assert_eq!(read.path, PathBuf::from("a.csv"));
        let slow: Example = serde_json::from_str(r#"{"path": "a.csv", "+mode": {"slowly": {}}}"#).unwrap();
        let Mode::Slow(slow) = slow.mode else { panic!("slowly") };
        assert_eq!((slow.steps, slow.pause), (3, 0.5));
        assert_eq!(Colour::text(), "\"deep_red\"|\"blue\"");
    }
}
