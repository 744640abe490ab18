"""What a run shows while it works, and what it will cost before it starts.

``progress=`` of ``audit`` and ``run``:

- ``None`` (the default): in a terminal, the command line's own bars (drawn by the engine on
  standard error); in a notebook, a tqdm bar per stage (widgets when ipywidgets is installed) or,
  without tqdm, plain text lines; elsewhere (a log, a CI job) nothing, as the command line does;
- ``True``: as ``None``, and plain text lines where ``None`` shows nothing;
- ``False``: nothing, and no cost line;
- ``"terminal"``, ``"tqdm"``, ``"text"``: that display, wherever the run is;
- a callable: called as ``f(stage, kind, position, total, unit, elapsed_s, finished)`` (``total``
  is ``None`` until the stage knows it), from a thread of the run's, every quarter second while a
  stage advances and once when it ends.

Before an ``audit`` whose stages will ask the model about many rows (``COST_LINE_ROWS`` or more,
counted from its budgets: rows × protected combinations, trials × samples × combinations,
``max_queries``), one line on standard error says how many and in how many model calls.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, TextIO, Tuple, Union

from . import _native

__all__ = ["Progress", "Callback", "native_progress", "planned_rows", "cost_line", "COST_LINE_ROWS"]

#: ``f(stage, kind, position, total, unit, elapsed_s, finished)``.
Callback = Callable[[str, str, int, Optional[int], str, float, bool], None]

#: What ``progress=`` takes.
Progress = Union[None, bool, str, Callback]

#: Model rows from which ``audit`` says the cost before it starts (at a few hundred thousand rows a
#: second for a model in Python, a few seconds of work).
COST_LINE_ROWS = 1_000_000

#: Seconds between two plain text lines of a running stage.
TEXT_EVERY = 5.0


class TextLines:
    """Progress as plain text lines: one when a stage ends (what it counted, its time), and one
    every ``TEXT_EVERY`` seconds while a counting stage runs."""

    def __init__(self, stream: Optional[TextIO] = None):
        self.stream = stream
        self.shown: Dict[str, float] = {}

    def __call__(self, stage: str, kind: str, position: int, total: Optional[int], unit: str, elapsed: float, finished: bool) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        counted = f"{position:,}/{total:,} {unit}" if total is not None else ""
        if finished:
            print(f"  {stage} ({kind}): done{', ' + counted if counted else ''} in {elapsed:.1f} s", file=stream, flush=True)
        elif total is not None and elapsed - self.shown.get(stage, 0.0) >= TEXT_EVERY:
            self.shown[stage] = elapsed
            left = f", about {elapsed * (total - position) / position:.0f} s left" if position > 0 else ""
            print(f"  {stage} ({kind}): {counted}, {elapsed:.0f} s{left}", file=stream, flush=True)


class TqdmBars:
    """Progress as one tqdm bar per stage (``tqdm.auto``: widgets in a notebook with ipywidgets,
    text bars elsewhere)."""

    def __init__(self) -> None:
        from tqdm.auto import tqdm

        self.tqdm = tqdm
        self.bars: Dict[str, Any] = {}

    def __call__(self, stage: str, kind: str, position: int, total: Optional[int], unit: str, elapsed: float, finished: bool) -> None:
        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = self.tqdm(desc=f"{stage} ({kind})", total=total, unit=f" {unit}" if unit else "it", leave=True)
        if total is not None and bar.total != total:
            bar.total = total
            bar.unit = f" {unit}" if unit else "it"
        bar.n = position
        bar.refresh()
        if finished:
            bar.close()


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _tqdm_or_text() -> Callback:
    try:
        return TqdmBars()
    except ImportError:
        return TextLines()


def native_progress(progress: Progress) -> Union[None, bool, Callback]:
    """``progress=`` as the native functions take it: ``None`` (nothing), ``True`` (the engine's
    terminal bars) or a callable."""
    if progress is False:
        return None
    if progress is None or progress is True or progress == "auto":
        if _in_notebook():
            return _tqdm_or_text()
        if _is_terminal(sys.stderr):
            return True
        return TextLines() if progress is True else None
    if progress == "terminal":
        return True
    if progress == "text":
        return TextLines()
    if progress == "tqdm":
        try:
            return TqdmBars()
        except ImportError:
            raise ValueError("progress='tqdm' needs the tqdm package (pip install tqdm); progress='text' needs nothing") from None
    if callable(progress):
        return progress
    raise ValueError(f"progress: {progress!r}; give None, True, False, 'terminal', 'tqdm', 'text' or a callable")


def _count(n: float) -> str:
    for size, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if n >= size:
            return f"{n / size:.1f}{suffix}"
    return f"{n:,.0f}"


def planned_rows(
    measured: int,
    combinations: int,
    checks: Sequence[str],
    options: Mapping[str, Mapping[str, Any]],
    search: Optional[Mapping[str, Any]],
    value_pairs: int = 1,
) -> List[Tuple[str, Optional[int], str]]:
    """The model rows each stage of an audit will ask about, from its budgets: ``(stage, rows or
    None when unbounded, how)``. ``measured``: the rows measured; ``combinations``: the protected
    attributes' combinations (each row is scored under each); ``value_pairs``: the pairs of two
    values of one protected attribute (a ``pairwise`` check asks each row's in both orders; a
    ``ranking`` check lists each row's ``candidates`` in every rotation)."""
    defaults: Dict[str, Dict[str, Any]] = _native.audit_defaults()
    plan: List[Tuple[str, Optional[int], str]] = []
    for check in checks:
        given = dict(options.get(check) or {})
        if check == "group_metrics":
            plan.append((check, measured, f"{measured:,} rows"))
        elif check == "check":
            until = f" at most, stopping at ±{float(given['precision']):g}" if given.get("precision") is not None else ""
            plan.append((check, measured * combinations, f"{measured:,} rows × {combinations} combinations{until}"))
        elif check == "bias_audit":
            plan.append((check, measured, f"{measured:,} rows"))
        elif check == "pairwise":
            plan.append((check, measured * value_pairs * 2, f"{measured:,} rows × {value_pairs} pairs of values × 2 orders"))
        elif check == "ranking":
            # Each row becomes `candidates` candidates, listed in every rotation: one prompt each.
            k = int(given.get("candidates", defaults["ranking"]["candidates"]))
            plan.append((check, measured * k, f"{measured:,} rows × {k} rotations of {k} candidates"))
        elif check == "estimate":
            trials = int(given.get("trials", defaults["estimate"]["trials"]))
            samples = int(given.get("samples", defaults["estimate"]["samples"]))
            until = f" at most, stopping at ±{float(given['precision']):g}" if given.get("precision") is not None else ""
            plan.append((check, trials * samples * combinations, f"{trials:,} trials × {samples:,} samples × {combinations} combinations{until}"))
    if search is not None:
        keys = {**defaults["search"], **dict(search)}
        if int(keys.get("max_queries") or 0) > 0:
            plan.append(("search", int(keys["max_queries"]), "max_queries"))
        elif float(keys.get("max_seconds") or 0) > 0:
            plan.append(("search", None, f"until max_seconds = {keys['max_seconds']:g} s"))
        else:
            plan.append(("search", None, "no max_queries or max_seconds: until the method ends"))
    return plan


def cost_line(
    plan: Sequence[Tuple[str, Optional[int], str]],
    batch_size: int,
    llm_prompt_chars: Optional[int] = None,
    llm_price: Optional[Mapping[str, Any]] = None,
    llm_answer_tokens: int = 1,
) -> Optional[str]:
    """The line said before an audit of ``plan`` (``planned_rows``), or ``None`` when it asks the
    model about fewer than ``COST_LINE_ROWS`` rows and nothing is unbounded. For an LLM
    (``llm_prompt_chars``: its template's length) the line is always said, in prompts, with the
    prompt tokens estimated at 4 characters a token of the template alone (the values a row adds
    come on top: ``fairpipe llm plan`` writes every request for an exact count); with the LLM's
    ``price`` (per million ``prompt`` and ``completion`` tokens) also the money: at least that of
    those prompt tokens, at most that of ``llm_answer_tokens`` (``max_tokens``) answers each."""
    total = sum(rows for _, rows, _ in plan if rows is not None)
    unbounded = [stage for stage, rows, _ in plan if rows is None]
    parts = "; ".join(f"{stage}: {how}" + (f" = {_count(rows)}" if rows is not None and "×" in how else "") for stage, rows, how in plan)
    if llm_prompt_chars is not None:
        tokens = total * max(1, llm_prompt_chars // 4)
        more = ", and a search until its budget" if unbounded else ""
        money = ""
        if llm_price is not None:
            prompt_cost = tokens * float(llm_price["prompt"]) / 1e6
            answer_cost = total * llm_answer_tokens * float(llm_price["completion"]) / 1e6
            money = f"; at `price`: at least {prompt_cost:.2f} for those prompt tokens, at most {answer_cost:.2f} for the answers"
        return (
            f"fairpipe: this audit asks the LLM at most {total:,} prompts{more} (at least {_count(tokens)} prompt tokens from the "
            f"template alone; repeated prompts and cached answers cost nothing{money}) ({parts})"
        )
    if total < COST_LINE_ROWS and not unbounded:
        return None
    if total == 0:
        return f"fairpipe: this audit runs a search without a row budget ({parts})"
    calls = math.ceil(total / max(batch_size, 1))
    more = ", and a search without a row budget" if unbounded else ""
    return f"fairpipe: this audit asks the model about {_count(total)} rows in about {calls:,} calls of up to {batch_size:,} rows{more} ({parts})"
