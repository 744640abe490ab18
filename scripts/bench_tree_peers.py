#!/usr/bin/env python3
"""fairpipe's tree executor beside the libraries a user might score tree ensembles with instead
(issue 62 item 1): the same models, the same census rows, each library given its own native form
of the model. Run by hand, never by CI:

    python3 -m venv ~/.cache/fairpipe/tree-peers-venv
    nice -n 15 ~/.cache/fairpipe/tree-peers-venv/bin/pip install -r scripts/requirements-tree-peers.txt
    nice -n 15 ~/.cache/fairpipe/tree-peers-venv/bin/pip install --no-deps torch==2.15.0   # hummingbird-ml's
    cargo build --release --locked
    eval "$(bash scripts/test.sh --provision-only)"   # ORT_DYLIB_PATH, for fairpipe through ONNX Runtime
    ~/.cache/fairpipe/tree-peers-venv/bin/python scripts/bench_tree_peers.py --fairpipe target/release/fairpipe \\
        --build "release, COMMIT" [--rounds 1] [--seconds 2] [--models lgb100,...] [--libraries lleaves,...]

Models (trained by this script on the `train` split of pipelines/data/census.csv, coded with
pipelines/data/census.codes.toml as make_tree_fixtures.py does; seeds fixed): LightGBM of 100 and
500 trees with categorical splits on the six coded categorical columns, XGBoost of 200 and 500
trees, a scikit-learn RandomForest (100 trees) and a HistGradientBoosting classifier (200
iterations). Each is written to the work folder (default target/tree-peers/) as ONNX (onnxmltools,
skl2onnx), as its own model file (LightGBM's text file, which lleaves compiles; XGBoost's JSON), and
compiled to a shared library by treelite + tl2cgen with gcc.

Libraries (where they run the model): `fairpipe-native` and `fairpipe-onnxruntime` (the fairpipe
binary's `model-speed`, scoring the ONNX export through the oracle the audit uses, the rows read from
census.csv as a `load` stage reads them; `fairpipe-native` runs with ONNX Runtime hidden, as a user
without it, so that its peak memory is its own), `onnxruntime` (Python), `lightgbm` (Booster.predict),
`xgboost` (Booster.inplace_predict), `sklearn` (predict_proba), `lleaves`, `treelite` (tl2cgen's
Predictor) and `hummingbird` (hummingbird-ml on PyTorch, CPU).

Rows: all 48,842 census rows, scored in batches of 1,000, 16,000 and all of them, passes over the
rows repeated until --seconds of wall time have passed; one thread and all threads. Each
(library, model, batch, threads) runs in its own process, so that its peak memory (max RSS, from
os.wait4 in a launcher that imports nothing, whose own ~8 MB are the floor: Linux starts a child's
max RSS from its parent's) is its own: the interpreter or the binary, the library, the model and
the rows. Rows
reach each library as it takes them, converted once before the timing (float32 for ONNX Runtime,
XGBoost, treelite and PyTorch; float64 for lleaves, LightGBM and scikit-learn); a wrapper a library
wants per call (tl2cgen's DMatrix) is made inside the timed loop. Timed: the scoring loop alone,
after one warm-up call, by the process's CPU time (time.process_time; fairpipe: every thread's
schedstat) and the wall clock.

The figure published: rows per CPU second on one thread (the machine is shared: CPU time does not
count the time others held the core), rows per wall second on all threads. Every record holds both,
and `max_abs_dp`: the largest |P − P_model| over all rows of the first pass, against the model's own
predict_proba in float64, so a library that scores wrongly cannot post a fast figure. A library that
cannot run a model (or cannot be installed) gets a record with its `error`. Records are appended to
docs/figures/trees/peers/runs.jsonl with the provenance of scripts/figures_meta.py (`program` is the
fairpipe binary for fairpipe's lines, this script for the others; `uptime` is read after each
measure).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_meta import meta  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / 'docs' / 'figures' / 'trees' / 'peers' / 'runs.jsonl'
CENSUS = ROOT / 'pipelines' / 'data' / 'census.csv'
CODES = ROOT / 'pipelines' / 'data' / 'census.codes.toml'
FEATURES = [
    'age', 'workclass', 'educational-num', 'marital-status', 'occupation', 'relationship', 'race', 'gender',
    'capital-gain', 'capital-loss', 'hours-per-week', 'native-country',
]
CATEGORICAL = ['workclass', 'marital-status', 'occupation', 'relationship', 'race', 'native-country']

# name: (family, what), in the order the tables list them.
MODELS = {
    'lgb100': ('lightgbm', 'LightGBM, 100 trees, categorical splits'),
    'lgb500': ('lightgbm', 'LightGBM, 500 trees, categorical splits'),
    'xgb200': ('xgboost', 'XGBoost, 200 trees'),
    'xgb500': ('xgboost', 'XGBoost, 500 trees'),
    'rf': ('sklearn', 'scikit-learn RandomForest, 100 trees'),
    'hgb': ('sklearn', 'scikit-learn HistGradientBoosting, 200 iterations'),
}
# Which libraries run which family of model.
LIBRARIES = {
    'fairpipe-native': ('lightgbm', 'xgboost', 'sklearn'),
    'fairpipe-onnxruntime': ('lightgbm', 'xgboost', 'sklearn'),
    'onnxruntime': ('lightgbm', 'xgboost', 'sklearn'),
    'lleaves': ('lightgbm',),
    'treelite': ('lightgbm', 'xgboost', 'sklearn'),
    'lightgbm': ('lightgbm',),
    'xgboost': ('xgboost',),
    'sklearn': ('sklearn',),
    'hummingbird': ('lightgbm', 'xgboost', 'sklearn'),
}


# ---- the data and the models (the parent process) ----

def census():
    """The census features as a `load` stage encodes them (float32), the label and the train rows."""
    import numpy as np
    import pandas as pd

    df = pd.read_csv(CENSUS)
    for column, names in tomllib.loads(CODES.read_text(encoding='utf-8')).items():
        df[column] = df[column].map(names)
    x = np.ascontiguousarray(df[FEATURES].to_numpy(dtype=np.float32))
    return x, df['income'].to_numpy(dtype=np.int64), (df['split'] == 'train').to_numpy()


def train(work: Path, names: list[str]) -> None:
    """Train the models not yet in `work`, write each one's exports and its reference P (float64)."""
    import joblib
    import numpy as np

    x, y, is_train = census()
    work.mkdir(parents=True, exist_ok=True)
    np.save(work / 'rows32.npy', x)
    np.save(work / 'rows64.npy', x.astype(np.float64))
    xt, yt = x[is_train], y[is_train]
    cats = [FEATURES.index(c) for c in CATEGORICAL]
    for name in names:
        folder = work / name
        if (folder / 'reference.npy').exists():
            continue
        folder.mkdir(exist_ok=True)
        started = time.perf_counter()
        family = MODELS[name][0]
        if family == 'lightgbm':
            import lightgbm

            trees = int(name[3:])
            model = lightgbm.LGBMClassifier(n_estimators=trees, num_leaves=31, learning_rate=0.05, random_state=21,
                                            n_jobs=os.cpu_count(), verbose=-1)
            model.fit(xt, yt, categorical_feature=cats)
            model.booster_.save_model(str(folder / 'model.txt'))
        elif family == 'xgboost':
            import xgboost

            trees = int(name[3:])
            model = xgboost.XGBClassifier(n_estimators=trees, max_depth=6, learning_rate=0.05, random_state=22,
                                          n_jobs=os.cpu_count())
            model.fit(xt, yt)
            model.get_booster().save_model(str(folder / 'model.json'))
        elif name == 'rf':
            from sklearn.ensemble import RandomForestClassifier

            model = RandomForestClassifier(n_estimators=100, max_depth=12, random_state=23, n_jobs=os.cpu_count()).fit(xt, yt)
        else:
            from sklearn.ensemble import HistGradientBoostingClassifier

            model = HistGradientBoostingClassifier(max_iter=200, random_state=24).fit(xt, yt)
        joblib.dump(model, folder / 'model.joblib')
        export_onnx(model, family, folder / 'model.onnx', x)
        reference = model.predict_proba(x.astype(np.float64))[:, 1]
        np.save(folder / 'reference.npy', reference)
        print(f'{name}: trained and exported in {time.perf_counter() - started:.0f} s', flush=True)


