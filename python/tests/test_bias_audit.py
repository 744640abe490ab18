"""`Run.table` of a bias audit (NYC Local Law 144): the §5-301 tables of the fixture in
tests/fixtures/bias_audit equal the ones computed from the rules' definitions by
scripts/bias_audit_expected.py (plain Python, no fairpipe; checked in as expected_*.csv), the same
way tests/bias_audit.rs holds the CLI's CSV to them."""

from __future__ import annotations

import csv
import math
from typing import Dict, List, Optional

import pytest

import fairpipe_rs
from conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "bias_audit"
EXACT = ["table", "category", "unknown", "excluded", "highest", "count", "selected"]
CLOSE = {"rate": 1e-12, "share": 1e-12, "impact_ratio": 1e-12, "ci95_low": 1e-12, "ci95_high": 1e-12, "p_value": 1e-9, "p_adjusted": 1e-9}


@pytest.fixture(scope="module")
def audit_run():
    return fairpipe_rs.run(FIXTURE / "audit.toml")


def expected(name: str) -> List[Dict[str, str]]:
    with open(FIXTURE / name, newline="") as f:
        return list(csv.DictReader(f))


def number(cell: object) -> Optional[float]:
    """A numeric cell, or None for an empty or NaN one (the CSV writes no number as empty)."""
    if cell is None or cell == "":
        return None
    v = float(cell)  # type: ignore[arg-type]
    return None if math.isnan(v) else v


def text(cell: object) -> str:
    return "" if cell is None else str(cell)


@pytest.mark.parametrize(
    "stage,file",
    [("decisions", "expected_selection.csv"), ("scores", "expected_score.csv"), ("unmapped", "expected_selection_unmapped.csv")],
)
def test_the_tables_equal_an_independent_computation(audit_run, stage: str, file: str) -> None:
    got = audit_run.table(stage).to_dicts()
    want = expected(file)
    assert len(got) == len(want), f"{stage}: {len(got)} rows, expected {len(want)}"
    for i, (g, e) in enumerate(zip(got, want)):
        for col in EXACT:
            assert text(g[col]) == e[col], f"{stage} row {i} ({e['category']}): {col} {g[col]!r} vs {e[col]!r}"
        for col, tol in CLOSE.items():
            a, b = number(g[col]), number(e[col])
            assert (a is None) == (b is None), f"{stage} row {i} ({e['category']}): {col} {a} vs {b}"
            if a is not None and b is not None:
                assert abs(a - b) <= tol * max(abs(b), 1.0), f"{stage} row {i} ({e['category']}): {col} {a} vs {b}"


def test_the_figures_carry_the_lowest_ratios_of_the_tables(audit_run) -> None:
    figures = audit_run.figures("decisions")
    rows = expected("expected_selection.csv")
    for table in ["sex", "race", "intersection"]:
        ratios = [float(r["impact_ratio"]) for r in rows if r["table"] == table and r["impact_ratio"] not in ("", "nan")]
        assert figures[f"min_impact_ratio_{table}"] == pytest.approx(min(ratios), rel=1e-12, abs=0)
    assert figures["sex_column"] == "sex" and figures["race_column"] == "race"
    assert figures["left_out_at_load"] == 0
