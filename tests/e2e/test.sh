#!/usr/bin/env bash
# The end-to-end test: `postwire serve` (real SQLite) → the edge Worker (worker-build output
# in workerd via Miniflare, real KV) → a Node origin verifying with the `postwire` npm
# package, over real loopback HTTP, with origin failures and a SIGKILL of the sender.
# Takes about 40 s (the sender's first retry comes 30 s after a failure).
#
# Needs scripts/setup.sh and `npm ci` at the root. Builds what is missing or out of date:
# postwire-cli (the workspace's shared test build), the Worker (worker/build), and the npm
# package when npm/dist is missing.
# Downloads nothing. POSTWIRE_E2E_KEEP=1 keeps the temporary folder (database, sender log).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
step() { printf '\n\033[1;32m[e2e] %s\033[0m\n' "$*"; }

[ -d node_modules/miniflare ] || { echo "tests/e2e/test.sh: run npm ci at the repository root first" >&2; exit 1; }
if [ ! -f npm/dist/node/index-import.cjs ]; then
  step "building the postwire npm package (npm/build.sh)"
  bash npm/build.sh
fi
# Always: it leaves worker/build/ as it is when that is current (the worker part built it).
step "the Worker's build (worker/build.sh)"
bash worker/build.sh

step "building postwire-cli (the workspace's test build: scripts/workspace-tests.sh)"
POSTWIRE_BIN="$(bash scripts/workspace-tests.sh exe bin postwire)"
export POSTWIRE_BIN

step "sender → Worker → origin"
start=$(date +%s)
node --test tests/e2e/e2e.test.mjs
step "end-to-end test passed in $(( $(date +%s) - start )) s"
