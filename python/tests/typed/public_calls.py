"""The public calls the test suite makes, written with types: ``mypy --strict`` checks them against
the package's annotations and its ``_native.pyi`` stub (tests/test_typing.py). Nothing here runs
in the suite; each function is a use a test makes (test_audit, test_run, test_errors,
test_search, test_papercuts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import fairpipe_rs


def audit_with_everything(frame: Any, model: Any, test: Any) -> fairpipe_rs.Run:
    return fairpipe_rs.audit(
        frame,
        model,
        label="Y",
        protected=["sex", "race"],
        favourable=">50K",
        test=test,
        seed=0,
        checks=("group_metrics", "estimate", "check"),
        search={"plugin": "maft", "max_queries": 1000},
        gate=["estimate.rate < 0.05"],
        features=["age", "sex", "race"],
        drop=["row"],
        options={"estimate": {"trials": 40, "samples": 500}},
        batch_size=4096,
        raise_on_gate=False,
        progress=False,
    )


def audit_short(frame: Any, model: Any) -> float:
    run = fairpipe_rs.audit(frame, model, label="income", protected="gender", search="aequitas")
    rate: float = run.figures("estimate")["rate"]
    return rate


def read_a_run(run: fairpipe_rs.Run) -> List[str]:
    summary: Dict[str, Any] = run.summary
    stages: List[str] = run.stages
    tables: List[str] = run.tables
    polars_table: Any = run.table("check")
    pandas_table: Any = run.table("check", pandas=True)
    page: str = run.report_html()
    files: List[str] = run.files
    usage: List[Dict[str, Any]] = run.model_usage
    gate: Optional[fairpipe_rs.Gate] = run.gate
    passed = gate is not None and gate.passed and bool(gate)
    conditions: List[Dict[str, Any]] = [] if gate is None else gate.conditions
    del summary, polars_table, pandas_table, page, usage, passed, conditions
    return stages + tables + files


def run_a_pipeline(path: Path, frame: Any, model: Any, out: Path) -> fairpipe_rs.Run:
    fairpipe_rs.run(str(path))
    fairpipe_rs.run("[pipeline]\nseed = 1\n", seed=3)
    return fairpipe_rs.run(
        path, seed=1, out=out, gate="estimate.rate < 1", data={"data": frame}, models={"model": model}, batch_size=512, raise_on_gate=True
    )


def errors(frame: Any, model: Any) -> List[str]:
    said: List[str] = []
    try:
        fairpipe_rs.audit(frame, model, label="income", protected=["gendr"])
    except fairpipe_rs.PipelineError as e:
        for p in e.problems:
            where: Optional[str] = p.file
            line: Optional[int] = p.line
            column: Optional[int] = p.column
            said.append(f"{where}:{line}:{column}: {p.message} ({p['message']})")
        stage: Optional[str] = e.stage
        said.append(str(stage))
    except fairpipe_rs.GateFailed as e:
        run: fairpipe_rs.Run = e.run
        gate: fairpipe_rs.Gate = e.gate
        said.append(f"{run!r} {gate!r}")
    return said


def bundled() -> Path:
    version: str = fairpipe_rs.__version__
    del version
    return fairpipe_rs.example_data("adult.data.csv")
