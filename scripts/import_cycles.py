#!/usr/bin/env python3
"""Draw the import graph of a Rust crate's modules and print its circles.

    scripts/import_cycles.py [CRATE_SRC ...]   (default: every crate of the workspace)

A node is a module file (`src/a/b.rs` or `src/a/b/mod.rs` is `a::b`). An edge a -> b is a path
`crate::b::…` (or `super::…`, `self::…` resolved) written in a's code, outside comments and
test modules, naming b or an item inside b; a module's own declaration of its children (`mod c;`)
is not an edge, and neither is a path to a module's own ancestor folder of modules alone. Every
strongly connected component of more than one file is a circle: exit status 1 when any exists.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def modules(src: pathlib.Path) -> dict:
    """Module path (tuple) -> file."""
    out = {}
    for f in src.rglob("*.rs"):
        parts = list(f.relative_to(src).with_suffix("").parts)
        if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
            parts = parts[:-1]
        out[tuple(parts)] = f
    return out


def code_of(text: str) -> str:
    """The text without comments and without `#[cfg(test)]` modules."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    return text[: cut.start()] if cut else text


PATH = re.compile(r"\b(crate|super|self)((?:::\{?[A-Za-z_][A-Za-z0-9_]*)+)")
GROUP = re.compile(r"\b(crate|super|self)::((?:[a-z_][a-z0-9_]*::)*)\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")


def targets(me: tuple, text: str, mods: dict):
    """The module files `text` (of module `me`) names."""
    found = set()

    def resolve(base: str, rest: list):
        if base == "crate":
            path = []
        elif base == "self":
            path = list(me)
        else:
            path = list(me[:-1])
        path += [p for p in rest if p]
        # the deepest module along the path
        best = None
        for n in range(len(path), -1, -1):
            if tuple(path[:n]) in mods:
                best = tuple(path[:n])
                break
        if best is not None and best != me and best != ():
            found.add(best)

    for m in GROUP.finditer(text):
        base, prefix, inner = m.group(1), m.group(2), m.group(3)
        pre = [p for p in prefix.split("::") if p]
        for item in re.split(r",(?![^{]*\})", inner):
            item = item.strip()
            if not item:
                continue
            head = re.split(r"::|\s", item)
            resolve(base, pre + [h for h in head if re.match(r"^[a-z_][a-z0-9_]*$", h)][:3])
    for m in PATH.finditer(text):
        parts = [p.strip("{") for p in m.group(2).split("::") if p]
        names = []
        for p in parts:
            if re.match(r"^[a-z_][a-z0-9_]*$", p):
                names.append(p)
            else:
                break
        resolve(m.group(1), names)
    # a module brought in by name (`use crate::stages;`, `use super::remote;`), then used as
    # `stages::load::…`
    for m in re.finditer(r"\buse\s+(crate|super|self)((?:::[a-z_][a-z0-9_]*)+)\s*;", text):
        parts = [p for p in m.group(2).split("::") if p]
        base = [] if m.group(1) == "crate" else list(me) if m.group(1) == "self" else list(me[:-1])
        module = tuple(base + parts)
        if module not in mods:
            continue
        for use in re.finditer(r"(?<![:\w])" + re.escape(parts[-1]) + r"((?:::[a-z_][a-z0-9_]*)+)", text):
            rest = [p for p in use.group(1).split("::") if p]
            resolve("crate", list(module) + rest)
    return found


def cycles(src: pathlib.Path):
    mods = modules(src)
    graph = {}
    for me, f in mods.items():
        graph[me] = targets(me, code_of(f.read_text()), mods)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    return out, graph


def main():
    srcs = [pathlib.Path(a) for a in sys.argv[1:]] or sorted(p.parent for p in ROOT.glob("**/src/lib.rs") if "target" not in p.parts)
    bad = 0
    for src in srcs:
        found, graph = cycles(src)
        for comp in found:
            bad += 1
            names = ["::".join(c) for c in comp]
            print(f"{src}: circle of {len(comp)}: {', '.join(names)}")
            for a in comp:
                inside = sorted("::".join(b) for b in graph[a] if b in comp)
                print(f"    {'::'.join(a)} -> {', '.join(inside)}")
    print(f"{bad} circle(s)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
