#!/usr/bin/env bash
# Start a throw-away Synapse (Matrix homeserver) for integration tests and
# local development of switchboard.
#
#   scripts/synapse.sh [VENV_DIR] [DATA_DIR] [PORT]   start (installs synapse if missing)
#   scripts/synapse.sh --stop DATA_DIR                stop the instance of DATA_DIR
#   scripts/synapse.sh --status DATA_DIR              exit 0 and print DATA_DIR/synapse.env if the
#                                                     recorded pid is alive and answering, else exit 1
#   scripts/synapse.sh --install [VENV_DIR]           only make sure synapse is installed in VENV_DIR
#
# Defaults: VENV_DIR=./.synapse/venv DATA_DIR=./.synapse/data PORT=18008
#
# Env knobs:
#   PYTHON=python3                 interpreter used to create the venv (>=3.10)
#   SYNAPSE_SPEC=matrix-synapse==1.163.2   pip requirement to install if missing
#   SERVER_NAME=localhost          Matrix server_name (user ids @x:SERVER_NAME)
#   APPSERVICE_FILES="a.yaml b.yaml"  appservice registration files to load
#   STARTUP_TIMEOUT=90             seconds to wait for /_matrix/client/versions
#   LOG_LEVEL=INFO                 synapse root log level (file DATA_DIR/homeserver.log)
#
# What it does: pip-installs synapse into VENV_DIR if missing; writes
# DATA_DIR/homeserver.yaml (SQLite, 127.0.0.1:PORT only, client API only,
# no federation, no TLS, registration closed except shared-secret admin API,
# link previews on with only 127.0.0.1 allowed among private addresses,
# rate limits effectively off, /sync response cache off); generates the signing
# key once; starts synapse in the background; waits until it answers.
# Secrets are generated once and kept in DATA_DIR/secrets.env so re-runs on the
# same DATA_DIR keep working with the existing database.
#
# On success prints (eval-able) lines:
#   MATRIX_BASE_URL=http://127.0.0.1:PORT
#   MATRIX_SERVER_NAME=localhost
#   MATRIX_SHARED_SECRET=...
#   SYNAPSE_PID=...
#   SYNAPSE_STOP="kill PID"
# and writes the same lines to DATA_DIR/synapse.env.
set -euo pipefail

die() { echo "synapse.sh: $*" >&2; exit 1; }

stop_synapse() {
  local data_dir=$1 pidf pid
  pidf="$data_dir/synapse.pid"
  [[ -f $pidf ]] || die "no $pidf"
  pid=$(cat "$pidf")
  if kill -0 "$pid" 2>/dev/null && grep -q "synapse.app.homeserver" "/proc/$pid/cmdline" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
    echo "stopped synapse pid $pid"
  else
    echo "synapse pid $pid not running"
  fi
  rm -f "$pidf"
}

# Answers GET BASE_URL/_matrix/client/versions within 2 s? ($PY may be unset: fall back to python3)
answers() {
  local url="$1/_matrix/client/versions"
  if command -v curl >/dev/null; then
    curl -sf -o /dev/null --max-time 2 "$url"
  else
    "${PY:-python3}" -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
      "$url" 2>/dev/null
  fi
}

# Alive, really synapse, and answering: exit 0 and print the env file; else exit 1.
# The version of this script (its config), recorded beside a Synapse it starts.
# By absolute path: the start below runs from the data directory.
SCRIPT_PATH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
script_hash() { sha256sum "$SCRIPT_PATH" | cut -d' ' -f1; }

status_synapse() {
  local data_dir=$1 pidf envf pid base
  pidf="$data_dir/synapse.pid"
  envf="$data_dir/synapse.env"
  [[ -f $pidf && -f $envf ]] || { echo "synapse.sh: not running for $data_dir (no pid/env file)" >&2; return 1; }
  pid=$(cat "$pidf")
  if ! kill -0 "$pid" 2>/dev/null || ! grep -q "synapse.app.homeserver" "/proc/$pid/cmdline" 2>/dev/null; then
    echo "synapse.sh: pid $pid of $data_dir is not running" >&2
    return 1
  fi
  # A Synapse started by an older version of this script runs an older config (e.g.
  # without link previews): it is stopped so that the caller starts it afresh.
  if [[ "$(cat "$data_dir/synapse.script" 2>/dev/null)" != "$(script_hash)" ]]; then
    echo "synapse.sh: $data_dir runs the config of an older scripts/synapse.sh; stopping it" >&2
    stop_synapse "$data_dir" >&2
    return 1
  fi
  base=$(sed -n 's/^MATRIX_BASE_URL=//p' "$envf" | tail -n 1)
  [[ -n $base ]] || { echo "synapse.sh: no MATRIX_BASE_URL in $envf" >&2; return 1; }
  if ! answers "$base"; then
    echo "synapse.sh: pid $pid is alive but $base does not answer" >&2
    return 1
  fi
  cat "$envf"
}

PYTHON=${PYTHON:-python3}
SYNAPSE_SPEC=${SYNAPSE_SPEC:-matrix-synapse==1.163.2}

