#!/usr/bin/env bash
# The gateway for real: renders deploy/gateway/templates/gateway.conf.template as the nginx image's
# entrypoint does (envsubst of the GATEWAY_* variables, then deploy/gateway/entrypoint.d/*.sh for the
# address lists), checks it with `nginx -t` (Debian's nginx), starts it on loopback with a throwaway
# self-signed certificate in front of a running ingest (the debug binary) and the local broker, and
# sends requests through TLS: the routes, limits and logs; /v2/notifications only from the
# allow-list (Apple's 17.0.0.0/8 by default), the client address believed only from trusted
# proxies, plain HTTP refused. Gateways in front of a small recording upstream show which
# X-Forwarded-For reaches ingest.
#   gateway_test.sh INGEST_BINARY    (KAFKA_BOOTSTRAP_SERVERS names a running broker: the local stack's by default)
set -euo pipefail
ingest_bin="$1"
# shellcheck source=../local/lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../local" && pwd)/lib.sh"
passed=0 failed=0  # lib.sh's named checks: ok, fail, expect, finish_checks

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

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=localhost" \
  -addext "subjectAltName=DNS:localhost" -keyout "$tmp/tls.key" -out "$tmp/tls.crt" 2>/dev/null

# A root and an intermediate it issued: ingest trusts the root (APPSTORE_TRUSTED_ROOTS), so an
# upload whose x5c carries the intermediate passes its chain pre-check and is stored (verify, not
# run here, would check the signature).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=Gateway Test Root" \
  -keyout "$tmp/root.key" -out "$tmp/root.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=Gateway Test Intermediate" \
  -keyout "$tmp/intermediate.key" -out "$tmp/intermediate.csr" 2>/dev/null
openssl x509 -req -days 1 -in "$tmp/intermediate.csr" -CA "$tmp/root.pem" -CAkey "$tmp/root.key" -CAcreateserial \
  -out "$tmp/intermediate.pem" 2>/dev/null
der_b64() { openssl x509 -in "$1" -outform DER | base64 -w0; }
chain_header="$(printf '{"alg":"ES256","x5c":["%s","%s","%s"]}' "$(der_b64 "$tmp/intermediate.pem")" \
  "$(der_b64 "$tmp/intermediate.pem")" "$(der_b64 "$tmp/root.pem")" | base64 -w0 | tr '+/' '-_' | tr -d '=')"

ingest_port="$(free_port)"
# Uploads open (INGEST_UPLOAD_AUTH=none), which ingest allows only for Sandbox-only apps.
HTTP_HOST=127.0.0.1 HTTP_PORT="$ingest_port" LOG_LEVEL=warning INGEST_UPLOAD_AUTH=none \
  APPSTORE_APPS=com.example.gateway::Sandbox APPSTORE_TRUSTED_ROOTS="$tmp/root.pem" "$ingest_bin" >"$tmp/ingest.log" 2>&1 &
ingest_pid=$!
pids+=("$ingest_pid")
if wait_http "http://127.0.0.1:$ingest_port/ready" 60 0.2; then ok "ingest ready on 127.0.0.1:$ingest_port"; else
  fail "ingest ready" "$(tail -5 "$tmp/ingest.log")"
fi

