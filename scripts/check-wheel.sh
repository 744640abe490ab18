#!/usr/bin/env bash
# Proves the wheel scripts/build-wheel.sh made installs and runs on a machine without Rust:
#
#   scripts/check-wheel.sh [--wheel FILE] [--rust-bin FILE] [--record DIR] [--pytest-later]
#
#   1. a PATH without cargo, rustc, rustup, the C/C++ compilers (cc, gcc, c++, g++, clang, zig)
#      or maturin: a folder of links to every other program on PATH; `command -v` of each must
#      fail inside it, else the check fails;
#   2. a fresh venv (python3's interpreter), `pip install --only-binary :all: WHEEL` in it with
#      that PATH (no source build is possible; numpy comes from PyPI or pip's cache), timed;
#   3. through the installed `fairpipe` command, from a folder outside the clone: `--version` equal
#      to the crate version (and `fairpipe_rs.__version__`, `python -m fairpipe_rs --version`),
#      `list` naming the built-in methods, `validate` of a bundled pipeline (exit 0) and of a broken
#      one (exit 1), `run pipelines/census-maft.toml` (summary.json and report.html written), a
#      failed `--gate` (exit 3, results written), a bad argument (exit 2);
#   4. the Python example (python/examples/audit_census.py) and the pytest suite (python/tests)
#      against the installed wheel, with python/tests/requirements.txt installed binary-only.
#      --pytest-later: not the suite here; the caller runs it against this same wheel later
#      (.ci/run: the test command's scripts/test-python.sh with FAIRPIPE_WHEEL, so that it runs once);
#   5. the abi3 wheel in every other CPython 3.9+ found (pyenv's, or FAIRPIPE_CHECK_PYTHONS, a
#      space-separated list of interpreters): install, import, `fairpipe validate`;
#   6. start-up: the installed command's `--version` and `validate pipelines/census-maft.toml`
#      against the Rust binary's (--rust-bin, e.g. the release binary scripts/build-cli.sh makes),
#      median wall time of 15 runs each.
#
# WHEEL: default the newest dist/fairpipe_rs-*-manylinux*_x86_64.whl. --record DIR: write
# DIR/check-wheel.json (date, machine, command, install and start-up times, uptime load).
# Needs python3 with venv and pip's access to PyPI (the test dependencies, numpy).
# `A && B || fail ...`: fail (which exits) runs when A or B fails, as meant.
# shellcheck disable=SC2015
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
say() { echo "scripts/check-wheel.sh: $*" >&2; }
fail() { say "FAILED: $*" && exit 1; }

wheel=""
rust_bin=""
record=""
pytest_later=false
while [ $# -gt 0 ]; do
  case "$1" in
    --wheel) wheel=$2 && shift 2 ;;
    --rust-bin) rust_bin=$2 && shift 2 ;;
    --record) record=$2 && shift 2 ;;
    --pytest-later) pytest_later=true && shift ;;
    *) say "unknown argument '$1' (expected --wheel FILE, --rust-bin FILE, --record DIR or --pytest-later)" && exit 2 ;;
  esac
done
if [ -z "$wheel" ]; then
  # shellcheck disable=SC2012 # the newest by time; wheel names have no spaces
  wheel=$(ls -t dist/fairpipe_rs-*-manylinux*_x86_64.whl 2>/dev/null | head -1)
  [ -n "$wheel" ] || fail "no wheel in dist/: run scripts/build-wheel.sh first"
fi
wheel=$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
if [ -n "$record" ] && [ -z "$rust_bin" ]; then
  fail "--record needs --rust-bin (the start-up figures compare the installed command with the Rust binary)"
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
python=$(python3 -c 'import sys; print(sys.executable)')

# ---- 1. a PATH without the Rust toolchain and the compilers ---------------------------------
stripped='^(cargo.*|rustc|rustdoc|rustup|rust-.*|cc|c\+\+|c89|c99|cpp|gcc.*|g\+\+.*|.*-gcc.*|.*-g\+\+.*|clang.*|zig|maturin)$'
bin="$scratch/path"
mkdir -p "$bin"
IFS=: read -ra dirs <<<"$PATH"
for dir in "${dirs[@]}"; do
  [ -d "$dir" ] || continue
  case "$dir" in */.cargo/bin | */.rustup/*) continue ;; esac
  for program in "$dir"/*; do
    name=${program##*/}
    [ -x "$program" ] && [ ! -d "$program" ] && [ ! -e "$bin/$name" ] || continue
    [[ $name =~ $stripped ]] || ln -s "$program" "$bin/$name"
  done
