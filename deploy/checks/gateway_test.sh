#!/usr/bin/env bash
# The gateway for real: renders deploy/gateway/templates/gateway.conf.template as the nginx image's
# entrypoint does (envsubst of the GATEWAY_* variables), checks it with `nginx -t` (Debian's
# nginx), starts it on loopback with a throwaway self-signed certificate in front of a running
# ingest (the debug binary) and the local broker, and sends requests through TLS.
#   gateway_test.sh INGEST_BINARY    (KAFKA_BOOTSTRAP_SERVERS must name a running broker)
set -euo pipefail
ingest_bin="$1"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
: "${KAFKA_BOOTSTRAP_SERVERS:?KAFKA_BOOTSTRAP_SERVERS must name the running broker}"
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "  ok    $1"; }
fail() { failed=$((failed + 1)); echo "  FAIL  $1${2:+: $2}"; }
expect() { if [[ "$2" == "$3" ]]; then ok "$1"; else fail "$1" "got $2, expected $3"; fi; }

tmp="$(mktemp -d)"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_http() {  # URL SECONDS: until it answers 200
  local deadline=$((SECONDS + $2))
  until [[ "$(curl -s -o /dev/null -w '%{http_code}' "$1" 2>/dev/null)" == 200 ]]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=localhost" \
  -addext "subjectAltName=DNS:localhost" -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null

ingest_port="$(free_port)"
HTTP_HOST=127.0.0.1 HTTP_PORT="$ingest_port" LOG_LEVEL=warning "$ingest_bin" >"$tmp/ingest.log" 2>&1 &
ingest_pid=$!
pids+=("$ingest_pid")
if wait_http "http://127.0.0.1:$ingest_port/ready" 60; then ok "ingest ready on 127.0.0.1:$ingest_port"; else
  fail "ingest ready" "$(tail -5 "$tmp/ingest.log")"
fi

# start_gateway NAME RATE BURST: renders, tests and starts one nginx; prints its port.
start_gateway() {
  local dir="$tmp/$1" port
  port="$(free_port)"
  mkdir -p "$dir/conf.d"
  cp "$repo/deploy/gateway/nginx.conf" "$dir/nginx.conf"
  GATEWAY_LISTEN_PORT="127.0.0.1:$port" GATEWAY_TLS_CERT="$tmp/tls.crt" GATEWAY_TLS_KEY="$tmp/tls.key" \
    GATEWAY_UPSTREAM="127.0.0.1:$ingest_port" GATEWAY_RATE_LIMIT="$2" GATEWAY_RATE_BURST="$3" \
    envsubst "$(grep -o '\${GATEWAY_[A-Z_]*}' "$repo/deploy/gateway/templates/gateway.conf.template" | sort -u | tr '\n' ' ')" \
    <"$repo/deploy/gateway/templates/gateway.conf.template" >"$dir/conf.d/gateway.conf"
  local global="pid $dir/nginx.pid; error_log $dir/error.log; daemon off;"
  if grep -Eq '\$\{[A-Za-z_]+\}' "$dir/conf.d/gateway.conf"; then fail "$1: every \${...} of the template is rendered"; else ok "$1: every \${...} of the template is rendered"; fi
  if nginx -t -q -c "$dir/nginx.conf" -g "$global" 2>"$dir/t.log"; then ok "$1: nginx -t accepts the gateway configuration"; else
    fail "$1: nginx -t" "$(cat "$dir/t.log")"
  fi
  nginx -c "$dir/nginx.conf" -g "$global" >"$dir/access.log" 2>"$dir/stderr.log" &
  pids+=($!)
  echo "$!" >"$dir/master.pid"
  wait_tls "$port" || fail "$1: nginx listens on $port" "$(cat "$dir/error.log" "$dir/stderr.log" 2>/dev/null | tail -5)"
  echo "$port" >"$dir/port"
}
wait_tls() { local deadline=$((SECONDS + 10)); until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do ((SECONDS < deadline)) || return 1; sleep 0.1; done; }

start_gateway main 100r/s 200
port="$(cat "$tmp/main/port")"
url="https://localhost:$port"
req() {  # METHOD PATH [BODY_FILE] [CONTENT_TYPE]: prints the status code
  local args=(-sS -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' --cacert "$tmp/tls.crt"
    --resolve "localhost:$port:127.0.0.1" -X "$1" "$url$2")
  [[ -n "${3:-}" ]] && args+=(-H "Content-Type: ${4:-application/json}" --data-binary "@$3")
  curl "${args[@]}" || true
}

marker="$(openssl rand -hex 16)"
printf '{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.eyJtYXJrZXIiOiIke%s.c2lnbmF0dXJl"}' "$marker" >"$tmp/notification.json"
printf '{"signedTransaction":"eyJhbGciOiJFUzI1NiJ9.eyJtYXJrZXIiOiIke%s.c2lnbmF0dXJl","appAccountToken":"6f0c3a0e-1f7a-4c55-9b1c-2f4b8f6a1d2e"}' "$marker" >"$tmp/transaction.json"
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' 'a' >"$tmp/too-large.json"
printf 'not json' >"$tmp/invalid.json"

expect "POST /v2/notifications through TLS reaches ingest and is stored (200)" "$(req POST /v2/notifications "$tmp/notification.json")" 200
expect "POST /v1/transactions through TLS reaches ingest and is stored (200)" "$(req POST /v1/transactions "$tmp/transaction.json")" 200
expect "ingest's own answers pass through: invalid JSON gets 400" "$(req POST /v2/notifications "$tmp/invalid.json")" 400
expect "ingest's own answers pass through: text/plain gets 415" "$(req POST /v2/notifications "$tmp/notification.json" text/plain)" 415
expect "GET /v2/notifications is refused (405)" "$(req GET /v2/notifications)" 405
if grep -qi '^allow: POST' "$tmp/headers"; then ok "405 says Allow: POST"; else fail "405 says Allow: POST" "$(cat "$tmp/headers")"; fi
expect "PUT /v1/transactions is refused (405)" "$(req PUT /v1/transactions "$tmp/notification.json")" 405
expect "GET /health is not exposed (404)" "$(req GET /health)" 404
expect "GET /metrics is not exposed (404)" "$(req GET /metrics)" 404
expect "POST /v2/notifications/extra is not routed (404)" "$(req POST /v2/notifications/extra "$tmp/notification.json")" 404
expect "POST / is not routed (404)" "$(req POST / "$tmp/notification.json")" 404
expect "a body over 1 MiB is refused by the gateway (413)" "$(req POST /v2/notifications "$tmp/too-large.json")" 413
plain="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v2/notifications" || true)"
expect "plain HTTP on the TLS port is refused (400)" "$plain" 400

