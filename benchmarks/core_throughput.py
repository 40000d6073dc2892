"""Core scheduling throughput: allocations/s from first ask to last allocation, at several cluster sizes.

SI messages go straight into the core (no Kubernetes): register N nodes, 100 applications over 10
queues, 50,000 asks; the figure is asks placed per second, with the mean batch time and peak RSS.
With ``--constrained F`` each size runs twice with the shim's predicates, the second time with a fraction F of the asks
carrying a required anti-affinity on the zone (groups of 10) or, every other one, a DoNotSchedule spread
over the 10 zones (groups of 100), and prints the ratio to the unconstrained run.
Run: ``python benchmarks/core_throughput.py [--nodes 500,2000,5000] [--asks 50000] [--constrained 0.2]``.
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
from actors.shim.predicates import KubernetesPredicates
from si import si_pb2


def constrained_tags(fraction: float):
    """The asks' tags: a fraction with zone anti-affinity or zone spread, as the shim writes them."""
    from actors.shim import constraints
    from actors.shim.keys import TAG_CONSTRAINTS
    from si.constants import TAG_LABEL_PREFIX, TAG_NAMESPACE

    every = round(1 / fraction)
    zone = "topology.kubernetes.io/zone"

    def tags(app: int, i: int) -> dict:
        index = app * 1_000_000 + i
        if index % every:
            return {TAG_NAMESPACE: "default"}
        nth = index // every
        if nth % 2 == 0:
            labels = {"anti": f"a{app}-{nth // 2 // 10}"}
            spec = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": zone}]}}}
        else:
            labels = {"spread": f"s{app}-{nth // 2 // 100}"}
            spec = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": zone,
                                                   "whenUnsatisfiable": "DoNotSchedule",
                                                   "labelSelector": {"matchLabels": labels}}]}
        return {TAG_NAMESPACE: "default", TAG_CONSTRAINTS: constraints.encode(spec, "default", labels),
                **{TAG_LABEL_PREFIX + k: v for k, v in labels.items()}}
    return tags


def run(nodes: int, asks: int, constrained: float = 0.0, predicates=None) -> dict:
    clean_heap()
    callback = CountingCallback(asks)
    scheduler = Scheduler(tick_interval=1.0, predicates=predicates)
    scheduler.register(si_pb2.RegisterResourceManagerRequest(rmID="bench", config=CONFIG), callback)
    began = time.perf_counter()
    first = feed(scheduler, nodes, asks, constrained_tags(constrained) if constrained else None)
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
    parser.add_argument("--constrained", type=float, default=0.0,
                        help="fraction of asks with zone anti-affinity or zone spread (runs each size twice)")
    args = parser.parse_args(argv)
    tune_collector()  # as the scheduler command does
    print(f"{'nodes':>6} {'asks':>7} {'setup s':>8} {'alloc s':>8} {'allocs/s':>9} {'us/alloc':>9} {'snapshot s':>10}")
    for nodes in (int(n) for n in args.nodes.split(",")):
        rates = []
        for constrained in ((0.0, args.constrained) if args.constrained else (0.0,)):
            r = run(nodes, args.asks, constrained, KubernetesPredicates() if args.constrained else None)
            rates.append(r["rate"])
            print(f"{r['nodes']:>6} {r['asks']:>7} {r['setup_s']:>8.2f} {r['elapsed_s']:>8.2f} {r['rate']:>9.0f} "
                  f"{r['us_per_alloc']:>9.1f} {r['snapshot_s']:>10.2f}", flush=True)
        if args.constrained:
            print(f"{nodes} nodes, {args.constrained:.0%} constrained: {rates[1]:.0f} allocs/s beside {rates[0]:.0f} "
                  f"unconstrained: ratio {rates[1] / rates[0]:.2f}", flush=True)
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
