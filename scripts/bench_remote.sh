#!/usr/bin/env bash
# Benchmark a model behind a KServe V2 server against the same model in-process (issue 17):
# the census logistic regression of tests/fixtures/remote, served by MLServer at URL (start it as
# tests/remote_models.rs does), scored on all 45,222 census rows by load_model (accuracy) and a
# 20 × 1000 estimate, for several batch sizes and concurrencies. Prints a Markdown table: rows/s
# of the load_model stage, the audit's wall time, and fairpipe's own CPU time as a share of it
# (the client's share; the server is the bottleneck when it stays small).
#   scripts/bench_remote.sh http://127.0.0.1:8080/v2/models/census-lr [target/debug/fairpipe]
set -euo pipefail
url=$1
bin=${2:-target/debug/fairpipe}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pipeline() {
  cat <<TOML
[pipeline]
name = "bench"
seed = 1
[stages.data]
kind = "load"
path = "$repo/pipelines/data/census.csv"
label = "income"
protected = ["gender"]
drop = ["row"]
split_column = "split"
[stages.model]
kind = "load_model"
data = "data"
$1
[stages.estimate]
kind = "estimate"
model = "model"
trials = 20
samples = 1000
TOML
}
measure() { # label, model keys
  pipeline "$2" > "$work/p.toml"
  rm -rf "$work/out"
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$bin" run "$work/p.toml" --out "$work/out" --quiet > /dev/null
  python3 - "$1" "$work/out/summary.json" "$work/time" <<'PY'
import json, sys
label, summary, timing = sys.argv[1:]
s = json.load(open(summary))["stages"]
wall, user, system = map(float, open(timing).read().split()[-3:])
model = s["model"]
rows = 45222
remote = model.get("remote", {})
print(f"| {label} | {rows / model['elapsed_s']:,.0f} | {model['elapsed_s']:.2f} | {s['estimate']['elapsed_s']:.2f} | {wall:.2f} | {100 * (user + system) / wall:.0f}% | {remote.get('requests', '–')} | {remote.get('latency_ms_p50', 0):.1f} / {remote.get('latency_ms_p99', 0):.1f} |")
PY
}
echo "| model | load_model rows/s | load_model s | estimate s | audit wall s | client CPU / wall | requests | latency p50 / p99 ms |"
echo "|---|---|---|---|---|---|---|---|"
measure "in-process (fairpipe logistic, same parameters)" "path = \"$repo/tests/fixtures/remote/census-lr.fairpipe.json\""
for batch in 64 1024 8192; do
  for conc in 1 4; do
    measure "MLServer, batch $batch, concurrency $conc" "url = \"$url\"
outputs = [\"predict_proba\"]
batch_size = $batch
concurrency = $conc"
  done
done
