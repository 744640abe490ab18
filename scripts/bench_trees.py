#!/usr/bin/env python3
"""The tree executor against ONNX Runtime (the oracle bench's `trees/EXPORT/EXECUTOR/cpu1/BATCH`:
one thread, timed by the CPU time it ran), run ROUNDS times; after each round criterion's estimate
of every line (the middle of its `time: [...]`, with the interval) is kept, one JSON line each, in docs/figures/trees/bench.jsonl with the provenance of
scripts/figures_meta.py (the bench binary's hash, the machine, the date, the command, `uptime`).

    python3 scripts/bench_trees.py BENCH_BINARY --build "how it was built" [--rounds 2] [--filter 'trees/.*/cpu1/']
        [--out docs/figures/trees/OTHER.jsonl --label before]

`--filter 'trees-executor/'` times the executor alone (the graph on rows already f32, no oracle;
lines with `measure` "executor"); `--out` keeps the lines in another file (criterion's output in
the .log of its name) and `--label` names the binary in each line, for a before/after comparison
(scripts/bench_trees_compare.py).

BENCH_BINARY is the oracle bench as cargo built it (`cargo bench --bench oracle --no-run` prints
its path). In each round every export runs native-trees then ONNX Runtime, so the two executors of
an export share the round's load; CPU time does not count the time other processes held the core.
The published ratio of an export is native rows per CPU second over ONNX Runtime's, each the
round's criterion estimate. The bench's own output is kept in bench.log beside. Needs ONNX Runtime (ORT_DYLIB_PATH, as scripts/test.sh exports it).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_meta import meta  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
OUT = os.path.join(ROOT, 'docs', 'figures', 'trees', 'bench.jsonl')


UNITS = {'ps': 1e-12, 'ns': 1e-9, 'µs': 1e-6, 'us': 1e-6, 'ms': 1e-3, 's': 1.0}


def parse(out):
    """(benchmark, low, estimate, high) in seconds per iteration from criterion's report lines:
    the benchmark's name, then `time:   [LOW UNIT EST UNIT HIGH UNIT]`."""
    name = None
    change = False  # inside a `change:` block, whose `time:` line is a comparison with the last run
    for line in out.splitlines():
        text = line.strip()
        if text.startswith('change:'):
            change = text == 'change:'  # `change:` alone: its `time:` line follows; else it is on this line
            continue
        if 'time:' in text and not text.startswith('time:'):
            name, text = text.split()[0], text[text.index('time:'):]
        if text.startswith('time:') and change:
            change = False
            continue
        if text.startswith('time:'):
            v = text[text.index('[') + 1:text.index(']')].split()
            low, mid, high = (float(v[i]) * UNITS[v[i + 1]] for i in (0, 2, 4))
            yield (name, low, mid, high)
        elif text and not text.startswith(('thrpt:', 'change:', 'Found', 'Performance', 'No change', 'Change within',
                                           'Warning', 'Benchmarking')) and ' ' not in text.split('time:')[0].strip():
            name = text.split()[0]


def arguments(doc, rounds, filter_, measurement_time):
    """The command line of a script that runs the oracle bench and keeps its lines (this one,
    scripts/bench_oracle.py): the bench binary, how it was built, rounds, criterion's filter."""
    ap = argparse.ArgumentParser(description=doc.split('\n\n')[0])
    ap.add_argument('bench')
    ap.add_argument('--build', required=True, help='how the bench binary was built (recorded)')
    ap.add_argument('--rounds', type=int, default=rounds)
    ap.add_argument('--filter', default=filter_)
    ap.add_argument('--measurement-time', default=measurement_time)
    ap.add_argument('--out', default=None, help='the JSON lines file (default docs/figures/trees/bench.jsonl); '
                    'criterion\'s output goes to the .log of the same name beside it')
    ap.add_argument('--label', default=None, help='a name for the binary in each line (e.g. "before", "after")')
    return ap.parse_args()


def run_rounds(args, out_path, env, row_of):
    """Runs the bench `args.rounds` times with `args.filter`; each round's output is appended to
    bench.log beside `out_path` and, for each line `row_of(name, low, mid, high)` gives a dict for
    (None: skip), that dict with the round's provenance (scripts/figures_meta.py) to `out_path`."""
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    log = os.path.join(os.path.dirname(out_path), 'bench.log')
    if os.path.basename(out_path) != 'bench.jsonl':
        log = os.path.splitext(out_path)[0] + '.log'
    label = getattr(args, 'label', None)
    shown = ['%s=%s' % (k, v) for k, v in env.items()]
    for rnd in range(1, args.rounds + 1):
        cmd = [args.bench, '--bench', args.filter, '--warm-up-time', '1', '--measurement-time', args.measurement_time]
        record = meta(args.bench, ' '.join(shown + [os.path.basename(args.bench)] + cmd[1:]))
        out = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, **env), check=True, capture_output=True, text=True).stdout
        record['uptime_after'] = meta(args.bench)['uptime']
        with open(log, 'a') as f:
            f.write('$ %s  # round %d, %s\n%s' % (record['command'], rnd, record['at'], out))
        for name, low, mid, high in parse(out):
            row = row_of(name, low, mid, high)
            if row is not None:
                with open(out_path, 'a') as f:
                    extra = {} if label is None else {'label': label}
                    f.write(json.dumps(dict(record, build=args.build, round=rnd, **extra, **row)) + '\n')
        print('round', rnd, 'done', flush=True)


def tree_row(name, low, mid, high):
    """A `trees/EXPORT/EXECUTOR/MODE/BATCH` line's figures (through the oracle), or a
    `trees-executor/EXPORT/native-trees/MODE/BATCH` line's (the executor alone, `measure`
    "executor"); None for any other line."""
    group = name.split('/')
    if len(group) != 5 or group[0] not in ('trees', 'trees-executor'):
        return None
    batch = int(group[4])
    measure = 'executor' if group[0] == 'trees-executor' else 'oracle'
    return dict(export=group[1], executor=group[2], measure=measure, mode=group[3], batch=batch, time_s=mid,
                time_interval_s=[low, high], rows_per_s=batch / mid)


def main():
    args = arguments(__doc__, 2, 'trees/.*/cpu1/', '2')
    out = os.path.abspath(args.out) if args.out else OUT
    run_rounds(args, out, {'FAIRPIPE_TREES_PYTHON': '/bin/true'}, tree_row)


if __name__ == '__main__':
    main()
