#!/usr/bin/env python3
"""Follows a lifecycle run of deploy/local/run or deploy/containers/run: one progress line while
events flow through the stages, then each customer's entitlements from Postgres next to the
simulator's ground truth, and how many acknowledged deliveries never reached Postgres (lost).
With --ports the progress comes from each stage's metrics; without (containers, whose stages may
be scaled and restarted), from the events grant recorded. Exits 1 when a customer differs, an
event is lost or the pipeline does not drain in time."""
import argparse, json, re, shlex, subprocess, sys, time, urllib.request
from datetime import datetime, timezone

def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)

def metrics(port):
    """Sums of the counters we show, from a stage's Prometheus text."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    sums = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([0-9.eE+-]+)', line)
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        if name == "hb_requests" and 'http_response_status_code="200"' in labels:
            name = "ingest_ok"
        sums[name] = sums.get(name, 0) + value
    return sums

def millis_to_text(ms):
    if ms is None:
        return "forever"
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%m-%d %H:%M:%S")

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", required=True)
    ap.add_argument("--ports", help="ingest,verify,enrich,grant metrics ports on 127.0.0.1")
    ap.add_argument("--psql", required=True)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--leeway", type=float, default=0, help="grant's GRANT_EXPIRY_LEEWAY_S")
    args = ap.parse_args()
    psql = shlex.split(args.psql)

    def query(sql):
        return subprocess.run(psql + ["-At", "-F", "\t", "-c", sql], check=True, capture_output=True, text=True).stdout

    def logged():
        """Distinct events grant recorded (notifications by UUID, uploads by transaction)."""
        try:
            return int(query("select count(*) from notifications").strip() or 0)
        except subprocess.CalledProcessError:
            return 0

    deadline = time.time() + args.timeout
    stable, last = 0, None
    while True:
        run = get_json(args.sim + "/sim/lifecycle")
        rep = run.get("report") or {}
        if not args.ports:
            n = logged()
            expected = (rep.get("delivered") or 0) + (rep.get("uploads") or 0)
            print(f"\rsim {run['state']:>7} | delivered {rep.get('delivered', 0) or 0:>5} | uploads {rep.get('uploads', 0) or 0:>4} | recorded by grant {n:>5}", end="", flush=True)
            if run["state"] == "failed":
                print(f"\nthe lifecycle run failed: {run.get('error')}")
                return 1
            if run["state"] == "done" and n >= expected:
                break
            if time.time() > deadline:
                print(f"\nthe pipeline did not drain within {args.timeout:.0f} s")
                break
            time.sleep(1)
            continue
        ingest, verify, enrich, grant = args.ports.split(",")
        i, v, e, g = metrics(ingest), metrics(verify), metrics(enrich), metrics(grant)
        ok = int(i.get("ingest_ok", 0))
        dlq = [int(m.get("pipeline_messages_dead_lettered_total", 0)) for m in (v, e, g)]
        done = int(g.get("pipeline_messages_processed_total", 0)) + sum(dlq)
        line = (f"sim {run['state']:>7} | ingest 200: {ok:>5} | verify {int(v.get('pipeline_messages_processed_total', 0)):>5}"
                f" | enrich {int(e.get('pipeline_messages_processed_total', 0)):>5} | grant {int(g.get('pipeline_messages_processed_total', 0)):>5}"
                f" | dead letters {dlq[0]}/{dlq[1]}/{dlq[2]} | retries {int(sum(m.get('pipeline_retries_total', 0) for m in (v, e, g)))}")
        print("\r" + line, end="", flush=True)
        if run["state"] == "failed":
            print(f"\nthe lifecycle run failed: {run.get('error')}")
            return 1
        state = (run["state"], ok, done)
        if run["state"] == "done" and ok > 0 and done >= ok:
            stable = stable + 1 if state == last else 0
            if stable >= 2:
                break
        last = state
        if time.time() > deadline:
            print(f"\nthe pipeline did not drain within {args.timeout:.0f} s")
            return 1
        time.sleep(1)
    print()
    print(f"notifications sent {rep.get('notifications')}, delivered {rep.get('delivered')}, duplicates {rep.get('duplicates')}, "
          f"retried {rep.get('retries')}, app uploads {rep.get('uploads')}")

    sql = ("select customer_id, entitlement_key, coalesce((extract(epoch from active_until) * 1000)::bigint::text, '') "
             "from current_entitlements where environment = 'Sandbox' "
             "union all select customer_id, 'units:' || entitlement_key, quantity::text from consumable_balances where environment = 'Sandbox'")
    out = query(sql)
    db = {}
    for row in out.splitlines():
        customer, key, value = row.split("\t")
        db.setdefault(customer.lower(), {})[key] = value

    catalogue = get_json(args.sim + "/sim/lifecycle/products")["products"]
    units_key = {pid: entry["entitlements"][0] for pid, entry in catalogue.items()}
    rows, mismatches = [], 0
    for c in run["customers"]:
        customer = c["customer"].lower()
        # Where Apple expects a renewal, grant keeps access for its leeway past the period's end.
        expected = {e["entitlement"]: (e["until"] + int(args.leeway * 1000) if e.get("until") is not None and e.get("renewalExpected") else e.get("until"))
                    for e in c["entitlements"]}
        expected_units = {}
        for pid, n in c.get("consumables", {}).items():
            expected_units[units_key.get(pid, pid)] = expected_units.get(units_key.get(pid, pid), 0) + n
        have = db.get(customer, {})
        have_ent = {k: (int(v) if v else None) for k, v in have.items() if not k.startswith("units:")}
        have_units = {k[6:]: int(v) for k, v in have.items() if k.startswith("units:")}
        same = set(expected) == set(have_ent) and all(
            (expected[k] is None) == (have_ent[k] is None) and (expected[k] is None or abs(expected[k] - have_ent[k]) <= 1000)
            for k in expected) and expected_units == have_units
        mismatches += 0 if same else 1
        def show(ent, units):
            parts = [f"{k} until {millis_to_text(u)}" for k, u in sorted(ent.items())] + [f"{n} {k}" for k, n in sorted(units.items())]
            return ", ".join(parts) or "—"
        rows.append((customer[:8], c["scenario"], show(expected, expected_units), show(have_ent, have_units), "✓" if same else "✗"))

    widths = [max(len(r[i]) for r in rows + [("customer", "scenario", "expected (simulator)", "in Postgres", "")]) for i in range(5)]
    header = ("customer", "scenario", "expected (simulator)", "in Postgres", "")
    for r in [header] + rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(5)))
    print(f"{len(rows) - mismatches} of {len(rows)} customers match the ground truth")
    lost = 0
    if not args.ports:  # a fresh database: every recorded event is this run's
        lost = (rep.get("delivered") or 0) + (rep.get("uploads") or 0) - logged()
        print(f"lost = {lost} (acknowledged deliveries and uploads that grant never recorded)")
    # Refund requests (CONSUMPTION_REQUEST) grant's responder answered from our records.
    time.sleep(3)
    statuses = query("select status, count(*) from consumption_requests group by status order by status").split()
    answered = len(get_json(args.sim + "/sim/consumption"))
    summary = ", ".join(f"{statuses[i + 1]} {statuses[i]}" for i in range(0, len(statuses), 2)) or "none"
    print(f"consumption requests: {summary}; answers Apple received: {answered}")
    return 0 if mismatches == 0 and lost == 0 else 1

if __name__ == "__main__":
    sys.exit(main())
