#!/usr/bin/env python3
"""The label-only searches (grft, aft) against their reference code at a fixed budget of model rows
(docs/benchmarks.md, "GRFT and AFT against their reference code").

For each cell (method, benchmark, budget) it runs fairpipe's plugin with pipeline seeds 1..N
(`max_queries` = the budget, one rayon thread) and the reference code ported to numpy
(scripts/reference_ports/{grft,aft}_reference.py) with seeds 1..N at the same budget of rows asked
of the model, and prints a markdown table: distinct IDIs (full instances and non-protected
projections), rows asked, search seconds, inputs tested per second and IDIs per second, and the
ratios. Raw per-run figures are appended as JSON lines to OUT_DIR/<method>-<bench>-{fairpipe,reference}.jsonl
(existing lines are reused, so an interrupted run resumes).

    python3 scripts/bench_label_only.py --fairpipe target/debug/fairpipe --seeds 30 [--cells grft:census-gender ...]

Tests are inputs checked: fairpipe's distinct inputs (`generated`), the reference's every input it
checked (repeats included; for AFT its #Test, input pairs). fairpipe's seconds are the search
stage's wall time (one thread); the reference's are its process CPU time (the machine is shared; wall time would charge the reference for others' load). Needs the
Python of the reference ports (numpy, onnx, scikit-learn) for the reference runs.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_grid import pipeline_text  # noqa: E402

# bench: (data file, protected column, reference benchmark name)
BENCH = {'census-gender': ('census', 'gender'), 'census-race': ('census', 'race'), 'census-age': ('census', 'age')}

# method: (plugin params without a budget, rows budget, reference script, reference extra args)
CELLS = {
    'grft': ('{ num_seeds = 100, rounds = 0 }', 500_000, 'grft_reference.py', ['100']),
    'aft': ('{ max_tests = 0 }', 200_000, 'aft_reference.py', []),
}



def runs(path):
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip().startswith('{')]


def fairpipe_run(exe, method, bench, seed, work):
    data, protected = BENCH[bench]
    params, budget, _, _ = CELLS[method]
    text = pipeline_text(data, os.path.join(ROOT, 'pipelines', 'models', f'{data}.onnx'), protected, method, params, 'max_queries', budget)
    pipeline = os.path.join(work, 'p.toml')
    open(pipeline, 'w').write(text)
    out = os.path.join(work, 'out')
    env = dict(os.environ, RAYON_NUM_THREADS='1')
    subprocess.run([exe, 'run', pipeline, '--seed', str(seed), '--out', out, '--quiet'], check=True, env=env, stdout=subprocess.DEVNULL)
    s = json.load(open(os.path.join(out, 'summary.json')))['stages']
    search, verified = s['search'], s['verified']
    assert verified['rejected'] == 0 and verified['confirmed'] == search['emitted'], verified
    run = dict(seed=seed, ids=verified['discriminatory_full'], ids_projection=verified['discriminatory'],
               tests=search['generated'], rows_asked=search['queries_asked'], model_rows=search['rows_scored'],
               secs=search['run_elapsed_s'])
    # AFT's own figures, as the reference port counts them (its tests: inputs checked, repeats included)
    for key, name in (('loops', 'loops'), ('restarts', 'restarts'), ('tests', 'tests_all'), ('path_pairs', 'path_pairs')):
        if key in search:
            run[name] = search[key]
    return run


def reference_run(python, method, bench, seed):
    _, budget, script, extra = CELLS[method]
    cmd = [python, os.path.join(ROOT, 'scripts', 'reference_ports', script), bench, str(budget), str(seed)] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def mean_sd(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return float('nan'), float('nan')
    return statistics.mean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--fairpipe', default=os.path.join(ROOT, 'target', 'debug', 'fairpipe'))
    ap.add_argument('--python', default=sys.executable)
    ap.add_argument('--seeds', type=int, default=30)
    ap.add_argument('--cells', nargs='*', default=['grft:census-gender', 'aft:census-gender'])
    ap.add_argument('--out-dir', default=os.path.join(ROOT, 'benches', 'label-only'))
    ap.add_argument('--skip-reference', action='store_true')
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    rows = []
    for cell in args.cells:
        method, bench = cell.split(':')
        fp_path = os.path.join(args.out_dir, f'{method}-{bench}-fairpipe.jsonl')
        ref_path = os.path.join(args.out_dir, f'{method}-{bench}-reference.jsonl')
        have = {r['seed'] for r in runs(fp_path)}
        with tempfile.TemporaryDirectory() as work, open(fp_path, 'a') as f:
            for seed in range(1, args.seeds + 1):
                if seed not in have:
                    f.write(json.dumps(fairpipe_run(args.fairpipe, method, bench, seed, work)) + '\n')
                    f.flush()
        if not args.skip_reference:
            have = {r['seed'] for r in runs(ref_path)}
            with open(ref_path, 'a') as f:
                for seed in range(1, args.seeds + 1):
                    if seed not in have:
                        f.write(json.dumps(reference_run(args.python, method, bench, seed)) + '\n')
                        f.flush()
        fp = [r for r in runs(fp_path) if r['seed'] <= args.seeds]
        ref = [r for r in runs(ref_path) if r['seed'] <= args.seeds]
        rows.append((method, bench, CELLS[method][1], fp, ref))
    print('| method | benchmark | rows budget | runs (fairpipe / reference) | IDIs fairpipe ± sd | IDIs reference ± sd | '
          'projections fairpipe / reference | fairpipe s | reference CPU s | tests/s fairpipe | tests/s reference | tests/s ratio | IDIs/s fairpipe | IDIs/s reference | IDIs/s ratio |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    for method, bench, budget, fp, ref in rows:
        (fi, fsd), (ri, rsd) = mean_sd([r['ids'] for r in fp]), mean_sd([r['ids'] for r in ref])
        fpj, rpj = mean_sd([r['ids_projection'] for r in fp])[0], mean_sd([r['ids_projection'] for r in ref])[0]
        fs, rs = mean_sd([r['secs'] for r in fp])[0], mean_sd([r['cpu_secs'] for r in ref])[0]
        ft, rt = mean_sd([r['tests'] for r in fp])[0], mean_sd([r['tests'] for r in ref])[0]
        f_rate, r_rate = ft / fs, rt / rs
        print(f'| {method} | {bench} | {budget:,} | {len(fp)} / {len(ref)} | {fi:,.0f} ± {fsd:,.0f} | {ri:,.0f} ± {rsd:,.0f} | '
              f'{fpj:,.0f} / {rpj:,.0f} | {fs:.3f} | {rs:.2f} | {f_rate:,.0f} | {r_rate:,.0f} | {f_rate / r_rate:,.1f}× | '
              f'{fi / fs:,.0f} | {ri / rs:,.0f} | {(fi / fs) / (ri / rs):,.1f}× |')
    # How the runs spent their rows, where both sides count it (AFT: loops of Algorithm 2, fresh
    # training sets, input pairs checked with repeats).
    shown = [(m, b, fp, ref) for m, b, _, fp, ref in rows if any('restarts' in r for r in fp)]
    if shown:
        print()
        print('| method | benchmark | IDIs median fairpipe / reference | loops fairpipe / reference | restarts fairpipe / reference | '
              'inputs checked (repeats included) fairpipe / reference |')
        print('|---|---|---|---|---|---|')
        for method, bench, fp, ref in shown:
            fp = [r for r in fp if 'restarts' in r]
            med = lambda rs: statistics.median(r['ids'] for r in rs) if rs else float('nan')
            mean = lambda rs, k: mean_sd([r.get(k) for r in rs])[0]
            print(f'| {method} | {bench} | {med(fp):,.0f} / {med(ref):,.0f} (of {len(fp)} / {len(ref)}) | {mean(fp, "loops"):.1f} / {mean(ref, "loops"):.1f} | '
                  f'{mean(fp, "restarts"):.2f} / {mean(ref, "restarts"):.2f} | {mean(fp, "tests_all"):,.0f} / {mean(ref, "tests"):,.0f} |')


if __name__ == '__main__':
    main()
