//! Tables across the Arrow C stream interface: any Python object with `__arrow_c_stream__`
//! (Polars, pandas ≥ 2.2, pyarrow, DuckDB) read as a Polars `DataFrame`, and the engine's result
//! tables handed back the same way.
//!
//! Reading takes the producer's buffers as they are: numeric, boolean and validity buffers are
//! not copied (Polars keeps the producer's memory alive through the imported arrays); string
//! columns are converted to Polars' string-view layout, which copies them. The engine's `load`
//! then encodes every used column into its own `f64` matrix (one copy, as from a CSV file).

use polars::prelude::{Column, DataFrame, PlSmallStr, Series};
use polars_arrow::array::{Array, StructArray};
use polars_arrow::datatypes::{ArrowDataType, Field};
use polars_arrow::ffi::{export_iterator, ArrowArrayStream, ArrowArrayStreamReader};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

/// The capsule name the Arrow PyCapsule interface gives a C stream.
const STREAM_CAPSULE: &std::ffi::CStr = c"arrow_array_stream";

/// Read `obj` (an object with `__arrow_c_stream__`) into a `DataFrame`, one chunk per batch the
/// producer sends.
pub fn frame_from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<DataFrame> {
    if !obj.hasattr("__arrow_c_stream__")? {
        let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        return Err(PyTypeError::new_err(format!(
            "{what}: a {type_name} has no __arrow_c_stream__; pass a pandas (>= 2.2, with pyarrow), Polars or pyarrow table"
        )));
    }
    let capsule = obj.call_method0("__arrow_c_stream__")?;
    let capsule =
        capsule.cast::<PyCapsule>().map_err(|_| PyTypeError::new_err(format!("{what}: __arrow_c_stream__ did not return a capsule")))?;
    let pointer = capsule.pointer_checked(Some(STREAM_CAPSULE))?;
    // SAFETY: the capsule is named "arrow_array_stream", so by the Arrow PyCapsule interface it
    // holds a valid `ArrowArrayStream` (the C struct, which polars_arrow's type mirrors field for
    // field). We move it out and leave a released (empty) stream behind, as the interface asks of
    // a consumer: the capsule's destructor then sees `release == NULL` and does nothing, and the
    // stream is released once, by our copy's `Drop`.
    let stream = unsafe { std::ptr::replace(pointer.as_ptr().cast::<ArrowArrayStream>(), ArrowArrayStream::empty()) };
    let fail = |e: polars::prelude::PolarsError| PyValueError::new_err(format!("{what}: reading the Arrow stream: {e}"));
    // SAFETY: the stream came from the producer through the interface above, which promises a
    // stream following the C stream interface.
    let mut reader = unsafe { ArrowArrayStreamReader::try_new(Box::new(stream)) }.map_err(fail)?;
    let ArrowDataType::Struct(fields) = reader.field().dtype().clone() else {
        return Err(PyValueError::new_err(format!(
            "{what}: the Arrow stream does not hold a table (its type is {:?})",
            reader.field().dtype()
        )));
    };
    let mut chunks: Vec<Vec<Box<dyn Array>>> = vec![Vec::new(); fields.len()];
    // SAFETY: as above: every array the stream hands out follows the C data interface.
    while let Some(batch) = unsafe { reader.next() } {
        let batch = batch.map_err(fail)?;
        let Some(batch) = batch.as_any().downcast_ref::<StructArray>() else {
            return Err(PyValueError::new_err(format!("{what}: a batch of the Arrow stream is not a record batch")));
        };
        if batch.null_count() > 0 {
            return Err(PyValueError::new_err(format!("{what}: a record batch has null rows")));
        }
        for (column, child) in chunks.iter_mut().zip(batch.values()) {
            if child.len() != batch.len() {
                return Err(PyValueError::new_err(format!(
                    "{what}: a record batch of {} rows has a column of {}",
                    batch.len(),
                    child.len()
                )));
            }
            column.push(child.clone());
        }
    }
    let mut columns = Vec::with_capacity(fields.len());
    for (field, column) in fields.iter().zip(chunks) {
        let series = if column.is_empty() {
            Series::new_empty(field.name.clone(), &polars::prelude::DataType::from_arrow_field(field))
        } else {
            Series::try_from((field, column)).map_err(|e| {
                PyValueError::new_err(format!(
                    "{what}: column {:?} (Arrow type {:?}) cannot be read: {e}",
                    field.name.as_str(),
                    field.dtype
                ))
            })?
        };
        columns.push(Column::from(series));
    }
    DataFrame::new_infer_height(columns).map_err(fail)
}

