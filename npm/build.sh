#!/usr/bin/env bash
# Builds the `postwire` npm package into npm/dist from crates/postwire-wasm, with the
# pinned tools only (nothing is downloaded): cargo for wasm32-unknown-unknown, the
# wasm-bindgen CLI whose version equals the crate's pin, the npm package `binaryen`'s
# wasm-opt (Debian's is known to break the module), and esbuild to put each runtime's
# entry point together.
#
#   dist/node/     index.cjs (require) + index-import.cjs (import) + postwire_wasm_bg.wasm (read from the file;
#                  inlined in wasm-inline.cjs for bundles that move the entry), node:crypto for large bodies
#   dist/native/   index.js: Bun and Deno; ESM, wasm inlined, node:crypto for large bodies, no Buffer
#   dist/browser/  index.js + postwire_wasm_bg.wasm (new URL(…, import.meta.url), top-level await): browsers, bundlers
#   dist/web/      index.js: any other runtime, and postwire/inline; wasm inlined, no node: imports
#   dist/workerd/  index.js + postwire_wasm_bg.wasm imported as a module (Cloudflare)
#   dist/edge-light/ the same with the `?module` import Vercel's Edge runtime needs
#   dist/index.d.ts, dist/index.d.cts: the hand-written TypeScript types
#   dist/adapters/, dist/once.*, dist/stores/: postwire/{express,hono,next}, postwire/once and postwire/stores/* (plain JavaScript)
#   postwire/v1a: dist/node/v1a.{cjs,mjs} (+ its .wasm and wasm-v1a-inline.cjs), dist/{workerd,edge-light}/v1a.js (+ its .wasm) and dist/web/v1a.js, over a second module built with
#     postwire-wasm's `ed25519` feature (`whpk_` keys, v1a), so the default module keeps its size
#   postwire/providers: dist/node/providers{,-import}.cjs, dist/{browser,web,workerd,edge-light}/providers.js over a third
#     module built with `providers`; dist/providers/<name>.{js,cjs}: one entry per provider importing postwire/providers
set -euo pipefail
cd "$(dirname "$0")"
NPM_DIR=$PWD
ROOT=$(cd .. && pwd)
# npm's tools (binaryen, esbuild): the root node_modules (scripts/setup.sh, npm ci), else
# .tools/ (scripts/setup.sh npm, which installs only what this build needs).
NPM_BIN="$ROOT/node_modules/.bin"
[ -x "$NPM_BIN/wasm-opt" ] && [ -x "$NPM_BIN/esbuild" ] || NPM_BIN="$ROOT/.tools/node_modules/.bin"
export PATH="$NPM_BIN:$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target/npm}"

log() { printf '\033[1;34m[npm build]\033[0m %s\n' "$*"; }

# The CLI must be the exact version of the crate in Cargo.lock, or it cannot read the module's bindings.
locked=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/[^0-9.]/, ""); print; exit}' "$ROOT/Cargo.lock")
cli=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}') || true
if [ "$locked" != "$cli" ]; then
  echo "wasm-bindgen CLI ${cli:-missing}, the locked crate is $locked: run bash scripts/setup.sh npm" >&2
  exit 1
fi
rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$' ||
  { echo "the wasm32-unknown-unknown target is missing: run bash scripts/setup.sh npm" >&2; exit 1; }
case "$(command -v wasm-opt)" in
  "$NPM_BIN/wasm-opt") ;;
  *) echo "wasm-opt must be npm's binaryen (not Debian's): run bash scripts/setup.sh npm" >&2; exit 1 ;;
esac
command -v esbuild >/dev/null || { echo "esbuild is missing: run bash scripts/setup.sh npm" >&2; exit 1; }

