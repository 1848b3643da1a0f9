#!/usr/bin/env bash
# Installs what postwire's builds and tests need, part by part, on a fresh machine or an old one.
#
#   scripts/setup.sh               everything (= all): what CI and scripts/test-all.sh use
#   scripts/setup.sh sender        postwire serve and the CLI: checks cargo, curl, python3
#   scripts/setup.sh npm           npm/build.sh: wasm32 target, wasm-bindgen-cli, binaryen + esbuild
#   scripts/setup.sh worker        worker/build.sh and wrangler dev: the npm part's tools, worker-build, wrangler
#   scripts/setup.sh npm worker    several parts
#
# Idempotent: every step first checks whether its tool is already there at the wanted
# version. Nothing here downloads from outside the package registries (crates.io, npm,
# PyPI, Debian); docs/toolchain.md says why each pin is what it is. The npm and worker
# parts put their npm tools in .tools/ (the root node_modules of `all` serves too).
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_BINDGEN_VERSION=0.2.130   # must equal the `wasm-bindgen = "=…"` pin in Cargo.toml
WORKER_BUILD_VERSION=0.8.7
MSRV=1.89                      # must equal `rust-version` in Cargo.toml (scripts/test.sh msrv)
CARGO_FUZZ_VERSION=0.13.2
CARGO_DENY_VERSION=0.20.2

# Each line with the time and the seconds since setup started: a step took until the next line.
SETUP_START=$SECONDS
log() { printf '\033[1;34m[setup %s +%ss]\033[0m %s\n' "$(date -u +%H:%M:%S)" "$((SECONDS - SETUP_START))" "$*"; }
have_version() { command -v "$1" >/dev/null 2>&1 && "$1" --version 2>/dev/null | grep -q "$2"; }

export PATH="$HOME/.cargo/bin:$PATH"

usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; }

