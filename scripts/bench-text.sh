#!/bin/sh
# The text-audit table (docs/text-audits.md, "Speed and results beside the paper"): runs `cargo bench --bench search -- text`
# (wikitalk-groups.toml and madlibs-groups.toml in release, 10 seeds each; FAIRPIPE_BENCH_REPEATS
# changes that) and puts target/bench/text.md into docs/text-audits.md between the `text-table` markers.
#
#   scripts/bench-text.sh            (about 5 minutes on 2 cores, most of it the release build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo bench --locked --bench search -- text
"$root/scripts/readme-table.sh" text-table "$root/target/bench/text.md" docs/text-audits.md
