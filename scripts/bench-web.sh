#!/usr/bin/env bash
# The web app's benchmark of issue #22 (not a test):  scripts/bench-web.sh
#
# Prints (1) the bytes transferred for the app's first load (the sign-in screen, gzip, as
# Chromium counts them on the wire; goal <= 200 KB) and the gzip size of every file the app can
# ever load; (2) the time from pressing "Sign in" to a rendered inbox of BENCH_ROOMS (200) rooms
# (goal <= 1 s), and from a page reload to the same inbox.
#
# 1.-2. scripts/bench-web-stack.sh (sourced) starts the binary and a throw-away Synapse;
# 3. runs scripts/bench-web.py with Debian's /usr/bin/chromium; stops both at the end.
set -euo pipefail
log() { echo "bench-web: $*" >&2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench-web-stack.sh
source "$ROOT/scripts/bench-web-stack.sh"
"$VENV/bin/python" scripts/bench-web.py "$APP_URL" "$SERVER_LOG" "$MATRIX_URL" "${BENCH_ROOMS:-200}"
