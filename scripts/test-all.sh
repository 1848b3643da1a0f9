#!/usr/bin/env bash
# Runs every test of postwire: installs what is missing (scripts/setup.sh), then the Rust
# workspace's tests, then each part's own test script (wasm in Node and Chromium, the
# Worker in workerd, the examples, the end-to-end test, the Settings screen in Chromium, the API contract with Schemathesis
# and a generated TypeScript client). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# npm's binaryen wasm-opt must win over Debian's (see ../shared/TOOLCHAIN.md).
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

step() { printf '\n\033[1;34m==> %s\033[0m\n' "$*"; }

step "shared test vectors are what generate.py writes"
python3 tests/vectors/generate.py
git diff --exit-code -- tests/vectors || { echo "tests/vectors differ from generate.py's output" >&2; exit 1; }

step "cargo fmt --check and cargo clippy -D warnings"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test --workspace"
cargo test --workspace --locked
step "cargo test -p postwire-core --all-features"
cargo test -p postwire-core --all-features --locked

for part in npm/test.sh worker/test.sh examples/test.sh tests/e2e/test.sh tests/settings/test.sh tests/contract/test.sh tests/contract/client/test.sh; do
  if [ -f "$part" ]; then
    step "$part"
    bash "$part"
  fi
done
step "all tests passed"
