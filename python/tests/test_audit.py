"""`fairpipe_rs.audit` on real models trained in the session: a scikit-learn Pipeline on a pandas
DataFrame with string categories, an XGBoost classifier fitted on a DataFrame, a LightGBM
classifier fitted on a NumPy array. Its group metrics equal Fairlearn's MetricFrame on the same
predictions (1e-9), and its check of the real rows equals a brute-force count in Python."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fairpipe_rs
from conftest import (
    ADULT_CATEGORIES,
    ADULT_NUMBERS,
    CENSUS_FEATURES,
    SMALL_ESTIMATE,
    assert_close,
    assert_group_metrics_equal_fairlearn,
    brute_force_check,
    favourable_proba,
    without_timings,
)

ADULT_FEATURES = ["age", "workclass", "education-num", "marital-status", "occupation", "relationship", "race", "sex",
                  "capital-gain", "capital-loss", "hours-per-week", "native-country"]
assert sorted(ADULT_FEATURES) == sorted(ADULT_CATEGORIES + ADULT_NUMBERS)


class Case:
    """One audited model: the frame, how it is labelled, and the run."""

    def __init__(self, model, frame, label, favourable, protected, features, as_array, run):
        self.model, self.frame, self.label, self.favourable = model, frame, label, favourable
        self.protected, self.features, self.as_array, self.run = protected, features, as_array, run

    def proba(self):
        x = self.frame[self.features]
        return favourable_proba(self.model, x.to_numpy(dtype=float) if self.as_array else x, self.favourable)

    def y_true(self):
        return (self.frame[self.label] == self.favourable).to_numpy()


@pytest.fixture(scope="module")
def sklearn_case(sklearn_pipeline, adult_frames):
    _, frame = adult_frames
    run = fairpipe_rs.audit(frame, sklearn_pipeline, label="Y", favourable=">50K", protected=["sex", "race"], options=SMALL_ESTIMATE)
    return Case(sklearn_pipeline, frame, "Y", ">50K", ["sex", "race"], ADULT_FEATURES, False, run)


@pytest.fixture(scope="module")
def xgb_case(xgb_model, census_frames):
    _, frame = census_frames
    run = fairpipe_rs.audit(frame, xgb_model, label="income", protected=["gender", "race"], options=SMALL_ESTIMATE)
    return Case(xgb_model, frame, "income", 1, ["gender", "race"], CENSUS_FEATURES, False, run)


@pytest.fixture(scope="module")
def lgbm_case(lgbm_model, census_frames):
    _, frame = census_frames
    run = fairpipe_rs.audit(frame, lgbm_model, label="income", favourable=1, protected=["gender"], options=SMALL_ESTIMATE)
    return Case(lgbm_model, frame, "income", 1, ["gender"], CENSUS_FEATURES, True, run)


CASES = ["sklearn_case", "xgb_case", "lgbm_case"]


@pytest.mark.parametrize("case", CASES)
def test_group_metrics_equal_fairlearns_metricframe(case, request):
    c = request.getfixturevalue(case)
    y_pred = c.proba() > 0.5
    figures = c.run.figures("group_metrics")
    assert_group_metrics_equal_fairlearn(figures, c.frame, c.y_true(), y_pred, c.protected)


@pytest.mark.parametrize("case", CASES)
def test_check_of_the_real_rows_equals_a_brute_force_count(case, request):
    c = request.getfixturevalue(case)
    # Every value each protected attribute takes in the data (fairpipe's domain of a category, or
    # of an integer attribute whose values are contiguous, as here).
    values = []
    for attr in c.protected:
        seen = sorted(c.frame[attr].unique())
        if c.frame[attr].dtype.kind in "iu":
            assert seen == list(range(min(seen), max(seen) + 1)), f"{attr}: contiguous integer values"
        values.append(seen)
    flags, p = brute_force_check(c.model, c.frame, c.features, c.protected, values, c.favourable, c.as_array)
    figures = c.run.figures("check")
    assert figures["checked"] == len(c.frame)
    assert figures["discriminatory"] == int(flags.sum())
    assert flags.sum() > 0, "the data set has discriminatory rows for this model (else the comparison proves little)"
    assert_close("check rate", figures["rate"], flags.mean(), 1e-12)
    # The table lists the flagged rows: their own probabilities are the brute force's.
    table = c.run.table("check", pandas=True)
    assert len(table) == int(flags.sum())
    np.testing.assert_allclose(np.sort(table["p"].to_numpy()), np.sort(p[flags]), rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", CASES)
def test_the_estimate_is_a_rate_with_its_interval(case, request):
    c = request.getfixturevalue(case)
    est = c.run.figures("estimate")
    rate, (low, high) = est["rate"], est["ci95"]
    assert 0.0 <= low <= rate <= high <= 1.0, est


def test_the_same_seed_gives_the_same_run_and_another_seed_another_estimate(xgb_model, census_frames):
    _, frame = census_frames
    kw = dict(label="income", protected=["gender"], checks=("estimate",))
    a = fairpipe_rs.audit(frame, xgb_model, seed=3, **kw).figures("estimate")
    b = fairpipe_rs.audit(frame, xgb_model, seed=3, **kw).figures("estimate")
    c = fairpipe_rs.audit(frame, xgb_model, seed=4, **kw).figures("estimate")
    a.pop("elapsed_s", None), b.pop("elapsed_s", None), c.pop("elapsed_s", None)
    assert a == b
    assert a["rate"] != c["rate"]


def test_checks_runs_only_the_stages_asked_for(sklearn_pipeline, adult_frames):
    _, frame = adult_frames
    run = fairpipe_rs.audit(frame, sklearn_pipeline, label="Y", favourable=">50K", protected=["sex"], checks=("group_metrics",))
    assert "group_metrics" in run.summary["stages"]
    assert "estimate" not in run.summary["stages"] and "check" not in run.summary["stages"]


def test_a_test_mask_a_column_and_a_second_frame_measure_the_same_rows(sklearn_pipeline, adult_frames):
    """`test` as a boolean mask, a column name or a second frame: the metrics are those of the
    test rows alone, equal to Fairlearn's on them."""
    _, frame = adult_frames
    mask = (np.arange(len(frame)) % 3) == 0
    kw = dict(label="Y", favourable=">50K", protected=["sex", "race"], checks=("group_metrics", "check"))
    by_mask = fairpipe_rs.audit(frame, sklearn_pipeline, test=mask, **kw)
    with_column = frame.assign(is_test=mask)
    by_column = fairpipe_rs.audit(with_column, sklearn_pipeline, test="is_test", **kw)
    by_frame = fairpipe_rs.audit(frame, sklearn_pipeline, test=frame[mask].reset_index(drop=True), **kw)
    rows = frame[mask].reset_index(drop=True)
    y_pred = favourable_proba(sklearn_pipeline, rows[ADULT_FEATURES], ">50K") > 0.5
    y_true = (rows["Y"] == ">50K").to_numpy()
    for run in (by_mask, by_column, by_frame):
        assert_group_metrics_equal_fairlearn(run.figures("group_metrics"), rows, y_true, y_pred, ["sex", "race"])
        assert run.figures("check")["checked"] == len(rows)
    counts = {r.figures("check")["discriminatory"] for r in (by_mask, by_column, by_frame)}
    assert len(counts) == 1, counts