# A stand-in for ingest that answers 200 and records the X-Forwarded-For of every request.
recorder_port="$(free_port)"
python3 - "$recorder_port" "$tmp/recorded.jsonl" <<'PY' >"$tmp/recorder.log" 2>&1 &
import http.server, json, sys
class Recorder(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps({"path": self.path, "x_forwarded_for": self.headers.get_all("X-Forwarded-For")}) + "\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Recorder).serve_forever()
PY
pids+=($!)

template="$repo_root/deploy/gateway/templates/gateway.conf.template"
lists_script="$repo_root/deploy/gateway/entrypoint.d/25-gateway-address-lists.sh"

# render_gateway DIR PORT UPSTREAM RATE BURST [VAR=VALUE ...]: what the image does before nginx:
# the template through envsubst, then the address lists script, with the given settings
# (GATEWAY_NOTIFICATION_ALLOW and GATEWAY_TRUSTED_PROXIES unset unless given: their defaults).
render_gateway() {
  local dir="$1" port="$2" upstream="$3" rate="$4" burst="$5"
  shift 5
  mkdir -p "$dir/conf.d"
  cp "$repo_root/deploy/gateway/nginx.conf" "$dir/nginx.conf"
  local settings=(GATEWAY_LISTEN_PORT="127.0.0.1:$port" GATEWAY_TLS_CERT="$tmp/tls.crt" GATEWAY_TLS_KEY="$tmp/tls.key"
    GATEWAY_UPSTREAM="$upstream" GATEWAY_RATE_LIMIT="$rate" GATEWAY_RATE_BURST="$burst" GATEWAY_CONN_LIMIT=32
    NGINX_ENVSUBST_OUTPUT_DIR="$dir/conf.d" "$@")
  # shellcheck disable=SC2016,SC2094  # a literal ${GATEWAY_…} pattern; the template is only read
  env -u GATEWAY_NOTIFICATION_ALLOW -u GATEWAY_TRUSTED_PROXIES "${settings[@]}" \
    envsubst "$(grep -o '\${GATEWAY_[A-Z_]*}' "$template" | sort -u | tr '\n' ' ')" <"$template" >"$dir/conf.d/gateway.conf"
  env -u GATEWAY_NOTIFICATION_ALLOW -u GATEWAY_TRUSTED_PROXIES "${settings[@]}" "$lists_script" >"$dir/lists.log" 2>&1
}

# start_gateway NAME UPSTREAM RATE BURST [VAR=VALUE ...]: renders, tests and starts one nginx on
# loopback; its port is in $tmp/NAME/port.
start_gateway() {
  local name="$1" dir="$tmp/$1" port
  port="$(free_port)"
  if render_gateway "$dir" "$port" "${@:2}"; then ok "$name: address lists rendered: $(tail -1 "$dir/lists.log")"; else
    fail "$name: the address lists render" "$(cat "$dir/lists.log")"
  fi
  local global="pid $dir/nginx.pid; error_log $dir/error.log; daemon off;"
  if grep -Eq '\$\{[A-Za-z_]+\}' "$dir/conf.d/gateway.conf"; then fail "$name: every \${...} of the template is rendered"; else ok "$name: every \${...} of the template is rendered"; fi
  if nginx -t -q -c "$dir/nginx.conf" -g "$global" 2>"$dir/t.log"; then ok "$name: nginx -t accepts the gateway configuration"; else
    fail "$name: nginx -t" "$(cat "$dir/t.log")"
  fi
  nginx -c "$dir/nginx.conf" -g "$global" >"$dir/access.log" 2>"$dir/stderr.log" &
  pids+=($!)
  echo "$!" >"$dir/master.pid"
  wait_for_port 127.0.0.1 "$port" 10 0.1 || fail "$name: nginx listens on $port" "$(cat "$dir/error.log" "$dir/stderr.log" 2>/dev/null | tail -5)"
  echo "$port" >"$dir/port"
}

# req GATEWAY METHOD PATH [BODY_FILE] [CONTENT_TYPE] [HEADER]: prints the status code; the body
# and headers of the answer are in $tmp/body and $tmp/headers.
req() {
  local port
  port="$(cat "$tmp/$1/port")"
  local args=(-sS -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' --cacert "$tmp/tls.crt"
    --resolve "localhost:$port:127.0.0.1" -X "$2" "https://localhost:$port$3")
  [[ -n "${4:-}" ]] && args+=(-H "Content-Type: ${5:-application/json}" --data-binary "@$4")
  [[ -n "${6:-}" ]] && args+=(-H "$6")
  curl "${args[@]}" || true
}
# error_code: the error code of the JSON body of the last answer, and its Content-Type.
error_code() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["error"]["code"])' "$tmp/body" 2>/dev/null || echo "not JSON: $(head -c 80 "$tmp/body")"
  grep -i '^content-type:' "$tmp/headers" | tr -d '\r' | cut -d' ' -f2
}
# ingest_notifications: how many requests ingest has answered on /v2/notifications (its metrics).
ingest_notifications() {
  curl -fsS "http://127.0.0.1:$ingest_port/metrics" | awk 'index($0, "hb_requests{") == 1 && index($0, "http_route=\"/v2/notifications\"") { s += $NF } END { print s + 0 }'
}
# recorded_xff: the X-Forwarded-For the recording upstream got with its last request.
recorded_xff() { tail -1 "$tmp/recorded.jsonl" 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["x_forwarded_for"])' 2>/dev/null || echo none; }
# last_log GATEWAY: "client peer status upstream_status" of its access log's last line.
last_log() {
  sleep 0.1
  tail -1 "$tmp/$1/access.log" | python3 -c 'import json, sys; e = json.load(sys.stdin); print(e["client"], e["peer"], e["status"], e["upstream_status"] or "-")' 2>/dev/null || echo none
}

