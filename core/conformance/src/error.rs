//! [`SubjectError`]: why a plugin could not be taken under test, or its `describe` read.

use std::fmt;
use std::path::PathBuf;

use fairpipe_ffi::DescriptorError;

/// Why a plugin could not be taken under test ([`crate::Subject::from_entry`],
/// [`crate::Subject::from_library`]) or its description read ([`crate::Subject::describe`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SubjectError {
    /// The entry function's descriptor is refused (no descriptor, another ABI major, too small).
    Descriptor(DescriptorError),
    /// The library file could not be loaded.
    Load {
        /// The file.
        path: PathBuf,
        /// The loader's message.
        reason: String,
    },
    /// The library has neither its per-crate entry symbol nor the plain one.
    NoEntrySymbol {
        /// The file.
        path: PathBuf,
    },
    /// `describe` returned a failure status.
    DescribeFailed {
        /// The status.
        status: i32,
        /// The plugin's message.
        message: String,
    },
    /// `describe` returned text that is not JSON.
    DescribeNotJson {
        /// The JSON reader's message.
        reason: String,
    },
}

impl fmt::Display for SubjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubjectError::Descriptor(e) => e.fmt(f),
            SubjectError::Load { path, reason } => write!(f, "{}: {reason}", path.display()),
            SubjectError::NoEntrySymbol { path } => write!(f, "{}: no fairpipe entry symbol", path.display()),
            SubjectError::DescribeFailed { status, message } => write!(f, "describe failed with status {status}: {message}"),
            SubjectError::DescribeNotJson { reason } => write!(f, "describe returned invalid JSON: {reason}"),
        }
    }
}

impl std::error::Error for SubjectError {}

impl From<DescriptorError> for SubjectError {
    fn from(e: DescriptorError) -> Self {
        SubjectError::Descriptor(e)
    }
}
