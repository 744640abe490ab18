"""Shared fixtures of the fairpipe_rs suite: the bundled data as pandas frames, real models trained
on it in the session (a scikit-learn Pipeline on string categories, XGBoost and LightGBM on the
integer-coded census rows), the reference computations the package is held against (Fairlearn's
MetricFrame, a brute-force count of the check) and the CLI binary.

Every dependency is imported at module level: a missing one is an error of the whole suite, never
a skipped test.
"""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import tomllib
from pathlib import Path

import lightgbm
import numpy as np
import pandas as pd
import pytest
import xgboost
from fairlearn.metrics import (
    MetricFrame,
    count,
    demographic_parity_difference,
    demographic_parity_ratio,
    equal_opportunity_difference,
    equal_opportunity_ratio,
    equalized_odds_difference,
    equalized_odds_ratio,
    false_negative_rate,
    false_positive_rate,
    selection_rate,
    true_negative_rate,
    true_positive_rate,
)
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, precision_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "pipelines" / "data"

# Rows of each frame: enough for every group of sex x race to have rows, few enough for the suite
# to run in a few minutes on 2 cores.
TRAIN_ROWS = 4000
AUDIT_ROWS = 3000

# A smaller estimate than the default (the suite checks its form, not its precision): fewer
# predict_proba rows, so the suite runs in a few minutes.
SMALL_ESTIMATE = {"estimate": {"trials": 40, "samples": 500}}

ADULT_CATEGORIES = ["workclass", "marital-status", "occupation", "relationship", "race", "sex", "native-country"]
ADULT_NUMBERS = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]


def adult() -> pd.DataFrame:
    """The raw UCI Adult file as a user reads it: string categories, integer columns, the label as
    the strings `<=50K` / `>50K`; rows with a missing value (`?`) dropped, as adult-train.toml does."""
    df = pd.read_csv(DATA / "adult.data.csv", skipinitialspace=True)
    df = df.drop(columns=["fnlwgt", "education"])
    df = df[~df.isin(["?"]).any(axis=1)].reset_index(drop=True)
    assert df["Y"].isin(["<=50K", ">50K"]).all()
    return df


def census_named() -> pd.DataFrame:
    """The bundled census rows as written: Adult's category names ("Female", "26–45"), label
    `income` as `<=50K` / `>50K`."""
    return pd.read_csv(DATA / "census.csv")


def census() -> pd.DataFrame:
    """The census rows in the papers' integer codes, as pipelines/census-*.toml encode them with
    `codes = "data/census.codes.toml"` (label `income`: 1 for `>50K`)."""
    df = census_named()
    codes = tomllib.loads((DATA / "census.codes.toml").read_text(encoding="utf-8"))
    for column, names in codes.items():
        df[column] = df[column].map(names)
        assert df[column].notna().all(), f"{column}: a name without a code"
    return df


CENSUS_FEATURES = [
    "age",
    "workclass",
    "educational-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "gender",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
]


@pytest.fixture(scope="session")
def adult_frames():
    """(train, audit) frames of the raw Adult data, disjoint rows."""
    df = adult()
    train = df.iloc[:TRAIN_ROWS].reset_index(drop=True)
    audit = df.iloc[TRAIN_ROWS : TRAIN_ROWS + AUDIT_ROWS].reset_index(drop=True)
    return train, audit


@pytest.fixture(scope="session")
def sklearn_pipeline(adult_frames):
    """A scikit-learn Pipeline (OneHotEncoder on the string categories, StandardScaler on the
    numbers, logistic regression) fitted on a pandas DataFrame with the string label."""
    train, _ = adult_frames
    pre = ColumnTransformer(
        [
            ("categories", OneHotEncoder(handle_unknown="ignore"), ADULT_CATEGORIES),
            ("numbers", StandardScaler(), ADULT_NUMBERS),
        ]
    )
    model = Pipeline([("pre", pre), ("clf", LogisticRegression(max_iter=2000))])
    model.fit(train.drop(columns=["Y"]), train["Y"])
    assert list(model.classes_) == ["<=50K", ">50K"]
    return model


@pytest.fixture(scope="session")
def census_frames():
    """(train, audit) frames of the integer-coded census rows: the bundled train and test splits."""
    df = census()
    train = df[df["split"] == "train"].iloc[:TRAIN_ROWS]
    audit = df[df["split"] == "test"].iloc[:AUDIT_ROWS]
    keep = CENSUS_FEATURES + ["income"]
    return train[keep].reset_index(drop=True), audit[keep].reset_index(drop=True)


@pytest.fixture(scope="session")
def xgb_model(census_frames):
    """An XGBoost classifier fitted on a pandas DataFrame (so it has feature_names_in_)."""
    train, _ = census_frames
    model = xgboost.XGBClassifier(n_estimators=60, max_depth=4, learning_rate=0.2, n_jobs=1, random_state=0)
    model.fit(train[CENSUS_FEATURES], train["income"])
    assert list(model.feature_names_in_) == CENSUS_FEATURES
    return model


