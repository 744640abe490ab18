#!/usr/bin/env python3
"""Count the string literals equal to a stage kind's name in non-test Rust code outside the kinds'
own files, the registry and the pipeline builders (issue 59's measure of how closed the kinds are
where they are reported: each such literal is a place a new kind must be added by hand).

  scripts/count_kind_literals.py [--by-file] [--list]

The kinds are read from the registry's list, core/engine/src/stages/mod.rs (`NAME::KIND,`); a file's test code
(from its first `#[cfg(test)]` line on, and `tests.rs` files), examples, comments and one-line
name-word lists (`const …_WORDS: &[&str]`) are not counted; `fairpipe init`'s writer (src/init/write.rs) is a pipeline builder. Prints the total, and with
--by-file one line per file, with --list every literal with its file and line.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Where a kind's name belongs: the kinds' files, the registry, the pipeline builders.
EXCLUDED_DIRS = ["core/engine/src/stages/"]
EXCLUDED_FILES = {
    "core/engine/src/run/registry.rs",
    "core/engine/src/run/builder.rs",
    "core/engine/src/preset.rs",
    "src/init/write.rs",
}
SEARCHED = ["core", "src", "python/src"]


def kinds():
    text = (ROOT / "core/engine/src/stages/mod.rs").read_text()
    names = re.findall(r"^    (\w+)::KIND,$", text, flags=re.M)
    if not names:
        sys.exit("no stage kinds found in core/engine/src/stages/mod.rs")
    return set(names)


# A list of words a column's name is matched against (`const SCORE_WORDS: &[&str] = &[…]`, in
# `fairpipe init`'s guesses): its words are English, not kind names, even where one is spelled
# like a kind ("ranking").
WORD_LIST = re.compile(r"^\s*(pub(\([\w:]+\))?\s+)?const \w+_WORDS: &\[&str\]")


def code_lines(path):
    """(line number, text) of a file's non-test code, comments and name-word lists removed."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip().startswith("#[cfg(test)]"):
            return
        stripped = line.strip()
        if stripped.startswith("//") or WORD_LIST.match(line):
            continue
        yield number, line


LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--by-file", action="store_true")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    names = kinds()
    found = []
    for top in SEARCHED:
        for path in sorted((ROOT / top).rglob("*.rs")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in EXCLUDED_FILES or any(rel.startswith(d) for d in EXCLUDED_DIRS) or path.name == "tests.rs" or "/examples/" in rel:
                continue
            for number, line in code_lines(path):
                # A trailing comment is not code.
                code = line.split(" //")[0]
                for literal in LITERAL.findall(code):
                    if literal in names:
                        found.append((rel, number, literal))
    if args.list:
        for rel, number, literal in found:
            print(f"{rel}:{number}: \"{literal}\"")
    if args.by_file:
        counts = {}
        for rel, _, _ in found:
            counts[rel] = counts.get(rel, 0) + 1
        for rel, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"{n:4} {rel}")
    print(f"kind-name literals: {len(found)}")


if __name__ == "__main__":
    main()
