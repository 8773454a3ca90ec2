#!/usr/bin/env bash
# The test command:  scripts/test.sh [CARGO_TEST_ARGS...] [-- TEST_BINARY_ARGS...]
#
# 1. Makes sure the Python venv ./.synapse/venv exists with matrix-synapse
#    (installed by scripts/synapse.sh --install, ~1 min the first time) and the
#    test helpers openapi-spec-validator, aiosmtpd, matrix-nio[e2e], mcp and playwright (pip, only if
#    missing).
#    Installs the tools of the client and package tests into target/test-tools (each
#    only when missing or when its pinned version changed): a venv with
#    openapi-python-client (tests/clients/requirements.txt), openapi-typescript via
#    `npm ci` (tests/clients/package-lock.json), Biome via `npm ci` (tests/lint/package-lock.json),
#    cargo-deb (cargo install, ~2 min the first time), and lintian, dovecot-imapd and chromium
#    (apt-get, when run as root). A tool that cannot be installed is reported here, and the test
#    that needs it fails saying so (Biome: the run stops).
#    Then checks assets/ with Biome (format and lint, biome.json) and for lines over 120
#    characters; a finding stops the run here.
# 2. Exports for the Rust tests:
#      SWITCHBOARD_TEST_VENV    absolute path of that venv
#      SWITCHBOARD_TEST_PYTHON  absolute path of its python
#      SWITCHBOARD_TEST_TOOLS   absolute path of target/test-tools
#    (the tests start their own Synapse with scripts/synapse.sh, pointing it at
#    this venv and a throw-away data dir.)
# 3. Runs: cargo test --all-targets [ARGS] -- --test-threads=4 [TEST_BINARY_ARGS]
#    and exits with its status.
#
# Examples:
#   scripts/test.sh                         everything
#   scripts/test.sh --test integration webapp   one area of the integration tests
#   scripts/test.sh sign_in -- --nocapture  filter, show output
#
# Env knobs:
#   SWITCHBOARD_TEST_VENV=DIR   use another venv (created if missing)
#   PYTHON=python3              interpreter used to create the venv (>= 3.10)
#   TEST_THREADS=4              default --test-threads
#   SWITCHBOARD_TEST_TOOLS=DIR  where the client/package test tools go (target/test-tools)
#
# Needs the Rust toolchain, python3 (with the venv module), node + npm, dpkg, and access to
# PyPI, npm and crates.io (and Debian's archive for lintian).
set -euo pipefail

