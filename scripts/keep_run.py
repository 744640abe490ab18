#!/usr/bin/env python3
"""Keep a benchmark run's output as raw results under docs/figures/TOPIC/ (issue 49: no published
figure without its raw output): one JSON line per run, appended to docs/figures/TOPIC/runs.jsonl,
with the provenance of scripts/figures_meta.py (the program's hash, the machine, the UTC date, the
command, `uptime` before and after the run), the environment variables that change a run
(`FAIRPIPE_*`, `RAYON_*`, `ORT_*`), the command's exit status and standard output, `--value`
pairs and the contents of the files the run wrote (`--keep`: JSON parsed, other files as text).

    python3 scripts/keep_run.py TOPIC PROGRAM [--build TEXT] [--keep FILE]... [--value KEY=VALUE]... [-- COMMAND...]

PROGRAM is the executable whose sha256 is recorded; `cargo-bench:NAME` is the bench target NAME
as `cargo bench --locked --bench NAME --no-run` builds it (the path cargo reports). With COMMAND,
it is run from the repository's root, its standard output passed through and kept; the exit status
is the command's; the `--keep` files are removed before it runs, so one it did not write stops the
record. Without COMMAND the record holds what the calling script measured itself
(`--value`, `--keep`, `--command` for how it was called). Used by scripts/bench-sweep.sh,
bench-methods.sh, bench-text.sh and bench-search.sh.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures_meta import meta, uptime  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
ENV_PREFIXES = ('FAIRPIPE_', 'RAYON_', 'ORT_')


def cargo_bench(name):
    """The path of bench target `name`'s executable, built by cargo if it is not up to date."""
    out = subprocess.run(['cargo', 'bench', '--locked', '--bench', name, '--no-run', '--message-format=json'],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    paths = [m['executable'] for m in map(json.loads, filter(None, out.splitlines()))
             if m.get('reason') == 'compiler-artifact' and m.get('executable') and m['target']['name'] == name]
    if not paths:
        sys.exit('keep_run.py: cargo reported no executable for bench `%s`' % name)
    return paths[-1]


def value(text):
    """A `--value` as JSON when it parses (numbers, true/false), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def main():
    argv = sys.argv[1:]
    command = argv[argv.index('--') + 1:] if '--' in argv else []
    argv = argv[:argv.index('--')] if '--' in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('topic', help='the folder under docs/figures/')
    ap.add_argument('program', help='the executable whose hash is recorded, or cargo-bench:NAME')
    ap.add_argument('--build', default='', help='how the program was built (recorded)')
    ap.add_argument('--keep', action='append', default=[], help='a file the run wrote, kept in the record')
    ap.add_argument('--value', action='append', default=[], help='KEY=VALUE measured by the calling script')
    ap.add_argument('--command', help='the command recorded when no COMMAND is run')
    args = ap.parse_args(argv)
    program = cargo_bench(args.program.split(':', 1)[1]) if args.program.startswith('cargo-bench:') else args.program
    record = meta(program, ' '.join(command) if command else (args.command or ' '.join(sys.argv)))
    record['build'] = args.build
    record['env'] = {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES)}
    started = time.time()
    status = 0
    if command:
        for path in args.keep:
            if os.path.isfile(os.path.join(ROOT, path)):
                os.remove(os.path.join(ROOT, path))
        proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        lines = []
        for line in proc.stdout:
            sys.stdout.write(line)
            lines.append(line)
        status = proc.wait()
        record['stdout'] = ''.join(lines)
        record['exit_status'] = status
        record['wall_s'] = round(time.time() - started, 3)
    record['uptime_after'] = uptime()
    for pair in args.value:
        key, _, text = pair.partition('=')
        record[key] = value(text)
    kept = {}
    for path in args.keep:
        full = os.path.join(ROOT, path)
        if not os.path.isfile(full):
            sys.exit('keep_run.py: %s was not written by this run; nothing recorded' % path)
        text = open(full, encoding='utf-8').read()
        kept[path] = json.loads(text) if path.endswith('.json') else text
    record['files'] = kept
    out = os.path.join(ROOT, 'docs', 'figures', args.topic, 'runs.jsonl')
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'a', encoding='utf-8') as f:
        f.write(json.dumps(record, ensure_ascii=False) + '\n')
    print('keep_run.py: recorded in %s' % os.path.relpath(out, ROOT), file=sys.stderr)
    sys.exit(status)


if __name__ == '__main__':
    main()
