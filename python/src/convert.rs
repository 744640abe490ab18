//! Values across the Python boundary as Python objects, never as JSON text: the engine's JSON
//! values (a summary, a model's view of the data) become dicts, lists, strings, numbers, booleans
//! and `None`; the caller's arguments (`options=`, `search=`, `favourable=`, a model dict) are read
//! from the same kinds of objects, with NumPy scalars taken as their Python value.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// `value` as a Python object: objects as dicts, arrays as lists, numbers as `int` or `float`.
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// `obj` (a caller's argument, `what` names it: `options["estimate"]`) as a JSON value: dicts with
/// string keys, lists and tuples, strings, booleans, integers, finite floats, `None`, and NumPy
/// scalars (through their `item()`). Anything else is a `TypeError` naming where it was found.
pub fn from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        return obj.extract::<u64>().map(Value::from).map_err(|_| PyTypeError::new_err(format!("{what}: {obj} is too large a number")));
    }
    if obj.is_instance_of::<PyFloat>() {
        let f: f64 = obj.extract()?;
        return Number::from_f64(f).map(Value::Number).ok_or_else(|| PyTypeError::new_err(format!("{what}: {f} is not a finite number")));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(Value::String(obj.extract()?));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::new();
        for (key, item) in dict.iter() {
            let Ok(name) = key.extract::<String>() else {
                return Err(PyTypeError::new_err(format!(
                    "{what}: the key {key} is not a string; the keys are stage keys or parameter names"
                )));
            };
            let inner = format!("{what}[{name:?}]");
            map.insert(name, from_py(&item, &inner)?);
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'_, PyAny>> = obj.extract()?;
        return items
            .iter()
            .enumerate()
            .map(|(i, item)| from_py(item, &format!("{what}[{i}]")))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    // A NumPy scalar (np.int64, np.float32, np.bool_, np.str_): its Python value.
    let module = obj.get_type().module().map(|m| m.to_string()).unwrap_or_default();
    if module == "numpy" && obj.hasattr("item")? {
        return from_py(&obj.call_method0("item")?, what);
    }
    let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    Err(PyTypeError::new_err(format!(
        "{what}: a {type_name} is not a value a pipeline key takes; give a str, int, float, bool, None, list or dict"
    )))
}
