#!/usr/bin/env bash
# The LLM client's benchmark (benches/llm.rs; issue 46): fairpipe's requests/s and client CPU per
# request at concurrency 1, 8, 32 against the planted server, beside the `openai` Python client
# (pinned in a venv under ~/.cache/fairpipe/openai-venv, made here if missing), and the response
# cache's hit path. Built in the dev profile by `cargo build --workspace --all-targets --locked`
# (no release build: fairpipe-core is at opt-level 2 there, its dependencies — reqwest, hyper,
# SQLite — at 0, so the figures are a floor). The raw output, with `uptime` before and after (other
# builds share the machine), goes to benches/llm/raw.txt.
#
#   scripts/bench-llm.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$HOME/.cache/fairpipe/openai-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "openai==2.8.1"
fi
bin=$(ls -t target/debug/deps/llm-* | grep -v '\.d$' | head -1)
mkdir -p benches/llm
{
  echo "# $(date -u +%FT%TZ) $bin (dev profile), $(nproc) cores"
  echo "# uptime before: $(uptime)"
  FAIRPIPE_LLM_PYTHON="$venv/bin/python" "$bin"
  echo "# uptime after: $(uptime)"
} | tee benches/llm/raw.txt
