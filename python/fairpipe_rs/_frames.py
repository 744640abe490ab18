"""Tables in: what is handed to the engine through the Arrow PyCapsule interface, and what is
remembered of the original columns so an in-process model gets them back as it was fitted."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

__all__ = ["prepare", "column_facts", "row_count", "column_values", "is_frame"]


def _kind(data: Any) -> str:
    module = type(data).__module__.split(".")[0]
    if module == "pandas" and hasattr(data, "dtypes") and hasattr(data, "columns"):
        return "pandas"
    if module == "polars" and hasattr(data, "schema"):
        return "polars"
    if module == "pyarrow" and hasattr(data, "schema") and hasattr(data, "column_names"):
        return "pyarrow"
    return "other"


def is_frame(data: Any) -> bool:
    """Whether ``data`` is a table the engine can read (it has ``__arrow_c_stream__``)."""
    return hasattr(data, "__arrow_c_stream__")


def prepare(data: Any, what: str = "data") -> Any:
    """``data`` as an object the engine reads through ``__arrow_c_stream__``.

    Numeric columns go across as they are (no copy). Categorical (dictionary-encoded) columns are
    decoded to their values first, which copies them: the engine reads categories as text. A
    pandas index other than a plain range is dropped (pandas would export it as a column).
    """
    kind = _kind(data)
    if kind == "pandas":
        import pandas as pd

        if not isinstance(data.index, pd.RangeIndex):
            data = data.reset_index(drop=True)
        categorical = [c for c, t in data.dtypes.items() if isinstance(t, pd.CategoricalDtype)]
        if categorical:
            data = data.assign(**{str(c): data[c].astype(data[c].cat.categories.dtype) for c in categorical})
        return data
    if kind == "polars":
        import polars as pl

        if isinstance(data, pl.LazyFrame):
            data = data.collect()
        categorical = [c for c, t in data.schema.items() if t == pl.Categorical or isinstance(t, pl.Enum)]
        if categorical:
            data = data.with_columns([pl.col(c).cast(pl.String) for c in categorical])
        return data
    if kind == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        for i, field in enumerate(data.schema):
            if pa.types.is_dictionary(field.type):
                data = data.set_column(i, field.name, pc.cast(data.column(i), field.type.value_type))
        return data
    if not is_frame(data):
        raise TypeError(
            f"{what}: a {type(data).__name__} is not a table; pass a pandas (>= 2.2, with pyarrow), "
            "Polars or pyarrow table, or any object with __arrow_c_stream__"
        )
    return data


def row_count(data: Any) -> Optional[int]:
    """Rows in ``data`` when it says (``len``)."""
    try:
        return len(data) if _kind(data) != "pyarrow" else data.num_rows
    except TypeError:
        return None


def column_values(data: Any, name: str) -> np.ndarray:
    """Column ``name`` of ``data`` as a NumPy array."""
    column = data[name]
    if hasattr(column, "to_numpy"):
        return np.asarray(column.to_numpy())
    return np.asarray(column)


def _text(value: Any) -> str:
    """A cell as the engine reads it (Polars' text of the value, trimmed, quotes removed)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    return str(value).strip().strip('"')


def column_facts(data: Any) -> Tuple[Dict[str, Any], Dict[str, Dict[str, Any]]]:
    """The pandas dtype of each column of ``data`` (when pandas can say), and for each text or
    boolean column the original value behind each category as the engine spells it (the engine
    trims cells: ``" Male"`` is the category ``"Male"``; the model was fitted on ``" Male"``)."""
    dtypes: Dict[str, Any] = {}
    originals: Dict[str, Dict[str, Any]] = {}
    kind = _kind(data)
    try:
        if kind == "pandas":
            empty = data.iloc[:0]
        elif kind == "polars":
            empty = data.head(0).to_pandas()
        elif kind == "pyarrow":
            empty = data.schema.empty_table().to_pandas()
        else:
            empty = None
        if empty is not None:
            dtypes = {str(c): t for c, t in empty.dtypes.items()}
    except Exception:  # noqa: BLE001 - without pandas or pyarrow the engine's kinds are used
        dtypes = {}
    for name, dtype in dtypes.items():
        if dtype.kind in "biufcmM":
            if dtype.kind == "b":
                originals[name] = {"true": True, "false": False}
            continue
        try:
            values = column_values(data, name)
            uniques = list(dict.fromkeys(values.tolist()))
        except Exception:  # noqa: BLE001
            continue
        mapping: Dict[str, Any] = {}
        for value in uniques:
            if value is None:
                continue
            mapping.setdefault(_text(value), value)
        originals[name] = mapping
    return dtypes, originals
