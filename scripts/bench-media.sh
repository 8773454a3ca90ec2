#!/usr/bin/env bash
# The attachment download benchmark of issue 23:  scripts/bench-media.sh
#
# 1. Starts a throw-away Synapse with scripts/synapse.sh (venv ./.synapse/venv or
#    $SWITCHBOARD_TEST_VENV; data dir target/bench-media-synapse, wiped first; a free port).
# 2. Builds the server binary and the `bench_media` example (release; BENCH_PROFILE=debug
#    for a quick check that it runs), and runs it: a 20 MB download straight from Synapse
#    next to the same through Switchboard, the server's CPU per byte served next to the
#    SHA-256 + AES-256-CTR floor measured in the same run (goal for the encrypted
#    attachment: at most 1.3x the floor), and the server's RSS during 8 parallel downloads
#    (see the example's header; knobs BENCH_MEDIA_MB, BENCH_ROUNDS).
#    Prebuilt binaries instead: BENCH_EXAMPLE_BIN (bench_media) and BENCH_SWITCHBOARD_BIN
#    (the server); nothing is built when BENCH_EXAMPLE_BIN is set.
# 3. Stops the Synapse (also on failure or Ctrl-C).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=${SWITCHBOARD_TEST_VENV:-$ROOT/.synapse/venv}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PROFILE=${BENCH_PROFILE:-release}
DATA=$ROOT/target/bench-media-synapse
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
if [[ -f $DATA/synapse.pid ]]; then bash scripts/synapse.sh --stop "$DATA" >&2 || true; fi
rm -rf "$DATA"
if [[ $PROFILE == release ]]; then
  [[ -n ${BENCH_EXAMPLE_BIN:-} ]] || cargo build --release --example bench_media --bin switchboard >&2
  OUT=$TARGET/release
else
  [[ -n ${BENCH_EXAMPLE_BIN:-} ]] || cargo build --example bench_media --bin switchboard >&2
  OUT=$TARGET/debug
fi
env_out=$(bash scripts/synapse.sh "$VENV" "$DATA" "$PORT")
trap 'bash "$ROOT/scripts/synapse.sh" --stop "$DATA" >&2 || true' EXIT
BENCH_MATRIX_URL=$(sed -n 's/^MATRIX_BASE_URL=//p' <<<"$env_out")
BENCH_MATRIX_SHARED_SECRET=$(sed -n 's/^MATRIX_SHARED_SECRET=//p' <<<"$env_out")
BENCH_MATRIX_SERVER_NAME=$(sed -n 's/^MATRIX_SERVER_NAME=//p' <<<"$env_out")
export BENCH_MATRIX_URL BENCH_MATRIX_SHARED_SECRET BENCH_MATRIX_SERVER_NAME
export BENCH_SWITCHBOARD_BIN=${BENCH_SWITCHBOARD_BIN:-$OUT/switchboard}
"${BENCH_EXAMPLE_BIN:-$OUT/examples/bench_media}"
