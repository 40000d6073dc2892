"""``/ws/v1/metrics``, the actor system's part: live actors per kind, the dispatchers' load, and the
constraints the shim warned pods it does not enforce (as the shim publishes them)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from actors.census import take_census
from rest.metrics import NAMESPACE, Family, MetricsInput, Provider

Unenforced = Callable[[], Mapping[str, int]]


def families(unenforced: Unenforced | None) -> Provider:
    """The provider of the actor system's families; ``unenforced`` reads the shim's counts (none without a shim)."""

    def provide(data: MetricsInput) -> Iterable[Family]:
        yield from _actor_families(unenforced() if unenforced is not None else {})

    return provide


def _actor_families(unenforced: Mapping[str, int]) -> Iterable[Family]:
    census = take_census()
    actors = Family(f"{NAMESPACE}_actors", "gauge", "Live actors by kind", ("kind",))
    for kind, count in sorted(census.actors.items()):
        actors.add([kind], count)
    yield actors
    label = ("dispatcher",)
    workers = Family(f"{NAMESPACE}_dispatcher_workers", "gauge", "Worker threads of a dispatcher", label)
    waiting = Family(f"{NAMESPACE}_dispatcher_run_queue", "gauge", "Actors with messages waiting for a worker", label)
    handled = Family(f"{NAMESPACE}_dispatcher_messages_total", "counter", "Messages a dispatcher's workers handled",
                     label)
    busy = Family(f"{NAMESPACE}_dispatcher_busy_seconds_total", "counter",
                  "Seconds a dispatcher's workers spent handling messages", label)
    for stats in census.dispatchers:
        workers.add([stats.name], stats.workers)
        waiting.add([stats.name], stats.run_queue)
        handled.add([stats.name], stats.messages)
        busy.add([stats.name], stats.busy_seconds)
    yield from (workers, waiting, handled, busy)
    ignored = Family(f"{NAMESPACE}_scheduler_unenforced_constraints_total", "counter",
                     "Pods that asked for a placement constraint the scheduler does not enforce (warned on the pod)",
                     ("constraint",))
    for constraint, total in sorted(unenforced.items()):
        ignored.add([constraint], total)
    yield ignored
