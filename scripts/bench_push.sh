#!/bin/sh
# Web Push benchmark (not a test): message at Synapse -> push leaving Switchboard, p50/p99
# over 200 messages, and CPU per push. Uses the integration harness (real binary, Synapse,
# a local push service); prints one "BENCH" line. Same environment as scripts/test.sh.
set -e
cd "$(dirname "$0")/.."
exec scripts/test.sh --test integration push::bench -- --ignored --nocapture
