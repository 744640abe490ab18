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


def v3_trees(node: onnx.NodeProto):
    """The trees of a TreeEnsembleClassifier/Regressor node: {tree id: {node id: node}} in attribute
    order, each node a dict (mode, feature, value, yes, no, missing, weights [(target, weight)])."""
    a = {at.name: helper.get_attribute_value(at) for at in node.attribute}
    prefix = "class" if node.op_type == "TreeEnsembleClassifier" else "target"
    trees: dict[int, dict[int, dict]] = {}
    missing = a.get("nodes_missing_value_tracks_true", [0] * len(a["nodes_treeids"]))
    for i, (t, n) in enumerate(zip(a["nodes_treeids"], a["nodes_nodeids"])):
        trees.setdefault(t, {})[n] = {
            "mode": a["nodes_modes"][i].decode(), "feature": a["nodes_featureids"][i], "value": a["nodes_values"][i],
            "yes": a["nodes_truenodeids"][i], "no": a["nodes_falsenodeids"][i], "missing": int(missing[i]), "weights": [],
        }
    for t, n, c, w in zip(a[f"{prefix}_treeids"], a[f"{prefix}_nodeids"], a[f"{prefix}_ids"], a[f"{prefix}_weights"]):
        trees[t][n]["weights"].append((c, w))
    return trees, a


def to_tree_ensemble_v5(trees: list[tuple[dict, dict]], n_targets: int, aggregate: int, post: int, name: str) -> onnx.NodeProto:
    """A TreeEnsemble node (ai.onnx.ml opset 5) of `trees`: each (nodes by id, {leaf id: (target,
    weight)}), the root being node 0. A chain of BRANCH_EQ nodes on one feature sharing its true
    child (onnxmltools' LightGBM categorical split) becomes one BRANCH_MEMBER node."""
    cols = {k: [] for k in ("featureids", "splits", "modes", "yes", "no", "yes_leaf", "no_leaf", "missing")}
    leaf_targets, leaf_weights, members, roots = [], [], [], []
    modes = {"BRANCH_LEQ": 0, "BRANCH_LT": 1, "BRANCH_GTE": 2, "BRANCH_GT": 3, "BRANCH_EQ": 4, "BRANCH_NEQ": 5}
    for nodes, leaves in trees:
        def chain(i):
            node, values = nodes[i], []
            while True:
                values.append(node["value"])
                nxt = nodes[node["no"]]
                if not (nxt["mode"] == "BRANCH_EQ" and nxt["feature"] == nodes[i]["feature"] and nxt["yes"] == nodes[i]["yes"]
                        and nxt["missing"] == nodes[i]["missing"]):
                    return values, node["no"]
                node = nxt

        def add(i) -> tuple[int, int]:
            """Position of node i in nodes_* (0) or leaf_* (1)."""
            node = nodes[i]
            if node["mode"] == "LEAF":
                target, weight = leaves[i]
                leaf_targets.append(target)
                leaf_weights.append(weight)
                return len(leaf_weights) - 1, 1
            at = len(cols["modes"])
            for k in cols:
                cols[k].append(0)
            cols["featureids"][at] = node["feature"]
            cols["missing"][at] = node["missing"]
            no = node["no"]
            if node["mode"] == "BRANCH_EQ":
                values, no = chain(i)
            if node["mode"] == "BRANCH_EQ" and len(values) > 1:
                cols["modes"][at] = 6
                members.extend(values + [float("nan")])
            else:
                cols["modes"][at] = modes[node["mode"]]
                cols["splits"][at] = node["value"]
            cols["yes"][at], cols["yes_leaf"][at] = add(node["yes"])
            cols["no"][at], cols["no_leaf"][at] = add(no)
            return at, 0

        root, is_leaf = add(0)
        assert not is_leaf, "a tree of one leaf"
        roots.append(root)
    attrs = dict(
        n_targets=n_targets, aggregate_function=aggregate, post_transform=post, tree_roots=roots,
        nodes_featureids=cols["featureids"], nodes_truenodeids=cols["yes"], nodes_falsenodeids=cols["no"],
        nodes_trueleafs=cols["yes_leaf"], nodes_falseleafs=cols["no_leaf"], leaf_targetids=leaf_targets,
        nodes_modes=helper.make_tensor("nodes_modes", onnx.TensorProto.UINT8, [len(cols["modes"])], cols["modes"]),
        nodes_splits=helper.make_tensor("nodes_splits", onnx.TensorProto.FLOAT, [len(cols["splits"])], cols["splits"]),
        leaf_weights=helper.make_tensor("leaf_weights", onnx.TensorProto.FLOAT, [len(leaf_weights)], leaf_weights),
    )
    if any(cols["missing"]):
        attrs["nodes_missing_value_tracks_true"] = cols["missing"]
    if members:
        attrs["membership_values"] = helper.make_tensor("membership_values", onnx.TensorProto.FLOAT, [len(members)], members)
    return helper.make_node("TreeEnsemble", ["input"], [name], domain="ai.onnx.ml", **attrs)


