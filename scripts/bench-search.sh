#!/bin/sh
# The search benchmarks (docs/benchmarks.md, "Searches" and "Group scores"): builds the plugins in
# release, runs `cargo bench --bench search [-- FILTER]` (each case of benches/search.rs over
# FAIRPIPE_BENCH_REPEATS pipeline seeds, default 10; then the TestSGD group-score cases) and keeps
# the run's raw output — target/bench/search.md and the bench's standard output, with the bench
# binary's hash, the machine, the date, the command and `uptime` — in docs/figures/search/runs.jsonl
# (scripts/keep_run.py). The bench prints means over the seeds, not each run.
#
#   scripts/bench-search.sh [FILTER]        (one argument, matched against the case names:
#                                           e.g. sg, 'maft census-gender', testsgd)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release --workspace --locked
python3 "$root/scripts/keep_run.py" search cargo-bench:search --build "release (cargo bench), plugins: cargo build --release --workspace" \
    --keep target/bench/search.md -- cargo bench --locked --bench search -- "$@"
