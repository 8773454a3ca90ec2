#!/usr/bin/env bash
# The read-route benchmark of issue 13, Synapse included:  scripts/bench.sh [--users N]
#
# 1. Starts a throw-away Synapse with scripts/synapse.sh (venv ./.synapse/venv or
#    $SWITCHBOARD_TEST_VENV; data dir target/bench-synapse, wiped first; a free port).
# 2. Builds the release binary and `bench_messages`, and runs the example with
#    BENCH_MATRIX_URL, BENCH_MATRIX_SHARED_SECRET and BENCH_SWITCHBOARD_BIN set: it starts
#    target/release/switchboard `serve` as its own process against that Synapse, fills a room
#    with BENCH_MESSAGES messages through Synapse (the server's sync worker stores them), and
#    measures every read route against /api/attestation, Synapse's own /messages page on the
#    same room with the same load generator, and the server's RSS after those runs.
#    With --users N (or BENCH_USERS=N): the many-users mode instead (N users with
#    BENCH_USER_ROOMS rooms each, synced by a real `switchboard serve` process).
# 3. Stops the Synapse (also on failure or Ctrl-C).
#
# Other knobs are the example's (BENCH_SECS, BENCH_CONNS, BENCH_ONLY, ...; see its header).
# A/B of two builds: BENCH_SWITCHBOARD_BIN and BENCH_EXAMPLE_BIN name prebuilt binaries (the
# server and bench_messages); nothing is built when BENCH_EXAMPLE_BIN is set.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The build directory cargo uses (CARGO_TARGET_DIR when set).
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
cd "$ROOT"
while (($#)); do
  case $1 in
    --users) export BENCH_USERS=${2:?--users N}; shift 2 ;;
    *) echo "bench.sh: unknown argument $1 (try: --users N)" >&2; exit 2 ;;
  esac
done
VENV=${SWITCHBOARD_TEST_VENV:-$ROOT/.synapse/venv}
DATA=$ROOT/target/bench-synapse
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if [[ -f $DATA/synapse.pid ]]; then bash scripts/synapse.sh --stop "$DATA" >&2 || true; fi
rm -rf "$DATA"
[[ -n ${BENCH_EXAMPLE_BIN:-} ]] || cargo build --release --example bench_messages --bin switchboard >&2
env_out=$(bash scripts/synapse.sh "$VENV" "$DATA" "$PORT")
trap 'bash "$ROOT/scripts/synapse.sh" --stop "$DATA" >&2 || true' EXIT
BENCH_MATRIX_URL=$(sed -n 's/^MATRIX_BASE_URL=//p' <<<"$env_out")
BENCH_MATRIX_SHARED_SECRET=$(sed -n 's/^MATRIX_SHARED_SECRET=//p' <<<"$env_out")
BENCH_MATRIX_SERVER_NAME=$(sed -n 's/^MATRIX_SERVER_NAME=//p' <<<"$env_out")
export BENCH_MATRIX_URL BENCH_MATRIX_SHARED_SECRET BENCH_MATRIX_SERVER_NAME
export BENCH_SYNAPSE_PID=$(cat "$DATA/synapse.pid")
export BENCH_SWITCHBOARD_BIN=${BENCH_SWITCHBOARD_BIN:-$TARGET/release/switchboard}
"${BENCH_EXAMPLE_BIN:-$TARGET/release/examples/bench_messages}"
