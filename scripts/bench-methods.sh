#!/bin/sh
# The methods table (docs/benchmarks.md, "Every method on the four benchmarks"): builds the plugins in
# release, runs `cargo bench --bench search -- methods` (every method × census-gender, census-age,
# credit-age, bank-age, at the same budget and at the same number of model queries, 10 seeds each;
# FAIRPIPE_BENCH_REPEATS and FAIRPIPE_BENCH_QUERIES change that) and puts target/bench/methods.md
# into docs/benchmarks.md between the `methods-table` markers; target/bench/methods.json keeps the
# same figures for `scripts/bench_compare.py --methods OLD.json NEW.json`. The run's raw output —
# methods.json, methods.md and the bench's standard output, with the bench binary's hash, the
# machine, the date, the command and `uptime` — is appended to docs/figures/methods/runs.jsonl
# (scripts/keep_run.py); commit it with the table.
#
#   scripts/bench-methods.sh            (about 10 minutes on 2 cores)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release --workspace --locked
python3 "$root/scripts/keep_run.py" methods cargo-bench:search --build "release (cargo bench), plugins: cargo build --release --workspace" \
    --keep target/bench/methods.json --keep target/bench/methods.md -- cargo bench --locked --bench search -- methods
"$root/scripts/readme-table.sh" methods-table "$root/target/bench/methods.md" docs/benchmarks.md
