"""Make the fixtures of the model-input tests (issue 36 item 7) from the bundled census network
(pipelines/models/census.onnx: one float32 input `input` [N, 12] of the papers' encoded features):

- tests/fixtures/inputs/census_float16.onnx, census_float64.onnx, census_int64.onnx,
  census_int32.onnx: the same network behind an input of that element type (a Cast to float32
  first), as exporters write them; on the papers' integer codes each gives exactly the bundled
  model's probabilities.
- tests/fixtures/inputs/census_named.onnx: the same network behind twelve named [N, 1] float32
  inputs, one per census column, joined in the data's column order; the educational-num column's
  input is called `edu_num` (a name no column has), the rest are the columns' own names.

Run from the repository root with a Python that has onnx and onnxruntime (the script checks each
file against the bundled model on the papers' codes):

    python3 -m venv ~/.cache/fairpipe/flag-venv
    ~/.cache/fairpipe/flag-venv/bin/pip install onnx onnxruntime numpy pandas
    ~/.cache/fairpipe/flag-venv/bin/python scripts/make_input_fixtures.py
"""

import pathlib
import tomllib

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
from onnx import TensorProto, helper

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "pipelines" / "models" / "census.onnx"
OUT = ROOT / "tests" / "fixtures" / "inputs"
COLUMNS = ["age", "workclass", "educational-num", "marital-status", "occupation", "relationship", "race", "gender",
           "capital-gain", "capital-loss", "hours-per-week", "native-country"]
TYPES = {"float16": TensorProto.FLOAT16, "float64": TensorProto.DOUBLE, "int64": TensorProto.INT64, "int32": TensorProto.INT32}


def rewired(inputs, nodes):
    """The bundled model with `input` computed by `nodes` from the new `inputs`."""
    model = onnx.load(SOURCE)
    graph = model.graph
    old = [i for i in graph.input if i.name == "input"]
    assert len(old) == 1, [i.name for i in graph.input]
    graph.input.remove(old[0])
    graph.input.extend(inputs)
    for node in reversed(nodes):
        graph.node.insert(0, node)
    model.producer_name = "fairpipe scripts/make_input_fixtures.py"
    onnx.checker.check_model(model)
    return model


def typed(name):
    value = helper.make_tensor_value_info("typed_input", TYPES[name], ["N", 12])
    return rewired([value], [helper.make_node("Cast", ["typed_input"], ["input"], to=TensorProto.FLOAT)])


def named():
    names = ["edu_num" if c == "educational-num" else c for c in COLUMNS]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 1]) for n in names]
    return rewired(inputs, [helper.make_node("Concat", names, ["input"], axis=1)]), names


def papers_codes():
    df = pd.read_csv(ROOT / "pipelines" / "data" / "census.csv")
    codes = tomllib.loads((ROOT / "pipelines" / "data" / "census.codes.toml").read_text(encoding="utf-8"))
    for column, names in codes.items():
        df[column] = df[column].map(names)
    return df[COLUMNS].to_numpy(dtype=np.float64)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    x = papers_codes()
    reference = ort.InferenceSession(str(SOURCE)).run(None, {"input": x.astype(np.float32)})[0]
    for name, np_type in [("float16", np.float16), ("float64", np.float64), ("int64", np.int64), ("int32", np.int32)]:
        path = OUT / f"census_{name}.onnx"
        onnx.save(typed(name), path)
        got = ort.InferenceSession(str(path)).run(None, {"typed_input": x.astype(np_type)})[0]
        assert np.array_equal(got, reference), f"{path.name} differs from the bundled model"
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes, equal to census.onnx on {len(x)} rows")
    model, names = named()
    path = OUT / "census_named.onnx"
    onnx.save(model, path)
    feed = {n: x[:, [i]].astype(np.float32) for i, n in enumerate(names)}
    got = ort.InferenceSession(str(path)).run(None, feed)[0]
    assert np.array_equal(got, reference), f"{path.name} differs from the bundled model"
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes, equal to census.onnx on {len(x)} rows")


if __name__ == "__main__":
    main()
