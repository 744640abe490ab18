#!/bin/sh
# Before a change lands: is it slower than the commit before it? Builds REV (default HEAD~1) and
# the working tree in release, then runs scripts/bench_compare.py on the bundled search pipelines,
# alternating the two binaries. Exit 1 when a figure is more than 10% slower, 2 when the results
# differ (the same pipeline and seed must find the same IDIs).
#
#   scripts/bench-compare.sh [REV] [-- bench_compare.py options, e.g. --repeats 3 census-sg]
#
# REV is built in target/bench-base/ (a detached worktree and its own target folder, kept between
# calls so the next comparison rebuilds only what changed). A cold first call builds the
# workspace twice (about 25 minutes on 2 cores). See docs/benchmarks.md.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rev=HEAD~1
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    rev=$1
    shift
fi
[ "${1:-}" = "--" ] && shift
base_dir="$root/target/bench-base"
mkdir -p "$base_dir"
commit=$(git rev-parse --verify "$rev^{commit}")
if [ -d "$base_dir/tree" ]; then
    git -C "$base_dir/tree" checkout --quiet --detach "$commit"
else
    git worktree add --quiet --detach "$base_dir/tree" "$commit"
fi
echo "base: $rev = $(git log -1 --format='%h %s' "$commit" | cut -c1-100)" >&2
CARGO_TARGET_DIR="$base_dir/target" cargo build --release --locked --bin fairpipe \
    --manifest-path "$base_dir/tree/Cargo.toml"
cargo build --release --locked --bin fairpipe
exec python3 "$root/scripts/bench_compare.py" --base "$base_dir/target/release/fairpipe" \
    --new "$root/target/release/fairpipe" "$@"
