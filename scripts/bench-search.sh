#!/usr/bin/env bash
# The search benchmark of issue #14:  scripts/bench-search.sh
#
# Builds the release binary and `examples/bench_search.rs` (release), then runs the example:
# it seeds BENCH_MESSAGES (100,000) sealed and indexed messages into a throw-away data
# directory, starts target/release/switchboard `serve` on it as its own process and drives
# BENCH_CONNS (64) connections for BENCH_SECS (5) s per line: GET /api/attestation (the
# trivial route) and GET /api/search with several queries, printing req/s, p50, p99 and the
# server's CPU per request, with the load average before and after. No homeserver needed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The build directory cargo uses (CARGO_TARGET_DIR when set).
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
cd "$ROOT"
cargo build --release --example bench_search --bin switchboard >&2
export BENCH_SWITCHBOARD_BIN=$TARGET/release/switchboard
exec "$TARGET/release/examples/bench_search"
