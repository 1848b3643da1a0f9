#!/usr/bin/env bash
# The API's contract, checked by a tool that did not write it: Schemathesis (pinned in
# tests/contract/requirements.txt, installed into .venv by scripts/setup.sh) runs every
# phase (examples, coverage, fuzzing, stateful) with every check against a fresh
# `postwire serve` that has a workspace, an account and a token, once for the public
# document (GET /public/v1/openapi.json) and once for the internal ingest document
# (GET /internal/v1/openapi.json, behind the ingest token). It passes with 0 failures
# and 0 warnings, and only when the stateful phase got a 2xx from every operation
# (tests/contract/reached.py reads that from the run's cassette). About a minute.
#
# Everything runs in a network namespace of its own with only a loopback interface, so
# the deliveries of the subscriptions Schemathesis creates (to generated host names and
# addresses) can reach nothing outside this machine, and no name resolves: exactly a
# machine without DNS. Needs root or unprivileged user namespaces (`unshare`).
#
# One round with a fixed seed (below); CONTRACT_SEEDS="random random" explores fresh data,
# CONTRACT_SEED=N runs only seed N (each run prints its seed, so a failure can be replayed).
# CONTRACT_KEEP=1 keeps the temporary folder (database, server log, cassettes).
set -euo pipefail
cd "$(dirname "$0")/../.."
step() { printf '\n\033[1;32m[contract] %s\033[0m\n' "$*"; }

VENV="$PWD/.venv"
[ -x "$VENV/bin/st" ] || { echo "tests/contract/test.sh: run scripts/setup.sh first (it makes .venv with Schemathesis)" >&2; exit 1; }

if [ -z "${POSTWIRE_CONTRACT_IN_NETNS:-}" ]; then
  step "building postwire-cli (the workspace's test build: scripts/workspace-tests.sh)"
  POSTWIRE_BIN="$(bash scripts/workspace-tests.sh exe bin postwire)"
  export POSTWIRE_BIN POSTWIRE_CONTRACT_IN_NETNS=1
  if [ "$(id -u)" = 0 ]; then
    exec unshare --net bash "$0" "$@"
  else
    exec unshare --map-root-user --net bash "$0" "$@"
  fi
fi

# From here on: inside the namespace.
ip link set lo up
started=$(date +%s)
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "${CONTRACT_KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

ingest_token="pwi_contract_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
step "postwire serve on a fresh database"
"$POSTWIRE_BIN" serve --db "$work/postwire.db" --listen 127.0.0.1:0 --ingest-token "$ingest_token" \
  --rate-limit-per-hour 1000000 --unauthenticated-per-hour 1000000 --max-subscriptions-per-workspace 1000000 \
  --daily-event-quota 1000000000 --log warn > "$work/serve.out" 2> "$work/serve.log" &
server_pid=$!
for _ in $(seq 100); do
  grep -q '^listening on ' "$work/serve.out" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.1
done
base="$(sed -n 's/^listening on //p' "$work/serve.out")"
[ -n "$base" ] || { echo "the server did not start" >&2; cat "$work/serve.log" >&2; exit 1; }
echo "serving at $base"

# A workspace (registered by the token command), an account of it, and a token.
token="$("$POSTWIRE_BIN" token create --db "$work/postwire.db" --workspace ws_contract \
  --scope webhooks:write --name contract 2>/dev/null)"
curl -sf -X PUT -H "Authorization: Bearer $ingest_token" "$base/internal/v1/workspaces/ws_contract" \
  -d '{"name": "Contract"}' > /dev/null
curl -sf -X PUT -H "Authorization: Bearer $ingest_token" "$base/internal/v1/workspaces/ws_contract/integrations/acc_1" \
  -d '{"name": "Acme on X", "providerIdentifier": "x"}' > /dev/null

# One round by default, with a fixed seed so that CI does not turn red on data it drew for
# the first time: 7 (with which every check once found four schema-valid requests answered
# 400). What 122659745484703776324958779150183355661 found (a form-feed body accepted as
# empty) has a unit test now; CONTRACT_SEEDS="7 122659745484703776324958779150183355661"
# runs both, CONTRACT_SEEDS="random random …" explores fresh data (each run prints its seed);
# CONTRACT_SEED=N runs that seed alone.
if [ -n "${CONTRACT_SEED:-}" ]; then
  seeds=("$CONTRACT_SEED")
else
  read -r -a seeds <<< "${CONTRACT_SEEDS:-7}"
fi
seed_args=()
failed=0
run() { # name config document-url token document not-tested-operations...
  local name="$1" config="$2" url="$3" bearer="$4" doc="$5"
  shift 5
  local not_tested=("$@")
  step "Schemathesis: $name document, every phase, every check"
  local t0; t0=$(date +%s)
  # A bound in case something hangs: a run takes about half a minute per document.
  if ! timeout 300 "$VENV/bin/st" --config-file "$config" run "$url" --no-color \
      -H "Authorization: Bearer $bearer" "${seed_args[@]}" \
      --report vcr --report-vcr-path "$work/$name.yaml"; then
    failed=1
  fi
  echo "$name: Schemathesis took $(( $(date +%s) - t0 )) s"
  python3 tests/contract/reached.py "$doc" "$work/$name.yaml" "${not_tested[@]}" || failed=1
}
# resendDelivery needs a finished delivery, and in this network namespace every delivery
# waits for its next retry (hours away): its 2xx is tested in crates/postwire-server/tests/replay_api.rs,
# and resendOperatorWebhookDelivery's (the same reason) in operator_webhooks_api.rs.
# sendTestEvent is reached only through two of the document's 22 links (from createWebhook
# and listWebhooks), and Schemathesis' random walk skipped it in 2 of 6 runs even with 400
# scenarios; its 2xx, signed and delivered, is tested in crates/postwire-server/tests/deliveries_api.rs.
for seed in "${seeds[@]}"; do
  seed_args=()
  [ "$seed" = random ] || seed_args=(--seed "$seed")
  run "public-seed-$seed" tests/contract/public.toml "$base/public/v1/openapi.json" "$token" docs/openapi.json getOpenApiDocument resendDelivery resendOperatorWebhookDelivery sendTestEvent
  run "ingest-seed-$seed" tests/contract/ingest.toml "$base/internal/v1/openapi.json" "$ingest_token" docs/ingest-openapi.json getIngestOpenApiDocument
done

if [ "$failed" != 0 ]; then
  echo "contract test FAILED (server log: $work/serve.log; set CONTRACT_KEEP=1 to keep it)" >&2
  [ -n "${CONTRACT_KEEP:-}" ] || tail -n 20 "$work/serve.log" >&2
  exit 1
fi
step "contract test passed in $(( $(date +%s) - started )) s"
