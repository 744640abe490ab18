#!/usr/bin/env bash
# The fuzz targets under the stable driver (tests/fuzz_mutate.rs), run long: RUNS mutated corpus
# inputs per target (default 100000) from SEED (default 1), in the test suite's debug build (overflow
# checks on, as `cargo fuzz -a`). The statistics lines it prints, with the command, the date, the
# machine, the commit and the test binary's hash, are kept in docs/fuzzing/stable-runs.txt
# (appended; docs/fuzzing.md quotes them). A finding fails the run and is written to
# target/fuzz-findings/.
#
#   scripts/fuzz-stable.sh [RUNS [SEED]]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100000}
seed=${2:-1}
out=docs/fuzzing/stable-runs.txt
mkdir -p "$(dirname "$out")"

binary=$(cargo test --locked --test integration --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "integration" and m.get("executable"):
        print(m["executable"])')
[ -x "$binary" ] || { echo "scripts/fuzz-stable.sh: the integration test binary was not built" >&2; exit 1; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
command="FAIRPIPE_FUZZ_RUNS=$runs FAIRPIPE_FUZZ_SEED=$seed $binary fuzz_mutate::every_fuzz_target --exact --nocapture --test-threads 1"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
status=0
FAIRPIPE_FUZZ_RUNS=$runs FAIRPIPE_FUZZ_SEED=$seed "$binary" fuzz_mutate::every_fuzz_target_survives_mutations_of_its_corpus \
  --exact --nocapture --test-threads 1 2>&1 | tee "$log" || status=$?
{
  echo "## $started"
  echo "command: scripts/fuzz-stable.sh $runs $seed ($command)"
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src core tests || echo ' (with uncommitted changes)')"
  echo "binary: $(basename "$binary") sha256 $(sha256sum "$binary" | cut -d' ' -f1) (debug, overflow checks)"
  echo "machine: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo "exit: $status"
  grep -o 'fuzz-stable: .*' "$log" || echo "(no statistics line: the run stopped early)"
  echo
} >>"$out"
echo "scripts/fuzz-stable.sh: appended to $out" >&2
exit "$status"
