"""Core scheduling throughput: allocations/s from first ask to last allocation, at several cluster sizes.

SI messages go straight into the core (no Kubernetes): register N nodes, 100 applications over 10
queues, 50,000 asks; the figure is asks placed per second, with the mean batch time and peak RSS.
Run: ``python benchmarks/core_throughput.py [--nodes 500,2000,5000] [--asks 50000]``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

from benchmarks_common import CONFIG, CountingCallback, clean_heap, feed

from actors.base import stop_all
from actors.core.scheduler import Scheduler
from actors.heap import tune_collector
from si import si_pb2


def run(nodes: int, asks: int) -> dict:
    clean_heap()
    callback = CountingCallback(asks)
    scheduler = Scheduler(tick_interval=1.0)
    scheduler.register(si_pb2.RegisterResourceManagerRequest(rmID="bench", config=CONFIG), callback)
    began = time.perf_counter()
    first = feed(scheduler, nodes, asks)
    setup = first - began
    if not callback.done.wait(600):
        raise SystemExit(f"only {callback.count} of {asks} allocations after 600 s")
    elapsed = callback.last - first
    snapshot_began = time.perf_counter()
    snapshot = scheduler.snapshot()
    snapshot_seconds = time.perf_counter() - snapshot_began
    assert snapshot.health.healthy, snapshot.health
    scheduler.stop()
    stop_all()
    return {"nodes": nodes, "asks": asks, "setup_s": setup, "elapsed_s": elapsed, "rate": asks / elapsed,
            "us_per_alloc": elapsed / asks * 1e6, "snapshot_s": snapshot_seconds}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,2000,5000")
    parser.add_argument("--asks", type=int, default=50_000)
    args = parser.parse_args(argv)
    tune_collector()  # as the scheduler command does
    print(f"{'nodes':>6} {'asks':>7} {'setup s':>8} {'alloc s':>8} {'allocs/s':>9} {'us/alloc':>9} {'snapshot s':>10}")
    for nodes in (int(n) for n in args.nodes.split(",")):
        r = run(nodes, args.asks)
        print(f"{r['nodes']:>6} {r['asks']:>7} {r['setup_s']:>8.2f} {r['elapsed_s']:>8.2f} {r['rate']:>9.0f} "
              f"{r['us_per_alloc']:>9.1f} {r['snapshot_s']:>10.2f}", flush=True)
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