def export_onnx(model, family: str, path: Path, x) -> None:
    """The ONNX export make_tree_fixtures.py makes of the same kind of model (probabilities as a
    tensor, no ZipMap), checked with ONNX Runtime against the model."""
    import numpy as np
    import onnxruntime as ort

    if family in ('lightgbm', 'xgboost'):
        import onnxmltools
        from onnxmltools.convert.common.data_types import FloatTensorType

        initial = [('input', FloatTensorType([None, x.shape[1]]))]
        if family == 'lightgbm':
            onx = onnxmltools.convert_lightgbm(model, initial_types=initial, target_opset=15, zipmap=False)
        else:
            onx = onnxmltools.convert_xgboost(model, initial_types=initial, target_opset=15)
    else:
        from skl2onnx import to_onnx
        import skl2onnx.common.tree_ensemble as tree_ensemble

        # skl2onnx 1.20 passes HistGradientBoosting's missing-value flags as numpy booleans, which
        # onnx 1.23 refuses in an integer list (as make_tree_fixtures.py works around).
        if not getattr(tree_ensemble.add_node, 'ints', False):
            add_node = tree_ensemble.add_node

            def add_node_int(*args, nodes_missing_value_tracks_true=0, **kwargs):
                return add_node(*args, nodes_missing_value_tracks_true=int(nodes_missing_value_tracks_true), **kwargs)

            add_node_int.ints = True
            tree_ensemble.add_node = add_node_int
        onx = to_onnx(model, x[:1], options={id(model): {'zipmap': False}}, target_opset={'': 17, 'ai.onnx.ml': 3})
    path.write_bytes(onx.SerializeToString())
    sess = ort.InferenceSession(str(path), providers=['CPUExecutionProvider'])
    p = sess.run(None, {sess.get_inputs()[0].name: x})[1]
    diff = float(np.max(np.abs(np.asarray(p)[:, 1] - model.predict_proba(x)[:, 1])))
    assert diff <= 1e-4, f'{path}: the ONNX export differs from the model by {diff}'


