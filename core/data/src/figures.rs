//! What a figures struct writes into its entry of `summary.json`: its top-level names and their
//! shapes. The trait sits on this floor, below the models, so that a figures struct of the models
//! crate (what opening a model learned) derives it too; the engine re-exports it as
//! `fairpipe_core::stage::kind::FigureNames`.

/// What a top-level figure of `summary.json` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A number, or `true`/`false` (optional or not: an undefined one is written `null`).
    Number,
    /// Words.
    Text,
    /// A list (or a fixed array) of values.
    List,
    /// An object of named values.
    Object,
}

/// One top-level name a figures struct serializes, with what its value holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FigureName {
    /// The name in the stage's entry of `summary.json`.
    pub name: &'static str,
    /// What its value holds.
    pub shape: Shape,
}

/// A figures struct's own description of what it writes into `summary.json`: the top-level names
/// serde gives it, in field order, with their shapes, and whether a plugin may add names. Derived
/// with `#[derive(FigureNames)]` (from `fairpipe-derive`, re-exported here) from the struct's
/// fields and their serde attributes (`rename`, `skip`, `skip_serializing`, `flatten`), so the
/// names are written once, in the struct.
pub trait FigureNames {
    /// Whether a flattened map lets a plugin add names of its own.
    const OPEN: bool;
    /// The top-level names the struct serializes, in field order (a flattened struct's in its
    /// place).
    fn figure_names() -> Vec<FigureName>;
}

/// `#[derive(FigureNames)]`: implements [`FigureNames`] from a figures struct's fields.
pub use fairpipe_derive::FigureNames;
