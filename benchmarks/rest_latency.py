"""REST under load: full state dump time, requests/s of /nodes and /queues while the core allocates,
and the core's allocation rate with and without that load.

The core is fed SI messages directly (as in core_throughput.py); the REST server runs in the same
process, as it does in the scheduler. The clients run in processes of their own, as real clients do, so
the figures measure what serving costs the scheduler, not what reading does.
Two loads: dashboards (four clients per path polling every second, out of step) and a stress (one client
per path asking back to back; on this 2-core machine those clients take CPU from the scheduler themselves).
Upstream's web UI reads once per page it opens, with no timer: eight screens refreshed every second is
more than people at it ask for, and the figure is the cost of each read.
Readers take at most ``--read-share`` of the core's time (the command's ``--rest-read-share``): a read
beyond it waits for the next snapshot. Each line gives the share the core's snapshots took of the
scheduler process's CPU, and how long the reads of ``/nodes`` took to answer.
Run: ``python benchmarks/rest_latency.py [--nodes 5000 --asks 50000 --rounds 3]``; with ``--read-share 1``,
reads unbounded; with ``--render``, only the CPU of a read of ``/nodes`` (the core's rendering and the
answer's pieces) when every node gained an allocation since the last poll, as under those loads.
"""

from __future__ import annotations

import argparse
import copy
import http.client
import multiprocessing
import sys
import time
from statistics import median

from benchmarks_common import (
    CONFIG,
    CountingCallback,
    add_cpu_affinity,
    clean_heap,
    cpus_described,
    feed,
    on_every_cpu,
    scheduler_cpus,
)

from actors.base import stop_all
from actors.core.readbudget import DEFAULT_SHARE, ReadBudget, share_argument
from actors.core.scheduler import Scheduler
from actors.core.snapshot import NODES_JSON
from actors.core.views import partition_snapshot
from actors.heap import tune_collector
from rest.app import SchedulerView
from rest.fragments import array_pieces
from rest.server import RestServer


def load(port: int, path: str, interval: float, offset: float, ready, go, stop, served, waited) -> None:
    """One client process: counts itself ``ready``, then once ``go`` is set and ``offset`` seconds more
    passed GETs ``path`` every ``interval`` seconds (0: back to back) until ``stop``; ``served`` counts
    200 answers, ``waited`` adds up the seconds they took. Dashboards opened by different people do not
    poll in step: their offsets spread them over the interval."""
    with ready.get_lock():
        ready.value += 1
    go.wait()
    if stop.wait(offset):
        return
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while not stop.wait(interval) if interval else not stop.is_set():
        began = time.perf_counter()
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        if response.status == 200:
            with served.get_lock():
                served.value += 1
            with waited.get_lock():
                waited.value += time.perf_counter() - began
        if response.will_close:
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)


PATHS = ("/ws/v1/partition/default/nodes", "/ws/v1/partition/default/queues")


def dump_seconds(port: int) -> tuple[float, float, int]:
    """Seconds to fetch the full state dump, and the CPU seconds this process (the scheduler, idle, and
    the reading client) spent meanwhile: on a loaded machine the wall time is mostly waiting."""
    began, cpu_began = time.perf_counter(), time.process_time()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.request("GET", "/ws/v1/fullstatedump")
    body = connection.getresponse().read()
    return time.perf_counter() - began, time.process_time() - cpu_began, len(body)


def registered(asks: int, read_share: float = DEFAULT_SHARE) -> tuple[Scheduler, CountingCallback]:
    """A scheduler registered with the benchmark's queues, its readers held to ``read_share`` of its time,
    on a clean heap, and its resource manager's callback, done once ``asks`` allocations arrived."""
    clean_heap()
    from si import si_pb2

    callback = CountingCallback(asks)
    scheduler = Scheduler(tick_interval=1.0, read_budget=ReadBudget(read_share))
    scheduler.register(si_pb2.RegisterResourceManagerRequest(rmID="bench", config=CONFIG), callback)
    return scheduler, callback


