#!/usr/bin/env python3
"""The disk the test suite takes (the figures of README.md's "Run the tests"): the venvs
scripts/test.sh provisions under ~/.cache/fairpipe (MLServer, MLflow, onnxruntime) and a target
folder after `cargo build --workspace --all-targets --locked`. Writes docs/figures/footprint.json
with the provenance of scripts/figures_meta.py.

    python3 scripts/measure_footprint.py [TARGET_DIR]     # default: target
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_meta import meta  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
CACHE = os.path.expanduser('~/.cache/fairpipe')
VENVS = ['mlserver-venv', 'mlflow-venv', 'onnxruntime-venv']


def du(path):
    """Bytes under `path` (`du -sb`)."""
    return int(subprocess.run(['du', '-sb', path], capture_output=True, text=True, check=True).stdout.split()[0])


def main():
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, 'target')
    record = meta(os.path.abspath(__file__))
    record['venv_bytes'] = {v: du(os.path.join(CACHE, v)) for v in VENVS}
    record['target'] = target
    record['target_bytes'] = du(target)
    record['target_incremental'] = any(os.path.isdir(os.path.join(target, p, 'incremental')) and os.listdir(os.path.join(target, p, 'incremental'))
                                       for p in ('debug',))
    with open(os.path.join(ROOT, 'docs', 'figures', 'footprint.json'), 'w') as f:
        json.dump(record, f, indent=1)
        f.write('\n')
    print(json.dumps(record, indent=1))


if __name__ == '__main__':
    main()
