"""`fairpipe_rs.bias_audit` on a decision log (issue 60, item 8): the vendor export of
tests/fixtures/vendor_export read by pandas and by Polars as a user reads it (blank cells missing),
audited with no model and no label, gives the tables scripts/vendor_export_expected.py computes from
the rules (every count exact, rates and ratios to 1e-12); its messy copy is refused naming each
value the keys do not name, with its count."""

from __future__ import annotations

import math

import pandas as pd
import polars as pl
import pytest

import fairpipe_rs
from conftest import ROOT, favourable_proba

FIXTURES = ROOT / "tests" / "fixtures" / "vendor_export"
RACE = {
    "W": "White",
    "B": "Black or African American",
    "A": "Asian",
    "NHPI": "Native Hawaiian or Pacific Islander",
    "AIAN": "Native American or Alaska Native",
    "2+": "Two or More Races",
}
KEYS = dict(
    sex="gender",
    race="race_cd",
    ethnicity="hispanic_latino",
    unknown=["X", "Decline"],
    categories={
        "sex": {"M": "Male", "F": "Female"},
        "race": RACE,
        "ethnicity": {"Y": "Hispanic or Latino", "N": "Not Hispanic or Latino"},
    },
    exclude_below=0.02,
    exclusion_justification="categories under 2% of the applicants are too small for a stable ratio",
)


