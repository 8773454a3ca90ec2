# Sourced by the web app's benchmarks (scripts/bench-web.sh, scripts/bench-webapp-media.sh), not
# run: starts the stack they measure and stops it when the sourcing script exits.
#
# 1. uses $SWITCHBOARD_BIN, else builds and uses the release binary (cargo build --release);
# 2. starts a throw-away Synapse (scripts/synapse.sh, venv $SWITCHBOARD_TEST_VENV or
#    ./.synapse/venv, which needs playwright: scripts/test.sh installs it) and the binary on
#    a temporary data directory, sign-in codes written to its log.
#
# Needs ROOT (the repository, the working directory) and a `log` function. Sets VENV, WORK,
# APP_URL (the app), SERVER_LOG (its log) and MATRIX_URL (the homeserver).
VENV=${SWITCHBOARD_TEST_VENV:-$ROOT/.synapse/venv}
if [[ -n ${SWITCHBOARD_BIN:-} ]]; then
  BIN=$SWITCHBOARD_BIN
else
  cargo build --release --bin switchboard >&2
  BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/switchboard
fi
WORK=$(mktemp -d)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
SYN_PORT=$(free_port)
APP_PORT=$(free_port)
cleanup() {
  [[ -n ${APP_PID:-} ]] && kill "$APP_PID" 2>/dev/null || true
  bash "$ROOT/scripts/synapse.sh" --stop "$WORK/synapse" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
log "starting Synapse on $SYN_PORT ..."
bash "$ROOT/scripts/synapse.sh" "$VENV" "$WORK/synapse" "$SYN_PORT" >/dev/null
env_get() { sed -n "s/^$1=//p" "$WORK/synapse/synapse.env" | tail -n 1; }
MATRIX_URL=$(env_get MATRIX_BASE_URL)
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
homeserver_url = "$MATRIX_URL"
server_name = "$(env_get MATRIX_SERVER_NAME)"
registration_shared_secret = "$(env_get MATRIX_SHARED_SECRET)"
TOML
log "starting $BIN on $APP_PORT ..."
SERVER_LOG=$WORK/server.log
"$BIN" serve --config "$WORK/switchboard.toml" >"$SERVER_LOG" 2>&1 &
APP_PID=$!
APP_URL=http://127.0.0.1:$APP_PORT
for _ in $(seq 100); do
  curl -fs "$APP_URL/health" >/dev/null 2>&1 && break
  sleep 0.1
done
