//! What can go wrong on an LLM model's own side — its prompt template and `names` table, its
//! response cache, its plan and responses files, its HTTP client ([`LlmError`]) — each turned into
//! a [`ModelError::Remote`] naming the endpoint.

use crate::error::ModelError;

/// A problem of an LLM model's own files or settings (not of the server's answers).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The prompt template's file cannot be read.
    #[error("cannot read the prompt template {shown}: {message}")]
    TemplateUnreadable {
        /// The template as the pipeline names it.
        shown: String,
        /// What the system said.
        message: String,
    },
    /// The prompt template does not parse or render.
    #[error("the prompt template {shown}: {message}")]
    Template {
        /// The template's file.
        shown: String,
        /// What minijinja said (with its line).
        message: String,
    },
    /// The template renders the same prompt whatever a protected column's value.
    #[error(
        "the prompt template {shown} renders the same prompt when {column} is {other} instead of {value}: the model would never see it, so no test could find discrimination on it; write {{{{ {column} }}}} (or a name from `names`) into the template"
    )]
    ProtectedUnsaid {
        /// The template's file.
        shown: String,
        /// The protected column.
        column: String,
        /// The value tried instead.
        other: String,
        /// The row's value.
        value: String,
    },
    /// A pairwise template renders the same prompt with its two candidates swapped.
    #[error(
        "the pairwise template {shown} renders the same prompt with its two candidates swapped: the model could not tell which is which; write each candidate's name or protected value, e.g. {{{{ first.name }}}} and {{{{ second.name }}}}, into the template"
    )]
    PairUnsaid {
        /// The template's file.
        shown: String,
    },
    /// `llm.names` names a column the data does not have.
    #[error("`llm.names` names column {column:?}, which is not a feature; the features: {features}")]
    NamesUnknownColumn {
        /// The column named.
        column: String,
        /// The features, comma-separated.
        features: String,
    },
    /// `llm.names` names a column that is not protected.
    #[error("`llm.names.{column}`: names stand in for a protected column, and {column:?} is not protected")]
    NamesUnprotected {
        /// The column named.
        column: String,
    },
    /// `llm.names.COLUMN` lacks one of the column's values.
    #[error("`llm.names.{column}` gives no names for the value {value:?}; its values: {values}")]
    NamesMissingValue {
        /// The protected column.
        column: String,
        /// The value without names.
        value: String,
        /// The column's values, comma-separated.
        values: String,
    },
    /// `llm.names.COLUMN.VALUE` is an empty list.
    #[error("`llm.names.{column}.{value}` is an empty list")]
    NamesEmpty {
        /// The protected column.
        column: String,
        /// The value.
        value: String,
    },
    /// `llm.names.COLUMN` names a value the column does not take.
    #[error("`llm.names.{column}` names the value {extra:?}, which {column} does not take; its values: {values}")]
    NamesExtraValue {
        /// The protected column.
        column: String,
        /// The value it does not take.
        extra: String,
        /// The column's values, comma-separated.
        values: String,
    },
    /// The response cache (SQLite) failed.
    #[error("the response cache {path}: {message}")]
    Cache {
        /// The cache's file.
        path: String,
        /// What SQLite said, or why a stored answer cannot be read.
        message: String,
    },
    /// The plan's batch file cannot be written.
    #[error("cannot write the plan {path}: {message}")]
    Plan {
        /// The plan's file.
        path: String,
        /// What the system said.
        message: String,
    },
    /// The responses file cannot be opened.
    #[error("cannot read the responses {path}: {message}")]
    ResponsesUnreadable {
        /// The responses file.
        path: String,
        /// What the system said.
        message: String,
    },
    /// A line of the responses file is not a readable answer.
    #[error("{at}: {problem}")]
    ResponsesLine {
        /// `file:line`.
        at: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A request or an answer could not be written as JSON.
    #[error("{0}")]
    Json(String),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(String),
}

impl LlmError {
    /// The error as the model at `url`'s.
    pub fn at(self, url: impl Into<String>) -> ModelError {
        ModelError::Remote { url: url.into(), message: self.to_string() }
    }
}
