//! The stage kinds, one module per kind (its config, its run, its figures and what they mean),
//! listed once in [`KINDS`] (the registry), plus the helpers several kinds share: [`options`]
//! (shared config pieces), [`model_output`] (what a model stage reports) and [`mitigate`]
//! (TestSGD's mitigation, used by `retrain`).

pub mod bias_audit;
pub mod check;
pub mod check_text;
pub mod cluster;
#[cfg(test)]
pub mod coin;
pub mod estimate;
pub mod generate;
pub mod group_metrics;
pub mod group_score;
pub mod group_score_text;
pub mod label_value;
pub mod linked;
pub mod llm_prompts;
pub mod load;
pub mod load_model;
pub mod load_text;
pub mod load_text_model;
pub mod mitigate;
pub mod model_output;
pub mod options;
pub mod pairwise;
pub mod predict;
pub mod ranking;
pub mod retrain;
pub mod retrain_text;
pub mod train;
pub mod train_text;
pub mod verify;

use crate::stage::kind::StageKind;
use crate::stage::meaning::Meaning;

/// Every stage kind, in pipeline order: the one explicit list (a new kind is its file plus one
/// line here). The runner reads it through `crate::run::registry`; the verdict and the report
/// read what each kind's figures mean from it ([`meaning`]).
pub const KINDS: &[StageKind] = &[
    load::KIND,
    train::KIND,
    load_model::KIND,
    cluster::KIND,
    estimate::KIND,
    check::KIND,
    predict::KIND,
    generate::KIND,
    verify::KIND,
    group_score::KIND,
    group_metrics::KIND,
    bias_audit::KIND,
    pairwise::KIND,
    ranking::KIND,
    retrain::KIND,
    load_text::KIND,
    train_text::KIND,
    load_text_model::KIND,
    check_text::KIND,
    group_score_text::KIND,
    retrain_text::KIND,
];

/// Kinds that exist only in fairpipe-core's own tests (`coin.rs`): found by name like the kinds
/// above, listed nowhere a user reads.
#[cfg(test)]
const TEST_KINDS: &[StageKind] = &[coin::KIND];

/// The kind called `name`.
pub fn kind(name: &str) -> Option<&'static StageKind> {
    let found = KINDS.iter().find(|k| k.name == name);
    #[cfg(test)]
    let found = found.or_else(|| TEST_KINDS.iter().find(|k| k.name == name));
    found
}

/// What the figures of the kind called `name` mean ([`Meaning::NONE`] for a kind this build does
/// not know, e.g. in a summary written by a newer fairpipe).
pub fn meaning(name: &str) -> Meaning {
    kind(name).map_or(Meaning::NONE, |k| k.figures.meaning)
}
