"""``/ws/v1/metrics``: Prometheus figures derived from a core snapshot at scrape time.

The core keeps cumulative counters in its snapshots (no metrics library in the hot path); this
collector turns them into YuniKorn's metric names when Prometheus asks.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from actors.core.snapshot import CoreSnapshot


class SnapshotCollector:
    def __init__(self, snapshot: CoreSnapshot, events_created: int) -> None:
        self._snapshot = snapshot
        self._events_created = events_created

    def collect(self):
        snapshot = self._snapshot
        attempts = CounterMetricFamily("yunikorn_scheduler_container_allocation_attempt",
                                       "Allocation attempts by result", labels=["state"])
        apps = GaugeMetricFamily("yunikorn_scheduler_application", "Applications by state", labels=["state"])
        nodes = GaugeMetricFamily("yunikorn_scheduler_node", "Nodes by state", labels=["state"])
        queue = GaugeMetricFamily("yunikorn_queue_resource", "Queue resources by state",
                                  labels=["queue", "state", "resource"])
        running = GaugeMetricFamily("yunikorn_queue_app", "Running applications per queue", labels=["queue", "state"])
        events = CounterMetricFamily("yunikorn_event_total_created", "Events created by the core")
        latency = HistogramMetricFamily("yunikorn_scheduler_scheduling_cycle_seconds",
                                        "Time of one scheduling batch", labels=["partition"])
        totals = {"allocated": 0, "waiting": 0, "rejected": 0}
        for partition in snapshot.partitions:
            stats = partition.scheduling
            totals["allocated"] += stats.allocations
            totals["waiting"] += stats.waiting_reasons
            totals["rejected"] += stats.rejected
            for state, count in partition.applications_by_state.items():
                apps.add_metric([state], count)
            schedulable = partition.schedulable_nodes
            nodes.add_metric(["active"], schedulable)
            nodes.add_metric(["draining"], partition.total_nodes - schedulable)
            stack = [partition.root_queue]
            while stack:
                q = stack.pop()
                stack.extend(q.children)
                running.add_metric([q.queue_name, "running"], q.running_apps)
                for state, value in (("allocated", q.allocated_resource), ("pending", q.pending_resource),
                                     ("max", q.max_resource), ("guaranteed", q.guaranteed_resource)):
                    for name, amount in (value or {}).items():
                        queue.add_metric([q.queue_name, state, name], amount)
            buckets = [(str(bound), count) for bound, count in stats.cycle_buckets] + [("+Inf", stats.cycles)]
            latency.add_metric([partition.name], buckets, stats.seconds)
        for state, count in totals.items():
            attempts.add_metric([state], count)
        events.add_metric([], self._events_created)
        yield from (attempts, apps, nodes, queue, running, latency, events)


def render(snapshot: CoreSnapshot, events_created: int) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snapshot, events_created))
    return generate_latest(registry)
