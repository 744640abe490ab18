"""Make the fixtures of the "no silent wrong audit" tests from the bundled census model
(pipelines/models/census.onnx, whose output `probabilities` is Concat(1 - p, p)):

- tests/fixtures/onnx/census_inverted.onnx: the same network with the two columns swapped
  (Concat(p, 1 - p)), i.e. a model whose column 1 is P(<=50K): inverted by construction.
- tests/fixtures/onnx/census_nan.onnx: the same network with its last layer's weights NaN, so
  that it returns NaN for every row (still a plain dense stack, which the native executor reads).
- tests/fixtures/onnx/census_nan_hidden.onnx: the same network with its first layer's biases NaN:
  NaN for every row by ONNX's rules (ONNX Runtime returns NaN), which a ReLU computed as
  max(x, 0) would turn into 0 and hide.

Run from the repository root: python3 scripts/make_trust_fixtures.py (needs `pip install onnx`).
"""

import math

import onnx
from onnx import numpy_helper

SOURCE = "pipelines/models/census.onnx"


def inverted():
    model = onnx.load(SOURCE)
    concat = next(n for n in model.graph.node if n.op_type == "Concat")
    assert list(concat.input) == ["p0", "a5"], concat.input
    concat.input[:] = ["a5", "p0"]
    onnx.checker.check_model(model)
    onnx.save(model, "tests/fixtures/onnx/census_inverted.onnx")


def nan(initializer, target):
    model = onnx.load(SOURCE)
    for i, init in enumerate(model.graph.initializer):
        if init.name == initializer:
            w = numpy_helper.to_array(init).copy()
            w[:] = math.nan
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(w, initializer))
    onnx.checker.check_model(model)
    onnx.save(model, target)


if __name__ == "__main__":
    inverted()
    nan("W5", "tests/fixtures/onnx/census_nan.onnx")
    nan("B0", "tests/fixtures/onnx/census_nan_hidden.onnx")
