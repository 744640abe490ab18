//! Typed errors of the engine, one enum per area. Each variant says what went wrong and where, in
//! words a user can act on.

use std::path::PathBuf;

pub use fairpipe_data::error::{ConfigProblem, DataError};
pub use fairpipe_models::error::ModelError;

/// Every problem found in a pipeline file; reported together so a user fixes them in one pass.
/// Shown as the first [`ConfigError::SHOWN`] problems and the count of the rest.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", self.describe())]
pub struct ConfigError {
    /// The problems, in file order.
    pub problems: Vec<ConfigProblem>,
}

impl ConfigError {
    /// How many problems the message lists; the rest are counted.
    pub const SHOWN: usize = 50;

    fn describe(&self) -> String {
        let mut text = format!("{} problem(s) in the pipeline:", self.problems.len());
        for p in self.problems.iter().take(Self::SHOWN) {
            text.push_str(&format!("\n  {p}"));
        }
        if self.problems.len() > Self::SHOWN {
            text.push_str(&format!("\n  … and {} more (fix these first)", self.problems.len() - Self::SHOWN));
        }
        text
    }
}

/// Writing a result file failed.
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot write: {message}")]
pub struct OutputError {
    /// The file being written.
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}

/// Anything that can stop a pipeline.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The pipeline file is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A data file is invalid.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A model failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A result could not be written.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// A plugin failed or was refused.
    #[error(transparent)]
    Plugin(#[from] PluginHostError),
    /// Shards' parts cannot be merged.
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// A stage failed; `source` says why.
    #[error("stage `{stage}` ({kind}) failed: {source}{}", place_of(.place))]
    Stage {
        /// The stage name.
        stage: String,
        /// The stage kind.
        kind: String,
        /// The cause.
        source: Box<Error>,
        /// Where the pipeline key the refusal names is (a [`StageError`]'s key), when it names one.
        place: Option<Box<KeyPlace>>,
    },
    /// A stage refused to run: the data or the model contradicts one of its keys.
    #[error(transparent)]
    Refused(#[from] StageError),
    /// A stage's figures could not be read as the type asked for.
    #[error(transparent)]
    Figures(#[from] crate::stage::summary::FiguresError),
    /// The audit would need more than a limit of [`crate::limits`] allows.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// A stage received something it cannot work with.
    #[error("{0}")]
    Invalid(String),
    /// Something the runner guarantees did not hold (an input of the wrong kind reaching a stage,
    /// pieces that do not fit together): a fairpipe bug, not a problem of the pipeline or the data.
    #[error("internal error (a fairpipe bug; please report it with the pipeline): {0}")]
    Internal(String),
}

impl Error {
    /// The pipeline key a refusal names (through stage wrappers), if any.
    pub fn refused_key(&self) -> Option<&'static str> {
        match self {
            Error::Refused(e) => Some(e.key()),
            Error::Stage { source, .. } => source.refused_key(),
            _ => None,
        }
    }

    /// The input (by role) of the refusing stage whose stage holds [`Error::refused_key`], when
    /// the key is not the refusing stage's own ([`StageError::InputContradicts`]).
    pub fn refused_input(&self) -> Option<&'static str> {
        match self {
            Error::Refused(e) => e.input_role(),
            Error::Stage { source, .. } => source.refused_input(),
            _ => None,
        }
    }
}

/// An audit above one of the limits, with what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// More combinations of the protected attributes' values than
    /// [`crate::limits::MAX_PROTECTED_COMBINATIONS`].
    #[error("the protected attributes {attributes} give {count} combinations, more than the limit of {limit} (every audited input is checked against each); {fix}")]
    ProtectedCombinations {
        /// The attributes and their levels, in words.
        attributes: String,
        /// How many combinations they give.
        count: String,
        /// The limit.
        limit: u64,
        /// What to change.
        fix: &'static str,
    },
    /// More model rows than [`crate::limits::MAX_MODEL_ROWS`].
    #[error("this audit needs {rows} model rows ({formula}), more than the limit of {limit}; {fix}")]
    ModelRows {
        /// How many.
        rows: String,
        /// How they are counted ("trials × samples × combinations = …").
        formula: String,
        /// The limit.
        limit: u64,
        /// What to change.
        fix: &'static str,
    },
}

