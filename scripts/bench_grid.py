#!/usr/bin/env python3
"""The field's benchmark grid reproduced (issue 37 item 3): every model x dataset x protected
attribute cell, every search method, at a fixed budget of model queries (generate's
`max_queries`) or of seconds (`max_seconds`), with the published RegionFT figures beside the same
cells (docs/benchmarks.md, "The benchmark grid").

Models: scripts/make_grid_models.py (the RegionFT harness's LogReg, DecTree, RanForest, GBDT, MLP on
fairpipe's bundled census, credit, bank and COMPAS files), read from tests/fixtures/onnx/grid/ or,
for the large exports not checked in, from target/grid-models/ (run make_grid_models.py first).

Each run is its own pipeline (load -> load_model -> cluster, k 4, 1,000 seeds -> generate ->
verify), pipeline seed 1..N, one rayon thread, under `nice` as the caller runs it. Every method
gets parameters it cannot finish within the budget, so the budget stops it:

    random    samples = 100,000,000
    aequitas  fully_directed (its default), global_iterations = 1,000, local_iterations = 1,000,000
    sg        sample_limit = 1,000,000
    maft      global_num = 1,000, local_num = 100,000
    eidig     global_num = 1,000, local_num = 100,000
    grft      num_seeds = 100 per round, rounds = 0 (until the budget; the reference: 1,000 seeds, once)
    aft       max_tests = 0 (until the budget)

Figures per run: verified IDIs (the verify stage's host-confirmed distinct full instances; a run
whose verify rejects a case fails the script), tests (the search's distinct inputs checked,
`generated`), queries (rows the plugin asked, `queries_asked`: the budget's measure), search
seconds (`run_elapsed_s`: the generate stage's wall time, not loading or clustering). Derived:
IDIs/s, tests/s, success rate = IDIs / tests, IDIs per 1,000 queries. Cells are means over the
runs (IDIs also with the standard deviation).

`--output labels` runs the same cells on the label-only copy of each export
(target/grid-models/<name>_labels.onnx, from make_grid_models.py): a model that gives decisions
only. Methods that need scores (maft, eidig) are
refused by `fairpipe validate` there; the script runs validate first and records the cell as
"n/a (needs scores)" with validate's message.

Published: scripts/regionft_rq1_baseline.csv (RegionFT's Results/RQ1_baseline_summary.csv, 1,200 s
per run in Python, scikit-learn models on its own encodings of Adult, German Credit and Bank; its
methods overlap ours in sg, grft and aft). Cells map census -> Adult, credit -> Credit,
bank -> Bank; gender -> sex; PersonStatusSex -> sex, AgeInYears -> age; LogReg, DecTree, GBDT, MLP
(the harness publishes no RanForest or COMPAS cells). Published IDIs/s = n_idi / real_time,
tests/s = n_test / real_time, success = prec.

Raw runs are appended to OUT/runs.jsonl (existing runs are reused: an interrupted run resumes, a
wider one adds only what is missing); the aggregate goes to OUT/grid.json and OUT/grid.md.

    nice -n 10 python3 scripts/bench_grid.py --datasets credit --seeds 3 --queries 100000

The binary: --fairpipe, else target/fairpipe-release, else target/fairpipe-debug (copies, so a
later build does not change the binary under a run); which one ran is written into every run and
the table's header (debug seconds are not comparable with release or the published ones).
ONNX Runtime: the exports' LinearClassifier/MLP graphs run on ONNX Runtime; the script sets
ORT_DYLIB_PATH from `scripts/test.sh --provision-only` when it is not set.
"""
import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grid_cells import DATASETS, MODELS  # noqa: E402  (the cells make_grid_models.py trains)

