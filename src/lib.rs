//! The `fairpipe` package: the command line ([`cli`], run by `src/main.rs` and by the Python
//! wheel's `fairpipe` command; `init` in [`init`], the JSON forms of `validate` and `list` in
//! [`json`]) and the methods that ship inside it.
//!
//! The built-in methods come from `fairpipe-builtins` (re-exported here): a program that embeds
//! the engine (`fairpipe-core`) and wants them calls [`register_builtins`] once.

pub mod cli;
pub mod fuzzing;
pub mod init;
pub mod json;
pub mod llm;
pub mod page;
pub mod scaffold;
pub mod speed;

pub use fairpipe_builtins::{builtin_reference, file_plugins_reference, register_builtins, BUILTINS};

/// Hand the git commit this package was built from (`build.rs`, when built from a git checkout) to
/// the engine, which writes it into every run's audit trail. Called by [`cli::run`] and the Python
/// module at start; harmless to call again.
pub fn record_build_commit() {
    if let Some(commit) = option_env!("FAIRPIPE_GIT_COMMIT") {
        fairpipe_core::trail::set_git_commit(commit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plugin reference in docs/methods.md is what `fairpipe list` prints for the built-ins.
    /// What doc `path` (from the repository root) holds between its `<!-- MARKER:start -->` and
    /// `<!-- MARKER:end -->` markers (the blocks `scripts/write_doc_blocks.py` writes).
    fn doc_block(path: &str, marker: &str) -> String {
        let doc = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap();
        doc.split_once(&format!("<!-- {marker}:start -->"))
            .and_then(|(_, rest)| rest.split_once(&format!("<!-- {marker}:end -->")))
            .map(|(block, _)| block.to_string())
            .unwrap_or_else(|| panic!("{path} has the {marker} markers"))
    }

    #[test]
    fn the_readme_shows_the_builtin_reference() {
        register_builtins().unwrap();
        let block = doc_block("docs/methods.md", "plugin-reference");
        let expected = format!("\n```\n{}```\n", builtin_reference());
        assert!(
            block == expected,
            "docs/methods.md's plugin reference differs from `fairpipe list`; put the built-in part of `cargo run -- list` \
             between the markers, inside a ``` block.\n--- expected ---\n{expected}\n--- docs/methods.md ---\n{block}"
        );
    }

    /// Configure stage kind `kind` from pipeline `text` (one stage) through its real configure
    /// step, paths resolved against `pipelines/`; the problems, if any.
    fn configure_example(kind: &'static fairpipe_core::stage::kind::StageKind, text: &str) -> Result<(), String> {
        use fairpipe_core::run::registry::STAGE_KINDS;
        use fairpipe_core::stage::kind::StageEnv;
        use fairpipe_core::stage::problems::Problems;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("pipelines");
        with_stage_table(kind, text, |table| {
            let mut problems = Problems::new(&dir.join("example.toml"), text);
            let env = StageEnv { dir: dir.clone(), seed: 1, plugin_path: Vec::new(), kinds: STAGE_KINDS, audits_a_model: true };
            let stage = (kind.configure)(kind, table, &env, &mut problems);
            problems.into_result().map_err(|e| e.to_string())?;
            stage.map(|_| ()).ok_or_else(|| "no stage and no problem".into())
        })
    }

    /// Every stage kind's documented example (what `fairpipe list` and docs/pipeline-reference.md
    /// show) goes through the kind's real configure step — types, checks, files, plugins — without
    /// a problem; and so does the example with each key set to its documented default, when the
    /// default is written as a value (not described in words): a default string the key's type
    /// refuses fails here.
    #[test]
    fn every_kinds_example_and_documented_defaults_configure_through_the_real_configure_step() {
        use fairpipe_core::run::registry::STAGE_KINDS;
        register_builtins().unwrap();
        let mut checked = 0;
        for kind in STAGE_KINDS {
            configure_example(kind, kind.example).unwrap_or_else(|e| panic!("{}: its example does not configure: {e}", kind.name));
            for (key, _, with) in literal_defaults(kind) {
                configure_example(kind, &with).unwrap_or_else(|e| {
                    panic!("{}: key `{}` set to its documented default `{}` is refused: {e}", kind.name, key.name, key.default)
                });
                checked += 1;
            }
        }
        assert!(checked > 50, "only {checked} documented defaults are written as values");
    }

    /// The keys of `kind` whose documented default is written as a value (not described in words)
    /// and applies to the variant of the kind's example, each with the example without the key and
    /// the example with `key = default` appended.
    fn literal_defaults(
        kind: &'static fairpipe_core::stage::kind::StageKind,
    ) -> Vec<(&'static fairpipe_core::stage::kind::KeyDoc, String, String)> {
        use fairpipe_core::toml_spans::parse;
        let tag_value = kind.tag.and_then(|tag| {
            kind.example.lines().find_map(|l| l.strip_prefix(&format!("{tag} = "))).map(|v| v.trim_matches('"').to_string())
        });
        (kind.keys)()
            .iter()
            .filter(|key| {
                let applies = key.only.is_empty() || tag_value.as_deref().is_some_and(|v| key.only.contains(&v));
                Some(key.name) != kind.tag && applies && parse(&format!("{} = {}", key.name, key.default)).is_ok()
            })
            .map(|key| {
                let without: String =
                    kind.example.lines().filter(|l| !l.starts_with(&format!("{} =", key.name))).map(|l| format!("{l}\n")).collect();
                let with = format!("{without}{} = {}\n", key.name, key.default);
                (key, without, with)
            })
            .collect()
    }

    /// The stage table of the one stage in pipeline `text` (its keys without `kind` and the
    /// inputs), handed to `f`.
    fn with_stage_table<R>(
        kind: &'static fairpipe_core::stage::kind::StageKind,
        text: &str,
        f: impl FnOnce(&fairpipe_core::stage::kind::StageTable<'_>) -> R,
    ) -> R {
        use fairpipe_core::stage::kind::StageTable;
        use fairpipe_core::toml_spans::{parse, Val};
        let root = parse(text).unwrap_or_else(|e| panic!("{}: {e:?}", kind.name));
        let Val::Table(top) = &root.v else { panic!("{}: no table", kind.name) };
        let Some(Val::Table(stages)) = top.iter().find(|(k, _)| k.v == "stages").map(|(_, v)| &v.v) else {
            panic!("{}: no [stages]", kind.name)
        };
        let (name, body) = &stages[0];
        let Val::Table(entries) = &body.v else { panic!("{}: the stage is no table", kind.name) };
        let entries: Vec<_> = entries.iter().filter(|(k, _)| k.v != "kind" && !kind.inputs.iter().any(|i| i.role == k.v)).collect();
        f(&StageTable { name: &name.v, header: name.span.clone(), entries })
    }

    /// Keys whose config field is an `Option` that the stage resolves to the documented default
    /// when it uses it (so a table without the key does not read into the same value as one
    /// setting it): kind, key, where the default is applied.
    const RESOLVED_AT_USE: &[(&str, &str, &str)] = &[
        ("load", "missing_values", "LoadSpec::new's missing_markers"),
        ("load", "separator", "LoadConfig::separator_byte"),
        ("generate", "params", "PluginChoice::params"),
        ("group_score", "params", "PluginChoice::params"),
        ("group_score", "plugin", "DEFAULT_AUDITOR when neither plugin nor path is given"),
    ];

    /// One description per key: every documented default written as a value (`KeyDoc::default`,
    /// shown by `fairpipe list` and docs/pipeline-reference.md) is the config's real default — the
    /// kind's example without the key reads into the same typed config as the example with the
    /// key set to its documented default — and the documented type (`KeyDoc::ty`) names the
    /// TOML type of that default.
    #[test]
    fn every_documented_default_is_the_configs_real_default_and_of_its_documented_type() {
        use fairpipe_core::run::registry::STAGE_KINDS;
        use fairpipe_core::toml_spans::{parse, Val};
        let mut checked = 0;
        let mut wrong = Vec::new();
        for kind in STAGE_KINDS {
            for (key, without, with) in literal_defaults(kind) {
                let parsed = parse(&format!("{} = {}", key.name, key.default)).expect("literal_defaults keeps defaults that parse");
                let absent = with_stage_table(kind, &without, kind.read);
                let given = with_stage_table(kind, &with, kind.read);
                let resolved_at_use = RESOLVED_AT_USE.iter().any(|(k, n, _)| *k == kind.name && *n == key.name);
                match (absent, given) {
                    (Some(a), Some(g)) if a == g => {
                        if resolved_at_use {
                            wrong.push(format!(
                                "{}.{}: reads the same with and without its default; take it out of RESOLVED_AT_USE",
                                kind.name, key.name
                            ));
                        }
                    }
                    (Some(_), Some(_)) if resolved_at_use => {}
                    (a, g) => wrong.push(format!(
                        "{}.{}: documented default `{}` but the config reads {} without the key and {} with it",
                        kind.name,
                        key.name,
                        key.default,
                        a.unwrap_or_else(|| "nothing".into()),
                        g.unwrap_or_else(|| "nothing".into())
                    )),
                }
                let Val::Table(top) = &parsed.v else { unreachable!("a key = value line parses to a table") };
                let toml_type = match &top[0].1.v {
                    Val::Int(_) => "int",
                    Val::Float(_) => "float",
                    Val::Bool(_) => "bool",
                    Val::Str(_) => "string",
                    Val::Array(_) => "list",
                    Val::Table(_) => "table",
                    _ => "other",
                };
                let ty = &key.ty;
                let fits = match toml_type {
                    "int" => ty.contains("int") || ty.contains("float") || ty.contains("number"),
                    "float" => ty.contains("float") || ty.contains("number"),
                    "bool" => ty.contains("bool"),
                    "string" => ty.contains("string") || ty.contains("path") || ty.contains('"'),
                    "list" => ty.contains("list") || ty.contains('['),
                    "table" => ty.contains("table"),
                    _ => true,
                };
                if !fits {
                    wrong.push(format!(
                        "{}.{}: documented type `{ty}` but its default `{}` is a TOML {toml_type}",
                        kind.name, key.name, key.default
                    ));
                }
                checked += 1;
            }
        }
        assert!(wrong.is_empty(), "documented defaults that are not the code's:\n{}", wrong.join("\n"));
        assert!(checked > 50, "only {checked} documented defaults are written as values");
    }

    /// docs/output-contract.md's list of every kind's figures is what the kinds declare
    /// (`FigureDoc`, read from each figures struct by its `#[derive(FigureNames)]`), as
    /// `fairpipe list --markdown figures` prints it.
    #[test]
    fn the_output_contract_lists_every_kinds_figures() {
        let block = doc_block("docs/output-contract.md", "figures");
        let expected = format!("\n{}\n", fairpipe_core::run::registry::figure_list_block());
        assert!(
            block == expected,
            "docs/output-contract.md's figures differ from the kinds' FigureDoc; regenerate it with \
             `python3 scripts/write_doc_blocks.py`.\n--- expected ---\n{expected}\n--- docs ---\n{block}"
        );
    }

    /// docs/llm-audits.md's list of the `llm` block's keys is what `LlmConfig` describes
    /// (`#[derive(StageKeys)]`), as `fairpipe list --markdown llm` prints it.
    #[test]
    fn the_llm_guide_lists_the_llm_blocks_keys() {
        let block = doc_block("docs/llm-audits.md", "llm-keys");
        let expected = format!("\n{}\n", fairpipe_core::run::registry::llm_keys_block());
        assert!(
            block == expected,
            "docs/llm-audits.md's llm keys differ from LlmConfig's; regenerate it with \
             `python3 scripts/write_doc_blocks.py`.\n--- expected ---\n{expected}\n--- docs ---\n{block}"
        );
    }
}
