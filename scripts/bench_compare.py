#!/usr/bin/env python3
"""Compare the speed of two fairpipe binaries on the bundled pipelines (a benchmark, not a test).

    scripts/bench_compare.py --base OLD_BIN --new NEW_BIN [--repeats 5] [--threshold 0.10]
                             [--json OUT.json] [PIPELINE ...]
    scripts/bench_compare.py --methods OLD_methods.json NEW_methods.json [--threshold 0.10]

The first form runs every PIPELINE (default: the search pipelines listed in DEFAULT_PIPELINES)
with both binaries, alternating base and new run after run so that a change in the machine's
load falls on both alike, and compares per search stage (a `generate` stage and the `verify`
stage that checks it): verified IDIs per second of search, the search's seconds, and the whole
run's seconds. Each figure is the best (fastest) of the repeats: on a shared machine the minimum
is the least noisy estimate of what the code costs. Both binaries must find the same IDIs (the
non-timing figures of each search stage are compared too): a speed-up that changes the result is
reported as a difference, not as a win.

The second form compares two `target/bench/methods.json` files written by
`cargo bench --bench search -- methods` (scripts/bench-methods.sh) on two commits.

Counts are compared as well as times: each search stage's verified IDIs (`discriminatory_full`)
base against new, a row marked FEWER when the new count is more than THRESHOLD below the base (a
search that lost its output, as MAFT once lost nine IDIs in ten while every test stayed green).
Compare against the last landing, not only the commit before: `scripts/bench-compare.sh REV`
takes any commit.

A row whose figure is more than THRESHOLD worse (default 10%) is marked SLOWER; the exit status is
1 when any row is SLOWER or FEWER, 2 when the results differ, 0 otherwise. scripts/bench-compare.sh builds the
previous commit and calls this. Python 3 standard library only.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

DEFAULT_PIPELINES = [
    "census-sg",
    "census-aequitas",
    "census-maft",
    "census-eidig",
    "credit-maft",
    "bank-eidig",
    "census-estimate",
]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(binary, pipeline, out_dir):
    """Run one pipeline; return (wall seconds, summary dict)."""
    path = os.path.join(ROOT, "pipelines", pipeline + ".toml")
    start = time.perf_counter()
    proc = subprocess.run(
        [binary, "run", path, "--out", out_dir, "--quiet"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        sys.exit(f"{binary} run {path} failed with exit {proc.returncode}:\n{proc.stderr}")
    with open(os.path.join(out_dir, "summary.json")) as f:
        return wall, json.load(f)


def search_stages(summary):
    """(generate stage, verify stage) pairs of a summary, in stage order."""
    stages = summary["stages"]
    pairs = []
    for name in summary["stage_order"]:
        stage = stages[name]
        if stage.get("kind") != "verify":
            continue
        inputs = stage.get("inputs") or {}
        generate = inputs.get("cases") if isinstance(inputs, dict) else None
        if generate in stages:
            pairs.append((generate, name))
    return pairs


def figures(summary):
    """Per search stage: its speed and its result (what must not change)."""
    out = {}
    for generate, verify in search_stages(summary):
        g, v = summary["stages"][generate], summary["stages"][verify]
        seconds = g.get("run_elapsed_s") or 0.0
        idis = v.get("discriminatory_full", v.get("discriminatory", 0))
        out[generate] = {
            "search_s": seconds,
            "idis_per_s": idis / seconds if seconds > 0 else 0.0,
            "result": {"idis": idis, "generated": g.get("generated"), "queries_asked": g.get("queries_asked")},
        }
    return out


def measure(base, new, pipelines, repeats):
    """Alternate base and new runs; keep the best of each figure."""
    best = {"base": {}, "new": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for pipeline in pipelines:
            for r in range(repeats):
                for label, binary in (("base", base), ("new", new)):
                    out_dir = os.path.join(tmp, f"{label}-{pipeline}-{r}")
                    wall, summary = run_once(binary, pipeline, out_dir)
                    row = best[label].setdefault(pipeline, {"wall_s": wall, "stages": {}})
                    row["wall_s"] = min(row["wall_s"], wall)
                    for stage, f in figures(summary).items():
                        kept = row["stages"].get(stage)
                        if kept is None:
                            row["stages"][stage] = f
                        else:
                            kept["search_s"] = min(kept["search_s"], f["search_s"])
                            kept["idis_per_s"] = max(kept["idis_per_s"], f["idis_per_s"])
                            if kept["result"] != f["result"]:
                                kept["result_varies"] = True
                print(f"{pipeline}: run {r + 1}/{repeats} done", file=sys.stderr)
    return best


def ratio_row(name, base, new, higher_is_better, threshold):
    """One table row and whether it is a slowdown beyond the threshold."""
    if base <= 0 or new <= 0:
        return f"| {name} | {base:.4g} | {new:.4g} | — | |", False
    change = new / base - 1.0 if higher_is_better else base / new - 1.0
    slower = change < -threshold
    mark = "SLOWER" if slower else ("faster" if change > threshold else "")
    return f"| {name} | {base:.4g} | {new:.4g} | {100 * change:+.1f}% | {mark} |", slower


def count_row(name, base, new, threshold):
    """A row comparing two counts of verified IDIs and whether the new one is more than the
    threshold below the base (a search that lost its output: reported FEWER, whatever its speed)."""
    change = (new / base - 1.0) if base > 0 else (0.0 if new == base else float("inf"))
    fewer = base > 0 and new < base * (1.0 - threshold)
    mark = "FEWER" if fewer else ("more" if change > threshold else ("" if new == base else "changed"))
    return f"| {name} IDIs | {base:,.0f} | {new:,.0f} | {100 * change:+.1f}% | {mark} |", fewer


def compare_runs(best, threshold):
    rows, slower, differ, fewer = [], False, False, False
    for pipeline, base in best["base"].items():
        new = best["new"][pipeline]
        line, s = ratio_row(f"{pipeline} run s", base["wall_s"], new["wall_s"], False, threshold)
        rows.append(line)
        slower |= s
        for stage, b in base["stages"].items():
            n = new["stages"].get(stage)
            if n is None:
                differ = True
                rows.append(f"| {pipeline}/{stage} | | missing in new | | DIFFERS |")
                continue
            line, s = ratio_row(f"{pipeline}/{stage} IDIs/s", b["idis_per_s"], n["idis_per_s"], True, threshold)
            rows.append(line)
            slower |= s
            line, f = count_row(f"{pipeline}/{stage}", b["result"]["idis"], n["result"]["idis"], threshold)
            rows.append(line)
            fewer |= f
            if b["result"] != n["result"] and not (b.get("result_varies") or n.get("result_varies")):
                differ = True
                rows.append(f"| {pipeline}/{stage} result | {b['result']} | {n['result']} | | DIFFERS |")
    return rows, slower, differ, fewer


def compare_methods(base_file, new_file, threshold):
    with open(base_file) as f:
        base = {(r["method"], r["benchmark"], r["mode"]): r for r in json.load(f)}
    with open(new_file) as f:
        new = {(r["method"], r["benchmark"], r["mode"]): r for r in json.load(f)}
    rows, slower, fewer = [], False, False
    for key, b in base.items():
        n = new.get(key)
        if n is None:
            continue
        line, s = ratio_row(" ".join(key) + " IDIs/s", b["idis_per_s"], n["idis_per_s"], True, threshold)
        rows.append(line)
        slower |= s
        count = next((k for k in ("idis_full_mean", "idis_full", "idis") if k in b and k in n), None)
        if count:
            line, f = count_row(" ".join(key), b[count], n[count], threshold)
            rows.append(line)
            fewer |= f
    return rows, slower, False, fewer


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="the previous commit's release binary")
    parser.add_argument("--new", help="this commit's release binary")
    parser.add_argument("--methods", nargs=2, metavar=("BASE_JSON", "NEW_JSON"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threshold", type=float, default=0.10)
    parser.add_argument("--json", help="write the measured figures here")
    parser.add_argument("pipelines", nargs="*")
    args = parser.parse_args()
    if args.methods:
        rows, slower, differ, fewer = compare_methods(args.methods[0], args.methods[1], args.threshold)
    else:
        if not (args.base and args.new):
            parser.error("give --base and --new binaries, or --methods BASE_JSON NEW_JSON")
        best = measure(args.base, args.new, args.pipelines or DEFAULT_PIPELINES, args.repeats)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(best, f, indent=2)
        rows, slower, differ, fewer = compare_runs(best, args.threshold)
    print(f"| figure (best of repeats) | base | new | change | (threshold {100 * args.threshold:.0f}%) |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    if differ:
        print("results DIFFER between the binaries (see DIFFERS rows)", file=sys.stderr)
        sys.exit(2)
    if fewer:
        print(f"a search found more than {100 * args.threshold:.0f}% fewer IDIs (FEWER rows)", file=sys.stderr)
        sys.exit(1)
    if slower:
        print(f"a figure is more than {100 * args.threshold:.0f}% slower (SLOWER rows)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