/// Why a stage refused to run when the data or the model contradicts one of its keys. The stage
/// names the key; the runner adds where the key is in the pipeline file ([`KeyPlace`]), beside
/// what the message says of the data's file, line and column.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StageError {
    /// A count a key asks for is above what the data has (`k` above the rows to cluster,
    /// `max_features` above the features).
    #[error("`{key}` = {value}, but {what} number only {available}; lower `{key}` to at most {available}")]
    AboveAvailable {
        /// The key.
        key: &'static str,
        /// Its value.
        value: usize,
        /// What there is too little of.
        what: &'static str,
        /// How many there are.
        available: usize,
    },
    /// What key `key` names cannot be used as the stage needs it (a loaded model where a trained
    /// one is needed, an input the setting needs not connected, an input with nothing in it to
    /// work with); `why` says what and how to fix it.
    #[error("{why}")]
    Cannot {
        /// The key to change (or to add).
        key: &'static str,
        /// What is wrong and the fix.
        why: String,
    },
    /// Key `key` names a value (a group, a level) that the data does not have.
    #[error("`{key}`: {column} has no group `{value}` in these rows; its groups: {}", present.join(", "))]
    NotInData {
        /// The key.
        key: &'static str,
        /// The column (or attribute) searched.
        column: String,
        /// The value the key names.
        value: String,
        /// The values the column has.
        present: Vec<String>,
    },
    /// The data or the model contradicts key `key`; `source` says how (naming the data's file and
    /// column, or the model's outputs).
    #[error("{source}")]
    Contradicts {
        /// The key to change (or to add).
        key: &'static str,
        /// What the data or the model says.
        source: Box<Error>,
    },
    /// What the stage read through input `role` contradicts key `key` of the stage that made it
    /// (a `train` stage's rows of one class: the `label` of the `load` stage its `data` names);
    /// `source` says how.
    #[error("{source}")]
    InputContradicts {
        /// The input, by role (`data`).
        role: &'static str,
        /// The key of the input's stage to change.
        key: &'static str,
        /// What the data says.
        source: Box<Error>,
    },
}

impl StageError {
    /// The pipeline key the refusal names.
    pub fn key(&self) -> &'static str {
        match self {
            StageError::AboveAvailable { key, .. }
            | StageError::Cannot { key, .. }
            | StageError::NotInData { key, .. }
            | StageError::Contradicts { key, .. }
            | StageError::InputContradicts { key, .. } => key,
        }
    }

    /// The input (by role) whose stage holds [`StageError::key`], when it is not the refusing
    /// stage's own key.
    pub fn input_role(&self) -> Option<&'static str> {
        match self {
            StageError::InputContradicts { role, .. } => Some(role),
            _ => None,
        }
    }

    /// A refusal of what key `key` names: `why` says what is wrong and the fix.
    pub fn cannot(key: &'static str, why: impl Into<String>) -> Error {
        Error::Refused(StageError::Cannot { key, why: why.into() })
    }

    /// `source`, refused as contradicting key `key`.
    pub fn contradicts(key: &'static str, source: impl Into<Error>) -> Error {
        Error::Refused(StageError::Contradicts { key, source: Box::new(source.into()) })
    }
}

/// Where a stage's key is in the pipeline file, or, for a key the stage does not write, where the
/// stage's table is (add it there).
#[derive(Debug, Clone, PartialEq)]
pub struct KeyPlace {
    /// The key.
    pub key: String,
    /// The pipeline file.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// Whether the key is written there (else the place is the stage's header).
    pub written: bool,
}

impl std::fmt::Display for KeyPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = format!("{}:{}:{}", self.file.display(), self.line, self.col);
        if self.written {
            write!(f, "the key `{}` is at {at}", self.key)
        } else {
            write!(f, "add `{}` to the stage at {at}", self.key)
        }
    }
}

/// The place of a stage error's key, as the end of its message.
fn place_of(place: &Option<Box<KeyPlace>>) -> String {
    place.as_ref().map(|p| format!(" (pipeline: {p})")).unwrap_or_default()
}

