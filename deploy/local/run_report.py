#!/usr/bin/env python3
"""Follows a lifecycle run of deploy/local/run or deploy/containers/run: one progress line while
events flow through the stages, then each customer's entitlements from Postgres next to the
simulator's ground truth, and how many acknowledged deliveries never reached Postgres (lost).

The pipeline is done when it says so itself (`appstorectl status --json`, the command given with
--status): the simulator has finished, every stage's consumer group has committed everything on its
input topic (lag 0 on every partition) and grant's outbox is empty, twice in a row with nothing
moved in between. That counts every way a record can end (applied, dead-lettered, dropped as a
replay) without comparing counters that a new feature can skew. With --ports the progress line
also shows each stage's counters. Exits 1 when a customer differs, an event is lost, the
pipeline does not drain in time (then the last status says which partition still waits), a
consent-rescinded customer's change stream lacks consent_rescinded (or another's has it) or, with
--stamped, a purchase only an upload owns (a family member's aside) did not get Apple's token."""
import argparse
import json
import re
import shlex
import subprocess
import sys
import time
import urllib.request
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

def pipeline_status(command):
    """`appstorectl status --json` as a dict (its exit status says healthy or not, which is not the
    question here), or None when it printed no JSON."""
    out = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
    for line in reversed(out.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None

def drained(status):
    """True when every stage's input is committed to its end and the outbox is empty; the second
    value is what must stay unchanged between two reads (each partition's end and committed offset)."""
    if not status:
        return False, None
    marks = []
    done = True
    for stage in status.get("stages", []):
        if stage.get("lag") != 0 or stage.get("errors"):
            done = False
        marks += [(stage["stage"], p["partition"], p["end"], p["committed"]) for p in stage.get("partitions", [])]
    outbox = status.get("outbox")
    if outbox is None or outbox.get("unpublished") != 0:
        done = False
    return done, (tuple(marks), (outbox or {}).get("unpublished"))

def describe_waiting(status):
    """What still waits, per stage and partition, for the message when the run does not drain."""
    if not status:
        return "appstorectl status printed nothing"
    parts = []
    for stage in status.get("stages", []):
        waiting = [f"p{p['partition']} {p['lag'] if p['lag'] is not None else 'unknown'} (committed {p['committed']}, end {p['end']})"
                   for p in stage.get("partitions", []) if p.get("lag") != 0]
        members = stage.get("memberCount")
        parts.append(f"{stage['stage']}: {members} member(s), " + (", ".join(waiting) if waiting else "nothing waiting")
                     + ("; " + "; ".join(stage["errors"]) if stage.get("errors") else ""))
    outbox = status.get("outbox")
    parts.append(f"outbox: {outbox.get('unpublished') if outbox else 'unknown (' + str(status.get('outboxError')) + ')'}")
    return "\n  ".join(parts)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", required=True)
    ap.add_argument("--status", required=True, help="the command that prints `appstorectl status --json` for this pipeline")
    ap.add_argument("--ports", help="ingest,verify,enrich,grant metrics ports on 127.0.0.1, for the progress line")
    ap.add_argument("--psql", required=True)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--leeway", type=float, default=0, help="grant's GRANT_EXPIRY_LEEWAY_S")
    ap.add_argument("--stamped", action="store_true",
                    help="grant stamps Apple's token (TOKEN_STAMP_APPS names the app): every purchase only an upload owns, "
                         "a family member's aside, must have it stamped")
    ap.add_argument("--after-drain", action="append", default=[], metavar="COMMAND",
                    help="an operator command to run once the pipeline drained (the refund sweep, appstorectl refunds; "
                         "a mass renewal extension, appstorectl extend-all --wait), then wait for the pipeline to drain "
                         "again; repeatable: the commands run in order, each after the pipeline drained again")
    ap.add_argument("--fresh-database", action="store_true",
                    help="every event grant recorded is this run's: report lost (acknowledged deliveries never recorded)")
    args = ap.parse_args()
    psql = shlex.split(args.psql)
    status_command = shlex.split(args.status)

    def query(sql):
        return subprocess.run(psql + ["-At", "-F", "\t", "-c", sql], check=True, capture_output=True, text=True).stdout

    def unrecorded(rep):
        """What the webhook acknowledged that grant never recorded: each delivered notification by its
        UUID, each upload by its transaction. Sets, not counts: an attempt whose answer a killed
        container never sent can be recorded too (and a receipt's lookup is signed anew each time)."""
        rows = query("select source, coalesce(notification_uuid, ''), coalesce(transaction_id, ''), coalesce(original_transaction_id, '') "
                     "from notifications where source <> 'refund-history'").splitlines()
        recorded = [r.split("\t") for r in rows if r.count("\t") == 3]
        uuids = {u.lower() for s, u, _, _ in recorded if s not in ("app-upload", "app-receipt")}
        # An upload names its purchase; what grant records is the transaction Apple signed for it.
        uploads = {i for s, _, t, o in recorded if s in ("app-upload", "app-receipt") for i in (t, o)}
        return ([f"notification {u}" for u in rep.get("deliveredNotificationUUIDs", []) if u.lower() not in uuids]
                + [f"upload of {t}" for t in rep.get("uploadedTransactionIds", []) if t not in uploads])

    deadline = time.time() + args.timeout
    last_marks, status = None, None
    after_drain = list(args.after_drain)
    while True:
        run = get_json(args.sim + "/sim/lifecycle")
        rep = run.get("report") or {}
        if run["state"] == "failed":
            print(f"\nthe lifecycle run failed: {run.get('error')}")
            return 1
        line = f"sim {run['state']:>7} | delivered {rep.get('delivered', 0) or 0:>5} | uploads {rep.get('uploads', 0) or 0:>4}"
        if args.ports:
            ingest, verify, enrich, grant = (metrics(p) for p in args.ports.split(","))
            line += (f" | ingest 200: {int(ingest.get('ingest_ok', 0)):>5}"
                     + "".join(f" | {name} {int(m.get('pipeline_messages_processed_total', 0)):>5}"
                               for name, m in (("verify", verify), ("enrich", enrich), ("grant", grant))))
        if run["state"] == "done":
            status = pipeline_status(status_command)
            done, marks = drained(status)
            lags = {s["stage"]: s.get("lag") for s in (status or {}).get("stages", [])}
            outbox = ((status or {}).get("outbox") or {}).get("unpublished")
            line += " | lag " + " ".join(f"{k} {'?' if v is None else v}" for k, v in lags.items()) + f" | outbox {'?' if outbox is None else outbox}"
            print("\r" + line, end="", flush=True)
            if done and marks == last_marks:
                if after_drain:
                    command = after_drain.pop(0)
                    print(f"\ndrained; running: {command}")
                    result = subprocess.run(shlex.split(command), capture_output=True, text=True)
                    tail = (result.stdout.strip().splitlines() or [""])[-1]
                    print(f"  {tail}" + (f" (exit {result.returncode}: {result.stderr.strip()[-300:]})" if result.returncode else ""))
                    if result.returncode:
                        return 1
                    last_marks = None
                    continue
                break
            last_marks = marks if done else None
        else:
            print("\r" + line, end="", flush=True)
        if time.time() > deadline:
            print(f"\nthe pipeline did not drain within {args.timeout:.0f} s; still waiting:\n  {describe_waiting(status)}")
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
    # A parent's RESCIND_CONSENT reaches the services downstream as consent_rescinded on the change
    # stream (published: the outbox is empty once drained), for exactly the customers it names.
    rescinded = {c["customer"].lower() for c in run["customers"] if c["scenario"] == "consent-rescinded"}
    told = set(query("select distinct customer_id from entitlement_changes where change = 'consent_rescinded' "
                     "and environment = 'Sandbox'").split())
    consent_wrong = len(rescinded ^ told)
    if rescinded or told:
        print(f"consent rescinded: {len(rescinded & told)} of {len(rescinded)} customers' change streams carry consent_rescinded"
              + (f"; wrong: {sorted(rescinded ^ told)[:5]}" if consent_wrong else ""))
    lost = 0
    if args.fresh_database:
        missing = unrecorded(rep)
        lost = len(missing)
        print(f"lost = {lost} (acknowledged deliveries and uploads that grant never recorded)"
              + (f": {', '.join(missing[:5])}" if missing else ""))
    # Refund requests (CONSUMPTION_REQUEST) grant's responder answered from our records.
    time.sleep(3)
    statuses = query("select status, count(*) from consumption_requests group by status order by status").split()
    answered = len(get_json(args.sim + "/sim/consumption"))
    summary = ", ".join(f"{statuses[i + 1]} {statuses[i]}" for i in range(0, len(statuses), 2)) or "none"
    print(f"consumption requests: {summary}; answers Apple received: {answered}")
    # Apple's token stamped on purchases only an upload or receipt tied to a customer (TOKEN_STAMP_APPS);
    # grant's stamper polls every 2 s, so the last ones may take a moment after the pipeline drained.
    unstamped = 0
    if args.stamped:
        unstamped_sql = ("select count(*) from ownership_claims c where c.status = 'owner' and not c.verified "
                         "and not exists (select 1 from transactions t where t.environment = c.environment "
                         "and t.original_transaction_id = c.original_transaction_id and t.in_app_ownership_type = 'FAMILY_SHARED') "
                         "and not exists (select 1 from token_bindings b where b.environment = c.environment "
                         "and b.original_transaction_id = c.original_transaction_id and b.customer_id = c.customer_id and b.outcome = 'set')")
        stamp_deadline = time.time() + 30
        while True:
            unstamped = int(query(unstamped_sql).strip() or 0)
            if unstamped == 0 or time.time() > stamp_deadline:
                break
            time.sleep(1)
    stamps = query("select outcome, count(*) from token_bindings group by outcome order by outcome").split()
    print("appAccountTokens stamped at Apple: " + (", ".join(f"{stamps[i + 1]} {stamps[i]}" for i in range(0, len(stamps), 2)) or "none")
          + (f"; upload-owned purchases left unstamped: {unstamped}" if args.stamped else ""))
    return 0 if mismatches == 0 and lost == 0 and unstamped == 0 and consent_wrong == 0 else 1

if __name__ == "__main__":
    sys.exit(main())