done
venv="$scratch/venv"
# Everything below runs with this environment: the venv first, then the links.
export PATH="$venv/bin:$bin" PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
unset CARGO_TARGET_DIR RUSTC CC CXX
for program in cargo rustc rustup cc gcc c++ g++ clang zig maturin; do
  if command -v "$program" >/dev/null; then fail "$program is still on PATH ($(command -v "$program"))"; fi
done
say "no cargo, rustc, rustup, cc, gcc, c++, g++, clang, zig or maturin on PATH (command -v fails for each)"

# ---- 2. install ------------------------------------------------------------------------------
start=$(date +%s%N)
"$python" -m venv "$venv"
venv_ms=$((($(date +%s%N) - start) / 1000000))
start=$(date +%s%N)
pip install --quiet --only-binary :all: "$wheel"
install_ms=$((($(date +%s%N) - start) / 1000000))
say "installed $(basename "$wheel") in $((install_ms / 1000)).$((install_ms % 1000 / 100)) s wall (venv made in $((venv_ms / 1000)).$((venv_ms % 1000 / 100)) s)"

# ---- 3. the installed command ----------------------------------------------------------------
elsewhere="$scratch/elsewhere"
mkdir -p "$elsewhere"
cd "$elsewhere"
fairpipe=$(command -v fairpipe) || fail "the wheel installed no fairpipe command"
[ "$fairpipe" = "$venv/bin/fairpipe" ] || fail "fairpipe is $fairpipe, not the venv's"
[ "$(fairpipe --version)" = "fairpipe $version" ] || fail "fairpipe --version says '$(fairpipe --version)', the crate is $version"
[ "$(python -m fairpipe_rs --version)" = "fairpipe $version" ] || fail "python -m fairpipe_rs --version says '$(python -m fairpipe_rs --version)'"
[ "$(python -c 'import fairpipe_rs; print(fairpipe_rs.__version__)')" = "$version" ] || fail "fairpipe_rs.__version__ is not $version"
fairpipe list | grep -q "^maft .*built-in" || fail "fairpipe list names no built-in maft"
fairpipe validate "$repo/pipelines/census-maft.toml" | grep -q ": ok (" || fail "fairpipe validate census-maft.toml"
printf '[pipeline]\nname = "broken"\n[stages.data]\nkind = "lod"\n' >broken.toml
status=0 && fairpipe validate broken.toml 2>err.txt || status=$?
[ "$status" = 1 ] && grep -q "broken.toml:4" err.txt || fail "validate of a broken pipeline: exit $status, $(cat err.txt)"
status=0 && fairpipe run "$repo/pipelines/census-maft.toml" --out maft >maft.txt 2>&1 || status=$?
[ "$status" = 0 ] || fail "fairpipe run census-maft.toml: exit $status: $(tail -5 maft.txt)"
test -s maft/summary.json && test -s maft/report.html || fail "census-maft.toml wrote no summary.json/report.html"
grep -q "maft_gender" maft.txt || fail "the run printed no summary: $(cat maft.txt)"
say "fairpipe run census-maft.toml: exit 0, $(python -c 'import json; s = json.load(open("maft/summary.json")); print(", ".join("%s %s" % (k, v["discriminatory"]) for k, v in s["stages"].items() if "discriminatory" in v))') discriminatory cases verified"
status=0 && fairpipe run "$repo/pipelines/census-groups.toml" --out gated --quiet --gate "metrics.rows < 0" >/dev/null 2>err.txt || status=$?
[ "$status" = 3 ] && test -s gated/summary.json || fail "a failed --gate: exit $status (3 expected), $(cat err.txt)"
status=0 && fairpipe run --no-such-flag x.toml 2>/dev/null || status=$?
[ "$status" = 2 ] || fail "a bad argument: exit $status (2 expected)"
say "the installed fairpipe: --version, list, validate (0/1), run (0), gate (3), bad argument (2) as the Rust binary"

# ---- 4. the Python example and the pytest suite ----------------------------------------------
grep -v '^maturin' "$repo/python/tests/requirements.txt" >requirements.txt
pip install --quiet --only-binary :all: -r requirements.txt
python "$repo/python/examples/audit_census.py" >example.txt 2>&1 || fail "python/examples/audit_census.py: $(tail -5 example.txt)"
say "python/examples/audit_census.py: $(head -1 example.txt)"
if [ "$pytest_later" = true ]; then
  pytest_line="left to the caller (--pytest-later)"
  say "the pytest suite: $pytest_line"
