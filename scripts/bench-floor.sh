#!/usr/bin/env bash
# The machine's HTTP floor next to Switchboard's cheapest route, measured in one run:
#
#   scripts/bench-floor.sh            (env: SECS=10 CONNS=64 THREADS=2 ROUNDS=2 SWITCHBOARD_BIN=…)
#
# 1. Builds the release binary (unless SWITCHBOARD_BIN names one) and starts `switchboard
#    serve` on a free port with a throw-away data directory (no homeserver is needed for
#    the route; the general rate limit is lifted so it is not what is measured).
# 2. Starts nginx (Debian's; `apt-get install nginx wrk`) on another free port, serving
#    the very bytes `GET /api/attestation` answers, as a static file with the same
#    content type, access log on (Switchboard's is on by default), keep-alive unlimited.
# 3. Drives both with wrk (-t THREADS -c CONNS -d SECS --latency), alternating ROUNDS
#    times, and prints each run's requests per second and p99, and the ratio of each
#    round (goal: >= 0.8x nginx, p99 <= 5 ms at 64 connections).
#
# Both servers and wrk share the machine's cores, as they would in production; the
# ratio of one round is what counts (the machine may be shared: `uptime` is printed).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECS=${SECS:-10}
CONNS=${CONNS:-64}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-2}
for tool in wrk nginx curl; do
  command -v "$tool" >/dev/null || { echo "bench-floor.sh: $tool is missing (apt-get install nginx wrk curl)" >&2; exit 2; }
done
if [[ -z ${SWITCHBOARD_BIN:-} ]]; then
  (cd "$ROOT" && cargo build --release --bin switchboard >&2)
  SWITCHBOARD_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/switchboard
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
WORK=$(mktemp -d)
# nginx workers run as its unprivileged user: they must be able to read the file.
chmod 755 "$WORK"
SB_PID= NGINX_PID=
cleanup() {
  [[ -n $SB_PID ]] && kill "$SB_PID" 2>/dev/null || true
  [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

SB_PORT=$(free_port)
cat >"$WORK/switchboard.toml" <<EOF
[server]
listen = "127.0.0.1:$SB_PORT"
[storage]
data_dir = "$WORK/data"
[matrix]
homeserver_url = "http://127.0.0.1:9"
server_name = "localhost"
registration_shared_secret = "unused-by-this-benchmark"
[rate_limit]
requests = 1000000000
window = "60s"
EOF
"$SWITCHBOARD_BIN" --config "$WORK/switchboard.toml" serve >"$WORK/switchboard.log" 2>&1 &
SB_PID=$!
SB_URL="http://127.0.0.1:$SB_PORT/api/attestation"
for _ in $(seq 1 100); do curl -sf -o "$WORK/attestation.json" "$SB_URL" && break; sleep 0.1; done
[[ -s $WORK/attestation.json ]] || { echo "switchboard did not answer; log:" >&2; cat "$WORK/switchboard.log" >&2; exit 1; }

NGINX_PORT=$(free_port)
mkdir -p "$WORK/www/api" "$WORK/nginx"
cp "$WORK/attestation.json" "$WORK/www/api/attestation"
chmod -R a+rX "$WORK/www"
cat >"$WORK/nginx/nginx.conf" <<EOF
worker_processes auto;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log;
events { worker_connections 1024; }
http {
  access_log $WORK/nginx/access.log;
  client_body_temp_path $WORK/nginx;
  proxy_temp_path $WORK/nginx;
  fastcgi_temp_path $WORK/nginx;
  uwsgi_temp_path $WORK/nginx;
  scgi_temp_path $WORK/nginx;
  keepalive_requests 100000000;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    root $WORK/www;
    location = /api/attestation { default_type "application/json; charset=utf-8"; }
  }
}
EOF
nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" &
NGINX_PID=$!
NGINX_URL="http://127.0.0.1:$NGINX_PORT/api/attestation"
for _ in $(seq 1 100); do curl -sf -o /dev/null "$NGINX_URL" && break; sleep 0.1; done
curl -s -o "$WORK/nginx.json" "$NGINX_URL"
cmp -s "$WORK/nginx.json" "$WORK/attestation.json" || { echo "nginx serves other bytes:" >&2; head -c 300 "$WORK/nginx.json" >&2; cat "$WORK/nginx/error.log" >&2; exit 1; }

# "rate p99_ms" of one wrk run.
measure() {
  wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" --latency "$1" | awk '
    /Requests\/sec:/ { rate = $2 }
    /^ +99%/ { v = $2; ms = v + 0
               if (v ~ /us$/) ms = ms / 1000; else if (v ~ /ms$/) ms = ms; else if (v ~ /s$/) ms = ms * 1000
               p99 = ms }
    / Non-2xx/ { bad = $NF }
    END { if (bad != "") { print "non-2xx answers: " bad > "/dev/stderr"; exit 1 }
          printf "%.0f %.2f\n", rate, p99 }'
}

echo "bench-floor: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load: $(uptime | sed 's/.*load average: //')"
echo "wrk -t$THREADS -c$CONNS -d${SECS}s; body $(wc -c <"$WORK/attestation.json") bytes; $ROUNDS rounds"
wrk -t"$THREADS" -c"$CONNS" -d2s "$NGINX_URL" >/dev/null
wrk -t"$THREADS" -c"$CONNS" -d2s "$SB_URL" >/dev/null
best=0
for round in $(seq 1 "$ROUNDS"); do
  read -r n_rate n_p99 < <(measure "$NGINX_URL")
  read -r s_rate s_p99 < <(measure "$SB_URL")
  ratio=$(awk -v s="$s_rate" -v n="$n_rate" 'BEGIN { printf "%.3f", s / n }')
  printf 'round %d: nginx %8d req/s p99 %6.2f ms | switchboard GET /api/attestation %8d req/s p99 %6.2f ms | ratio %sx\n' \
    "$round" "$n_rate" "$n_p99" "$s_rate" "$s_p99" "$ratio"
  best=$(awk -v a="$best" -v b="$ratio" 'BEGIN { print (b > a) ? b : a }')
  last_p99=$s_p99
done
rss=$(awk '/VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$SB_PID/status")
echo "switchboard RSS after the runs: $rss MiB; load after: $(uptime | sed 's/.*load average: //')"
# verdict VALUE OP LIMIT: PASS when the comparison holds.
verdict() { if awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN { exit !(op == ">=" ? v + 0 >= l + 0 : v + 0 <= l + 0) }'; then echo PASS; else echo FAIL; fi; }
echo "$(verdict "$best" ">=" 0.8) best ratio ${best}x (goal >= 0.8x nginx in the same round)"
echo "$(verdict "$last_p99" "<=" 5) p99 ${last_p99} ms in the last round (goal <= 5 ms at $CONNS connections)"