log() { echo "test.sh: $*" >&2; }
die() { log "$*"; exit 1; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

VENV_DIR=${SWITCHBOARD_TEST_VENV:-$ROOT/.synapse/venv}
TEST_THREADS=${TEST_THREADS:-4}

# ---- 1. python venv: synapse + test helpers ---------------------------------
log "checking Python venv $VENV_DIR (matrix-synapse) ..."
bash "$ROOT/scripts/synapse.sh" --install "$VENV_DIR" || die "could not install matrix-synapse into $VENV_DIR"
VENV_DIR=$(cd "$VENV_DIR" && pwd)
PY="$VENV_DIR/bin/python"
[[ -x $PY ]] || die "$PY missing after install"

missing=()
"$PY" -c 'import openapi_spec_validator' 2>/dev/null || missing+=(openapi-spec-validator)
"$PY" -c 'import aiosmtpd' 2>/dev/null || missing+=(aiosmtpd)
# The independent end-to-end encryption client of tests/e2ee_client.py (vodozemac, no libolm).
"$PY" -c 'import nio.crypto' 2>/dev/null || missing+=('matrix-nio[e2e]==0.26.*')
# The independent MCP client of tests/mcp/mcp_client.py (the official Python SDK).
"$PY" -c 'import mcp.client.streamable_http' 2>/dev/null || missing+=('mcp==2.3.*')
# Playwright for Python drives Debian's chromium in tests/web/webapp.py (never `playwright install`).
"$PY" -c 'import playwright.sync_api' 2>/dev/null || missing+=('playwright==1.65.*')
# The Web Push service stand-in (tests/support/push_service.py) decrypts and verifies with it.
"$PY" -c 'import cryptography.hazmat.primitives.ciphers.aead' 2>/dev/null || missing+=(cryptography)
if ((${#missing[@]})); then
  log "installing ${missing[*]} into $VENV_DIR ..."
  "$PY" -m pip install -q --disable-pip-version-check "${missing[@]}" >&2 \
    || die "pip install ${missing[*]} failed"
fi
log "venv ready: $("$PY" -c 'import synapse, sys; print("python %d.%d, synapse %s" % (sys.version_info[0], sys.version_info[1], synapse.__version__))')"

# ---- 1b. tools of the client and package tests ------------------------------
TOOLS_DIR=${SWITCHBOARD_TEST_TOOLS:-$ROOT/target/test-tools}
CARGO_DEB_VERSION=3.8.0
mkdir -p "$TOOLS_DIR"
TOOLS_DIR=$(cd "$TOOLS_DIR" && pwd)
warn_tool() { log "WARNING: $* -- the tests that need it will fail"; }

# Python client generator, in its own venv (its pins must not move Synapse's).
if ! cmp -s "$ROOT/tests/clients/requirements.txt" "$TOOLS_DIR/client-venv/requirements.txt"; then
  log "installing the Python client generator into $TOOLS_DIR/client-venv ..."
  rm -rf "$TOOLS_DIR/client-venv"
  if "${PYTHON:-python3}" -m venv "$TOOLS_DIR/client-venv" >&2 \
    && "$TOOLS_DIR/client-venv/bin/python" -m pip install -q --disable-pip-version-check \
      -r "$ROOT/tests/clients/requirements.txt" >&2; then
    cp "$ROOT/tests/clients/requirements.txt" "$TOOLS_DIR/client-venv/requirements.txt"
  else
    warn_tool "could not install tests/clients/requirements.txt"
  fi
fi

# TypeScript client generator.
if ! cmp -s "$ROOT/tests/clients/package-lock.json" "$TOOLS_DIR/node/package-lock.json" \
  || [[ ! -d $TOOLS_DIR/node/node_modules ]]; then
  log "installing the TypeScript client generator into $TOOLS_DIR/node (npm ci) ..."
  rm -rf "$TOOLS_DIR/node"
  mkdir -p "$TOOLS_DIR/node"
  cp "$ROOT/tests/clients/package.json" "$ROOT/tests/clients/package-lock.json" "$TOOLS_DIR/node/"
  if ! command -v npm >/dev/null; then
    warn_tool "npm is not installed (node 20 + npm are needed)"
  elif ! (cd "$TOOLS_DIR/node" && npm ci --no-audit --no-fund --loglevel=error >&2); then
    rm -rf "$TOOLS_DIR/node/node_modules"
    warn_tool "npm ci of tests/clients/package-lock.json failed"
  fi
fi

# cargo-deb builds the package (crates.io has no prebuilt binary: ~75 s on 2 cores).
if [[ $("$TOOLS_DIR/cargo/bin/cargo-deb" --version 2>/dev/null) != *" $CARGO_DEB_VERSION" ]]; then
  log "installing cargo-deb $CARGO_DEB_VERSION into $TOOLS_DIR/cargo ..."
  cargo install --quiet --locked cargo-deb --version "$CARGO_DEB_VERSION" \
    --root "$TOOLS_DIR/cargo" >&2 || warn_tool "cargo install cargo-deb failed"
fi

# lintian checks the package (Debian's own tool; needs root to install).
if ! command -v lintian >/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    log "installing lintian (apt-get) ..."
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends lintian; } >&2 \
      || warn_tool "apt-get install lintian failed"
  else
    warn_tool "lintian is not installed (as root: apt-get install lintian)"
  fi
fi

# Dovecot: the real IMAP server of the e-mail tests (scripts/dovecot.sh starts it).
if ! command -v dovecot >/dev/null; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    log "installing dovecot-imapd (apt-get) ..."
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends dovecot-imapd \
        || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
             apt-get install -y -qq --no-install-recommends dovecot-imapd; }; } >&2 \
      || warn_tool "apt-get install dovecot-imapd failed"
  else
    warn_tool "dovecot is not installed (as root: apt-get install dovecot-imapd)"
  fi
fi

# Chromium: the browser of the web app's tests (tests/web/webapp.py drives /usr/bin/chromium;
# Playwright's own browser download is not used).
if [[ ! -x /usr/bin/chromium ]]; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    log "installing chromium (apt-get) ..."
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium \
        || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
             apt-get install -y -qq --no-install-recommends chromium; }; } >&2 \
      || warn_tool "apt-get install chromium failed"
  else
    warn_tool "chromium is not installed (as root: apt-get install chromium)"
  fi
fi

# Biome, the web app's formatter and linter (tests/lint/package-lock.json pins it).
if ! cmp -s "$ROOT/tests/lint/package-lock.json" "$TOOLS_DIR/biome/package-lock.json" \
  || [[ ! -x $TOOLS_DIR/biome/node_modules/.bin/biome ]]; then
  log "installing Biome into $TOOLS_DIR/biome (npm ci) ..."
  rm -rf "$TOOLS_DIR/biome"
  mkdir -p "$TOOLS_DIR/biome"
  cp "$ROOT/tests/lint/package.json" "$ROOT/tests/lint/package-lock.json" "$TOOLS_DIR/biome/"
  (cd "$TOOLS_DIR/biome" && npm ci --no-audit --no-fund --loglevel=error >&2) \
    || { rm -rf "$TOOLS_DIR/biome/node_modules"; die "npm ci of tests/lint/package-lock.json failed (Biome)"; }