log "cargo build (wasm32-unknown-unknown, release, opt-level 3, panic=abort)"
# opt-level 3 and wasm-opt -O3 rather than s and -Oz: about the same gzipped size (30 KB),
# and SHA-256 in wasm ~1.5x faster (opt-level) and ~10% more (wasm-opt), measured here.
# Profile settings through the environment: they apply to this build only (its own target
# dir), not to the rest of the workspace. panic=abort: nothing unwinds across the boundary.
CARGO_PROFILE_RELEASE_OPT_LEVEL="${POSTWIRE_WASM_OPT_LEVEL:-3}" CARGO_PROFILE_RELEASE_PANIC=abort \
  cargo build -p postwire-wasm --release --target wasm32-unknown-unknown --locked
RAW_WASM="$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/postwire_wasm.wasm"

rm -rf build dist
mkdir -p build/web build/web-v1a dist/browser dist/edge-light dist/node dist/native dist/web dist/workerd

# wasm-bindgen prepares each module (its exports, the custom sections it reads); its
# JavaScript glue is not used: every export takes and returns numbers only
# (scripts/wasm-boundary.mjs), so src/entries/instantiate.js calls them directly and also
# accepts a WebAssembly.Module compiled in another realm (Next.js's edge sandbox).
# wasm-bindgen gives every module one import, `__wbindgen_init_externref_table` (it fills
# the table of JavaScript values, which this crate never uses: only numbers cross, see
# scripts/wasm-boundary.mjs), and exports it again as `__wbindgen_start`, which
# instantiate.js calls. V8 compiles a wrapper for each import while compiling the module, so it is linked
# to an empty function of the module's own (binaryen's wasm-merge): the module imports nothing.
printf '(module (func (export "__wbindgen_init_externref_table")))\n' > build/externref-stub.wat
wasm-as build/externref-stub.wat -o build/externref-stub.wasm
close_imports() {
  wasm-merge --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    "$1" main build/externref-stub.wasm ./postwire_wasm_bg.js -o "$1.closed"
  mv "$1.closed" "$1"
}

log "wasm-bindgen $cli"
wasm-bindgen --target web --out-dir build/web "$RAW_WASM"
close_imports build/web/postwire_wasm_bg.wasm

# A function with one caller is inlined only up to 400 bytes (binaryen's default: any
# size). V8 compiles a function whole on its first call, so a large branch that is rarely
# taken (a long key's hash, an error path) stays out of the cold start's compile; about
# 0.1 ms of a cold new Webhook on Node 20, with no change in warm throughput.
WASM_OPT_INLINING=--one-caller-inline-max-function-size=400
log "wasm-opt -O3 $WASM_OPT_INLINING (binaryen $(wasm-opt --version | awk '{print $3}'))"
wasm-opt "${POSTWIRE_WASM_OPT_FLAGS:--O3}" "$WASM_OPT_INLINING" --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  build/web/postwire_wasm_bg.wasm -o build/postwire_wasm_bg.wasm
node scripts/wasm-boundary.mjs build/postwire_wasm_bg.wasm
cp build/postwire_wasm_bg.wasm dist/workerd/postwire_wasm_bg.wasm
node -e '
  const fs = require("fs");
  const b64 = fs.readFileSync("build/postwire_wasm_bg.wasm").toString("base64");
  fs.writeFileSync("build/web/wasm-base64.js", "export const WASM_BASE64 = \"" + b64 + "\";\n");
'

# The v1a module: the same crate with `ed25519` (postwire/v1a only). Built after the default
# module is processed, since both builds leave their .wasm at the same path.
log "cargo build --features ed25519 (the postwire/v1a module)"
CARGO_PROFILE_RELEASE_OPT_LEVEL="${POSTWIRE_WASM_OPT_LEVEL:-3}" CARGO_PROFILE_RELEASE_PANIC=abort \
  cargo build -p postwire-wasm --release --target wasm32-unknown-unknown --locked --features ed25519
wasm-bindgen --target web --out-dir build/web-v1a "$RAW_WASM"
close_imports build/web-v1a/postwire_wasm_bg.wasm
wasm-opt "${POSTWIRE_WASM_OPT_FLAGS:--O3}" "$WASM_OPT_INLINING" --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  build/web-v1a/postwire_wasm_bg.wasm -o build/postwire_wasm_v1a_bg.wasm
node scripts/wasm-boundary.mjs build/postwire_wasm_v1a_bg.wasm
node -e '
  const fs = require("fs");
  const b64 = fs.readFileSync("build/postwire_wasm_v1a_bg.wasm").toString("base64");
  fs.writeFileSync("build/web-v1a/wasm-base64.js", "export const WASM_BASE64 = \"" + b64 + "\";\n");
