#!/usr/bin/env python3
"""Rewrite the docs' blocks generated from the code, from `fairpipe list --markdown`.

    python3 scripts/write_doc_blocks.py [--check] [FAIRPIPE]

  * docs/pipeline-reference.md, between `<!-- stage-reference:start -->` and `:end -->`:
    `fairpipe list --markdown stages` (every stage kind with its inputs and keys);
  * docs/output-contract.md, between `<!-- figures:start -->` and `:end -->`:
    `fairpipe list --markdown figures` (every kind's top-level summary.json names);
  * docs/llm-audits.md, between `<!-- llm-keys:start -->` and `:end -->`:
    `fairpipe list --markdown llm` (the keys of load_model's `llm` block).

FAIRPIPE is the fairpipe program to ask (default: `cargo run --quiet --locked --`). With
`--check` nothing is written: the exit status is 1 when a doc differs from the program's block.
The tests `the_readme_shows_the_stage_reference`, `the_output_contract_lists_every_kinds_figures`
and `the_llm_guide_lists_the_llm_blocks_keys` fail on the same difference. Python 3 standard library only.
"""

import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCKS = [
    ("stages", "docs/pipeline-reference.md", "stage-reference"),
    ("figures", "docs/output-contract.md", "figures"),
    ("llm", "docs/llm-audits.md", "llm-keys"),
]


def block(program, which):
    """The program's block `which`, as `fairpipe list --markdown WHICH` prints it."""
    out = subprocess.run(program + ["list", "--markdown", which], cwd=ROOT, check=True, capture_output=True, text=True)
    return out.stdout.rstrip("\n")


def replaced(text, marker, new, path):
    """`text` with what lies between `<!-- MARKER:start -->` and `<!-- MARKER:end -->` set to `new`."""
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    if text.count(start) != 1 or text.count(end) != 1:
        sys.exit(f"{path}: expected one `{start}` and one `{end}`")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return f"{head}{start}\n{new}\n{end}{tail}"


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    program = shlex.split(args[0]) if args else ["cargo", "run", "--quiet", "--locked", "--"]
    differ = []
    for which, path, marker in BLOCKS:
        full = os.path.join(ROOT, path)
        with open(full, encoding="utf-8") as f:
            text = f.read()
        new = replaced(text, marker, block(program, which), path)
        if new == text:
            print(f"{path}: up to date")
        elif check:
            differ.append(path)
            print(f"{path}: differs from `fairpipe list --markdown {which}`")
        else:
            with open(full, "w", encoding="utf-8") as f:
                f.write(new)
            print(f"{path}: rewritten")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