fi

# ---- 1c. the web app's JavaScript: formatted, lint-clean, lines <= 120 ---------
# `biome ci` fails on a file the formatter would change or a lint finding (biome.json). It
# cannot wrap a long string or comment, so the line limit is checked on its own.
log "checking assets/ with Biome (format + lint) ..."
"$TOOLS_DIR/biome/node_modules/.bin/biome" ci --colors=off "$ROOT" >&2 \
  || die "Biome found formatting or lint problems in assets/ (fix: $TOOLS_DIR/biome/node_modules/.bin/biome check --write)"
"${PYTHON:-python3}" - "$ROOT/assets" <<'PY' || die "assets/ has lines over 120 characters"
import pathlib, sys
long = [f"{p}:{n}: {len(line)} characters"
        for p in sorted(pathlib.Path(sys.argv[1]).rglob("*.js")) if "vendor" not in p.parts
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if len(line) > 120]
print("\n".join(long), file=sys.stderr)
sys.exit(1 if long else 0)
PY

export SWITCHBOARD_TEST_TOOLS="$TOOLS_DIR"
export SWITCHBOARD_TEST_VENV="$VENV_DIR"
export SWITCHBOARD_TEST_PYTHON="$PY"
# A failing test's panic message matters more than a 30-frame backtrace in a CI log.
export RUST_BACKTRACE="${RUST_BACKTRACE:-0}"
# The integration tests start one Synapse for the whole run in this directory (or reuse
# the one already running there). On CI (CI set) or with SWITCHBOARD_TEST_STOP_SYNAPSE=1 it
# is stopped when the run ends; otherwise it keeps running so the next run starts at once
# (stop it with: scripts/synapse.sh --stop target/test-synapse).
export SWITCHBOARD_TEST_SYNAPSE_DIR="${SWITCHBOARD_TEST_SYNAPSE_DIR:-$ROOT/target/test-synapse}"
stop_synapse() {
  if [[ -f $SWITCHBOARD_TEST_SYNAPSE_DIR/synapse.pid ]]; then
    bash "$ROOT/scripts/synapse.sh" --stop "$SWITCHBOARD_TEST_SYNAPSE_DIR" >&2 || true
  fi
}
# The e-mail tests' Dovecot, likewise one per run in this directory (reused when running).
export SWITCHBOARD_TEST_DOVECOT_DIR="${SWITCHBOARD_TEST_DOVECOT_DIR:-$ROOT/target/test-dovecot}"
stop_dovecot() {
  bash "$ROOT/scripts/dovecot.sh" --stop "$SWITCHBOARD_TEST_DOVECOT_DIR" >&2 || true
}
if [[ -n ${CI:-} || ${SWITCHBOARD_TEST_STOP_SYNAPSE:-0} == 1 ]]; then
  trap 'stop_synapse; stop_dovecot' EXIT
fi
log "SWITCHBOARD_TEST_VENV=$SWITCHBOARD_TEST_VENV"
log "SWITCHBOARD_TEST_PYTHON=$SWITCHBOARD_TEST_PYTHON"
log "SWITCHBOARD_TEST_TOOLS=$SWITCHBOARD_TEST_TOOLS"

# ---- 2. cargo test ------------------------------------------------------------
# Arguments before a "--" go to cargo test, the rest to the test binaries.
cargo_args=()
bin_args=()
seen_sep=0
for a in "$@"; do
  if ((seen_sep)); then
    bin_args+=("$a")
  elif [[ $a == -- ]]; then
    seen_sep=1
  else
    cargo_args+=("$a")
  fi
done
# Our default thread count, unless the caller chose one (libtest rejects it twice).
threads=("--test-threads=$TEST_THREADS")
for a in "${bin_args[@]+"${bin_args[@]}"}"; do
  [[ $a == --test-threads* ]] && threads=()
done

cmd=(cargo test --all-targets "${cargo_args[@]+"${cargo_args[@]}"}" --
     "${threads[@]+"${threads[@]}"}" "${bin_args[@]+"${bin_args[@]}"}")
log "running: ${cmd[*]}"
start=$(date +%s)
# The output is also kept, so a failure's panic messages can be repeated last: a failed
# test's captured server log can run to thousands of lines and bury them.
output_log=${CARGO_TARGET_DIR:-$ROOT/target}/test-output.log
mkdir -p "$(dirname "$output_log")"
set +e
"${cmd[@]}" 2>&1 | tee "$output_log"
status=${PIPESTATUS[0]}
set -e
if ((status == 0)); then
  log "tests passed in $(( $(date +%s) - start ))s"
else
  log "the failures' panic messages (whole output: $output_log):"
  grep -a -A2 "panicked at" "$output_log" | cut -c1-600 | head -80 >&2 || true
  log "tests FAILED (exit $status) after $(( $(date +%s) - start ))s"
fi
exit "$status"