# The access log: one JSON object per request, no bodies, the over-limit body never sent upstream.
sleep 0.3
if python3 - "$tmp/main/access.log" "$marker" <<'PY'; then ok "access log: one JSON line per request, no bodies, 413 not proxied"; else fail "access log" "$(head -3 "$tmp/main/access.log")"; fi
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
entries = [json.loads(l) for l in lines]
assert len(entries) >= 12, len(entries)
assert sys.argv[2] not in open(sys.argv[1]).read(), "a body reached the access log"
assert all(e["request_id"] and e["method"] and e["path"] for e in entries)
stored = [e for e in entries if e["path"] == "/v2/notifications" and e["status"] == 200]
assert stored and stored[0]["upstream_status"] == "200", stored
too_large = [e for e in entries if e["status"] == 413]
assert too_large and too_large[0]["upstream_status"] in ("", "-"), too_large
PY

# The per-client rate limit, on a second gateway rendered from the same template with a low rate.
start_gateway limited 2r/s 2
lport="$(cat "$tmp/limited/port")"
limited_args=(-s -w '%{http_code}\n' --cacert "$tmp/tls.crt" --resolve "localhost:$lport:127.0.0.1"
  -H 'Content-Type: application/json' --data-binary "@$tmp/notification.json")
for _ in $(seq 1 10); do limited_args+=(-o /dev/null "https://localhost:$lport/v2/notifications"); done
codes="$(curl "${limited_args[@]}" || true)"
n429="$(grep -c '^429$' <<<"$codes" || true)"
first="$(head -1 <<<"$codes")"
if [[ "$first" == 200 && "$n429" -ge 5 ]]; then ok "rate limit: 10 quick POSTs at 2r/s burst 2 get 429 after the burst ($n429 of 10)"; else
  fail "rate limit" "codes: $(tr '\n' ' ' <<<"$codes")"
fi

# Stop: nginx quits gracefully, ingest drains and exits 0 on SIGTERM.
for g in main limited; do
  mpid="$(cat "$tmp/$g/master.pid")"
  kill -QUIT "$mpid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$mpid" 2>/dev/null; then fail "$g: nginx stopped"; else ok "$g: nginx stopped"; fi
done
kill -TERM "$ingest_pid"
set +e
wait "$ingest_pid"
status=$?
set -e
expect "ingest exits 0 after SIGTERM" "$status" 0

echo "deploy gateway: $passed passed, $failed failed"
[[ -n "${DEPLOY_CHECK_COUNTS:-}" ]] && echo "deploy-gateway $passed $failed" >>"$DEPLOY_CHECK_COUNTS"
((failed == 0))
