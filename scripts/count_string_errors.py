#!/usr/bin/env python3
"""Count the non-test function signatures that return `Result<_, String>` (issue 59 item 7: typed
errors where callers branch or users read; the target is at most 30).

  scripts/count_string_errors.py [--by-file] [--list]

Searched: every crate's `src/` (core/*, plugins/*, templates/*, python/src, src). Not counted: a
file's test code (from its first `#[cfg(test)]` line on, a one-line `#[cfg(test)] mod x;` aside), `tests.rs` and `testing.rs` files,
`tests/`, `benches/` and `examples/` folders, and comments. A signature may span lines: it is read
from `fn` to its body's `{` or a `;`. Prints the total; --by-file one line per file; --list each
signature's file and line.
"""
import argparse
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEARCHED = ["core", "plugins", "templates", "python/src", "src"]
SKIPPED_PARTS = {"tests", "benches", "examples", "target"}
SKIPPED_NAMES = {"tests.rs", "testing.rs"}
STRING_ERROR = re.compile(r"->\s*(?:std::result::)?Result<.*,\s*(?:std::string::)?String\s*>\s*(?:where\b.*)?$", re.S)


def code(path):
    """(line number, text) of a file's non-test code, line comments removed."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#[cfg(test)]"):
            if stripped.endswith(";"):
                continue  # `#[cfg(test)] mod name;`: a test module in its own file, skipped there
            return
        if stripped.startswith("//"):
            continue
        yield number, line


def signatures(path):
    """(line number, signature text) of every `fn` in a file's non-test code."""
    pending = None
    for number, line in code(path):
        if pending is None:
            match = re.search(r"\bfn\s+\w+", line)
            if not match:
                continue
            pending = (number, line[match.start():])
        else:
            pending = (pending[0], pending[1] + " " + line.strip())
        text = pending[1]
        end = min([i for i in (text.find("{"), text.find(";")) if i >= 0], default=-1)
        if end >= 0:
            yield pending[0], text[:end].strip()
            pending = None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--by-file", action="store_true")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    found = []
    for top in SEARCHED:
        for path in sorted((ROOT / top).rglob("*.rs")):
            relative = path.relative_to(ROOT)
            if SKIPPED_PARTS & set(relative.parts[:-1]) or relative.name in SKIPPED_NAMES:
                continue
            if "src" not in relative.parts:
                continue
            for number, signature in signatures(path):
                if STRING_ERROR.search(signature):
                    found.append((str(relative), number, signature))
    if args.list:
        for file, number, signature in found:
            print(f"{file}:{number}: {signature}")
    if args.by_file:
        counts = {}
        for file, _, _ in found:
            counts[file] = counts.get(file, 0) + 1
        for file, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            print(f"{count:4} {file}")
    print(len(found))


if __name__ == "__main__":
    main()
