"""Fairlearn's figures on fixed predictions, for fairpipe's group metrics to be held against.

Not run by CI (it needs Fairlearn): run it by hand in a venv outside the repository when the
definitions or the fixtures change, and check in what it writes.

    python3 -m venv /work/venv-fairlearn && /work/venv-fairlearn/bin/pip install fairlearn pandas scikit-learn
    /work/venv-fairlearn/bin/python scripts/fairlearn_reference.py

For the bundled COMPAS and census data it fits a plain scikit-learn logistic regression on the
train split (any fixed predictions would do; these are not fairpipe's), scores the test split, and
writes

* tests/fixtures/fairlearn/<name>_predictions.csv: the sensitive columns, y_true (1 = the
  favourable outcome), y_pred (score > 0.5) and score of every test row;
* tests/fixtures/fairlearn/reference.json: per data set and attribute set (each sensitive column,
  and one intersection: sex x age group, gender x age, whose groups all have every rate
  defined), Fairlearn's MetricFrame by group (count, selection_rate, TPR, FPR, precision) and
  the six parity summaries of fairlearn.metrics, plus predictive_parity_difference
  (MetricFrame(precision_score).difference()), with the Fairlearn version used.

The Rust test tests/fairlearn.rs computes the same from the CSV with fairpipe's functions and
asserts equality to 1e-9.
"""
import json
import tomllib
import pathlib

import fairlearn
import numpy as np
import pandas as pd
from fairlearn.metrics import (
    MetricFrame,
    count,
    demographic_parity_difference,
    demographic_parity_ratio,
    equal_opportunity_difference,
    equal_opportunity_ratio,
    equalized_odds_difference,
    equalized_odds_ratio,
    false_positive_rate,
    selection_rate,
    true_positive_rate,
)
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import precision_score

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "fairlearn"


def compas():
    df = pd.read_csv(ROOT / "pipelines" / "data" / "compas.csv")
    y = (df["two_year_recid"] == 0).astype(int)  # favourable: no re-offence
    df["age_group"] = pd.cut(df["age"], [0, 24, 45, 200], labels=["<25", "25-45", ">45"]).astype(str)
    x = pd.get_dummies(df.drop(columns=["two_year_recid", "split", "age_group"]), dtype=float)
    return df, x, y, ["sex", "race", "age_group"], [["sex"], ["race"], ["age_group"], ["sex", "age_group"]]


def census():
    df = pd.read_csv(ROOT / "pipelines" / "data" / "census.csv")
    # The papers' integer codes, as the census pipelines' `codes` key applies them.
    codes = tomllib.loads((ROOT / "pipelines" / "data" / "census.codes.toml").read_text(encoding="utf-8"))
    for column, names in codes.items():
        df[column] = df[column].map(names)
    y = df["income"].astype(int)
    x = df.drop(columns=["row", "income", "split"]).astype(float)
    for c in ["gender", "race", "age"]:
        df[c] = df[c].astype(str)
    return df, x, y, ["gender", "race", "age"], [["gender"], ["race"], ["age"], ["gender", "age"]]


def reference(name, df, x, y, columns, sets):
    train, test = df["split"] == "train", df["split"] == "test"
    model = LogisticRegression(max_iter=2000).fit(x[train], y[train])
    score = model.predict_proba(x[test])[:, 1]
    y_true = y[test].to_numpy()
    y_pred = (score > 0.5).astype(int)
    fixed = df.loc[test, columns].copy()
    fixed["y_true"], fixed["y_pred"], fixed["score"] = y_true, y_pred, score
    fixed.to_csv(OUT / f"{name}_predictions.csv", index=False, float_format="%.17g")
    out = {}
    for attrs in sets:
        sf = fixed[attrs] if len(attrs) > 1 else fixed[attrs[0]]
        frame = MetricFrame(
            metrics={
                "count": count,
                "selection_rate": selection_rate,
                "tpr": true_positive_rate,
                "fpr": false_positive_rate,
                "ppv": lambda t, p: precision_score(t, p, zero_division=np.nan),
            },
            y_true=y_true,
            y_pred=y_pred,
            sensitive_features=sf,
        )
        by_group = {}
        for key, row in frame.by_group.iterrows():
            label = " × ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)
            by_group[label] = {k: float(v) for k, v in row.items()}
            # Every rate defined: no empty denominator, so no convention of Fairlearn's is tested.
            assert all(np.isfinite(v) for v in by_group[label].values()), (name, attrs, label)
        kw = dict(y_true=y_true, y_pred=y_pred, sensitive_features=sf)
        ppv = MetricFrame(metrics=lambda t, p: precision_score(t, p, zero_division=np.nan), **kw)
        out[" × ".join(attrs)] = {
            "demographic_parity_difference": demographic_parity_difference(**kw),
            "demographic_parity_ratio": demographic_parity_ratio(**kw),
            "equalized_odds_difference": equalized_odds_difference(**kw),
            "equalized_odds_ratio": equalized_odds_ratio(**kw),
            "equal_opportunity_difference": equal_opportunity_difference(**kw),
            "equal_opportunity_ratio": equal_opportunity_ratio(**kw),
            "predictive_parity_difference": float(ppv.difference()),
            "by_group": by_group,
        }
    return out


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    result = {"fairlearn_version": fairlearn.__version__}
    result["compas"] = reference("compas", *compas())
    result["census"] = reference("census", *census())
    (OUT / "reference.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"fairlearn {fairlearn.__version__}: wrote {OUT}")


if __name__ == "__main__":
    main()
