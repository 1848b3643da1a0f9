#!/usr/bin/env bash
# Runs postwire's tests part by part, exactly as CI does, and prints how long each took.
# Installs nothing: run scripts/setup.sh once first (scripts/test-all.sh does both).
#
#   scripts/test.sh              every part, in the order below
#   scripts/test.sh rust npm     only these parts
#   scripts/test.sh --list       the parts, one per line
#
# Stops at the first failing part and says which.
set -euo pipefail
cd "$(dirname "$0")/.."
# npm's binaryen wasm-opt must win over Debian's (see docs/toolchain.md).
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

# The Rust version the workspace promises (`rust-version` in Cargo.toml). The Worker is
# left out: the `worker` crate it builds on sets its own, newer minimum.
MSRV=1.89
# How long each cargo-fuzz target runs in CI: long enough to catch a shallow panic in a
# parser, short enough for every run. Longer campaigns: fuzz/README.md.
FUZZ_SECONDS=${FUZZ_SECONDS:-10}

part_vectors() { # the shared test vectors are what tests/vectors/generate.py writes
  .venv/bin/python tests/vectors/generate.py   # .venv has `cryptography` (scripts/setup.sh)
  node tests/vectors/providers/generate.mjs    # other providers' SDKs (root package.json devDependencies)
  git diff --exit-code -- tests/vectors || { echo "tests/vectors differ from generate.py's or providers/generate.mjs's output" >&2; return 1; }
}
part_lint() { # cargo fmt --check, cargo clippy -D warnings (the workspace lints included), no module cycles
  cargo fmt --all --check
  python3 scripts/module-cycles.py
  # The receiver's store and key-set features and the CLI's otel in the same run: one check build.
  # (`-p postwire-cli --features otel` alone would resolve tokio, hyper, aws-lc... anew.)
  cargo clippy --workspace --all-targets --locked \
    --features postwire-receiver/redis,postwire-receiver/postgres,postwire-receiver/key-set,postwire-cli/otel -- -D warnings
}
part_docs() { # rustdoc with warnings denied: no broken intra-doc links, no bare URLs
  RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
}
part_msrv() { # the workspace builds with its declared minimum Rust version; a build with nothing changed compiles nothing
  # The check, then the same check again, with and without npm/dist/browser (what
  # postwire-server's build script watches): the second of each must compile nothing.
  CARGO_TARGET_DIR=target/msrv bash scripts/test-noop-build.sh cargo "+$MSRV" check --workspace --exclude postwire-worker --locked
}
part_deny() { # cargo deny: licenses, banned and duplicate crates, crate sources (deny.toml)
  # Advisories are left out: their database is fetched from a git host, which this
  # project's machines cannot reach.
  cargo deny --locked check --hide-inclusion-graph licenses bans sources
}
part_rust() { # cargo test --workspace, postwire-core without and with every feature, trace export
  # The build every later part's native tests, CLI and examples come from.
  bash scripts/workspace-tests.sh test
  cargo test -p postwire-core --locked   # without `ed25519`: the v1-only build (the npm default module)
  cargo test -p postwire-core --all-features --locked
  # In the workspace's feature set (as -p postwire-cli, it would build its own tokio, hyper, aws-lc, SQLite...)
  bash scripts/workspace-tests.sh test --features postwire-cli/otel --test otel
}
part_postgres() { # the sender's tests again, on PostgreSQL (a throwaway cluster; fails if it cannot start); the receiver's stores on PostgreSQL and Redis (needs redis-server)
  # The rust part's build, plus the receiver's store features (scripts/workspace-tests.sh).
  POSTWIRE_TEST_BACKEND=postgres bash scripts/workspace-tests.sh --stores run postwire-sender --integration
  # + the npm stores against the Rust ones (tests/npm_interop.rs: node, root node_modules;
  # CI=true makes it fail rather than pass unrun where they are missing)
  CI=true bash scripts/workspace-tests.sh --stores run postwire-receiver
}
part_fuzz() { # each cargo-fuzz target of fuzz/ for FUZZ_SECONDS seconds
  local target
  mkdir -p target # each target's log goes there
  for target in $(cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz list); do
    echo "fuzz target $target: ${FUZZ_SECONDS}s"
    if ! (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" -- -max_total_time="$FUZZ_SECONDS" \
      -print_final_stats=1 >"../target/fuzz-$target.log" 2>&1); then
      tail -40 "target/fuzz-$target.log" >&2
      echo "fuzz target $target failed (a crash is kept in fuzz/artifacts/$target)" >&2
      return 1
    fi
    grep -E "^(Done|stat::number_of_executed_units)" "target/fuzz-$target.log"
  done
}
part_npm() { bash npm/test.sh; }                              # wasm package in Node, Chromium and other runtimes
part_worker() { bash worker/test.sh; }                        # the Worker in workerd (Miniflare)
part_examples() { bash examples/test.sh; }                    # the receivers people copy
part_e2e() { bash tests/e2e/test.sh; }                        # sender → Worker → origin
part_settings() { bash tests/settings/test.sh; }             # the Settings screen in Chromium (playwright-core, axe-core)
part_contract() { bash tests/contract/test.sh; }              # the API against its OpenAPI (Schemathesis)
part_client() { bash tests/contract/client/test.sh; }         # a generated TypeScript client
part_package() { bash scripts/package.sh --quick; }           # every publishable crate packaged (cargo publish --dry-run), the npm tarball
part_quickstart() { bash tests/quickstart/test.sh; }          # the docs' quickstarts, extracted from the Markdown and run

ALL=(vectors lint docs msrv deny rust postgres fuzz npm worker examples e2e settings contract client package quickstart)

if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${ALL[@]}"
  exit 0
fi
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=("${ALL[@]}")
for p in "${parts[@]}"; do
  declare -F "part_$p" >/dev/null || { echo "no test part '$p' (see scripts/test.sh --list)" >&2; exit 2; }
done

timings=()
# scripts/test-all.sh passes the time its scripts/setup.sh took.
[ -z "${POSTWIRE_SETUP_SECONDS:-}" ] || timings+=("$(printf '%-9s %5ds' setup "$POSTWIRE_SETUP_SECONDS")")
all_start=$SECONDS
report() {
  printf '\n\033[1;34m==> timings\033[0m\n'
  printf '%s\n' "${timings[@]}"
  printf '%-9s %5ds\n' total $((SECONDS - all_start + ${POSTWIRE_SETUP_SECONDS:-0}))
}
trap report EXIT
for p in "${parts[@]}"; do
  printf '\n\033[1;34m==> %s\033[0m\n' "$p"
  start=$SECONDS
  # In a subshell with errexit on, outside any condition: a part fails at its first
  # failing command. (Called as `if ! part`, bash would ignore -e inside it, and only
  # the part's last command would decide.)
  set +e
  ( set -e; "part_$p" )
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    timings+=("$(printf '%-9s %5ds  FAILED' "$p" $((SECONDS - start)))")
    exit 1
  fi
  timings+=("$(printf '%-9s %5ds' "$p" $((SECONDS - start)))")
done
printf '\n\033[1;32m==> all %d parts passed\033[0m\n' "${#parts[@]}"
