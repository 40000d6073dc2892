"""What telling one actor per node or per application costs the core's scheduling loop, with thread
actors (a thread each) against pooled actors (a shared dispatcher's few threads).

The partition actor takes every decision; the shim's node and application actors learn them by
``tell``. This benchmark runs the real core (as ``core_throughput.py`` does) with nothing told, then
with one actor per application and one per node, each told once per scheduling batch of the
allocations that concern it, once as thread actors and once as pooled actors. It prints
allocations/s, the ratio to the run that tells nothing, and the process's thread count.
Run: ``python benchmarks/actor_fanout.py [--nodes 500,5000] [--asks 50000]``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import threading
from collections import defaultdict

from benchmarks_common import CONFIG, CountingCallback, clean_heap, feed

from actors.base import Actor, PooledActor, message, stop_all
from actors.core.scheduler import Scheduler
from actors.heap import tune_collector
from si import si_pb2


@message
class Learned:
    """Allocations placed on (or for) the receiving actor's object in one scheduling batch."""

    allocations: tuple[tuple[str, str], ...]  # (allocation key, node id)


class _Keeps:
    """The least a per-object actor would do: keep the allocations it was told of."""

    def __init__(self) -> None:
        super().__init__()
        self.allocations: dict[str, str] = {}

    def on_Learned(self, msg: Learned) -> int:
        self.allocations.update(msg.allocations)
        return len(self.allocations)


class Ledger(_Keeps, Actor):
    """On a thread of its own."""


class PooledLedger(_Keeps, PooledActor):
    """On the shared dispatcher."""


class TellingCallback(CountingCallback):
    """Counts allocations and, like a partition with per-object actors, tells each object's actor."""

    def __init__(self, expected: int, key, ledger: type) -> None:
        super().__init__(expected)
        self.key = key
        self.ledger = ledger
        self.ledgers: dict[str, object] = {}

    def update_allocation(self, response):
        grouped = defaultdict(list)
        for allocation in response.new:
            grouped[self.key(allocation)].append((allocation.allocationKey, allocation.nodeID))
        for owner, learned in grouped.items():
            ledger = self.ledgers.get(owner)
            if ledger is None:
                ledger = self.ledgers[owner] = self.ledger.start()
            ledger.tell(Learned(tuple(learned)))
        super().update_allocation(response)

    def drain(self) -> int:
        """Wait until every actor has taken in what it was told; the number of allocations they hold."""
        return sum(f.get() for f in [ref.ask(Learned(()), block=False) for ref in self.ledgers.values()])


def _by_app(allocation):
    return allocation.applicationID


def _by_node(allocation):
    return allocation.nodeID


VARIANTS = {
    "none": (None, None),
    "app, threads": (_by_app, Ledger),
    "app, pooled": (_by_app, PooledLedger),
    "node, threads": (_by_node, Ledger),
    "node, pooled": (_by_node, PooledLedger),
}


def run(nodes: int, asks: int, variant: str) -> dict:
    clean_heap()
    key, ledger = VARIANTS[variant]
    callback = CountingCallback(asks) if key is None else TellingCallback(asks, key, ledger)
    scheduler = Scheduler(tick_interval=1.0)
    scheduler.register(si_pb2.RegisterResourceManagerRequest(rmID="bench", config=CONFIG), callback)
    first = feed(scheduler, nodes, asks)
    if not callback.done.wait(600):
        raise SystemExit(f"only {callback.count} of {asks} allocations after 600 s")
    elapsed = callback.last - first
    actors, threads = 0, threading.active_count()
    if key is not None:
        learned = callback.drain()
        if learned != asks:
            raise SystemExit(f"the {variant} actors hold {learned} allocations, not {asks}")
        actors = len(callback.ledgers)
    scheduler.stop()
    stop_all()
    return {"rate": asks / elapsed, "actors": actors, "threads": threads}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,5000")
    parser.add_argument("--asks", type=int, default=50_000)
    args = parser.parse_args(argv)
    tune_collector()  # as the scheduler command does
    print(f"{'nodes':>6} {'told':>14} {'actors':>7} {'threads':>7} {'allocs/s':>9} {'ratio':>6}")
    for nodes in (int(n) for n in args.nodes.split(",")):
        base = None
        for variant in VARIANTS:
            r = run(nodes, args.asks, variant)
            base = base or r["rate"]
            print(f"{nodes:>6} {variant:>14} {r['actors']:>7} {r['threads']:>7} {r['rate']:>9.0f} "
                  f"{r['rate'] / base:>6.2f}", flush=True)
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