def run(nodes: int, asks: int, clients: int = 0, interval: float = 0.0, cpu_affinity: str = "one",
        read_share: float = DEFAULT_SHARE) -> dict:
    """Allocate ``asks`` while ``clients`` processes per path poll /nodes and /queues every ``interval``;
    the scheduler's threads kept as ``--cpu-affinity`` says (see ``benchmarks_common.scheduler_cpus``)."""
    with scheduler_cpus(cpu_affinity):
        return _run(nodes, asks, clients, interval, read_share)


def _run(nodes: int, asks: int, clients: int, interval: float, read_share: float) -> dict:
    scheduler, callback = registered(asks, read_share)
    view = SchedulerView(scheduler)
    server = RestServer(view, host="127.0.0.1", port=0)
    context = multiprocessing.get_context("spawn")  # the scheduler's threads are running: never fork them
    ready, go, stop = context.Value("l", 0), context.Event(), context.Event()
    counters = {path: context.Value("l", 0) for path in PATHS}
    waits = {path: context.Value("d", 0.0) for path in PATHS}
    spread = [interval * i / (clients * len(PATHS)) for i in range(clients * len(PATHS))]
    loaders = [context.Process(target=load, args=(server.port, path, interval, spread[i * len(PATHS) + p], ready, go,
                                                  stop, counters[path], waits[path]), daemon=True)
               for p, path in enumerate(PATHS) for i in range(clients)]
    for loader in loaders:  # started (and their imports done) before the measured allocation begins
        loader.start()
        on_every_cpu(loader.pid)
    while ready.value < len(loaders):
        time.sleep(0.05)
    first = feed(scheduler, nodes, asks)
    cpu_began = time.process_time()
    go.set()
    if not callback.done.wait(900):
        raise SystemExit(f"only {callback.count} of {asks} allocations")
    elapsed = callback.last - first
    cpu = time.process_time() - cpu_began
    reads = scheduler.read_seconds
    stop.set()
    for loader in loaders:
        loader.join(60)
    # Dumps of the final state through the same server: the first right after the burst (everything
    # changed since the last read, if any), the second with nothing changed since (the same snapshot).
    cold, cold_cpu, size = dump_seconds(server.port)
    steady, steady_cpu, _ = dump_seconds(server.port)
    server.stop()
    scheduler.stop()
    stop_all()
    return {"rate": asks / elapsed, "cpu_rate": asks / cpu, "cpu": cpu, "cold": cold, "steady": steady, "cold_cpu": cold_cpu,
            "steady_cpu": steady_cpu, "mb": size / 2**20, "reads": reads / cpu,
            "rps": {path: counter.value / elapsed for path, counter in counters.items()},
            "answer": {path: waits[path].value / counters[path].value if counters[path].value else 0.0
                       for path in PATHS}}


def render_seconds(nodes: int, asks: int, polls: int = 8) -> float:
    """CPU seconds (median of ``polls``) a read of ``/nodes`` costs the scheduler when every node gained an
    allocation since the last one (a copy of its first under a new key): the core's rendering of the
    changed nodes' JSON into a snapshot, and the answer's pieces put together from it."""
    scheduler, callback = registered(asks)
    feed(scheduler, nodes, asks)
    if not callback.done.wait(900):
        raise SystemExit(f"only {callback.count} of {asks} allocations")
    scheduler.settle()
    partition = scheduler._core.proxy().partitions.get()["default"].proxy().partition.get()  # read once stopped
    scheduler.stop()
    stop_all()
    areas, seconds = frozenset({NODES_JSON}), []
    array_pieces(partition_snapshot(partition, areas).nodes_json)
    for poll in range(polls):
        for node in partition.nodes.values():
            if node.allocations:
                added = copy.copy(next(iter(node.allocations.values())))
                added.key, added.picture, added.json = f"{node.node_id}-{poll}", None, None
                node.place(added)
        began = time.process_time()
        array_pieces(partition_snapshot(partition, areas).nodes_json)
        seconds.append(time.process_time() - began)
    return median(seconds)


