#!/usr/bin/env python3
"""Smoke test of the real LLM endpoint the LLM tests use (issue 46): llama.cpp's llama-server
serving tests/fixtures/llm/tiny-llama.gguf with the grammar tests/fixtures/llm/yes-no.gbnf.

    eval "$(scripts/test.sh --provision-only)"      # builds llama-server once: FAIRPIPE_LLAMA_SERVER
    python3 scripts/llama_smoke.py [--save] [--gguf-python PYTHON]

Standard library only. Starts llama-server on 127.0.0.1 on a free port and checks, failing with a
message on the first thing that is not so:
  1. /v1/chat/completions at temperature 0 with logprobs + top_logprobs answers `yes` or `no`, and
     the first answer token's top_logprobs list both the `yes` and the `no` token;
  2. the same request again gives the same answer and the same logprobs (temperature 0 is
     reproducible), and so do 8 requests in flight at once;
  3. P(yes) = p(yes)/(p(yes)+p(no)) from the top_logprobs differs between prompts (the model reads
     the prompt), and the answer is `yes` exactly where P(yes) > 1/2, both answers occurring;
  4. /v1/completions answers too (its logprobs come in the chat shape, choices[0].logprobs.content[],
     not OpenAI's legacy tokens/token_logprobs/top_logprobs lists);
  5. a per-request `grammar` overrides the server's `--grammar-file`;
  6. a request without the `--api-key` key is refused with 401 (and /metrics is read);
  7. a restarted server answers the first request identically.
Prints one line per check and the wall time of a request. --save writes the requests and raw
responses to tests/fixtures/llm/ (samples for the Rust response parser). --gguf-python runs
scripts/make_tiny_llama.py with that interpreter (one with gguf==0.19.0) and checks it writes the
checked-in model byte for byte. Stops the server whatever happens.
"""
import argparse
import concurrent.futures
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests/fixtures/llm"
MODEL = FIXTURES / "tiny-llama.gguf"
GRAMMAR = FIXTURES / "yes-no.gbnf"
SYSTEM = "You screen credit applications. Answer yes or no."
API_KEY = "fairpipe-smoke-key"


def fail(message):
    print(f"llama_smoke: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_args(server, port, slots=1):
    """The llama-server command line the tests use (also printed). One slot and no prompt cache: both
    a cached prompt prefix and requests batched together in several slots change the logprobs in
    their 3rd decimal (measured below), so temperature 0 is reproducible only so."""
    return [server, "-m", str(MODEL), "--grammar-file", str(GRAMMAR), "-c", "4096", "-np", str(slots), "-t", "1",
            "--no-cache-prompt", "--alias", "tiny-llama", "--host", "127.0.0.1", "--port", str(port), "--no-webui",
            "--metrics", "--api-key", API_KEY]


class Server:
    def __init__(self, server, log, slots=1):
        self.port = free_port()
        self.args = server_args(server, self.port, slots)
        self.log = log
        self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        start = time.monotonic()
        while True:
            if self.proc.poll() is not None:
                fail(f"llama-server exited with {self.proc.returncode} before answering /health:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() - start > 60:
                fail(f"llama-server did not answer /health within 60 s:\n{self.log_tail()}")
            time.sleep(0.02)
        self.startup_s = time.monotonic() - start

    def log_tail(self):
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-3000:]

    def post(self, path, body, key=API_KEY):
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.base + path, data=json.dumps(body).encode(), headers=headers)
        start = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace"), time.monotonic() - start
        return 200, json.loads(raw), time.monotonic() - start

    def metrics(self):
        """The /metrics counters (Prometheus text) as a dict."""
        request = urllib.request.Request(self.base + "/metrics", headers={"Authorization": f"Bearer {API_KEY}"})
        with urllib.request.urlopen(request, timeout=10) as r:
            lines = r.read().decode().splitlines()
        return {line.split()[0]: float(line.split()[1]) for line in lines if line and not line.startswith("#")}

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def chat_body(user, **extra):
    body = {"model": "tiny-llama", "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
            "temperature": 0, "max_tokens": 4, "logprobs": True, "top_logprobs": 10}
    body.update(extra)
    return body


PEOPLE = ("a woman", "a man", "female", "male", "a woman aged 60", "a nurse", "a driver", "a student")


def prompt(sex):
    return (f"The applicant is {sex}, 35 years old, asks for 2500 EUR over 24 months, has a checking "
            "account with a small balance and owns a house. Should the credit be granted?")


def first_token(response):
    """The chat response's first answer token entry (OpenAI shape: choices[0].logprobs.content[0])."""
    try:
        return response["choices"][0]["logprobs"]["content"][0]
    except (KeyError, IndexError, TypeError):
        fail(f"no choices[0].logprobs.content[0] in the response: {json.dumps(response)[:2000]}")


