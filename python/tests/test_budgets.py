"""Python's `audit` and `fairpipe init` run one standard audit (`fairpipe_core::preset`), with the
same budgets: the pipeline `audit` built (its audit trail records its text) and the pipeline
`init` writes for the same rows hold the same estimate, check, search and verify stages and the
same group metrics settings. Before the preset, the estimate's default sample was 400,000 inputs
in Python and 100,000 in init's pipeline, and a Python search had no budget."""

from __future__ import annotations

import tomllib

import numpy as np

import fairpipe_rs
from conftest import census_named, run_cli


class Constant:
    """A model giving every row P(>50K) = 0.7: the test is of the pipeline, not the model, and a
    constant is the cheapest model to push the default budgets through."""

    classes_ = np.array(["<=50K", ">50K"])

    def predict_proba(self, x):
        return np.tile([0.3, 0.7], (len(x), 1))


def test_audit_and_init_build_the_same_standard_audit(tmp_path):
    frame = census_named()
    data = tmp_path / "census.csv"
    frame.to_csv(data, index=False)
    written = run_cli("init", str(data), "--out", str(tmp_path / "p.toml"))
    assert written.returncode == 0, written.stderr
    theirs = tomllib.loads((tmp_path / "p.toml").read_text())["stages"]

    run = fairpipe_rs.audit(
        frame,
        Constant(),
        label="income",
        favourable=">50K",
        protected=["gender", "race"],
        test=(frame["split"] == "test").to_numpy(),
        drop=["row", "split"],
        search="maft",
    )
    ours = tomllib.loads(run.summary["trail"]["pipeline"])["stages"]

    # The budgets, as written by both: 100 x 1,000 estimate inputs, 1,000,000 search rows.
    assert ours["estimate"] == theirs["estimate"], (ours["estimate"], theirs["estimate"])
    assert (ours["estimate"]["trials"], ours["estimate"]["samples"]) == (100, 1000)
    search = {k: v for k, v in theirs["search"].items() if k != "seeds"}
    assert ours["search"] == search, (ours["search"], theirs["search"])
    assert ours["search"]["max_queries"] == 1_000_000 and ours["search"]["plugin"] == "maft"
    # 1,000 seeds: init's k-means seeds, audit's uniform random ones (generate's default count).
    assert theirs["seeds"]["seeds"] == ours["search"].get("random_seeds", 1000) == 1000
    assert ours["check"] == theirs["check"] and ours["verify"] == theirs["verify"]
    # Group metrics: the same settings; init has one stage per attribute.
    assert ours["group_metrics"] == {k: v for k, v in theirs["metrics_gender"].items() if k != "protected"}
    assert theirs["metrics_gender"]["protected"] == ["gender"]

    # The run held to those budgets.
    estimate = run.figures("estimate")
    assert (estimate["trials"], estimate["per_trial"], estimate["samples"]) == (100, 1000, 100_000), estimate
    assert run.figures("search")["queries_asked"] <= 1_000_000