def compile_native(work: Path, names: list[str], libraries: list[str]) -> None:
    """lleaves' compiled object and treelite's shared library of each model, made once (gcc)."""
    for name in names:
        folder = work / name
        family = MODELS[name][0]
        if 'lleaves' in libraries and family == 'lightgbm' and not (folder / 'lleaves.o').exists():
            import lleaves

            started = time.perf_counter()
            lleaves.Model(model_file=str(folder / 'model.txt')).compile(cache=str(folder / 'lleaves.o'))
            print(f'{name}: lleaves compiled in {time.perf_counter() - started:.0f} s', flush=True)
        if 'treelite' in libraries and not (folder / 'treelite.so').exists():
            import tl2cgen

            started = time.perf_counter()
            tl2cgen.export_lib(treelite_model(folder, family), toolchain='gcc', libpath=str(folder / 'treelite.so'),
                               params={'parallel_comp': os.cpu_count()})
            print(f'{name}: treelite compiled in {time.perf_counter() - started:.0f} s', flush=True)


def treelite_model(folder: Path, family: str):
    import treelite

    if family == 'lightgbm':
        return treelite.frontend.load_lightgbm_model(str(folder / 'model.txt'))
    if family == 'xgboost':
        return treelite.frontend.load_xgboost_model(str(folder / 'model.json'))
    import joblib

    return treelite.sklearn.import_model(joblib.load(folder / 'model.joblib'))


# ---- one measure (a child process of its own) ----

