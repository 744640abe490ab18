#!/usr/bin/env bash
# The Python package's tests (python/tests, pytest), in a fresh venv as a user installs it:
#   1. a new venv (TARGET/py-venv, deleted and made anew each run) with the pinned test
#      dependencies of python/tests/requirements.txt (scikit-learn, XGBoost, LightGBM, Fairlearn,
#      pandas, Polars, pyarrow, pytest, maturin; pip's own cache keeps the downloads);
#   2. `pip install ./python` into it, built in the dev profile so that it shares the workspace's
#      target folder with `cargo build` (MATURIN_PEP517_ARGS="--profile dev"; a user's plain
#      `pip install ./python` builds the release profile). With FAIRPIPE_WHEEL=FILE, that wheel
#      instead, binary-only (.ci/run: the wheel its step 3 built and checked from this commit, so
#      that the suite runs once, against the wheel, and the extension is not built twice);
#   3. pytest over python/tests. The run() tests compare with the CLI's summary.json: they run
#      TARGET/debug/fairpipe (built here if missing) through FAIRPIPE_BIN.
#
#   scripts/test-python.sh [PYTEST ARGS]
#
# TARGET is CARGO_TARGET_DIR, else target/. FAIRPIPE_PYTEST_LOG: where pytest's output is kept
# as well (scripts/test.sh reads its closing line). Needs python3 with venv and pip's access to
# PyPI; a missing test dependency is a failure, never a skipped test.
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1
cd "$(dirname "$0")/.."
say() { echo "scripts/test-python.sh: $*" >&2; }

target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target=$(cd "$target" && pwd)
venv="$target/py-venv"

start=$SECONDS
rm -rf "$venv"
python3 -m venv "$venv" || {
  say "python3 cannot make a venv: install it with \`sudo apt-get install python3-venv\`, then run this again"
  exit 1
}
"$venv/bin/pip" install --quiet --disable-pip-version-check -r python/tests/requirements.txt
say "test dependencies installed in a fresh venv in $((SECONDS - start)) s ($(du -sh "$venv" | cut -f1))"

# The build runs the venv's maturin (--no-build-isolation: no second download of it).
export PATH="$venv/bin:$PATH"
start=$SECONDS
if [ -n "${FAIRPIPE_WHEEL:-}" ]; then
  [ -f "$FAIRPIPE_WHEEL" ] || { say "FAIRPIPE_WHEEL=$FAIRPIPE_WHEEL is not a file (a wheel scripts/build-wheel.sh made)"; exit 1; }
  "$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary :all: "$FAIRPIPE_WHEEL"
  say "fairpipe-rs installed from $(basename "$FAIRPIPE_WHEEL") (FAIRPIPE_WHEEL) in $((SECONDS - start)) s"
else
  MATURIN_PEP517_ARGS="--profile dev" CARGO_TARGET_DIR="$target" \
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation ./python
  say "fairpipe-rs built and installed in $((SECONDS - start)) s"
fi

if [ ! -x "$target/debug/fairpipe" ]; then
  CARGO_TARGET_DIR="$target" cargo build --locked --bin fairpipe
fi
export FAIRPIPE_BIN="$target/debug/fairpipe"

log="${FAIRPIPE_PYTEST_LOG:-$target/pytest.log}"
mkdir -p "$(dirname "$log")"
# Run from the repository root: python/ itself is not on sys.path, so the installed package is
# the one tested, not its source folder.
status=0
"$venv/bin/python" -m pytest python/tests -p no:cacheprovider -rfE "$@" 2>&1 | tee "$log" || status=$?
exit "$status"
