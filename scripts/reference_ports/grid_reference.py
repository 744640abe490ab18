#!/usr/bin/env python3
"""The GRFT and AFT reference ports (grft_reference.py, aft_reference.py) on a cell of the benchmark
grid (scripts/bench_grid.py) instead of the bundled census network: the grid's skl2onnx export of
the cell's model (tests/fixtures/onnx/grid/ or target/grid-models/, from make_grid_models.py) run
by onnxruntime in Python (one thread), on the dataset in fairpipe's encoded vector (the file's
columns after `row`, the label and `split`; census through census.codes.toml; text columns as the
index of the level among the sorted levels, as load does and make_grid_models.py trained on).

The model's answer is P(class 1), the export's `probabilities` column 1, and its decision
P > 0.5, as fairpipe reads it (so a tree's vote split evenly is class 0 for both). Everything else
(the budget of model rows, the counts, the seeds) is the port's own run().

    python3 scripts/reference_ports/grid_reference.py grft|aft DATASET MODEL PROTECTED MAX_ROWS SEED [NUM_SEEDS]

e.g. `grid_reference.py aft credit GBDT PersonStatusSex 200000 1`. Prints the port's JSON line
(its `bench` is DATASET-MODEL-PROTECTED). GRFT's NUM_SEEDS (seeds a round) defaults to 100, as the
grid runs fairpipe's grft (`num_seeds = 100, rounds = 0`: rounds until the budget). Needs numpy, onnx, onnxruntime and scikit-learn
(~/.cache/fairpipe/trees-venv has them); set OMP_NUM_THREADS=1 for one core (KMeans).
"""
import csv
import json
import os
import sys
import tomllib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
from grid_cells import DATASETS  # noqa: E402


def load_grid(dataset):
    """(X as integers [N, k], split, feature names): the grid models' input vector."""
    label = DATASETS[dataset][0]
    with open(os.path.join(ROOT, 'pipelines', 'data', f'{dataset}.csv'), newline='') as f:
        rows = list(csv.reader(f))
    head, rows = rows[0], rows[1:]
    codes_file = os.path.join(ROOT, 'pipelines', 'data', f'{dataset}.codes.toml')
    codes = tomllib.loads(open(codes_file, encoding='utf-8').read()) if os.path.exists(codes_file) else {}
    features = [c for c in head if c not in ('row', label, 'split')]
    columns = []
    for c in features:
        i = head.index(c)
        values = [codes[c][r[i]] if c in codes else r[i] for r in rows]
        try:
            columns.append([int(v) for v in values])
        except ValueError:                               # a text column: index among the sorted levels
            levels = {v: k for k, v in enumerate(sorted(set(values)))}
            columns.append([levels[v] for v in values])
    split = np.array([r[head.index('split')] for r in rows])
    return np.array(columns, dtype=np.int64).T, split, features


class GridModel:
    """The cell's ONNX export under onnxruntime; called with rows, returns P(class 1) as float32."""

    def __init__(self, dataset, model):
        import onnxruntime as ort
        name = f'{dataset}_{model}.onnx'
        for d in (os.path.join(ROOT, 'tests', 'fixtures', 'onnx', 'grid'), os.path.join(ROOT, 'target', 'grid-models')):
            if os.path.exists(os.path.join(d, name)):
                path = os.path.join(d, name)
                break
        else:
            raise SystemExit(f'{name}: not found; run scripts/make_grid_models.py --datasets {dataset}')
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(path, options, providers=['CPUExecutionProvider'])
        self.rows = 0

    def __call__(self, x):
        x = np.atleast_2d(np.asarray(x, dtype=np.float32))
        self.rows += len(x)
        return self.session.run(['probabilities'], {'input': x})[0][:, 1].astype(np.float32)


def cell(dataset, model, protected):
    """What the ports' run(..., cell=) reads: protected indices, the data, the model."""
    data = load_grid(dataset)
    if protected not in data[2]:
        raise SystemExit(f'{dataset}: no column {protected!r}; columns: {", ".join(data[2])}')
    return dict(bench=f'{dataset}-{model}-{protected}', protected=[data[2].index(protected)], data=data,
                model=GridModel(dataset, model))


if __name__ == '__main__':
    method, dataset, model, protected, max_rows, seed = sys.argv[1:7]
    c = cell(dataset, model, protected)
    if method == 'grft':
        import grft_reference
        num_seeds = int(sys.argv[7]) if len(sys.argv) > 7 else 100
        result = grft_reference.run(c['bench'], int(max_rows), int(seed), num_seeds, cell=c)
    elif method == 'aft':
        import aft_reference
        result = aft_reference.run(c['bench'], int(max_rows), int(seed), cell=c)
    else:
        raise SystemExit(f'{method}: grft or aft')
    print(json.dumps(result), flush=True)
