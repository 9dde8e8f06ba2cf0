#!/usr/bin/env python3
"""The junk-flood benchmark's driver (deploy/local/bench flood starts the stack, then runs this).

Issue 28's junk flood, measured end to end: one authenticated user (an app backend's HMAC, the
body's userId "mallory") posts --junk-count junk JWS to /v1/transactions from five loopback
addresses while the simulated Apple's customers are posted at --rate notifications/s. Webhook ->
committed entitlement latency comes from grant's own rows (notifications.ingested_at to
processed_at), as bench_e2e.py has it, for the same rate without the flood first and then with it.

`bench_flood.py run` prints one human line per phase on stderr and the figures as one JSON object on
stdout: the junk's answers by status and error code, how much of it reached the raw topic (records
verify consumed beyond the notifications) and the dead-letter topics (records dead-lettered by any
stage), notifications lost (posted and answered 200 but never committed), and the p50/p99 of each
phase. `bench_flood.py junk` is the attacker alone (its own process, so its threads do not slow the
paced sender), one JSON object on stdout.
"""
import argparse
import hashlib
import hmac
import json
import subprocess
import sys
import threading
import time
import urllib.parse
from base64 import urlsafe_b64encode
from http.client import HTTPConnection, HTTPException

from bench_e2e import (
    PacedSender,
    figures,
    log,
    player_phase,
    prepare,
    sql,
    wait_committed,
)
from run_report import metrics

ATTACKER_ADDRESSES = ["127.0.0.11", "127.0.0.12", "127.0.0.13", "127.0.0.14", "127.0.0.15"]


def b64url(data):
    return urlsafe_b64encode(data).rstrip(b"=").decode()


def junk_jws(i):
    """Syntactically a JWS; its chain is nobody's: no x5c, or three made-up certificates."""
    header = {"alg": "ES256"} if i % 2 else {"alg": "ES256", "x5c": [b64url(bytes([i % 251]) * 300)] * 3}
    payload = {"transactionId": str(2_000_000_000_000_000 + i), "junk": "x" * (i % 200)}
    return f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(payload).encode())}.{b64url(b'not a signature')}"