'

# The providers module: the same crate with `providers` (postwire/providers only: SHA-1,
# SHA-512, P-256, ed25519 and each provider's parsing), processed like the others.
log "cargo build --features providers (the postwire/providers module)"
CARGO_PROFILE_RELEASE_OPT_LEVEL="${POSTWIRE_WASM_OPT_LEVEL:-3}" CARGO_PROFILE_RELEASE_PANIC=abort \
  cargo build -p postwire-wasm --release --target wasm32-unknown-unknown --locked --features providers
mkdir -p build/web-providers
wasm-bindgen --target web --out-dir build/web-providers "$RAW_WASM"
close_imports build/web-providers/postwire_wasm_bg.wasm
wasm-opt "${POSTWIRE_WASM_OPT_FLAGS:--O3}" "$WASM_OPT_INLINING" --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  build/web-providers/postwire_wasm_bg.wasm -o build/postwire_wasm_providers_bg.wasm
node scripts/wasm-boundary.mjs build/postwire_wasm_providers_bg.wasm
node -e '
  const fs = require("fs");
  const b64 = fs.readFileSync("build/postwire_wasm_providers_bg.wasm").toString("base64");
  fs.writeFileSync("build/web-providers/wasm-base64.js", "export const WASM_BASE64 = \"" + b64 + "\";\n");
'

log "esbuild (entry points)"
# --keep-names: the classes keep their names (`Webhook.name === "Webhook"`, not "Webhook2"),
# which error reports, loggers and `instanceof`-free checks rely on.
# .cjs since the package is "type": "module".
# Node: the .wasm beside the entry, read with readFileSync (its length is built in, so a
# file of another build is not used), and the same module inlined in wasm-inline.cjs, loaded
# only where a bundler moved the entry without the file (src/entries/node-wasm.js).
node_build() { # entry, out, wasm, inline module
  cp "build/$3" "dist/node/$3"
  node -e '
    const fs = require("fs");
    fs.writeFileSync(process.argv[2], "module.exports = \"" + fs.readFileSync(process.argv[1]).toString("base64") + "\";\n");
  ' "build/$3" "dist/node/$4"
  # No --keep-names here (its helper call per function cost about 0.15 ms of a cold start):
  # api.js names the exported classes itself.
  esbuild "src/entries/$1" --bundle --platform=node --format=cjs --target=node18 \
    "--define:POSTWIRE_WASM_BYTES=$(stat -c %s "build/$3")" "--external:./$4" \
    --outfile="dist/node/$2" --log-level=warning
}
# `import` loads each .cjs through a few lines of CommonJS (why: src/entries/node-import.cjs).
# A third argument adds export names to the annotation (postwire/v1a's RemoteKeySet).
import_entry() { # cjs, import entry[, more export names]
  sed "s#\./index\.cjs#./$1#; s#ERROR_CODES });#ERROR_CODES${3:+, $3} });#" src/entries/node-import.cjs > "dist/node/$2"
}
node_build node.js index.cjs postwire_wasm_bg.wasm wasm-inline.cjs
import_entry index.cjs index-import.cjs
node_build node-v1a.js v1a.cjs postwire_wasm_v1a_bg.wasm wasm-v1a-inline.cjs
import_entry v1a.cjs v1a-import.cjs RemoteKeySet
esbuild src/entries/web-v1a.js --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
  --outfile=dist/web/v1a.js --log-level=warning
esbuild src/entries/workerd-v1a.js --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
  --external:./postwire_wasm_v1a_bg.wasm --outfile=dist/workerd/v1a.js --log-level=warning
