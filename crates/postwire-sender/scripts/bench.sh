#!/usr/bin/env bash
# Runs the sender benchmark (crates/postwire-sender/examples/bench.rs) in release mode.
# Needs `wrk` (Debian package `wrk`, installed by scripts/setup.sh) for the comparison;
# without it the sender figures are still printed.
#
#   crates/postwire-sender/scripts/bench.sh [--deliveries N] [--held N] [--skip-wrk]
#
# Defaults: 100,000 deliveries per throughput run, 1,000,000 held events (about 1.3 GB of
# temporary SQLite file, removed afterwards). LTO is switched off here only to keep the
# build short on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/../../.."
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
exec cargo run --release -p postwire-sender --example bench -- "$@"
