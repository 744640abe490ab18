#!/usr/bin/env bash
# Benchmark a model behind a KServe V2 server against the same model in-process:
# the census logistic regression of tests/fixtures/remote, served by MLServer at URL (start it as
# tests/remote_models.rs does), audited by load_model (accuracy on all 45,222 census rows) and a
# 200 × 1000 estimate (about 441,000 model rows asked), for several batch sizes and concurrencies.
# Prints a Markdown table: rows asked per second over the audit, the audit's wall time, fairpipe's
# CPU time, the client's share (fairpipe's CPU beyond what the in-process audit of the same
# pipeline takes — encoding, HTTP, decoding, the row cache — over the wall time) and, when
# SERVER_PIDS lists the server's processes, the server's CPU time over the same run. With GRPC_URL
# (the server's gRPC port and the model, e.g. http://127.0.0.1:8081/v2/models/census-lr), the same
# audits over protocol = "grpc-v2" (raw tensors) follow; BATCHES and CONCURRENCIES choose the grid.
# EXTRA_MODELS names other models the same server serves (scripts/make_bench_models.py writes
# census-mlp, the bundled reference network, and census-gb, 200 boosted trees): each is audited
# over gRPC (GRPC_URL with census-lr replaced by its name) at the largest batch size, against the
# same in-process baseline (the audit's rows do not depend on the model, so neither does the
# client's work; the baseline's own model, a logistic regression, costs next to nothing).
# Every row of the table is also appended, as one JSON line with its unrounded figures and the
# server's counters, to docs/figures/remote/runs.jsonl with the fairpipe executable's hash, the
# machine, the date, the command, the run's start (`run`, shared by the rows of one call) and
# `uptime` (scripts/figures_meta.py).
#   SERVER_PIDS="$(pgrep -f mlserver)" GRPC_URL=http://127.0.0.1:8081/v2/models/census-lr \
#     scripts/bench_remote.sh http://127.0.0.1:8080/v2/models/census-lr [target/release/fairpipe]
set -euo pipefail
url=$1
bin=${2:-target/release/fairpipe}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run_started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
command="scripts/bench_remote.sh $*"
pipeline() {
  cat <<TOML
[pipeline]
name = "bench"
seed = 1
[stages.data]
kind = "load"
path = "$repo/pipelines/data/census.csv"
codes = "$repo/pipelines/data/census.codes.toml"
label = "income"
favourable = ">50K"
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
trials = 200
samples = 1000
TOML
}
server_ticks() { # CPU ticks of SERVER_PIDS so far
  local t=0 p
  for p in ${SERVER_PIDS:-}; do
    [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$t"
}
baseline_cpu=""
measure() { # label, model keys
  pipeline "$2" > "$work/p.toml"
  rm -rf "$work/out"
  local before after
  before=$(server_ticks)
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$bin" run "$work/p.toml" --out "$work/out" --quiet > /dev/null
  after=$(server_ticks)
  python3 - "$1" "$work/out/summary.json" "$work/time" "$((after - before))" "$(getconf CLK_TCK)" "${baseline_cpu:-}" \
    "$repo" "$bin" "$run_started" "$command" "$2" <<'PY'
import json, os, sys
label, summary, timing, ticks, hz, baseline, repo, binary, run_started, command, model_keys = sys.argv[1:]
sys.path.insert(0, os.path.join(repo, "scripts"))
from figures_meta import meta
s = json.load(open(summary))["stages"]
wall, user, system = map(float, open(timing).read().split()[-3:])
cpu = user + system
remote = s["model"].get("remote")
asked = remote["rows_asked"] if remote else 45222 + 200 * 1000 * 2  # each sample and its other variant
client = f"{100 * (cpu - float(baseline)) / wall:.0f}%" if baseline and remote else "–"
server = f"{int(ticks) / int(hz):.2f}" if remote and int(ticks) > 0 else "–"
if remote:
    per_request = remote["rows_sent"] / max(remote["requests"], 1)
    traffic = f"{remote['requests']} | {per_request:,.0f} | {remote['latency_ms_p50']:.1f} / {remote['latency_ms_p99']:.1f}"
else:
    traffic = "– | – | –"
print(f"| {label} | {asked / wall:,.0f} | {wall:.2f} | {cpu:.2f} | {client} | {server} | {traffic} |")
record = dict(meta(binary, command), run=run_started, label=label, model_keys=model_keys, rows_asked=asked,
              wall_s=wall, user_s=user, system_s=system, baseline_cpu_s=float(baseline) if baseline else None,
              server_cpu_s=int(ticks) / int(hz) if remote else None, remote=remote)
os.makedirs(os.path.join(repo, "docs", "figures", "remote"), exist_ok=True)
with open(os.path.join(repo, "docs", "figures", "remote", "runs.jsonl"), "a") as f:
    f.write(json.dumps(record) + "\n")
with open(timing + ".cpu", "w") as f:
    f.write(str(cpu))
PY
  if [ -z "$baseline_cpu" ]; then baseline_cpu=$(cat "$work/time.cpu"); fi
}
echo "| model | rows asked/s | audit wall s | fairpipe CPU s | client share | server CPU s | requests | rows/request | latency p50 / p99 ms |"
echo "|---|---|---|---|---|---|---|---|---|"
measure "in-process (fairpipe logistic, same parameters)" "path = \"$repo/tests/fixtures/remote/census-lr.fairpipe.json\""
for batch in ${BATCHES:-64 1024 8192}; do
  for conc in ${CONCURRENCIES:-1 2 4}; do
    measure "MLServer, batch $batch, concurrency $conc" "url = \"$url\"
outputs = [\"predict_proba\"]
batch_size = $batch
concurrency = $conc"
  done
done
grpc_grid() { # model name, batch sizes: gRPC audits of that model at each batch and concurrency
  for batch in $2; do
    for conc in ${CONCURRENCIES:-1 2 4}; do
      local label="MLServer gRPC, batch $batch, concurrency $conc"
      [ "$1" = census-lr ] || label="MLServer gRPC, $1, batch $batch, concurrency $conc"
      measure "$label" "url = \"${GRPC_URL/census-lr/$1}\"
protocol = \"grpc-v2\"
outputs = [\"predict_proba\"]
batch_size = $batch
concurrency = $conc"
    done
  done
}
if [ -n "${GRPC_URL:-}" ]; then
  grpc_grid census-lr "${BATCHES:-64 1024 8192}"
  for model in ${EXTRA_MODELS:-}; do
    grpc_grid "$model" "$(echo ${BATCHES:-64 1024 8192} | tr ' ' '\n' | tail -1)"
  done
fi
