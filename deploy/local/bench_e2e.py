#!/usr/bin/env python3
"""The end-to-end benchmark's driver (deploy/local/bench e2e starts the stack, then runs this).

`bench_e2e.py run` measures, from grant's own rows in Postgres (notifications.ingested_at, the
ingested-at, to processed_at, grant's write):
  - latency: customers played by the simulated Apple's lifecycle player at a paced rate and at half
    of it (p50, p99, max webhook -> committed);
  - CPU: notifications the simulator signed ahead (POST /sim/lifecycle/prepare), posted at a fixed
    rate (--cpu-rate, 100/s) by a small paced sender; over a fixed window (--cpu-seconds) each
    process's CPU time from /proc/<pid>/stat (utime + stime, in clock ticks), sampled at the
    window's start and end, divided by the notifications committed in the window;
  - throughput: notifications the simulator signed ahead, posted by wrk as fast as ingest takes
    them (so the load generator offers far more than the pipeline takes), then notifications per
    second from the first webhook delivery to the last commit, and the busiest 10 s.
Prints one human line per phase on stderr and, last, one JSON object per phase on stdout.

`bench_e2e.py idle` measures each process's CPU, as % of one core, over a window without traffic.

Processes are named on the command line (--pids FILE of "name pid" lines, --process NAME=PID);
each counts with its descendants and the children it has reaped, so Postgres (--postgres-pid, the
postmaster) is every process of the cluster, connection backends that came and went included.
"""
import argparse
import collections
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.client import HTTPConnection, HTTPException

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # what `getconf CLK_TCK` prints
HERE = os.path.dirname(os.path.abspath(__file__))
OWN = ["ingest", "verify", "enrich", "grant"]  # the project's processes; with Postgres, the acceptance figure


def http(method, url, body=None, timeout=30, raw=False):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        text = response.read()
        if raw:
            return text
        return json.loads(text) if text else None


def sql(psql, query):
    out = subprocess.run(psql + ["-At", "-F", "\t", "-c", query], check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.strip().splitlines() if line]


