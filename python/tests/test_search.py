"""Every built-in search method (as `fairpipe list` names them) through the Python model path, on
a scikit-learn Pipeline fitted on string categories: each run ends, and every row the model is
given holds only categories of the data (a search's step past a category's last level, as MAFT's
gradient probes take, is held to the domain by the host before the model sees it)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import fairpipe_rs
from conftest import ADULT_CATEGORIES, run_cli


def built_in_methods():
    listed = run_cli("list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    # Auditors (testsgd) run in a group_score stage, not as `search=`.
    names = [p["name"] for p in json.loads(listed.stdout)["plugins"] if p["source"] == "built-in" and p["kind"] != "auditor"]
    assert len(names) >= 7, names
    return names


METHODS = built_in_methods()


class Watching:
    """The model, with a record of every value it is given that is not a category of the data."""

    def __init__(self, model, frame):
        self.model = model
        self.classes_ = model.classes_
        self.feature_names_in_ = model.feature_names_in_
        self.levels = {c: set(frame[c].unique().tolist()) for c in ADULT_CATEGORIES}
        self.outside = []
        self.rows = 0

    def predict_proba(self, x):
        self.rows += len(x)
        for column, levels in self.levels.items():
            bad = ~x[column].isin(levels).to_numpy()
            if bad.any():
                self.outside.append((column, x[column].to_numpy()[bad][:3].tolist()))
        return self.model.predict_proba(x)


@pytest.mark.parametrize("method", METHODS)
def test_every_built_in_method_runs_on_a_string_category_model(method, sklearn_pipeline, adult_frames):
    _, frame = adult_frames
    model = Watching(sklearn_pipeline, frame)
    run = fairpipe_rs.audit(
        frame.iloc[:500],
        model,
        label="Y",
        favourable=">50K",
        protected=["sex", "race"],
        checks=[],
        search={"plugin": method, "max_queries": 20000, "random_seeds": 50},
    )
    search = run.figures("search")
    assert search["queries_asked"] > 0 and model.rows > 0, (method, search)
    assert model.outside == [], f"{method} handed the model values that are not categories of the data: {model.outside[:3]}"
    verified = run.figures("verify")
    assert verified["confirmed"] <= search["emitted"], verified


class Constant:
    """A model without feature names: it reads the NumPy form of the rows."""

    def predict_proba(self, x):
        return np.full((len(x), 2), 0.5)


def test_a_category_code_off_the_levels_is_refused_naming_its_row():
    """The decoder's own refusal (a row that reaches it off the levels) names the offending row,
    not the batch's first."""
    from fairpipe_rs._model import ModelSpec, bind

    attributes = [
        {"name": "sex", "kind": "categorical", "levels": ["Female", "Male"], "protected": True},
        {"name": "age", "kind": "integer", "levels": None, "protected": False},
    ]
    bound = bind(ModelSpec(Constant()), {"attributes": attributes})
    fine = np.array([[0.0, 30.0], [1.0, 40.0]])
    assert np.frombuffer(bound["scorer"](fine.tobytes(), 2, 1), dtype=np.float64).tolist() == [0.5, 0.5]
    rows = np.array([[0.0, 30.0], [1.0, 40.0], [2.0, 50.0]])
    with pytest.raises(ValueError, match=r"row 2 of a batch of 3 gives sex the code 2\.0.*sex=2\.0, age=50\.0"):
        bound["scorer"](rows.tobytes(), 3, 1)