else
  cd "$repo"
  # The run() tests compare with the command line's summary.json: the installed command.
  FAIRPIPE_BIN="$venv/bin/fairpipe" python -m pytest python/tests -p no:cacheprovider -q -rfE 2>&1 | tee "$scratch/pytest.txt" | tail -3
  pytest_line=$(tail -1 "$scratch/pytest.txt")
  grep -q " passed" <<<"$pytest_line" && ! grep -Eq "failed|error" <<<"$pytest_line" || fail "pytest: $pytest_line"
  cd "$elsewhere"
fi

# ---- 5. the other CPython versions -----------------------------------------------------------
others="${FAIRPIPE_CHECK_PYTHONS:-}"
if [ -z "$others" ] && [ -d "$HOME/.pyenv/versions" ]; then
  for v in "$HOME"/.pyenv/versions/3.*; do
    minor=$(basename "$v" | cut -d. -f2)
    [ "$minor" -ge 9 ] && [ -x "$v/bin/python3" ] && others="$others $v/bin/python3"
  done
fi
tested=()
for other in $others; do
  [ "$("$other" -c 'import sys; print(sys.executable)')" = "$python" ] && continue
  name=$("$other" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  "$other" -m venv "$scratch/venv-$name"
  "$scratch/venv-$name/bin/pip" install --quiet --only-binary :all: "$wheel"
  [ "$("$scratch/venv-$name/bin/fairpipe" --version)" = "fairpipe $version" ] || fail "Python $name: fairpipe --version"
  "$scratch/venv-$name/bin/python" -c "import fairpipe_rs; assert fairpipe_rs.__version__ == '$version'" || fail "Python $name: import fairpipe_rs"
  "$scratch/venv-$name/bin/fairpipe" validate "$repo/pipelines/census-maft.toml" >/dev/null || fail "Python $name: fairpipe validate"
  tested+=("$name")
done
py_main=$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
say "the wheel installs and runs on CPython $py_main (everything above) and ${tested[*]:-no other version} (install, import, --version, validate)"

# ---- 6. start-up against the Rust binary -----------------------------------------------------
if [ -n "$rust_bin" ]; then
  rust_bin=$(cd "$repo" && cd "$(dirname "$rust_bin")" && pwd)/$(basename "$rust_bin")
  [ "$("$rust_bin" --version)" = "fairpipe $version" ] || fail "$rust_bin --version is not fairpipe $version"
  python - "$venv/bin/fairpipe" "$rust_bin" "$repo/pipelines/census-maft.toml" >startup.json <<'EOF'
import json, statistics, subprocess, sys, time
wheel, rust, pipeline = sys.argv[1:4]
def median_ms(argv, runs=15):
    subprocess.run(argv, check=True, capture_output=True)  # warm the page cache
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
    return {"median_ms": round(statistics.median(times), 1), "min_ms": round(min(times), 1), "max_ms": round(max(times), 1), "runs": runs}
print(json.dumps({
    "version": {"installed_command": median_ms([wheel, "--version"]), "rust_binary": median_ms([rust, "--version"])},
    "validate": {"installed_command": median_ms([wheel, "validate", pipeline]), "rust_binary": median_ms([rust, "validate", pipeline])},
}))
EOF
  say "start-up (median wall ms, 15 runs): $(cat startup.json)"
fi

if [ -n "$record" ]; then
  mkdir -p "$repo/$record"
  python - "$repo/$record/check-wheel.json" <<EOF
import json, sys
startup = json.load(open("startup.json"))
json.dump({
    "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
    "machine": {"uname": "$(uname -srm)", "cores": $(nproc), "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"},
    "command": "scripts/check-wheel.sh --rust-bin $rust_bin --record $record",
    "wheel": "$(basename "$wheel")",
    "python": "$py_main",
    "other_pythons": "${tested[*]:-}",
    "venv_seconds": $venv_ms / 1000,
    "install_seconds": $install_ms / 1000,
    "install_measure": "wall time of pip install --only-binary :all: WHEEL into a fresh venv (numpy from pip's cache)",
    "startup_measure": "median wall time of 15 runs after one warm-up, from Python's subprocess",
    "startup": startup,
    "pytest": "$pytest_line",
    "uptime": "$(uptime)",
}, open(sys.argv[1], "w"), indent=2)
EOF
  say "recorded in $record/check-wheel.json"
fi
say "ok: $(basename "$wheel") installs without Rust and runs"
