//! The SDK's errors (a leaf: the host, the parameters, the sink and the SDK all report through
//! them): [`PluginError`], why a plugin call failed; [`ParamError`], why its parameters were
//! refused; [`HostCallError`], why a host callback failed. Each one's text is what crosses the C
//! boundary as the call's message.

use std::fmt;

/// Why a plugin call failed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PluginError {
    /// A parameter is unknown, of the wrong type or out of range.
    InvalidParams(ParamError),
    /// The domain or seeds cannot be worked with.
    InvalidInput(String),
    /// The computation failed.
    Compute(String),
    /// A host callback failed: which one, and why.
    Host {
        /// The callback.
        call: HostCall,
        /// Why it failed.
        error: HostCallError,
    },
    /// The budget is spent or the host asked to stop: not a failure, the run ends normally.
    Stopped,
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginError::InvalidParams(e) => e.fmt(f),
            PluginError::InvalidInput(m) | PluginError::Compute(m) => f.write_str(m),
            PluginError::Host { call, error } => write!(f, "the host's {call} failed: {error}"),
            PluginError::Stopped => f.write_str("stopped"),
        }
    }
}

/// Its text holds its cause's, so no cause is chained as a `source`.
impl std::error::Error for PluginError {}

impl From<ParamError> for PluginError {
    fn from(e: ParamError) -> Self {
        PluginError::InvalidParams(e)
    }
}

/// Why a plugin's parameters were refused: the variants about one key hold it
/// ([`ParamError::key`]), and the text is what `fairpipe validate` prints.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ParamError {
    /// The host's parameter text is not JSON.
    NotJson {
        /// The JSON reader's message.
        reason: String,
    },
    /// The parameters are not a table.
    NotATable {
        /// What was given instead, as JSON.
        found: String,
    },
    /// The table was refused as a whole, by no single key (the reader's message).
    Invalid {
        /// The reader's message.
        reason: String,
    },
    /// A key the plugin does not have.
    Unknown {
        /// The key given.
        key: String,
        /// The closest known key, when one is close enough to be a typo of it.
        suggestion: Option<String>,
        /// Every known key, in the order of the plugin's docs.
        known: Vec<String>,
    },
    /// A value of the wrong type.
    WrongType {
        /// The key.
        key: String,
        /// The JSON type of its default: `int`, `float`, `bool`, `string`, `list`, `table` (or
        /// `null`, read as a table).
        expected: &'static str,
        /// The value given, as JSON.
        found: String,
    },
    /// A value of the right type refused by the reader (a negative count, an unknown choice).
    Refused {
        /// The key.
        key: String,
        /// The value given, as JSON.
        value: String,
        /// The reader's message.
        reason: String,
    },
    /// A value below its minimum ([`crate::sdk::at_least`]).
    TooSmall {
        /// The key.
        key: String,
        /// The minimum.
        min: String,
        /// The value given.
        found: String,
    },
    /// A value outside its range ([`crate::sdk::in_range`]).
    OutOfRange {
        /// The key.
        key: String,
        /// The lowest value allowed.
        min: String,
        /// The highest value allowed.
        max: String,
        /// The value given.
        found: String,
    },
    /// A plugin's own check beyond a minimum or a range, in its words (name the key in them).
    Other(String),
}

impl ParamError {
    /// The key the error is about, when it is about one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ParamError::Unknown { key, .. }
            | ParamError::WrongType { key, .. }
            | ParamError::Refused { key, .. }
            | ParamError::TooSmall { key, .. }
            | ParamError::OutOfRange { key, .. } => Some(key),
            ParamError::NotJson { .. } | ParamError::NotATable { .. } | ParamError::Invalid { .. } | ParamError::Other(_) => None,
        }
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::NotJson { reason } => write!(f, "parameters are not valid JSON: {reason}"),
            ParamError::NotATable { found } => write!(f, "parameters must be a table, found {found}"),
            ParamError::Invalid { reason } => write!(f, "invalid parameters: {reason}"),
            ParamError::Unknown { key, suggestion, known } => {
                write!(f, "unknown parameter `{key}`")?;
                if let Some(s) = suggestion {
                    write!(f, " (did you mean `{s}`?)")?;
                }
                write!(f, "; parameters: {}", known.join(", "))
            }
            ParamError::WrongType { key, expected, found } => {
                let article = match *expected {
                    "int" => "an integer",
                    "float" => "a number",
                    "bool" => "true or false",
                    "string" => "a string",
                    "list" => "a list",
                    _ => "a table",
                };
                write!(f, "parameter `{key}` must be {article}, found {found}")
            }
            ParamError::Refused { key, value, reason } => write!(f, "parameter `{key}` = {value}: {reason}"),
            ParamError::TooSmall { key, min, found } => write!(f, "parameter `{key}` must be ≥ {min}, found {found}"),
            ParamError::OutOfRange { key, min, max, found } => write!(f, "parameter `{key}` must be in [{min}, {max}], found {found}"),
            ParamError::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ParamError {}

/// A host callback a plugin calls through [`crate::sdk::Host`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostCall {
    /// `predict`: the model's scores.
    Predict,
    /// `gradient`: the model's scores and their gradient (ABI ≥ 1.3).
    Gradient,
    /// `emit`: one case.
    Emit,
    /// `report`: an auditor's report.
    Report,
}

/// The callback's name in the ABI (`FfiCallbacks`' field): the variant's name in lower case (not
/// written out, so that no literal here reads as the stage kind `predict`).
impl fmt::Display for HostCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format!("{self:?}").to_lowercase())
    }
}

/// Why a host callback failed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HostCallError {
    /// The host returned a failure, with its message (`status N` from a host older than ABI
    /// 1.2, which cannot say more).
    Refused(String),
    /// The host has no gradient callback (its ABI is older than 1.3).
    NoGradient,
    /// The report holds a NUL byte, which a C string cannot carry.
    NulInReport,
}

impl fmt::Display for HostCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostCallError::Refused(m) => f.write_str(m),
            HostCallError::NoGradient => f.write_str("the host has no gradient callback (ABI older than 1.3)"),
            HostCallError::NulInReport => f.write_str("the report contains a NUL byte"),
        }
    }
}

impl std::error::Error for HostCallError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_call_failures_read_as_before() {
        let failed = |call, error| PluginError::Host { call, error }.to_string();
        assert_eq!(failed(HostCall::Predict, HostCallError::Refused("down".into())), "the host's predict failed: down");
        assert_eq!(
            failed(HostCall::Gradient, HostCallError::NoGradient),
            "the host's gradient failed: the host has no gradient callback (ABI older than 1.3)"
        );
        assert_eq!(failed(HostCall::Emit, HostCallError::Refused("status 3".into())), "the host's emit failed: status 3");
        assert_eq!(failed(HostCall::Report, HostCallError::NulInReport), "the host's report failed: the report contains a NUL byte");
    }
}
