"""What a user of `audit` sees is in their own terms (issue 51, item 2): each error names the
argument that caused it — never `<code>:1:1`, never a stage's internal key or the column the
package adds for `test=` — and no table, figure, warning or page of a finished audit names that
column; values go across as Python objects, so a wrong one is refused at its place in the
argument."""

from __future__ import annotations

import json

import numpy as np
import pytest

import fairpipe_rs
from conftest import SMALL_ESTIMATE

INTERNAL = ("__fairpipe", "<code>", ":1:1")


def said(caught) -> str:
    return str(caught.value) + "\n" + "\n".join(p.message for p in caught.value.problems)


def assert_in_callers_terms(text: str, argument: str):
    assert f"argument `{argument}`: " in text, text
    for name in INTERNAL:
        assert name not in text, (name, text)


def audit_errors(frame, model, **kw) -> str:
    kw.setdefault("label", "income")
    kw.setdefault("protected", ["gender"])
    with pytest.raises(fairpipe_rs.PipelineError) as caught:
        fairpipe_rs.audit(frame, model, **kw)
    for p in caught.value.problems:
        assert p.file is None and p.line is None and p.column is None, p
    return said(caught)


def test_a_missing_label_is_said_of_label(xgb_model, census_frames):
    _, frame = census_frames
    assert_in_callers_terms(audit_errors(frame, xgb_model, label="incme"), "label")


def test_a_favourable_value_not_in_the_label_is_said_of_favourable(xgb_model, census_frames):
    _, frame = census_frames
    text = audit_errors(frame, xgb_model, favourable="rich", checks=["group_metrics"])
    assert_in_callers_terms(text, "favourable")
    assert "rich" in text


def test_an_unknown_option_is_said_of_its_stage_in_options(xgb_model, census_frames):
    _, frame = census_frames
    text = audit_errors(frame, xgb_model, checks=["estimate"], options={"estimate": {"trails": 5}})
    assert 'options["estimate"]' in text and "trails" in text, text
    for name in INTERNAL:
        assert name not in text, text


def test_a_bad_search_parameter_is_said_of_search(xgb_model, census_frames):
    _, frame = census_frames
    text = audit_errors(frame, xgb_model, checks=[], search={"plugin": "random", "max_queries": -3})
    assert "argument `search" in text and "max_queries" in text, text
    for name in INTERNAL:
        assert name not in text, text


def test_a_value_python_cannot_hand_over_is_refused_at_its_place(xgb_model, census_frames):
    """A set is no pipeline value: refused before the run, at its place in `options`; NumPy scalars
    go across as their value (the run uses 40 trials)."""
    _, frame = census_frames
    with pytest.raises(TypeError, match=r'options\["estimate"\]\["trials"\]: a set is not a value'):
        fairpipe_rs.audit(frame, xgb_model, label="income", protected=["gender"], checks=["estimate"], options={"estimate": {"trials": {40}}})
    run = fairpipe_rs.audit(
        frame, xgb_model, label="income", protected=["gender"], checks=["estimate"],
        options={"estimate": {"trials": np.int64(40), "samples": np.int32(500)}}, favourable=np.int64(1),
    )
    assert run.figures("estimate")["trials"] == 40 and run.figures("estimate")["samples"] == 40 * 500


def test_the_summary_is_a_dict_equal_to_its_json(xgb_model, census_frames):
    _, frame = census_frames
    run = fairpipe_rs.audit(frame, xgb_model, label="income", protected=["gender"], checks=["group_metrics"])
    summary = run.summary
    assert type(summary) is dict and type(summary["stages"]) is dict and type(summary["stage_order"]) is list
    assert json.loads(json.dumps(summary)) == summary
    rows = summary["stages"]["group_metrics"]["rows"]
    assert type(rows) is int and rows == len(frame)


def test_no_internal_name_in_anything_a_finished_audit_shows(xgb_model, census_frames):
    """An audit measured on a `test=` mask, with every check and a search: its summary, warnings,
    tables (names, columns, cells) and report never name the column `audit` adds."""
    _, frame = census_frames
    mask = np.arange(len(frame)) % 3 == 0
    run = fairpipe_rs.audit(
        frame, xgb_model, label="income", protected=["gender", "race"], test=mask, options=SMALL_ESTIMATE,
        search={"plugin": "random", "max_queries": 2000},
    )
    assert run.figures("group_metrics")["rows"] == int(mask.sum())
    # The trail records the pipeline as run, the split column `audit` adds for `test=` included
    # (it is the record of what was audited); everything else is held to it.
    assert "__fairpipe_split" in run.summary["trail"]["pipeline"]
    summary = dict(run.summary, trail={k: v for k, v in run.summary["trail"].items() if k != "pipeline"})
    shown = [json.dumps(summary), run.report_html(), repr(run), " ".join(run.tables)]
    for name in run.tables:
        table = run.table(name)
        shown.append(" ".join(table.columns))
        for column in table.columns:
            if table[column].dtype == str or str(table[column].dtype) in ("String", "Utf8"):
                shown.append(" ".join(str(v) for v in table[column].to_list()))
    everything = "\n".join(shown)
    assert "__fairpipe" not in everything
