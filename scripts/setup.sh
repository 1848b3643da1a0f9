#!/usr/bin/env bash
# Installs everything postwire's builds and tests need, on a fresh machine or an old one.
# Idempotent: every step first checks whether its tool is already there at the wanted
# version. Nothing here downloads from outside the package registries (crates.io, npm,
# PyPI, Debian); see ../shared/TOOLCHAIN.md for why each pin is what it is.
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_PACK_VERSION=0.15.1
WASM_BINDGEN_VERSION=0.2.130   # must equal the `wasm-bindgen = "=…"` pin in Cargo.toml
WORKER_BUILD_VERSION=0.8.7
MSRV=1.89                      # must equal `rust-version` in Cargo.toml (scripts/test.sh msrv)
CARGO_FUZZ_VERSION=0.13.2
CARGO_DENY_VERSION=0.20.2

log() { printf '\033[1;34m[setup]\033[0m %s\n' "$*"; }
have_version() { command -v "$1" >/dev/null 2>&1 && "$1" --version 2>/dev/null | grep -q "$2"; }

export PATH="$HOME/.cargo/bin:$PATH"

if ! rustup target list --installed | grep -q '^wasm32-unknown-unknown$'; then
  log "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

if ! rustup toolchain list | grep -q "^$MSRV-"; then
  log "rustup toolchain install $MSRV (the workspace's minimum Rust version)"
  rustup toolchain install "$MSRV" --profile minimal
fi

apt_pkgs=()
command -v chromium >/dev/null 2>&1 || apt_pkgs+=(chromium)
command -v chromedriver >/dev/null 2>&1 || apt_pkgs+=(chromium-driver)
command -v wrk >/dev/null 2>&1 || apt_pkgs+=(wrk)
command -v ip >/dev/null 2>&1 || apt_pkgs+=(iproute2)        # tests/contract: loopback in its namespace
command -v unshare >/dev/null 2>&1 || apt_pkgs+=(util-linux)
command -v curl >/dev/null 2>&1 || apt_pkgs+=(curl)
# PostgreSQL's server binaries (initdb, pg_ctl): the tests start throwaway clusters of
# their own (crates/postwire-testpg); no server is left running.
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_pkgs+=(postgresql)
command -v redis-server >/dev/null 2>&1 || apt_pkgs+=(redis-server)   # npm stores: throwaway Redis per test run
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  log "apt-get install ${apt_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >/dev/null
fi

if ! have_version wasm-pack "$WASM_PACK_VERSION"; then
  log "cargo install wasm-pack $WASM_PACK_VERSION"
  cargo install wasm-pack --version "$WASM_PACK_VERSION" --locked
fi
if ! have_version wasm-bindgen "$WASM_BINDGEN_VERSION"; then
  # Not --locked: the CLI's own lockfile pins a crate version this registry lacks.
  log "cargo install wasm-bindgen-cli $WASM_BINDGEN_VERSION"
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi
if ! have_version worker-build "$WORKER_BUILD_VERSION"; then
  log "cargo install worker-build $WORKER_BUILD_VERSION"
  cargo install worker-build --version "$WORKER_BUILD_VERSION" --locked
fi

if ! have_version cargo-fuzz "$CARGO_FUZZ_VERSION"; then
  log "cargo install cargo-fuzz $CARGO_FUZZ_VERSION"
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi
if ! have_version cargo-deny "$CARGO_DENY_VERSION"; then
  log "cargo install cargo-deny $CARGO_DENY_VERSION"
  cargo install cargo-deny --version "$CARGO_DENY_VERSION" --locked
fi

# JavaScript tooling (miniflare/workerd, wrangler, binaryen's wasm-opt, peers for benchmarks)
# lives in the root node_modules, pinned by package-lock.json.
if [ -f package.json ]; then
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    log "npm ci"
    npm ci --no-audit --no-fund
  fi
fi
# Python tools in a virtual environment of their own, every package at the exact version
# the requirements files give: Schemathesis (tests/contract) and `cryptography` for the
# v1a test vectors (tests/vectors/generate.py). Rebuilt when either file changes.
PY_REQUIREMENTS=(tests/contract/requirements.txt tests/vectors/requirements.txt)
if [ ! -x .venv/bin/st ] || ! cat "${PY_REQUIREMENTS[@]}" | cmp -s - .venv/postwire-requirements.txt; then
  log "python venv .venv with ${PY_REQUIREMENTS[*]} (Schemathesis, cryptography)"
  rm -rf .venv
  python3 -m venv .venv
  for req in "${PY_REQUIREMENTS[@]}"; do
    .venv/bin/pip install --quiet --disable-pip-version-check --no-deps -r "$req"
  done
  .venv/bin/pip check
  cat "${PY_REQUIREMENTS[@]}" > .venv/postwire-requirements.txt
fi
log "toolchain ready"
