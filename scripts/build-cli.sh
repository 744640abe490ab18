#!/usr/bin/env bash
# The `fairpipe` command line as a release archive with its checksum, for people who want the
# binary without Python or Rust:
#
#   scripts/build-cli.sh [--target TRIPLE] [--out DIR] [--record DIR]
#
# writes DIR/fairpipe-VERSION-TRIPLE.tar.gz (.zip for Windows) holding the release binary (the
# built-in methods inside), README.md and the licence texts, and DIR/fairpipe-VERSION-TRIPLE.sha256
# (`sha256sum -c` reads it). DIR defaults to dist/.
# On Linux the binary is linked with zig against glibc 2.17's symbols (cargo-zigbuild 0.24.0 and
# ziglang 0.17.0, in the same venv as scripts/build-wheel.sh's tools), so it starts on any glibc
# Linux from 2014 on (musl triples: a static binary); its artifacts share the workspace's target
# folder TARGET/TRIPLE/release with the wheel's. Elsewhere (macOS, Windows) `cargo build` builds
# for TRIPLE natively. .github/workflows/release.yml runs this script for its CLI archives. PYTHON:
# the Python that writes the archive (default python3). --record DIR: also write
# DIR/build-cli-TRIPLE.json (date, machine, command, wall and CPU seconds of the build, whether
# the target folder was cold, load, the binary's and the archive's sizes; docs/wheel/ keeps the
# ones measured here).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "scripts/build-cli.sh: $*" >&2; }

triple=$(rustc -vV | sed -n 's/^host: //p')
out=dist
record=""
while [ $# -gt 0 ]; do
  case "$1" in
    --target) triple=$2 && shift 2 ;;
    --out) out=$2 && shift 2 ;;
    --record) record=$2 && shift 2 ;;
    *) say "unknown argument '$1' (expected --target TRIPLE, --out DIR or --record DIR)" && exit 2 ;;
  esac
done
cache="${FAIRPIPE_CACHE:-$HOME/.cache/fairpipe}"
. scripts/venv.sh
release_paths "$triple" "$out"

build_clock start "$triple"
case "$triple" in
  *-linux-gnu | *-linux-musl)
    tools="$cache/wheel-venv"
    venv "$tools" "${WHEEL_TOOLS[@]}"
    zig_target=$triple
    case "$triple" in *-linux-gnu) zig_target="$triple.2.17" ;; esac
    PATH="$tools/bin:$PATH" cargo zigbuild --release --locked --bin fairpipe --target "$zig_target" --target-dir "$target"
    ;;
  *) cargo build --release --locked --bin fairpipe --target "$triple" --target-dir "$target" ;;
esac
build_clock stop
say "built the release binary for $triple in $build_wall_s s wall, $build_cpu_s s CPU (cold: $build_cold)"

name="fairpipe-$version-$triple"
stage="$target/cli-archive/$name"
rm -rf "$stage"
mkdir -p "$stage"
exe=fairpipe
case "$triple" in *-windows-*) exe=fairpipe.exe ;; esac
cp "$target/$triple/release/$exe" README.md LICENSE-MIT LICENSE-APACHE "$stage/"
"${PYTHON:-python3}" - "$stage" "$out" "$name" "$triple" <<'EOF'
import hashlib, os, shutil, sys
stage, out, name, triple = sys.argv[1:5]
kind = "zip" if "-windows-" in triple else "gztar"
archive = shutil.make_archive(os.path.join(out, name), kind, os.path.dirname(stage), name)
digest = hashlib.sha256(open(archive, "rb").read()).hexdigest()
with open(os.path.join(out, name + ".sha256"), "w") as f:
    f.write(f"{digest}  {os.path.basename(archive)}\n")
print(f"{archive} ({os.path.getsize(archive) // (1024 * 1024)} MB), sha256 {digest}")
EOF

if [ -n "$record" ]; then
  mkdir -p "$record"
  python3 - "$record/build-cli-$triple.json" "$target/$triple/release/$exe" "$out/$name" <<EOF
import glob, json, os, sys
archive = [p for p in glob.glob(sys.argv[3] + ".*") if not p.endswith(".sha256")][0]
json.dump({
    "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
    "machine": {"uname": "$(uname -srm)", "cores": $(nproc), "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"},
    "command": "scripts/build-cli.sh --target $triple",
    "wall_seconds": $build_wall_s,
    "cpu_seconds": $build_cpu_s,
    "cold": "$build_cold" == "true",
    "measure": "wall time, and user + system CPU time of all its processes, of the release build of the fairpipe binary on all cores; cold: the target folder held no release build for the triple (after scripts/build-wheel.sh it holds the wheel's, of which the CLI build reuses only what its features and build environment share)",
    "load_before": "$build_load_before",
    "load_after": "$build_load_after",
    "binary_bytes": os.path.getsize(sys.argv[2]),
    "archive": os.path.basename(archive),
    "archive_bytes": os.path.getsize(archive),
}, open(sys.argv[1], "w"), indent=2)
EOF
  say "recorded in $record"
fi
