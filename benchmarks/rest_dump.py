"""The full state dump at scale: CPU seconds of the scheduler's process to serve ``GET /ws/v1/fullstatedump``
right after a burst of allocations (nothing read since: the core pictures every node and application, and
REST renders them all) and once nothing changed since the last read. Right after the burst, the part the
core spends picturing nodes and applications (the snapshot, taken first on its own) is shown apart from
the answer's (rendering, serializing, sending and reading it).

The core is fed SI messages directly (as in rest_latency.py), the REST server runs in the same process
and the dump is read over HTTP from it. CPU seconds, not wall time: on a loaded machine the wall time is
mostly waiting. Run: ``python benchmarks/rest_dump.py [--nodes 10000 --asks 100000 --rounds 3]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from statistics import median

from benchmarks_common import feed
from rest_latency import dump_seconds, registered

from actors.base import stop_all
from actors.core.snapshot import APPLICATIONS, NODES
from actors.heap import tune_collector
from rest.app import SchedulerView
from rest.server import RestServer

DUMP_AREAS = frozenset({NODES, APPLICATIONS})  # as rest.app's route for the dump reads


def run(nodes: int, asks: int) -> dict:
    scheduler, callback = registered(asks)
    view = SchedulerView(scheduler)
    server = RestServer(view, host="127.0.0.1", port=0)
    try:
        feed(scheduler, nodes, asks)
        if not callback.done.wait(900):
            raise SystemExit(f"only {callback.count} of {asks} allocations")
        scheduler.barrier()
        cpu_began = time.process_time()
        view.snapshot(DUMP_AREAS)  # what the dump's route takes first: shared with the request below
        snapshot_cpu = time.process_time() - cpu_began
        cold, cold_cpu, size = dump_seconds(server.port)
        steady, steady_cpu, _ = dump_seconds(server.port)
    finally:
        server.stop()
        scheduler.stop()
        stop_all()
    return {"cold": cold, "cold_cpu": snapshot_cpu + cold_cpu, "snapshot_cpu": snapshot_cpu, "steady": steady,
            "steady_cpu": steady_cpu, "mb": size / 2**20}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--asks", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    tune_collector()  # as the scheduler command does
    print(f"{args.nodes} nodes, {args.asks} allocations, {args.rounds} rounds")
    runs = []
    for round_ in range(1, args.rounds + 1):
        result = run(args.nodes, args.asks)
        runs.append(result)
        print(f"  round {round_}: {result['mb']:.1f} MiB, right after the burst CPU {result['cold_cpu']:.2f} s "
              f"(snapshot {result['snapshot_cpu']:.2f} s; answer wall {result['cold']:.2f} s), "
              f"nothing changed since CPU {result['steady_cpu']:.2f} s", flush=True)
    print(f"  full state dump: CPU {median(r['cold_cpu'] for r in runs):.2f} s right after the burst "
          f"(snapshot {median(r['snapshot_cpu'] for r in runs):.2f} s), "
          f"{median(r['steady_cpu'] for r in runs):.2f} s once nothing changed since the last read (medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
