"""How much of a Python audit's wall time is fairpipe's own, beyond the model's predict_proba.

A benchmark, not a test (issue 34, item 6): it trains scikit-learn's HistGradientBoostingClassifier
on the bundled census train split, wraps the fitted object's predict_proba to time every call the
engine makes, and runs `fairpipe_rs.audit` over the census rows (group metrics, estimate, check;
gender, race and age) several times. It prints, per round and as medians, the audit's wall time,
the wall time during which predict_proba was running (the union of its calls' intervals: calls
may overlap), and fairpipe's share: (wall - predict_proba) / wall.

    python scripts/bench_python.py [--rounds 5] [--rows N] [--checks group_metrics,estimate,check]

Every round is also appended, one JSON line each, to docs/figures/python/runs.jsonl with the
hash of fairpipe_rs's native module, the machine, the date, the command and `uptime`
(scripts/figures_meta.py), so a published figure can be recomputed from it.

Needs fairpipe_rs installed (pip install ./python) with scikit-learn, pandas.
"""

from __future__ import annotations

import argparse
import tomllib
import os
import platform
import json
import statistics
import sys
import time
from pathlib import Path

import pandas as pd
import sklearn
from sklearn.ensemble import HistGradientBoostingClassifier

import fairpipe_rs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from figures_meta import meta, uptime  # noqa: E402

RAW = ROOT / "docs" / "figures" / "python" / "runs.jsonl"


class Timer:
    """Wraps a bound predict_proba; records the interval of every call and the rows it served.

    The model's time is the length of the union of the intervals: the wall time during which some
    predict_proba call was running. That stays right if calls overlap, where their sum would not.
    """

    def __init__(self, inner):
        self.inner = inner
        self.reset()

    def reset(self):
        self.intervals, self.rows = [], 0

    def __call__(self, x):
        started = time.perf_counter()
        out = self.inner(x)
        self.intervals.append((started, time.perf_counter()))  # list.append is atomic
        self.rows += len(x)
        return out

    @property
    def calls(self):
        return len(self.intervals)

    @property
    def summed(self):
        return sum(b - a for a, b in self.intervals)

    @property
    def seconds(self):
        total, end = 0.0, float("-inf")
        for a, b in sorted(self.intervals):
            if b > end:
                total += b - max(a, end)
                end = b
        return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rows", type=int, default=0, help="audit the first N rows only (0: every census row)")
    ap.add_argument("--checks", default="group_metrics,estimate,check")
    ap.add_argument("--protected", default="gender,race,age")
    args = ap.parse_args()

    df = pd.read_csv(ROOT / "pipelines" / "data" / "census.csv")
    # The papers' integer codes for the named census file (what its pipelines' `codes` key applies).
    for _column, _names in tomllib.loads((ROOT / "pipelines" / "data" / "census.codes.toml").read_text(encoding="utf-8")).items():
        df[_column] = df[_column].map(_names)
    features = [c for c in df.columns if c not in ("row", "income", "split")]
    train = df[df["split"] == "train"]
    model = HistGradientBoostingClassifier(random_state=0).fit(train[features], train["income"])
    audited = df[features + ["income"]]
    if args.rows:
        audited = audited.iloc[: args.rows]
    timer = Timer(model.predict_proba)
    model.predict_proba = timer  # the engine looks the method up on the object: this one is timed

    checks = tuple(args.checks.split(","))
    protected = args.protected.split(",")
    print(
        f"fairpipe_rs {getattr(fairpipe_rs, '__version__', '?')}, scikit-learn {sklearn.__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs; {len(audited)} rows, checks {checks}, protected {protected}"
    )
    print(f"{'round':>5}  {'wall s':>8}  {'predict s':>9}  {'(summed)':>9}  {'calls':>6}  {'rows scored':>11}  {'fairpipe s':>10}  share")
    walls, predicts, shares = [], [], []
    native = getattr(sys.modules.get("fairpipe_rs._native"), "__file__", None) or fairpipe_rs.__file__
    record = dict(meta(native), fairpipe_rs=getattr(fairpipe_rs, "__version__", "?"), sklearn=sklearn.__version__,
                  python=platform.python_version(), rows=len(audited), checks=list(checks), protected=protected)
    RAW.parent.mkdir(parents=True, exist_ok=True)
    for r in range(args.rounds):
        timer.reset()
        started = time.perf_counter()
        run = fairpipe_rs.audit(audited, model, label="income", protected=protected, checks=checks, seed=r)
        wall = time.perf_counter() - started
        own = wall - timer.seconds
        walls.append(wall)
        predicts.append(timer.seconds)
        shares.append(own / wall)
        print(
            f"{r:>5}  {wall:>8.3f}  {timer.seconds:>9.3f}  {timer.summed:>9.3f}  {timer.calls:>6}  {timer.rows:>11}  {own:>10.3f}  {own / wall:.1%}"
        )
        with RAW.open("a", encoding="utf-8") as f:
            f.write(json.dumps(dict(record, round=r, seed=r, wall_s=wall, predict_s=timer.seconds, predict_summed_s=timer.summed,
                                    calls=timer.calls, rows_scored=timer.rows, uptime_after=uptime())) + "\n")
    print(
        f"median: wall {statistics.median(walls):.3f} s, predict_proba {statistics.median(predicts):.3f} s, "
        f"fairpipe's own {statistics.median(walls) - statistics.median(predicts):.3f} s, share {statistics.median(shares):.1%}"
    )
    figures = {c: run.figures(c) for c in checks}
    if "check" in figures:
        print(f"check: {figures['check']['discriminatory']} of {figures['check']['checked']} rows discriminatory")


if __name__ == "__main__":
    main()
