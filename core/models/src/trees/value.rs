//! The values flowing through a graph the tree executor runs, for a batch of rows, and their
//! element types as followed at read time.

use std::sync::Arc;

use crate::outputs::ClassKey;

/// A value flowing through the graph for a batch of rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A float tensor, `columns` per row.
    Floats {
        /// Row-major values.
        values: Vec<f32>,
        /// Values per row.
        columns: usize,
    },
    /// An integer tensor.
    Ints {
        /// Row-major values.
        values: Vec<i64>,
        /// Values per row.
        columns: usize,
    },
    /// A string tensor, as indices into a table.
    Texts {
        /// Row-major indices into `table`.
        index: Vec<u32>,
        /// The strings.
        table: Arc<Vec<String>>,
        /// Values per row.
        columns: usize,
    },
    /// A ZipMap's output: one map from class to probability per row, kept as the probabilities
    /// in `keys` order.
    Maps {
        /// Row-major probabilities.
        values: Vec<f32>,
        /// The classes, one per column.
        keys: Arc<Vec<ClassKey>>,
    },
}

/// The element type of a value, as followed at read time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    /// float32.
    Float,
    /// int64.
    Int,
    /// string.
    Text,
    /// A ZipMap's maps.
    Map,
}

/// Why an operator cannot run on the values it was given (a graph [`Graph::read`] covers runs;
/// these name what went wrong if a value is not what reading it followed).
///
/// [`Graph::read`]: super::graph::Graph::read
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A step's input or a wanted output was not computed.
    #[error("an {0} was not computed")]
    NotComputed(&'static str),
    /// An operator of numbers given something else.
    #[error("{0} needs a number tensor")]
    NeedsNumbers(&'static str),
    /// An operator of floats given something else.
    #[error("{0} needs a float tensor")]
    NeedsFloats(&'static str),
    /// An operator given a map.
    #[error("{0} of a map")]
    OfAMap(&'static str),
    /// A tree ensemble reading a feature past the row's end.
    #[error("the tree ensemble reads feature {feature} of {columns}")]
    FeatureOutOfRange {
        /// The feature read.
        feature: usize,
        /// Values per row.
        columns: usize,
    },
    /// A cast not covered for the value's type.
    #[error("cast of this value to element type {0}")]
    Cast(i64),
    /// A ZipMap whose classes do not match the columns.
    #[error("ZipMap of {columns} columns with {classes} classes")]
    ZipMapClasses {
        /// Values per row.
        columns: usize,
        /// Classes it maps.
        classes: usize,
    },
    /// An ArrayFeatureExtractor index past the row's end.
    #[error("ArrayFeatureExtractor index {index} of {columns} columns")]
    ExtractorIndex {
        /// The index.
        index: usize,
        /// Values per row.
        columns: usize,
    },
    /// A constant of neither one value nor one per column.
    #[error("a constant of {values} values against {columns} columns")]
    ConstantWidth {
        /// The constant's values.
        values: usize,
        /// Values per row.
        columns: usize,
    },
    /// A Concat of values of different types.
    #[error("Concat of values of different types, or not numbers")]
    ConcatTypes,
    /// A LabelEncoder given values of another type than its keys.
    #[error("LabelEncoder of a value of another type than its keys")]
    LabelEncoderType,
    /// A OneHotEncoder given a category it does not know, with `zeros = 0`.
    #[error("OneHotEncoder: a category it does not know, and zeros = 0")]
    UnknownCategory,
}
