#!/usr/bin/env python3
"""Train and export the tree ensembles fairpipe runs natively (issue 38), into tests/fixtures/onnx/trees/.

Run by hand, never by CI (the exports are checked in):

    python3 -m venv ~/.cache/fairpipe/trees-venv
    ~/.cache/fairpipe/trees-venv/bin/pip install scikit-learn==1.9.1 skl2onnx onnxmltools xgboost \
        lightgbm catboost onnxruntime==1.32.0 pandas
    ~/.cache/fairpipe/trees-venv/bin/python scripts/make_tree_fixtures.py

Data: the bundled census file (pipelines/data/census.csv, 48,842 rows, 12 integer-coded features,
label `income`), read exactly as fairpipe's `load` stage encodes it (the 12 feature columns in file
order, values as they are). Binary models predict `income`; multiclass models predict a three-class
decision made from `income` and `hours-per-week` with the class names "denied", "review", "approved"
("approved" is the favourable class). Models are trained on the `train` split.

Each export is checked with onnxruntime against the estimator it came from (labels equal on
>= 99.9% of rows and probabilities within 1e-4: the converters compute in float32, the estimators in
float64). The list of exports, their operators and sizes goes to manifest.json. Seeds are fixed.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
from onnx import helper

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "onnx" / "trees"
FEATURES = [
    "age", "workclass", "educational-num", "marital-status", "occupation", "relationship", "race", "gender",
    "capital-gain", "capital-loss", "hours-per-week", "native-country",
]
CATEGORICAL = ["workclass", "marital-status", "occupation", "relationship", "race", "native-country"]
CLASSES = ["denied", "review", "approved"]


def data():
    df = pd.read_csv(ROOT / "pipelines" / "data" / "census.csv")
    # The papers' integer codes for the named census file (what its pipelines' `codes` key applies).
    for _column, _names in tomllib.loads((ROOT / "pipelines" / "data" / "census.codes.toml").read_text(encoding="utf-8")).items():
        df[_column] = df[_column].map(_names)
    x = df[FEATURES].to_numpy(dtype=np.float32)
    y = df["income"].to_numpy(dtype=np.int64)
    # Three classes: denied (income 0), review (income 1, few hours), approved (income 1, full hours).
    hours = df["hours-per-week"].to_numpy()
    multi = np.where(y == 0, 0, np.where(hours <= np.median(hours[y == 1]) - 1, 1, 2))
    train = (df["split"] == "train").to_numpy()
    return x, y, multi, train


def save(model: onnx.ModelProto, name: str) -> Path:
    onnx.checker.check_model(model)
    imports = sorted(((o.domain, o.version) for o in model.opset_import))
    del model.opset_import[:]
    model.opset_import.extend(helper.make_opsetid(d, v) for d, v in imports)
    model.graph.name = Path(name).stem
    path = OUT / name
    onnx.save_model(model, str(path))
    return path


def run(path: Path, x: np.ndarray):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return sess, sess.run(None, {name: x})


def probabilities(value, classes) -> np.ndarray:
    if isinstance(value, list):  # ZipMap
        return np.array([[row[c] for c in classes] for row in value], dtype=np.float64)
    return np.asarray(value, dtype=np.float64)


def check(path: Path, estimator, x: np.ndarray, classes) -> dict:
    sess, outputs = run(path, x)
    labels = np.asarray(outputs[0])
    expected_labels = np.asarray(estimator.predict(x))
    agree = float(np.mean(labels.astype(str) == expected_labels.astype(str)))
    p = probabilities(outputs[1], classes)
    expected_p = estimator.predict_proba(x)
    diff = float(np.max(np.abs(p - expected_p)))
    assert agree >= 0.999, f"{path.name}: labels agree on {agree:.5f} of rows"
    assert diff <= 1e-4, f"{path.name}: max |dp| {diff}"
    ops = sorted({f"{n.domain or 'ai.onnx'}.{n.op_type}" for n in onnx.load(str(path)).graph.node})
    return {
        "file": path.name,
        "operators": ops,
        "inputs": [f"{i.name} {i.type} {i.shape}" for i in sess.get_inputs()],
        "outputs": [f"{o.name} {o.type} {o.shape}" for o in sess.get_outputs()],
        "label_agreement_with_estimator": agree,
        "max_abs_dp_vs_estimator": diff,
        "bytes": path.stat().st_size,
    }


def main() -> None:
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        GradientBoostingClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )
    from skl2onnx import to_onnx
    import lightgbm
    import onnxmltools
    import xgboost
    import catboost
    from onnxmltools.convert.common.data_types import FloatTensorType

    # skl2onnx 1.20 passes HistGradientBoosting's missing-value flags as numpy booleans, which onnx
    # 1.23 refuses in an integer list: hand them over as integers.
    import skl2onnx.common.tree_ensemble as tree_ensemble

    add_node = tree_ensemble.add_node

    def add_node_int(*args, nodes_missing_value_tracks_true=0, **kwargs):
        return add_node(*args, nodes_missing_value_tracks_true=int(nodes_missing_value_tracks_true), **kwargs)

    tree_ensemble.add_node = add_node_int

    OUT.mkdir(parents=True, exist_ok=True)
    x, y, multi, train = data()
    xt, yt, mt = x[train], y[train], multi[train]
    named = np.array(CLASSES)[mt]
    manifest = []
    width = x.shape[1]
    initial = [("input", FloatTensorType([None, width]))]

    def skl(est, name, target, classes, zipmap=False):
        est.fit(xt, target)
        model = to_onnx(est, x[:1], options={id(est): {"zipmap": zipmap}}, target_opset={"": 17, "ai.onnx.ml": 3})
        manifest.append(check(save(model, name), est, x, list(est.classes_)))

    # scikit-learn, binary.
    skl(RandomForestClassifier(n_estimators=100, max_depth=7, random_state=1, n_jobs=1), "sklearn_rf.onnx", yt, [0, 1], zipmap=True)
    skl(ExtraTreesClassifier(n_estimators=100, max_depth=7, random_state=2, n_jobs=1), "sklearn_extratrees.onnx", yt, [0, 1])
    skl(GradientBoostingClassifier(n_estimators=150, max_depth=3, random_state=3), "sklearn_gbc.onnx", yt, [0, 1])
    skl(HistGradientBoostingClassifier(max_iter=150, max_leaf_nodes=15, random_state=4), "sklearn_hgb.onnx", yt, [0, 1], zipmap=True)
    # scikit-learn, three classes named by text.
    skl(RandomForestClassifier(n_estimators=60, max_depth=6, random_state=5, n_jobs=1), "sklearn_rf_multiclass.onnx", named, CLASSES, zipmap=True)
    skl(HistGradientBoostingClassifier(max_iter=60, max_leaf_nodes=8, random_state=6), "sklearn_hgb_multiclass.onnx", named, CLASSES)

    # XGBoost.
    xgb = xgboost.XGBClassifier(n_estimators=200, max_depth=4, learning_rate=0.1, random_state=7, n_jobs=1)
    xgb.fit(xt, yt)
    manifest.append(check(save(onnxmltools.convert_xgboost(xgb, initial_types=initial, target_opset=15), "xgboost.onnx"), xgb, x, [0, 1]))
    xgbm = xgboost.XGBClassifier(n_estimators=60, max_depth=3, learning_rate=0.2, random_state=8, n_jobs=1)
    xgbm.fit(xt, mt)
    manifest.append(check(save(onnxmltools.convert_xgboost(xgbm, initial_types=initial, target_opset=15), "xgboost_multiclass.onnx"), xgbm, x, [0, 1, 2]))

    # LightGBM, with categorical splits on the integer-coded columns.
    cats = [FEATURES.index(c) for c in CATEGORICAL]
    lgb = lightgbm.LGBMClassifier(n_estimators=200, num_leaves=15, learning_rate=0.1, random_state=9, n_jobs=1, verbose=-1)
    lgb.fit(xt, yt, categorical_feature=cats)
    manifest.append(check(save(onnxmltools.convert_lightgbm(lgb, initial_types=initial, target_opset=15, zipmap=False), "lightgbm_categorical.onnx"), lgb, x, [0, 1]))
    lgbm = lightgbm.LGBMClassifier(n_estimators=60, num_leaves=7, learning_rate=0.2, random_state=10, n_jobs=1, verbose=-1)
    lgbm.fit(xt, named)
    manifest.append(check(save(onnxmltools.convert_lightgbm(lgbm, initial_types=initial, target_opset=15), "lightgbm_multiclass.onnx"), lgbm, x, list(lgbm.classes_)))

    # CatBoost (its own exporter).
    cb = catboost.CatBoostClassifier(iterations=200, depth=5, learning_rate=0.1, random_seed=11, verbose=False, thread_count=1, allow_writing_files=False)
    cb.fit(xt, yt)
    path = OUT / "catboost.onnx"
    cb.save_model(str(path), format="onnx", export_parameters={"onnx_domain": "ai.catboost", "onnx_model_version": 1, "onnx_graph_name": "catboost"})
    manifest.append(check(save(onnx.load(str(path)), "catboost.onnx"), cb, x, [0, 1]))

    versions = {m.__name__: m.__version__ for m in (np, onnx, ort, pd, lightgbm, onnxmltools, xgboost, catboost)}
    import sklearn
    import skl2onnx

    versions.update({"sklearn": sklearn.__version__, "skl2onnx": skl2onnx.__version__})
    (OUT / "manifest.json").write_text(json.dumps({"versions": versions, "exports": manifest}, indent=1) + "\n")
    total = sum(m["bytes"] for m in manifest)
    for m in manifest:
        print(f"{m['file']}: {m['bytes'] / 1024:.0f} KiB, {', '.join(m['operators'])}")
    print(f"total {total / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
