"""The exceptions fairpipe_rs raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

__all__ = ["Problem", "PipelineError", "GateFailed"]


@dataclass(frozen=True)
class Problem:
    """One problem the engine found, located where it could be.

    ``file``, ``line`` and ``column`` name the place in a pipeline file (1-based; ``None`` when
    the problem is not about a place in a file, e.g. a stage that failed while running), and
    ``message`` says what is wrong and how to fix it. ``problem["line"]`` works as well.
    """

    file: Optional[str]
    line: Optional[int]
    column: Optional[int]
    message: str

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def __str__(self) -> str:
        if self.file is None:
            return self.message
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


class PipelineError(Exception):
    """A pipeline that could not be read or run.

    ``problems`` lists every problem found (``Problem``: file, line, column, message), as the
    command line prints them; ``stage`` names the stage that failed while running, if one did.
    When an in-process model raised, that exception is this one's ``__cause__``.
    """

    def __init__(self, message: str, problems: Sequence[Any] = (), stage: Optional[str] = None):
        super().__init__(message)
        self.problems: List[Problem] = [
            p if isinstance(p, Problem) else Problem(p.get("file"), p.get("line"), p.get("column"), p["message"])
            for p in problems
        ]
        self.stage = stage


class GateFailed(Exception):
    """A run whose ``[gate]`` (or ``gate=``) conditions did not all hold.

    Raised only when asked (``raise_on_gate=True``); ``run`` is the finished ``Run`` and
    ``gate`` its verdict, with the conditions that failed.
    """

    def __init__(self, run: Any):
        self.run = run
        self.gate = run.gate
        failed = [c for c in self.gate.conditions if not c.get("passed")]
        shown = "; ".join(str(c.get("condition", c)) for c in failed) or "a condition failed"
        super().__init__(f"gate failed: {shown}")
