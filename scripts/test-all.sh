#!/usr/bin/env bash
# Runs every test of postwire, as CI does: installs what is missing (scripts/setup.sh),
# then every part of scripts/test.sh (vectors, lints, docs, MSRV, cargo deny, the Rust
# workspace, fuzzing, wasm in Node and Chromium, the Worker in workerd, the examples, the
# end-to-end test, the Settings screen in Chromium, the API contract with Schemathesis and a generated TypeScript client),
# with a timing per part. Exits non-zero on any failure.
#
# One part alone, with the same command CI uses: scripts/test.sh <part> (--list for names).
set -euo pipefail
cd "$(dirname "$0")/.."
setup_start=$SECONDS
bash scripts/setup.sh
# scripts/test.sh prints it in its table of timings, before the parts'.
export POSTWIRE_SETUP_SECONDS=$((SECONDS - setup_start))
echo "setup: ${POSTWIRE_SETUP_SECONDS}s"
exec bash scripts/test.sh
