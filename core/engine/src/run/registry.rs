//! The registry of stage kinds the runner reads: the one explicit list is
//! [`crate::stages::KINDS`] (each kind describes itself in its own file under [`crate::stages`]:
//! name, doc, inputs, keys, example, config, figures and what they mean; a new kind is one file
//! plus one line there); here, the references `fairpipe list` and the docs print from it.

use crate::stage::kind::StageKind;

/// Every stage kind, in pipeline order ([`crate::stages::KINDS`]).
pub const STAGE_KINDS: &[StageKind] = crate::stages::KINDS;

/// The kind called `name`.
pub fn find(name: &str) -> Option<&'static StageKind> {
    crate::stages::kind(name)
}

/// The stage reference: every kind with its inputs and keys, as `fairpipe list` prints it and the
/// docs/pipeline-reference.md shows it.
pub fn stage_reference() -> String {
    STAGE_KINDS.iter().map(|k| k.reference()).collect::<Vec<_>>().join("\n")
}

/// The stage reference as docs/pipeline-reference.md holds it between its `stage-reference`
/// markers, without the newlines around it: `fairpipe list --markdown` prints it.
pub fn stage_reference_block() -> String {
    format!("```\n{}```", stage_reference())
}

/// The `llm` block's keys (`load_model`'s `llm = { … }`, described once by
/// `fairpipe_models::llm::config::LlmConfig`) as docs/llm-audits.md holds them between its
/// `llm-keys` markers, without the newlines around it: `fairpipe list --markdown llm` prints it.
pub fn llm_keys_block() -> String {
    use crate::stage::keys::StageKeys;
    format!("```\n{}```", crate::stage::keys::reference(crate::models::llm::config::LlmConfig::keys()))
}