# Create VENV_DIR with $PYTHON if needed and pip-install $SYNAPSE_SPEC unless synapse imports.
install_synapse() {
  local venv_dir=$1 py="$1/bin/python"
  if ! "$py" -c 'import synapse.app.homeserver' 2>/dev/null; then
    echo "synapse.sh: installing $SYNAPSE_SPEC into $venv_dir (about a minute the first time) ..." >&2
    [[ -x $py ]] || "$PYTHON" -m venv "$venv_dir" || die "venv creation failed (Debian system python needs: apt-get install python3-venv)"
    "$py" -m pip install -q --disable-pip-version-check "$SYNAPSE_SPEC" >&2 || die "pip install $SYNAPSE_SPEC failed"
  fi
  # Link previews (url_preview_enabled below) need Synapse's "url-preview" extra (lxml,
  # beautifulsoup4): installed for the Synapse version present, as Synapse itself checks it.
  if ! "$py" -c 'from synapse.util.check_dependencies import check_requirements as c; c("url-preview")' 2>/dev/null; then
    local version
    version=$("$py" -c 'import synapse; print(synapse.__version__.split()[0])')
    echo "synapse.sh: installing matrix-synapse[url-preview]==$version into $venv_dir ..." >&2
    "$py" -m pip install -q --disable-pip-version-check "matrix-synapse[url-preview]==$version" >&2 \
      || die "pip install matrix-synapse[url-preview] failed"
  fi
}

case ${1:-} in
  --stop)
    stop_synapse "${2:?usage: $0 --stop DATA_DIR}"
    exit 0 ;;
  --status)
    status_synapse "${2:?usage: $0 --status DATA_DIR}"
    exit $? ;;
  --install)
    install_synapse "${2:-./.synapse/venv}"
    exit 0 ;;
  -h|--help)
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
    exit 0 ;;
  -*)
    die "unknown option $1 (try --help)" ;;
esac

VENV_DIR=${1:-./.synapse/venv}
DATA_DIR=${2:-./.synapse/data}
PORT=${3:-18008}
SERVER_NAME=${SERVER_NAME:-localhost}
APPSERVICE_FILES=${APPSERVICE_FILES:-}
STARTUP_TIMEOUT=${STARTUP_TIMEOUT:-90}
LOG_LEVEL=${LOG_LEVEL:-INFO}

# ---- 1. install -----------------------------------------------------------
install_synapse "$VENV_DIR"
VENV_DIR=$(cd "$VENV_DIR" && pwd)   # absolute: we cd into DATA_DIR before starting
PY="$VENV_DIR/bin/python"
SYNAPSE_VERSION=$("$PY" -c 'import synapse; print(synapse.__version__)')

# ---- 2. config --------------------------------------------------------------
mkdir -p "$DATA_DIR/media_store"
DATA_DIR=$(cd "$DATA_DIR" && pwd)
BASE_URL="http://127.0.0.1:$PORT"

if [[ -f $DATA_DIR/synapse.pid ]] && kill -0 "$(cat "$DATA_DIR/synapse.pid")" 2>/dev/null; then
  die "synapse already running for $DATA_DIR (pid $(cat "$DATA_DIR/synapse.pid")); stop it with: $0 --stop $DATA_DIR"
fi
"$PY" - "$PORT" 2>/dev/null <<'EOF' || die "port $PORT on 127.0.0.1 is already in use"
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.close()
EOF

if [[ ! -f $DATA_DIR/secrets.env ]]; then
  gen() { "$PY" -c 'import secrets; print(secrets.token_hex(32))'; }
  umask 077
  {
    echo "REGISTRATION_SHARED_SECRET=$(gen)"
    echo "MACAROON_SECRET_KEY=$(gen)"
    echo "FORM_SECRET=$(gen)"
  } > "$DATA_DIR/secrets.env"
  umask 022
fi
# shellcheck disable=SC1091
source "$DATA_DIR/secrets.env"

AS_YAML="[]"
if [[ -n $APPSERVICE_FILES ]]; then
  AS_YAML=""
  for f in ${APPSERVICE_FILES//,/ }; do
    [[ -f $f ]] || die "appservice file $f not found"
    AS_YAML+=$'\n'"  - \"$(cd "$(dirname "$f")" && pwd)/$(basename "$f")\""
  done
fi

RL="{per_second: 100000, burst_count: 100000}"
cat > "$DATA_DIR/homeserver.yaml" <<EOF
# generated by scripts/synapse.sh -- synapse $SYNAPSE_VERSION
server_name: "$SERVER_NAME"
public_baseurl: "$BASE_URL/"
pid_file: "$DATA_DIR/synapse.pid"
listeners:
  - port: $PORT
    bind_addresses: ['127.0.0.1']
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]      # client-server API + /_synapse/admin; no federation resource
        compress: false
database:
  name: sqlite3
  args:
    database: "$DATA_DIR/homeserver.db"