marker="$(openssl rand -hex 16)"
printf '{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.eyJtYXJrZXIiOiIke%s.c2lnbmF0dXJl"}' "$marker" >"$tmp/notification.json"
printf '{"signedTransaction":"%s.eyJtYXJrZXIiOiIke%s.c2lnbmF0dXJl","appAccountToken":"6f0c3a0e-1f7a-4c55-9b1c-2f4b8f6a1d2e"}' "$chain_header" "$marker" >"$tmp/transaction.json"
head -c $((128 * 1024 + 1)) /dev/zero | tr '\0' 'a' >"$tmp/too-large.json"
printf 'not json' >"$tmp/invalid.json"

# The address lists script refuses what would fail open, one line per bad value, and writes nothing.
bad_dir="$tmp/bad-lists"
for setting in "GATEWAY_NOTIFICATION_ALLOW=17.0.0.0/33" "GATEWAY_NOTIFICATION_ALLOW=17.0.0.0/8,apple.com" "GATEWAY_NOTIFICATION_ALLOW=" \
               "GATEWAY_TRUSTED_PROXIES=300.1.2.3" "GATEWAY_TRUSTED_PROXIES=0.0.0.0/0" "GATEWAY_TRUSTED_PROXIES=10.0.0.0/8 ::/0"; do
  rm -rf "$bad_dir"
  if env -u GATEWAY_NOTIFICATION_ALLOW -u GATEWAY_TRUSTED_PROXIES NGINX_ENVSUBST_OUTPUT_DIR="$bad_dir" "$setting" "$lists_script" >"$tmp/bad.log" 2>&1; then
    fail "the address lists refuse $setting" "it exited 0"
  elif [[ "$(grep -c "^gateway: ${setting%%=*}" "$tmp/bad.log")" == 1 && -z "$(ls -A "$bad_dir" 2>/dev/null)" ]]; then
    ok "the address lists refuse $setting: $(cat "$tmp/bad.log")"
  else
    fail "the address lists refuse $setting with one line and no files" "$(cat "$tmp/bad.log"; ls "$bad_dir" 2>/dev/null)"
  fi
done

ingest="127.0.0.1:$ingest_port"
recorder="127.0.0.1:$recorder_port"
echo "gateway open to every address (as the demo's), in front of ingest:"
start_gateway open "$ingest" 100r/s 200 "GATEWAY_NOTIFICATION_ALLOW=0.0.0.0/0 ::/0"
expect "POST /v2/notifications through TLS reaches ingest and is stored (200)" "$(req open POST /v2/notifications "$tmp/notification.json")" 200
expect "POST /v1/transactions through TLS reaches ingest and is stored (200)" "$(req open POST /v1/transactions "$tmp/transaction.json")" 200
expect "ingest's own answers pass through: invalid JSON gets 400" "$(req open POST /v2/notifications "$tmp/invalid.json")" 400
expect "ingest's own answers pass through: text/plain gets 415" "$(req open POST /v2/notifications "$tmp/notification.json" text/plain)" 415
expect "GET /v2/notifications is refused (405)" "$(req open GET /v2/notifications)" 405
if grep -qi '^allow: POST' "$tmp/headers"; then ok "405 says Allow: POST"; else fail "405 says Allow: POST" "$(cat "$tmp/headers")"; fi
expect "PUT /v1/transactions is refused (405)" "$(req open PUT /v1/transactions "$tmp/notification.json")" 405
expect "POST /v1/customer is refused (405: the gateway routes only GET there)" "$(req open POST /v1/customer "$tmp/notification.json")" 405
expect "POST /v1/receipts reaches ingest, which finds no receipt in the body (400)" "$(req open POST /v1/receipts "$tmp/notification.json")" 400
expect "GET /v1/receipts is refused (405)" "$(req open GET /v1/receipts)" 405
expect "GET /v1/offers/signature is refused (405)" "$(req open GET /v1/offers/signature)" 405
expect "GET /health is not exposed (404)" "$(req open GET /health)" 404
expect "GET /metrics is not exposed (404)" "$(req open GET /metrics)" 404
expect "POST /v2/notifications/extra is not routed (404)" "$(req open POST /v2/notifications/extra "$tmp/notification.json")" 404
expect "POST / is not routed (404)" "$(req open POST / "$tmp/notification.json")" 404
expect "a body over 128 KiB is refused by the gateway (413)" "$(req open POST /v2/notifications "$tmp/too-large.json")" 413

