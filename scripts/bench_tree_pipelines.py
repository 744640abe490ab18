#!/usr/bin/env python3
"""The end-to-end tree pipelines (pipelines/trees/*.toml: MAFT and the estimate on census tree
models, each model by the native tree executor and by ONNX Runtime) run ROUNDS times, one process
at a time; every combination's stage times are kept, one JSON line each, in
docs/figures/trees/pipelines.jsonl with the provenance of scripts/figures_meta.py (the binary's
hash, the machine, the date, the command, `uptime`).

    python3 scripts/bench_tree_pipelines.py [--fairpipe BINARY] [--rounds 2] [--build "how it was built"]

Within a run the matrix alternates the executors model by model, so a change in the machine's load
falls on both alike; the published end-to-end ratio of a model is ONNX Runtime's seconds of the
stages after load_model over the native executor's, paired within a run. Needs ONNX Runtime
(`eval "$(bash scripts/test.sh --provision-only)"` exports ORT_DYLIB_PATH).
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_meta import meta  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
PIPELINES = ['pipelines/trees/census-maft-trees.toml', 'pipelines/trees/census-estimate-trees.toml']
OUT = os.path.join(ROOT, 'docs', 'figures', 'trees', 'pipelines.jsonl')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--fairpipe', default=os.path.join(ROOT, 'target', 'release', 'fairpipe'))
    ap.add_argument('--rounds', type=int, default=2)
    ap.add_argument('--build', default='release', help='how the binary was built (recorded)')
    ap.add_argument('--pipeline', action='append', help='run only this pipeline (repeatable)')
    ap.add_argument('--out', default=OUT, help='the JSONL file to append to')
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    for rnd in range(1, args.rounds + 1):
        for pipeline in args.pipeline or PIPELINES:
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, 'out')
                cmd = [args.fairpipe, 'run', pipeline, '--out', out, '--quiet', '--jobs', '1']
                record = meta(args.fairpipe, ' '.join(['fairpipe'] + cmd[1:4] + ['OUT'] + cmd[5:]))
                subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
                for summary_file in sorted(glob.glob(os.path.join(out, '*', 'summary.json'))):
                    summary = json.load(open(summary_file))
                    stages = summary['stages']
                    model = stages['model']
                    # The combination's folder names its matrix values: `03_path=xgboost_executor=native`.
                    name = os.path.basename(os.path.dirname(summary_file))
                    combo = dict(re.findall(r'(path|executor)=(.*?)(?=_(?:path|executor)=|$)', name))
                    after = {name: s for name, s in stages.items() if s.get('kind') not in ('load', 'load_model')}
                    row = dict(record, build=args.build, round=rnd, pipeline=pipeline,
                               combination=os.path.basename(os.path.dirname(summary_file)),
                               model_path=combo.get('path'), executor=combo.get('executor'),
                               executor_figure=model.get('executor'),
                               load_model_s=model.get('elapsed_s'),
                               stages_s=round(sum(s['elapsed_s'] for s in after.values()), 4),
                               model_time_s=round(sum(s.get('model_time_s') or 0.0 for s in after.values()), 4),
                               stage_times={name: s['elapsed_s'] for name, s in after.items()},
                               idis={name: s.get('discriminatory') for name, s in after.items() if s.get('kind') == 'verify'},
                               rate=stages.get('estimate', {}).get('rate'))
                    with open(args.out, 'a') as f:
                        f.write(json.dumps(row) + '\n')
                    print(rnd, row['combination'], row['executor'], row['stages_s'], flush=True)


if __name__ == '__main__':
    main()
