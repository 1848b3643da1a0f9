#!/usr/bin/env bash
# A TypeScript client generated from the public OpenAPI document works: fetches the
# document from a fresh `postwire serve`, generates types with openapi-typescript,
# type-checks client.test.mts against them with tsc (so the document must describe the
# calls it makes, and must refuse the wrong ones it marks), then runs it with node's
# test runner: create, list, read, pause, resume and delete a subscription through
# openapi-fetch, and a post look-up. Pins: the root package.json (npm ci).
set -euo pipefail
cd "$(dirname "$0")/../../.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
step() { printf '\n\033[1;32m[client] %s\033[0m\n' "$*"; }
[ -x node_modules/.bin/openapi-typescript ] || { echo "tests/contract/client/test.sh: run npm ci at the repository root first" >&2; exit 1; }

step "building postwire-cli (the workspace's test build: scripts/workspace-tests.sh)"
bin="$(bash scripts/workspace-tests.sh exe bin postwire)"

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

step "postwire serve on a fresh database"
"$bin" serve --db "$work/postwire.db" --listen 127.0.0.1:0 --ingest-token "pwi_client_test_0123456789" \
  --log warn > "$work/serve.out" 2> "$work/serve.log" &
server_pid=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$work/serve.out" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.1
done
base="$(sed -n 's/^listening on //p' "$work/serve.out")"
[ -n "$base" ] || { echo "the server did not start" >&2; exit 1; }
token="$("$bin" token create --db "$work/postwire.db" --workspace ws_client --scope webhooks:write --name client 2>/dev/null)"

step "openapi-typescript: types from the served document"
curl -sf "$base/public/v1/openapi.json" -o "$work/openapi.json"
mkdir -p tests/contract/client/generated
openapi-typescript "$work/openapi.json" -o tests/contract/client/generated/api.d.ts

step "tsc: type-check the client against them"
rm -rf tests/contract/client/dist
tsc -p tests/contract/client/tsconfig.json

step "the generated client against the server"
POSTWIRE_BASE_URL="$base" POSTWIRE_TOKEN="$token" POSTWIRE_WORKSPACE=ws_client \
  node --test tests/contract/client/dist/client.test.mjs
