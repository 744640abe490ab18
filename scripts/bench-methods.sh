#!/bin/sh
# The README's methods table (README, "Every method on the four benchmarks"): builds the plugins in
# release, runs `cargo bench --bench search -- methods` (every method × census-gender, census-age,
# credit-age, bank-age, at the same budget and at the same number of model queries, 10 seeds each;
# FAIRPIPE_BENCH_REPEATS and FAIRPIPE_BENCH_QUERIES change that) and puts target/bench/methods.md
# into README.md between the `methods-table` markers.
#
#   scripts/bench-methods.sh            (about 10 minutes on 2 cores)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release --workspace --locked
cargo bench --locked --bench search -- methods
table=$root/target/bench/methods.md
[ -s "$table" ] || { echo "no table at $table" >&2; exit 1; }
grep -q '^<!-- methods-table:start -->$' README.md && grep -q '^<!-- methods-table:end -->$' README.md \
    || { echo "README.md lacks the methods-table markers" >&2; exit 1; }
awk -v table="$table" '
    /^<!-- methods-table:start -->$/ { print; while ((getline line < table) > 0) print line; skip = 1; next }
    /^<!-- methods-table:end -->$/ { skip = 0 }
    !skip { print }
' README.md > README.md.new
mv README.md.new README.md
echo "README.md: methods table replaced from $table"
