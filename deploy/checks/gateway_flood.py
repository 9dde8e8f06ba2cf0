#!/usr/bin/env python3
"""Slow connections against the gateway while Apple bursts notifications (issue 28's gateway test).

SLOW connections to /v1/transactions, half from each of two loopback addresses (127.0.0.2 and
127.0.0.3), are held open for the whole run: half send their request header a line a second (never
finished: the gateway's header timeout closes them), half send a whole header and then their body a
byte a second (past the per-client limits the gateway answers 429 and closes). Whatever the gateway
closes is opened again a second later, so the attacker holds as many as the gateway lets it. Once
they are open, the allow-listed client (127.0.0.1, a process of its own) sends BURST notifications
within one second, each on its own TLS connection as Apple's servers do, and the statuses and
latencies are printed as one JSON object (SLOW 0: only the burst):

    gateway_flood.py PORT CA_FILE NOTIFICATION_BODY_FILE [SLOW] [BURST]
"""

import asyncio
import json
import resource
import ssl
import sys
import time

port, cafile, body_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
slow_total = int(sys.argv[4]) if len(sys.argv) > 4 else 2000
burst_total = int(sys.argv[5]) if len(sys.argv) > 5 else 400
attackers = ["127.0.0.2", "127.0.0.3"]

# Every connection is a file descriptor here: raise the soft limit to the hard one.
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
if hard < slow_total + burst_total + 100:
    sys.exit(f"gateway_flood: {hard} file descriptors cannot hold {slow_total + burst_total} connections")

context = ssl.create_default_context(cafile=cafile)
notification = open(body_file, "rb").read()
state = {"open": 0, "opened": 0, "closed_by_gateway": 0, "connect_errors": 0}


async def connect(source):
    return await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname="localhost", local_addr=(source, 0), ssl_handshake_timeout=30
    )


async def slow_connection(source, trickle_body, stop):
    """Holds one slow upload open until `stop`, opening another whenever the gateway closes it."""
    while not stop.is_set():
        try:
            reader, writer = await connect(source)
        except OSError:
            state["connect_errors"] += 1
            await asyncio.sleep(0.5)
            continue
        state["open"] += 1
        state["opened"] += 1
        head = b"POST /v1/transactions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        closed = asyncio.ensure_future(reader.read(1))
        stopped = asyncio.ensure_future(stop.wait())
        try:
            writer.write(head + (b"Content-Length: 100000\r\n\r\n" if trickle_body else b""))
            while not stop.is_set() and not closed.done():
                await asyncio.wait([closed, stopped], timeout=1)
                if closed.done() or stop.is_set():
                    break
                writer.write(b"{" if trickle_body else b"X-Slow: 1\r\n")
                await writer.drain()
        except OSError:
            pass
        finally:
            closed.cancel()
            stopped.cancel()
            state["open"] -= 1
            writer.close()
        if not stop.is_set():
            # The gateway closed it (a timeout, or 429 past the client's limits): open another a
            # second later, as the attacker's own backoff.
            state["closed_by_gateway"] += 1
            await asyncio.sleep(1)


async def notify(delay):
    """One notification on its own connection after `delay`: (status, seconds) or (error, seconds)."""
    await asyncio.sleep(delay)
    started = time.monotonic()
    try:
        reader, writer = await connect("127.0.0.1")
        writer.write(
            b"POST /v2/notifications HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(notification)}\r\nConnection: close\r\n\r\n".encode()
            + notification
        )
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout=60)
        writer.close()
        status = line.split()[1].decode() if len(line.split()) > 1 else "no answer"
    except (OSError, asyncio.TimeoutError) as error:
        status = type(error).__name__
    return status, time.monotonic() - started


async def burst():
    """The allow-listed client's burst (its own process, so the attacker's work does not delay it)."""
    answers = await asyncio.gather(*(notify(i / burst_total) for i in range(burst_total)))
    statuses = {}
    for status, _ in answers:
        statuses[status] = statuses.get(status, 0) + 1
    latencies = sorted(seconds for _, seconds in answers)
    return {
        "notifications": burst_total,
        "statuses": statuses,
        "p50_ms": round(latencies[len(latencies) // 2] * 1000, 1),
        "p99_ms": round(latencies[len(latencies) * 99 // 100] * 1000, 1),
        "max_ms": round(latencies[-1] * 1000, 1),
    }


async def attack():
    stop = asyncio.Event()
    slow = []
    for i in range(slow_total):
        slow.append(asyncio.ensure_future(slow_connection(attackers[i % 2], i % 4 >= 2, stop)))
        if i % 50 == 49:
            await asyncio.sleep(0.05)
    # Until the attacker holds what it asked for, or as many as the gateway lets it (no more for 3 s).
    ramp, best, best_at = time.monotonic(), 0, time.monotonic()
    while state["open"] < slow_total and time.monotonic() - best_at < 3 and time.monotonic() - ramp < 60:
        if state["open"] > best:
            best, best_at = state["open"], time.monotonic()
        await asyncio.sleep(0.2)
    held_at_burst = state["open"]
    notifier = await asyncio.create_subprocess_exec(
        sys.executable, __file__, str(port), cafile, body_file, "0", str(burst_total), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await notifier.communicate()
    held_after_burst = state["open"]
    stop.set()
    await asyncio.gather(*slow, return_exceptions=True)
    result = {
        "slow_connections_asked": slow_total,
        "slow_held_at_burst": held_at_burst,
        "slow_held_after_burst": held_after_burst,
        "slow_opened": state["opened"],
        "slow_closed_by_gateway": state["closed_by_gateway"],
        "slow_connect_errors": state["connect_errors"],
    }
    result.update(json.loads(out))
    return result


print(json.dumps(asyncio.run(attack() if slow_total > 0 else burst())))
