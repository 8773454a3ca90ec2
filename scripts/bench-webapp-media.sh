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
# 1.-2. scripts/bench-web-stack.sh (sourced) starts the binary and a throw-away Synapse;
# 3. runs scripts/bench-webapp-media.py with Debian's /usr/bin/chromium; stops both at the end.
set -euo pipefail
log() { echo "bench-webapp-media: $*" >&2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench-web-stack.sh
source "$ROOT/scripts/bench-web-stack.sh"
"$VENV/bin/python" scripts/bench-webapp-media.py "$APP_URL" "$SERVER_LOG" "$MATRIX_URL" \
  "${BENCH_ROOMS:-200}" "${BENCH_IMAGES:-50}"
