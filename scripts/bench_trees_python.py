#!/usr/bin/env python3
"""ONNX Runtime in Python on the tree exports (tests/fixtures/onnx/trees), the third column of the
oracle benchmark's tree table (benches/oracle.rs, group `trees`): rows/s on the same census rows,
batch 64 and 4096, one intra-op thread and all cores, the probabilities read as a caller reads
them (ZipMap outputs as the list of dicts onnxruntime returns).

    ~/.cache/fairpipe/trees-venv/bin/python scripts/bench_trees_python.py [--seconds 1.0] [MODEL ...]

Prints one line per measurement: `python-onnxruntime MODEL threadsT BATCH ROWS_PER_S`.
"""

from __future__ import annotations

import argparse
import tomllib
import os
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
FEATURES = [
    "age", "workclass", "educational-num", "marital-status", "occupation", "relationship", "race", "gender",
    "capital-gain", "capital-loss", "hours-per-week", "native-country",
]


def rows() -> np.ndarray:
    df = pd.read_csv(ROOT / "pipelines" / "data" / "census.csv")
    # The papers' integer codes for the named census file (what its pipelines' `codes` key applies).
    for _column, _names in tomllib.loads((ROOT / "pipelines" / "data" / "census.codes.toml").read_text(encoding="utf-8")).items():
        df[_column] = df[_column].map(_names)
    return np.ascontiguousarray(df[FEATURES].to_numpy(dtype=np.float32))


def measure(sess: ort.InferenceSession, x: np.ndarray, batch: int, seconds: float) -> float:
    name = sess.get_inputs()[0].name
    outputs = sess.get_outputs()
    # A classifier's probabilities (its second output); a regressor's one output.
    out = outputs[1 if len(outputs) > 1 else 0].name
    n = x.shape[0] - x.shape[0] % batch
    done, start, i = 0, time.perf_counter(), 0
    while True:
        chunk = x[i:i + batch]
        sess.run([out], {name: chunk})
        done += batch
        i = (i + batch) % n
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("models", nargs="*")
    args = parser.parse_args()
    x = rows()
    folder = ROOT / "tests" / "fixtures" / "onnx" / "trees"
    names = args.models or sorted(p.stem for p in folder.glob("*.onnx"))
    cores = os.cpu_count() or 1
    for name in names:
        for threads in sorted({1, cores}):
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            sess = ort.InferenceSession(str(folder / f"{name}.onnx"), options, providers=["CPUExecutionProvider"])
            for batch in (64, 4096):
                print(f"python-onnxruntime {name} threads{threads} {batch} {measure(sess, x, batch, args.seconds):.0f}", flush=True)


if __name__ == "__main__":
    main()
