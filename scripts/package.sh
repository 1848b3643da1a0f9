#!/usr/bin/env bash
# The release steps, checked without uploading anything:
#   1. `cargo publish --workspace --dry-run`: every publishable crate (postwire-core,
#      postwire-sender, postwire-server, postwire-client, postwire-cli), packaged and built from its own
#      package, in dependency order, each against the packages of the ones before it.
#      The other crates of the workspace say `publish = false`; this fails if one that is
#      not listed here becomes publishable.
#   2. `cargo install` of postwire-cli from its packaged crate (target/package-check/package/), with
#      the lockfile packed in it, as a user's `cargo install --locked postwire-cli` would.
#   3. The npm package: npm/scripts/pack.sh (the tarball, and `npm publish --dry-run`).
#
#   scripts/package.sh              all three (several minutes: the packages build from scratch)
#   scripts/package.sh --quick      the packages and their checks without building them:
#                                   `cargo publish --workspace --dry-run --no-verify`, and the npm
#                                   tarball (what CI's package part runs)
#   scripts/package.sh --no-npm     the crates only
#
# Publishing for real is then `cargo publish -p <crate>` in the same order and
# `npm publish target/npm-pack/postwire-<version>.tgz`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH="$HOME/.cargo/bin:$PATH"
log() { printf '\033[1;34m[package]\033[0m %s\n' "$*"; }
die() { echo "package: $*" >&2; exit 1; }

PUBLISHED=(postwire-core postwire-edge-wire postwire-sender postwire-server postwire-client postwire-cli postwire-receiver)
quick=0 npm=1
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --no-npm) npm=0 ;;
    *) die "usage: scripts/package.sh [--quick] [--no-npm]" ;;
  esac
done
pack_npm() {
  [ "$npm" = 1 ] || return 0
  if [ -f npm/dist/node/index.cjs ]; then pack=(--no-build); else pack=(); fi
  log "npm/scripts/pack.sh ${pack[*]+"${pack[*]}"}"
  bash npm/scripts/pack.sh "${pack[@]+"${pack[@]}"}"
}

# Which crates cargo would publish: exactly these.
publishable=$(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c 'import json,sys; print(" ".join(sorted(p["name"] for p in json.load(sys.stdin)["packages"] if p["publish"] != [])))')
[ "$publishable" = "$(printf '%s\n' "${PUBLISHED[@]}" | sort | tr '\n' ' ' | sed 's/ $//')" ] ||
  die "publishable crates are '$publishable', expected '${PUBLISHED[*]}': mark the others publish = false"

# cargo treats the dry run's packages as registry crates, which never change for a given
# version: a later run would build the first run's unpacked sources, or reuse what it
# compiled of them. So the packages build in a target dir of their own (target/package-check;
# the workspace's own artifacts stay as they are), from which every postwire artifact, the
# unpacked copies and the packages themselves are removed first; the dependencies stay.
CHECK_DIR="$ROOT/target/package-check"
rm -rf "$CHECK_DIR/package"
for crate in "${PUBLISHED[@]}"; do
  rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"$crate"-* "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/-*/"$crate"-*
done
if [ -d "$CHECK_DIR" ]; then
  find "$CHECK_DIR" -mindepth 3 -maxdepth 3 -name '*postwire*' -exec rm -rf {} +
fi
if [ "$quick" = 1 ]; then
  log "cargo publish --workspace --dry-run --no-verify (${PUBLISHED[*]})"
  cargo publish --workspace --dry-run --no-verify --locked --allow-dirty --target-dir "$CHECK_DIR"
  pack_npm
  log "done (--quick: the crates were packaged, not built; scripts/package.sh builds them)"
  exit 0
fi
log "cargo publish --workspace --dry-run (${PUBLISHED[*]})"
# --allow-dirty: a dry run from a working tree; CI's clean clone has nothing uncommitted.
cargo publish --workspace --dry-run --locked --allow-dirty --target-dir "$CHECK_DIR"

version=$(cargo metadata --no-deps --format-version 1 --locked |
  python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "postwire-cli"))')
package="$CHECK_DIR/package/postwire-cli-$version"
[ -f "$package/Cargo.toml" ] && [ -f "$package/Cargo.lock" ] || die "no packaged postwire-cli in $package"
log "cargo install --locked from the packaged postwire-cli ($package)"
# The packaged lockfile names the sibling crates as registry packages, which are not on
# the registry yet: they come from their own packages instead (a [patch] to the unpacked
# target/package-check/package/<crate>-<version>), and their lock entries lose the registry source and
# checksum, as path packages have; every other entry, and --locked, stay as a user gets them.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$package" "$work/"
python3 - "$work/postwire-cli-$version/Cargo.lock" "${PUBLISHED[@]}" <<'PY'
import re, sys
path, ours = sys.argv[1], set(sys.argv[2:])
blocks = open(path).read().split("\n[[package]]\n")
for i, block in enumerate(blocks):
    name = re.search(r'^name = "([^"]+)"', block, re.M)
    if name and name.group(1) in ours:
        blocks[i] = "\n".join(l for l in block.split("\n") if not l.startswith(("source = ", "checksum = ")))
open(path, "w").write("\n[[package]]\n".join(blocks))
PY
patches=()
for crate in "${PUBLISHED[@]}"; do
  [ "$crate" = postwire-cli ] && continue
  patches+=(--config "patch.crates-io.$crate.path=\"$CHECK_DIR/package/$crate-$version\"")
done
# --debug, in the dry run's target dir: the same compilation as a release install, in the
# profile whose dependencies the dry run just built (a release build with LTO takes
# minutes more and checks nothing more).
CARGO_TARGET_DIR="$CHECK_DIR" \
  cargo install --locked --debug --path "$work/postwire-cli-$version" --root "$work/root" "${patches[@]}"
"$work/root/bin/postwire" --version
"$work/root/bin/postwire" secret new | grep -q '^whsec_' || die "the installed postwire does not run"
log "cargo install from the package: $("$work/root/bin/postwire" --version)"

pack_npm
log "done: ${PUBLISHED[*]} and the npm package are ready to publish"