def assert_tables_equal(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert len(got) == len(expected)
    for (_, g), (_, e) in zip(got.iterrows(), expected.iterrows()):
        assert (g["table"], g["category"]) == (e["table"], e["category"])
        assert (int(g["count"]), int(g["selected"])) == (int(e["count"]), int(e["selected"])), e["category"]
        for column in ("rate", "share", "impact_ratio"):
            a, b = float(g[column]), float(e[column])
            assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(1.0, abs(b)), (e["category"], column, a, b)


@pytest.mark.parametrize("reader", ["pandas", "polars"])
def test_a_decision_log_gives_the_rules_tables(reader):
    path = FIXTURES / "export.csv"
    frame = pd.read_csv(path) if reader == "pandas" else pl.read_csv(path, infer_schema_length=None)
    run = fairpipe_rs.bias_audit(frame, decision="advanced", selected="Yes", not_selected="No", **KEYS)
    assert_tables_equal(run.table("bias_audit", pandas=True), pd.read_csv(FIXTURES / "expected_selection.csv"))
    figures = run.figures("bias_audit")
    assert figures["rows"] == 4000 and abs(figures["rate"] - 0.27) < 1e-12
    assert [t["unknown"]["count"] for t in figures["tables"]] == [380, 251, 580]

    scores = fairpipe_rs.bias_audit(frame, score="score", **KEYS)
    assert_tables_equal(scores.table("bias_audit", pandas=True), pd.read_csv(FIXTURES / "expected_score.csv"))
    assert scores.figures("bias_audit")["median_score"] == 47.0


def test_a_messy_log_is_refused_naming_its_values():
    frame = pd.read_csv(FIXTURES / "export_messy.csv")
    with pytest.raises(fairpipe_rs.PipelineError) as refused:
        fairpipe_rs.bias_audit(frame, decision="advanced", selected="Yes", not_selected="No", **KEYS)
    said = str(refused.value)
    for value, n in [("yes", "514"), ("no", "1,441"), ("Withdrawn", "80")]:
        assert f'"{value}" {n} rows' in said, said
    run = fairpipe_rs.bias_audit(
        frame, decision="advanced", selected="Yes", not_selected="No", ignore_case=True, exclude=["Withdrawn"], **KEYS
    )
    assert run.figures("bias_audit")["excluded_decisions"] == 80


def test_neither_or_both_outcomes_is_refused():
    frame = pd.read_csv(FIXTURES / "export.csv")
    with pytest.raises(ValueError, match="decision="):
        fairpipe_rs.bias_audit(frame, sex="gender")
    with pytest.raises(ValueError, match="decision="):
        fairpipe_rs.bias_audit(frame, sex="gender", decision="advanced", score="score")


def test_audit_of_a_model_adds_the_rules_tables(sklearn_pipeline, adult_frames):
    """``audit(..., checks=["bias_audit"], sex=, race=)``: the Local Law 144 tables of a real
    scikit-learn model's decisions (P(favourable) > 0.5) on the audited rows, held to the counts
    pandas computes from the model's own predict_proba."""
    _, frame = adult_frames
    run = fairpipe_rs.audit(
        frame, sklearn_pipeline, label="Y", favourable=">50K", protected=["sex", "race"], checks=["bias_audit"], sex="sex", race="race"
    )
    selected = favourable_proba(sklearn_pipeline, frame.drop(columns=["Y"]), ">50K") > 0.5
    table = run.table("bias_audit", pandas=True)
    sex = table[table["table"] == "sex"].set_index("category")
    for value, rows in frame.assign(selected=selected).groupby("sex"):
        assert int(sex.loc[value, "count"]) == len(rows), value
        assert int(sex.loc[value, "selected"]) == int(rows["selected"].sum()), value
    assert run.figures("bias_audit")["rows"] == len(frame)
    with pytest.raises(ValueError, match="bias_audit"):
        fairpipe_rs.audit(frame, sklearn_pipeline, label="Y", favourable=">50K", protected=["sex"], checks=["check"], sex="sex")


def test_situation_testing_lists_the_applicants_a_brute_force_reading_of_the_paper_lists():
    """``qualifications`` on a small planted log: every own and reference neighbour rate equal to
    a numpy computation of Luong, Ruggieri and Turini's definitions (mean per-column distance: |z|
    difference for numbers, 0/1 for categories; the k nearest, ties to the earlier row, the
    applicant not their own neighbour), and the same applicants listed."""
    import numpy as np

    rng = np.random.default_rng(2011)
    n, k, t = 400, 8, 0.3
    sex = rng.choice(["M", "F"], size=n)
    years = rng.integers(0, 21, size=n)
    education = rng.choice(["HS", "BA", "MA"], size=n)
    merit = 2.0 * years + 8.0 * (education == "BA") + 16.0 * (education == "MA")
    advanced = np.where(merit >= np.where(sex == "F", 30.0, 22.0), "Yes", "No")
    frame = pd.DataFrame({"id": np.arange(1, n + 1), "sex": sex, "years": years, "education": education, "advanced": advanced})
    run = fairpipe_rs.bias_audit(
        frame,
        sex="sex",
        decision="advanced",
        selected="Yes",
        not_selected="No",
        qualifications=["years", "education"],
        applicant_id="id",
        situation_k=k,
        situation_t=t,
    )
    [women] = [s for s in run.figures("bias_audit")["situation_testing"] if s["category"] == "F"]
    assert women["reference"] == "M"

    z = (years - years.mean()) / years.std()
    chosen = advanced == "Yes"

    def rate(r, group):
        pool = [i for i in range(n) if sex[i] == group and i != r]
        d = [((abs(z[i] - z[r]) + float(education[i] != education[r])) / 2.0, i) for i in pool]
        nearest = sorted(d)[:k]
        return sum(chosen[i] for _, i in nearest) / k

    expected = {}
    for r in range(n):
        if sex[r] == "F" and not chosen[r]:
            own, ref = rate(r, "F"), rate(r, "M")
            if ref - own >= t:
                expected[r + 1] = (own, ref)
    listed = run.table("bias_audit_situation", pandas=True)
    got = {int(row["id"]): (row["own_rate"], row["reference_rate"]) for _, row in listed.iterrows()}
    assert got.keys() == expected.keys() and len(got) > 0
    for applicant, (own, ref) in expected.items():
        assert abs(got[applicant][0] - own) < 1e-12 and abs(got[applicant][1] - ref) < 1e-12, applicant
    assert women["listed"] == len(expected)
    assert women["tested"] == int(((sex == "F") & ~chosen).sum())
