#!/usr/bin/env bash
# The test command:  scripts/test.sh [CARGO_TEST_ARGS...] [-- TEST_BINARY_ARGS...]
#
# 1. Makes sure the Python venv ./.synapse/venv exists with matrix-synapse
#    (installed by scripts/synapse.sh --install, ~1 min the first time) and the
#    test helpers openapi-spec-validator and aiosmtpd (pip, only if missing).
# 2. Exports for the Rust tests:
#      SWITCHBOARD_TEST_VENV    absolute path of that venv
#      SWITCHBOARD_TEST_PYTHON  absolute path of its python
#    (the tests start their own Synapse with scripts/synapse.sh, pointing it at
#    this venv and a throw-away data dir.)
# 3. Runs: cargo test --all-targets [ARGS] -- --test-threads=4 [TEST_BINARY_ARGS]
#    and exits with its status.
#
# Examples:
#   scripts/test.sh                         everything
#   scripts/test.sh --test api              one integration test file
#   scripts/test.sh sign_in -- --nocapture  filter, show output
#
# Env knobs:
#   SWITCHBOARD_TEST_VENV=DIR   use another venv (created if missing)
#   PYTHON=python3              interpreter used to create the venv (>= 3.10)
#   TEST_THREADS=4              default --test-threads
#
# Needs only the Rust toolchain, python3 (with the venv module) and access to PyPI.
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
if ((${#missing[@]})); then
  log "installing ${missing[*]} into $VENV_DIR ..."
  "$PY" -m pip install -q --disable-pip-version-check "${missing[@]}" >&2 \
    || die "pip install ${missing[*]} failed"
fi
log "venv ready: $("$PY" -c 'import synapse, sys; print("python %d.%d, synapse %s" % (sys.version_info[0], sys.version_info[1], synapse.__version__))')"

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
if [[ -n ${CI:-} || ${SWITCHBOARD_TEST_STOP_SYNAPSE:-0} == 1 ]]; then
  trap stop_synapse EXIT
fi
log "SWITCHBOARD_TEST_VENV=$SWITCHBOARD_TEST_VENV"
log "SWITCHBOARD_TEST_PYTHON=$SWITCHBOARD_TEST_PYTHON"

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
set +e
"${cmd[@]}"
status=$?
set -e
if ((status == 0)); then
  log "tests passed in $(( $(date +%s) - start ))s"
else
  log "tests FAILED (exit $status) after $(( $(date +%s) - start ))s"
fi
exit "$status"
