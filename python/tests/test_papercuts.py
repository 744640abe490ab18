"""What a new user hit (issue 51, item 8): the example finds its data from any folder, and an
audit's errors name the argument that caused them — never `<code>:1:1`, never the column the
package adds for `test=`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fairpipe_rs
from conftest import ROOT

EXAMPLE = ROOT / "python" / "examples" / "audit_census.py"


def python_in(folder: Path, code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "FAIRPIPE_DATA"}
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def test_the_bundled_data_is_found_from_any_folder(tmp_path):
    done = python_in(tmp_path, "import fairpipe_rs; print(fairpipe_rs.example_data('adult.data.csv'))")
    assert done.returncode == 0, done.stderr
    found = Path(done.stdout.strip())
    assert found.is_file() and found.resolve() == (ROOT / "pipelines" / "data" / "adult.data.csv").resolve()
    with pytest.raises(FileNotFoundError, match="FAIRPIPE_DATA"):
        fairpipe_rs.example_data("no-such-file.csv")


def test_a_copy_of_the_example_reads_its_data_in_another_folder(tmp_path):
    """The example's data cell, copied elsewhere, reads the Adult rows (the whole example trains
    and audits for minutes; its first cell is what depended on where the file was)."""
    source = EXAMPLE.read_text()
    assert "__file__" not in source, "the example finds its data through the package, not its own place"
    cell = source.split("# --- The model")[0]
    copy = tmp_path / "copied.py"
    copy.write_text(cell + "\nprint(len(df), len(train), len(test))\n")
    done = subprocess.run([sys.executable, str(copy)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows, train, test = (int(v) for v in done.stdout.split())
    assert rows > 30000 and train + test == rows


def test_a_missing_protected_column_is_said_of_the_argument(xgb_model, census_frames):
    _, frame = census_frames
    with pytest.raises(fairpipe_rs.PipelineError) as caught:
        fairpipe_rs.audit(frame, xgb_model, label="income", protected=["gendr"])
    text = str(caught.value)
    assert "<code>" not in text and ":1:1" not in text, text
    problem = caught.value.problems[0]
    assert problem.file is None and problem.line is None, problem
    assert problem.message.startswith("argument `protected`: ") and "gendr" in problem.message, problem.message


def test_a_bad_option_is_said_of_its_place_in_options(xgb_model, census_frames):
    _, frame = census_frames
    with pytest.raises(fairpipe_rs.PipelineError) as caught:
        fairpipe_rs.audit(frame, xgb_model, label="income", protected=["gender"], checks=["estimate"], options={"estimate": {"trials": 0}})
    text = str(caught.value)
    assert "<code>" not in text, text
    assert 'argument `options["estimate"]["trials"]`: ' in text, text


def test_the_column_added_for_test_is_never_named(xgb_model, census_frames):
    """A test mask naming no row: refused, said of `test`, without the column the package adds."""
    _, frame = census_frames
    nothing = np.zeros(len(frame), dtype=bool)
    with pytest.raises(fairpipe_rs.PipelineError) as caught:
        fairpipe_rs.audit(frame, xgb_model, label="income", protected=["gender"], checks=["group_metrics"], test=nothing)
    text = str(caught.value)
    assert "__fairpipe" not in text and "<code>" not in text, text
    assert "test" in text, text
