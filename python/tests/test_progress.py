"""What a run shows while it works (issue 51, item 2): the command line's bars in a terminal and
nothing on a pipe; plain text lines or tqdm bars on request and in a notebook (text when tqdm is
missing); a callable told each stage's count up to the figure the stage reports; and one line of
cost before an audit that asks the model about many rows, whose sums are the run's own figures."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import types

import pytest

import fairpipe_rs
from fairpipe_rs import _progress
from conftest import SMALL_ESTIMATE
from test_errors import good_pipeline


def small_audit(frame, model, **kw):
    return fairpipe_rs.audit(frame, model, label="income", protected=["gender", "race"], options=SMALL_ESTIMATE, **kw)


def done_lines(text: str) -> dict:
    """`stage -> (position, total, unit)` of each `  STAGE (KIND): done, P/T UNIT in S s` line."""
    found = {}
    for m in re.finditer(r"^  (\S+) \((\w+)\): done(?:, ([\d,]+)/([\d,]+) ([^\n]*?))? in [\d.]+ s$", text, re.M):
        counts = None if m.group(3) is None else (int(m.group(3).replace(",", "")), int(m.group(4).replace(",", "")), m.group(5))
        found[m.group(1)] = counts
    return found


def test_text_lines_end_each_stage_at_the_count_its_figures_report(xgb_model, census_frames, capsys):
    _, frame = census_frames
    run = small_audit(frame, xgb_model, progress="text")
    err = capsys.readouterr().err
    done = done_lines(err)
    assert list(done) == run.stages, err
    estimate = run.figures("estimate")
    assert done["estimate"] == (estimate["trials"], estimate["trials"], "trials"), err
    assert done["estimate"][0] == SMALL_ESTIMATE["estimate"]["trials"]
    checked = run.figures("check")["checked"]
    assert done["check"] == (checked, checked, "rows checked"), err
    assert "__fairpipe" not in err


def test_a_callable_is_told_of_every_stage_from_another_thread(xgb_model, census_frames):
    _, frame = census_frames
    told = []

    def follow(stage, kind, position, total, unit, elapsed, finished):
        told.append((stage, kind, position, total, unit, elapsed, finished, threading.current_thread() is threading.main_thread()))

    run = small_audit(frame, xgb_model, progress=follow)
    finished = [t for t in told if t[6]]
    assert [t[0] for t in finished] == run.stages, told
    assert [t[1] for t in finished] == [run.figures(s)["kind"] for s in run.stages]
    assert not any(t[7] for t in told), "the callable runs beside the run, not on the caller's thread"
    for stage in run.stages:
        mine = [t for t in told if t[0] == stage]
        assert mine[-1][6] and not any(t[6] for t in mine[:-1]), mine
        counted = [t[2] for t in mine if t[3] is not None]
        assert counted == sorted(counted), mine
        assert all(t[5] >= 0 for t in mine)
    last = [t for t in finished if t[0] == "estimate"][0]
    assert (last[2], last[3], last[4]) == (run.figures("estimate")["trials"],) * 2 + ("trials",)


def test_a_callable_that_raises_does_not_stop_the_run(xgb_model, census_frames, monkeypatch):
    """Its exception is reported once, as an unraisable exception, and it is called no more."""
    _, frame = census_frames
    calls, reported = [], []

    def broken(*args):
        calls.append(args)
        raise RuntimeError("a display that fails")

    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    run = small_audit(frame, xgb_model, checks=["group_metrics"], progress=broken)
    assert run.figures("group_metrics")["rows"] == len(frame)
    assert len(calls) == 1, "called once, then no more"
    assert [str(r.exc_value) for r in reported] == ["a display that fails"]


def test_tqdm_bars_count_to_the_figures(xgb_model, census_frames, capsys):
    _, frame = census_frames
    run = small_audit(frame, xgb_model, checks=["estimate"], progress="tqdm")
    err = capsys.readouterr().err
    trials = run.figures("estimate")["trials"]
    assert re.search(rf"estimate \(estimate\): 100%\|[^\n\r]*\| {trials}/{trials} ", err), err


def fake_notebook(monkeypatch):
    """An IPython module whose shell is a notebook kernel's (as ipykernel's is named)."""
    shell = type("ZMQInteractiveShell", (), {})()
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))


def test_a_notebook_gets_tqdm_bars_or_text_without_tqdm(monkeypatch):
    assert _progress.native_progress(None) in (None, True), "outside a notebook: the engine's bars or nothing"
    fake_notebook(monkeypatch)
    assert isinstance(_progress.native_progress(None), _progress.TqdmBars)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    assert isinstance(_progress.native_progress(None), _progress.TextLines)
    with pytest.raises(ValueError, match="pip install tqdm"):
        _progress.native_progress("tqdm")
    assert _progress.native_progress(False) is None
    with pytest.raises(ValueError, match="progress: 'loud'"):
        _progress.native_progress("loud")


def run_with_stderr(tmp_path, terminal: bool) -> str:
    """`fairpipe_rs.run` of the small census pipeline with default progress in a child process
    whose standard error is a terminal (a pseudo-terminal) or a pipe; what it wrote there."""
    path = tmp_path / "small.toml"
    path.write_text(good_pipeline().replace("trials = 10", "trials = 20"))
    code = f"import fairpipe_rs; fairpipe_rs.run({str(path)!r})"
    env = {**os.environ, "TERM": "xterm"}
    if not terminal:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stderr
    import pty

    leader, follower = pty.openpty()
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert child.wait(timeout=600) == 0, b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


def test_a_terminal_gets_the_command_lines_bars_and_a_pipe_nothing(tmp_path):
    drawn = run_with_stderr(tmp_path, terminal=True)
    assert "estimate (estimate)" in drawn and re.search(r"\d+/20 trials", drawn), drawn
    # On a pipe: no bars; only the run's warnings (census's `relationship` stands in for gender).
    piped = run_with_stderr(tmp_path, terminal=False)
    assert all(line.startswith("warning: ") for line in piped.splitlines()), piped


def planned(line: str) -> dict:
    return {stage: how for stage, how in re.findall(r"(\w+): ([^;)]*)", line.split(" rows (", 1)[1])}


def test_the_cost_line_comes_first_and_its_sums_are_the_runs(xgb_model, census_frames, capsys, monkeypatch):
    _, frame = census_frames
    monkeypatch.setattr(_progress, "COST_LINE_ROWS", 1)
    run = small_audit(frame, xgb_model, progress="text", batch_size=1000)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0].startswith("fairpipe: this audit asks the model about "), err
    line = lines[0]
    plan = planned(line)
    estimate, check = run.figures("estimate"), run.figures("check")
    combinations = estimate["variants_per_input"]
    assert plan["estimate"].startswith(f"{estimate['trials']} trials × {estimate['samples'] // estimate['trials']} samples × {combinations} combinations"), line
    assert plan["check"].startswith(f"{check['checked']:,} rows × {combinations} combinations"), line
    assert plan["group_metrics"] == f"{run.figures('group_metrics')['rows']:,} rows", line
    total = estimate["samples"] * combinations + check["checked"] * combinations + run.figures("group_metrics")["rows"]
    calls = -(-total // 1000)
    assert f" in about {calls:,} calls of up to 1,000 rows" in line, line
    asked = sum(run.figures(s)["model_queries"] for s in ("estimate", "check", "group_metrics"))
    assert 0 < asked <= total, (asked, total)


def test_no_cost_line_for_a_small_audit_nor_with_progress_off(xgb_model, census_frames, capsys):
    _, frame = census_frames
    small_audit(frame, xgb_model, progress="text")
    assert "fairpipe: this audit" not in capsys.readouterr().err
    small_audit(frame, xgb_model, progress=False, search={"plugin": "random", "max_seconds": 1})
    assert capsys.readouterr().err == ""


def test_the_searchs_default_budget_is_said_before_it_starts(xgb_model, census_frames, capsys):
    """`audit` bounds a search by default (the standard audit's `max_queries`, as `init` writes
    it), so a search given only a time limit is announced with that row budget."""
    _, frame = census_frames
    budget = fairpipe_rs._native.audit_defaults()["search"]["max_queries"]
    assert budget == 1_000_000
    small_audit(frame, xgb_model, checks=[], progress="text", search={"plugin": "random", "max_seconds": 1})
    err = capsys.readouterr().err
    assert err.startswith("fairpipe: this audit asks the model about 1.0 M rows"), err
    assert "(search: max_queries)" in err, err
    small_audit(frame, xgb_model, checks=["group_metrics"], progress="text", search={"plugin": "random", "max_seconds": 1})
    err = capsys.readouterr().err
    assert err.startswith("fairpipe: this audit asks the model about "), err
    assert "search: max_queries" in err, err