METHODS = {
    'random': '{ samples = 100000000 }',
    'aequitas': '{ global_iterations = 1000, local_iterations = 1000000 }',
    'sg': '{ sample_limit = 1000000 }',
    'maft': '{ global_num = 1000, local_num = 100000 }',
    'eidig': '{ global_num = 1000, local_num = 100000 }',
    'grft': '{ num_seeds = 100, rounds = 0 }',
    'aft': '{ max_tests = 0 }',
}
NEEDS_SCORES = {'maft', 'eidig'}

PUBLISHED_DATASET = {'census': 'Adult', 'credit': 'Credit', 'bank': 'Bank'}
PUBLISHED_PROTECTED = {'gender': 'sex', 'race': 'race', 'age': 'age', 'PersonStatusSex': 'sex', 'AgeInYears': 'age'}

PIPELINE = """[pipeline]
name = "grid"
seed = 1

[stages.data]
kind = "load"
path = "{root}/pipelines/data/{dataset}.csv"
{codes}label = "{label}"
{favourable}
protected = ["{protected}"]
{drop}split_column = "split"

[stages.model]
kind = "load_model"
data = "data"
path = "{model}"

[stages.seeds]
kind = "cluster"
data = "data"
k = 4
seeds = 1000

[stages.search]
kind = "generate"
model = "model"
seeds = "seeds"
plugin = "{method}"
params = {params}
{budget}

[stages.verified]
kind = "verify"
cases = "search"
"""


def model_path(dataset, model, output='scores'):
    name = f'{dataset}_{model}{"_labels" if output == "labels" else ""}.onnx'
    for d in (os.path.join(ROOT, 'tests', 'fixtures', 'onnx', 'grid'), os.path.join(ROOT, 'target', 'grid-models')):
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    raise SystemExit(f'{name}: not in tests/fixtures/onnx/grid/ nor target/grid-models/; run scripts/make_grid_models.py --datasets {dataset}')


def manifest_accuracy(dataset, model):
    path = os.path.join(ROOT, 'tests', 'fixtures', 'onnx', 'grid', 'manifest.json')
    with open(path) as f:
        entry = json.load(f)['exports'].get(f'{dataset}_{model}.onnx')
    return entry['test_accuracy'] if entry else None


def pipeline_text(dataset, model_file, protected, method, params, budget_key, budget):
    """One search run on a bundled dataset: load -> load_model -> cluster -> generate -> verify
    (also scripts/bench_label_only.py's)."""
    label, _, favourable = DATASETS[dataset]
    codes = os.path.join(ROOT, 'pipelines', 'data', f'{dataset}.codes.toml')
    with open(os.path.join(ROOT, 'pipelines', 'data', f'{dataset}.csv')) as f:
        has_row = f.readline().split(',')[0] == 'row'
    return PIPELINE.format(
        root=ROOT, dataset=dataset, label=label, protected=protected, method=method, params=params,
        codes=f'codes = "{codes}"\n' if os.path.exists(codes) else '',
        favourable=f'favourable = "{favourable}"\n' if favourable else '',
        drop='drop = ["row"]\n' if has_row else '',
        model=model_file,
        budget=f'{budget_key} = {budget}')


def binary(arg):
    if arg:
        return os.path.abspath(arg)
    for kind in ('release', 'debug'):
        path = os.path.join(ROOT, 'target', f'fairpipe-{kind}')
        if os.path.exists(path):
            return path
    raise SystemExit('no fairpipe binary: pass --fairpipe or copy one to target/fairpipe-release (or -debug)')


def binary_kind(path):
    # A debug build carries debug assertions; the name of the copy says which it is.
    name = os.path.basename(path)
    return 'release' if 'release' in name or '/release/' in path else ('debug' if 'debug' in name or '/debug/' in path else 'unknown')


