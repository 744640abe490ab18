//! [`PluginError`]: why a plugin call failed (a leaf: the host, the parameters, the sink and the
//! SDK all report through it).

/// Why a plugin call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum PluginError {
    /// A parameter is unknown, of the wrong type or out of range.
    InvalidParams(String),
    /// The domain or seeds cannot be worked with.
    InvalidInput(String),
    /// The computation or a host callback failed.
    Compute(String),
    /// The budget is spent or the host asked to stop: not a failure, the run ends normally.
    Stopped,
}

impl std::fmt::Display for PluginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PluginError::InvalidParams(m) | PluginError::InvalidInput(m) | PluginError::Compute(m) => f.write_str(m),
            PluginError::Stopped => f.write_str("stopped"),
        }
    }
}

impl std::error::Error for PluginError {}
