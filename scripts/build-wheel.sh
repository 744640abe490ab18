#!/usr/bin/env bash
# The portable wheel of the Python package (python/: distribution `fairpipe-rs`, import
# `fairpipe_rs`, the extension `fairpipe_rs._native` with the engine, its built-in methods and the
# `fairpipe` command line inside). One command, one wheel:
#
#   scripts/build-wheel.sh [--target TRIPLE] [--profile release|dev] [--out DIR] [--record DIR]
#
#   1. the build tools in a venv, FAIRPIPE_CACHE/wheel-venv (default ~/.cache/fairpipe): maturin
#      1.16.0, ziglang 0.17.0 (zig links against an old glibc's symbols, so no manylinux container is
#      needed), auditwheel 6.8.2 and cargo-zigbuild 0.24.0 (scripts/venv.sh, WHEEL_TOOLS);
#   2. `maturin build --release --locked --zig --compatibility TAG` in the workspace's target folder
#      (CARGO_TARGET_DIR, else target/; the artifacts land in TARGET/TRIPLE/release): an abi3 wheel
#      for CPython 3.9 and later, in DIR (default dist/). `--profile dev` builds the same wheel in
#      the dev profile, stripped (`--profile dev --strip`; artifacts in TARGET/TRIPLE/debug): what
#      .ci/run checks, at about two thirds of the release build's CPU time; the wheels users
#      install are the release profile's (.github/workflows/release.yml);
#   3. checks, each a failure when it does not hold: `auditwheel show` finds the wheel consistent
#      with the tag it claims (Linux), the wheel is at most 30 MB (48 MB in the dev profile), and it holds the extension, the
#      `fairpipe` console script and the licence texts.
#
# TRIPLE: x86_64-unknown-linux-gnu (default; manylinux_2_17), aarch64-unknown-linux-gnu
# (manylinux_2_17), x86_64-unknown-linux-musl or aarch64-unknown-linux-musl (musllinux_1_2); a
# triple other than the machine's needs `rustup target add TRIPLE` (done here when rustup exists).
# .github/workflows/release.yml runs this script for its Linux wheels.
# --record DIR: also write DIR/build-wheel-TRIPLE.json (date, machine, command, wall seconds, load) and
# DIR/auditwheel-show-TRIPLE.txt (docs/wheel/ keeps the ones measured here).
# Needs cargo, python3 with venv, and pip's access to PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "scripts/build-wheel.sh: $*" >&2; }

triple=x86_64-unknown-linux-gnu
profile=release
out=dist
record=""
while [ $# -gt 0 ]; do
  case "$1" in
    --target) triple=$2 && shift 2 ;;
    --profile) profile=$2 && shift 2 ;;
    --out) out=$2 && shift 2 ;;
    --record) record=$2 && shift 2 ;;
    *) say "unknown argument '$1' (expected --target TRIPLE, --profile release|dev, --out DIR or --record DIR)" && exit 2 ;;
  esac
done
case "$profile" in
  release) profile_args=(--release) ;;
  dev) profile_args=(--profile dev --strip) ;;
  *) say "--profile $profile: expected release (the wheels users install) or dev (CI's check)" && exit 2 ;;
esac
case "$triple" in
  *-linux-gnu) compatibility=manylinux_2_17 ;;
  *-linux-musl) compatibility=musllinux_1_2 ;;
  *) say "--target $triple: this script builds the Linux wheels (the release workflow builds macOS and Windows with maturin directly)" && exit 2 ;;
esac
# The size limit: 30 MB for the release wheel users install; the dev profile's unoptimised code is
# larger (36 MB at 7ddee7f), so CI's dev-profile wheel has its own limit.
max_mb=30
[ "$profile" = dev ] && max_mb=48
max_bytes=$((max_mb * 1024 * 1024))

cache="${FAIRPIPE_CACHE:-$HOME/.cache/fairpipe}"
. scripts/venv.sh
tools="$cache/wheel-venv"
venv "$tools" "${WHEEL_TOOLS[@]}"
release_paths "$triple" "$out"
# The wheel this build writes; an older one of the same name is replaced.
rm -f "$out"/fairpipe_rs-"$version"-cp39-abi3-*"${compatibility}"*"${triple%%-*}".whl