def run_one(exe, key, text, work):
    pipeline = os.path.join(work, 'p.toml')
    with open(pipeline, 'w') as f:
        f.write(text)
    env = dict(os.environ, RAYON_NUM_THREADS='1')
    if key['method'] in NEEDS_SCORES and key['output'] == 'labels':
        v = subprocess.run([exe, 'validate', pipeline], capture_output=True, text=True, env=env)
        if v.returncode != 0:
            if 'labels only' not in v.stderr:
                raise SystemExit(f'{key}: validate failed for another reason than scores:\n{v.stderr[-2000:]}')
            return dict(key, na='needs scores', message=(v.stderr or v.stdout).strip().splitlines()[-1][:300])
    out = os.path.join(work, 'out')
    load = os.getloadavg()[0]
    r = subprocess.run([exe, 'run', pipeline, '--seed', str(key['seed']), '--out', out, '--quiet'],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f'{key}: fairpipe failed:\n{r.stderr[-2000:]}')
    with open(os.path.join(out, 'summary.json')) as f:
        s = json.load(f)['stages']
    search, verified = s['search'], s['verified']
    # The export's held-out accuracy as fairpipe reads it must be the one scikit-learn measured on
    # the same rows (make_grid_models.py's manifest): else the encodings differ.
    accuracy, expected = s['model'].get('accuracy_test'), key.get('expected_accuracy')
    if expected is not None and (accuracy is None or abs(accuracy - expected) > 2e-3):
        raise SystemExit(f'{key}: fairpipe reads test accuracy {accuracy}, scikit-learn measured {expected}: the encodings differ')
    if verified['rejected'] != 0 or verified['confirmed'] != search['emitted']:
        raise SystemExit(f'{key}: the host did not confirm every case: {verified}')
    return dict(key, idis=verified['discriminatory_full'], idis_projection=verified['discriminatory'],
                tests=search['generated'], queries=search['queries_asked'], rows_scored=search['rows_scored'],
                secs=search['run_elapsed_s'], accuracy_test=accuracy, executor=s['model'].get('executor'), load_avg_1m=load,
                at=time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()))


def published():
    rows = {}
    with open(os.path.join(ROOT, 'scripts', 'regionft_rq1_baseline.csv')) as f:
        for r in csv.DictReader(line for line in f if not line.startswith('#')):
            t = float(r['real_time'])
            rows[(r['dataset'], r['model'], r['protected'], r['method'])] = dict(
                idis=float(r['n_idi']), idis_s=float(r['n_idi']) / t, tests_s=float(r['n_test']) / t, success=float(r['prec']))
    return rows


def cell_key(r):
    return (r['output'], r['dataset'], r['model'], r['protected'], r['method'], r['budget_key'], r['budget'], r['binary'])


def aggregate(runs, pub, seeds):
    cells = {}
    for r in runs:
        if r['seed'] <= seeds:
            cells.setdefault(cell_key(r), []).append(r)
    out = []
    for (output, dataset, model, protected, method, budget_key, budget, kind), rs in cells.items():
        c = dict(output=output, dataset=dataset, model=model, protected=protected, method=method,
                 budget_key=budget_key, budget=budget, binary=kind, runs=len(rs))
        if any('na' in r for r in rs):
            c['na'] = rs[0]['na']
            c['message'] = rs[0]['message']
        else:
            idis = [r['idis'] for r in rs]
            mean = lambda k: statistics.mean(r[k] for r in rs)  # noqa: E731
            secs = mean('secs')
            c.update(idis=statistics.mean(idis), idis_sd=statistics.stdev(idis) if len(idis) > 1 else 0.0,
                     tests=mean('tests'), queries=mean('queries'), secs=secs,
                     idis_s=statistics.mean(idis) / secs if secs else None, tests_s=mean('tests') / secs if secs else None,
                     success=statistics.mean(idis) / mean('tests') if mean('tests') else None,
                     idis_per_1k_queries=1000 * statistics.mean(idis) / mean('queries') if mean('queries') else None,
                     load_avg_1m=mean('load_avg_1m'), executor=rs[0]['executor'])
        p = pub.get((PUBLISHED_DATASET.get(dataset), model, PUBLISHED_PROTECTED.get(protected), method))
        if p:
            c['published'] = p
        out.append(c)
    return out


