"""Errors: a bad pipeline raises PipelineError whose `.problems` carry the CLI's located messages; a
model that answers NaN, the wrong shape or an exception is an error naming the row, never a
figure; a failed gate is reported, and raised as GateFailed only when asked."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import fairpipe_rs
from conftest import ROOT, run_cli, without_timings


def good_pipeline() -> str:
    """A valid census pipeline with absolute paths to the bundled files (line 9: the load's `drop`,
    line 20: the estimate's kind, 21: its model, 22: its trials)."""
    data = json.dumps(str(ROOT / "pipelines" / "data" / "census.csv"))
    codes = json.dumps(str(ROOT / "pipelines" / "data" / "census.codes.toml"))
    model = json.dumps(str(ROOT / "pipelines" / "models" / "census.onnx"))
    return f"""[pipeline]
seed = 1

[stages.data]
kind = "load"
path = {data}
label = "income"
protected = ["gender"]
drop = ["row"]
split_column = "split"
codes = {codes}
favourable = ">50K"

[stages.model]
kind = "load_model"
data = "data"
path = {model}

[stages.estimate]
kind = "estimate"
model = "model"
trials = 10
samples = 100
"""


def test_the_good_pipeline_runs(tmp_path):
    """The binding's estimate is the CLI's on the same file and seed, and its rate is the
    discriminatory inputs over the inputs drawn (10 trials of 100)."""
    path = tmp_path / "good.toml"
    path.write_text(good_pipeline())
    ours = fairpipe_rs.run(path).figures("estimate")
    cli = run_cli("run", str(path), "--out", str(tmp_path / "cli"), "--quiet")
    assert cli.returncode == 0, cli.stderr
    theirs = json.loads((tmp_path / "cli" / "summary.json").read_text())["stages"]["estimate"]
    assert without_timings(ours) == without_timings({k: v for k, v in theirs.items() if k in ours}), (ours, theirs)
    assert ours["samples"] == 1000
    assert ours["rate"] == pytest.approx(ours["discriminatory"] / 1000, abs=1e-12), ours


@pytest.mark.parametrize(
    "old,new,line,column,fragment",
    [
        ('kind = "estimate"', 'kind = "estimat"', 20, 8, "unknown stage kind `estimat` (did you mean `estimate`?)"),
        ("trials = 10", "trails = 10", 22, 1, "unknown key `trails` (did you mean `trials`?)"),
        ('model = "model"', 'model = "modle"', 21, 9, "names stage `modle`, which does not exist (did you mean `model`?)"),
    ],
)
def test_a_bad_pipeline_raises_with_located_problems(tmp_path, old, new, line, column, fragment):
    text = good_pipeline()
    assert text.splitlines()[line - 1].startswith(old.split(" ")[0])
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(old, new))
    with pytest.raises(fairpipe_rs.PipelineError) as caught:
        fairpipe_rs.run(path)
    problems = caught.value.problems
    assert problems, "at least one problem"
    located = [p for p in problems if p.line == line and p.column == column and fragment in p.message]
    assert located, f"no problem at {line}:{column} with {fragment!r} in {problems}"
    assert str(located[0].file).endswith("bad.toml")
    assert fragment in str(caught.value)


