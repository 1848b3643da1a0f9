#!/usr/bin/env python3
"""Fails when a crate's top-level modules depend on each other in a cycle.

For every crate of the workspace (each `src/lib.rs` or `src/main.rs` under `crates/`,
and `worker/`), each top-level module (`src/<name>.rs` or `src/<name>/`) is a node, and
a path `crate::<other>` written in it (in a `use`, or inline) is an edge to `<other>`.
A strongly connected component with more than one module is a cycle, printed with the
lines that make it. Submodules count as their top-level module: a cycle inside one
top-level module is that module's own business. Comments (`//`) are skipped; `super::`
paths are not followed (from a top-level module they only reach the crate root).

Usage: scripts/module-cycles.py [ROOT]   (exit 1 on a cycle)
"""

import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
# A path segment followed by `::`, `;`, `,`, `}` or ` as`: code, not prose in a string.
CRATE_PATH = re.compile(r"\bcrate::(?:\{\s*)?([a-z_][a-z0-9_]*)(?=::|\s*[;,}]|\s+as\b)")
USE_GROUP = re.compile(r"\buse\s+crate::\{([^;]*)\}", re.S)


def top_module(src: Path, file: Path):
    rel = file.relative_to(src).parts
    if len(rel) == 1:
        name = rel[0][:-3]
        return None if name in ("lib", "main") else name
    return rel[0]


def edges_of(text: str):
    """(target module, line number) for each `crate::x` path in `text`."""
    found = []
    code = "\n".join(line.split("//", 1)[0] for line in text.splitlines())
    for m in CRATE_PATH.finditer(code):
        found.append((m.group(1), code.count("\n", 0, m.start()) + 1))
    for m in USE_GROUP.finditer(code):  # use crate::{a::X, b};
        line = code.count("\n", 0, m.start()) + 1
        for part in m.group(1).split(","):
            name = part.strip().split("::")[0].strip("{} \n")
            if re.fullmatch(r"[a-z_][a-z0-9_]*", name) and name != "self":
                found.append((name, line))
    return found


def cycles(src: Path):
    graph, why = {}, {}
    for file in sorted(src.rglob("*.rs")):
        if "bin" in file.relative_to(src).parts[:1]:
            continue
        node = top_module(src, file)
        if node is None:
            continue
        graph.setdefault(node, set())
        for target, line in edges_of(file.read_text(encoding="utf-8")):
            if target != node:
                graph[node].add(target)
                why.setdefault((node, target), f"{file.relative_to(ROOT)}:{line}")
    # Tarjan's strongly connected components.
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue  # a path to something that is not a top-level module file
            if w not in index:
                visit(w)
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

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out, graph, why


def main():
    crates = sorted(p.parent for p in ROOT.glob("crates/*/src") if p.is_dir())
    if (ROOT / "worker/src").is_dir():
        crates.append(ROOT / "worker")
    failed = False
    for crate in crates:
        comps, graph, why = cycles(crate / "src")
        for comp in comps:
            failed = True
            print(f"{crate.relative_to(ROOT)}: module cycle among {', '.join(comp)}")
            for a in comp:
                for b in sorted(graph[a] & set(comp)):
                    print(f"  {a} -> {b}  ({why[(a, b)]})")
    if failed:
        sys.exit(1)
    print(f"no module cycles in {len(crates)} crates")


if __name__ == "__main__":
    main()
