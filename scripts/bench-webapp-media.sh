#!/usr/bin/env bash
# The web app's media benchmark of issue #32 (not a test):  scripts/bench-webapp-media.sh
#
# Prints (1) the time to a rendered inbox of BENCH_ROOMS (200) chats whose last message is a
# photo (goal <= 1 s), from a click on "Inbox" and from a page reload; (2) the tab's memory
# (JS heap after a forced garbage collection, DOM nodes, the renderer processes' RSS, and the
# blob: URLs alive) before opening a conversation of BENCH_IMAGES (50) photos, with every photo
# decoded on screen, and after closing it again (goal: back near the start), BENCH_ROUNDS (3)
# times.
#
# 1. uses $SWITCHBOARD_BIN, else builds and uses the release binary (cargo build --release);
# 2. starts a throw-away Synapse (scripts/synapse.sh, venv $SWITCHBOARD_TEST_VENV or
#    ./.synapse/venv, which needs playwright: scripts/test.sh installs it) and the binary on
#    a temporary data directory, sign-in codes written to its log;
# 3. runs scripts/bench-webapp-media.py with Debian's /usr/bin/chromium; stops both at the end.
set -euo pipefail
log() { echo "bench-webapp-media: $*" >&2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=${SWITCHBOARD_TEST_VENV:-$ROOT/.synapse/venv}
if [[ -n ${SWITCHBOARD_BIN:-} ]]; then
  BIN=$SWITCHBOARD_BIN
else
  cargo build --release --bin switchboard >&2
  BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/switchboard
fi
WORK=$(mktemp -d)
SYN_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
APP_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
  [[ -n ${APP_PID:-} ]] && kill "$APP_PID" 2>/dev/null || true
  bash scripts/synapse.sh --stop "$WORK/synapse" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
log "starting Synapse on $SYN_PORT ..."
bash scripts/synapse.sh "$VENV" "$WORK/synapse" "$SYN_PORT" >/dev/null
env_get() { sed -n "s/^$1=//p" "$WORK/synapse/synapse.env" | tail -n 1; }
cat >"$WORK/switchboard.toml" <<TOML
[server]
listen = "127.0.0.1:$APP_PORT"
[storage]
data_dir = "$WORK/data"
synchronous = "normal"
[mail]
transport = "log"
[rate_limit]
requests = 100000
[matrix]
homeserver_url = "$(env_get MATRIX_BASE_URL)"
server_name = "$(env_get MATRIX_SERVER_NAME)"
registration_shared_secret = "$(env_get MATRIX_SHARED_SECRET)"
TOML
log "starting $BIN on $APP_PORT ..."
"$BIN" serve --config "$WORK/switchboard.toml" >"$WORK/server.log" 2>&1 &
APP_PID=$!
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$APP_PORT/health" >/dev/null 2>&1 && break
  sleep 0.1
done
"$VENV/bin/python" scripts/bench-webapp-media.py "http://127.0.0.1:$APP_PORT" "$WORK/server.log" \
  "$(env_get MATRIX_BASE_URL)" "${BENCH_ROOMS:-200}" "${BENCH_IMAGES:-50}"
