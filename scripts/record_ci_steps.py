#!/usr/bin/env python3
"""Keep the record of CI's step times (issue 58): one line per landing in docs/ci/steps.jsonl.

    bash .ci/run 2>&1 | tee ci.log
    python3 scripts/record_ci_steps.py [--source TEXT] [--check] [LOG]

Reads the last `ci-steps: {JSON}` line .ci/run printed (from LOG, default standard input): the
commit it ran on, the cores, and each step's wall seconds (fmt, first_command, install, wheel,
test_command, lints; provision: the test command's provisioning in the background from start to
end, provision_wait: what step 4 waited for it; total: the whole run). Checks it, appends it to
docs/ci/steps.jsonl with the date it was recorded and its source (--source, e.g. "CI at landing
of stop 60" or "fresh clone on a developer machine"), unless the same run is there already, then
rewrites the block between `<!-- ci-steps:start -->` and `<!-- ci-steps:end -->` in
docs/testing.md from the newest record: a table of the steps whose figures are
`<!-- figure: ci-steps:KEY -->` markers, which tests/published_figures.rs recomputes from the
last line of docs/ci/steps.jsonl. With --check nothing is written: the exit status is 1 when
docs/testing.md's block is not the one the newest record gives. Python 3 standard library only.
"""
import argparse
import datetime
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, "docs/ci/steps.jsonl")
DOC = os.path.join(ROOT, "docs/testing.md")
BUDGET_S = 2700
# The steps in .ci/run's order, with what each is in docs/testing.md's table.
STEPS = [
    ("fmt", "0. `cargo fmt --check`"),
    ("first_command", "1. the README's first command in a fresh clone (cold target folder)"),
    ("install", "2. `cargo install --debug --path .` (step 1's artifacts), the binary alone in another folder"),
    ("wheel", "3. the wheel: dev-profile build through zig, installed and run without a compiler"),
    ("test_command", "4. the README's test command (`scripts/test.sh`; pytest against step 3's wheel) and the library example"),
    ("lints", "5. `cargo clippy --workspace --all-targets -D warnings`"),
]
BACKGROUND = [
    ("provision", "the test command's provisioning, in the background from the start (not added to the total)"),
    ("provision_wait", "of which step 4 waited for it"),
]


def parse_line(text):
    lines = [l for l in text.splitlines() if l.startswith("ci-steps: ")]
    if not lines:
        sys.exit("record_ci_steps: no `ci-steps: {...}` line in the log (.ci/run prints it last but one)")
    record = json.loads(lines[-1][len("ci-steps: "):])
    if not re.fullmatch(r"[0-9a-f]{40}", str(record.get("commit", ""))):
        sys.exit(f"record_ci_steps: the line names no commit: {lines[-1]}")
    for key, _ in STEPS + [("total", "")]:
        if not isinstance(record.get(key), int) or record[key] < 0:
            sys.exit(f"record_ci_steps: `{key}` is not a whole number of seconds in {lines[-1]}")
    return record


def figure(record, key, fmt=""):
    """A marker and its text, as tests/published_figures.rs's ci_steps computes it."""
    value = record[key]
    if isinstance(value, str):
        text = value[:7] if fmt == "short" else value
    elif fmt == "min":
        text = f"{value / 60:.0f}"
    else:
        text = f"{round(value):,}"
    marker = f"ci-steps:{key}" + (f":{fmt}" if fmt else "")
    return f"<!-- figure: {marker} -->{text}<!-- /figure -->"


def block(record):
    rows = [
        f"The newest record (docs/ci/steps.jsonl's last line): commit {figure(record, 'commit', 'short')}, "
        f"{figure(record, 'cores')} cores, recorded {record['date']} from {record['source']}.",
        "",
        "| step | wall seconds |",
        "|---|---|",
    ]
    rows += [f"| {title} | {figure(record, key)} |" for key, title in STEPS]
    rows.append(f"| **the whole `.ci/run`** (budget {BUDGET_S:,} s) | **{figure(record, 'total')}** |")
    rows += [f"| {title} | {figure(record, key)} |" for key, title in BACKGROUND if isinstance(record.get(key), int)]
    return "\n".join(rows)


def replaced(text, new):
    start, end = "<!-- ci-steps:start -->", "<!-- ci-steps:end -->"
    if text.count(start) != 1 or text.count(end) != 1:
        sys.exit(f"record_ci_steps: docs/testing.md: expected one `{start}` and one `{end}`")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return f"{head}{start}\n{new}\n{end}{tail}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("log", nargs="?", help=".ci/run's output (default: standard input)")
    parser.add_argument("--source", default="a .ci/run log", help="where the run happened")
    parser.add_argument("--check", action="store_true", help="only check docs/testing.md against the newest record")
    args = parser.parse_args()
    records = []
    if os.path.exists(RECORDS):
        with open(RECORDS) as f:
            records = [json.loads(l) for l in f if l.strip()]
    if not args.check:
        text = open(args.log).read() if args.log else sys.stdin.read()
        record = parse_line(text)
        same = [r for r in records if r["commit"] == record["commit"] and r["total"] == record["total"]]
        if same:
            print(f"record_ci_steps: this run (commit {record['commit'][:7]}, {record['total']} s) is recorded already")
        else:
            record = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
                      "source": args.source, **record}
            os.makedirs(os.path.dirname(RECORDS), exist_ok=True)
            with open(RECORDS, "a") as f:
                f.write(json.dumps(record) + "\n")
            records.append(record)
            over = " OVER THE BUDGET" if record["total"] > BUDGET_S else ""
            print(f"record_ci_steps: appended commit {record['commit'][:7]}: {record['total']} s "
                  f"(budget {BUDGET_S} s){over} to docs/ci/steps.jsonl")
    if not records:
        sys.exit("record_ci_steps: docs/ci/steps.jsonl holds no record yet")
    with open(DOC) as f:
        doc = f.read()
    new = replaced(doc, block(records[-1]))
    if args.check:
        if new != doc:
            sys.exit("record_ci_steps: docs/testing.md's ci-steps block is not the newest record's: run scripts/record_ci_steps.py")
        print("record_ci_steps: docs/testing.md shows the newest record")
    elif new != doc:
        with open(DOC, "w") as f:
            f.write(new)
        print("record_ci_steps: rewrote docs/testing.md's ci-steps block")


if __name__ == "__main__":
    main()