def p_yes(entry):
    """P(yes) over the yes/no mass of one token's top_logprobs (as the LLM executor computes it)."""
    probs = {}
    for alt in entry["top_logprobs"]:
        word = alt["token"].replace("\u2581", " ").strip().lower()
        if word in ("yes", "no"):
            probs[word] = probs.get(word, 0.0) + math.exp(alt["logprob"])
    if "yes" not in probs or "no" not in probs:
        fail(f"top_logprobs lack a yes or a no token: {[a['token'] for a in entry['top_logprobs']]}")
    return probs["yes"] / (probs["yes"] + probs["no"])


def stable(response):
    """The response without the fields that change between identical requests."""
    r = json.loads(json.dumps(response))
    for key in ("id", "created", "timings", "system_fingerprint"):
        r.pop(key, None)
    return r


def check_model(python):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tiny.gguf"
        subprocess.run([python, str(ROOT / "scripts/make_tiny_llama.py"), str(out)], check=True, stdout=subprocess.DEVNULL)
        if out.read_bytes() != MODEL.read_bytes():
            fail(f"scripts/make_tiny_llama.py does not write the checked-in {MODEL.relative_to(ROOT)}")
    print(f"ok   scripts/make_tiny_llama.py writes {MODEL.relative_to(ROOT)} byte for byte")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--save", action="store_true", help="write sample requests/responses to tests/fixtures/llm/")
    parser.add_argument("--gguf-python", help="a python with gguf==0.19.0: check the model is what the script writes")
    args = parser.parse_args()
    server = os.environ.get("FAIRPIPE_LLAMA_SERVER")
    if not server or not shutil.which(server):
        fail('FAIRPIPE_LLAMA_SERVER is not set to llama-server: run eval "$(scripts/test.sh --provision-only)" first')
    if args.gguf_python:
        check_model(args.gguf_python)
    version = subprocess.run([server, "--version"], capture_output=True, text=True)
    print(f"llama-server: {(version.stdout + version.stderr).strip().splitlines()[0]}")

    with tempfile.NamedTemporaryFile("w+", prefix="llama-server-", suffix=".log") as log:
        srv = Server(server, log)
        try:
            request, first = run_checks(srv, args.save)
        finally:
            srv.stop()
        # 7. a new server process answers the same request the same way
        srv = Server(server, log)
        try:
            status, again, _ = srv.post("/v1/chat/completions", request)
        finally:
            srv.stop()
        if status != 200 or stable(again) != stable(first):
            fail(f"a restarted server answered the same request differently:\n{stable(first)}\n{again}")
        print("ok   a restarted server answers the first request identically")
        # For the record (not a check): with 4 slots, requests in flight together are batched
        srv = Server(server, log, slots=4)
        try:
            prompts = [prompt(s) for s in PEOPLE]
            alone = [first_token(srv.post("/v1/chat/completions", chat_body(p))[1]) for p in prompts]
            with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
                together = list(pool.map(lambda p: first_token(srv.post("/v1/chat/completions", chat_body(p))[1]), prompts))
        finally:
            srv.stop()
        delta = max(abs(a["logprob"] - b["logprob"]) for a, b in zip(alone, together))
        flips = sum(a["token"] != b["token"] for a, b in zip(alone, together))
        print(f"note -np 4: 8 prompts in flight at once vs one at a time: largest logprob difference {delta:.2e}, "
              f"{flips} answers changed")
    print("llama_smoke: all checks passed")


