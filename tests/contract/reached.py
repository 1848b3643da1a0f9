#!/usr/bin/env python3
"""What a Schemathesis run reached, read from its VCR cassette (`--report vcr`).

Prints, per phase, how many requests were sent and how many got a 2xx, then per
operation of the document the statuses it answered in the stateful phase. Exits 1 when
some operation never answered a 2xx in the stateful phase, i.e. the document's links
do not lead a client to it with data the server accepts.

Usage: reached.py DOCUMENT.json CASSETTE.yaml [OPERATION_ID_NOT_TESTED ...]

The cassette is read line by line (its layout is fixed: one `- id:` block per
interaction with `phase: name:`, `request: uri:`/`method:` and `status: code:`), so
nothing beyond the standard library is needed.
"""

import json
import re
import sys
from collections import Counter, defaultdict
from urllib.parse import unquote, urlsplit


def operations(document):
    """(method, path template segments, operationId) of every operation."""
    ops = []
    for path, item in document["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "responses" in op:
                ops.append((method.upper(), path.strip("/").split("/"), op["operationId"]))
    return ops


def match(ops, method, uri):
    """The operationId that `method uri` calls, or None."""
    segments = [unquote(s) for s in urlsplit(uri).path.strip("/").split("/")]
    for op_method, template, op_id in ops:
        if op_method != method or len(template) != len(segments):
            continue
        if all(t.startswith("{") or t == s for t, s in zip(template, segments)):
            return op_id
    return None


def interactions(path):
    """(phase, method, uri, status) of every recorded interaction."""
    current = {}
    section = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("- id:"):
                if "status" in current:
                    yield current["phase"], current["method"], current["uri"], current["status"]
                current, section = {}, None
                continue
            stripped = line.strip()
            if line.startswith("  phase:"):
                section = "phase"
            elif line.startswith("  request:"):
                section = "request"
            elif line.startswith("  response:"):
                section = "response"
            elif line.startswith("  ") and not line.startswith("   "):
                section = None
            m = re.match(r"(\w+): '(.*)'$", stripped)
            if not m:
                m = re.match(r"(code): '(\d+)'$", stripped)
            if not m:
                continue
            key, value = m.groups()
            if section == "phase" and key == "name":
                current["phase"] = value
            elif section == "request" and key in ("uri", "method"):
                current.setdefault(key, value)
            elif section == "response" and key == "code":
                current["status"] = int(value)
    if "status" in current:
        yield current["phase"], current["method"], current["uri"], current["status"]


def main():
    document_path, cassette_path, *not_tested = sys.argv[1:]
    with open(document_path, encoding="utf-8") as f:
        ops = operations(json.load(f))
    per_phase = defaultdict(Counter)
    stateful = defaultdict(Counter)
    for phase, method, uri, status in interactions(cassette_path):
        per_phase[phase]["requests"] += 1
        per_phase[phase]["2xx"] += 200 <= status < 300
        per_phase[phase]["4xx"] += 400 <= status < 500
        per_phase[phase]["5xx"] += status >= 500
        if phase == "stateful":
            stateful[match(ops, method, uri)][status] += 1
    for phase in ("examples", "coverage", "fuzzing", "stateful"):
        c = per_phase.get(phase, Counter())
        print(f"  {phase:<9} {c['requests']:>5} requests: {c['2xx']:>5} 2xx, {c['4xx']:>5} 4xx, {c['5xx']:>3} 5xx")
    print("  stateful phase, per operation (status: count):")
    missing = []
    for _, _, op_id in ops:
        statuses = stateful.get(op_id, Counter())
        shown = ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items())) or "not called"
        if op_id in not_tested:
            print(f"    {op_id:<28} (no 2xx required here, see tests/contract/test.sh) {shown}")
            continue
        reached = any(200 <= s < 300 for s in statuses)
        print(f"    {op_id:<28} {'ok ' if reached else 'NO '} {shown}")
        if not reached:
            missing.append(op_id)
    if missing:
        print(f"no 2xx in the stateful phase for: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
