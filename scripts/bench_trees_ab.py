#!/usr/bin/env python3
"""Two builds of the oracle bench, before and after a change to the tree executor, timed in
alternation: round after round, the `before` binary then the `after` one, each with criterion's
filter (default `trees-executor/.*/cpu1/`: the executor alone, one thread, CPU time), so that both
see the same load. Every line is kept, one JSON line each, in OUT (with the provenance of
scripts/figures_meta.py, the binary's label and the round), criterion's output in the .log of
OUT's name; then the comparison is printed (scripts/bench_trees_compare.py).

    python3 scripts/bench_trees_ab.py BEFORE AFTER --out docs/figures/trees/NAME.jsonl \\
        --build-before "…" --build-after "…" [--rounds 3] [--filter 'trees-executor/.*/cpu1/']

Needs ONNX Runtime (ORT_DYLIB_PATH, as scripts/test.sh exports it) for the `trees/` lines.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_trees import parse, tree_row  # noqa: E402
from bench_trees_compare import compare  # noqa: E402
from figures_meta import meta  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('before')
    ap.add_argument('after')
    ap.add_argument('--out', required=True)
    ap.add_argument('--build-before', required=True, help='how the before binary was built (recorded)')
    ap.add_argument('--build-after', required=True, help='how the after binary was built (recorded)')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--filter', default='trees-executor/.*/cpu1/')
    ap.add_argument('--measurement-time', default='2')
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    log = os.path.splitext(out)[0] + '.log'
    os.makedirs(os.path.dirname(out), exist_ok=True)
    env = {'FAIRPIPE_TREES_PYTHON': '/bin/true'}
    if os.environ.get('FAIRPIPE_BENCH_TREES'):  # the exports kept (recorded in the command)
        env['FAIRPIPE_BENCH_TREES'] = os.environ['FAIRPIPE_BENCH_TREES']
    shown = ['%s=%s' % (k, v) for k, v in env.items()]
    for rnd in range(1, args.rounds + 1):
        for label, binary, build in (('before', args.before, args.build_before), ('after', args.after, args.build_after)):
            cmd = [binary, '--bench', args.filter, '--warm-up-time', '1', '--measurement-time', args.measurement_time]
            record = meta(binary, ' '.join(shown + [os.path.basename(binary)] + cmd[1:]))
            text = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, **env), check=True, capture_output=True, text=True).stdout
            record['uptime_after'] = meta(binary)['uptime']
            with open(log, 'a') as f:
                f.write('$ %s  # %s, round %d, %s\n%s' % (record['command'], label, rnd, record['at'], text))
            for name, low, mid, high in parse(text):
                row = tree_row(name, low, mid, high)
                if row is not None:
                    with open(out, 'a') as f:
                        f.write(json.dumps(dict(record, build=build, label=label, round=rnd, **row)) + '\n')
            print('round', rnd, label, 'done', flush=True)
    print(compare(out))


if __name__ == '__main__':
    main()
