"""``/ws/v1/metrics``, the actor system's part: live actors per kind and the dispatchers' load."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from actors.census import ActorCensus


class CensusCollector:
    def __init__(self, census: ActorCensus) -> None:
        self._census = census

    def collect(self):
        actors = GaugeMetricFamily("yunikorn_actors", "Live actors by kind", labels=["kind"])
        for kind, count in sorted(self._census.actors.items()):
            actors.add_metric([kind], count)
        workers = GaugeMetricFamily("yunikorn_dispatcher_workers", "Worker threads of a dispatcher",
                                    labels=["dispatcher"])
        waiting = GaugeMetricFamily("yunikorn_dispatcher_run_queue", "Actors with messages waiting for a worker",
                                    labels=["dispatcher"])
        handled = CounterMetricFamily("yunikorn_dispatcher_messages", "Messages handled by a dispatcher's workers",
                                      labels=["dispatcher"])
        busy = CounterMetricFamily("yunikorn_dispatcher_busy_seconds", "Seconds a dispatcher's workers spent "
                                   "handling messages", labels=["dispatcher"])
        for stats in self._census.dispatchers:
            workers.add_metric([stats.name], stats.workers)
            waiting.add_metric([stats.name], stats.run_queue)
            handled.add_metric([stats.name], stats.messages)
            busy.add_metric([stats.name], stats.busy_seconds)
        yield from (actors, workers, waiting, handled, busy)


def render(census: ActorCensus) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CensusCollector(census))
    return generate_latest(registry)
