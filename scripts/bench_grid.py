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
wider one adds only what is missing); the aggregate goes to OUT/grid.json and OUT/grid.md. Every
run records its binary's kind and sha256; the tables hold the runs of one kind only (the binary's,
or --binary-kind), so debug and release seconds never meet in a cell. Every run also records the
whole fairpipe process's CPU time (`process_cpu_s`: load, cluster, search, verify, report) beside
the search's wall time (`secs`), `model_time_s` and `stopped_by`.

`--reference` runs, instead of fairpipe, the numpy ports of GRFT and AFT
(scripts/reference_ports/grid_reference.py, the same cells' exports under onnxruntime in Python)
for the grft/aft cells selected, at the same `--queries` budget of model rows, appending to
OUT/reference.jsonl; grid.md then compares them seed for seed with fairpipe's runs of the same
cell and budget (IDIs mean ± sd; tests/s and IDIs/s on fairpipe's search wall time against the
port's search CPU time; the published harness tests/s beside).

    nice -n 10 python3 scripts/bench_grid.py --datasets credit --seeds 3 --queries 100000

The binary: --fairpipe, else target/fairpipe-release, else target/fairpipe-debug (copies, so a
later build does not change the binary under a run); which one ran is written into every run and
the table's header (debug seconds are not comparable with release or the published ones).
ONNX Runtime: the exports' LinearClassifier/MLP graphs run on ONNX Runtime; the script sets
ORT_DYLIB_PATH from `scripts/test.sh --provision-only` when it is not set.
"""
import argparse
import csv
import hashlib
import json
import os
import platform
import resource
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
    """(scikit-learn's test accuracy, how far fairpipe's may be from it): 2e-3, plus the share of
    test rows a tie at p = 0.5 may flip (scikit-learn calls a tie class 0, ONNX Runtime and
    fairpipe's tree executor class 1; the manifest counts the tied rows of the whole file)."""
    path = os.path.join(ROOT, 'tests', 'fixtures', 'onnx', 'grid', 'manifest.json')
    with open(path) as f:
        entry = json.load(f)['exports'].get(f'{dataset}_{model}.onnx')
    if not entry:
        return None, None
    with open(os.path.join(ROOT, 'pipelines', 'data', f'{dataset}.csv')) as f:
        test_rows = sum(1 for line in f if line.rstrip('\r\n').endswith(',test'))
    return entry['test_accuracy'], 2e-3 + entry.get('rows_tied_at_half', 0) / max(test_rows, 1)


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


def binary_sha(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()[:12]


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
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([exe, 'run', pipeline, '--seed', str(key['seed']), '--out', out, '--quiet'],
                       capture_output=True, text=True, env=env)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        if 'did not return within' in r.stderr:  # a plugin that overran max_seconds: the cell's figure
            return dict(key, na='did not stop at max_seconds', message=r.stderr.strip().splitlines()[-1][:300],
                        at=time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()))
        raise SystemExit(f'{key}: fairpipe failed:\n{r.stderr[-2000:]}')
    with open(os.path.join(out, 'summary.json')) as f:
        s = json.load(f)['stages']
    search, verified = s['search'], s['verified']
    # The export's held-out accuracy as fairpipe reads it must be the one scikit-learn measured on
    # the same rows (make_grid_models.py's manifest): else the encodings differ.
    accuracy, (expected, tolerance) = s['model'].get('accuracy_test'), key.get('expected_accuracy', (None, None))
    if expected is not None and (accuracy is None or abs(accuracy - expected) > tolerance):
        raise SystemExit(f'{key}: fairpipe reads test accuracy {accuracy}, scikit-learn measured {expected}: the encodings differ')
    if verified['rejected'] != 0 or verified['confirmed'] != search['emitted']:
        raise SystemExit(f'{key}: the host did not confirm every case: {verified}')
    return dict(key, idis=verified['discriminatory_full'], idis_projection=verified['discriminatory'],
                tests=search['generated'], queries=search['queries_asked'], rows_scored=search['rows_scored'],
                secs=search['run_elapsed_s'], model_time_s=search.get('model_time_s'), stopped_by=search.get('stopped_by'),
                # the whole fairpipe process (load, cluster, search, verify, report), user + system CPU
                process_cpu_s=round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 3),
                accuracy_test=accuracy, executor=s['model'].get('executor'), load_avg_1m=load,
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
            if all(r.get('process_cpu_s') is not None for r in rs):
                c['process_cpu_s'] = mean('process_cpu_s')
        p = pub.get((PUBLISHED_DATASET.get(dataset), model, PUBLISHED_PROTECTED.get(protected), method))
        if p:
            c['published'] = p
        out.append(c)
    return out


def fmt(x, digits=0):
    if x is None:
        return '—'
    return f'{x:,.{digits}f}'


def budget_title(budget_key, budget):
    return f'{budget:,} model rows asked a run (`max_queries`)' if budget_key == 'max_queries' else f'{budget:g} s a run (`max_seconds`)'


def sort_key(c):
    order = {m: i for i, m in enumerate(METHODS)}
    return (c['output'] == 'labels', list(DATASETS).index(c['dataset']), MODELS.index(c['model']),
            DATASETS[c['dataset']][1].index(c['protected']), order[c['method']])


def markdown(cells):
    """The full table, one a budget."""
    lines = []
    for budget_key, budget in sorted({(c['budget_key'], c['budget']) for c in cells}):
        lines += [f'### {budget_title(budget_key, budget)}', '',
                  '| output | dataset | model | protected | method | runs | verified IDIs ± sd | tests | queries | search s | IDIs/s | tests/s | '
                  'success | IDIs / 1k queries | fairpipe process CPU s | published IDIs/s | published tests/s | published success |',
                  '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
        for c in sorted((c for c in cells if (c['budget_key'], c['budget']) == (budget_key, budget)), key=sort_key):
            p = c.get('published')
            pub = f"{fmt(p['idis_s'])} | {fmt(p['tests_s'])} | {p['success']:.3f}" if p else '— | — | —'
            head = f"| {c['output']} | {c['dataset']} | {c['model']} | {c['protected']} | {c['method']} | {c['runs']} | "
            if 'na' in c:
                lines.append(head + f"n/a ({c['na']}) | | | | | | | | | {pub} |")
            else:
                lines.append(head + f"{fmt(c['idis'])} ± {fmt(c['idis_sd'])} | {fmt(c['tests'])} | {fmt(c['queries'])} | {c['secs']:.2f} | "
                             f"{fmt(c['idis_s'])} | {fmt(c['tests_s'])} | {fmt(c['success'], 3) if c['success'] is not None else '—'} | "
                             f"{fmt(c['idis_per_1k_queries'], 1)} | {fmt(c.get('process_cpu_s'), 2)} | {pub} |")
        lines.append('')
    return '\n'.join(lines)


def pivot(cells, field, digits, published_field=None):
    """One row a cell, one column a method: `field`, and the published figure beside where there is one."""
    methods = [m for m in METHODS if any(c['method'] == m for c in cells)]
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


def pivots(cells):
    text = ''
    for budget_key, budget in sorted({(c['budget_key'], c['budget']) for c in cells}):
        cs = [c for c in cells if (c['budget_key'], c['budget']) == (budget_key, budget)]
        title = budget_title(budget_key, budget)
        if budget_key == 'max_queries':
            text += f'\n### IDIs per 1,000 model queries ({title})\n\n' + pivot(cs, 'idis_per_1k_queries', 1)
        else:
            text += f'\n### Verified IDIs ({title})\n\n' + pivot(cs, 'idis', 0)
        text += (f'\n### IDIs per second ({title}; published RegionFT IDIs/s in brackets)\n\n' + pivot(cs, 'idis_s', 0, 'idis_s')
                 + f'\n### Success rate, IDIs / tests ({title}; published in brackets)\n\n' + pivot(cs, 'success', 3, 'success'))
    return text


# ---- the reference ports on grid cells (scripts/reference_ports/grid_reference.py) ----
REFERENCE_METHODS = ('grft', 'aft')


def reference_key(r):
    return (r['dataset'], r['model'], r['protected'], r['method'], r['max_rows'], r['seed'])


def reference_run(python, method, dataset, model, protected, max_rows, seed):
    """One port run (its search wall `secs` and search process CPU `cpu_secs`, one thread)."""
    cmd = [python, os.path.join(ROOT, 'scripts', 'reference_ports', 'grid_reference.py'), method, dataset, model, protected,
           str(max_rows), str(seed)]
    env = dict(os.environ, OMP_NUM_THREADS='1', OPENBLAS_NUM_THREADS='1', MKL_NUM_THREADS='1')
    load = os.getloadavg()[0]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f'{" ".join(cmd)}: failed:\n{r.stderr[-2000:]}')
    return dict(json.loads(r.stdout.strip().splitlines()[-1]), dataset=dataset, model=model, protected=protected, method=method,
                load_avg_1m=load, at=time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()))


def mean_sd(xs):
    return statistics.mean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def reference_table(runs, refs, pub, kind):
    """fairpipe's grft/aft against the port on the same cell and budget of model rows: IDIs mean ± sd
    over the seeds both have, tests/s and IDIs/s (fairpipe: search wall time; the port: search
    process CPU time), and the published harness tests/s beside."""
    lines = ['| cell | method | rows budget | seeds | IDIs fairpipe ± sd | IDIs port ± sd | fairpipe / port | '
             'fairpipe search s (wall; process CPU) | port search s (CPU; wall) | tests/s fairpipe | tests/s port | tests/s ratio | '
             'tests/s ratio on fairpipe process CPU | IDIs/s fairpipe | IDIs/s port | IDIs/s ratio | published tests/s | fairpipe / published tests/s |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    rows = []
    cells = sorted({k[:5] for k in (reference_key(r) for r in refs)},
                   key=lambda k: (list(DATASETS).index(k[0]), MODELS.index(k[1]), k[2], k[3], k[4]))
    for dataset, model, protected, method, budget in cells:
        ours = {r['seed']: r for r in runs if (r['output'], r['dataset'], r['model'], r['protected'], r['method'], r['budget_key'], r['budget'],
                                               r['binary']) == ('scores', dataset, model, protected, method, 'max_queries', budget, kind)}
        theirs = {r['seed']: r for r in refs if reference_key(r)[:5] == (dataset, model, protected, method, budget)}
        seeds = sorted(set(ours) & set(theirs))
        if not seeds:
            continue
        o = [ours[s] for s in seeds]
        t = [theirs[s] for s in seeds]
        (om, osd), (tm, tsd) = mean_sd([r['idis'] for r in o]), mean_sd([r['ids'] for r in t])
        o_s, t_cpu, t_wall = (statistics.mean(r[k] for r in rs) for rs, k in ((o, 'secs'), (t, 'cpu_secs'), (t, 'secs')))
        o_cpu = statistics.mean(r['process_cpu_s'] for r in o)
        o_tests_s, t_tests_s = statistics.mean(r['tests'] for r in o) / o_s, statistics.mean(r['tests'] for r in t) / t_cpu
        o_tests_cpu = statistics.mean(r['tests'] for r in o) / o_cpu
        o_idis_s, t_idis_s = om / o_s, tm / t_cpu
        p = pub.get((PUBLISHED_DATASET.get(dataset), model, PUBLISHED_PROTECTED.get(protected), method))
        row = dict(dataset=dataset, model=model, protected=protected, method=method, budget=budget, seeds=len(seeds),
                   idis=om, idis_sd=osd, port_idis=tm, port_idis_sd=tsd, secs=o_s, process_cpu_s=o_cpu, port_cpu_s=t_cpu, port_wall_s=t_wall,
                   tests_s=o_tests_s, port_tests_s=t_tests_s, idis_s=o_idis_s, port_idis_s=t_idis_s,
                   published_tests_s=p['tests_s'] if p else None)
        rows.append(row)
        lines.append(f'| {dataset} {model} {protected} | {method} | {budget:,} | {len(seeds)} | {fmt(om)} ± {fmt(osd)} | {fmt(tm)} ± {fmt(tsd)} | '
                     f'{om / tm:.2f} | {o_s:.3f}; {o_cpu:.2f} | {t_cpu:.2f}; {t_wall:.2f} | {fmt(o_tests_s)} | {fmt(t_tests_s)} | {o_tests_s / t_tests_s:.1f}× | '
                     f'{o_tests_cpu / t_tests_s:.1f}× | '
                     f'{fmt(o_idis_s)} | {fmt(t_idis_s)} | {o_idis_s / t_idis_s:.1f}× | '
                     + (f"{fmt(p['tests_s'])} | {o_tests_s / p['tests_s']:.1f}× |" if p else '— | — |'))
    return rows, '\n'.join(lines) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--fairpipe')
    ap.add_argument('--datasets', nargs='*', default=list(DATASETS))
    ap.add_argument('--models', nargs='*', default=MODELS)
    ap.add_argument('--methods', nargs='*', default=list(METHODS))
    ap.add_argument('--protected', nargs='*', help='only these protected attributes')
    ap.add_argument('--output', choices=['scores', 'labels'], default='scores')
    ap.add_argument('--seeds', type=int, default=3)
    ap.add_argument('--first-seed', type=int, default=1, help='run seeds FIRST..SEEDS (the report counts seeds 1..SEEDS)')
    budget = ap.add_mutually_exclusive_group()
    budget.add_argument('--queries', type=int, help='model-query budget per run (max_queries; default 100,000)')
    budget.add_argument('--seconds', type=float, help='time budget per run instead (max_seconds)')
    ap.add_argument('--out-dir', default=os.path.join(ROOT, 'docs', 'grid'))
    ap.add_argument('--report-only', action='store_true', help='rebuild grid.json/grid.md from runs.jsonl')
    ap.add_argument('--reference', action='store_true',
                    help='run the reference ports (grft, aft among --methods) on the cells instead of fairpipe (OUT/reference.jsonl)')
    ap.add_argument('--reference-python', default=os.path.expanduser('~/.cache/fairpipe/trees-venv/bin/python'),
                    help='a Python with numpy, onnx, onnxruntime, scikit-learn')
    ap.add_argument('--report-seeds', type=int, help='seeds 1..N in the grid tables (default --seeds)')
    ap.add_argument('--binary-kind', choices=['release', 'debug'], help="the runs the tables hold (default: the binary's kind)")
    args = ap.parse_args()
    budget_key, budget_value = ('max_seconds', args.seconds) if args.seconds else ('max_queries', args.queries or 100_000)
    runs_fairpipe = not (args.reference or args.report_only)
    exe = binary(args.fairpipe) if runs_fairpipe or not args.binary_kind else None
    kind = args.binary_kind or binary_kind(exe)
    sha = binary_sha(exe) if exe else None
    if 'ORT_DYLIB_PATH' not in os.environ:
        shell = subprocess.run(['bash', os.path.join(ROOT, 'scripts', 'test.sh'), '--provision-only'], capture_output=True, text=True, cwd=ROOT).stdout
        for line in shell.splitlines():
            if line.startswith('export ORT_DYLIB_PATH='):
                os.environ['ORT_DYLIB_PATH'] = line.split('=', 1)[1].strip().strip('"\'')
    os.makedirs(args.out_dir, exist_ok=True)
    runs_path = os.path.join(args.out_dir, 'runs.jsonl')
    refs_path = os.path.join(args.out_dir, 'reference.jsonl')
    runs, refs = [], []
    if os.path.exists(runs_path):
        with open(runs_path) as f:
            runs = [json.loads(line) for line in f if line.strip()]
    if os.path.exists(refs_path):
        with open(refs_path) as f:
            refs = [json.loads(line) for line in f if line.strip()]
    have = {cell_key(r) + (r['seed'],) for r in runs}
    have_refs = {reference_key(r) for r in refs}
    todo = [(dataset, model, protected, method, seed)
            for dataset in args.datasets for model in args.models for protected in DATASETS[dataset][1]
            if not args.protected or protected in args.protected
            for method in args.methods for seed in range(args.first_seed, args.seeds + 1)]
    if args.reference and not args.report_only:
        if budget_key != 'max_queries':
            raise SystemExit('--reference runs at a budget of model rows (--queries)')
        with open(refs_path, 'a') as f:
            for dataset, model, protected, method, seed in todo:
                if method not in REFERENCE_METHODS or (dataset, model, protected, method, budget_value, seed) in have_refs:
                    continue
                r = reference_run(args.reference_python, method, dataset, model, protected, budget_value, seed)
                f.write(json.dumps(r) + '\n')
                f.flush()
                refs.append(r)
                print(f"port {method} {dataset} {model} {protected} seed {seed}: {r['ids']} IDIs, {r['tests']} tests, "
                      f"{r['cpu_secs']:.2f} CPU s", flush=True)
    elif runs_fairpipe:
        with tempfile.TemporaryDirectory() as work, open(runs_path, 'a') as f:
            for dataset, model, protected, method, seed in todo:
                key = dict(output=args.output, dataset=dataset, model=model, protected=protected, method=method,
                           budget_key=budget_key, budget=budget_value, binary=kind, seed=seed)
                if cell_key(key) + (seed,) in have:
                    continue
                key_run = dict(key, expected_accuracy=manifest_accuracy(dataset, model))
                text = pipeline_text(dataset, model_path(dataset, model, args.output), protected, method, METHODS[method],
                                     budget_key, budget_value)
                r = run_one(exe, key_run, text, work)
                r.pop('expected_accuracy', None)
                r.update(binary_path=exe, binary_sha256=sha)
                f.write(json.dumps(r) + '\n')
                f.flush()
                runs.append(r)
                print(f"{dataset} {model} {protected} {method} seed {seed}: "
                      + (f"n/a ({r['na']})" if 'na' in r else f"{r['idis']} IDIs, {r['tests']} tests, {r['secs']:.2f} s"),
                      flush=True)
    # The tables hold one kind of binary only (debug seconds are not release seconds).
    runs = [r for r in runs if r['binary'] == kind]
    report_seeds = args.report_seeds or args.seeds
    cells = aggregate(runs, published(), report_seeds)
    loads = [r['load_avg_1m'] for r in runs if 'load_avg_1m' in r]
    binaries = sorted({f"{r['binary']} (sha256 {r.get('binary_sha256', '?')})" for r in runs})
    budgets = ', '.join(sorted({budget_title(r['budget_key'], r['budget']) for r in runs}))
    header = (f"fairpipe binary: {', '.join(binaries)}; budgets: {budgets}; seeds 1..{report_seeds} (fewer where a cell's runs column says so); "
              f"one rayon thread; machine: {os.cpu_count()} cores, {platform.machine()}, 1-minute load average at the runs' "
              f"starts {min(loads):.1f}–{max(loads):.1f} (mean {statistics.mean(loads):.1f}). 'search s' is the generate stage's wall time "
              f"(run_elapsed_s); IDIs/s and tests/s divide by it; 'fairpipe process CPU s' is the whole process's user + system CPU "
              f"(load, cluster, search, verify, report)." if loads else 'no runs')
    ref_rows, ref_table = reference_table(runs, refs, published(), kind)
    with open(os.path.join(args.out_dir, 'grid.json'), 'w') as f:
        json.dump({'header': header, 'cells': cells, 'reference_ports': ref_rows}, f, indent=1)
        f.write('\n')
    text = (header + '\n\n' + markdown(cells) + pivots(cells)
            + ('\n### fairpipe against the reference ports (same cell, same budget of model rows, same seeds)\n\n'
               'fairpipe: the search stage\'s wall time; the port: its search\'s process CPU time (then its wall time), '
               'one thread each. Published: RegionFT\'s harness on its own encoding of the cell (1,200 s runs).\n\n'
               + ref_table if ref_rows else ''))
    with open(os.path.join(args.out_dir, 'grid.md'), 'w') as f:
        f.write(text)
    print(text)


if __name__ == '__main__':
    main()
