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
