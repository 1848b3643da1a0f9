#!/usr/bin/env bash
# The release step of the npm package: builds npm/dist (npm/build.sh), packs exactly what
# `npm publish` would upload into target/npm-pack/postwire-<version>.tgz, and checks that
# tarball with `npm publish --dry-run`. Prints the tarball's path on its last line.
#
#   bash npm/scripts/pack.sh              build, pack, check
#   bash npm/scripts/pack.sh --no-build   pack the npm/dist already built (CI's npm part built it)
#
# Publishing is then `npm publish target/npm-pack/postwire-<version>.tgz` (not done here).
set -euo pipefail
cd "$(dirname "$0")/.."
NPM_DIR=$PWD
ROOT=$(cd .. && pwd)
OUT="$ROOT/target/npm-pack"

build=1
case "${1:-}" in
  --no-build) build=0 ;;
  "") ;;
  *) echo "usage: npm/scripts/pack.sh [--no-build]" >&2; exit 2 ;;
esac

if [ "$build" = 1 ]; then
  bash "$NPM_DIR/build.sh"
fi
# The files the package's `exports` map names must all be there: a tarball without them
# installs and then fails at the first import.
node -e '
  const fs = require("fs");
  const pkg = require("./package.json");
  const targets = [];
  const walk = (v) => typeof v === "string" ? targets.push(v) : Object.values(v).forEach(walk);
  walk(pkg.exports);
  const missing = [...new Set(targets)].filter((t) => !fs.existsSync(t));
  if (missing.length) {
    console.error("npm/dist lacks files the exports map names (run bash npm/build.sh):\n  " + missing.join("\n  "));
    process.exit(1);
  }
'

rm -rf "$OUT"
mkdir -p "$OUT"
# --ignore-scripts: `prepack` would build again; the build above (or CI's) is the one packed.
tarball=$(npm pack --ignore-scripts --pack-destination "$OUT" --silent | tail -n 1)
tarball="$OUT/$tarball"
[ -f "$tarball" ] || { echo "npm pack made no tarball" >&2; exit 1; }

# What npm publish would do with this very file, without uploading it.
npm publish --dry-run --ignore-scripts "$tarball" 2>&1 | sed 's/^/[npm publish --dry-run] /'
echo "npm package: $tarball ($(wc -c <"$tarball") bytes)"
echo "$tarball"
