"""An object with ``predict_proba`` as the engine's model.

The engine calls ``bind`` once it has read the data (it then knows the columns, their
categories and the favourable label), and the returned scorer for each batch of rows: the rows
arrive as the engine encodes them (categories as numbers), are decoded into the form the model
was fitted on, and ``predict_proba``'s column of the favourable class goes back.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

__all__ = ["ModelSpec", "bind"]


class ModelSpec:
    """A model handed to the engine, with what is known of the data it was fitted on.

    ``dtypes`` and ``originals`` come from the caller's frame (``_frames.column_facts``); the
    counters (``calls``, ``rows``, ``predict_seconds``, ``prepare_seconds``) say how the model
    was used once a run is over.
    """

    def __init__(
        self,
        model: Any,
        dtypes: Optional[Dict[str, Any]] = None,
        originals: Optional[Dict[str, Dict[str, Any]]] = None,
        batch_size: int = 16384,
    ):
        if not callable(getattr(model, "predict_proba", None)):
            raise TypeError(f"a {type(model).__name__} has no predict_proba method")
        self.model = model
        self.dtypes = dtypes or {}
        self.originals = originals or {}
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        kind = type(model)
        self.description = f"Python {kind.__module__.split('.')[0]} {kind.__name__}"
        self.calls = 0
        self.rows = 0
        self.predict_seconds = 0.0
        self.prepare_seconds = 0.0

    def usage(self) -> Dict[str, Any]:
        """How often the model was called, with how many rows, and the seconds spent in
        ``predict_proba`` and in building its input."""
        return {
            "model": self.description,
            "calls": self.calls,
            "rows": self.rows,
            "predict_proba_s": self.predict_seconds,
            "prepare_s": self.prepare_seconds,
        }


def _classes(model: Any) -> Optional[List[Any]]:
    classes = getattr(model, "classes_", None)
    if classes is None:
        return None
    out: List[Any] = []
    for c in np.asarray(classes).tolist():
        if isinstance(c, bool):
            out.append("true" if c else "false")
        elif isinstance(c, float) and c.is_integer():
            out.append(int(c))
        elif isinstance(c, (int, str)):
            out.append(c)
        else:
            out.append(str(c))
    return out


def _level_values(levels: List[str], original: Dict[str, Any], dtype: Any) -> np.ndarray:
    """The value behind each of the engine's levels, in the column's original type."""
    values = [original.get(level, level) for level in levels]
    kind = getattr(dtype, "kind", "O")
    if kind in "iu":
        return np.array([int(float(v)) for v in values], dtype=dtype)
    if kind == "f":
        return np.array([float(v) for v in values], dtype=dtype)
    if kind == "b":
        return np.array([v if isinstance(v, bool) else str(v).lower() == "true" for v in values], dtype=bool)
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _decoder(attribute: Dict[str, Any], dtype: Any, original: Dict[str, Any]) -> Callable[[np.ndarray], Any]:
    """Turns the engine's encoded column into the original column's values."""
    if attribute["kind"] == "categorical":
        values = _level_values(attribute["levels"], original, dtype)
        # Codes are whole numbers; a gradient's probe a hair off one reads as that one (rounded,
        # never truncated onto the level below). `_check_codes` has refused codes off the levels.
        return lambda column: values[np.rint(column).astype(np.intp)]
    kind = getattr(dtype, "kind", None)
    if kind in ("i", "u", "f", "b"):
        return lambda column: column.astype(dtype)
    if attribute["kind"] == "integer":
        return lambda column: column.astype(np.int64)
    return lambda column: column


def _show_row(attributes: List[Dict[str, Any]], row: np.ndarray) -> str:
    """Row ``row`` of the engine's encoding as ``name=value`` pairs, categories by their level."""
    cells = []
    for a, v in zip(attributes, row.tolist()):
        levels = a.get("levels") or []
        k = round(v) if a["kind"] == "categorical" and v == v else None
        cells.append(f"{a['name']}={levels[k]!r}" if k is not None and 0 <= k < len(levels) else f"{a['name']}={v!r}")
    return ", ".join(cells)


