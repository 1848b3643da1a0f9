#!/usr/bin/env bash
# Builds the `postwire` npm package and runs every test of it; exits non-zero on failure.
#   1. the bindings' own Rust tests (native)
#   2. wasm-bindgen-test in Node, then in real headless Chromium (Debian's chromium and
#      chromium-driver; nothing downloaded), run by the wasm-bindgen CLI's test runner
#   3. `node --test` against the built package: every tests/vectors file, the drop-in API,
#      hostile inputs, both module systems, the exports map, Bun and Deno, the types (tsc),
#      workerd through Miniflare, edge-light in the edge-runtime package, Hono in every
#      runtime, the cold start against standardwebhooks, a page in headless Chromium, and
#      once-processing: the protocol, every store's conformance (throwaway redis-server and
#      PostgreSQL, D1/Durable Objects/KV in Miniflare) and two receiver processes sharing one store
#   4. smoke runs of the benchmarks (all verifiers agree in every runtime; figures not meaningful)
# Needs the tools of scripts/setup.sh. Run from anywhere: bash npm/test.sh
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd .. && pwd)
export PATH="$ROOT/node_modules/.bin:$HOME/.cargo/bin:$PATH"
# The wasm builds in a target dir of their own (as npm/build.sh's), so they never wait on
# the workspace's native builds; the native tests are the workspace's shared test build
# (scripts/workspace-tests.sh).
WASM_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target/npm}"

step() { printf '\n\033[1;34m==> npm: %s\033[0m\n' "$*"; }
LOG=$(mktemp -d)
trap 'rm -rf "$LOG"' EXIT

command -v chromedriver >/dev/null || { echo "chromedriver missing: run scripts/setup.sh" >&2; exit 1; }
command -v wasm-bindgen-test-runner >/dev/null || { echo "wasm-bindgen-test-runner missing: run scripts/setup.sh npm" >&2; exit 1; }

step "build"
bash build.sh

step "postwire-wasm's native tests (with providers and ed25519: the other modules' functions too), from the workspace's test build"
bash "$ROOT/scripts/workspace-tests.sh" run postwire-wasm

# The wasm tests: cargo builds them for wasm32 and runs each binary with the runner of the
# wasm-bindgen CLI scripts/setup.sh installed (its version is the crate's), in Node, then in
# Chromium through Debian's chromedriver. Each binary prints a summary; require that the
# integration tests ran.
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
wasm_test() { # log, environment...
  local log=$1
  shift
  env CARGO_TARGET_DIR="$WASM_TARGET_DIR" "$@" cargo test -p postwire-wasm --target wasm32-unknown-unknown --locked 2>&1 | tee "$log"
}
expect_ran() {
  if ! grep -qE 'test result: ok\. [1-9][0-9]* passed' "$1"; then
    echo "no wasm-bindgen test ran in $2" >&2
    exit 1
  fi
}

step "wasm-bindgen-test in Node"
wasm_test "$LOG/node.txt" WASM_BINDGEN_TEST_ONLY_NODE=1
expect_ran "$LOG/node.txt" Node

step "wasm-bindgen-test in headless Chromium (chromedriver $(chromedriver --version | awk '{print $2}'))"
# The tests are not tied to a runner, so ask for the browser explicitly.
wasm_test "$LOG/chrome.txt" WASM_BINDGEN_USE_BROWSER=1 WASM_BINDGEN_TEST_ONLY_WEB=1 CHROMEDRIVER="$(command -v chromedriver)"
expect_ran "$LOG/chrome.txt" Chromium

step "node --test (built package)"
node --test test/*.test.mjs

step "benchmark smoke runs"
node bench/verify.mjs --quick
node bench/v1a.mjs --quick   # postwire/v1a and node:crypto's Ed25519 accept alike
# Every runtime (Node, Bun, Deno, workerd, Chromium): each verifier accepts and rejects alike.
node bench/runtimes.mjs --quick
node bench/cold.mjs --quick       # fresh processes: each verifier accepts a valid delivery cold
node bench/once.mjs --quick       # every store answers a fresh id 204 and a copy as a duplicate

step "npm package: all tests passed"