# Plain HTTP to the TLS port: a JSON 400, never a redirect, and ingest never sees it.
open_port="$(cat "$tmp/open/port")"
before="$(ingest_notifications)"
plain="$(curl -s -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
  --data-binary "@$tmp/notification.json" "http://127.0.0.1:$open_port/v2/notifications" || true)"
expect "plain HTTP POST on the TLS port is refused (400)" "$plain" 400
expect "plain HTTP gets a JSON error gateway.plain_http, no redirect" "$(error_code | tr '\n' ' ')" "gateway.plain_http application/json "
expect "plain HTTP never reaches ingest (its /v2/notifications count is unchanged)" "$(ingest_notifications)" "$before"
expect "plain HTTP GET on the TLS port is refused (400)" "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$open_port/v2/notifications" || true)" 400

# The access log: one JSON object per request, no bodies, the over-limit body never sent upstream.
sleep 0.3
if python3 - "$tmp/open/access.log" "$marker" <<'PY'; then ok "access log: one JSON line per request, no bodies, 413 and plain HTTP not proxied"; else fail "access log" "$(head -3 "$tmp/open/access.log")"; fi
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
entries = [json.loads(l) for l in lines]
assert len(entries) >= 13, len(entries)
assert sys.argv[2] not in open(sys.argv[1]).read(), "a body reached the access log"
assert all(e["request_id"] and e["method"] and e["path"] and e["client"] and e["peer"] for e in entries)
stored = [e for e in entries if e["path"] == "/v2/notifications" and e["status"] == 200]
assert stored and stored[0]["upstream_status"] == "200", stored
refused = [e for e in entries if e["status"] in (413, 400) and e["upstream_status"] in ("", "-")]
assert {e["status"] for e in refused} == {413, 400}, refused
PY

echo "gateway with the default allow-list (Apple's 17.0.0.0/8) and no trusted proxy, in front of ingest:"
start_gateway apple "$ingest" 100r/s 200
if grep -qx 'allow 17.0.0.0/8;' "$tmp/apple/conf.d/gateway-notification-allow.inc" && ! grep -q '^set_real_ip_from' "$tmp/apple/conf.d/gateway-trusted-proxies.inc"; then
  ok "defaults: allow 17.0.0.0/8 only, no trusted proxy"; else fail "defaults" "$(cat "$tmp/apple/conf.d/"*.inc)"; fi
before="$(ingest_notifications)"
expect "POST /v2/notifications from 127.0.0.1 is refused (403)" "$(req apple POST /v2/notifications "$tmp/notification.json")" 403
expect "the 403 is a JSON error gateway.forbidden_source" "$(error_code | tr '\n' ' ')" "gateway.forbidden_source application/json "
expect "the 403 never reached ingest: nothing stored (its /v2/notifications count is unchanged)" "$(ingest_notifications)" "$before"
expect "access log: client 127.0.0.1, 403, not proxied" "$(last_log apple)" "127.0.0.1 127.0.0.1 403 -"
expect "X-Forwarded-For: 17.1.2.3 from an untrusted peer is ignored (403: no spoofing)" \
  "$(req apple POST /v2/notifications "$tmp/notification.json" "" "X-Forwarded-For: 17.1.2.3")" 403
expect "X-Real-IP: 17.1.2.3 is ignored too (403)" "$(req apple POST /v2/notifications "$tmp/notification.json" "" "X-Real-IP: 17.1.2.3")" 403
expect "access log: the spoofed address is not the client" "$(last_log apple)" "127.0.0.1 127.0.0.1 403 -"
expect "still nothing stored" "$(ingest_notifications)" "$before"
expect "POST /v1/transactions is not address-restricted: it reaches ingest (200)" "$(req apple POST /v1/transactions "$tmp/transaction.json")" 200
expect "GET /v2/notifications from outside the allow-list still says 405" "$(req apple GET /v2/notifications)" 405
apple_port="$(cat "$tmp/apple/port")"
expect "plain HTTP on the TLS port is refused (400)" "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{}' "http://127.0.0.1:$apple_port/v2/notifications" || true)" 400