/// A plugin could not be found, loaded or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PluginHostError {
    /// No built-in and no library of that name on the search path; check the name, or put the
    /// library in a folder of `plugin_path` / `FAIRPIPE_PLUGIN_PATH`, or give the stage a `path`.
    #[error("no plugin `{name}` found{detail}")]
    NotFound {
        /// The name asked for.
        name: String,
        /// "Did you mean", the built-ins, the file looked for and the folders searched.
        detail: String,
    },
    /// The library could not be opened or lacks an entry symbol.
    #[error("{path}: cannot load plugin: {message}")]
    Load {
        /// The library.
        path: PathBuf,
        /// The loader's message.
        message: String,
    },
    /// The plugin was built against another ABI major; rebuild it against this fairpipe.
    #[error("{origin}: plugin ABI version {plugin_major}.{plugin_minor} does not match the host's {host_major}.{host_minor}; rebuild the plugin against this fairpipe")]
    AbiMismatch {
        /// Where the plugin came from (its file, or "built-in").
        origin: String,
        /// The plugin's major.
        plugin_major: u32,
        /// The plugin's minor.
        plugin_minor: u32,
        /// The host's major.
        host_major: u32,
        /// The host's minor.
        host_minor: u32,
    },
    /// The plugin's descriptor or description is malformed.
    #[error("{origin}: invalid plugin: {message}")]
    Invalid {
        /// Where the plugin came from.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// The plugin refused its parameters.
    #[error("plugin `{plugin}`: {message}")]
    InvalidParams {
        /// The plugin.
        plugin: String,
        /// Its message.
        message: String,
    },
    /// The plugin's report does not read as its kind's report (a group auditor's malformed group
    /// conditions, no report at all).
    #[error("plugin `{plugin}` sent a report fairpipe cannot read: {message}")]
    BadReport {
        /// The plugin.
        plugin: String,
        /// What is wrong with it.
        message: String,
    },
    /// The plugin failed or panicked while running.
    #[error("plugin `{plugin}` failed ({what}): {message}")]
    Failed {
        /// The plugin.
        plugin: String,
        /// "panic", "invalid input", "compute error".
        what: String,
        /// Its message.
        message: String,
    },
    /// The plugin did not return within the grace period after the host asked it to stop (its
    /// time budget was spent or the run was interrupted): it ignores `should_stop`. The run ends;
    /// fix the plugin to poll `should_stop` in its search loop.
    #[error("plugin `{plugin}` did not return within {grace} s of being asked to stop ({why}); the run is ended — the plugin must check should_stop in its search loop")]
    Unresponsive {
        /// The plugin.
        plugin: String,
        /// Why it was asked to stop.
        why: String,
        /// The grace period in seconds.
        grace: f64,
    },
    /// The user interrupted the run (SIGINT) while the plugin was searching; nothing is written.
    #[error("plugin `{plugin}`: interrupted")]
    Interrupted {
        /// The plugin.
        plugin: String,
    },
}

/// Result with the engine's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why parts cannot be merged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// A part's manifest is missing or unreadable.
    #[error("{path}: {message}")]
    Manifest {
        /// The part folder or its manifest.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Two parts come from different runs.
    #[error("{part} does not belong with {first}: {what} differs ({theirs} here, {ours} in {first}); merge parts of one run only")]
    Mismatch {
        /// The part that differs.
        part: PathBuf,
        /// The first part.
        first: PathBuf,
        /// What differs.
        what: &'static str,
        /// Its value in `part`.
        theirs: String,
        /// Its value in `first`.
        ours: String,
    },
    /// The parts do not cover every unit exactly once.
    #[error("the parts do not cover the run's {total} units exactly once:\n{problems}")]
    Cover {
        /// Units in the run.
        total: usize,
        /// One line per missing or duplicated unit.
        problems: String,
    },
    /// A part's recorded gate condition no longer reads.
    #[error("the parts' gate condition `{condition}`: {message}")]
    Gate {
        /// The condition as recorded.
        condition: String,
        /// Why it does not read.
        message: String,
    },
    /// The pipeline the parts record splits into other units here.
    #[error("the pipeline recorded in the parts ({}) no longer splits into the same units here (another fairpipe build?); run the shards and the merge with one fairpipe", .pipeline.display())]
    Changed {
        /// The pipeline file.
        pipeline: PathBuf,
    },
    /// A piece file holds another unit than its place says.
    #[error("{}: holds unit `{found}`, expected `{expected}`", .path.display())]
    WrongUnit {
        /// The piece file.
        path: PathBuf,
        /// The unit it holds.
        found: String,
        /// The unit of its place.
        expected: String,
    },
    /// A stage computed a piece that is no unit of the run.
    #[error("stage `{stage}` computed piece {piece}, which is not a unit of the run")]
    UnknownPiece {
        /// The stage.
        stage: String,
        /// The piece's index.
        piece: usize,
    },
    /// A stage's result differs between the shards and the merge.
    #[error("stage `{stage}` did not give the same result in the shards and in the merge ({differing}): the pieces cannot be combined; make it reproducible (a fixed seed for the library that trains it) or run the pipeline unsharded")]
    NotReproducible {
        /// The stage.
        stage: String,
        /// What differs, and where.
        differing: String,
    },
}
