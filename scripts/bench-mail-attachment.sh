#!/usr/bin/env bash
# Benchmark: peak RSS growth of the server while a 20 MB e-mail attachment is uploaded and
# sent (real Dovecot and SMTP sink, as the integration tests use). Prints a line
# "BENCH peak RSS growth: ..." with both figures; the target is < 32 MiB.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exec "$ROOT/scripts/test.sh" --test integration email::outgoing::bench -- --ignored --nocapture
