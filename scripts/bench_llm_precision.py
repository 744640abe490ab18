#!/usr/bin/env python3
"""What `precision` saves (issue 61): requests an LLM estimate sends to reach ±0.01 on a flip rate of
6%, with `precision = 0.01` against the fixed standard estimate (100 trials × 1,000 inputs), on a
planted server; and, in the same run, how often the interval at the stop covers the planted rate.

The planted server (started here on 127.0.0.1, standard library only) answers "Applicant:
income=I; sex=S." with P(yes) = σ((I − 50,000)/1,000 − 6·[S = Female]) as the first token's
`top_logprobs`: a decision flips with sex exactly when 50,000 ≤ I < 56,000, so over the domain's
incomes 0..99,999 the planted flip rate is 6,000/100,000 = 0.06. Every income is its own prompt, so
the requests are the inputs' (the run's memory and no cache).

    python3 scripts/bench_llm_precision.py --fairpipe target/debug/fairpipe [--runs 20] [--out docs/figures/llm-precision/runs.jsonl]

One JSON line per run (mode, seed, trials, inputs, requests, rate, ci95, covered, wall seconds),
with the provenance of scripts/figures_meta.py, and a summary line.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_meta import meta  # noqa: E402

TRUTH = 0.06


def p_yes(income: int, female: bool) -> float:
    return 1.0 / (1.0 + math.exp(-((income - 50_000) / 1_000 - (6.0 if female else 0.0))))


class Planted(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "planted", "object": "model", "owned_by": "bench"}]}).encode()
        self.send_response(200 if self.path.startswith("/v1/models") else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = request["messages"][-1]["content"]
        income = int(prompt.split("income=")[1].split(";")[0])
        female = "sex=Female" in prompt
        p = min(max(p_yes(income, female), 1e-12), 1 - 1e-12)
        top = [{"token": "Yes", "logprob": math.log(p)}, {"token": "No", "logprob": math.log(1 - p)}]
        answer = {
            "id": "planted", "object": "chat.completion", "model": "planted",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Yes" if p > 0.5 else "No"}, "finish_reason": "length",
                         "logprobs": {"content": [{"token": "Yes", "logprob": -0.5, "top_logprobs": top}]}}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 1, "total_tokens": len(prompt) // 4 + 1},
        }
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def pipeline(folder: str, base_url: str, estimate: str) -> str:
    with open(os.path.join(folder, "applicants.csv"), "w") as f:
        f.write("income,sex,label\n")
        for k in range(100):  # incomes spanning 0..99,999: the domain the estimate draws from
            income = 0 if k == 0 else 99_999 if k == 99 else k * 1_000 + 17
            for sex in ("Female", "Male"):
                f.write(f"{income},{sex},{'yes' if income >= 50_000 else 'no'}\n")
    with open(os.path.join(folder, "prompt.j2"), "w") as f:
        f.write("Applicant: income={{ income }}; sex={{ sex }}.\nApprove? Answer yes or no.\n")
    text = f"""[pipeline]
name = "llm-precision"

[stages.data]
kind = "load"
path = "applicants.csv"
label = "label"
favourable = "yes"
protected = ["sex"]

[stages.model]
kind = "load_model"
data = "data"
llm = {{ base_url = "{base_url}", model = "planted", prompt = "prompt.j2", cache = "", concurrency = 16, answers = {{ favourable = ["Yes"], unfavourable = ["No"] }} }}

[stages.estimate]
kind = "estimate"
model = "model"
{estimate}
"""
    path = os.path.join(folder, "p.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def run(binary: str, folder: str, base_url: str, estimate: str, seed: int) -> dict:
    path = pipeline(folder, base_url, estimate)
    out = os.path.join(folder, f"out-{seed}")
    started = time.monotonic()
    done = subprocess.run([binary, "run", path, "--out", out, "--seed", str(seed), "--quiet"], capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"fairpipe run failed:\n{done.stdout}\n{done.stderr}")
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    figures = summary["stages"]["estimate"]
    model_requests = summary["stages"]["model"]["remote"]["llm"]["requests"]
    stop = figures.get("precision") or {}
    lo, hi = figures["ci95"]
    return {
        "seed": seed,
        "trials": figures["trials"],
        "inputs": figures["samples"],
        "estimate_requests": stop.get("requests"),
        "run_requests": model_requests,
        "rate": figures["rate"],
        "ci95": [lo, hi],
        "half_width": (hi - lo) / 2,
        "covered": lo <= TRUTH <= hi,
        "wilson_covered": figures["ci95_wilson"][0] <= TRUTH <= figures["ci95_wilson"][1],
        "wall_s": round(wall, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fairpipe", default="target/debug/fairpipe")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", default="docs/figures/llm-precision/runs.jsonl")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Planted)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    provenance = meta(args.fairpipe, " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]))
    lines = []
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(1, args.runs + 1):
            r = run(args.fairpipe, folder, base_url, "trials = 2000\nsamples = 64\nprecision = 0.01", seed)
            lines.append({"mode": "precision=0.01", **r})
            print(json.dumps(lines[-1]), flush=True)
        r = run(args.fairpipe, folder, base_url, "trials = 100\nsamples = 1000", 1)
        lines.append({"mode": "fixed 100 x 1000", **r})
        print(json.dumps(lines[-1]), flush=True)
    precise = [l for l in lines if l["mode"] == "precision=0.01"]
    fixed = lines[-1]
    requests = sorted(l["estimate_requests"] for l in precise)
    summary = {
        "summary": True,
        "truth": TRUTH,
        "runs": len(precise),
        "covered": sum(l["covered"] for l in precise),
        "wilson_covered_at_the_stop": sum(l["wilson_covered"] for l in precise),
        "median_requests_precision": requests[len(requests) // 2],
        "max_half_width_precision": max(l["half_width"] for l in precise),
        "fixed_requests": fixed["run_requests"],
        "fixed_half_width": fixed["half_width"],
    }
    print(json.dumps(summary))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        for line in lines + [summary]:
            f.write(json.dumps({**line, **provenance}) + "\n")
    server.shutdown()


if __name__ == "__main__":
    main()
