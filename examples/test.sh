#!/usr/bin/env bash
# Tests of the JavaScript examples, so they never rot: type-checks them against the
# `postwire` package's types, runs each receiver against real loopback HTTP (signed,
# tampered, duplicate... see test-support/receiver-contract.mjs), and the playground in
# real headless Chromium (Debian's /usr/bin/chromium). The Rust examples (axum-receiver,
# embedded-sender) are workspace members: `cargo test --workspace` runs their tests.
#
# Needs scripts/setup.sh and `npm ci` at the root (one install for every example); builds
# the npm package if npm/dist is missing. Downloads nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
step() { printf '\n\033[1;35m[examples] %s\033[0m\n' "$*"; }

[ -d node_modules/express ] || { echo "examples/test.sh: run npm ci at the repository root first" >&2; exit 1; }
if [ ! -f npm/dist/web/index.js ] || [ ! -f npm/dist/node/index-import.cjs ]; then
  step "building the postwire npm package (npm/build.sh)"
  bash npm/build.sh
fi

step "type-check the JavaScript examples against the package's types (tsc)"
tsc -p examples/tsconfig.json

step "receivers: Express and Fetch-API (Node, Bun, Deno, and as a Worker in workerd), over real loopback HTTP"
node --test --test-concurrency=1 examples/express-receiver/app.test.js examples/fetch-receiver/handler.test.js \
  examples/fetch-receiver/runtimes.test.js examples/fetch-receiver/worker.test.js

step "playground in headless Chromium"
command -v "${CHROMIUM_PATH:-/usr/bin/chromium}" >/dev/null || { echo "chromium is missing: run scripts/setup.sh" >&2; exit 1; }
node --test examples/playground/playground.test.mjs

step "examples: all JavaScript tests passed (screenshots in target/artifacts/)"
