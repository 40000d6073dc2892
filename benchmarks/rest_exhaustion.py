"""REST against clients that ask for the full state dump and never read: the scheduler process's memory
(RSS) before, while they hold their connections and after they leave, and how long other clients and
the probes wait meanwhile.

The core is fed SI messages directly and the REST server runs in the same process, as in the scheduler;
the stalled clients run in a process of their own, each connection with a small receive window.
Run: ``python benchmarks/rest_exhaustion.py [--nodes 2000 --asks 20000 --clients 1000]``.
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import resource
import socket
import sys
import time

from benchmarks_common import CONFIG, CountingCallback, feed

from actors.base import stop_all
from actors.core.scheduler import Scheduler
from actors.heap import tune_collector
from rest.app import SchedulerView
from rest.server import RestServer, ServerSettings

DUMP = "/ws/v1/fullstatedump"


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return kib / 1024


def stall(port: int, clients: int, connected, leave) -> None:
    """One process: ``clients`` connections that each ask for the dump and read nothing, until ``leave``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, clients + 256)), hard))
    held = []
    for _ in range(clients):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", port))
        sock.sendall(f"GET {DUMP} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        held.append(sock)
    connected.set()
    leave.wait()
    for sock in held:
        sock.close()


def answered_in(port: int, path: str) -> tuple[float, int]:
    """Seconds until ``path`` was read whole, and its length."""
    began = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    if response.status != 200:
        raise SystemExit(f"{path}: {response.status}")
    return time.perf_counter() - began, len(body)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--asks", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=1000)
    args = parser.parse_args(argv)
    tune_collector()
    callback = CountingCallback(args.asks)
    scheduler = Scheduler(tick_interval=1.0)
    from si import si_pb2

    scheduler.register(si_pb2.RegisterResourceManagerRequest(rmID="bench", config=CONFIG), callback)
    feed(scheduler, args.nodes, args.asks)
    if not callback.done.wait(900):
        raise SystemExit(f"only {callback.count} of {args.asks} allocations")
    server = RestServer(SchedulerView(scheduler), host="127.0.0.1", port=0,
                        settings=ServerSettings(connection_limit=args.clients + 100), health_port=0)
    _, size = answered_in(server.port, DUMP)
    before = rss_mib()
    context = multiprocessing.get_context("spawn")
    connected, leave = context.Event(), context.Event()
    stalled = context.Process(target=stall, args=(server.port, args.clients, connected, leave), daemon=True)
    stalled.start()
    connected.wait(120)
    deadline = time.monotonic() + 60
    while server.connections < args.clients and time.monotonic() < deadline:
        time.sleep(0.1)
    peak, waits = before, {"/ws/v1/partitions": 0.0, DUMP: 0.0}
    probe = 0.0
    for _ in range(5):  # while they hold on, the dump's snapshot renewed every 2 s
        peak = max(peak, rss_mib())
        for path in waits:
            waits[path] = max(waits[path], answered_in(server.port, path)[0])
        probe = max(probe, answered_in(server.health.port, "/ws/v1/health/live")[0])
        time.sleep(1)
    held = server.connections
    peak = max(peak, rss_mib())
    leave.set()
    stalled.join(60)
    while server.connections and time.monotonic() < deadline + 60:
        time.sleep(0.1)
    after = rss_mib()
    dump_seconds, _ = answered_in(server.port, DUMP)
    server.stop()
    scheduler.stop()
    stop_all()
    print(f"{args.nodes} nodes, {args.asks} allocations, a dump of {size / 2**20:.1f} MiB; {held} connections "
          "asking for it and not reading")
    print(f"  RSS {before:.0f} MiB before, {peak:.0f} MiB at most while they held on, {after:.0f} MiB after")
    print("  slowest answer while they held on: " + ", ".join(f"{path} {seconds:.2f} s" for path, seconds in waits.items())
          + f", liveness probe {probe:.3f} s; the dump after they left {dump_seconds:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
