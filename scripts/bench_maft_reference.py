#!/usr/bin/env python3
"""Runs the MAFT reference code's numpy port (scripts/reference_ports/maft_reference.py) on a
benchmark and keeps every run: one JSON line per run in docs/figures/maft-reference/runs.jsonl
(IDIs, model calls, the run's process CPU and wall seconds, the port's own output line, and the
provenance of scripts/figures_meta.py), the port's output in runs.log beside it.

    python3 scripts/bench_maft_reference.py census 7 100 1000 1 2 3
    # dataset, protected column indices, global seeds, local iterations, then the random seeds

Run it with a Python that has numpy and onnxruntime (scripts/test.sh provisions one:
~/.cache/fairpipe/onnxruntime-venv/bin/python). One process at a time; the port scores on one
thread.
"""
import ast
import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_meta import meta  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = os.path.join(HERE, 'reference_ports', 'maft_reference.py')
OUT = os.path.join(HERE, '..', 'docs', 'figures', 'maft-reference')


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    dataset, prot, g, l = sys.argv[1:5]
    os.makedirs(OUT, exist_ok=True)
    for seed in sys.argv[5:]:
        cmd = [sys.executable, PORT, dataset, prot, g, l, seed, '1', '1']
        record = meta(PORT, ' '.join(['python3', os.path.relpath(PORT)] + cmd[2:]))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        wall = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        line = out.strip().splitlines()[-1]
        # The port's last line ends with its result: {'n_global': …, 'total': …, 'local': …, 'calls': …}.
        res = ast.literal_eval(line[line.rindex('{'):])
        record.update(dataset=dataset, protected=prot, global_seeds=int(g), local_iterations=int(l),
                      seed=int(seed), global_idis=res['n_global'], idis=res['total'], model_calls=res['calls'],
                      process_cpu_s=round(cpu, 3), wall_s=round(wall, 3), output=line,
                      python=sys.version.split()[0])
        with open(os.path.join(OUT, 'runs.jsonl'), 'a') as f:
            f.write(json.dumps(record) + '\n')
        with open(os.path.join(OUT, 'runs.log'), 'a') as f:
            f.write('$ %s\n%s' % (record['command'], out))
        print(line, 'cpu %.1f s wall %.1f s' % (cpu, wall), flush=True)


if __name__ == '__main__':
    main()