cp build/postwire_wasm_v1a_bg.wasm dist/workerd/postwire_wasm_v1a_bg.wasm
# postwire/providers: Node (file beside the entry, or inlined), browsers (the .wasm beside
# the entry, fetched), workerd, edge-light, and the inlined web build for the rest (Bun, Deno).
node_build node-providers.js providers.cjs postwire_wasm_providers_bg.wasm wasm-providers-inline.cjs
sed -e 's#\./index\.cjs#./providers.cjs#' \
  -e 's#^0 && (module.exports = {.*#0 \&\& (module.exports = { verify, verifyWith, PROVIDERS, WebhookVerificationError, ERROR_CODES });#' \
  src/entries/node-import.cjs > dist/node/providers-import.cjs
esbuild src/entries/web-providers.js --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
  --outfile=dist/web/providers.js --log-level=warning
esbuild src/entries/browser-providers.js --bundle --platform=browser --format=esm --target=es2022 --keep-names \
  --outfile=dist/browser/providers.js --log-level=warning
cp build/postwire_wasm_providers_bg.wasm dist/browser/postwire_wasm_providers_bg.wasm
esbuild src/entries/workerd-providers.js --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
  --external:./postwire_wasm_providers_bg.wasm --outfile=dist/workerd/providers.js --log-level=warning
cp build/postwire_wasm_providers_bg.wasm dist/workerd/postwire_wasm_providers_bg.wasm
esbuild src/entries/edge-light-providers.js --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
  '--external:./postwire_wasm_providers_bg.wasm?module' --outfile=dist/edge-light/providers.js --log-level=warning
cp build/postwire_wasm_providers_bg.wasm dist/edge-light/postwire_wasm_providers_bg.wasm
# One entry per provider (postwire/providers/stripe, …), ESM and CommonJS, each importing
# postwire/providers by the package's name: the runtime's condition picks its build, and
# all of an application's provider entries share one module.
mkdir -p dist/providers
for provider in standard-webhooks stripe github shopify slack twilio paddle linear sendgrid discord generic; do
  esbuild src/providers/subpath.js --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
    "--define:POSTWIRE_PROVIDER=\"$provider\"" --external:postwire --outfile="dist/providers/$provider.js" --log-level=warning
  esbuild src/providers/subpath.js --bundle --platform=node --format=cjs --target=node18 --keep-names \
    "--define:POSTWIRE_PROVIDER=\"$provider\"" --external:postwire --outfile="dist/providers/$provider.cjs" --log-level=warning
done
cp types/providers.d.ts dist/providers.d.ts
cp types/providers.d.ts dist/providers.d.cts
for provider in standard-webhooks stripe github shopify slack paddle linear sendgrid discord; do
  sed "s#PROVIDER_NAME#$provider#" types/providers/preset.d.ts > "dist/providers/$provider.d.ts"
  cp "dist/providers/$provider.d.ts" "dist/providers/$provider.d.cts"
done
for provider in twilio generic; do
  cp "types/providers/$provider.d.ts" "dist/providers/$provider.d.ts"
  cp "types/providers/$provider.d.ts" "dist/providers/$provider.d.cts"
done
esbuild src/entries/native.js --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
  --external:node:crypto --outfile=dist/native/index.js --log-level=warning
esbuild src/entries/browser.js --bundle --platform=browser --format=esm --target=es2022 --keep-names \
  --outfile=dist/browser/index.js --log-level=warning
cp build/postwire_wasm_bg.wasm dist/browser/postwire_wasm_bg.wasm
esbuild src/entries/web.js --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
  --outfile=dist/web/index.js --log-level=warning
esbuild src/entries/workerd.js --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
  --external:./postwire_wasm_bg.wasm --outfile=dist/workerd/index.js --log-level=warning
# Framework adapters (postwire/express, postwire/hono, postwire/next): ESM and CommonJS,
# each importing the package by its own name, so the runtime's condition picks the build
# and the adapter shares the application's instance.
mkdir -p dist/adapters
for adapter in express hono next; do
  esbuild "src/adapters/$adapter.js" --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
    --external:postwire --outfile="dist/adapters/$adapter.js" --log-level=warning
  esbuild "src/adapters/$adapter.js" --bundle --platform=node --format=cjs --target=node18 --keep-names \
    --external:postwire --outfile="dist/adapters/$adapter.cjs" --log-level=warning
  cp "types/$adapter.d.ts" "dist/adapters/$adapter.d.ts"
  cp "types/$adapter.d.ts" "dist/adapters/$adapter.d.cts"