def test_every_problem_of_a_pipeline_is_reported_at_once(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(good_pipeline().replace("trials = 10", "trails = 10").replace("drop = ", "dorp = "))
    with pytest.raises(fairpipe_rs.PipelineError) as caught:
        fairpipe_rs.run(path)
    located = sorted((p.line, p.column) for p in caught.value.problems)
    assert (9, 1) in located and (22, 1) in located, located


def test_an_audit_naming_a_missing_column_raises_naming_it(xgb_model, census_frames):
    _, frame = census_frames
    with pytest.raises(fairpipe_rs.PipelineError, match="gendr"):
        fairpipe_rs.audit(frame, xgb_model, label="income", protected=["gendr"])
    with pytest.raises(fairpipe_rs.PipelineError, match="incme"):
        fairpipe_rs.audit(frame, xgb_model, label="incme", protected=["gender"])


class Answering:
    """A model whose predict_proba is `answer(x)`; classes 0 and 1."""

    classes_ = np.array([0, 1])

    def __init__(self, answer):
        self.answer = answer

    def predict_proba(self, x):
        return self.answer(np.asarray(x, dtype=float))


def _two_columns(p):
    return np.column_stack([1.0 - p, p])


def test_a_model_answering_nan_raises_naming_the_row(census_frames):
    """Every row with hours-per-week = 99 (a value of few rows) gets NaN: the audit fails, and
    the message names the row and its values instead of reporting a figure."""
    _, frame = census_frames
    hours = frame.columns.get_loc("hours-per-week")
    rare = frame["hours-per-week"].max()

    def answer(x):
        p = np.full(len(x), 0.3)
        p[x[:, hours] == rare] = np.nan
        return _two_columns(p)

    with pytest.raises(fairpipe_rs.PipelineError) as caught:
        fairpipe_rs.audit(frame, Answering(answer), label="income", protected=["gender"], checks=("group_metrics",))
    message = str(caught.value)
    # The row named is one the model answered NaN for: its hours-per-week is the rare value.
    named = re.search(r"predict_proba gave NaN for row (\d+) of a batch of (\d+) \(([^)]*)\)", message)
    assert named, message
    assert int(named.group(1)) < int(named.group(2)), message
    assert f"hours-per-week={rare:g}" in named.group(3).split(", "), message


def test_a_model_answering_the_wrong_shape_raises(census_frames):
    _, frame = census_frames
    model = Answering(lambda x: np.full((len(x), 1), 0.5))
    with pytest.raises(fairpipe_rs.PipelineError) as caught:
        fairpipe_rs.audit(frame, model, label="income", protected=["gender"], checks=("group_metrics",))
    # One column came back where classes_ [0, 1] put the favourable class (1, ">50K") second.
    message = str(caught.value)
    assert "predict_proba returned 1 columns; the favourable class is column 1" in message, message
    assert re.search(r"\(batch of \d+ rows; its first row: age=", message), message


def test_an_exception_in_the_model_raises_with_its_message(census_frames):
    _, frame = census_frames

    def answer(x):
        raise ValueError("the model's own complaint")

    with pytest.raises(fairpipe_rs.PipelineError, match="the model's own complaint") as caught:
        fairpipe_rs.audit(frame, Answering(answer), label="income", protected=["gender"], checks=("group_metrics",))
    assert isinstance(caught.value.__cause__, ValueError)


def test_a_failed_gate_is_reported_with_its_conditions(xgb_model, census_frames):
    _, frame = census_frames
    conditions = ["group_metrics.demographic_parity_ratio >= 0.99", "group_metrics.rows > 0"]
    run = fairpipe_rs.audit(frame, xgb_model, label="income", protected=["gender"], checks=("group_metrics",), gate=conditions)
    gate = run.gate
    assert not gate.passed
    outcomes = {c["condition"]: c["passed"] for c in gate.conditions}
    assert outcomes == {conditions[0]: False, conditions[1]: True}
    ratio = run.figures("group_metrics")["demographic_parity_ratio"]
    assert [c["value"] for c in gate.conditions] == [ratio, len(frame)]
    assert run.summary["gate"]["passed"] is False


def test_a_failed_gate_raises_gate_failed_when_asked(xgb_model, census_frames):
    _, frame = census_frames
    conditions = ["group_metrics.demographic_parity_ratio >= 0.99"]
    with pytest.raises(fairpipe_rs.GateFailed) as caught:
        fairpipe_rs.audit(
            frame, xgb_model, label="income", protected=["gender"], checks=("group_metrics",), gate=conditions, raise_on_gate=True
        )
    assert caught.value.gate.passed is False
    assert caught.value.run.figures("group_metrics")["rows"] == len(frame)
    assert conditions[0] in str(caught.value)


def test_a_passing_gate_passes(xgb_model, census_frames):
    _, frame = census_frames
    run = fairpipe_rs.audit(
        frame, xgb_model, label="income", protected=["gender"], checks=("group_metrics",), gate=["group_metrics.rows > 0"], raise_on_gate=True
    )
    assert run.gate.passed


def test_a_run_without_a_gate_has_none(xgb_model, census_frames):
    _, frame = census_frames
    run = fairpipe_rs.audit(frame, xgb_model, label="income", protected=["gender"], checks=("group_metrics",))
    assert run.gate is None and "gate" not in run.summary
