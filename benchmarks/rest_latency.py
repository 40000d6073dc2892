"""REST under load: full state dump time, requests/s of /nodes and /queues while the core allocates,
and the core's allocation rate with and without that load.

The core is fed SI messages directly (as in core_throughput.py); the REST server runs in the same
process, as it does in the scheduler. Run: ``python benchmarks/rest_latency.py [--nodes 5000 --asks 50000]``.
"""

from __future__ import annotations

import argparse
import http.client
import sys
import threading
import time

from benchmarks_common import CONFIG, CountingCallback, feed

from actors.base import stop_all
from actors.core.scheduler import Scheduler
from rest.app import SchedulerView
from rest.server import RestServer


def load(port: int, path: str, stop: threading.Event, counts: dict) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while not stop.is_set():
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        if response.status == 200:
            counts[path] = counts.get(path, 0) + 1
        if response.will_close:
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)


def run(nodes: int, asks: int, with_load: bool) -> dict:
    from si import si_pb2

    callback = CountingCallback(asks)
    scheduler = Scheduler(tick_interval=1.0)
    scheduler.register(si_pb2.RegisterResourceManagerRequest(rmID="bench", config=CONFIG), callback)
    server = RestServer(SchedulerView(scheduler), host="127.0.0.1", port=0)
    stop, counts = threading.Event(), {}
    loaders = [threading.Thread(target=load, args=(server.port, path, stop, counts), daemon=True)
               for path in ("/ws/v1/partition/default/nodes", "/ws/v1/partition/default/queues")] if with_load else []
    first = feed(scheduler, nodes, asks)
    for loader in loaders:
        loader.start()
    if not callback.done.wait(900):
        raise SystemExit(f"only {callback.count} of {asks} allocations")
    elapsed = callback.last - first
    stop.set()
    for loader in loaders:
        loader.join(60)
    dump_began = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    connection.request("GET", "/ws/v1/fullstatedump")
    body = connection.getresponse().read()
    dump = time.perf_counter() - dump_began
    server.stop()
    scheduler.stop()
    stop_all()
    return {"rate": asks / elapsed, "elapsed": elapsed, "dump": dump, "dump_mb": len(body) / 2**20,
            "rps": {path: n / elapsed for path, n in counts.items()}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--asks", type=int, default=50_000)
    args = parser.parse_args(argv)
    quiet = run(args.nodes, args.asks, with_load=False)
    loaded = run(args.nodes, args.asks, with_load=True)
    print(f"{args.nodes} nodes, {args.asks} allocations")
    print(f"  allocations/s without REST load: {quiet['rate']:8.0f}")
    print(f"  allocations/s with REST load   : {loaded['rate']:8.0f}  (ratio {loaded['rate'] / quiet['rate']:.2f})")
    for path, rps in loaded["rps"].items():
        print(f"  {path}: {rps:6.1f} requests/s during allocation")
    print(f"  full state dump after allocation: {loaded['dump']:.2f} s ({loaded['dump_mb']:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
