#!/usr/bin/env bash
# The clustered intervals' coverage simulation (issue 61 item 4; tests/llm_coverage.rs): 200 seeded
# checks of the planted server, each name with its own random effect, and how often the clustered
# and the independent-pairs 95% intervals of `logit_shift` cover the planted shift. Runs the test
# with its output shown and keeps every run's line and the summary, with the date, the commit and
# `uptime`, in docs/figures/llm-coverage/coverage.txt (docs/llm-audits.md quotes it).
#
#   scripts/coverage_clustered.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/figures/llm-coverage/coverage.txt
mkdir -p "$(dirname "$out")"
log=$(mktemp)
cargo test --locked --test integration -- --nocapture --exact \
  llm_coverage::clustered_intervals_cover_the_planted_shift_when_every_name_has_its_own_effect >"$log" 2>&1 || {
  cat "$log"
  exit 1
}
{
  echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'), $(nproc) cores"
  echo "# command: cargo test --locked --test integration -- --nocapture --exact llm_coverage::clustered_intervals_cover_the_planted_shift_when_every_name_has_its_own_effect"
  echo "# uptime: $(uptime)"
  grep -E '^coverage-(run|summary) ' "$log"
} >"$out"
rm -f "$log"
tail -1 "$out"