/// Every kind's figures as docs/output-contract.md holds them between its `figures` markers,
/// without the newlines around it: a line per kind with the top-level names its figures struct
/// writes (its [`FigureDoc`](crate::stage::kind::FigureDoc), read by `#[derive(FigureNames)]`),
/// whether a plugin adds its own, and the names a sweep compares. `fairpipe list --markdown
/// figures` prints it.
pub fn figure_list_block() -> String {
    let lines: Vec<String> = STAGE_KINDS
        .iter()
        .map(|k| {
            let f = &k.figures;
            let names: Vec<&str> = (f.names)().iter().map(|n| n.name).collect();
            let mut line = format!("{}: {}", k.name, names.join(", "));
            if f.open {
                line.push_str(" (and the plugin's own)");
            }
            if !f.compared.is_empty() {
                line.push_str(&format!("; compared in a sweep: {}", f.compared.join(", ")));
            }
            line
        })
        .collect();
    format!("```\n{}\n```", lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::kind::{StageEnv, StageTable};
    use crate::stage::problems::Problems;
    use fairpipe_data::toml_spans::{parse, Val};

    #[test]
    fn kinds_are_unique_snake_case_documented_and_their_examples_parse() {
        let mut names = std::collections::BTreeSet::new();
        for k in STAGE_KINDS {
            assert!(names.insert(k.name), "duplicate kind {}", k.name);
            assert!(k.name.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{} is not snake_case", k.name);
            assert!(k.doc.len() > 20, "{} lacks a doc", k.name);
            let example: toml::Table = toml::from_str(k.example).unwrap_or_else(|e| panic!("{} example: {e}", k.name));
            let stage = example["stages"].as_table().and_then(|s| s.values().next()).and_then(|v| v.as_table()).expect("one stage");
            assert_eq!(stage["kind"].as_str(), Some(k.name));
            for key in stage.keys().filter(|key| *key != "kind") {
                assert!(k.all_keys().contains(&key.as_str()), "{} example uses undeclared key {key}", k.name);
            }
            let mut keys = k.all_keys();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), k.all_keys().len(), "{} declares a key twice", k.name);
        }
    }

    /// Configure kind `k` from TOML `body` (a stage table without `kind` and inputs); the problems.
    fn problems_of(k: &'static StageKind, body: &str) -> Vec<String> {
        let root = parse(body).expect("test TOML");
        let Val::Table(entries) = &root.v else { unreachable!() };
        let table = StageTable { name: "s", header: 0..0, entries: entries.iter().collect() };
        let mut p = Problems::new("t.toml".as_ref(), body);
        let env = StageEnv { dir: std::env::temp_dir(), seed: 1, plugin_path: Vec::new(), kinds: STAGE_KINDS, audits_a_model: true };
        let _ = (k.configure)(k, &table, &env, &mut p);
        p.into_result().err().map(|e| e.problems.into_iter().map(|p| p.message).collect()).unwrap_or_default()
    }

    /// The documented keys and the config structs' fields cannot drift apart: every field is
    /// documented (under the variants it belongs to), and every documented key is accepted.
    #[test]
    fn documented_keys_are_exactly_the_config_fields() {
        for k in STAGE_KINDS {
            let fields = (k.fields)();
            for (variant, field) in &fields {
                let doc = k.key(field).unwrap_or_else(|| panic!("{}: field `{field}` is not documented", k.name));
                if let Some(v) = variant {
                    assert!(
                        doc.only.is_empty() || doc.only.contains(v),
                        "{}: `{field}` is a field of {v} but documented only for {:?}",
                        k.name,
                        doc.only
                    );
                } else {
                    assert!(
                        doc.only.is_empty(),
                        "{}: `{field}` applies to every variant but is documented only for {:?}",
                        k.name,
                        doc.only
                    );
                }
            }
            for doc in (k.keys)() {
                if Some(doc.name) == k.tag {
                    continue;
                }
                let variants: Vec<Option<&str>> =
                    if doc.only.is_empty() { vec![None] } else { doc.only.iter().map(|v| Some(*v)).collect() };
                for v in variants {
                    assert!(
                        fields.contains(&(v, doc.name)) || fields.contains(&(None, doc.name)),
                        "{}: documented key `{}` is no field of {v:?}",
                        k.name,
                        doc.name
                    );
                    let tag = match (k.tag, v) {
                        (Some(tag), Some(v)) => format!("{tag} = \"{v}\"\n"),
                        _ => String::new(),
                    };
                    let problems = problems_of(k, &format!("{tag}{} = 1\n", doc.name));
                    assert!(
                        !problems.iter().any(|p| p.contains("unknown key") || p.contains("belongs to")),
                        "{}: documented key `{}` is refused: {problems:?}",
                        k.name,
                        doc.name
                    );
                }
            }
        }
    }

    /// Every derived key reads as a reference line: a type (an enum that serde reads other than
    /// by its variants' names gives none, and needs `#[key(ty)]`), a default and a description;
    /// a key of some variants only names variants of the kind's tag.
    #[test]
    fn every_key_has_a_type_a_default_and_a_description() {
        for k in STAGE_KINDS {
            for key in (k.keys)() {
                let at = format!("{}.{}", k.name, key.name);
                assert!(!key.ty.trim().is_empty() && !key.default.trim().is_empty(), "{at}: type {:?} default {:?}", key.ty, key.default);
                assert!(key.doc.len() > 5 && !key.doc.ends_with('.'), "{at}: description {:?}", key.doc);
                assert!(key.only.is_empty() || k.tag.is_some(), "{at}: only {:?} in a kind without a tag", key.only);
            }
        }
    }

    #[test]
    fn a_key_of_another_variant_is_named_as_such() {
        let train = find("train").unwrap();
        let problems = problems_of(train, "algorithm = \"logistic\"\nhidden = [8]\n");
        assert_eq!(problems, vec!["stage `s`: key `hidden` belongs to algorithm = \"mlp\", but this stage has algorithm = \"logistic\""]);
        let retrain = find("retrain").unwrap();
        let problems = problems_of(retrain, "strategy = \"testsgd\"\ntrials = 10\n");
        assert_eq!(
            problems,
            vec!["stage `s`: key `trials` belongs to strategy = \"aequitas\" or \"pairs\", but this stage has strategy = \"testsgd\""]
        );
    }

    /// A key of another kind is named as such: texts are read by `load_text`, not `load`.
    #[test]
    fn a_key_of_another_kind_says_which() {
        let problems = problems_of(find("load").unwrap(), "path = \"x.csv\"\nlabel = \"toxic\"\nprotected = [\"a\"]\ntext = \"comment\"\n");
        assert!(problems.iter().any(|p| p.contains("unknown key `text` (a key of `load_text`)")), "{problems:?}");
        // A misspelling still gets its did-you-mean; a key no kind has gets nothing.
        let problems = problems_of(find("load").unwrap(), "path = \"x.csv\"\nlabel = \"y\"\nprotected = [\"a\"]\nlable = 1\nzzz = 1\n");
        assert!(problems.iter().any(|p| p.contains("`lable` (did you mean `label`?)")), "{problems:?}");
        assert!(problems.iter().any(|p| p.starts_with("stage `s`: unknown key `zzz`; accepted")), "{problems:?}");
    }

    /// The stage reference in docs/pipeline-reference.md is what `fairpipe list` prints.
    #[test]
    fn the_readme_shows_the_stage_reference() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/pipeline-reference.md"))
            .expect("docs/pipeline-reference.md");
        let (start, end) = ("<!-- stage-reference:start -->", "<!-- stage-reference:end -->");
        let block = readme
            .split_once(start)
            .and_then(|(_, rest)| rest.split_once(end))
            .map(|(block, _)| block)
            .expect("docs/pipeline-reference.md has the stage-reference markers");
        let expected = format!("\n{}\n", stage_reference_block());
        assert!(
            block == expected,
            "docs/pipeline-reference.md's stage reference differs from the stage kinds'; regenerate it with \
             `python3 scripts/write_doc_blocks.py` (it puts `fairpipe list --markdown` between the markers).\n--- expected ---\n{expected}\n--- docs/pipeline-reference.md ---\n{block}"
        );
    }

    /// Each kind's figures (read from its struct by `#[derive(FigureNames)]`) are named once: no
    /// two fields (a flattened struct's included) write the same name, and none is a name the
    /// runner writes into every entry.
    #[test]
    fn every_kinds_figure_names_are_unique_and_not_the_runners() {
        use crate::stage::summary::RUNNER_FIGURES;
        for kind in STAGE_KINDS {
            let names = (kind.figures.names)();
            assert!(!names.is_empty(), "{}: no figures", kind.name);
            let mut seen = std::collections::BTreeSet::new();
            for f in &names {
                assert!(seen.insert(f.name), "{}: figure `{}` written twice", kind.name, f.name);
                assert!(!RUNNER_FIGURES.contains(&f.name), "{}: figure `{}` is one of the runner's", kind.name, f.name);
            }
        }
    }

    /// A sweep reads one value per compared figure of every kind, `null` each when the entry's
    /// figures do not read as the kind's (so a column is never shifted onto another's values).
    #[test]
    fn every_compared_figure_is_read() {
        for kind in STAGE_KINDS {
            let mut entry = serde_json::Map::new();
            entry.insert("kind".into(), kind.name.into());
            let entry = crate::stage::summary::StageSummary::from_map(entry).unwrap();
            let read = (kind.figures.compare)(&entry);
            assert_eq!(read.len(), kind.figures.compared.len(), "{}: compared {:?}, read {read:?}", kind.name, kind.figures.compared);
            assert!(read.iter().all(serde_json::Value::is_null), "{}: {read:?} from an entry without figures", kind.name);
        }
    }

    /// The figures a kind shows on its stage's line in the terminal are its own: a name of its
    /// figures struct, or (a kind whose plugin adds figures) possibly the plugin's.
    #[test]
    fn every_headline_figure_is_a_figure_of_its_kind() {
        for kind in STAGE_KINDS {
            let names: Vec<&str> = (kind.figures.names)().iter().map(|n| n.name).collect();
            assert!(!kind.figures.meaning.headline.is_empty(), "{}: nothing on its stage line", kind.name);
            for figure in kind.figures.meaning.headline {
                assert!(names.contains(figure) || kind.figures.open, "{}: headline figure `{figure}` is none of its figures", kind.name);
            }
        }
    }
}