command=(maturin build "${profile_args[@]}" --locked --zig --compatibility "$compatibility" --target "$triple"
  --manifest-path python/Cargo.toml --target-dir "$target" --out "$out")
say "${command[*]}"
build_clock start "$triple" "$([ "$profile" = dev ] && echo debug || echo release)"
PATH="$tools/bin:$PATH" "${command[@]}"
build_clock stop

# shellcheck disable=SC2012 # the newest by time; wheel names have no spaces
wheel=$(ls -t "$out"/fairpipe_rs-"$version"-cp39-abi3-*"${triple%%-*}".whl | head -1)
size=$(stat -c %s "$wheel")
say "built $(basename "$wheel"): $((size / 1024 / 1024)) MB ($size bytes) in $build_wall_s s wall, $build_cpu_s s CPU (cold: $build_cold)"

# ---- checks ---------------------------------------------------------------------------------
status=0
if [ "$size" -gt "$max_bytes" ]; then
  say "FAILED: the wheel is $size bytes, over $max_mb MB (the $profile profile's limit)"
  status=1
fi
contents=$("$tools/bin/python" -m zipfile -l "$wheel")
for member in "fairpipe_rs/_native.abi3.so" "fairpipe_rs/_cli.py" "fairpipe_rs/__main__.py" \
  "dist-info/entry_points.txt" "dist-info/licenses/LICENSE-MIT" "dist-info/licenses/LICENSE-APACHE"; do
  grep -q "$member" <<<"$contents" || { say "FAILED: the wheel holds no $member" && status=1; }
done
entry=$("$tools/bin/python" - "$wheel" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))
    print(z.read(name).decode())
EOF
)
grep -qxE "fairpipe ?= ?fairpipe_rs\._cli:main" <<<"$entry" || { say "FAILED: no console script fairpipe = fairpipe_rs._cli:main in entry_points.txt" && status=1; }
# auditwheel reads the extension's symbol versions and libraries: the wheel must be consistent with
# the tag it claims (auditwheel 6 names the platform tag it is consistent with).
shown=$("$tools/bin/auditwheel" show "$wheel" 2>&1) || true
echo "$shown" >&2
platform=${compatibility/manylinux_2_17/manylinux_2_17_${triple%%-*}}
platform=${platform/musllinux_1_2/musllinux_1_2_${triple%%-*}}
# (auditwheel wraps its lines at 70 columns: read them as one)
if ! tr '\n' ' ' <<<"$shown" | tr -s ' ' | grep -q "consistent with the following platform tag: \"$platform\""; then
  say "FAILED: auditwheel does not find the wheel consistent with $platform"
  status=1
fi

if [ -n "$record" ]; then
  mkdir -p "$record"
  {
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -srm), $(nproc) cores"
    echo "# scripts/build-wheel.sh --target $triple (auditwheel 6.8.2)"
    echo "\$ auditwheel show $(basename "$wheel")"
    echo "$shown"
  } >"$record/auditwheel-show-$triple.txt"
  python3 - "$record/build-wheel-$triple.json" <<EOF
import json, platform, sys
json.dump({
    "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
    "machine": {"uname": "$(uname -srm)", "cores": $(nproc), "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"},
    "command": "scripts/build-wheel.sh --target $triple --profile $profile",
    "maturin_command": "${command[*]}",
    "wheel": "$(basename "$wheel")",
    "wheel_bytes": $size,
    "wall_seconds": $build_wall_s,
    "cpu_seconds": $build_cpu_s,
    "cold": "$build_cold" == "true",
    "measure": "wall time, and user + system CPU time of all its processes, of the maturin build (cargo build in the profile + wheel) on all cores; cold: the target folder held no build of the profile for the triple; load_before/after: /proc/loadavg",
    "load_before": "$build_load_before",
    "load_after": "$build_load_after",
}, open(sys.argv[1], "w"), indent=2)
EOF
  say "recorded in $record"
fi
[ "$status" = 0 ] && say "ok: $wheel"
exit "$status"
