#!/bin/sh
# The text-audit table (docs/text-audits.md, "Speed and results beside the paper"): runs `cargo bench --bench search -- text`
# (wikitalk-groups.toml and madlibs-groups.toml in release, 10 seeds each; FAIRPIPE_BENCH_REPEATS
# changes that) and puts target/bench/text.md into docs/text-audits.md between the `text-table` markers.
# The run's raw output — text.md and the bench's standard output, with the bench binary's hash, the
# machine, the date, the command and `uptime` — is appended to docs/figures/text-audits/runs.jsonl
# (scripts/keep_run.py); commit it with the table.
#
#   scripts/bench-text.sh            (about 5 minutes on 2 cores, most of it the release build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python3 "$root/scripts/keep_run.py" text-audits cargo-bench:search --build "release (cargo bench)" \
    --keep target/bench/text.md -- cargo bench --locked --bench search -- text
"$root/scripts/readme-table.sh" text-table "$root/target/bench/text.md" docs/text-audits.md
