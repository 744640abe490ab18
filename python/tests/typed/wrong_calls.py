"""Calls the package's types refuse: ``mypy --strict`` must report an error on each line marked
``# wrong`` (tests/test_typing.py), which shows the annotations and the stub are read, not taken
as ``Any``."""

from __future__ import annotations

from typing import Any

import fairpipe_rs


def wrong(frame: Any, model: Any) -> None:
    fairpipe_rs.audit(frame, model, label=1, protected=["sex"])  # wrong
    fairpipe_rs.audit(frame, model, "Y", ["sex"])  # wrong
    run = fairpipe_rs.audit(frame, model, label="Y", protected=["sex"])
    run.figures(3)  # wrong
    text: str = run.stages  # wrong
    fairpipe_rs.run(42)  # wrong
    count: int = fairpipe_rs.__version__  # wrong
    names: str = fairpipe_rs._native.audit(frame, "Y", ["sex"]).table_names()  # wrong
    del text, count, names