echo "gateway with the default allow-list behind a trusted proxy (GATEWAY_TRUSTED_PROXIES=127.0.0.1/32), in front of ingest:"
start_gateway proxied "$ingest" 100r/s 200 "GATEWAY_TRUSTED_PROXIES=127.0.0.1/32"
before="$(ingest_notifications)"
expect "POST /v2/notifications for client 17.1.2.3 through the trusted proxy is stored (200)" \
  "$(req proxied POST /v2/notifications "$tmp/notification.json" "" "X-Forwarded-For: 17.1.2.3")" 200
expect "ingest answered it" "$(ingest_notifications)" "$((before + 1))"
expect "access log: client 17.1.2.3 through peer 127.0.0.1, proxied" "$(last_log proxied)" "17.1.2.3 127.0.0.1 200 200"
expect "through two trusted proxies (X-Forwarded-For: 17.1.2.3, 127.0.0.1) the client is 17.1.2.3 (200)" \
  "$(req proxied POST /v2/notifications "$tmp/notification.json" "" "X-Forwarded-For: 17.1.2.3, 127.0.0.1")" 200
expect "access log: client 17.1.2.3 behind both proxies" "$(last_log proxied)" "17.1.2.3 127.0.0.1 200 200"
before="$(ingest_notifications)"
expect "client 8.8.8.8 through the trusted proxy is refused (403)" \
  "$(req proxied POST /v2/notifications "$tmp/notification.json" "" "X-Forwarded-For: 8.8.8.8")" 403
expect "a client that put 17.1.2.3 before its own address 8.8.8.8 is refused (403)" \
  "$(req proxied POST /v2/notifications "$tmp/notification.json" "" "X-Forwarded-For: 17.1.2.3, 8.8.8.8")" 403
expect "access log: the client is the address the proxy saw (8.8.8.8)" "$(last_log proxied)" "8.8.8.8 127.0.0.1 403 -"
expect "the trusted proxy itself without X-Forwarded-For is refused (403)" "$(req proxied POST /v2/notifications "$tmp/notification.json")" 403
expect "none of the three reached ingest" "$(ingest_notifications)" "$before"

echo "the X-Forwarded-For that reaches ingest (gateways in front of a recording upstream):"
start_gateway recorded-direct "$recorder" 100r/s 200 "GATEWAY_NOTIFICATION_ALLOW=0.0.0.0/0 ::/0"
start_gateway recorded-proxied "$recorder" 100r/s 200 "GATEWAY_TRUSTED_PROXIES=127.0.0.1/32"
expect "direct: a client's own X-Forwarded-For (17.1.2.3) is replaced by its address" \
  "$(req recorded-direct POST /v2/notifications "$tmp/notification.json" "" "X-Forwarded-For: 17.1.2.3" >/dev/null; recorded_xff)" "['127.0.0.1']"
expect "direct: without X-Forwarded-For ingest gets the peer's address" \
  "$(req recorded-direct POST /v1/transactions "$tmp/transaction.json" >/dev/null; recorded_xff)" "['127.0.0.1']"
expect "through the trusted proxy: ingest gets only the real client (17.1.2.3), not what the client claimed before it" \
  "$(req recorded-proxied POST /v2/notifications "$tmp/notification.json" "" "X-Forwarded-For: 203.0.113.7, 17.1.2.3" >/dev/null; recorded_xff)" "['17.1.2.3']"
expect "through the trusted proxy: an upload from 198.51.100.4 passes with that address" \
  "$(req recorded-proxied POST /v1/transactions "$tmp/transaction.json" "" "X-Forwarded-For: 198.51.100.4" >/dev/null; recorded_xff)" "['198.51.100.4']"