def log(text):
    print(f"[bench e2e] {text}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# CPU from /proc

def process_table():
    """pid -> (ppid, own ticks (utime + stime), reaped children's ticks (cutime + cstime))."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, …
        table[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14]))
    return table


class Processes:
    """The processes measured, by name: a root pid each."""

    def __init__(self, args):
        self.roots = {}
        for path in args.pids or []:
            with open(path) as f:
                for line in f:
                    if line.strip():
                        name, pid = line.split()
                        self.roots[name] = int(pid)
        for item in args.process or []:
            name, _, pid = item.partition("=")
            self.roots[name] = int(pid)
        if args.postgres_pid:
            self.roots["postgres"] = args.postgres_pid
        for name, pid in self.roots.items():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    self.commands = getattr(self, "commands", []) + [f"{name} {pid} ({f.read().strip()})"]
            except OSError:
                raise SystemExit(f"{name} (pid {pid}) is not running") from None
        log("measuring " + ", ".join(self.commands))

    def sample(self, extra_pids=()):
        """Ticks per name (root, live descendants, reaped children), and per pid of extra_pids."""
        table = process_table()
        children = collections.defaultdict(list)
        for pid, (ppid, _, _) in table.items():
            children[ppid].append(pid)
        ticks = {}
        for name, root in self.roots.items():
            if root not in table:
                raise SystemExit(f"{name} (pid {root}) exited during the measurement")
            total, stack = 0, [root]
            while stack:
                pid = stack.pop()
                _, own, reaped = table[pid]
                total += own + reaped
                stack.extend(children[pid])
            ticks[name] = total
        return ticks, {pid: table[pid][1] for pid in extra_pids if pid in table}


def ms(ticks):
    return ticks * 1000.0 / CLOCK_TICKS


def cpu_breakdown(before, after, per):
    """{name: ms of CPU per `per`} for every process, plus the acceptance sum and the total."""
    result = {name: round(ms(after[name] - before[name]) / per, 3) for name in before}
    result["own_plus_postgres"] = round(sum(result.get(name, 0) for name in OWN + ["postgres"]), 3)
    result["all"] = round(sum(v for k, v in result.items() if k not in ("own_plus_postgres",)), 3)
    return result


def database_backends(psql):
    """The pids of the bench database's connection backends (grant's pool)."""
    return [int(pid) for (pid,) in sql(psql, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")]


# ---------------------------------------------------------------------------------------------
# Load: prepared requests, the lifecycle player

def prepare(args, customers, first_index, seed, minimum_notifications=0):
    """Requests the simulator signed ahead, as (path, body) lines; more customers are prepared (at
    following indexes) until there are at least minimum_notifications notifications."""
    lines, index = [], first_index
    while True:
        text = http("POST", args.sim + "/sim/lifecycle/prepare",
                    {"customers": customers, "seed": seed, "monthSeconds": args.month, "firstCustomerIndex": index},
                    timeout=600, raw=True).decode()
        lines += [line for line in text.split("\n") if line]
        index += customers
        seed += 1
        notifications = sum(1 for line in lines if line.startswith("/v2/notifications "))
        if notifications >= minimum_notifications:
            return lines, notifications


class PacedSender(threading.Thread):
    """Posts the lines with notifications at `rate` per second, on schedule (an app upload goes with
    the notification after it), over enough connections that slow answers do not hold the schedule
    back; the load generator's CPU is in no figure."""

    def __init__(self, webhook, lines, rate, workers=16):
        super().__init__(daemon=True)
        self.address = urllib.parse.urlsplit(webhook)
        self.lines, self.rate, self.workers = lines, rate, workers
        self.due, notifications = [], 0  # seconds after the start
        for line in lines:
            self.due.append(notifications / rate)
            notifications += line.startswith("/v2/notifications ")
        self.next, self.lock, self.stopping = 0, threading.Lock(), threading.Event()
        self.sent, self.notifications, self.failures, self.late = 0, 0, [], 0

    def run(self):
        self.start_time = time.monotonic()
        threads = [threading.Thread(target=self.work, daemon=True) for _ in range(self.workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def work(self):
        try:
            self.post_lines()
        except Exception as error:  # a bug here must not pass for a quiet pipeline
            with self.lock:
                self.failures.append(f"sender: {error!r}")

    def post_lines(self):
        connection = HTTPConnection(self.address.hostname, self.address.port, timeout=30)
        while not self.stopping.is_set():
            with self.lock:
                number = self.next
                if number >= len(self.lines):
                    return
                self.next += 1
            due = self.start_time + self.due[number]
            wait = due - time.monotonic()
            if wait > 0:
                if self.stopping.wait(wait):
                    return
            elif wait < -0.05:
                with self.lock:
                    self.late += 1
            path, body = self.lines[number].split(" ", 1)
            try:
                connection.request("POST", path, body=body.encode(), headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
                ok = response.status == 200
            except (OSError, HTTPException) as error:
                connection.close()
                connection = HTTPConnection(self.address.hostname, self.address.port, timeout=30)
                ok, response = False, error
            with self.lock:
                if ok:
                    self.sent += 1
                    self.notifications += path == "/v2/notifications"
                else:
                    self.failures.append(f"{path}: {getattr(response, 'status', response)}")

    def stop(self):
        self.stopping.set()
        self.join()


def wait_committed(args, psql, name, where, expected):
    started = time.monotonic()
    while True:
        committed = int(sql(psql, f"SELECT count(*) FROM notifications WHERE {where}")[0][0])
        if committed >= expected:
            return committed
        log(f"{name}: {int(time.monotonic() - started)} s, committed {committed} of {expected}")
        if time.monotonic() - started > args.timeout:
            raise SystemExit(f"{name}: only {committed} of {expected} notifications committed after {args.timeout} s")
        time.sleep(2)


def figures(psql, name, where):
    """Throughput and latency of the notifications `where` selects, from grant's rows."""
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
    return {
        "phase": name, "notifications": count, "offered_per_s": round(count / max(last_in - first_in, 1e-3), 1),
        "end_to_end_per_s": round(count / max(last_out - first_in, 1e-3), 1), "busiest_10s_per_s": round(busiest, 1),
        "p50_ms": round(float(p50) * 1000, 1), "p99_ms": round(float(p99) * 1000, 1), "max_ms": round(float(worst) * 1000, 1),
        "seconds": round(last_out - first_in, 1),
    }


def player_phase(args, psql, name, customers, rate, seed, first_index):
    """Customers played by the simulator's lifecycle player (paced when `rate` is set)."""
    since = sql(psql, "SELECT now()")[0][0]
    request = {"customers": customers, "webhook": args.webhook, "monthSeconds": args.month, "retries": True,
               "seed": seed, "concurrency": args.concurrency, "firstCustomerIndex": first_index}
    if rate:
        request["stepsPerSecond"] = rate
    http("POST", args.sim + "/sim/lifecycle", request)
    where = f"kind = 'notification' AND ingested_at >= '{since}'"
    started = time.monotonic()
    while True:
        status = http("GET", args.sim + "/sim/lifecycle")
        committed = int(sql(psql, f"SELECT count(*) FROM notifications WHERE {where}")[0][0])
        if status["state"] == "failed":
            raise SystemExit(f"the lifecycle run failed: {status.get('error')}")
        if status["state"] == "done" and committed >= status["report"]["delivered"]:
            report = status["report"]
            break
        log(f"{name}: {int(time.monotonic() - started)} s, sent {status['state']}, committed {committed}")
        if time.monotonic() - started > args.timeout:
            raise SystemExit(f"{name}: only {committed} notifications committed after {args.timeout} s")
        time.sleep(2)
    result = figures(psql, name, where)
    result.update(customers=customers, paced_steps_per_s=rate, delivered=report["delivered"])
    log(f"{name}: {result['notifications']} notifications offered at {result['offered_per_s']}/s, through all four stages at "
        f"{result['end_to_end_per_s']}/s (busiest 10 s: {result['busiest_10s_per_s']}/s); webhook → committed "
        f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, max {result['max_ms']} ms")
    return result


def cpu_phase(args, psql, processes, first_index):
    """CPU per notification of each process over a fixed window at a fixed offered rate."""
    needed = math.ceil(args.cpu_rate * (args.cpu_warmup + args.cpu_seconds + 5))
    lines, _ = prepare(args, max(1, math.ceil(needed / 2.5)), first_index, seed=14, minimum_notifications=needed)
    since = sql(psql, "SELECT now()")[0][0]
    sender = PacedSender(args.webhook, lines, args.cpu_rate)
    sender.start()
    time.sleep(args.cpu_warmup)
    backends = database_backends(psql)
    # Optionally a whole-machine profile of the window (perf's own cost then inflates the figures).
    perf = subprocess.Popen(["perf", "record", "-a", "-g", "-F", "499", "-o", args.perf_output],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if args.perf_output else None
    window_start = time.time()
    before, backends_before = processes.sample(backends)
    time.sleep(args.cpu_seconds)
    after, backends_after = processes.sample(backends)
    window_end = time.time()
    if perf:
        perf.send_signal(signal.SIGINT)
        perf.wait()
    sender.stop()
    if sender.failures:
        raise SystemExit(f"cpu: ingest refused {len(sender.failures)} requests, e.g. {sender.failures[:3]}")
    where = f"kind = 'notification' AND ingested_at >= '{since}'"
    wait_committed(args, psql, "cpu", where, sender.notifications)
    in_window = f"kind = 'notification' AND processed_at >= to_timestamp({window_start}) AND processed_at < to_timestamp({window_end})"
    committed = int(sql(psql, f"SELECT count(*) FROM notifications WHERE {in_window}")[0][0])
    offered = int(sql(psql, f"""SELECT count(*) FROM notifications WHERE kind = 'notification'
        AND ingested_at >= to_timestamp({window_start}) AND ingested_at < to_timestamp({window_end})""")[0][0])
    if committed == 0:
        raise SystemExit("cpu: no notification was committed in the window")
    seconds = window_end - window_start
    cpu = cpu_breakdown(before, after, committed)
    common = set(backends_before) & set(backends_after)
    result = figures(psql, "cpu", f"kind = 'notification' AND ingested_at >= to_timestamp({window_start}) AND ingested_at < to_timestamp({window_end})")
    result.update({
        "rate_per_s": args.cpu_rate, "window_s": round(seconds, 1), "window_notifications": committed,
        "offered_per_s": round(offered / seconds, 1), "committed_per_s": round(committed / seconds, 1),
        "late_sends": sender.late, "cpu_ms_per_notification": cpu,
        # The part of Postgres working for the bench's database (grant's connections); the rest is the
        # cluster's own processes and every other database's connections (tests running meanwhile).
        "postgres_bench_db_ms": round(sum(ms(backends_after[p] - backends_before[p]) for p in common) / committed, 3),
        "cpu_percent_of_a_core": {name: round(100 * ms(after[name] - before[name]) / 1000 / seconds, 1) for name in before},
    })
    log(f"cpu: {committed} notifications committed in {seconds:.1f} s at {result['offered_per_s']}/s offered "
        f"({sender.late} sent over 50 ms late; p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms); CPU ms per notification: "
        + ", ".join(f"{k} {v}" for k, v in cpu.items()))
    return result


def unpaced_phase(args, psql, processes, first_index):
    """Prepared notifications posted by wrk as fast as ingest takes them: offered vs taken."""
    lines, notifications = prepare(args, args.throughput_customers, first_index, seed=12)
    path = os.path.join(args.work_dir, "unpaced.requests")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    since = sql(psql, "SELECT now()")[0][0]
    before, _ = processes.sample()
    wrk_log = open(os.path.join(args.work_dir, "unpaced-wrk.txt"), "w")
    wrk = subprocess.Popen(
        ["wrk", "-t1", f"-c{args.connections}", "-d3600s", "--timeout", "60s", "-s", os.path.join(HERE, "bench-post-prepared.lua"),
         args.webhook], env=dict(os.environ, BENCH_REQUESTS_FILE=path), stdout=wrk_log, stderr=subprocess.STDOUT)
    where = f"kind = 'notification' AND ingested_at >= '{since}'"
    try:
        wait_committed(args, psql, "unpaced", where, notifications)
    finally:
        wrk.send_signal(signal.SIGINT)  # wrk reports and exits
        try:
            wrk.wait(timeout=10)
        except subprocess.TimeoutExpired:
            wrk.kill()
            wrk.wait()
        wrk_log.close()
        os.remove(path)  # tens of MB, and the simulator that signed them is gone after the run
    after, _ = processes.sample()
    result = figures(psql, "unpaced", where)
    result.update(customers=args.throughput_customers, requests=len(lines), prepared_notifications=notifications,
                  cpu_ms_per_notification=cpu_breakdown(before, after, result["notifications"]))
    log(f"unpaced: {result['notifications']} notifications offered at {result['offered_per_s']}/s (wrk, prepared), taken through "
        f"all four stages at {result['end_to_end_per_s']}/s (busiest 10 s: {result['busiest_10s_per_s']}/s); webhook → committed "
        f"p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms")
    return result


def run(args):
    psql = args.psql.split()
    processes = Processes(args)
    os.makedirs(args.work_dir, exist_ok=True)
    # Each phase's customers start at their own index: transaction IDs follow from it, so no phase
    # takes over another's purchases in the simulator or in grant's tables.
    # Warm-up, not reported: consumer groups joined, connections and caches warm in every stage.
    player_phase(args, psql, "warm-up", 40, None, seed=10, first_index=0)
    results = [
        player_phase(args, psql, "paced", args.latency_customers, args.latency_rate, seed=11, first_index=100_000),
        # Half the rate: where the latency stands when the two cores are not saturated.
        player_phase(args, psql, "paced at half the rate", args.latency_customers, args.latency_rate / 2, seed=13,
                     first_index=200_000),
        cpu_phase(args, psql, processes, first_index=300_000),
        unpaced_phase(args, psql, processes, first_index=400_000),
    ]
    for result in results:
        print(json.dumps(result))


def idle(args):
    processes = Processes(args)
    time.sleep(args.settle)
    before, _ = processes.sample()
    started = time.monotonic()
    time.sleep(args.seconds)
    after, _ = processes.sample()
    seconds = time.monotonic() - started
    percent = {name: round(100 * ms(after[name] - before[name]) / 1000 / seconds, 2) for name in before}
    result = {"phase": "idle", "label": args.label, "seconds": round(seconds, 1), "cpu_percent_of_a_core": percent}
    log(f"idle ({args.label}, {seconds:.0f} s): " + ", ".join(f"{k} {v} %" for k, v in percent.items()))
    print(json.dumps(result))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (sub.add_parser("run"), sub.add_parser("idle")):
        command.add_argument("--pids", action="append", help='a file of "name pid" lines (deploy/local/lib.sh start_process)')
        command.add_argument("--process", action="append", help="NAME=PID")
        command.add_argument("--postgres-pid", type=int, help="the postmaster: the whole cluster is measured")
    r = sub.choices["run"]
    r.add_argument("--sim", required=True)
    r.add_argument("--webhook", required=True)
    r.add_argument("--psql", required=True)
    r.add_argument("--work-dir", required=True)
    r.add_argument("--month", type=float, default=600)
    r.add_argument("--concurrency", type=int, default=64)
    r.add_argument("--latency-customers", type=int, default=400)
    r.add_argument("--latency-rate", type=float, default=200)
    r.add_argument("--throughput-customers", type=int, default=2500)
    r.add_argument("--connections", type=int, default=16, help="wrk's connections in the unpaced phase")
    r.add_argument("--cpu-rate", type=float, default=100)
    r.add_argument("--cpu-seconds", type=float, default=30)
    r.add_argument("--cpu-warmup", type=float, default=5)
    r.add_argument("--perf-output", default="", help="record a perf profile of the whole machine over the CPU window here")
    r.add_argument("--timeout", type=float, default=900)
    i = sub.choices["idle"]
    i.add_argument("--seconds", type=float, default=20)
    i.add_argument("--settle", type=float, default=0, help="seconds to wait before the window")
    i.add_argument("--label", default="")
    args = parser.parse_args()
    run(args) if args.command == "run" else idle(args)


if __name__ == "__main__":
    main()
