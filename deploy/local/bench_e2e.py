#!/usr/bin/env python3
"""The end-to-end benchmark's driver (deploy/local/bench e2e starts the stack, then runs this).

Plays simulated customers through the running pipeline with the simulated Apple's lifecycle player
(POST /sim/lifecycle) and measures, from grant's own rows in Postgres:
  - latency: for each notification, ingest's received-at (notifications.ingested_at) to grant's
    write (notifications.processed_at), at a paced rate and at half of it (p50, p99, max);
  - throughput: the same with the player unpaced: notifications per second from the first
    webhook delivery to the last commit, and the commit rate over the busiest stretch.
Prints one human line per phase and, last, one JSON object per phase on stdout.
"""
import argparse
import json
import subprocess
import sys
import time
import urllib.request


def http(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read()
        return json.loads(text) if text else None


def sql(psql, query):
    out = subprocess.run(psql + ["-At", "-F", "\t", "-c", query], check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.strip().splitlines() if line]


def log(text):
    print(f"[bench e2e] {text}", file=sys.stderr, flush=True)


def phase(args, psql, name, customers, rate, seed):
    since = sql(psql, "SELECT now()")[0][0]
    request = {"customers": customers, "webhook": args.webhook, "monthSeconds": args.month, "retries": True,
               "seed": seed, "concurrency": args.concurrency}
    if rate:
        request["stepsPerSecond"] = rate
    http("POST", args.sim + "/sim/lifecycle", request)
    where = f"kind = 'notification' AND ingested_at >= '{since}'"
    started = time.monotonic()
    report = None
    while True:
        status = http("GET", args.sim + "/sim/lifecycle")
        committed = int(sql(psql, f"SELECT count(*) FROM notifications WHERE {where}")[0][0])
        if status["state"] == "failed":
            raise SystemExit(f"the lifecycle run failed: {status.get('error')}")
        if status["state"] == "done":
            report = status["report"]
            if committed >= report["delivered"]:
                break
        log(f"{name}: {int(time.monotonic() - started)} s, sent {status['state']}, committed {committed}")
        if time.monotonic() - started > args.timeout:
            raise SystemExit(f"{name}: only {committed} notifications committed after {args.timeout} s")
        time.sleep(2)
    count, first_in, last_in, last_out, p50, p99, worst = sql(psql, f"""
        SELECT count(*), extract(epoch FROM min(ingested_at)), extract(epoch FROM max(ingested_at)),
               extract(epoch FROM max(processed_at)),
               percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - ingested_at)),
               percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM processed_at - ingested_at)),
               max(extract(epoch FROM processed_at - ingested_at))
        FROM notifications WHERE {where}""")[0]
    count, first_in, last_in, last_out = int(count), float(first_in), float(last_in), float(last_out)
    # The commit rate over the busiest 10 s (or the whole run when shorter).
    per_second = [int(c) for (c,) in sql(psql, f"""
        SELECT count(*) FROM notifications WHERE {where}
        GROUP BY date_trunc('second', processed_at) ORDER BY date_trunc('second', processed_at)""")]
    window = min(10, len(per_second))
    busiest = max(sum(per_second[i:i + window]) for i in range(len(per_second) - window + 1)) / window if window else 0
    result = {
        "phase": name, "customers": customers, "paced_steps_per_s": rate, "notifications": count,
        "delivered": report["delivered"], "offered_per_s": round(count / max(last_in - first_in, 1e-3), 1),
        "end_to_end_per_s": round(count / max(last_out - first_in, 1e-3), 1), "busiest_10s_per_s": round(busiest, 1),
        "p50_ms": round(float(p50) * 1000, 1), "p99_ms": round(float(p99) * 1000, 1), "max_ms": round(float(worst) * 1000, 1),
        "seconds": round(last_out - first_in, 1),
    }
    log(f"{name}: {count} notifications offered at {result['offered_per_s']}/s, through all four stages at "
        f"{result['end_to_end_per_s']}/s (busiest 10 s: {result['busiest_10s_per_s']}/s); webhook → committed "
        f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, max {result['max_ms']} ms")
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sim", required=True)
    parser.add_argument("--webhook", required=True)
    parser.add_argument("--psql", required=True)
    parser.add_argument("--month", type=float, default=600)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-customers", type=int, default=400)
    parser.add_argument("--latency-rate", type=float, default=200)
    parser.add_argument("--throughput-customers", type=int, default=2500)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    psql = args.psql.split()
    # Warm-up, not reported: consumer groups joined, connections and caches warm in every stage.
    phase(args, psql, "warm-up", 40, None, seed=10)
    results = [
        phase(args, psql, "paced", args.latency_customers, args.latency_rate, seed=11),
        # Half the rate: where the latency stands when the two cores are not saturated.
        phase(args, psql, "paced at half the rate", args.latency_customers, args.latency_rate / 2, seed=13),
        phase(args, psql, "unpaced", args.throughput_customers, None, seed=12),
    ]
    for result in results:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
