#!/usr/bin/env python3
"""The oracle bench's model-throughput lines other than the tree exports (docs/benchmarks.md, "Model
(census reference model)" and "Models people ship"; docs/methods.md, the score cache's cost): runs
the bench binary with a criterion filter and keeps criterion's estimate of every line (the middle of
its `time: [...]`, with the interval), one JSON line each, in docs/figures/oracle/bench.jsonl with
the provenance of scripts/figures_meta.py (the bench binary's hash, the machine, the date, the
command, `uptime` before and after); criterion's output goes to bench.log beside it (scripts/bench_trees.py runs
the rounds for both).

    python3 scripts/bench_oracle.py BENCH_BINARY --build "how it was built" [--filter '^(predict|check|cache)/'] [--rounds 1]

BENCH_BINARY is the oracle bench as cargo built it (`cargo bench --bench oracle --no-run` prints
its path; ONNX Runtime through ORT_DYLIB_PATH, as scripts/test.sh exports it). The default filter
is every group but `trees/` (scripts/bench_trees.py keeps those). A line's `batch` is the last part
of its name when that is a number (`predict/onnx-native/threads1/4096`), and `batch_per_s` that
batch over the estimate: rows per second for `predict/…`, rows checked per second for `check/…`.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_trees import arguments, run_rounds  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
OUT = os.path.join(ROOT, 'docs', 'figures', 'oracle', 'bench.jsonl')


def oracle_row(name, low, mid, high):
    """A line's figures: its name, criterion's estimate and interval, and its batch when its name
    ends in one."""
    row = dict(name=name, time_s=mid, time_interval_s=[low, high])
    last = name.rsplit('/', 1)[-1]
    if last.isdigit():
        row.update(batch=int(last), batch_per_s=int(last) / mid)
    return row


def main():
    run_rounds(arguments(__doc__, 1, '^(predict|check|cache)/', '5'), OUT, {}, oracle_row)


if __name__ == '__main__':
    main()