def _check_codes(attributes: List[Dict[str, Any]], x: np.ndarray) -> None:
    """Refuse a batch with a category code that is not one of its column's levels, naming the
    first offending row (its place in the batch and its values)."""
    for i, a in enumerate(attributes):
        if a["kind"] != "categorical":
            continue
        n = len(a["levels"])
        column = x[:, i]
        bad = np.flatnonzero(~((column > -0.5) & (column < n - 0.5)))
        if bad.size:
            r = int(bad[0])
            raise ValueError(
                f"row {r} of a batch of {len(x)} gives {a['name']} the code {float(column[r])!r}, not one of its {n} categories "
                f"(codes 0 to {n - 1}): {_show_row(attributes, x[r])}"
            )


def bind(spec: ModelSpec, domain: Dict[str, Any]) -> Dict[str, Any]:
    """Prepare ``spec``'s model for the data described by ``domain`` (the engine's attributes,
    each a dict of ``name``, ``kind``, ``levels``, ``protected``, and the label). Returns the
    scorer, the model's classes, the attributes it reads and how its input is built."""
    attributes = domain["attributes"]
    names = [a["name"] for a in attributes]
    width = len(names)
    model = spec.model
    fitted = getattr(model, "feature_names_in_", None)
    if fitted is not None:
        import pandas as pd

        fitted = [str(n) for n in np.asarray(fitted).tolist()]
        missing = [n for n in fitted if n not in names]
        if missing:
            raise ValueError(
                f"the model was fitted on columns {missing} that are not among the audited features {names}; "
                "audit the frame the model was fitted on (the label and the columns in drop= are not features)"
            )
        index = {n: i for i, n in enumerate(names)}
        read = [index[n] for n in fitted]
        decoders = [
            _decoder(attributes[i], spec.dtypes.get(n), spec.originals.get(n, {})) for n, i in zip(fitted, read)
        ]
        categories = {n: spec.dtypes[n] for n in fitted if isinstance(spec.dtypes.get(n), pd.CategoricalDtype)}

        def build(x: np.ndarray) -> Any:
            frame = pd.DataFrame({n: d(x[:, i]) for n, i, d in zip(fitted, read, decoders)}, columns=fitted)
            if categories:
                frame = frame.astype(categories)
            return frame

        contract = f"a pandas DataFrame of the {len(fitted)} columns the model was fitted on (feature_names_in_), categories as in the data"
    else:
        expected = getattr(model, "n_features_in_", None)
        if expected is not None and int(expected) != width:
            raise ValueError(
                f"the model takes {int(expected)} features (n_features_in_) but the audited data has {width}: {names}; "
                "pass features= in the order the model was fitted on"
            )
        read = list(range(width))
        decoders = [_decoder(a, spec.dtypes.get(a["name"]), spec.originals.get(a["name"], {})) for a in attributes]
        numeric = all(a["kind"] != "categorical" or _level_values(a["levels"], spec.originals.get(a["name"], {}), spec.dtypes.get(a["name"])).dtype != object for a in attributes)

        if numeric and all(a["kind"] != "categorical" for a in attributes):

            def build(x: np.ndarray) -> Any:
                return x

        else:

            def build(x: np.ndarray) -> Any:
                columns = [d(x[:, i]) for i, d in enumerate(decoders)]
                return np.column_stack(columns) if numeric else np.column_stack([np.asarray(c, dtype=object) for c in columns])

        contract = f"a NumPy array of the data's {width} feature columns in order" + ("" if numeric else " (categories as their text)")

    def scorer(batch: bytes, rows: int, column: int) -> bytes:
        started = time.perf_counter()
        x = np.frombuffer(batch, dtype=np.float64).reshape(rows, width)
        _check_codes(attributes, x)
        features = build(x)
        ready = time.perf_counter()
        p = model.predict_proba(features)
        spec.predict_seconds += time.perf_counter() - ready
        spec.prepare_seconds += ready - started
        spec.calls += 1
        spec.rows += rows
        p = np.asarray(p)
        if p.ndim == 2 and p.shape[0] == rows and column < p.shape[1]:
            out = p[:, column]
        elif p.ndim == 1 and p.shape[0] == rows:
            # One probability per row: P(class 1).
            out = p if column != 0 else 1.0 - p
        elif p.ndim == 2 and p.shape[0] == rows:
            raise ValueError(f"predict_proba returned {p.shape[1]} columns; the favourable class is column {column}")
        else:
            raise ValueError(f"predict_proba returned an array of shape {p.shape} for {rows} rows; expected ({rows}, n_classes)")
        return np.ascontiguousarray(out, dtype=np.float64).tobytes()

    return {"scorer": scorer, "classes": _classes(model), "read": read, "contract": contract}