done
# postwire/once (processOnce, memoryStore) and the stores (postwire/stores/redis, postgres,
# cloudflare): plain JavaScript over the application's own clients, ESM and CommonJS.
# The Redis scripts and PostgreSQL statements are the Rust receiver's files
# (crates/postwire-receiver/protocol/), imported by the stores and inlined here as text.
mkdir -p dist/stores
PROTOCOL_LOADERS=(--loader:.lua=text --loader:.sql=text)
for module in once stores/redis stores/postgres stores/cloudflare; do
  esbuild "src/$module.js" --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
    "${PROTOCOL_LOADERS[@]}" --outfile="dist/$module.js" --log-level=warning
  esbuild "src/$module.js" --bundle --platform=node --format=cjs --target=node18 --keep-names \
    "${PROTOCOL_LOADERS[@]}" --outfile="dist/$module.cjs" --log-level=warning
  cp "types/$module.d.ts" "dist/$module.d.ts"
  cp "types/$module.d.ts" "dist/$module.d.cts"
done
esbuild src/entries/edge-light.js --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
  '--external:./postwire_wasm_bg.wasm?module' --outfile=dist/edge-light/index.js --log-level=warning
cp build/postwire_wasm_bg.wasm dist/edge-light/postwire_wasm_bg.wasm
esbuild src/entries/edge-light-v1a.js --bundle --platform=neutral --format=esm --target=es2022 --keep-names \
  '--external:./postwire_wasm_v1a_bg.wasm?module' --outfile=dist/edge-light/v1a.js --log-level=warning
cp build/postwire_wasm_v1a_bg.wasm dist/edge-light/postwire_wasm_v1a_bg.wasm
# The workerd entry imports the .wasm relative to itself.
sed -i 's#"\./postwire_wasm_bg\.wasm"#"./postwire_wasm_bg.wasm"#' dist/workerd/index.js

# Nothing on the web and workerd paths may reach for Node or fetch a .wasm URL.
if grep -nE 'require\(|from "node:|import\.meta|[^y]Buffer\.|new URL([^S]|$)' dist/web/index.js dist/web/v1a.js dist/workerd/index.js dist/workerd/v1a.js dist/edge-light/index.js dist/edge-light/v1a.js \
  dist/web/providers.js dist/workerd/providers.js dist/edge-light/providers.js; then
  echo "a non-Node entry point refers to Node APIs or import.meta" >&2
  exit 1
fi

cp types/index.d.ts dist/index.d.ts
cp types/index.d.ts dist/index.d.cts

raw=$(stat -c %s build/postwire_wasm_bg.wasm)
gz=$(gzip -9c build/postwire_wasm_bg.wasm | wc -c)
log "postwire_wasm_bg.wasm: $raw bytes raw, $gz bytes gzip -9"
raw_v1a=$(stat -c %s build/postwire_wasm_v1a_bg.wasm)
gz_v1a=$(gzip -9c build/postwire_wasm_v1a_bg.wasm | wc -c)
log "postwire_wasm_v1a_bg.wasm (postwire/v1a): $raw_v1a bytes raw, $gz_v1a bytes gzip -9"
raw_providers=$(stat -c %s build/postwire_wasm_providers_bg.wasm)
gz_providers=$(gzip -9c build/postwire_wasm_providers_bg.wasm | wc -c)
log "postwire_wasm_providers_bg.wasm (postwire/providers): $raw_providers bytes raw, $gz_providers bytes gzip -9"
printf '{"raw": %s, "gzip": %s, "v1a": {"raw": %s, "gzip": %s}, "providers": {"raw": %s, "gzip": %s}}\n' \
  "$raw" "$gz" "$raw_v1a" "$gz_v1a" "$raw_providers" "$gz_providers" > dist/wasm-size.json
