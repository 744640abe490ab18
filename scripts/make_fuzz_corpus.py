"""Write the fuzz targets' seed corpus (fuzz/corpus/<target>/) from fairpipe's bundled inputs.

    ~/.cache/fairpipe/mlserver-venv/bin/python scripts/make_fuzz_corpus.py

Run from the repository root. The gRPC seeds are real `inference.GRPCInferenceService` messages
serialised by MLServer's own protobuf classes (`mlserver.grpc.dataplane_pb2`, so the MLServer venv
of scripts/test.sh is needed for them; without it they are skipped with a note). Everything else is
standard library. Seeds stay small: a pipeline file, a CSV head, a small ONNX export, an answer for
a few rows. Each target's input format is described in its file under fuzz/fuzz_targets/.
"""
import json
import pathlib
import struct
import sys

root = pathlib.Path(__file__).resolve().parent.parent
corpus = root / "fuzz" / "corpus"


def write(target, name, data):
    folder = corpus / target
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    (folder / name).write_bytes(data)


# pipeline_toml: the bundled pipelines. The target skips inputs whose strings hold `/` (so that
# nothing outside is read), so paths are flattened: `data/census.csv` -> `data_census.csv`.
for path in sorted((root / "pipelines").glob("*.toml")):
    write("pipeline_toml", path.name, path.read_text().replace("/", "_"))
write("pipeline_toml", "gate-and-inline.toml", """[pipeline]
name = "g"
seed = 7
report = false
plugin_path = ["plugins"]

[stages.data]
kind = "load"
dataset = "census"
columns = { age = { min = 0, max = 9, step = 1 }, sex = { levels = ["a", "b"] } }

[stages.model]
kind = "train"
data = "data"
algorithm = "logistic"

[stages.search]
kind = "generate"
model = "model"
data = "data"
plugin = "maft"
params = { max_global = 10, max_local = 5 }

[gate]
conditions = ["search.idi_ratio <= 0.1", "model.accuracy >= 0.5"]
""")
write("pipeline_toml", "matrix.toml", '[matrix]\nseed = [1, 2]\n\n[stages.a]\nkind = "load"\npath = "x.csv"\n')
write("pipeline_toml", "escapes.toml", '[stages."a b"]\nkind = "lo\\u0061d"\npath = """x\n.csv"""\nn = 1e400\nt = 1979-05-27T07:32:00Z\n')

# csv_scan: the first byte picks the separator (0 `,`, 1 `;`, 2 tab, 3 `|`), then the CSV's head.
for path in sorted((root / "pipelines" / "data").rglob("*.csv")):
    with path.open("rb") as f:
        head = b"".join(f.readline() for _ in range(12))
    write("csv_scan", path.stem + ".csv", b"\x00" + head)
write("csv_scan", "quoted-crlf.csv", b'\x00a,b,c\r\n1,"x, y",3\r\n\r\n4,"multi\nline ""q""",6\n')
write("csv_scan", "semicolon.csv", b'\x01age;sex;y\n39;"M";1\n50;F;0\n')
write("csv_scan", "tab.csv", b"\x02age\tsex\n39\tM\n")
write("csv_scan", "pipe-ragged.csv", b"\x03a|b\n1|2|3\n")
write("csv_scan", "unclosed.csv", b'\x00a,b\n1,"2\n3,4\n')
write("csv_scan", "dup-header.csv", b"\x00age, sex,age\n1,2,3\n")
write("csv_scan", "latin1.csv", b"\x00a,b\n1,\xe9t\xe9\n")

# onnx_graph: the small ONNX files among the fixtures and bundled models (under 16 kB each).
onnx = sorted((root / "tests" / "fixtures" / "onnx").glob("*.onnx"))
onnx += sorted((root / "tests" / "fixtures" / "exports").glob("*.onnx"))
onnx += sorted((root / "pipelines" / "models").glob("*.onnx"))
for path in onnx:
    if path.stat().st_size <= 16_000:
        write("onnx_graph", path.parent.name + "-" + path.name, path.read_bytes())

# v2_json: the first byte is the batch's rows, then a body as a V2 server answers (metadata and
# infer answers as tests/fixtures/remote/toy_v2_server.py and MLServer write them).
features = json.loads((root / "tests" / "fixtures" / "remote" / "census-lr.fairpipe.json").read_text())["features"]
v2 = {
    "metadata-vector": {"name": "census-lr", "inputs": [{"name": "input-0", "datatype": "FP64", "shape": [-1, len(features)]}],
                        "outputs": [{"name": "predict_proba", "datatype": "FP64", "shape": [-1, 2]}]},
    "metadata-named": {"name": "census-lr", "inputs": [{"name": f, "datatype": "FP64", "shape": [-1, 1]} for f in features],
                       "outputs": [{"name": "predict_proba", "datatype": "FP64", "shape": [-1, 2]}]},
    "metadata-mlserver-sklearn": {"name": "census-lr", "versions": [], "platform": "", "inputs": [], "outputs": [],
                                  "parameters": {"content_type": "np"}},
    "infer-proba": {"model_name": "census-lr", "outputs": [{"name": "predict_proba", "datatype": "FP64", "shape": [2, 2],
                                                            "data": [0.75, 0.25, 0.125, 0.875]}]},
    "infer-nested": {"model_name": "m", "outputs": [{"name": "p", "datatype": "FP32", "shape": [2, 2], "data": [[0.5, 0.5], [0.0, 1.0]]}]},
    "infer-labels": {"model_name": "m", "outputs": [{"name": "predict", "datatype": "INT64", "shape": [2, 1], "data": [1, 0]}]},
    "infer-text": {"model_name": "m", "outputs": [{"name": "label", "datatype": "BYTES", "shape": [2], "data": [">50K", "<=50K"]},
                                                  {"name": "odd", "datatype": "FP16", "shape": [2], "data": [1, 2]}]},
    "infer-error": {"error": "Model census-lr not found"},
}
for name, body in v2.items():
    write("v2_json", name + ".json", b"\x02" + json.dumps(body).encode())
