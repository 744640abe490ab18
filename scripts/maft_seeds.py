#!/usr/bin/env python3
"""MAFT's verified IDI counts on the bundled census pipeline over pipeline seeds (issue 57: the
counts a search finds are held, not only its speed). Runs `fairpipe run pipelines/census-maft.toml
--seed N` for each seed with the given binary and appends one JSON line per run to
docs/figures/maft-seeds/runs.jsonl: the seed, each protected attribute's `discriminatory_full`
(its `<attribute>_verified` stage), the run's wall seconds, and the provenance of
scripts/figures_meta.py. It prints each run and the mean per attribute.

    python3 scripts/maft_seeds.py [--binary target/debug/fairpipe] [--seeds 1-10] [--pipeline pipelines/census-maft.toml]

The counts do not depend on the build profile or the thread count (the searches' budgets are
counts); the wall seconds do, so the record says which binary ran.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_meta import meta  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))


def seeds(text):
    """`1-10` or `1,4,7` as a list of integers."""
    if '-' in text:
        lo, hi = text.split('-', 1)
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(',')]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--binary', default='target/debug/fairpipe')
    ap.add_argument('--seeds', type=seeds, default=seeds('1-10'))
    ap.add_argument('--pipeline', default='pipelines/census-maft.toml')
    ap.add_argument('--out', default='docs/figures/maft-seeds/runs.jsonl')
    args = ap.parse_args()
    os.chdir(ROOT)
    binary = os.path.abspath(args.binary)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    counts = {}
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as out:
            command = [binary, 'run', args.pipeline, '--seed', str(seed), '--out', out, '--quiet']
            start = time.monotonic()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            wall = time.monotonic() - start
            with open(os.path.join(out, 'summary.json')) as f:
                stages = json.load(f)['stages']
        found = {name[:-len('_verified')]: stage['discriminatory_full']
                 for name, stage in stages.items() if name.endswith('_verified')}
        record = {'pipeline': args.pipeline, 'seed': seed, 'discriminatory_full': found,
                  'wall_s': round(wall, 2), **meta(binary, ' '.join(['scripts/maft_seeds.py'] + sys.argv[1:]))}
        with open(args.out, 'a') as f:
            f.write(json.dumps(record) + '\n')
        print('seed %d: %s (%.1f s wall)' % (seed, ', '.join('%s %d' % kv for kv in found.items()), wall), flush=True)
        for attribute, n in found.items():
            counts.setdefault(attribute, []).append(n)
    for attribute, ns in counts.items():
        sd = statistics.stdev(ns) if len(ns) > 1 else 0.0
        print('%s: mean %.1f, sd %.1f over %d seeds' % (attribute, statistics.mean(ns), sd, len(ns)))


if __name__ == '__main__':
    main()