@pytest.fixture(scope="session")
def lgbm_model(census_frames):
    """A LightGBM classifier fitted on a NumPy array (no feature_names_in_: fairpipe passes an
    array with the data's feature columns in order)."""
    train, _ = census_frames
    model = lightgbm.LGBMClassifier(n_estimators=60, num_leaves=15, n_jobs=1, random_state=0, verbose=-1)
    model.fit(train[CENSUS_FEATURES].to_numpy(dtype=float), train["income"].to_numpy())
    assert not hasattr(model, "feature_names_in_")
    return model


def favourable_proba(model, x, favourable) -> np.ndarray:
    """P(favourable) of every row of `x`, read from predict_proba through `classes_`."""
    classes = list(model.classes_)
    return model.predict_proba(x)[:, classes.index(favourable)]


# ---------------------------------------------------------------------------------------------
# Fairlearn's figures, named as fairpipe's group_metrics names them.


# Fairlearn's rate functions, with one convention made explicit: a rate whose denominator is empty
# in a group (TPR of a group without a favourable label, say) is undefined, NaN, as fairpipe writes
# it (`null`) and leaves it out of the parity summaries; Fairlearn's own functions would return 0
# there (scikit-learn's confusion_matrix(normalize="true")). Defined rates are Fairlearn's values.


def _defined_if(has_denominator, rate):
    def metric(t, p):
        t, p = np.asarray(t, dtype=int), np.asarray(p, dtype=int)
        return float(rate(t, p, pos_label=1)) if has_denominator(t, p) else math.nan

    metric.__name__ = rate.__name__
    return metric


def _any_positive(t, p):
    return bool(np.any(t == 1))


def _any_negative(t, p):
    return bool(np.any(t == 0))


def _ppv(t, p):
    return precision_score(t, p, pos_label=1, zero_division=np.nan)


def _npv(t, p):
    return precision_score(t, p, pos_label=0, zero_division=np.nan)


def _base_rate(t, p):
    return float(np.mean(t))


FAIRLEARN_METRICS = {
    "count": count,
    "selection_rate": selection_rate,
    "base_rate": _base_rate,
    "tpr": _defined_if(_any_positive, true_positive_rate),
    "fpr": _defined_if(_any_negative, false_positive_rate),
    "fnr": _defined_if(_any_positive, false_negative_rate),
    "tnr": _defined_if(_any_negative, true_negative_rate),
    "ppv": _ppv,
    "npv": _npv,
    "accuracy": accuracy_score,
}

PARITY_SUMMARIES = [
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "equalized_odds_difference",
    "equalized_odds_ratio",
    "equal_opportunity_difference",
    "equal_opportunity_ratio",
    "predictive_parity_difference",
]


def attribute_sets(protected, columns):
    """The attribute sets fairpipe measures: each protected attribute, then their intersection
    (attributes in the data's column order, as fairpipe names it: "race × sex")."""
    protected = sorted(protected, key=list(columns).index)
    sets = [[p] for p in protected]
    if len(protected) > 1:
        sets.append(list(protected))
    return sets


def fairlearn_reference(frame: pd.DataFrame, y_true: np.ndarray, y_pred: np.ndarray, protected) -> dict:
    """Per attribute set (named as fairpipe names it, "sex × race"): Fairlearn's MetricFrame by
    group (groups named "Female × White") and the parity summaries as Fairlearn computes them
    (`MetricFrame.difference()` / `.ratio()` between groups, equalized odds the worse of TPR and
    FPR). When every group has every rate defined, the summaries are also those of
    fairlearn.metrics' named functions (asserted here)."""
    y_true, y_pred = np.asarray(y_true, dtype=int), np.asarray(y_pred, dtype=int)
    out = {}
    for attrs in attribute_sets(protected, frame.columns):
        sf = frame[attrs].astype(str) if len(attrs) > 1 else frame[attrs[0]].astype(str)
        mf = MetricFrame(metrics=FAIRLEARN_METRICS, y_true=y_true, y_pred=y_pred, sensitive_features=sf)
        by_group = {}
        for key, row in mf.by_group.iterrows():
            name = " × ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)
            by_group[name] = {k: float(v) for k, v in row.items()}
        difference, ratio = mf.difference(), mf.ratio()
        summaries = {
            "demographic_parity_difference": difference["selection_rate"],
            "demographic_parity_ratio": ratio["selection_rate"],
            "equalized_odds_difference": max(difference["tpr"], difference["fpr"]),
            "equalized_odds_ratio": min(ratio["tpr"], ratio["fpr"]),
            "equal_opportunity_difference": difference["tpr"],
            "equal_opportunity_ratio": ratio["tpr"],
            "predictive_parity_difference": difference["ppv"],
        }
        if not mf.by_group.isna().any().any():
            kw = dict(y_true=y_true, y_pred=y_pred, sensitive_features=sf)
            named = {
                "demographic_parity_difference": demographic_parity_difference(**kw),
                "demographic_parity_ratio": demographic_parity_ratio(**kw),
                "equalized_odds_difference": equalized_odds_difference(**kw),
                "equalized_odds_ratio": equalized_odds_ratio(**kw),
                "equal_opportunity_difference": equal_opportunity_difference(**kw),
                "equal_opportunity_ratio": equal_opportunity_ratio(**kw),
            }
            for k, v in named.items():
                assert abs(v - summaries[k]) <= 1e-12, (attrs, k, v, summaries[k])
        out[" × ".join(attrs)] = {"by_group": by_group, "summaries": {k: float(v) for k, v in summaries.items()}}
    return out