def test_a_test_table_cut_from_the_data_is_not_counted_as_training_rows(sklearn_pipeline, adult_frames):
    """The bundled example's pattern: `data` is every row and `test` a table cut from it
    (`df.drop(train.index)`, its index kept). The test rows are measured once and are not training
    rows: the model's train accuracy is that of `data` without them, its test figures and group
    metrics those of the test rows, as with the same rows given as a mask."""
    _, frame = adult_frames
    train = frame.sample(frac=0.7, random_state=0)
    test = frame.drop(train.index)
    kw = dict(label="Y", favourable=">50K", protected=["sex", "race"], checks=("group_metrics", "check"))
    by_frame = fairpipe_rs.audit(frame, sklearn_pipeline, test=test, **kw)
    by_mask = fairpipe_rs.audit(frame, sklearn_pipeline, test=frame.index.isin(test.index), **kw)

    def correct(rows):
        y_pred = favourable_proba(sklearn_pipeline, rows[ADULT_FEATURES], ">50K") > 0.5
        return int(np.sum(y_pred == (rows["Y"] == ">50K").to_numpy()))

    model = by_frame.figures("model")
    # The two readings differ on these rows, so the figure tells them apart.
    assert correct(train) / len(train) != correct(frame) / len(frame)
    assert_close("train accuracy (data without the test rows)", model["accuracy_train"], correct(train) / len(train), 1e-12)
    assert (model["total_test"], model["correct_test"]) == (len(test), correct(test))
    assert without_timings(model) == without_timings(by_mask.figures("model"))
    rows = test.reset_index(drop=True)
    y_pred = favourable_proba(sklearn_pipeline, rows[ADULT_FEATURES], ">50K") > 0.5
    y_true = (rows["Y"] == ">50K").to_numpy()
    assert_group_metrics_equal_fairlearn(by_frame.figures("group_metrics"), rows, y_true, y_pred, ["sex", "race"])
    # Equal rows are told apart by nothing but their place, so the counts are compared, not the rows.
    check, check_by_mask = by_frame.figures("check"), by_mask.figures("check")
    assert (check["checked"], check["discriminatory"]) == (len(test), check_by_mask["discriminatory"])
    # A second table that is not cut from the data is measured after it: the data's rows are the
    # training rows.
    other = frame.iloc[:1000].reset_index(drop=True)
    apart = fairpipe_rs.audit(other, sklearn_pipeline, test=test, **kw).figures("model")
    assert_close("train accuracy (data apart from the test rows)", apart["accuracy_train"], correct(other) / len(other), 1e-12)
    assert apart["total_test"] == len(test)


def test_the_favourable_column_is_found_through_classes(adult_frames, sklearn_pipeline):
    """Asking for the other class as favourable measures the complement: every selection rate
    becomes 1 minus the first one (no row lies exactly at 0.5)."""
    _, frame = adult_frames
    kw = dict(label="Y", protected=["sex"], checks=("group_metrics",))
    high = fairpipe_rs.audit(frame, sklearn_pipeline, favourable=">50K", **kw).figures("group_metrics")
    low = fairpipe_rs.audit(frame, sklearn_pipeline, favourable="<=50K", **kw).figures("group_metrics")
    p = favourable_proba(sklearn_pipeline, frame[ADULT_FEATURES], ">50K")
    assert not np.any(p == 0.5)
    by_group = {g["group"]: g["selection_rate"] for g in low["groups"]}
    for g in high["groups"]:
        assert_close(f"{g['group']} complement", by_group[g["group"]], 1.0 - g["selection_rate"], 1e-12)
    assert math.isclose(high["selection_rate"] + low["selection_rate"], 1.0, abs_tol=1e-12)