def junk(args):
    """--count junk uploads as one user, --concurrency in flight spread over the five addresses."""
    secret = open(args.secret_file, "rb").read().rstrip(b"\n")
    address = urllib.parse.urlsplit(args.url)
    lock, state = threading.Lock(), {"next": 0, "statuses": {}, "codes": {}, "retry_after_missing": 0, "errors": 0}

    def work(source):
        connection = HTTPConnection(address.hostname, address.port, timeout=30, source_address=(source, 0))
        while True:
            with lock:
                i = state["next"]
                if i >= args.count:
                    return
                state["next"] += 1
            body = json.dumps({"signedTransaction": junk_jws(i), "userId": args.user}).encode()
            stamp = str(int(time.time()))
            signature = hmac.new(secret, stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
            headers = {"Content-Type": "application/json", "X-Upload-Timestamp": stamp, "X-Upload-Signature": f"v1={signature}"}
            try:
                connection.request("POST", "/v1/transactions", body=body, headers=headers)
                response = connection.getresponse()
                text = response.read()
                status, retry_after = response.status, response.getheader("Retry-After")
            except (OSError, HTTPException):
                connection.close()
                connection = HTTPConnection(address.hostname, address.port, timeout=30, source_address=(source, 0))
                with lock:
                    state["errors"] += 1
                continue
            try:
                code = json.loads(text)["error"]["code"]
            except (ValueError, KeyError, TypeError):
                code = "-"
            with lock:
                state["statuses"][str(status)] = state["statuses"].get(str(status), 0) + 1
                state["codes"][code] = state["codes"].get(code, 0) + 1
                state["retry_after_missing"] += status == 429 and not retry_after

    started = time.monotonic()
    threads = [threading.Thread(target=work, args=(ATTACKER_ADDRESSES[n % len(ATTACKER_ADDRESSES)],)) for n in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - started
    print(json.dumps({"junk": args.count, "seconds": round(seconds, 1), "per_s": round(args.count / seconds, 1),
                      "addresses": ATTACKER_ADDRESSES, "statuses": state["statuses"], "codes": state["codes"],
                      "retry_after_missing": state["retry_after_missing"], "connection_errors": state["errors"]}))


def stage_counters(port):
    """A stage's counters summed by name (run_report's reader); no answer is an error, not zeros."""
    sums = metrics(port)
    if not sums:
        raise SystemExit(f"no metrics from 127.0.0.1:{port}")
    return sums


def pipeline_counts(args):
    """Raw records verify consumed, and records every stage dead-lettered, so far (a stage that
    dead-lettered nothing has no such series yet)."""
    verify = stage_counters(args.verify_port)
    dead = sum(stage_counters(port).get("pipeline_messages_dead_lettered_total", 0)
               for port in (args.verify_port, args.enrich_port, args.grant_port))
    return verify["pipeline_messages_consumed_total"], dead


def paced_phase(args, psql, name, first_index, seed, flood):
    """Prepared notifications at --rate; with `flood`, the attacker starts --flood-after s in and the
    sender goes on --flood-tail s after it ends."""
    seconds = args.seconds if not flood else args.flood_after + args.flood_max_seconds + args.flood_tail
    needed = int(args.rate * seconds)
    lines, _ = prepare(args, max(1, needed * 2 // 5), first_index, seed=seed, minimum_notifications=needed)
    lines = [line for line in lines if line.startswith("/v2/notifications ")]  # Apple's side only: uploads are the attacker's
    consumed_before, dead_before = pipeline_counts(args)
    since = sql(psql, "SELECT now()")[0][0]
    sender = PacedSender(args.webhook, lines, args.rate)
    sender.start()
    attack, window = None, None
    if flood:
        time.sleep(args.flood_after)
        flood_start = sql(psql, "SELECT now()")[0][0]
        attacker = subprocess.run([sys.executable, __file__, "junk", "--url", args.webhook, "--secret-file", args.secret_file,
                                   "--count", str(args.junk_count), "--concurrency", str(args.attacker_concurrency)],
                                  check=True, capture_output=True, text=True)
        attack = json.loads(attacker.stdout)
        flood_end = sql(psql, "SELECT now()")[0][0]
        window = f"ingested_at >= '{flood_start}' AND ingested_at <= '{flood_end}'"
        log(f"{name}: the attacker's {args.junk_count} junk uploads took {attack['seconds']} s: {attack['codes']}")
        if sender.is_alive():
            time.sleep(args.flood_tail)
    else:
        time.sleep(seconds)
    sender.stop()
    if sender.failures:
        raise SystemExit(f"{name}: ingest refused {len(sender.failures)} notifications, e.g. {sender.failures[:3]}")
    where = f"kind = 'notification' AND ingested_at >= '{since}'"
    committed = wait_committed(args, psql, name, where, sender.notifications)
    consumed_after, dead_after = pipeline_counts(args)
    result = figures(psql, name, where)
    result.update(rate_per_s=args.rate, posted=sender.notifications, late_sends=sender.late,
                  lost=sender.notifications - committed, raw_beyond_notifications=int(consumed_after - consumed_before) - sender.notifications,
                  dead_lettered=int(dead_after - dead_before))
    if flood:
        during = figures(psql, name + " (during the flood)", f"kind = 'notification' AND {window}")
        result.update(attack=attack, during_flood={k: during[k] for k in ("notifications", "p50_ms", "p99_ms", "max_ms")})
        if sender.next >= len(sender.lines):
            log(f"{name}: the sender ran out of notifications before the flood ended; raise --flood-max-seconds")
    log(f"{name}: {result['posted']} notifications posted at {args.rate}/s, {result['lost']} lost; webhook → committed "
        f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, max {result['max_ms']} ms"
        + (f"; during the flood p50 {result['during_flood']['p50_ms']} ms, p99 {result['during_flood']['p99_ms']} ms" if flood else "")
        + f"; raw records beyond the notifications {result['raw_beyond_notifications']}, dead-lettered {result['dead_lettered']}")
    return result


def run(args):
    psql = args.psql.split()
    player_phase(args, psql, "warm-up", 40, None, seed=20, first_index=0)
    quiet = paced_phase(args, psql, "without the flood", first_index=500_000, seed=21, flood=False)
    flooded = paced_phase(args, psql, "with the flood", first_index=600_000, seed=22, flood=True)
    print(json.dumps({"without_flood": quiet, "with_flood": flooded}))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--sim", required=True)
    r.add_argument("--webhook", required=True)
    r.add_argument("--verify-port", type=int, required=True, help="verify's probe server (its /metrics)")
    r.add_argument("--enrich-port", type=int, required=True)
    r.add_argument("--grant-port", type=int, required=True)
    r.add_argument("--psql", required=True)
    r.add_argument("--secret-file", required=True, help="ingest's INGEST_UPLOAD_HMAC_SECRET_FILE")
    r.add_argument("--rate", type=float, default=100, help="Apple's notifications per second")
    r.add_argument("--seconds", type=float, default=30, help="the phase without the flood")
    r.add_argument("--junk-count", type=int, default=20_000)
    r.add_argument("--attacker-concurrency", type=int, default=50, help="the attacker's uploads in flight")
    r.add_argument("--flood-after", type=float, default=5)
    r.add_argument("--flood-tail", type=float, default=5)
    r.add_argument("--flood-max-seconds", type=float, default=60, help="notifications are prepared for a flood this long")
    r.add_argument("--month", type=float, default=600)
    r.add_argument("--concurrency", type=int, default=64, help="the lifecycle player's (bench_e2e.py's warm-up)")
    r.add_argument("--timeout", type=float, default=900)
    j = sub.add_parser("junk")
    j.add_argument("--url", required=True)
    j.add_argument("--secret-file", required=True)
    j.add_argument("--count", type=int, default=20_000)
    j.add_argument("--concurrency", type=int, default=50)
    j.add_argument("--user", default="mallory")
    args = parser.parse_args()
    run(args) if args.command == "run" else junk(args)


if __name__ == "__main__":
    main()
