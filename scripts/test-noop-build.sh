#!/usr/bin/env bash
# A build with nothing changed does nothing: runs the cargo command it is given, then the
# same command again, and fails if the second compiled anything (a unit cargo did not find
# "fresh"). It does so in the checkout as it is, and again with npm/dist/browser in the other
# state (present or absent), since postwire-server's build script watches different paths
# in each: the npm package's browser build, which the Settings screen embeds when it is
# there. The checkout is left as it was: a real npm/dist/browser is moved aside into
# target/ for the while and back; a missing one is stood in for by two placeholder files,
# removed after.
#
#   scripts/test-noop-build.sh cargo check --workspace --locked
#
# scripts/test.sh's msrv part runs its check through it (the first run is the check).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] && [ "$1" = cargo ] || { echo "usage: scripts/test-noop-build.sh cargo <command> [args...]" >&2; exit 2; }

# Runs the command; with `fresh`, fails when it compiled any unit.
run() { # expect (fresh|any), what
  local expect=$1 what=$2 json rc=0
  json="$(mktemp)"
  "${CMD[@]}" --message-format json >"$json" || rc=$?
  if [ "$rc" -ne 0 ]; then
    python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line) if line.startswith("{") else {}
    if m.get("reason") == "compiler-message":
        sys.stderr.write(m["message"].get("rendered") or "")
' "$json"
    rm -f "$json"
    echo "noop-build: '${CMD[*]}' failed ($what)" >&2
    exit 1
  fi
  local built
  built="$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line) if line.startswith("{") else {}
    if m.get("reason") == "compiler-artifact" and not m.get("fresh"):
        print(m["target"]["name"], m["target"]["kind"], m["package_id"])
' "$json" | sort -u)"
  rm -f "$json"
  if [ "$expect" = fresh ]; then
    if [ -n "$built" ]; then
      echo "noop-build: FAILED: nothing changed, yet the second run ($what) compiled:" >&2
      echo "$built" >&2
      exit 1
    fi
    echo "noop-build: $what: nothing compiled"
  else
    echo "noop-build: $what: $(printf '%s' "$built" | grep -c '' || true) units compiled"
  fi
}
CMD=("$@")

browser=npm/dist/browser
aside="target/noop-build-aside"
made=""
restore() {
  if [ -n "$made" ]; then
    rm -rf "$made"
  elif [ -d "$aside/browser" ]; then
    mkdir -p npm/dist
    mv "$aside/browser" "$browser"
  fi
  rmdir "$aside" 2>/dev/null || true
}
trap restore EXIT

state() { [ -d "$browser" ] && echo "with $browser" || echo "without $browser"; }
run any "$(state)"
run fresh "$(state), again"

if [ -d "$browser" ]; then
  mkdir -p "$aside"
  rm -rf "$aside/browser"
  mv "$browser" "$aside/browser"
else
  # The outermost folder this creates is removed after.
  if [ ! -d npm/dist ]; then made=npm/dist; else made=$browser; fi
  mkdir -p "$browser"
  echo 'export default {};' >"$browser/index.js"
  printf '\0asm\1\0\0\0' >"$browser/postwire_wasm_bg.wasm"
fi
run any "$(state)"
run fresh "$(state), again"
restore
made=""
run any "$(state), restored"
run fresh "$(state), restored, again"
