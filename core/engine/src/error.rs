//! Typed errors of the engine, one enum per area. Each variant says what went wrong and where, in
//! words a user can act on.

use std::path::PathBuf;

/// One problem found in a pipeline file, located by line and column.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigProblem {
    /// The pipeline file.
    pub file: PathBuf,
    /// 1-based line of the offending key or value.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong and what was expected.
    pub message: String,
}

impl std::fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file.display(), self.line, self.col, self.message)
    }
}

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

/// Reading or interpreting a data file failed.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file could not be opened or parsed; check the path and the format.
    #[error("{path}: cannot read: {message}")]
    Read {
        /// The data file.
        path: PathBuf,
        /// What the reader said.
        message: String,
    },
    /// The header names a column twice; a reader would rename the second copy and use it as a
    /// feature. Rename or remove one of them.
    #[error("{path}: column `{column}` appears twice in the header (columns {first} and {second}); rename or remove one")]
    DuplicateColumn {
        /// The data file.
        path: PathBuf,
        /// The repeated name.
        column: String,
        /// 1-based position of its first occurrence.
        first: usize,
        /// 1-based position of the second.
        second: usize,
    },
    /// A row does not fit the file's structure (field count, quotes); fix the line.
    #[error("{path}: line {line}: {message}")]
    Structure {
        /// The data file.
        path: PathBuf,
        /// 1-based line where the record starts.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The file is not UTF-8 text; convert it (e.g. `iconv -f latin1 -t utf-8`).
    #[error("{path}: line {line}, column {col}: invalid UTF-8 (byte 0x{byte:02x}); convert the file to UTF-8")]
    Utf8 {
        /// The data file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        col: usize,
        /// The first invalid byte.
        byte: u8,
    },
    /// The file has a header but no data rows; point the stage at a file with data.
    #[error("{path}: the file has no data rows")]
    Empty {
        /// The data file.
        path: PathBuf,
    },
    /// A column named in the pipeline does not exist in the file.
    #[error("{path}: no column `{column}` (wanted as {role}); the file has: {available}{hint}")]
    MissingColumn {
        /// The data file.
        path: PathBuf,
        /// The missing column.
        column: String,
        /// What the column was wanted for (label, protected attribute…).
        role: String,
        /// The columns that exist.
        available: String,
        /// A "did you mean" hint, possibly empty.
        hint: String,
    },
    /// A cell in a numeric column is not a number; fix the cell or declare the column categorical.
    #[error("{path}: line {line}, column `{column}`: expected a number, found {value:?}")]
    NotNumeric {
        /// The data file.
        path: PathBuf,
        /// 1-based line in the file (the header is line 1).
        line: usize,
        /// The column.
        column: String,
        /// The offending cell.
        value: String,
    },
    /// A cell is empty or a missing-value marker while `missing = "reject"`; clean the data or set
    /// `missing = "drop"`.
    #[error("{path}: line {line}, column `{column}`: missing value (set missing = \"drop\" on the load stage to drop such rows)")]
    MissingValue {
        /// The data file.
        path: PathBuf,
        /// 1-based line in the file.
        line: usize,
        /// The column.
        column: String,
    },
    /// A column's values do not fit what the pipeline says about it.
    #[error("{path}: column `{column}`: {message}")]
    Column {
        /// The data file.
        path: PathBuf,
        /// The column.
        column: String,
        /// What was expected.
        message: String,
    },
}

/// Building, loading or running a model failed.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The ONNX file could not be loaded or optimised.
    #[error("{path}: cannot load ONNX model: {message}")]
    Onnx {
        /// The model file.
        path: PathBuf,
        /// What tract said.
        message: String,
    },
    /// The model's input width differs from the data's feature count.
    #[error("model expects {expected} input features but the data has {found}")]
    Width {
        /// What the model takes.
        expected: usize,
        /// What the data provides.
        found: usize,
    },
    /// The `output` key names an output the model does not have.
    #[error("{model}: no output named {wanted:?}; {outputs}")]
    MissingOutput {
        /// The model file or endpoint.
        model: String,
        /// The output asked for.
        wanted: String,
        /// The outputs it has ("its outputs are …"), and how to ask for one.
        outputs: String,
    },
    /// Running the model failed.
    #[error("model inference failed: {0}")]
    Inference(String),
    /// A model behind a URL could not be reached, refused a request or answered in a form
    /// fairpipe cannot read.
    #[error("{url}: {message}")]
    Remote {
        /// The endpoint (never with a token).
        url: String,
        /// What went wrong: the status and the start of the response body, or the transport error.
        message: String,
    },
    /// Training failed.
    #[error("training failed: {0}")]
    Train(String),
    /// A model returned NaN or an infinite value.
    #[error("model output {output} is {value} for row {row}{}: a model that returns NaN or infinity cannot be audited; check the row's values against the model's training data (a missing value, a category or range it never saw)", features_of(.features))]
    NotFinite {
        /// The output read.
        output: String,
        /// The row's position in the batch scored.
        row: usize,
        /// The value returned.
        value: f64,
        /// The row's encoded features, when known.
        features: Vec<f64>,
    },
    /// An output read as probabilities holds something else (logits, scores).
    #[error("model output {output} does not hold probabilities: {problem} at row {row} ({values:?}); {fix}")]
    NotProbabilities {
        /// The output read.
        output: String,
        /// The row's position in the batch scored.
        row: usize,
        /// The row's values.
        values: Vec<f64>,
        /// What is wrong with them.
        problem: String,
        /// What to set instead.
        fix: String,
    },
    /// ONNX Runtime is needed but cannot be started.
    #[error("{path}: {reason} needs ONNX Runtime, which is not available: {message}")]
    RuntimeMissing {
        /// The model file.
        path: PathBuf,
        /// Which operator, input or output needs it.
        reason: String,
        /// What was tried, and the install command.
        message: String,
    },
    /// A saved model could not be read or written.
    #[error("{path}: {message}")]
    File {
        /// The model file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// " (features [1, 2, 3])" when the features are known.
fn features_of(features: &[f64]) -> String {
    if features.is_empty() {
        String::new()
    } else {
        format!(" (encoded features {features:?})")
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
    Plugin(#[from] PluginError),
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

/// Why a stage refused to run when the data or the model contradicts one of its keys. The stage
/// names the key; the runner adds where the key is in the pipeline file ([`KeyPlace`]), beside
/// what the message says of the data's file, line and column.
#[derive(Debug, thiserror::Error)]
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
pub enum PluginError {
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
