//! The one explicit list of stage kinds: name, documentation, inputs, parameters, an example, and
//! the function that builds a configured stage from its TOML table.

use crate::pipeline::params::{Params, Problems};
use crate::pipeline::stage::{ArtifactKind, Stage};
use crate::stages;

/// Builds a stage from its parameters (recording problems), given the stage's seed.
pub type BuildFn = fn(&Params, &mut Problems, u64) -> Option<Box<dyn Stage>>;

/// One parameter of a stage kind.
#[derive(Debug, Clone, Copy)]
pub struct ParamDoc {
    /// TOML key.
    pub name: &'static str,
    /// Expected type.
    pub ty: &'static str,
    /// Default value ("required" when there is none).
    pub default: &'static str,
    /// What it does.
    pub doc: &'static str,
}

/// One input of a stage kind: a TOML key whose value names another stage.
#[derive(Debug, Clone, Copy)]
pub struct InputDoc {
    /// TOML key, e.g. `data` or `model`.
    pub role: &'static str,
    /// Artifact kinds the input accepts.
    pub accepts: &'static [ArtifactKind],
    /// Whether the input must be connected.
    pub required: bool,
    /// What it is for.
    pub doc: &'static str,
}

/// A stage kind.
#[derive(Clone, Copy)]
pub struct StageKind {
    /// The `kind = "..."` name (a snake_case verb or noun).
    pub name: &'static str,
    /// One-paragraph description.
    pub doc: &'static str,
    /// Inputs by role.
    pub inputs: &'static [InputDoc],
    /// What it produces.
    pub output: ArtifactKind,
    /// Parameters.
    pub params: &'static [ParamDoc],
    /// A TOML example.
    pub example: &'static str,
    /// The builder.
    pub build: BuildFn,
}

impl StageKind {
    /// Every key the kind accepts: inputs and parameters.
    pub fn keys(&self) -> Vec<&'static str> {
        self.inputs.iter().map(|i| i.role).chain(self.params.iter().map(|p| p.name)).collect()
    }
}

/// Every stage kind, in pipeline order.
pub const STAGE_KINDS: &[StageKind] = &[
    stages::load::KIND,
    stages::model::TRAIN,
    stages::model::LOAD_MODEL,
    stages::audit::CLUSTER,
    stages::audit::ESTIMATE,
    stages::audit::CHECK,
    stages::search::GENERATE,
    stages::search::VERIFY,
    stages::group::GROUP_SCORE,
    stages::group::GROUP_METRICS,
    stages::retrain::RETRAIN,
];

/// The kind called `name`.
pub fn find(name: &str) -> Option<&'static StageKind> {
    STAGE_KINDS.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

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
                assert!(k.keys().contains(&key.as_str()), "{} example uses undeclared key {key}", k.name);
            }
            let mut keys = k.keys();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), k.keys().len(), "{} declares a key twice", k.name);
        }
    }
}
