#!/usr/bin/env python3
"""Turns a quickstart of the docs into the shell script that runs it, so that the docs and
their test cannot drift apart.

    extract.py FILE.md NAME

takes, in order, every fenced block of FILE.md whose info string has the word NAME
(```sh NAME, or ```js NAME file=server.mjs) and prints one bash script: a block with
`file=PATH` becomes a heredoc that writes PATH (what the docs ask the reader to save), any
other block is copied as it is (what the reader pastes). Fails if there is no such block.
"""
import re
import sys

FENCE = re.compile(r"^(```+|~~~+)(.*)$")
EOF_MARK = "__QUICKSTART_FILE_END__"


def blocks(text):
    """Yields (info words, body) for each fenced block."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2).split()
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        yield info, "\n".join(body) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: extract.py FILE.md NAME")
    path, name = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = []
    for info, body in blocks(text):
        if name not in info[1:]:
            continue
        target = next((w[len("file="):] for w in info if w.startswith("file=")), None)
        if target is None:
            out.append(f"# --- {path}: ```{' '.join(info)}\n{body}")
        else:
            if EOF_MARK in body:
                sys.exit(f"{path}: a block of {name} contains {EOF_MARK}")
            out.append(f"# --- {path}: {target}\nmkdir -p \"$(dirname '{target}')\"\n"
                       f"cat > '{target}' <<'{EOF_MARK}'\n{body}{EOF_MARK}\n")
    if not out:
        sys.exit(f"{path}: no fenced block tagged {name}")
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
