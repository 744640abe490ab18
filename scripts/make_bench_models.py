"""Models for scripts/bench_remote.sh beside the census logistic regression: a server's models
directory for MLServer's scikit-learn runtime, so that the client's share can be measured against
models that cost what served models cost.

Writes into DIR (one folder per model, each with model.joblib and model-settings.json):
  census-lr    the test fixture (tests/fixtures/remote/census-lr), copied
  census-mlp   the bundled reference network pipelines/models/census.onnx (12-30-20-15-15-10-1,
               ReLU, sigmoid) as a scikit-learn MLPClassifier with the very same weights
  census-gb    a GradientBoostingClassifier (200 trees of depth 3) trained on the census
               training split: the kind of tabular model production servers run
and DIR/settings.json (HTTP 8080, gRPC 8081, metrics 8082, inference in the server's process).

Run with the Python that has mlserver-sklearn, plus `pip install onnx` (to read census.onnx):
  python scripts/make_bench_models.py DIR && mlserver start DIR
Nothing here is checked in or run by CI.
"""
import json
import tomllib
import pathlib
import shutil
import sys
import warnings

import joblib
import numpy as np
import onnx
import pandas as pd
from onnx import numpy_helper
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

repo = pathlib.Path(__file__).resolve().parents[1]
out = pathlib.Path(sys.argv[1]).resolve()
out.mkdir(parents=True, exist_ok=True)


def settings(name):
    return json.dumps({"name": name, "implementation": "mlserver_sklearn.SKLearnModel", "parameters": {"uri": "./model.joblib"}}, indent=2) + "\n"


def save(name, model):
    (out / name).mkdir(exist_ok=True)
    joblib.dump(model, out / name / "model.joblib")
    (out / name / "model-settings.json").write_text(settings(name))


shutil.copytree(repo / "tests" / "fixtures" / "remote" / "census-lr", out / "census-lr", dirs_exist_ok=True)

data = pd.read_csv(repo / "pipelines" / "data" / "census.csv")
# The papers' integer codes for the named census file (what its pipelines' `codes` key applies).
for _column, _names in tomllib.loads((repo / "pipelines" / "data" / "census.codes.toml").read_text(encoding="utf-8")).items():
    data[_column] = data[_column].map(_names)
features = [c for c in data.columns if c not in ("row", "income", "split")]
train = data[data["split"] == "train"]
x, y = train[features].to_numpy(dtype="float64"), train["income"].to_numpy()

# The reference network: its weights set into an MLPClassifier of the same shape (fitted for one
# step first so that scikit-learn has built every attribute predict_proba reads).
weights = {t.name: numpy_helper.to_array(t).astype("float64") for t in onnx.load(repo / "pipelines" / "models" / "census.onnx").graph.initializer}
layers = [weights[f"W{i}"] for i in range(6)]
biases = [weights[f"B{i}"] for i in range(6)]
mlp = MLPClassifier(hidden_layer_sizes=tuple(w.shape[1] for w in layers[:-1]), activation="relu", max_iter=1)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    mlp.fit(x[:200], y[:200])
mlp.coefs_, mlp.intercepts_ = layers, biases
save("census-mlp", mlp)

gb = GradientBoostingClassifier(n_estimators=200, max_depth=3, random_state=0).fit(x, y)
save("census-gb", gb)

(out / "settings.json").write_text(json.dumps({"host": "127.0.0.1", "http_port": 8080, "grpc_port": 8081, "metrics_port": 8082, "parallel_workers": 0}, indent=2) + "\n")
print(f"census-mlp P(>50K) of the first rows: {np.round(mlp.predict_proba(x[:3])[:, 1], 6)}; census-gb trees: {gb.n_estimators_}")