# The per-client limits, on a gateway rendered from the same template with a low rate and one
# request in flight per client: they bind the app's routes and never Apple's.
start_gateway limited "$ingest" 2r/s 2 "GATEWAY_NOTIFICATION_ALLOW=127.0.0.0/8" GATEWAY_CONN_LIMIT=1
lport="$(cat "$tmp/limited/port")"
quick_posts() {  # PATH BODY_FILE: ten POSTs on one connection, one status code per line
  local args=(-s -w '%{http_code}\n' --cacert "$tmp/tls.crt" --resolve "localhost:$lport:127.0.0.1"
    -H 'Content-Type: application/json' --data-binary "@$2")
  for _ in $(seq 1 10); do args+=(-o /dev/null "https://localhost:$lport$1"); done
  curl "${args[@]}" || true
}
codes="$(quick_posts /v1/transactions "$tmp/transaction.json")"
n429="$(grep -c '^429$' <<<"$codes" || true)"
first="$(head -1 <<<"$codes")"
if [[ "$first" != 429 && "$n429" -ge 5 ]]; then ok "rate limit: 10 quick uploads at 2r/s burst 2 get 429 after the burst ($n429 of 10)"; else
  fail "rate limit on uploads" "codes: $(tr '\n' ' ' <<<"$codes")"
fi
codes="$(quick_posts /v2/notifications "$tmp/notification.json")"
expect "Apple's route has no rate limit: 10 quick notifications from an allowed address all reach ingest" \
  "$(sort -u <<<"$codes" | tr '\n' ' ')" "200 "
# One upload whose body trickles in (1 KiB/s, no gap long enough for the body timeout) holds the
# client's only slot: a second upload meanwhile is 429, a notification is not limited.
sleep 1.1  # the rate limit above forgets the uploads
head -c 20000 /dev/zero | tr '\0' 'a' >"$tmp/slow-body"
curl -s -o /dev/null --cacert "$tmp/tls.crt" --resolve "localhost:$lport:127.0.0.1" --limit-rate 1k \
  -H 'Content-Type: application/json' --data-binary "@$tmp/slow-body" "https://localhost:$lport/v1/transactions" &
slow_pid=$!
pids+=("$slow_pid")
sleep 2
expect "connection limit: a second upload while the client's one slot is taken is 429" \
  "$(req limited POST /v1/transactions "$tmp/transaction.json")" 429
expect "connection limit: Apple's route is not limited by it" "$(req limited POST /v2/notifications "$tmp/notification.json")" 200
kill "$slow_pid" 2>/dev/null || true

# Issue 28's gateway test: 2,000 slow uploads from two addresses (gateway_flood.py) while the
# allow-listed client bursts 400 notifications in a second, on a gateway with compose's limits.
start_gateway flooded "$ingest" 100r/s 200 "GATEWAY_NOTIFICATION_ALLOW=127.0.0.1/32" GATEWAY_CONN_LIMIT=32
# The same burst alone first: what the machine itself takes for it, the yardstick for the p99 below.
echo "  burst alone: $(python3 "$repo_root/deploy/checks/gateway_flood.py" "$(cat "$tmp/flooded/port")" "$tmp/tls.crt" \
  "$tmp/notification.json" 0 400 2>&1)"
before="$(ingest_notifications)"
if python3 "$repo_root/deploy/checks/gateway_flood.py" "$(cat "$tmp/flooded/port")" "$tmp/tls.crt" "$tmp/notification.json" \
  2000 400 >"$tmp/flood.json" 2>"$tmp/flood.log"; then
  echo "  flood: $(cat "$tmp/flood.json")"
  python3 - "$tmp/flood.json" "$tmp/flood.checks" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as out:
    out.write(f"{r['statuses']}\n")
PY
  expect "slow connections: every one of the 400 notifications got 200 (none 429, none refused)" "$(sed -n 1p "$tmp/flood.checks")" "{'200': 400}"
  expect "slow connections: ingest answered all 400" "$(($(ingest_notifications) - before))" 400
else
  fail "the slow-connection flood ran" "$(tail -5 "$tmp/flood.log")"
fi
echo "  the flooded gateway's error log, by message: $(sed -E 's/^[0-9\/: ]+\[([a-z]+)\] [0-9#]+: (\*[0-9]+ )?//; s/, client:.*//; s/[0-9]+/N/g' "$tmp/flooded/error.log" | sort | uniq -c | sort -rn | head -5 | tr '\n' ';')"
if grep -q "worker_connections are not enough" "$tmp/flooded/error.log" 2>/dev/null; then
  fail "slow connections: nginx never ran out of worker connections" "$(grep -m1 "worker_connections" "$tmp/flooded/error.log")"
else ok "slow connections: nginx never ran out of worker connections"; fi

# Stop: nginx quits gracefully, ingest drains and exits 0 on SIGTERM.
for g in open apple proxied recorded-direct recorded-proxied limited flooded; do
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

finish_checks "deploy gateway"
