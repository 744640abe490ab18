#!/bin/sh
# Simulate a Kubernetes Indexed Job on this machine: start N fairpipe processes at once, each with
# JOB_COMPLETION_INDEX and FAIRPIPE_SHARD_COUNT set as the Job sets them (deploy/kubernetes/), each
# writing its part to OUT/parts/part-K; then merge the parts into OUT/merged, as the merge Job does.
#
#   scripts/simulate-indexed-job.sh PIPELINE.toml N OUT
#
# The fairpipe executable is $FAIRPIPE, else `fairpipe` on PATH. Exit status: merge's (0, or 3
# when a gate failed); 1 when a shard failed (its stderr is in OUT/logs/part-K.log).
set -eu
if [ $# -ne 3 ]; then
    echo "usage: $0 PIPELINE.toml N OUT" >&2
    exit 2
fi
pipeline=$1
count=$2
out=$3
fairpipe=${FAIRPIPE:-fairpipe}
case $count in
    '' | *[!0-9]* | 0) echo "$0: N must be a whole number of at least 1, got '$count'" >&2; exit 2 ;;
esac
mkdir -p "$out/parts" "$out/logs"
pids=""
index=0
while [ "$index" -lt "$count" ]; do
    JOB_COMPLETION_INDEX=$index FAIRPIPE_SHARD_COUNT=$count \
        "$fairpipe" run "$pipeline" --shard env --out "$out/parts/part-$index" --quiet \
        >"$out/logs/part-$index.log" 2>&1 &
    pids="$pids $!:$index"
    index=$((index + 1))
done
failed=0
for entry in $pids; do
    pid=${entry%%:*}
    k=${entry#*:}
    status=0
    wait "$pid" || status=$?
    # 3: a gate failed in this shard; the part is written and merge reports the verdict.
    if [ "$status" -ne 0 ] && [ "$status" -ne 3 ]; then
        echo "$0: shard $k/$count failed (exit $status); see $out/logs/part-$k.log" >&2
        failed=1
    fi
done
if [ "$failed" -ne 0 ]; then
    exit 1
fi
parts=""
index=0
while [ "$index" -lt "$count" ]; do
    parts="$parts $out/parts/part-$index"
    index=$((index + 1))
done
# shellcheck disable=SC2086 # the part folders are separate words
exec "$fairpipe" merge $parts --out "$out/merged"
