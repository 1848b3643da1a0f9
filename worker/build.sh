#!/usr/bin/env bash
# Builds the Worker with worker-build into worker/build/ (index.js, index_bg.wasm), using only
# tools already on this machine: the pinned wasm-bindgen CLI (cargo install), and wasm-opt and
# esbuild from the root node_modules (npm). worker-build downloads each of them from GitHub
# unless told where they are (see ../../shared/TOOLCHAIN.md), so this script tells it, checks
# the versions first, and fails if the build log shows any download.
#
# Usage: worker/build.sh            (release build, wasm-opt -Oz)
set -euo pipefail
cd "$(dirname "$0")"
WORKER_DIR="$PWD"
ROOT="$(cd .. && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"

WASM_BINDGEN_VERSION=0.2.130
WORKER_BUILD_VERSION=0.8.7

die() { echo "worker/build.sh: $*" >&2; exit 1; }

command -v worker-build >/dev/null || die "worker-build is missing: run scripts/setup.sh"
[ "$(worker-build --version)" = "$WORKER_BUILD_VERSION" ] ||
  die "worker-build $WORKER_BUILD_VERSION wanted, found $(worker-build --version): run scripts/setup.sh"
command -v wasm-bindgen >/dev/null || die "wasm-bindgen is missing: run scripts/setup.sh"
wasm-bindgen --version | grep -q " $WASM_BINDGEN_VERSION\$" ||
  die "wasm-bindgen $WASM_BINDGEN_VERSION wanted, found '$(wasm-bindgen --version)': run scripts/setup.sh"
[ -x "$ROOT/node_modules/.bin/wasm-opt" ] || die "node_modules/.bin/wasm-opt is missing: run npm ci at the root"
[ -x "$ROOT/node_modules/.bin/esbuild" ] || die "node_modules/.bin/esbuild is missing: run npm ci at the root"

# Absolute paths: worker-build falls back to downloading when a *_BIN it cannot resolve.
export WASM_BINDGEN_BIN="$(command -v wasm-bindgen)"
export WASM_OPT_BIN="$ROOT/node_modules/.bin/wasm-opt"
export ESBUILD_BIN="$ROOT/node_modules/.bin/esbuild"
# A target dir of its own, so the wasm build never waits on the workspace's native builds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target/worker}"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! worker-build --release -- --locked 2>&1 | tee "$log"; then
  die "worker-build failed"
fi
if grep -qiE 'download(ing)?\b' "$log"; then
  die "worker-build tried to download something; see the log above"
fi
[ -f "$WORKER_DIR/build/index.js" ] && [ -f "$WORKER_DIR/build/index_bg.wasm" ] ||
  die "worker-build did not produce build/index.js and build/index_bg.wasm"
echo "worker/build.sh: built $(wc -c <"$WORKER_DIR/build/index_bg.wasm") bytes of wasm in worker/build/"
