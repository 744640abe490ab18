#!/usr/bin/env python3
"""The native tree executor before and after a change, on the same models and rows, with the
measuring tool `core/models/examples/tree_executor_speed.rs` built from each side (it runs the
executor alone on the calling thread). Two measures per model and side:

- **instructions per row** (deterministic, so it settles what a shared machine's timings cannot):
  `valgrind --tool=callgrind` counts the whole process's instructions with 1 and with 2 calls of
  BATCH rows; their difference over BATCH is one row's instructions, model loading excluded;
- **rows per CPU second**: the tool's best of 3 rounds of SECONDS of its thread's CPU time, the
  `before` and `after` binaries run in alternation, ROUNDS times, so that both see the same load.

Every measure is one JSON line in OUT with the provenance of scripts/figures_meta.py; a markdown
table of the lowest–highest of the rounds is printed (and written beside OUT as .md with
--markdown; `--table OUT` prints the table of every record already in OUT). Run by hand, never by
CI:

    cargo build --release --locked --workspace --features fairpipe-models/bench-tools --example tree_executor_speed
    python3 scripts/bench_tree_executor_ab.py BEFORE AFTER --build-before "…" --build-after "…" \\
        --out docs/figures/trees/NAME.jsonl MODEL.onnx [MODEL.onnx …] [--rows target/tree-peers/rows32.npy]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_meta import meta  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')


def instructions(binary, model, rows, batch, passes):
    """callgrind's count of the whole process's instructions for `passes` calls of `batch` rows."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            ['valgrind', '--tool=callgrind', f'--callgrind-out-file={tmp}/out', binary, model, rows, str(batch), '0'],
            env={**os.environ, 'PASSES': str(passes)}, capture_output=True, text=True, check=True)
    found = re.search(r'I\s+refs:\s+([\d,]+)', done.stderr)
    if not found:
        raise SystemExit(f'{binary} {model}: no instruction count in valgrind\'s output:\n{done.stderr}')
    return int(found.group(1).replace(',', ''))


def speed(binary, model, rows, batch, seconds):
    """The tool's rounds and best, rows per CPU second."""
    done = subprocess.run([binary, model, rows, str(batch), str(seconds)], capture_output=True, text=True, check=True)
    rounds = [float(x) for x in re.findall(r'round: ([\d.]+)', done.stdout)]
    return rounds, max(rounds)


def table(records):
    """Markdown: per model, instructions per row before → after, and the rows per CPU second
    (thousands, lowest–highest of the rounds' bests) before → after."""
    models = list(dict.fromkeys(r['model'] for r in records))
    lines = ['| model | instructions a row, before | after | after / before | k rows per CPU s, before | after |',
             '|---|---|---|---|---|---|']
    for m in models:
        get = lambda side, kind: [r for r in records if r['model'] == m and r['side'] == side and r['measure'] == kind]
        ib, ia = get('before', 'instructions'), get('after', 'instructions')
        sb, sa = get('before', 'speed'), get('after', 'speed')
        span = lambda rs: f"{min(r['best'] for r in rs) / 1e3:,.0f}–{max(r['best'] for r in rs) / 1e3:,.0f}" if rs else '—'
        if ib and ia:
            b, a = ib[0]['per_row'], ia[0]['per_row']
            ins = f'{b:,.0f} | {a:,.0f} | {a / b:.2f}×'
        else:
            ins = '— | — | —'
        lines.append(f'| `{m}` | {ins} | {span(sb)} | {span(sa)} |')
    return '\n'.join(lines)


def main():
    if sys.argv[1:2] == ['--table']:
        # `--table OUT`: the table of every record in OUT (measures appended by several runs).
        print(table([json.loads(line) for line in open(sys.argv[2]) if line.strip()]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('before')
    ap.add_argument('after')
    ap.add_argument('models', nargs='+')
    ap.add_argument('--out', required=True)
    ap.add_argument('--build-before', required=True, help='how the before binary was built (recorded)')
    ap.add_argument('--build-after', required=True, help='how the after binary was built (recorded)')
    ap.add_argument('--rows', default=os.path.join(ROOT, 'target', 'tree-peers', 'rows32.npy'))
    ap.add_argument('--batch', type=int, default=16000)
    ap.add_argument('--seconds', type=float, default=1.0)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--no-callgrind', action='store_true')
    ap.add_argument('--markdown', action='store_true', help='also write the table beside OUT (.md)')
    args = ap.parse_args()
    sides = {'before': (args.before, args.build_before), 'after': (args.after, args.build_after)}
    records = []
    command = ' '.join(sys.argv)

    def keep(record):
        records.append(record)
        with open(args.out, 'a') as out:
            out.write(json.dumps(record) + '\n')

    for model in args.models:
        name = os.path.splitext(os.path.basename(model))[0]
        if os.path.basename(model) == 'model.onnx':
            name = os.path.basename(os.path.dirname(model))
        if not args.no_callgrind:
            for side, (binary, build) in sides.items():
                one = instructions(binary, model, args.rows, args.batch, 1)
                two = instructions(binary, model, args.rows, args.batch, 2)
                keep({**meta(binary, command), 'build': build, 'side': side, 'model': name, 'measure': 'instructions',
                      'batch': args.batch, 'one_call': one, 'two_calls': two, 'per_row': (two - one) / args.batch})
        for round_ in range(1, args.rounds + 1):
            for side, (binary, build) in sides.items():
                rounds, best = speed(binary, model, args.rows, args.batch, args.seconds)
                keep({**meta(binary, command), 'build': build, 'side': side, 'model': name, 'measure': 'speed',
                      'round': round_, 'batch': args.batch, 'seconds': args.seconds, 'rows_per_cpu_s': rounds, 'best': best})
        print(f'{name}: done', file=sys.stderr, flush=True)
    text = table(records)
    print(text)
    if args.markdown:
        with open(os.path.splitext(args.out)[0] + '.md', 'w') as md:
            md.write(text + '\n')


if __name__ == '__main__':
    main()