def scorer(library: str, folder: Path, family: str, threads: int):
    """(rows' dtype, a function scoring a batch of rows into P(class 1)), the library and model loaded."""
    import numpy as np

    if library == 'onnxruntime':
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        sess = ort.InferenceSession(str(folder / 'model.onnx'), options, providers=['CPUExecutionProvider'])
        name, out = sess.get_inputs()[0].name, sess.get_outputs()[1].name
        return np.float32, lambda x: sess.run([out], {name: x})[0][:, 1]
    if library == 'lightgbm':
        import lightgbm

        booster = lightgbm.Booster(model_file=str(folder / 'model.txt'))
        return np.float64, lambda x: booster.predict(x, num_threads=threads)
    if library == 'xgboost':
        import xgboost

        booster = xgboost.Booster(model_file=str(folder / 'model.json'))
        booster.set_param({'nthread': threads})
        return np.float32, lambda x: booster.inplace_predict(x)
    if library == 'sklearn':
        import joblib

        model = joblib.load(folder / 'model.joblib')
        if hasattr(model, 'n_jobs'):
            model.set_params(n_jobs=threads)
        return np.float64, lambda x: model.predict_proba(x)[:, 1]
    if library == 'lleaves':
        import lleaves

        model = lleaves.Model(model_file=str(folder / 'model.txt'))
        model.compile(cache=str(folder / 'lleaves.o'))
        return np.float64, lambda x: model.predict(x, n_jobs=threads)
    if library == 'treelite':
        import tl2cgen

        predictor = tl2cgen.Predictor(str(folder / 'treelite.so'), nthread=threads)

        def treelite_p(x):
            p = predictor.predict(tl2cgen.DMatrix(x, dtype='float32')).reshape(len(x), -1)
            return p[:, -1]

        return np.float32, treelite_p
    if library == 'hummingbird':
        import joblib
        import torch
        import hummingbird.ml

        torch.set_num_threads(threads)
        model = joblib.load(folder / 'model.joblib')
        converted = hummingbird.ml.convert(model, 'torch')
        return np.float32, lambda x: converted.predict_proba(x)[:, 1]
    raise SystemExit(f'unknown library {library}')


def measure_child(args) -> None:
    """Score the rows with one library (this process's only work) and print one JSON object."""
    import numpy as np

    folder = Path(args.work) / args.model
    dtype, score = scorer(args.library, folder, MODELS[args.model][0], args.threads)
    rows = np.load(Path(args.work) / ('rows32.npy' if dtype == np.float32 else 'rows64.npy'))
    n = len(rows)
    batch = min(args.batch or n, n)
    batches = [np.ascontiguousarray(rows[i:i + batch]) for i in range(0, n, batch)]
    score(batches[0])  # warm-up
    first = np.empty(n)
    cpu, wall, passes = time.process_time(), time.perf_counter(), 0
    while True:
        at = 0
        for b in batches:
            p = score(b)
            if passes == 0:
                first[at:at + len(b)] = p
            at += len(b)
        passes += 1
        if time.perf_counter() - wall >= args.seconds:
            break
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    reference = np.load(folder / 'reference.npy')
    print(json.dumps({'rows': n, 'batch': batch, 'passes': passes, 'rows_scored': n * passes, 'wall_s': wall, 'cpu_s': cpu,
                      'max_abs_dp': float(np.max(np.abs(first - reference))), 'version': library_version(args.library)}))


def library_version(library: str) -> str:
    import importlib.metadata

    package = {'onnxruntime': 'onnxruntime', 'lightgbm': 'lightgbm', 'xgboost': 'xgboost', 'sklearn': 'scikit-learn',
               'lleaves': 'lleaves', 'treelite': 'tl2cgen', 'hummingbird': 'hummingbird-ml'}[library]
    version = f'{package} {importlib.metadata.version(package)}'
    if library == 'treelite':
        version += f', treelite {importlib.metadata.version("treelite")}'
    if library == 'hummingbird':
        version += f', torch {importlib.metadata.version("torch")}'
    return version


# ---- the parent: every measure in a process of its own ----

