#!/usr/bin/env bash
# The `fairpipe` command line as a release archive with its checksum, for people who want the
# binary without Python or Rust:
#
#   scripts/build-cli.sh [--target TRIPLE] [--out DIR]
#
# writes DIR/fairpipe-VERSION-TRIPLE.tar.gz (.zip for Windows) holding the release binary (the
# built-in methods inside), README.md and the licence texts, and DIR/fairpipe-VERSION-TRIPLE.sha256
# (`sha256sum -c` reads it). DIR defaults to dist/.
# On Linux the binary is linked with zig against glibc 2.17's symbols (cargo-zigbuild 0.24.0 and
# ziglang 0.17.0, in the same venv as scripts/build-wheel.sh's tools), so it starts on any glibc
# Linux from 2014 on (musl triples: a static binary); its artifacts share the workspace's target
# folder TARGET/TRIPLE/release with the wheel's. Elsewhere (macOS, Windows) `cargo build` builds
# for TRIPLE natively. .github/workflows/release.yml runs this script for its CLI archives. PYTHON:
# the Python that writes the archive (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "scripts/build-cli.sh: $*" >&2; }

triple=$(rustc -vV | sed -n 's/^host: //p')
out=dist
while [ $# -gt 0 ]; do
  case "$1" in
    --target) triple=$2 && shift 2 ;;
    --out) out=$2 && shift 2 ;;
    *) say "unknown argument '$1' (expected --target TRIPLE or --out DIR)" && exit 2 ;;
  esac
done
cache="${FAIRPIPE_CACHE:-$HOME/.cache/fairpipe}"
. scripts/venv.sh
release_paths "$triple" "$out"

start=$SECONDS
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
say "built the release binary for $triple in $((SECONDS - start)) s wall"

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