def v5_model(nodes: list, outputs: list, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "trees", [helper.make_tensor_value_info("input", onnx.TensorProto.FLOAT, [None, len(FEATURES)])],
                              outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 5)], ir_version=10)


def tree_ensemble_v5_exports(x, xt, yt, lgb, lightgbm_path: Path, rf_multiclass_path: Path, RandomForestRegressor) -> list:
    """Three TreeEnsemble (opset 5) exports, each checked against ONNX Runtime's run of the export it was
    written from (or the estimator): LightGBM with categorical sets (BRANCH_MEMBER, sets of more than
    30 values and of up to 30), the 3-class random forest with ArgMax + LabelEncoder (opset 4, tensor
    keys/values) for its text labels, and a random-forest regressor averaging its trees."""
    out = []
    # LightGBM, binary: the margin s of each tree as two targets (-s, s) with LOGISTIC, so that the
    # probabilities are ONNX Runtime's [1 - p, p] of the opset-3 export; the label is their ArgMax.
    # post_transform 1: ONNX Runtime (1.32) reads 1 as LOGISTIC and 2 as SOFTMAX, the reverse of the
    # operator's documentation (1 SOFTMAX, 2 LOGISTIC); this export is written for ONNX Runtime.
    v3 = onnx.load(str(lightgbm_path))
    (trees, a), = [v3_trees(n) for n in v3.graph.node if n.op_type == "TreeEnsembleClassifier"]
    assert not a.get("base_values"), "base values"
    split = []
    for t, nodes in trees.items():
        for sign, target in ((-1.0, 0), (1.0, 1)):
            leaves = {i: (target, sign * n["weights"][0][1]) for i, n in nodes.items() if n["mode"] == "LEAF"}
            split.append((nodes, leaves))
    model = v5_model(
        [to_tree_ensemble_v5(split, 2, 1, 1, "probabilities"),
         helper.make_node("ArgMax", ["probabilities"], ["label"], axis=1, keepdims=0)],
        [helper.make_tensor_value_info("label", onnx.TensorProto.INT64, [None]),
         helper.make_tensor_value_info("probabilities", onnx.TensorProto.FLOAT, [None, 2])])
    path = save(model, "treeensemble5_lightgbm.onnx")
    _, (label, p) = run(path, x)
    _, (label3, p3) = run(lightgbm_path, x)
    assert np.max(np.abs(p - p3)) <= 1e-6 and np.mean(label == label3) >= 0.9999, (np.max(np.abs(p - p3)), np.mean(label == label3))
    out.append(check(path, lgb, x, [0, 1]))

    # Three classes named by text: one tree per class and tree of the forest (a leaf of TreeEnsemble
    # adds to one target), ArgMax, and the class names by a LabelEncoder (int64 -> string).
    v3 = onnx.load(str(rf_multiclass_path))
    (trees, a), = [v3_trees(n) for n in v3.graph.node if n.op_type == "TreeEnsembleClassifier"]
    names = [c.decode() for c in a["classlabels_strings"]]
    split = []
    for t, nodes in trees.items():
        for target in range(len(names)):
            leaves = {i: (target, dict(n["weights"]).get(target, 0.0)) for i, n in nodes.items() if n["mode"] == "LEAF"}
            split.append((nodes, leaves))
    model = v5_model(
        [to_tree_ensemble_v5(split, len(names), 1, 0, "probabilities"),
         helper.make_node("ArgMax", ["probabilities"], ["index"], axis=1, keepdims=0),
         helper.make_node("LabelEncoder", ["index"], ["label"], domain="ai.onnx.ml",
                          keys_tensor=helper.make_tensor("keys", onnx.TensorProto.INT64, [len(names)], list(range(len(names)))),
                          values_tensor=helper.make_tensor("values", onnx.TensorProto.STRING, [len(names)], [n.encode() for n in names]),
                          default_string="unknown")],
        [helper.make_tensor_value_info("label", onnx.TensorProto.STRING, [None]),
         helper.make_tensor_value_info("probabilities", onnx.TensorProto.FLOAT, [None, len(names)])])
    path = save(model, "treeensemble5_rf_multiclass.onnx")
    _, (label, p) = run(path, x)
    _, (label3, p3) = run(rf_multiclass_path, x)
    p3 = probabilities(p3, names)
    assert np.max(np.abs(p - p3)) <= 1e-6 and np.mean(label == label3) >= 0.9999, (np.max(np.abs(p - p3)), np.mean(label == label3))
    ops = sorted({f"{n.domain or 'ai.onnx'}.{n.op_type}" for n in model.graph.node})
    out.append({"file": path.name, "operators": ops, "written_from": rf_multiclass_path.name, "max_abs_dp_vs_opset3_export": float(np.max(np.abs(p - p3))),
                "bytes": path.stat().st_size})

    # A regressor (P(income) as the mean of 40 trees' leaf values): aggregate_function AVERAGE.
    reg = RandomForestRegressor(n_estimators=40, max_depth=6, random_state=14, n_jobs=1).fit(xt, yt)
    forest = []
    for est in reg.estimators_:
        tree = est.tree_
        nodes = {}
        for i in range(tree.node_count):
            leaf = tree.children_left[i] < 0
            nodes[i] = {"mode": "LEAF" if leaf else "BRANCH_LEQ", "feature": int(max(tree.feature[i], 0)), "value": float(np.float32(tree.threshold[i])),
                        "yes": int(tree.children_left[i]), "no": int(tree.children_right[i]), "missing": 0}
        leaves = {i: (0, float(tree.value[i][0][0])) for i in nodes if nodes[i]["mode"] == "LEAF"}
        forest.append((nodes, leaves))
    model = v5_model([to_tree_ensemble_v5(forest, 1, 0, 0, "variable")], [helper.make_tensor_value_info("variable", onnx.TensorProto.FLOAT, [None, 1])])
    path = save(model, "treeensemble5_rf_regressor.onnx")
    _, (v,) = run(path, x)
    diff = float(np.max(np.abs(v[:, 0] - reg.predict(x))))
    assert diff <= 1e-4, diff
    ops = sorted({f"{n.domain or 'ai.onnx'}.{n.op_type}" for n in model.graph.node})
    out.append({"file": path.name, "operators": ops, "max_abs_diff_vs_estimator": diff, "bytes": path.stat().st_size})
    return out


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

    # scikit-learn Pipelines whose encoders run before the trees: a OneHotEncoder (skl2onnx: Gather,
    # Cast, ai.onnx.ml.OneHotEncoder with cats_int64s, Concat, Reshape) and an OrdinalEncoder
    # (ai.onnx.ml.LabelEncoder keys_floats -> values_int64s, opset 2).
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    numbers = [i for i in range(width) if i not in cats]

    def encoded(encoder, est):
        return Pipeline([("prep", ColumnTransformer([("cat", encoder, cats), ("num", "passthrough", numbers)])), ("model", est)])

    skl(encoded(OneHotEncoder(handle_unknown="ignore"), RandomForestClassifier(n_estimators=40, max_depth=7, random_state=12, n_jobs=1)),
        "sklearn_onehot_rf.onnx", yt, [0, 1])
    ordinal = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1)
    skl(encoded(ordinal, GradientBoostingClassifier(n_estimators=80, max_depth=3, random_state=13)), "sklearn_ordinal_gbc.onnx", yt, [0, 1])

    # The TreeEnsemble operator of ai.onnx.ml opset 5 (no converter emits it yet): written from the
    # exports above by to_tree_ensemble_v5.
    manifest.extend(tree_ensemble_v5_exports(x, xt, yt, lgb, OUT / "lightgbm_categorical.onnx", OUT / "sklearn_rf_multiclass.onnx", RandomForestRegressor))

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
