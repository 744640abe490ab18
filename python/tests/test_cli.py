"""The ``fairpipe`` command the wheel installs (a console script into the extension) is the Rust
binary's command line: the same version as the crate, the same output and exit codes as the binary
built from this checkout (FAIRPIPE_BIN), and ``python -m fairpipe_rs`` is the same command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import fairpipe_rs
from conftest import ROOT, run_cli

# The console script pip wrote beside this interpreter (bin/ of the venv the wheel is installed in).
INSTALLED = Path(sys.executable).parent / "fairpipe"


def crate_version() -> str:
    """The workspace's version, read from Cargo.toml (not from the package under test)."""
    text = (ROOT / "Cargo.toml").read_text()
    section = text.split("[workspace.package]", 1)[1]
    found = re.search(r'^version = "([^"]+)"', section, re.M)
    assert found, "Cargo.toml's [workspace.package] has a version"
    return found.group(1)


def installed(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    assert INSTALLED.is_file(), f"{INSTALLED}: the package installed no fairpipe command"
    return subprocess.run([str(INSTALLED), *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_installed_command_and_the_module_say_the_crate_version():
    version = crate_version()
    assert installed("--version").stdout.strip() == f"fairpipe {version}"
    assert fairpipe_rs.__version__ == version
    by_module = subprocess.run([sys.executable, "-m", "fairpipe_rs", "--version"], capture_output=True, text=True, check=True)
    assert by_module.stdout.strip() == f"fairpipe {version}"


def test_validate_and_list_print_what_the_rust_binary_prints():
    for args in (["validate", "pipelines/census-maft.toml"], ["validate", "pipelines/census-groups.toml", "--format", "json"], ["list"]):
        ours, theirs = installed(*args), run_cli(*args)
        assert ours.returncode == theirs.returncode == 0, (args, ours.stderr, theirs.stderr)
        # `list` ends with the plugin files found beside the running program: the Rust binary's
        # folder (target/debug holds the plugins' libraries), the Python interpreter's for ours.
        mine, rust = (out.stdout.split("plugin files on the search path:")[0] for out in (ours, theirs))
        assert mine == rust, args


def test_exit_codes_and_errors_are_the_rust_binarys(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text('[pipeline]\nname = "broken"\n[stages.data]\nkind = "lod"\n')
    cases = [
        (["validate", str(broken)], 1),  # a located problem
        (["run", str(tmp_path / "missing.toml")], 1),  # no such file
        (["run", "--no-such-flag", "x.toml"], 2),  # a usage error
        (["run", "pipelines/census-groups.toml", "--out", "OUT", "--quiet", "--gate", "metrics.rows < 0"], 3),  # results written
    ]
    for args, code in cases:
        ours = installed(*[str(tmp_path / "gated") if a == "OUT" else a for a in args])
        theirs = run_cli(*[str(tmp_path / "gated-binary") if a == "OUT" else a for a in args])
        assert (ours.returncode, theirs.returncode) == (code, code), (args, ours.stderr, theirs.stderr)
        assert ours.stderr == theirs.stderr, args
    assert (tmp_path / "gated" / "summary.json").is_file(), "a failed gate writes its results"
    assert "broken.toml:4" in installed("validate", str(broken)).stderr
