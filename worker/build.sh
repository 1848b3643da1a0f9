#!/usr/bin/env bash
# Builds the Worker with worker-build into worker/build/ (index.js, index_bg.wasm), using only
# tools already on this machine: the pinned wasm-bindgen CLI (cargo install), and wasm-opt and
# esbuild from npm (the root node_modules, or .tools/ of `scripts/setup.sh worker`).
# worker-build downloads each of them from GitHub unless told where they are (see
# ../docs/toolchain.md), so this script tells it, checks the versions first, and fails if the
# build log shows any download. Missing tools: `bash scripts/setup.sh worker` installs them.
#
# Usage: worker/build.sh            (release build, wasm-opt -Oz)
#
# When the Worker's compiled wasm, this script, worker/Cargo.toml and the tools are what
# they were at the last build, build/ is current and is left as it is (`wrangler dev` and
# `wrangler deploy` run this script each time); cargo decides whether the wasm is.
set -euo pipefail
cd "$(dirname "$0")"
WORKER_DIR="$PWD"
ROOT="$(cd .. && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"

WASM_BINDGEN_VERSION=0.2.130
WORKER_BUILD_VERSION=0.8.7

die() { echo "worker/build.sh: $*" >&2; exit 1; }

command -v worker-build >/dev/null || die "worker-build is missing: run bash scripts/setup.sh worker"
[ "$(worker-build --version)" = "$WORKER_BUILD_VERSION" ] ||
  die "worker-build $WORKER_BUILD_VERSION wanted, found $(worker-build --version): run bash scripts/setup.sh worker"
command -v wasm-bindgen >/dev/null || die "wasm-bindgen is missing: run bash scripts/setup.sh worker"
wasm-bindgen --version | grep -q " $WASM_BINDGEN_VERSION\$" ||
  die "wasm-bindgen $WASM_BINDGEN_VERSION wanted, found '$(wasm-bindgen --version)': run bash scripts/setup.sh worker"
# npm's tools: the root node_modules (scripts/setup.sh all, npm ci), else .tools/ (setup.sh worker).
NPM_BIN="$ROOT/node_modules/.bin"
[ -x "$NPM_BIN/wasm-opt" ] && [ -x "$NPM_BIN/esbuild" ] || NPM_BIN="$ROOT/.tools/node_modules/.bin"
[ -x "$NPM_BIN/wasm-opt" ] || die "npm's wasm-opt (binaryen) is missing: run bash scripts/setup.sh worker"
[ -x "$NPM_BIN/esbuild" ] || die "npm's esbuild is missing: run bash scripts/setup.sh worker"

# Absolute paths: worker-build falls back to downloading when a *_BIN it cannot resolve.
export WASM_BINDGEN_BIN="$(command -v wasm-bindgen)"
export WASM_OPT_BIN="$NPM_BIN/wasm-opt"
export ESBUILD_BIN="$NPM_BIN/esbuild"
# A target dir of its own, so the wasm build never waits on the workspace's native builds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target/worker}"

# cargo's part first, exactly as worker-build runs it (same arguments, folder and
# environment, so the two never rebuild for each other): then the rest is needed only when
# its inputs changed.
(cd "$WORKER_DIR" && WASM_BINDGEN_USE_JS_SYS=1 cargo build --lib --release --target wasm32-unknown-unknown --locked)
raw_wasm="$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/postwire_worker.wasm"
[ -f "$raw_wasm" ] || die "cargo did not produce $raw_wasm"
inputs="$( (sha256sum "$raw_wasm" "$WORKER_DIR/build.sh" "$WORKER_DIR/Cargo.toml" | awk '{print $1}'
  worker-build --version; wasm-bindgen --version; "$WASM_OPT_BIN" --version; "$ESBUILD_BIN" --version) | sha256sum | awk '{print $1}')"
stamp="$WORKER_DIR/build/.inputs"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$inputs" ] &&
  [ -f "$WORKER_DIR/build/index.js" ] && [ -f "$WORKER_DIR/build/index_bg.wasm" ]; then
  echo "worker/build.sh: build/ is current ($(wc -c <"$WORKER_DIR/build/index_bg.wasm") bytes of wasm)"
  exit 0
fi

rm -f "$stamp" # until this build has finished
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
echo "$inputs" >"$stamp"
echo "worker/build.sh: built $(wc -c <"$WORKER_DIR/build/index_bg.wasm") bytes of wasm in worker/build/"
