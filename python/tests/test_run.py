"""`fairpipe_rs.run` of the bundled pipelines: the figures equal those of the CLI's summary.json for
the same pipeline and seed; `out=` writes what the CLI writes; `data=` and `models=` replace a
`load`'s file and a `load_model`'s model with Python objects."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import fairpipe_rs
from conftest import (
    CENSUS_FEATURES,
    ROOT,
    brute_force_check,
    census,
    census_named,
    run_cli,
    without_timings,
)

# Bundled pipelines whose run is quick in a debug CLI build: an ONNX model's estimate and check,
# and its group metrics (with TestSGD's group scores).
PIPELINES = ["census-estimate.toml", "census-groups.toml"]


@pytest.fixture(scope="module", params=PIPELINES)
def cli_run(request, tmp_path_factory):
    """The CLI's summary.json of a bundled pipeline, run into a temporary folder."""
    name = request.param
    out = tmp_path_factory.mktemp(name.replace(".toml", ""))
    done = run_cli("run", str(ROOT / "pipelines" / name), "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    return name, json.loads((out / "summary.json").read_text())


def test_run_of_a_bundled_pipeline_equals_the_clis_summary(cli_run):
    name, cli = cli_run
    run = fairpipe_rs.run(ROOT / "pipelines" / name)
    ours = run.summary
    assert ours["stage_order"] == cli["stage_order"]
    assert ours["seed"] == cli["seed"]
    assert without_timings(ours["stages"]) == without_timings(cli["stages"])
    # The rest of the summary too (pipeline, file, version, warnings).
    assert without_timings(ours) == without_timings(cli)
    for stage in cli["stage_order"]:
        assert without_timings(run.figures(stage)) == without_timings(cli["stages"][stage])


def test_a_pipeline_given_as_a_string_runs_as_the_file(tmp_path):
    """A TOML string whose paths are absolute runs as the same file does."""
    text = (ROOT / "pipelines" / "census-estimate.toml").read_text()
    text = text.replace('"data/census.csv"', json.dumps(str(ROOT / "pipelines" / "data" / "census.csv")))
    text = text.replace('"data/census.codes.toml"', json.dumps(str(ROOT / "pipelines" / "data" / "census.codes.toml")))
    text = text.replace('"models/census.onnx"', json.dumps(str(ROOT / "pipelines" / "models" / "census.onnx")))
    from_string = fairpipe_rs.run(text)
    from_file = fairpipe_rs.run(str(ROOT / "pipelines" / "census-estimate.toml"))
    assert without_timings(from_string.summary["stages"]) == without_timings(from_file.summary["stages"])


def test_out_writes_the_clis_files_and_the_summary_is_the_runs(tmp_path):
    out = tmp_path / "run"
    run = fairpipe_rs.run(ROOT / "pipelines" / "census-estimate.toml", out=out)
    written = json.loads((out / "summary.json").read_text())
    assert written == json.loads(json.dumps(run.summary, allow_nan=False))
    for stage in ("check",):
        assert (out / f"{stage}.csv").is_file() and (out / f"{stage}.parquet").is_file()
        on_disk = pd.read_csv(out / f"{stage}.csv")
        assert len(on_disk) == len(run.table(stage)) == run.figures(stage)["discriminatory"]


def test_seed_overrides_the_pipelines(tmp_path):
    path = ROOT / "pipelines" / "census-estimate.toml"
    a = fairpipe_rs.run(path, seed=5)
    b = fairpipe_rs.run(path, seed=5)
    c = fairpipe_rs.run(path)
    assert a.summary["seed"] == 5 and c.summary["seed"] == 42
    assert without_timings(a.figures("estimate")) == without_timings(b.figures("estimate"))
    assert a.figures("estimate")["rate"] != c.figures("estimate")["rate"]


def test_data_replaces_a_loads_file():
    """The census CSV read by pandas, given as `data=`, gives the figures of the file itself (the
    stage's `drop` and `split_column` still apply)."""
    path = ROOT / "pipelines" / "census-estimate.toml"
    from_file = fairpipe_rs.run(path)
    from_frame = fairpipe_rs.run(path, data={"data": census_named()})
    assert without_timings(from_frame.summary["stages"]) == without_timings(from_file.summary["stages"])


def test_models_replaces_a_load_models_model(xgb_model):
    """An XGBoost object given as `models=` is the model the pipeline's check audits: its count
    equals a brute-force count over the test split."""
    path = ROOT / "pipelines" / "census-estimate.toml"
    run = fairpipe_rs.run(path, models={"model": xgb_model})
    df = census()
    test_rows = df[df["split"] == "test"].reset_index(drop=True)
    values = [sorted(df["gender"].unique())]
    assert values == [[0, 1]]
    flags, _ = brute_force_check(xgb_model, test_rows, CENSUS_FEATURES, ["gender"], values, 1)
    figures = run.figures("check")
    assert figures["checked"] == len(test_rows)
    assert figures["discriminatory"] == int(flags.sum())


def test_table_is_polars_by_default_and_pandas_on_request():
    import polars as pl

    run = fairpipe_rs.run(ROOT / "pipelines" / "census-groups.toml")
    table = run.table("metrics")
    assert isinstance(table, pl.DataFrame)
    frame = run.table("metrics", pandas=True)
    assert isinstance(frame, pd.DataFrame)
    groups = run.figures("metrics")["groups"]
    assert table.height == len(frame) == len(groups)
    assert list(table["group"]) == list(frame["group"]) == [g["group"] for g in groups]
    np.testing.assert_array_equal(table["selection_rate"].to_numpy(), [g["selection_rate"] for g in groups])


def test_the_report_is_html_naming_the_stages():
    run = fairpipe_rs.run(ROOT / "pipelines" / "census-estimate.toml")
    html = run.report_html()
    assert html.lstrip().lower().startswith("<!doctype html") or html.lstrip().lower().startswith("<html")
    for stage in run.summary["stage_order"]:
        assert stage in html
    notebook = run._repr_html_()
    assert isinstance(notebook, str) and "estimate" in notebook