log_config: "$DATA_DIR/log.config"
media_store_path: "$DATA_DIR/media_store"
signing_key_path: "$DATA_DIR/$SERVER_NAME.signing.key"
registration_shared_secret: "$REGISTRATION_SHARED_SECRET"
macaroon_secret_key: "$MACAROON_SECRET_KEY"
form_secret: "$FORM_SECRET"
enable_registration: false
report_stats: false
enable_metrics: false
# Link previews (GET /api/preview): on, and the test pages are served on loopback, so
# 127.0.0.1 is allowed; every other private or local range stays refused.
url_preview_enabled: true
url_preview_ip_range_blacklist:
  - '127.0.0.0/8'
  - '10.0.0.0/8'
  - '172.16.0.0/12'
  - '192.168.0.0/16'
  - '100.64.0.0/10'
  - '192.0.0.0/24'
  - '169.254.0.0/16'
  - '198.18.0.0/15'
  - '192.0.2.0/24'
  - '198.51.100.0/24'
  - '203.0.113.0/24'
  - '224.0.0.0/4'
  - '::1/128'
  - 'fe80::/10'
  - 'fc00::/7'
url_preview_ip_range_whitelist: ['127.0.0.1']
trusted_key_servers: []
suppress_key_server_warning: true
federation_domain_whitelist: []   # empty list = federate with nobody
presence:
  enabled: false
caches:
  # default 2m: identical /sync requests (e.g. two initial syncs) would return
  # a stale cached response -- confusing in tests.
  sync_response_cache_duration: 0
app_service_config_files: $AS_YAML
# A throw-away homeserver: cheap password hashing keeps registrations fast when the
# test suite registers many users in parallel on 2 cores (Synapse's default is 12).
bcrypt_rounds: 4
rc_message: $RL
rc_registration: $RL
rc_registration_token_validity: $RL
rc_login:
  address: $RL
  account: $RL
  failed_attempts: $RL
rc_admin_redaction: $RL
rc_joins:
  local: $RL
  remote: $RL
rc_joins_per_room: $RL
rc_3pid_validation: $RL
rc_invites:
  per_room: $RL
  per_user: $RL
  per_issuer: $RL
rc_third_party_invite: $RL
rc_media_create: $RL
rc_presence:
  per_user: $RL
rc_delayed_event_mgmt: $RL
rc_room_creation: $RL
rc_reports: $RL
rc_user_directory: $RL
rc_profile: $RL
rc_key_requests: $RL
EOF

cat > "$DATA_DIR/log.config" <<EOF
version: 1
formatters:
  precise:
    format: '%(asctime)s - %(name)s - %(lineno)d - %(levelname)s - %(request)s - %(message)s'
handlers:
  file:
    class: logging.FileHandler
    formatter: precise
    filename: "$DATA_DIR/homeserver.log"
    encoding: utf8
loggers:
  synapse.storage.SQL:
    level: WARNING
root:
  level: $LOG_LEVEL
  handlers: [file]
disable_existing_loggers: false
EOF

if [[ ! -f $DATA_DIR/$SERVER_NAME.signing.key ]]; then
  "$PY" -m synapse.app.homeserver -c "$DATA_DIR/homeserver.yaml" --generate-keys >&2 \
    || die "signing key generation failed"
fi

# ---- 3. start ----------------------------------------------------------------
cd "$DATA_DIR"
nohup "$PY" -m synapse.app.homeserver -c "$DATA_DIR/homeserver.yaml" \
  >"$DATA_DIR/synapse.stdout.log" 2>&1 </dev/null &
PID=$!
echo "$PID" > "$DATA_DIR/synapse.pid"   # synapse rewrites the same pid itself

# ---- 4. wait -----------------------------------------------------------------
ready() { answers "$BASE_URL"; }
start=$(date +%s)
until ready; do
  if ! kill -0 "$PID" 2>/dev/null; then
    echo "synapse.sh: synapse exited during startup; last log lines:" >&2
    tail -n 30 "$DATA_DIR/synapse.stdout.log" "$DATA_DIR/homeserver.log" >&2 || true
    rm -f "$DATA_DIR/synapse.pid"
    exit 1
  fi
  if (( $(date +%s) - start >= STARTUP_TIMEOUT )); then
    echo "synapse.sh: not ready after ${STARTUP_TIMEOUT}s; killing pid $PID" >&2
    kill "$PID" 2>/dev/null || true
    tail -n 30 "$DATA_DIR/homeserver.log" >&2 || true
    exit 1
  fi
  sleep 0.2
done

script_hash > "$DATA_DIR/synapse.script"
{
  echo "MATRIX_BASE_URL=$BASE_URL"
  echo "MATRIX_SERVER_NAME=$SERVER_NAME"
  echo "MATRIX_SHARED_SECRET=$REGISTRATION_SHARED_SECRET"
  echo "SYNAPSE_PID=$PID"
  echo "SYNAPSE_VERSION=$SYNAPSE_VERSION"
  echo "SYNAPSE_STOP=\"kill $PID\""
} | tee "$DATA_DIR/synapse.env"
echo "synapse.sh: ready in $(( $(date +%s) - start ))s; stop with: kill $PID   (or: $0 --stop $DATA_DIR)" >&2
