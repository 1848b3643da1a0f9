#!/usr/bin/env bash
# Runs the quickstarts of the docs, exactly as written, the way a newcomer would: each from
# an empty HOME and a fresh directory, beside a fresh copy of the repository's files.
# extract.py takes the commands out of the Markdown (fenced blocks tagged quickstart-NAME),
# so the docs and this test cannot drift apart; check-NAME.sh then asserts, in the same
# shell, what the docs promise.
#
#   tests/quickstart/test.sh                   all of them: sender js worker rust
#   tests/quickstart/test.sh sender js         some
#
# What stands in for the registries until the packages are published (the only
# substitutions): the `postwire` CLI is the one built from the workspace
# (the workspace's test build, scripts/workspace-tests.sh, as CI's other parts built it; `cargo install` from the packaged
# crate is checked by scripts/package.sh), and `npm install postwire` installs the tarball
# npm/scripts/pack.sh makes (of CI's npm/dist when it is there). Toolchains stay shared: RUSTUP_HOME,
# CARGO_HOME and npm's download cache point at the real ones.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
REAL_HOME="$HOME"
export RUSTUP_HOME="${RUSTUP_HOME:-$REAL_HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$REAL_HOME/.cargo}"
export npm_config_cache="${npm_config_cache:-$REAL_HOME/.npm}" npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
export NEXT_TELEMETRY_DISABLED=1 WRANGLER_SEND_METRICS=false

log() { printf '\033[1;34m[quickstart]\033[0m %s\n' "$*"; }
die() { echo "quickstart: $*" >&2; exit 1; }

NAMES=("$@")
[ ${#NAMES[@]} -gt 0 ] || NAMES=(sender js worker rust)

WORK="$(mktemp -d /tmp/postwire-quickstart.XXXXXX)"
cleanup() { [ -n "${KEEP_QUICKSTART:-}" ] || rm -rf "$WORK"; }
trap cleanup EXIT

# The CLI: the workspace's debug build (CI's rust part built it: scripts/workspace-tests.sh).
# POSTWIRE_BIN=path uses that one instead.
if [ -z "${POSTWIRE_BIN:-}" ]; then
  POSTWIRE_BIN="$(bash "$ROOT/scripts/workspace-tests.sh" exe bin postwire)"
fi
[ -x "$POSTWIRE_BIN" ] || die "no postwire binary"
mkdir -p "$WORK/bin" "$WORK/home"
ln -s "$POSTWIRE_BIN" "$WORK/bin/postwire"

# A fresh copy of the repository's files (tracked, and new ones not ignored): no build
# output, no node_modules, no .venv, no target.
CLONE="$WORK/postwire"
mkdir -p "$CLONE"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$CLONE" 2>/dev/null) || true
[ -f "$CLONE/Cargo.toml" ] || die "copying the repository failed"

# Runs quickstart NAME from DOC (read from the copy), starting in START; check-NAME.sh asserts.
run() { # NAME DOC START [wrap...]
  local name=$1 doc=$2 start=$3
  shift 3
  local script="$WORK/$name.sh" out="$WORK/$name.log" began=$SECONDS
  mkdir -p "$start"
  {
    echo 'set -euo pipefail'
    echo "cd '$start'"
    python3 "$HERE/extract.py" "$CLONE/$doc" "quickstart-$name"
    echo ''
    echo "# --- $HERE/check-$name.sh"
    cat "$HERE/check-$name.sh"
  } > "$script"
  substitute "$name" "$script"
  log "$name: $doc ($(grep -c '' "$script") lines)"
  local rc=0
  # A session of its own, so that every server the quickstart left running is stopped after.
  # The session's id is the first process's (written to $script.pgid): every process the
  # quickstart started is in it, whatever it forked.
  HOME="$WORK/home" PATH="$WORK/bin:$CARGO_HOME/bin:$PATH" POSTWIRE_TGZ="$POSTWIRE_TGZ" \
    setsid bash -c 'echo $$ > "$0"; exec "$@"' "$script.pgid" timeout 900 "$@" bash "$script" > "$out" 2>&1 < /dev/null &
  wait $! || rc=$?
  local pgid
  pgid=$(cat "$script.pgid")
  kill -TERM -- "-$pgid" 2>/dev/null || true
  sleep 0.5
  kill -KILL -- "-$pgid" 2>/dev/null || true
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$out" >&2
    die "$name failed (rc $rc; the whole log: KEEP_QUICKSTART=1, then $out; the script: $script)"
  fi
  log "$name passed in $((SECONDS - began)) s"
}

# The stand-ins for the unpublished packages, and nothing else.
substitute() { # NAME SCRIPT
  case "$1" in
    js)
      [ "$(grep -c '^npm install postwire ' "$2")" = 1 ] || die "the js quickstart no longer runs 'npm install postwire …'"
      sed -i 's#^npm install postwire #npm install "$POSTWIRE_TGZ" #' "$2"
      ;;
  esac
}

POSTWIRE_TGZ=
for name in "${NAMES[@]}"; do
  case "$name" in
    sender)
      # The install line the docs show is replaced by the build above; it must still be there.
      python3 "$HERE/extract.py" "$CLONE/crates/postwire-cli/README.md" quickstart-sender-install |
        grep -q '^cargo install --locked --path crates/postwire-cli' || die "the sender quickstart lost its install line"
      # Loopback of its own (no other test's port 8080 or 9000 in the way), no network needed.
      if unshare --net true 2>/dev/null; then netns=(unshare --net); else netns=(unshare --map-root-user --net); fi
      run sender crates/postwire-cli/README.md "$WORK/sender" "${netns[@]}" bash -c 'ip link set lo up && exec "$@"' --
      ;;
    js)
      # The release step's tarball, of the npm/dist CI's npm part built (or built now).
      if [ -f "$ROOT/npm/dist/node/index.cjs" ]; then pack=(--no-build); else pack=(); fi
      bash "$ROOT/npm/scripts/pack.sh" "${pack[@]+"${pack[@]}"}" > "$WORK/pack.log" 2>&1 || { tail -n 30 "$WORK/pack.log" >&2; die "npm/scripts/pack.sh failed"; }
      POSTWIRE_TGZ="$(tail -n 1 "$WORK/pack.log")"
      [ -f "$POSTWIRE_TGZ" ] || die "npm/scripts/pack.sh made no tarball"
      run js npm/README.md "$WORK/js"
      ;;
    worker)
      # In the checkout itself (CI's is a fresh clone), whose Worker build CI's worker part
      # made: a copy elsewhere would compile the Worker again for minutes. The files the
      # quickstart makes there (.dev.vars, origin.log, wrangler.log; ignored by git) go after.
      trap 'rm -f "$ROOT/worker/.dev.vars" "$ROOT/worker/origin.log" "$ROOT/worker/wrangler.log"; cleanup' EXIT
      [ ! -e "$ROOT/worker/.dev.vars" ] || die "worker/.dev.vars exists: the quickstart would overwrite it"
      run worker worker/README.md "$ROOT"
      ;;
    rust)
      CARGO_TARGET_DIR="$ROOT/target/quickstart-rust" run rust crates/postwire-core/README.md "$WORK" env
      ;;
    *) die "no quickstart '$name' (sender, js, worker, rust)" ;;
  esac
done
log "all passed: ${NAMES[*]}"