# The measured process is started by this launcher, an interpreter that imports nothing but `os`
# and `sys`: Linux starts a child's peak RSS (ru_maxrss) from its parent's at the fork, so the
# launcher's own few MB (not this script's, which grows with the records it reads) are the floor.
LAUNCHER = """import os, sys
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], 'w') as f:
    f.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(cmd: list[str], env: dict) -> tuple[int, str, str, float]:
    """Run `cmd` to its end through LAUNCHER: (exit code, stdout, stderr, its max RSS in MB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as tmp:
        peak = os.path.join(tmp, 'maxrss')
        proc = subprocess.Popen([sys.executable, '-S', '-c', LAUNCHER, peak, *cmd], stdout=out, stderr=err, env=env, cwd=ROOT)
        proc.wait()
        out.seek(0)
        err.seek(0)
        kb = open(peak).read() if os.path.exists(peak) else ''
        return proc.returncode, out.read().decode(), err.read().decode(), (int(kb) / 1024 if kb else float('nan'))


def measure(args, library: str, model: str, batch: int | None, threads: int) -> dict:
    """One measure's record (its figures, or its `error`)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), POLARS_MAX_THREADS=str(threads))
    folder = Path(args.work) / model
    if library.startswith('fairpipe'):
        executor = library.split('-', 1)[1]
        predictions = folder / f'fairpipe-{executor}.p'
        cmd = [args.fairpipe, 'model-speed', str(folder / 'model.onnx'), str(CENSUS), '--label', 'income', '--favourable', '>50K',
               '--codes', str(CODES), '--drop', 'row,split', '--threads', str(threads), '--executor', executor,
               '--seconds', str(args.seconds), '--predictions', str(predictions), '--json']
        if batch:
            cmd += ['--batch', str(batch)]
        if executor == 'native':
            # As a user without ONNX Runtime: the load_model check against it is skipped, and its
            # library is not in the process's memory.
            env['ORT_DYLIB_PATH'] = str(folder / 'no-onnxruntime' / 'libonnxruntime.so')
        program = args.fairpipe
    else:
        cmd = [sys.executable, __file__, '_measure', '--work', str(args.work), '--library', library, '--model', model,
               '--threads', str(threads), '--seconds', str(args.seconds), '--batch', str(batch or 0)]
        program = __file__
    record = meta(program, ' '.join(cmd[:1] + [repr(c) if ' ' in c or '>' in c else c for c in cmd[1:]]))
    record.update(library=library, model=model, model_what=MODELS[model][1], batch=batch or 'all', threads=threads)
    code, out, err, rss = run_measured(cmd, env)
    record['uptime'] = meta(program)['uptime']
    if code != 0:
        record['error'] = (err.strip().splitlines() or ['exit code %d' % code])[-1][:500]
        return record
    result = json.loads(out.strip().splitlines()[-1])
    if library.startswith('fairpipe'):
        import numpy as np

        p = np.loadtxt(predictions)
        result['max_abs_dp'] = float(np.max(np.abs(p - np.load(folder / 'reference.npy'))))
        result['version'] = result.pop('executor')
        predictions.unlink()
    record.update({k: result[k] for k in ('rows', 'batch', 'passes', 'rows_scored', 'wall_s', 'cpu_s', 'max_abs_dp', 'version')})
    record['batch_rows'] = record.pop('batch')
    record['batch'] = batch or 'all'
    record['rows_per_wall_s'] = result['rows_scored'] / result['wall_s']
    record['rows_per_cpu_s'] = result['rows_scored'] / result['cpu_s'] if result['cpu_s'] else None
    # The figure: rows per CPU second on one thread, rows per wall second on more.
    record['rows_per_s'] = record['rows_per_cpu_s'] if threads == 1 else record['rows_per_wall_s']
    record['max_rss_mb'] = rss
    return record


def markdown(path: str) -> None:
    """Print docs/benchmarks.md's table of the results in `path`, each cell a figure marker
    (`tree-peers:cell:LIBRARY:MODEL:BATCH:THREADS`, recomputed by tests/published_figures.rs),
    then the markers' lines for docs/figures/markers.txt. The cells' text is computed as the test
    computes it: the best rows/s over the rounds (per CPU second on one thread, per wall second on
    more), the largest peak MB, "did not run", or "wrong P" past max |dp| 1e-4."""
    records = [json.loads(line) for line in open(path) if line.strip()]
    order = list(LIBRARIES)
    columns = [(b, t) for t in sorted({r['threads'] for r in records}) for b in ('1000', '16000', 'all')]
    print('| model | library | ' + ' | '.join(f'batch {b if b == "all" else format(int(b), ",")}, {t} thread{"s" if t > 1 else ""}'
                                           for b, t in columns) + ' |')
    print('|---|---|' + '---|' * len(columns))
    ids = []
    for model in MODELS:
        # A library that ran on no batch of the model has no row: the text under the table says why.
        libraries = sorted({r['library'] for r in records if r['model'] == model and 'error' not in r}, key=order.index)
        for library in libraries:
            cells = []
            for b, t in columns:
                mine = [r for r in records if r['model'] == model and r['library'] == library and str(r['batch']) == b and r['threads'] == t]
                ran = [r for r in mine if 'error' not in r]
                if not mine:
                    cells.append('')
                    continue
                if not ran:
                    text = 'did not run'
                elif any(r['max_abs_dp'] > 1e-4 for r in ran):
                    text = 'wrong P'
                else:
                    text = f'{round(max(r["rows_per_s"] for r in ran) / 1000):,} k / {max(r["max_rss_mb"] for r in ran):.0f} MB'
                marker = f'tree-peers:cell:{library}:{model}:{b}:{t}'
                ids.append(marker)
                cells.append(f'<!-- figure: {marker} -->{text}<!-- /figure -->')
            print(f'| `{model}` | {library} | ' + ' | '.join(cells) + ' |')
    print()
    for marker in ids:
        print(f'docs/benchmarks.md {marker}')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--fairpipe', help='the fairpipe binary (its model-speed command)')
    ap.add_argument('--build', default='', help='how the fairpipe binary was built (recorded)')
    ap.add_argument('--work', default=str(ROOT / 'target' / 'tree-peers'), help='where the models and rows are kept')
    ap.add_argument('--models', default=','.join(MODELS))
    ap.add_argument('--libraries', default=','.join(LIBRARIES))
    ap.add_argument('--batches', default='1000,16000,all')
    ap.add_argument('--threads', default=f'1,{os.cpu_count()}')
    ap.add_argument('--seconds', type=float, default=2.0, help='wall seconds of passes over the rows, at least')
    ap.add_argument('--rounds', type=int, default=1)
    ap.add_argument('--first-round', type=int, default=1, help='the number the first round is recorded as (a later run adding rounds)')
    ap.add_argument('--out', default=str(OUT))
    ap.add_argument('--prepare-only', action='store_true', help='train, export and compile; measure nothing')
    ap.add_argument('--markdown', action='store_true', help="print docs/benchmarks.md's table of --out's results with its markers")
    if len(sys.argv) > 1 and sys.argv[1] == '_measure':
        child = argparse.ArgumentParser()
        for flag in ('--work', '--library', '--model'):
            child.add_argument(flag, required=True)
        child.add_argument('--threads', type=int, required=True)
        child.add_argument('--batch', type=int, required=True)
        child.add_argument('--seconds', type=float, required=True)
        measure_child(child.parse_args(sys.argv[2:]))
        return
    args = ap.parse_args()
    if args.markdown:
        markdown(args.out)
        return
    models = args.models.split(',')
    libraries = args.libraries.split(',')
    for name in models + libraries:
        if name not in MODELS and name not in LIBRARIES:
            ap.error(f'unknown model or library {name!r} (models: {", ".join(MODELS)}; libraries: {", ".join(LIBRARIES)})')
    if any(lib.startswith('fairpipe') for lib in libraries) and not args.prepare_only and not args.fairpipe:
        ap.error('--fairpipe BINARY is needed for the fairpipe libraries')
    args.work = os.path.abspath(args.work)
    # This process may grow with the census, the models and the libraries' imports: each measure
    # starts from LAUNCHER, so its peak RSS is its own.
    train(Path(args.work), models)
    compile_native(Path(args.work), models, libraries)
    if args.prepare_only:
        return
    batches = [None if b == 'all' else int(b) for b in args.batches.split(',')]
    threads = [int(t) for t in args.threads.split(',')]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    for rnd in range(args.first_round, args.first_round + args.rounds):
        for model in models:
            for library in libraries:
                if MODELS[model][0] not in LIBRARIES[library]:
                    continue
                for t in threads:
                    for batch in batches:
                        record = measure(args, library, model, batch, t)
                        record.update(round=rnd, build=args.build if library.startswith('fairpipe') else 'python')
                        with open(args.out, 'a') as f:
                            f.write(json.dumps(record) + '\n')
                        if 'error' in record:
                            print(f'{library} {model} batch {record["batch"]} threads {t}: ERROR {record["error"]}', flush=True)
                        else:
                            print(f'{library:21} {model:7} batch {str(record["batch"]):>6} threads {t}: '
                                  f'{record["rows_per_s"]:>12,.0f} rows/s  {record["max_rss_mb"]:6.0f} MB  '
                                  f'max|dp| {record["max_abs_dp"]:.1e}', flush=True)


if __name__ == '__main__':
    main()
