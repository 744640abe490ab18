"""Audit an income model in Python, as a notebook would: train a scikit-learn Pipeline on the
bundled UCI Adult census data (a pandas DataFrame with string categories), then audit the fitted
object with fairpipe — no ONNX export, no CSV, no TOML.

    pip install "./python[examples]"      # from a clone of fairpipe (needs the Rust toolchain)
    python python/examples/audit_census.py      # or a copy of it, from any folder

Each block below is a notebook cell.
"""

from pathlib import Path

import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import fairpipe_rs

# --- The data: the raw census file as anyone reads it (strings, '?' for a missing value), found
# wherever this runs (fairpipe_rs.example_data: the clone the package was built from, or
# FAIRPIPE_DATA).
DATA = fairpipe_rs.example_data("adult.data.csv")
df = pd.read_csv(DATA, skipinitialspace=True).drop(columns=["fnlwgt", "education"])
df = df[~df.isin(["?"]).any(axis=1)].reset_index(drop=True)
train = df.sample(frac=0.7, random_state=0)
test = df.drop(train.index)

# --- The model: one-hot encoded categories, scaled numbers, a logistic regression.
categories = ["workclass", "marital-status", "occupation", "relationship", "race", "sex", "native-country"]
numbers = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
model = Pipeline(
    [
        ("pre", ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), categories), ("num", StandardScaler(), numbers)])),
        ("clf", LogisticRegression(max_iter=2000)),
    ]
)
model.fit(train.drop(columns=["Y"]), train["Y"])
print(f"trained on {len(train)} rows; accuracy on the {len(test)} held-out rows: {model.score(test.drop(columns=['Y']), test['Y']):.3f}")

# --- The audit: group metrics with intervals, the discrimination estimate, the check of the real
# rows; measured on the held-out rows, for sex and race.
run = fairpipe_rs.audit(df, model, label="Y", favourable=">50K", protected=["sex", "race"], test=test, seed=0)

metrics = run.figures("group_metrics")
print("\nSelection rate (P(>50K) predicted) per group, with 95% intervals and impact ratios:")
for g in metrics["groups"]:
    if g["attributes"] in ("sex", "race"):
        low, high = g["ci95"]
        print(f"  {g['attributes']:>5} = {g['group']:<20} n={g['n']:>5}  {g['selection_rate']:.3f} [{low:.3f}, {high:.3f}]  impact ratio {g['impact_ratio']:.3f}")
print("\nFairlearn's parity summaries:")
for attributes, summary in metrics["parity"].items():
    print(
        f"  {attributes:<12} demographic parity ratio {summary['demographic_parity_ratio']:.3f}, "
        f"equalized odds difference {summary['equalized_odds_difference']:.3f}"
    )
flagged = [f"{g['attributes']} = {g['group']}" for g in metrics["below_threshold"]]
print(f"  four-fifths rule flags: {', '.join(flagged) if flagged else 'none'}")

check = run.figures("check")
print(
    f"\nReal people treated differently only for their sex or race: {check['discriminatory']} of {check['checked']} "
    f"({check['rate']:.2%}, 95% interval {check['ci95'][0]:.2%}–{check['ci95'][1]:.2%})"
)
estimate = run.figures("estimate")
print(f"Share of all possible inputs treated so (estimate): {estimate['rate']:.2%} [{estimate['ci95'][0]:.2%}, {estimate['ci95'][1]:.2%}]")

# --- In a notebook, `run` alone shows the HTML report inline; here it is written to a file.
report = Path("out") / "audit_census" / "report.html"
report.parent.mkdir(parents=True, exist_ok=True)
report.write_text(run.report_html())
print(f"\nreport: {report}")