def number(v):
    """A figure as a float (`None`, written for an undefined rate, reads as NaN)."""
    return math.nan if v is None else float(v)


def assert_close(what, ours, theirs, tol=1e-9):
    ours, theirs = number(ours), number(theirs)
    if math.isnan(theirs):
        assert math.isnan(ours), f"{what}: fairpipe {ours}, Fairlearn undefined"
    else:
        assert abs(ours - theirs) <= tol, f"{what}: fairpipe {ours!r} vs reference {theirs!r}"


def assert_group_metrics_equal_fairlearn(figures: dict, frame, y_true, y_pred, protected):
    """Every group's rates and every attribute set's parity summaries in fairpipe's group_metrics
    figures equal Fairlearn's on the same predictions (1e-9); the same groups on both sides."""
    reference = fairlearn_reference(frame, y_true, y_pred, protected)
    assert figures["rows"] == len(y_true)
    assert_close("overall selection_rate", figures["selection_rate"], float(np.mean(y_pred)))
    ours_by_set: dict[str, dict] = {}
    for g in figures["groups"]:
        ours_by_set.setdefault(g["attributes"], {})[g["group"]] = g
    assert sorted(ours_by_set) == sorted(reference), "the same attribute sets"
    for set_name, theirs in reference.items():
        ours = ours_by_set[set_name]
        assert sorted(ours) == sorted(theirs["by_group"]), f"{set_name}: the same groups"
        for group, t in theirs["by_group"].items():
            g = ours[group]
            assert g["n"] == t["count"] and g["count"] == t["count"], f"{set_name} {group}: count"
            for metric in FAIRLEARN_METRICS:
                if metric != "count":
                    assert_close(f"{set_name} {group} {metric}", g[metric], t[metric])
        for summary in PARITY_SUMMARIES:
            assert_close(f"{set_name} {summary}", figures["parity"][set_name][summary], theirs["summaries"][summary])


# ---------------------------------------------------------------------------------------------
# The check of the real rows, counted by brute force.


def brute_force_check(model, frame: pd.DataFrame, features, protected, values, favourable, as_array=False):
    """For every row of `frame`: set its protected attributes to every other combination of
    `values` (one list per attribute), call predict_proba, and flag the row when some variant's
    label (P(favourable) > 0.5) differs from the row's own. Returns (flags, P(favourable))."""
    x = frame[features]

    def proba(v):
        return favourable_proba(model, v.to_numpy(dtype=float) if as_array else v, favourable)

    p = proba(x)
    flags = np.zeros(len(frame), dtype=bool)
    for combo in itertools.product(*values):
        variant = x.copy()
        for attr, value in zip(protected, combo):
            variant[attr] = value
        q = proba(variant)
        flags |= (p > 0.5) != (q > 0.5)
    return flags, p


# ---------------------------------------------------------------------------------------------
# The CLI.


def cli_binary() -> Path:
    """The fairpipe CLI built from this checkout (FAIRPIPE_BIN, else target/debug/fairpipe). Its
    absence fails the tests that compare with it, naming the build command."""
    path = Path(os.environ.get("FAIRPIPE_BIN", ROOT / "target" / "debug" / "fairpipe"))
    assert path.is_file(), f"{path}: no fairpipe binary; build it with `cargo build` (or set FAIRPIPE_BIN)"
    return path


def run_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli_binary()), *args], cwd=cwd or ROOT, capture_output=True, text=True, timeout=1800)


def is_timing(key: str) -> bool:
    """Figures that measure time (`elapsed_s`, `run_elapsed_s`, `rule_sets_per_second`, ...): they
    differ between two runs of the same audit; nothing else may."""
    return key.endswith("_s") or key.endswith("_per_second")


def without_timings(value):
    """A summary (or a part of it) without its timing figures."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if not is_timing(k)}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value
