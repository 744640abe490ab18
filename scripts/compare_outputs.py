#!/usr/bin/env python3
"""Compare two sets of fairpipe run outputs, ignoring what depends on time.

    scripts/compare_outputs.py BASELINE NEW [PIPELINE ...]

BASELINE and NEW are folders holding one output folder per pipeline (as written by
`fairpipe run pipelines/X.toml --out BASELINE/X`), or two output folders of one run each.
Compared, per pipeline:
  * summary.json: every value, recursively, except timing fields (elapsed_s, per_second,
    model_time_s, model_time_share, idis_over_time_s, rule_sets_per_second, *_elapsed_s,
    time_to_*_s, ...) and the trail's git commit (the build, not the run);
    key order is ignored (values are what matter);
  * every CSV table: byte for byte;
  * every Parquet table: byte for byte (reported separately: a writer change alone may alter them);
  * report.html: byte for byte after blanking time-dependent text (the search table's seconds and
    IDIs/s cells, and the IDIs-over-time chart).
Exit status 0 when everything compared is identical, 1 otherwise. Python 3 standard library only.
"""

import json
import math
import os
import re
import sys

TIMING_KEYS = {
    "elapsed_s",
    "per_second",
    "model_time_s",
    "model_time_share",
    "idis_over_time_s",
    "rule_sets_per_second",
    "run_elapsed_s",
    "search_elapsed_s",
    "train_elapsed_s",
}


# What identifies the build rather than the run (the trail's commit): reported apart, not as a
# difference.
BUILD_KEYS = {"git_commit"}


def is_timing(key):
    return (
        key in TIMING_KEYS
        or key.endswith("_elapsed_s")
        or key.endswith("per_second")
        or (key.startswith("time_to_") and key.endswith("_s"))
        or key in BUILD_KEYS
    )


def diff_json(a, b, path, out):
    """Append to `out` one line per difference between JSON values `a` and `b`."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if is_timing(k):
                continue
            p = f"{path}.{k}" if path else k
            if k not in a:
                out.append(f"{p}: only in new ({json.dumps(b[k])[:80]})")
            elif k not in b:
                out.append(f"{p}: only in baseline ({json.dumps(a[k])[:80]})")
            else:
                diff_json(a[k], b[k], p, out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items in baseline, {len(b)} in new")
        for i, (x, y) in enumerate(zip(a, b)):
            diff_json(x, y, f"{path}[{i}]", out)
    elif isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return
    elif a != b or type(a) is not type(b):
        out.append(f"{path}: baseline {json.dumps(a)[:80]} != new {json.dumps(b)[:80]}")


def normalise_html(text):
    """Blank the time-dependent parts of report.html."""
    # The IDIs-over-time line chart (axis label in seconds, curve coordinates).
    text = re.sub(r"<svg[^>]*>(?:(?!</svg>).)*<polyline(?:(?!</svg>).)*</svg>", "<svg>TIME CHART</svg>", text, flags=re.S)

    # The search table: its last two cells (seconds, IDIs/s) of every row.
    def blank_row(m):
        row = m.group(0)
        cells = re.findall(r"<td[^>]*>.*?</td>", row)
        if len(cells) == 9:
            row = row.replace(cells[7] + cells[8], "<td>T</td><td>T</td>")
        return row

    def blank_table(m):
        return re.sub(r"<tr[^>]*>.*?</tr>", blank_row, m.group(0), flags=re.S)

    # (Its heading was "Individual discrimination"; it is "Searches for inputs treated differently".)
    text = re.sub(r'<h2(?: id="searches")?>(?:Individual discrimination|Searches for inputs).*?</table>', blank_table, text, flags=re.S)
    # A search's time to its 1,000th case (the summary's time_to_1000_idis_s), where the report shows it.
    text = re.sub(r"(time to 1,000[^<]*</t[dh]>\s*<td[^>]*>)[^<]*", r"\1T", text)
    return text


def compare_run(base, new):
    """Differences between the output folders `base` and `new`, as lines."""
    problems = []
    for name in ("summary.json",):
        pa, pb = os.path.join(base, name), os.path.join(new, name)
        if not os.path.exists(pb):
            problems.append(f"{name}: missing in new")
            continue
        with open(pa) as fa, open(pb) as fb:
            a, b = json.load(fa), json.load(fb)
        out = []
        diff_json(a, b, "", out)
        problems += [f"summary.json: {d}" for d in out]
    files_a = sorted(f for f in os.listdir(base) if not f.startswith("."))
    files_b = sorted(f for f in os.listdir(new) if not f.startswith("."))
    for f in sorted(set(files_a) ^ set(files_b)):
        problems.append(f"{f}: only in {'baseline' if f in files_a else 'new'}")
    for f in sorted(set(files_a) & set(files_b)):
        pa, pb = os.path.join(base, f), os.path.join(new, f)
        if os.path.isdir(pa) or f == "summary.json":
            continue
        with open(pa, "rb") as fa, open(pb, "rb") as fb:
            a, b = fa.read(), fb.read()
        if f == "report.html":
            a, b = normalise_html(a.decode()), normalise_html(b.decode())
        if a != b:
            problems.append(f"{f}: differs")
    return problems


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    base, new = argv[1], argv[2]
    if os.path.exists(os.path.join(base, "summary.json")):
        runs = [(os.path.basename(os.path.normpath(base)), base, new)]
    else:
        names = argv[3:] or sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)))
        runs = [(n, os.path.join(base, n), os.path.join(new, n)) for n in names]
    failed = 0
    for name, a, b in runs:
        if not os.path.isdir(b):
            print(f"{name}: not in {new}")
            failed += 1
            continue
        problems = compare_run(a, b)
        if problems:
            failed += 1
            print(f"{name}: DIFFERENT")
            for p in problems[:40]:
                print(f"  {p}")
            if len(problems) > 40:
                print(f"  ... and {len(problems) - 40} more")
        else:
            print(f"{name}: identical")
    print(f"{len(runs) - failed} of {len(runs)} identical")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