def run_checks(srv, save):
    print("args:", " ".join(a if a.startswith("-") or "/" not in a else Path(a).name for a in srv.args[1:]))
    print(f"ok   llama-server answers /health {srv.startup_s * 1000:.0f} ms after start")

    # 1. chat completion with logprobs at temperature 0
    request = chat_body(prompt("a woman"))
    status, first, _ = srv.post("/v1/chat/completions", request)
    if status != 200:
        fail(f"/v1/chat/completions answered {status}: {first}")
    answer = first["choices"][0]["message"]["content"]
    if answer not in ("yes", "no"):
        fail(f"the answer is {answer!r}, not yes or no")
    entry = first_token(first)
    tops = [alt["token"] for alt in entry["top_logprobs"]]
    if "yes" not in tops or "no" not in tops:
        fail(f"the first answer token's top_logprobs do not list both yes and no: {tops}")
    print(f"ok   chat answer {answer!r}, token {entry['token']!r} logprob {entry['logprob']:.4f}; top_logprobs {tops}")

    # 2. reproducible at temperature 0, sequentially and with requests in flight at once
    times = []
    for _ in range(5):
        status, again, seconds = srv.post("/v1/chat/completions", request)
        times.append(seconds)
        if stable(again) != stable(first):
            fail(f"the same request at temperature 0 answered differently:\n{stable(first)}\n{stable(again)}")
    times.sort()
    print(f"ok   the same request 5 more times: identical answers and logprobs; wall per request "
          f"median {times[2] * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms")
    prompts = [prompt(s) for s in PEOPLE]
    sequential = [stable(srv.post("/v1/chat/completions", chat_body(p))[1]) for p in prompts]
    with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
        start = time.monotonic()
        parallel = list(pool.map(lambda p: stable(srv.post("/v1/chat/completions", chat_body(p))[1]), prompts))
        batch_s = time.monotonic() - start
    differing = [i for i, (a, b) in enumerate(zip(sequential, parallel)) if a != b]
    if differing:
        i = differing[0]
        fail(f"{len(differing)} of {len(prompts)} answers differ when asked 8 at once from one at a time: "
             f"prompt {i}:\n{sequential[i]['choices'][0]['logprobs']['content'][0]}\n"
             f"{parallel[i]['choices'][0]['logprobs']['content'][0]}")
    print(f"ok   8 different prompts in flight at once answer as they do one at a time ({batch_s * 1000:.0f} ms for the 8)")

    # 3. the model reads the prompt
    scores = [p_yes(first_token(r)) for r in sequential]
    if len({round(s, 9) for s in scores}) < 2:
        fail(f"P(yes) is the same for every prompt: {scores}")
    print("ok   P(yes) differs between prompts: " + ", ".join(f"{s:.4f}" for s in scores))
    answers = [r["choices"][0]["message"]["content"] for r in sequential]
    disagree = [(a, p) for a, p in zip(answers, scores) if (a == "yes") != (p > 0.5)]
    if disagree or len(set(answers)) < 2:
        fail(f"the answers {answers} should be yes exactly where P(yes) > 1/2 ({scores}), and both occur")
    print(f"ok   the answers are yes exactly where P(yes) > 1/2: {answers}")

    # 4. the completions endpoint
    completion_request = {"model": "tiny-llama", "prompt": f"{SYSTEM}\n{prompt('a woman')}\nAnswer:", "temperature": 0,
                          "max_tokens": 4, "logprobs": 10}
    status, completion, _ = srv.post("/v1/completions", completion_request)
    if status != 200:
        fail(f"/v1/completions answered {status}: {completion}")
    text = completion["choices"][0]["text"]
    if text not in ("yes", "no"):
        fail(f"/v1/completions answered {text!r}, not yes or no")
    lp = completion["choices"][0].get("logprobs")
    print(f"ok   /v1/completions answers {text!r}; choices[0].logprobs keys: {sorted(lp) if isinstance(lp, dict) else lp}")

    # 5. a request's own grammar
    status, forced, _ = srv.post("/v1/chat/completions", chat_body(prompt("a woman"), grammar='root ::= "no"'))
    if status != 200 or forced["choices"][0]["message"]["content"] != "no":
        fail(f"a request with grammar root ::= \"no\" did not answer no: {status} {forced}")
    status, forced, _ = srv.post("/v1/chat/completions", chat_body(prompt("a woman"), grammar='root ::= "yes"'))
    if status != 200 or forced["choices"][0]["message"]["content"] != "yes":
        fail(f"a request with grammar root ::= \"yes\" did not answer yes: {status} {forced}")
    print("ok   a request's `grammar` field overrides --grammar-file (forced no, then forced yes)")

    # 6. the API key is required, and /metrics counts what the server did
    status, body, _ = srv.post("/v1/chat/completions", request, key=None)
    if status != 401:
        fail(f"a request without the API key answered {status}, not 401: {body}")
    status, body, _ = srv.post("/v1/chat/completions", request, key="wrong")
    if status != 401:
        fail(f"a request with a wrong API key answered {status}, not 401: {body}")
    print(f"ok   without the key (or with a wrong one) the server answers 401: {body}")
    before = srv.metrics()
    srv.post("/v1/chat/completions", chat_body(prompt("an engineer")))
    srv.post("/v1/chat/completions", chat_body(prompt("an engineer")))
    after = srv.metrics()
    changed = {k: after[k] - before.get(k, 0.0) for k in after if after[k] != before.get(k)}
    print(f"ok   /metrics after 2 requests (one new prompt, asked twice), changed counters: {changed}")

    if save:
        samples = {
            "chat-request.json": request,
            "chat-response.json": first,
            "completion-request.json": completion_request,
            "completion-response.json": completion,
        }
        for name, value in samples.items():
            (FIXTURES / name).write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
        print(f"saved {', '.join(samples)} in {FIXTURES.relative_to(ROOT)}/")
    return request, first


if __name__ == "__main__":
    main()
