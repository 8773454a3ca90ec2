#!/usr/bin/env bash
# The e-mail benchmark of issue #10:  scripts/bench-mail.sh
#
# Builds `examples/bench_mail.rs` in release mode and runs it: a throw-away Dovecot
# (scripts/dovecot.sh; dovecot-imapd is installed with apt-get when missing and run as
# root) with BENCH_MAIL_MESSAGES (10,000) messages, the initial sync in msgs/s, then the
# thread list (personal token, BENCH_CONNS=64 connections) against /api/attestation.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The build directory cargo uses (CARGO_TARGET_DIR when set).
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
cd "$ROOT"
if ! command -v dovecot >/dev/null; then
  [[ $(id -u) == 0 ]] || { echo "bench-mail.sh: dovecot missing (apt-get install dovecot-imapd)" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dovecot-imapd >&2 \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dovecot-imapd >&2; }
fi
cargo build --release --example bench_mail >&2
exec "$TARGET/release/examples/bench_mail"