need_command() { # command, how to get it
  command -v "$1" >/dev/null 2>&1 || { echo "setup: $1 is missing: $2" >&2; exit 1; }
}
apt_install() { # Debian packages, installed only when asked for (callers check first)
  [ $# -gt 0 ] || return 0
  log "apt-get install $*"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
# The tools' builds share one target dir instead of a temporary one each: they have many
# dependencies in common (clap, serde, syn...), compiled once where version and features agree.
# They are built for a short run each, not for speed: without link-time optimisation, in 16
# codegen units, at opt-level 1 (cargo-deny's own release profile asks for fat LTO in one
# unit, whose link alone keeps one core busy for minutes).
cargo_install() {
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
    cargo install --target-dir "$PWD/target/tools" "$@"
}
need_wasm_target() {
  if ! rustup target list --installed | grep -q '^wasm32-unknown-unknown$'; then
    log "rustup target add wasm32-unknown-unknown"
    rustup target add wasm32-unknown-unknown
  fi
}
need_wasm_bindgen() {
  if ! have_version wasm-bindgen "$WASM_BINDGEN_VERSION"; then
    # Not --locked: the CLI's own lockfile pins a crate version this registry lacks.
    log "cargo install wasm-bindgen-cli $WASM_BINDGEN_VERSION"
    cargo_install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
  fi
}
need_worker_build() {
  if ! have_version worker-build "$WORKER_BUILD_VERSION"; then
    log "cargo install worker-build $WORKER_BUILD_VERSION"
    cargo_install worker-build --version "$WORKER_BUILD_VERSION" --locked
  fi
}
npm_tools() { # npm packages, at the exact versions of the root package.json, into .tools/
  command -v npm >/dev/null 2>&1 || apt_install nodejs npm
  local pkg version wanted=()
  for pkg in "$@"; do
    version=$(node -p "require('./package.json').devDependencies['$pkg']")
    # The root node_modules (`all`, `npm ci`) has every tool already.
    [ "$(node -p "try { require('./node_modules/$pkg/package.json').version } catch { '' }")" = "$version" ] && continue
    [ "$(node -p "try { require('./.tools/node_modules/$pkg/package.json').version } catch { '' }")" = "$version" ] && continue
    wanted+=("$pkg@$version")
  done
  [ ${#wanted[@]} -gt 0 ] || return 0
  log "npm install ${wanted[*]} (into .tools/)"
  mkdir -p .tools
  npm install --prefix .tools --save-exact --no-audit --no-fund "${wanted[@]}"
}

part_sender() { # postwire serve, the CLI and the Rust crates: a Rust toolchain; curl and python3 for the quickstart
  need_command cargo "install Rust (rustup), then run this again"
  local rust
  rust=$(rustc --version | awk '{print $2}')
  if [ "$(printf '%s\n%s\n' "$MSRV" "$rust" | sort -V | head -n 1)" != "$MSRV" ]; then
    echo "setup: Rust $rust is older than $MSRV: rustup update" >&2
    exit 1
  fi
  command -v curl >/dev/null 2>&1 || apt_install curl
  need_command python3 "install Python 3 (the quickstart's receiver)"
}
part_npm() { # npm/build.sh: the wasm target, wasm-bindgen-cli, and npm's binaryen and esbuild
  need_wasm_target
  need_wasm_bindgen
  npm_tools binaryen esbuild
}
part_worker() { # worker/build.sh and wrangler dev: the npm part's tools, worker-build and wrangler
  need_wasm_target
  need_wasm_bindgen
  need_worker_build
  npm_tools binaryen esbuild wrangler
}

part_all() { # everything every part of scripts/test.sh needs (CI)
need_wasm_target

if ! rustup toolchain list | grep -q "^$MSRV-"; then
  log "rustup toolchain install $MSRV (the workspace's minimum Rust version)"
  rustup toolchain install "$MSRV" --profile minimal
fi

apt_pkgs=()
command -v python3 >/dev/null 2>&1 || apt_pkgs+=(python3 python3-venv)
command -v chromium >/dev/null 2>&1 || apt_pkgs+=(chromium)
command -v chromedriver >/dev/null 2>&1 || apt_pkgs+=(chromium-driver)
command -v wrk >/dev/null 2>&1 || apt_pkgs+=(wrk)
command -v ip >/dev/null 2>&1 || apt_pkgs+=(iproute2)        # tests/contract: loopback in its namespace
command -v unshare >/dev/null 2>&1 || apt_pkgs+=(util-linux)
command -v curl >/dev/null 2>&1 || apt_pkgs+=(curl)
# PostgreSQL's server binaries (initdb, pg_ctl): the tests start throwaway clusters of
# their own (crates/postwire-testpg); no server is left running.
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_pkgs+=(postgresql)
command -v redis-server >/dev/null 2>&1 || apt_pkgs+=(redis-server)   # npm and Rust receiver stores: throwaway Redis per test run
# SoftHSM2 (a PKCS #11 token in files): the sender's tests/pkcs11.rs start one per test.
command -v softhsm2-util >/dev/null 2>&1 || apt_pkgs+=(softhsm2)
apt_install ${apt_pkgs[@]+"${apt_pkgs[@]}"}

js_py_tools() { # the root node_modules (npm ci) and the Python venv
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
}
# They mostly download, while the cargo installs below keep both cores busy: they run beside
# them, their output kept until the installs are done.
mkdir -p target
js_py_tools > target/setup-js-py.log 2>&1 &
js_py_pid=$!
trap 'kill "$js_py_pid" 2>/dev/null || true' EXIT # a failed install stops it too

# wasm-bindgen-cli also brings wasm-bindgen-test-runner, which runs npm/test.sh's wasm tests.
need_wasm_bindgen
need_worker_build

if ! have_version cargo-fuzz "$CARGO_FUZZ_VERSION"; then
  log "cargo install cargo-fuzz $CARGO_FUZZ_VERSION"
  cargo_install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi
if ! have_version cargo-deny "$CARGO_DENY_VERSION"; then
  log "cargo install cargo-deny $CARGO_DENY_VERSION"
  cargo_install cargo-deny --version "$CARGO_DENY_VERSION" --locked
fi

# npm ci and the Python venv (above) ran beside the cargo installs: their output now.
if ! wait "$js_py_pid"; then
  cat target/setup-js-py.log >&2
  echo "setup: npm ci or the Python venv failed (above)" >&2
  exit 1
fi
cat target/setup-js-py.log
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(all)
for p in "${parts[@]}"; do
  case "$p" in
    -h|--help) usage; exit 0 ;;
  esac
  declare -F "part_$p" >/dev/null || { echo "setup: no part '$p' (parts: sender, npm, worker, all)" >&2; exit 2; }
done
for p in "${parts[@]}"; do
  "part_$p"
done
log "toolchain ready: ${parts[*]}"
