#!/usr/bin/env bash
# The workspace's one debug build of its tests, shared by every part that needs a native
# test binary, the postwire CLI or an example: `cargo test --workspace` with the features
# below, built once (cargo builds only what changed) and run or used from there.
#
# Why one build: cargo resolves dependencies' features from the packages it was asked for,
# so `cargo test -p postwire-sender`, `cargo build -p postwire-cli` and `cargo test
# --workspace` each compile their own copy of tokio, hyper, axum, aws-lc and everything above
# them. Run through this script they are one build.
#
#   scripts/workspace-tests.sh [--stores] test [ARGS...]   cargo test --workspace with the features below
#                                                 (ARGS: cargo test's, e.g. --features F --test NAME)
#   scripts/workspace-tests.sh [--stores] run PKG [--integration] [-- TEST-ARGS...]
#                                                 runs PKG's test binaries (only tests/*.rs with --integration),
#                                                 each from PKG's folder as cargo test does; TEST-ARGS go to each
#   scripts/workspace-tests.sh exe bin|example NAME   builds, then prints the path of that executable
#
# The features: postwire-wasm's providers (the other providers' verifiers, with ed25519 for
# postwire/v1a; each only adds functions, so the default module's tests run too), and
# postwire-receiver's key-set (RemoteKeySet). --stores adds postwire-receiver's redis and postgres,
# whose tests need redis-server, PostgreSQL and node (the postgres part); the build differs
# from the other by the receiver alone.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH="$HOME/.cargo/bin:$PATH"
FEATURES=postwire-wasm/providers,postwire-receiver/key-set
if [ "${1:-}" = --stores ]; then
  FEATURES="$FEATURES,postwire-receiver/redis,postwire-receiver/postgres"
  shift
fi

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# The built executables, one per line: package, kind, name, is-test, path. cargo's own
# messages (and the compiler's, rendered) go to standard error.
executables() {
  cargo test --workspace --locked --features "$FEATURES" --no-run --message-format json-diagnostic-rendered-ansi |
    python3 -c '
import json, sys
for line in sys.stdin:
    if not line.startswith("{"):
        continue
    m = json.loads(line)
    if m.get("reason") == "compiler-message":
        sys.stderr.write(m["message"].get("rendered") or "")
    elif m.get("reason") == "compiler-artifact" and m.get("executable"):
        pkg = m["package_id"].rsplit("#", 1)
        name = pkg[1].split("@")[0] if "@" in pkg[1] else pkg[0].rstrip("/").rsplit("/", 1)[-1]
        t = m["target"]
        print("\t".join([name, t["kind"][0], t["name"], str(m["profile"]["test"]).lower(), m["executable"]]))
'
}

case "${1:-}" in
  test)
    shift
    cargo test --workspace --locked --features "$FEATURES" "$@"
    ;;
  run)
    [ $# -ge 2 ] || usage
    pkg=$2
    shift 2
    integration=0
    if [ "${1:-}" = --integration ]; then integration=1; shift; fi
    [ "${1:-}" != -- ] || shift
    list="$(executables)"
    dir="$(cargo metadata --no-deps --format-version 1 --locked |
      python3 -c 'import json, sys; print(next((p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == sys.argv[1]), ""))' "$pkg")"
    [ -n "$dir" ] || { echo "workspace-tests: no package $pkg in the workspace" >&2; exit 2; }
    dir="$(dirname "$dir")"
    ran=0
    while IFS=$'\t' read -r name kind target is_test path; do
      [ "$name" = "$pkg" ] && [ "$is_test" = true ] || continue
      [ "$integration" = 0 ] || [ "$kind" = test ] || continue
      printf '\n     Running %s (%s)\n' "$target" "${path#"$ROOT"/}"
      (cd "$dir" && CARGO_MANIFEST_DIR="$dir" "$path" "$@" </dev/null)
      ran=$((ran + 1))
    done <<<"$list"
    [ "$ran" -gt 0 ] || { echo "workspace-tests: $pkg has no test binary" >&2; exit 1; }
    ;;
  exe)
    [ $# -eq 3 ] || usage
    path="$(executables | awk -F'\t' -v k="$2" -v n="$3" '$2 == k && $3 == n && $4 == "false" { print $5 }' | tail -n 1)"
    [ -x "$path" ] || { echo "workspace-tests: no $2 $3 in the workspace's build" >&2; exit 1; }
    echo "$path"
    ;;
  *) usage ;;
esac
