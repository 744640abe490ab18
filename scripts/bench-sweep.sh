#!/bin/sh
# Benchmark of sweeps (docs/benchmarks.md, "Sweeps"): the bundled reference models (census,
# credit, bank) × their protected attributes × 5 seeds — one pipeline,
# benches/sweep/reference-models.toml, 30 units — run with --jobs 1, with --jobs 2, and as 4
# shards run at once and merged (scripts/simulate-indexed-job.sh); prints the wall time of each and
# checks that the three give identical comparison tables (matrix.csv, which holds no timings).
# Each run's wall times (seconds, from `date`) are appended to docs/figures/sweeps/runs.jsonl with
# the executable's hash, the machine, the date, the command, RAYON_NUM_THREADS and `uptime` before
# and after (scripts/keep_run.py), once the three tables are found identical.
#
#   scripts/bench-sweep.sh [OUT]        (FAIRPIPE: the executable; default target/release/fairpipe)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/out/bench-sweep}
fairpipe=${FAIRPIPE:-$root/target/release/fairpipe}
export FAIRPIPE="$fairpipe"
pipeline=$root/benches/sweep/reference-models.toml
rm -rf "$out"
mkdir -p "$out"
load_before=$(uptime)
now() { date +%s.%N; }
report() { awk -v a="$2" -v b="$3" -v n="$4" -v what="$1" 'BEGIN { t = b - a; printf "%-10s %8.2f s  (%.2f s per unit)\n", what, t, t / n }'; }
for mode in jobs1 jobs2 shards4; do
    start=$(now)
    case $mode in
        jobs1) "$fairpipe" run "$pipeline" --out "$out/$mode" --quiet >/dev/null ;;
        jobs2) "$fairpipe" run "$pipeline" --out "$out/$mode" --quiet --jobs 2 >/dev/null ;;
        shards4) "$root/scripts/simulate-indexed-job.sh" "$pipeline" 4 "$out/$mode" >/dev/null ;;
    esac
    end=$(now)
    csv=$out/$mode/matrix.csv
    [ -f "$csv" ] || csv=$out/$mode/merged/matrix.csv
    units=$(($(wc -l <"$csv") - 1))
    report "$mode" "$start" "$end" "$units"
    eval "time_$mode=\$(awk -v a=$start -v b=$end 'BEGIN { print b - a }')"
done
awk -v a="$time_jobs1" -v b="$time_jobs2" -v c="$time_shards4" 'BEGIN { printf "speed-up: --jobs 2 %.2fx, 4 shards %.2fx (over --jobs 1)\n", a / b, a / c }'
cmp "$out/jobs1/matrix.csv" "$out/jobs2/matrix.csv"
cmp "$out/jobs1/matrix.csv" "$out/shards4/merged/matrix.csv"
echo "identical figures: matrix.csv of --jobs 1, --jobs 2 and 4 merged shards are the same"
python3 "$root/scripts/keep_run.py" sweeps "$fairpipe" --command "FAIRPIPE=$fairpipe scripts/bench-sweep.sh $out" \
    --value "pipeline=benches/sweep/reference-models.toml" --value "units=$units" \
    --value "jobs1_wall_s=$time_jobs1" --value "jobs2_wall_s=$time_jobs2" --value "shards4_wall_s=$time_shards4" \
    --value "matrix_identical=true" --value "uptime_before=$load_before"
