#!/usr/bin/env bash
# Benchmark: peak RSS growth of the server while a 20 MB e-mail attachment is uploaded and
# sent, and while a mail with such a file is cached and forwarded (real Dovecot and SMTP sink,
# as the integration tests use). Prints "BENCH ..." lines: the upload, the send (whole, and up
# to the moment the SMTP sink had the message), the sync caching such a mail, the forward. The
# target is < 32 MiB. The two tests run one at a time (TEST_THREADS=1 unless set), so neither
# loads the machine while the other measures. Figures: docs/benchmarks.md.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export TEST_THREADS=${TEST_THREADS:-1}
exec "$ROOT/scripts/test.sh" --test integration email::outgoing::bench -- --ignored --nocapture
