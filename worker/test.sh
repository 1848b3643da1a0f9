#!/usr/bin/env bash
# Every test of the edge verifier, exiting non-zero on any failure:
#   1. native unit tests and the shared verify vectors against the Worker's checks;
#   2. the Worker build, through `wrangler deploy --dry-run` (which runs build.sh via
#      wrangler.toml's [build] command, validates wrangler.toml and bundles the output);
#   3. the signers used by the tests (postwire-core's Signer example, the postwire CLI);
#   4. the built Worker in workerd (Miniflare) against a real origin HTTP server on loopback
#      (behaviour, concurrency, vectors, signers, v1a public keys), twice: in KV mode with a real KV namespace
#      (wrangler.toml), and in Durable Object mode with the real DedupObject class
#      (wrangler.durable-object.toml, which wrangler also validates with a dry run);
#   5. inbox mode (wrangler.inbox.toml, validated by a dry run too): the InboxObject in workerd
#      against a counting origin on loopback, and `postwire edge` driving its admin API (test/inbox/);
#   6. listen mode (LISTEN_TOKEN): the ListenObject and real WebSockets in workerd, with the
#      postwire CLI's `listen --worker` relaying to a verifying endpoint on loopback (test/listen/).
# Needs what scripts/setup.sh installs; downloads nothing (loopback network only).
set -euo pipefail
cd "$(dirname "$0")"
ROOT="$(cd .. && pwd)"
# npm's wasm-opt/esbuild/wrangler first (Debian's wasm-opt breaks the build: docs/toolchain.md).
export PATH="$ROOT/node_modules/.bin:$HOME/.cargo/bin:$PATH"

step() { printf '\n\033[1;36m[worker] %s\033[0m\n' "$*"; }

step "native tests (postwire-worker's, from the workspace's test build: scripts/workspace-tests.sh)"
bash "$ROOT/scripts/workspace-tests.sh" run postwire-worker

step "build with worker-build, through wrangler deploy --dry-run"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
WRANGLER_SEND_METRICS=false CI=1 wrangler deploy --dry-run --outdir "$out/dist" 2>&1 | tee "$out/wrangler.log"
grep -q -- '--dry-run: exiting now' "$out/wrangler.log" || { echo "wrangler dry run did not complete" >&2; exit 1; }
if grep -qiE '\bdownloading\b' "$out/wrangler.log"; then echo "the build downloaded something" >&2; exit 1; fi
[ -f build/index.js ] && [ -f build/index_bg.wasm ] || { echo "worker/build is incomplete" >&2; exit 1; }

step "signers for the tests (sign_with_core example, postwire CLI), from the workspace's test build"
POSTWIRE_CORE_SIGNER="$(bash "$ROOT/scripts/workspace-tests.sh" exe example sign_with_core)"
POSTWIRE_CLI="$(bash "$ROOT/scripts/workspace-tests.sh" exe bin postwire)"
[ -x "$POSTWIRE_CORE_SIGNER" ] && [ -x "$POSTWIRE_CLI" ] || { echo "could not build the signers" >&2; exit 1; }
export POSTWIRE_CORE_SIGNER POSTWIRE_CLI

step "wrangler.durable-object.toml: the Durable Object config, through wrangler deploy --dry-run"
# The same build; a copy of the file without its [build] command, so the Worker is not built twice.
do_config=".dry-run.durable-object.toml"
trap 'rm -rf "$out" "$do_config"' EXIT
sed '/^\[build\]$/,/^command = /d' wrangler.durable-object.toml >"$do_config"
WRANGLER_SEND_METRICS=false CI=1 wrangler deploy --dry-run -c "$do_config" --outdir "$out/dist-do" 2>&1 | tee "$out/wrangler-do.log"
grep -q -- '--dry-run: exiting now' "$out/wrangler-do.log" || { echo "wrangler dry run of the Durable Object config did not complete" >&2; exit 1; }
grep -q 'DEDUP_OBJECT' "$out/wrangler-do.log" || { echo "the dry run does not show the DEDUP_OBJECT binding" >&2; exit 1; }
rm -f "$do_config"

step "wrangler.inbox.toml: the inbox config, through wrangler deploy --dry-run"
inbox_config=".dry-run.inbox.toml"
trap 'rm -rf "$out" "$do_config" "$inbox_config"' EXIT
sed '/^\[build\]$/,/^command = /d' wrangler.inbox.toml >"$inbox_config"
WRANGLER_SEND_METRICS=false CI=1 wrangler deploy --dry-run -c "$inbox_config" --outdir "$out/dist-inbox" 2>&1 | tee "$out/wrangler-inbox.log"
grep -q -- '--dry-run: exiting now' "$out/wrangler-inbox.log" || { echo "wrangler dry run of the inbox config did not complete" >&2; exit 1; }
grep -q 'InboxObject' "$out/wrangler-inbox.log" || { echo "the dry run does not show the INBOX binding's InboxObject class" >&2; exit 1; }
rm -f "$inbox_config"

for mode in kv durable-object; do
  step "the built Worker in workerd (Miniflare), $mode mode, real loopback origin"
  POSTWIRE_DEDUP_STORE="$mode" node --test --test-concurrency=1 test/*.test.mjs
done

step "inbox mode in workerd (Miniflare, wrangler.inbox.toml), counting loopback origin"
node --test --test-concurrency=1 test/inbox/*.test.mjs

for mode in kv durable-object; do
  step "listen mode in workerd (Miniflare), $mode mode: postwire listen relaying over a real WebSocket"
  POSTWIRE_DEDUP_STORE="$mode" node --test --test-concurrency=1 test/listen/*.test.mjs
done

step "worker: all tests passed"