def fmt(x, digits=0):
    if x is None:
        return '—'
    return f'{x:,.{digits}f}'


def markdown(cells, header):
    lines = [header, '',
             '| output | dataset | model | protected | method | runs | verified IDIs ± sd | tests | queries | search s | IDIs/s | tests/s | '
             'success | IDIs / 1k queries | published IDIs/s | published tests/s | published success |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    order = {m: i for i, m in enumerate(METHODS)}
    for c in sorted(cells, key=lambda c: (c['output'] == 'labels', list(DATASETS).index(c['dataset']), MODELS.index(c['model']),
                                          DATASETS[c['dataset']][1].index(c['protected']), order[c['method']])):
        p = c.get('published')
        pub = f"{fmt(p['idis_s'])} | {fmt(p['tests_s'])} | {p['success']:.3f}" if p else '— | — | —'
        head = f"| {c['output']} | {c['dataset']} | {c['model']} | {c['protected']} | {c['method']} | {c['runs']} | "
        if 'na' in c:
            lines.append(head + f"n/a ({c['na']}) | | | | | | | | {pub} |")
        else:
            lines.append(head + f"{fmt(c['idis'])} ± {fmt(c['idis_sd'])} | {fmt(c['tests'])} | {fmt(c['queries'])} | {c['secs']:.2f} | "
                         f"{fmt(c['idis_s'])} | {fmt(c['tests_s'])} | {fmt(c['success'], 3) if c['success'] is not None else '—'} | "
                         f"{fmt(c['idis_per_1k_queries'], 1)} | {pub} |")
    return '\n'.join(lines) + '\n'


def pivot(cells, field, digits, published_field=None):
    """One row a cell, one column a method: `field`, and the published figure beside where there is one."""
    methods = list(METHODS)
    rows = {}
    for c in cells:
        rows.setdefault((c['output'], c['dataset'], c['model'], c['protected']), {})[c['method']] = c
    head = '| dataset | model | protected | ' + ' | '.join(methods) + ' |'
    lines = [head, '|' + '---|' * (3 + len(methods))]
    for (output, dataset, model, protected) in sorted(rows, key=lambda k: (k[0] == 'labels', list(DATASETS).index(k[1]), MODELS.index(k[2]),
                                                                          DATASETS[k[1]][1].index(k[3]))):
        out = []
        for m in methods:
            c = rows[(output, dataset, model, protected)].get(m)
            if c is None:
                out.append('')
            elif 'na' in c:
                out.append(f"n/a ({c['na']})")
            else:
                v = fmt(c[field], digits) if c.get(field) is not None else '—'
                p = c.get('published')
                out.append(f"{v} ({fmt(p[published_field], digits if published_field == 'success' else 0)})" if p and published_field else v)
        label = f'{dataset}{" (labels)" if output == "labels" else ""}'
        lines.append(f'| {label} | {model} | {protected} | ' + ' | '.join(out) + ' |')
    return '\n'.join(lines) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--fairpipe')
    ap.add_argument('--datasets', nargs='*', default=list(DATASETS))
    ap.add_argument('--models', nargs='*', default=MODELS)
    ap.add_argument('--methods', nargs='*', default=list(METHODS))
    ap.add_argument('--protected', nargs='*', help='only these protected attributes')
    ap.add_argument('--output', choices=['scores', 'labels'], default='scores')
    ap.add_argument('--seeds', type=int, default=3)
    budget = ap.add_mutually_exclusive_group()
    budget.add_argument('--queries', type=int, help='model-query budget per run (max_queries; default 100,000)')
    budget.add_argument('--seconds', type=float, help='time budget per run instead (max_seconds)')
    ap.add_argument('--out-dir', default=os.path.join(ROOT, 'docs', 'grid'))
    ap.add_argument('--report-only', action='store_true', help='rebuild grid.json/grid.md from runs.jsonl')
    args = ap.parse_args()
    budget_key, budget_value = ('max_seconds', args.seconds) if args.seconds else ('max_queries', args.queries or 100_000)
    exe = binary(args.fairpipe)
    kind = binary_kind(exe)
    if 'ORT_DYLIB_PATH' not in os.environ:
        shell = subprocess.run(['bash', os.path.join(ROOT, 'scripts', 'test.sh'), '--provision-only'], capture_output=True, text=True, cwd=ROOT).stdout
        for line in shell.splitlines():
            if line.startswith('export ORT_DYLIB_PATH='):
                os.environ['ORT_DYLIB_PATH'] = line.split('=', 1)[1].strip().strip('"\'')
    os.makedirs(args.out_dir, exist_ok=True)
    runs_path = os.path.join(args.out_dir, 'runs.jsonl')
    runs = []
    if os.path.exists(runs_path):
        with open(runs_path) as f:
            runs = [json.loads(line) for line in f if line.strip()]
    have = {cell_key(r) + (r['seed'],) for r in runs}
    if not args.report_only:
        with tempfile.TemporaryDirectory() as work, open(runs_path, 'a') as f:
            for dataset in args.datasets:
                for model in args.models:
                    for protected in DATASETS[dataset][1]:
                        if args.protected and protected not in args.protected:
                            continue
                        for method in args.methods:
                            for seed in range(1, args.seeds + 1):
                                key = dict(output=args.output, dataset=dataset, model=model, protected=protected, method=method,
                                           budget_key=budget_key, budget=budget_value, binary=kind, seed=seed)
                                key_run_extra = {'binary_path': exe}
                                if cell_key(key) + (seed,) in have:
                                    continue
                                key_run = dict(key, expected_accuracy=manifest_accuracy(dataset, model))
                                text = pipeline_text(dataset, model_path(dataset, model, args.output), protected, method, METHODS[method],
                                                     budget_key, budget_value)
                                r = run_one(exe, key_run, text, work)
                                r.pop('expected_accuracy', None)
                                r.update(key_run_extra)
                                f.write(json.dumps(r) + '\n')
                                f.flush()
                                runs.append(r)
                                print(f"{dataset} {model} {protected} {method} seed {seed}: "
                                      + (f"n/a ({r['na']})" if 'na' in r else f"{r['idis']} IDIs, {r['tests']} tests, {r['secs']:.2f} s"),
                                      flush=True)
    cells = aggregate(runs, published(), args.seeds)
    loads = [r['load_avg_1m'] for r in runs if 'load_avg_1m' in r]
    binaries = sorted({f"{r['binary']} ({os.path.relpath(r.get('binary_path', exe), ROOT)})" for r in runs})
    budgets = ', '.join(sorted({f"{r['budget_key']} = {r['budget']:,}" for r in runs}))
    header = (f"fairpipe binaries: {', '.join(binaries)}; budgets: {budgets} per run; seeds 1..{args.seeds}; "
              f"one rayon thread; machine: {os.cpu_count()} cores, {platform.machine()}, 1-minute load average at the runs' "
              f"starts {min(loads):.1f}–{max(loads):.1f} (mean {statistics.mean(loads):.1f})." if loads else 'no runs')
    with open(os.path.join(args.out_dir, 'grid.json'), 'w') as f:
        json.dump({'header': header, 'cells': cells}, f, indent=1)
        f.write('\n')
    table = markdown(cells, header)
    pivots = ('\n### IDIs per 1,000 model queries\n\n' + pivot(cells, 'idis_per_1k_queries', 1)
              + '\n### IDIs per second (published RegionFT IDIs/s in brackets)\n\n' + pivot(cells, 'idis_s', 0, 'idis_s')
              + '\n### Success rate, IDIs / tests (published in brackets)\n\n' + pivot(cells, 'success', 3, 'success'))
    with open(os.path.join(args.out_dir, 'grid.md'), 'w') as f:
        f.write(table + pivots)
    print(table + pivots)


if __name__ == '__main__':
    main()
