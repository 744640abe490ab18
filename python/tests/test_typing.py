"""Types (issue 50, item 5; issue 48, item 2): the native module's stub ``_native.pyi`` is held to the
built module by mypy's stubtest, and fails it when wrong; ``mypy --strict`` passes over the package,
its example and the tests' public calls (typed/public_calls.py), and refuses wrong calls
(typed/wrong_calls.py) on exactly the lines marked, so the annotations are read, not taken as Any.
mypy is the pinned one of requirements.txt."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import fairpipe_rs
from conftest import ROOT

PYTHON = ROOT / "python"
TYPED = PYTHON / "tests" / "typed"
CONFIG = TYPED / "mypy.ini"


def mypy(*args: str, cwd: Path = PYTHON, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(CONFIG), "--no-incremental", "--cache-dir", os.devnull, *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=900,
    )


def stubtest(env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "fairpipe_rs._native", "--mypy-config-file", str(CONFIG)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )


def test_the_installed_package_carries_its_stub_and_marker():
    installed = Path(fairpipe_rs.__file__).parent
    assert (installed / "py.typed").is_file()
    assert (installed / "_native.pyi").read_text() == (PYTHON / "fairpipe_rs" / "_native.pyi").read_text()


def test_the_stub_matches_the_built_module():
    done = stubtest()
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_wrong_stub_fails_stubtest(tmp_path):
    """The package's files with one argument of ``NativeRun.table`` misnamed in the stub (the package
    passes it by position, so mypy alone cannot see it), found first through MYPYPATH: stubtest,
    which reads the built module itself, names the mismatch."""
    installed = Path(fairpipe_rs.__file__).parent
    copy = tmp_path / "fairpipe_rs"
    shutil.copytree(installed, copy, ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    stub = (copy / "_native.pyi").read_text()
    right = "def table(self, name: str, newest: bool)"
    assert right in stub
    (copy / "_native.pyi").write_text(stub.replace(right, "def table(self, name: str, latest: bool)"))
    done = stubtest(env={**os.environ, "MYPYPATH": str(tmp_path)})
    assert done.returncode == 1, done.stdout
    assert "error: fairpipe_rs._native.NativeRun.table is inconsistent" in done.stdout and '"latest"' in done.stdout, done.stdout
    assert "Found 1 error" in done.stdout, done.stdout


def test_mypy_strict_passes_on_the_package_the_example_and_the_public_calls():
    # From python/: `fairpipe_rs` is the source package (its .py files and the stub).
    done = mypy("fairpipe_rs", "examples/audit_census.py", "tests/typed/public_calls.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"Success: no issues found in \d+ source files", done.stdout), done.stdout


def test_mypy_strict_refuses_each_wrong_call():
    source = (TYPED / "wrong_calls.py").read_text().splitlines()
    marked = {i + 1 for i, line in enumerate(source) if line.rstrip().endswith("# wrong")}
    assert len(marked) == 7
    done = mypy("tests/typed/wrong_calls.py")
    assert done.returncode == 1, done.stdout + done.stderr
    flagged = {int(m.group(1)) for m in re.finditer(r"wrong_calls\.py:(\d+): error:", done.stdout)}
    assert flagged == marked, done.stdout
