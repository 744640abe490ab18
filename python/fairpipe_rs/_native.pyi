"""Types of ``fairpipe_rs._native``, the extension module (python/src/lib.rs). Nothing here is
meant to be called directly: ``fairpipe_rs.audit``, ``fairpipe_rs.run`` and ``Run`` are the API.
``tests/test_typing.py`` holds this stub to the built module (mypy's stubtest) and runs
``mypy --strict`` over the examples and the tests' public calls."""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union, final

from ._model import ModelSpec

__all__ = [
    "NativeRun",
    "ArrowTable",
    "run_pipeline",
    "audit",
    "version",
    "arrow_buffer_addresses",
    "builtin_reference",
    "kind_keys",
    "bias_audit",
    "source_tree",
    "audit_defaults",
    "cli",
]

#: ``f(stage, kind, position, total, unit, elapsed_s, finished)`` (fairpipe_rs._progress).
_Callback = Callable[[str, str, int, Optional[int], str, float, bool], None]

@final
class ArrowTable:
    """A result table offered through the Arrow PyCapsule interface (read it with
    ``polars.DataFrame(t)`` or ``pyarrow.table(t)``)."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def __len__(self) -> int: ...

@final
class NativeRun:
    """A finished run: the summary, the result tables and the files written."""

    def summary(self) -> Dict[str, Any]: ...
    def table_names(self) -> List[str]: ...
    def table(self, name: str, newest: bool) -> Optional[ArrowTable]: ...
    def report_html(self) -> str: ...
    def files(self) -> List[str]: ...

def run_pipeline(
    file: Union[str, os.PathLike[str]],
    text: Optional[str] = None,
    seed: Optional[int] = None,
    out: Union[None, str, os.PathLike[str]] = None,
    gate: Sequence[str] = ...,
    data: Sequence[Tuple[str, Any]] = ...,
    models: Sequence[Tuple[str, ModelSpec]] = ...,
    progress: Union[None, bool, _Callback] = None,
) -> NativeRun: ...
def audit(
    data: Any,
    label: str,
    protected: Sequence[str],
    favourable: Union[None, str, int, float, bool] = None,
    features: Optional[Sequence[str]] = None,
    drop: Sequence[str] = ...,
    test_mask: Optional[bytes] = None,
    test_frame: Any = None,
    model_spec: Optional[ModelSpec] = None,
    model_config: Optional[Dict[str, Any]] = None,
    seed: int = 0,
    checks: Sequence[str] = ...,
    search: Optional[Dict[str, Any]] = None,
    gate: Sequence[str] = ...,
    options: Optional[Dict[str, Dict[str, Any]]] = None,
    progress: Union[None, bool, _Callback] = None,
) -> NativeRun: ...
def version() -> str: ...
def source_tree() -> str: ...
def builtin_reference() -> str: ...
def kind_keys(kind: str) -> List[str]: ...
def bias_audit(data: Any, keys: Dict[str, Any], progress: Union[None, bool, _Callback] = None) -> NativeRun: ...
def audit_defaults() -> Dict[str, Dict[str, Any]]: ...
def cli(argv: List[str]) -> int: ...
def arrow_buffer_addresses(obj: Any) -> List[Tuple[str, List[int]]]: ...