LOADS = (("dashboards (4 per path, every 1 s)", 4, 1.0), ("stress (1 per path, back to back)", 1, 0.0))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--asks", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3, help="each load against its own quiet run; medians")
    parser.add_argument("--load", choices=("dashboards", "stress", "both"), default="both")
    parser.add_argument("--render", action="store_true", help="only the CPU of a read of /nodes, every node changed")
    parser.add_argument("--read-share", type=share_argument, default=DEFAULT_SHARE,
                        help=f"the share of the core's time its readers may take (default {DEFAULT_SHARE}; 1: unbounded)")
    add_cpu_affinity(parser)
    args = parser.parse_args(argv)
    tune_collector()  # as the scheduler command does
    if args.render:
        print(f"/nodes of {args.nodes} nodes ({args.asks} allocations), every node one allocation more since the "
              f"last poll: {1000 * render_seconds(args.nodes, args.asks):.1f} ms of CPU to render (median)")
        return 0
    loads = [entry for entry in LOADS if args.load in ("both", entry[0].split()[0])]
    print(f"{args.nodes} nodes, {args.asks} allocations, {args.rounds} rounds; every read sees the core as it is, "
          f"readers held to {args.read_share:g} of its time; {cpus_described(args.cpu_affinity)}")
    quiet_runs, ratios, cpu_ratios, loaded_runs = [], {}, {}, {}
    for round_ in range(1, args.rounds + 1):
        # A burst lasts seconds, so each load is set against a quiet run of the same round.
        quiet = run(args.nodes, args.asks, cpu_affinity=args.cpu_affinity, read_share=args.read_share)
        quiet_runs.append(quiet)
        line = f"  round {round_}: without load {quiet['rate']:6.0f} allocations/s"
        for label, clients, interval in loads:
            loaded = run(args.nodes, args.asks, clients, interval, args.cpu_affinity, args.read_share)
            loaded_runs.setdefault(label, []).append(loaded)
            ratios.setdefault(label, []).append(loaded["rate"] / quiet["rate"])
            cpu_ratios.setdefault(label, []).append(loaded["cpu_rate"] / quiet["cpu_rate"])
            line += (f"; {label.split()[0]} {loaded['rate']:6.0f} (ratio {ratios[label][-1]:.2f}; CPU {loaded['cpu']:.2f} s"
                     f" against {quiet['cpu']:.2f} s, {cpu_ratios[label][-1]:.2f}; snapshots {loaded['reads']:.1%} of it)")
        print(line, flush=True)
    print(f"  without REST load: {median(r['rate'] for r in quiet_runs):6.0f} allocations/s (median)")
    for label, *_ in loads:
        rps = {path: median(r["rps"][path] for r in loaded_runs[label]) for path in PATHS}
        print(f"  with {label}: ratio {median(ratios[label]):.2f} (median; {min(ratios[label]):.2f} to "
              f"{max(ratios[label]):.2f}); per CPU second of the scheduler process {median(cpu_ratios[label]):.2f}")
        answer = {path: median(r["answer"][path] for r in loaded_runs[label]) for path in PATHS}
        print("    " + ", ".join(f"{path.rsplit('/', 1)[-1]} {v:.1f} requests/s" for path, v in rps.items())
              + "; answered in " + ", ".join(f"{1000 * v:.0f} ms" for v in answer.values()) + " on average (medians)"
              + f"; the core's snapshots took {median(r['reads'] for r in loaded_runs[label]):.1%} of the "
              "scheduler process's CPU (median)")
    # The dumps of the runs without load, nothing read before them.
    print(f"  full state dump ({quiet_runs[0]['mb']:.1f} MiB): {median(r['cold'] for r in quiet_runs):.2f} s "
          f"(CPU {median(r['cold_cpu'] for r in quiet_runs):.2f} s) right after the burst, "
          f"{median(r['steady'] for r in quiet_runs):.2f} s (CPU {median(r['steady_cpu'] for r in quiet_runs):.2f} s) "
          f"once nothing changed since the last read (medians)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
