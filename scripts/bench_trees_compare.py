#!/usr/bin/env python3
"""The before/after comparison of a JSON lines file written by scripts/bench_trees_ab.py: per
export, measure and batch, the rows per CPU second of each label (lowest–highest of its rounds'
criterion estimates) and after / before per round (the round's two estimates, run one after the
other), lowest–highest; then the geometric mean of every round's ratio per measure. Printed as a
markdown table.

    python3 scripts/bench_trees_compare.py docs/figures/trees/NAME.jsonl
"""
import json
import math
import sys
from collections import defaultdict


def span(values, fmt):
    """`low–high` (or one figure when they print the same)."""
    low, high = fmt(min(values)), fmt(max(values))
    return low if low == high else '%s–%s' % (low, high)


def compare(path):
    """The table of `path`'s lines, as text."""
    rows = defaultdict(lambda: defaultdict(dict))  # (measure, export, executor, batch) -> label -> round -> rows/s
    for line in open(path):
        r = json.loads(line)
        key = (r.get('measure', 'oracle'), r['export'], r['executor'], r['batch'])
        rows[key][r['label']][r['round']] = r['rows_per_s']
    out = ['| measure | export | executor | batch | before (k rows/CPU s) | after (k rows/CPU s) | after / before (per round) |',
           '|---|---|---|---|---|---|---|']
    by_measure = defaultdict(list)
    for key in sorted(rows):
        before, after = rows[key].get('before', {}), rows[key].get('after', {})
        ratios = [after[k] / before[k] for k in sorted(before) if k in after]
        if not before or not after:
            continue
        by_measure[key[0]].extend(ratios)
        k = lambda v: '{:,.0f}'.format(v / 1e3)  # noqa: E731
        out.append('| %s | `%s` | %s | %d | %s | %s | %s× |' % (
            key[0], key[1], key[2], key[3], span(before.values(), k), span(after.values(), k),
            span(ratios, lambda v: '%.2f' % v)))
    for measure, ratios in sorted(by_measure.items()):
        mean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        out.append('')
        out.append('%s: geometric mean of after / before over %d (export, round) pairs: %.3f×' % (measure, len(ratios), mean))
    return '\n'.join(out)


if __name__ == '__main__':
    print(compare(sys.argv[1]))