write("v2_json", "infer-python-nan.json", b'\x02{"outputs": [{"name": "p", "datatype": "FP64", "shape": [2, 1], "data": [NaN, -Infinity]}]}')

# mlflow_json: the first byte is the batch's rows, then `predictions` in each form MLflow writes.
mlflow = {
    "labels": {"predictions": [1, 0, 1]},
    "proba": {"predictions": [[0.25, 0.75], [0.5, 0.5], [1.0, 0.0]]},
    "records": {"predictions": [{"label": ">50K", "p": 0.9}, {"label": "<=50K", "p": 0.2}, {"label": ">50K", "p": 0.6}]},
    "columns": {"predictions": {"p": [0.1, 0.2, 0.3], "label": ["a", "b", "c"]}},
    "text": {"predictions": [">50K", "<=50K", ">50K"]},
    "error": {"error_code": "BAD_REQUEST", "message": "Invalid input"},
}
for name, body in mlflow.items():
    write("mlflow_json", name + ".json", b"\x03" + json.dumps(body).encode())
write("mlflow_json", "python-nan.json", b'\x03{"predictions": [NaN, Infinity, 0.5]}')

# grpc_v2: the first byte is the batch's rows, then one framed gRPC message (0, 4-byte big-endian
# length, the message) as a V2 server answers ModelInfer or ModelMetadata.
try:
    from mlserver.grpc import dataplane_pb2 as pb
except ImportError:
    print("mlserver is not installed: the grpc_v2 seeds were not written", file=sys.stderr)
    sys.exit(0)


def framed(message):
    data = message.SerializeToString()
    return b"\x00" + struct.pack(">I", len(data)) + data


proba = struct.pack("<4d", 0.75, 0.25, 0.125, 0.875)
labels = struct.pack("<2q", 1, 0)
texts = b"".join(struct.pack("<I", len(t)) + t for t in (b">50K", b"<=50K"))
raw = pb.ModelInferResponse(model_name="census-lr", outputs=[
    pb.ModelInferResponse.InferOutputTensor(name="predict_proba", datatype="FP64", shape=[2, 2]),
    pb.ModelInferResponse.InferOutputTensor(name="predict", datatype="INT64", shape=[2, 1]),
    pb.ModelInferResponse.InferOutputTensor(name="label", datatype="BYTES", shape=[2]),
], raw_output_contents=[proba, labels, texts])
write("grpc_v2", "infer-raw", b"\x02" + framed(raw))
typed = pb.ModelInferResponse(model_name="m", outputs=[
    pb.ModelInferResponse.InferOutputTensor(name="p", datatype="FP32", shape=[2, 2],
                                            contents=pb.InferTensorContents(fp32_contents=[0.5, 0.5, 0.0, 1.0])),
    pb.ModelInferResponse.InferOutputTensor(name="y", datatype="UINT8", shape=[2],
                                            contents=pb.InferTensorContents(uint_contents=[1, 0])),
    pb.ModelInferResponse.InferOutputTensor(name="t", datatype="BYTES", shape=[2],
                                            contents=pb.InferTensorContents(bytes_contents=[b"a", b"b"])),
    pb.ModelInferResponse.InferOutputTensor(name="b", datatype="BOOL", shape=[2, 1],
                                            contents=pb.InferTensorContents(bool_contents=[True, False])),
])
write("grpc_v2", "infer-typed", b"\x02" + framed(typed))
small = pb.ModelInferResponse(outputs=[
    pb.ModelInferResponse.InferOutputTensor(name="i8", datatype="INT8", shape=[2, 1]),
    pb.ModelInferResponse.InferOutputTensor(name="u16", datatype="UINT16", shape=[2, 1]),
    pb.ModelInferResponse.InferOutputTensor(name="f", datatype="FP32", shape=[2, 1]),
], raw_output_contents=[b"\x01\xff", struct.pack("<2H", 1, 0), struct.pack("<2f", 0.5, 0.25)])
write("grpc_v2", "infer-small-types", b"\x02" + framed(small))
metadata = pb.ModelMetadataResponse(name="census-lr", versions=["1"], platform="sklearn", inputs=[
    pb.ModelMetadataResponse.TensorMetadata(name="input-0", datatype="FP64", shape=[-1, len(features)])],
    outputs=[pb.ModelMetadataResponse.TensorMetadata(name="predict_proba", datatype="FP64", shape=[-1, 2])])
write("grpc_v2", "metadata", b"\x02" + framed(metadata))
write("grpc_v2", "status-message", b"\x02Model%20census%20not%20found%")