/// Where the values of each numeric column of `obj` sit once read as the engine reads tables:
/// column name → the address of each chunk's value buffer (8-, 4-byte integers and floats; other
/// columns are left out). Equal to the producer's own buffer addresses when nothing was copied.
#[pyfunction]
pub fn arrow_buffer_addresses(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(String, Vec<usize>)>> {
    use polars_arrow::array::PrimitiveArray;
    let frame = frame_from_py(obj, "data")?;
    let mut out = Vec::new();
    for column in frame.columns() {
        let series = column.as_materialized_series();
        let mut addresses = Vec::new();
        for chunk in series.chunks() {
            let any = chunk.as_any();
            let address = if let Some(a) = any.downcast_ref::<PrimitiveArray<i64>>() {
                a.values().as_ptr() as usize
            } else if let Some(a) = any.downcast_ref::<PrimitiveArray<f64>>() {
                a.values().as_ptr() as usize
            } else if let Some(a) = any.downcast_ref::<PrimitiveArray<i32>>() {
                a.values().as_ptr() as usize
            } else if let Some(a) = any.downcast_ref::<PrimitiveArray<f32>>() {
                a.values().as_ptr() as usize
            } else {
                continue;
            };
            addresses.push(address);
        }
        if !addresses.is_empty() {
            out.push((column.name().to_string(), addresses));
        }
    }
    Ok(out)
}

/// A result table offered to Python through `__arrow_c_stream__` (read it with
/// `polars.DataFrame(t)`, `pyarrow.table(t)`).
#[pyclass(module = "fairpipe_rs._native", frozen)]
pub struct ArrowTable {
    frame: DataFrame,
    /// Arrow's newest types (string views; what Polars reads without a copy) or the oldest
    /// (large strings; what every pyarrow and pandas version reads).
    newest: bool,
}

impl ArrowTable {
    /// Offer `frame` (with string views when `newest`).
    pub fn new(frame: DataFrame, newest: bool) -> Self {
        ArrowTable { frame, newest }
    }
}

#[pymethods]
impl ArrowTable {
    /// The table as an Arrow C stream (the Arrow PyCapsule interface).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(&self, py: Python<'py>, requested_schema: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyCapsule>> {
        // A requested schema is a hint the producer may ignore (the interface says so).
        let _ = requested_schema;
        let mut frame = self.frame.clone();
        frame.align_chunks_par();
        let level = if self.newest { polars::prelude::CompatLevel::newest() } else { polars::prelude::CompatLevel::oldest() };
        let batches: Vec<_> = frame.iter_chunks(level, false).collect();
        let fields: Vec<Field> = match batches.first() {
            Some(batch) => batch.schema().iter_values().cloned().collect(),
            None => frame.columns().iter().map(|c| c.dtype().to_arrow_field(c.name().clone(), level)).collect(),
        };
        let dtype = ArrowDataType::Struct(fields.clone());
        let arrays = batches.into_iter().map(move |batch| {
            let height = batch.height();
            let arrays = batch.into_arrays();
            Ok(StructArray::new(ArrowDataType::Struct(fields.clone()), height, arrays, None).boxed())
        });
        let stream = export_iterator(Box::new(arrays), Field::new(PlSmallStr::EMPTY, dtype, false));
        PyCapsule::new_with_value(py, stream, STREAM_CAPSULE)
    }

    /// Rows in the table.
    fn __len__(&self) -> usize {
        self.frame.height()
    }
}
