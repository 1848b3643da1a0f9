#!/usr/bin/env bash
# The end-to-end test: `postwire serve` (real SQLite) → the edge Worker (worker-build output
# in workerd via Miniflare, real KV) → a Node origin verifying with the `postwire` npm
# package, over real loopback HTTP, with origin failures and a SIGKILL of the sender.
# Takes about 40 s (the sender's first retry comes 30 s after a failure).
#
# Needs scripts/setup.sh and `npm ci` at the root. Builds what is missing: postwire-cli
# (always, incrementally), the npm package (npm/dist) and the Worker (worker/build).
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
if [ ! -f worker/build/index.js ] || [ ! -f worker/build/index_bg.wasm ]; then
  step "building the Worker (worker/build.sh)"
  bash worker/build.sh
fi

step "building postwire-cli"
POSTWIRE_BIN="$(cargo build --locked -p postwire-cli --bin postwire --message-format=json |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)"
[ -x "$POSTWIRE_BIN" ] || { echo "could not build postwire-cli" >&2; exit 1; }
export POSTWIRE_BIN

step "sender → Worker → origin"
start=$(date +%s)
node --test tests/e2e/e2e.test.mjs
step "end-to-end test passed in $(( $(date +%s) - start )) s"
