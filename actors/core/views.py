"""Building snapshots from a live partition (on its owning actor's thread)."""

from __future__ import annotations

from collections import Counter
from types import MappingProxyType

from actors.core import health
from actors.core.allocation import Allocation
from actors.core.application import Application
from actors.core.node import Node
from actors.core.queue import Queue
from actors.core.snapshot import (
    ALL_AREAS,
    APPLICATIONS,
    HEALTH,
    NODES,
    AllocationSnapshot,
    ApplicationSnapshot,
    AskSnapshot,
    NodeSnapshot,
    PartitionSnapshot,
    QueueSnapshot,
    SchedulingStats,
    percent,
)
from si.resources import Resource, total


def allocation_snapshot(a: Allocation) -> AllocationSnapshot:
    # The tags dict is never changed after the allocation is created: a read-only view suffices.
    return AllocationSnapshot(a.key, MappingProxyType(a.tags), a.request_time, a.allocation_time, a.resource,
                              a.priority, a.node_id, a.application_id, a.placeholder, a.task_group, a.foreign,
                              a.preemptable)


def ask_snapshot(a: Allocation) -> AskSnapshot:
    return AskSnapshot(a.key, MappingProxyType(dict(a.tags)), a.request_time, a.resource, a.priority,
                       a.required_node, a.application_id, a.placeholder, a.task_group, a.attempted, a.last_failure)


def application_snapshot(app: Application, shared: dict[str, AllocationSnapshot]) -> ApplicationSnapshot:
    return ApplicationSnapshot(
        app.application_id, app.partition, app.queue_path, app.user, app.groups, app.state, app.submission_time,
        app.finished_time, app.used, app.max_used, app.pending, tuple(ask_snapshot(a) for a in app.asks),
        tuple(_shared(a, shared) for a in app.allocations.values()), app.rejected_message,
        tuple(app.state_log), MappingProxyType(dict(app.tags)))


def _shared(allocation: Allocation, shared: dict[str, AllocationSnapshot]) -> AllocationSnapshot:
    """One snapshot per allocation, whether a node or an application lists it, kept from one partition
    snapshot to the next while the allocation is unchanged (so a snapshot pays only for what changed)."""
    found = shared.get(allocation.key)
    if (found is None or found.resource is not allocation.resource or found.node_id != allocation.node_id
            or found.allocation_time != allocation.allocation_time):
        found = shared[allocation.key] = allocation_snapshot(allocation)
    return found


def node_snapshot(node: Node, shared: dict[str, AllocationSnapshot]) -> NodeSnapshot:
    return NodeSnapshot(node.node_id, node.host_name, node.rack_name, MappingProxyType(dict(node.attributes)),
                        node.capacity, node.allocated, node.occupied, node.available,
                        percent(node.allocated + node.occupied, node.capacity),
                        tuple(_shared(a, shared) for a in node.allocations.values()),
                        tuple(_shared(a, shared) for a in node.foreign.values()), node.schedulable, False)


def queue_snapshot(queue: Queue, partition: str, preemption: bool) -> QueueSnapshot:
    template = None
    if queue.template is not None:
        template = MappingProxyType({"maxApplications": queue.template.max_applications or 0,
                                     "maxResource": queue.template.resources.max,
                                     "guaranteedResource": queue.template.resources.guaranteed,
                                     "properties": dict(queue.template.properties)})
    return QueueSnapshot(
        queue.path, queue.status, partition, queue.pending, queue.max, queue.guaranteed, queue.allocated,
        queue.headroom(), queue.leaf, queue.managed, MappingProxyType(dict(queue.properties)),
        queue.parent.path if queue.parent else "", template,
        tuple(queue_snapshot(c, partition, preemption) for _, c in sorted(queue.children.items())),
        queue.max_apps, queue.running_apps, queue.priority(), queue.sort_policy, queue.priority_sorting, preemption,
        MappingProxyType(percent(queue.allocated, queue.max) if queue.max is not None else {}),
        tuple(sorted(queue.apps)))


def _cached(cache: dict, kind: str, key: str, version: int, build):
    """The snapshot of an object that has not changed since it was last taken is reused."""
    entry = cache.get((kind, key))
    if entry is None or entry[0] != version:
        entry = cache[(kind, key)] = (version, build())
    return entry[1]


def _prune(cache: dict, kind: str, live) -> None:
    for key in [k for k in cache if k[0] == kind and k[1] not in live]:
        del cache[key]


def partition_snapshot(partition, stats: SchedulingStats, areas: frozenset[str] = ALL_AREAS) -> PartitionSnapshot:
    """The partition as readers see it; of the optional ``areas`` only those asked for are taken."""
    shared = partition.allocation_snapshots
    cache = partition.snapshot_cache
    nodes = apps = terminated = None
    if NODES in areas:
        nodes = tuple(_cached(cache, "node", n.node_id, n.version, lambda n=n: node_snapshot(n, shared))
                      for n in partition.nodes.values())
        _prune(cache, "node", partition.nodes)
    if APPLICATIONS in areas:
        def app_snapshot(a: Application) -> ApplicationSnapshot:
            return _cached(cache, "app", a.application_id, a.version, lambda: application_snapshot(a, shared))

        apps = tuple(map(app_snapshot, partition.apps.values()))
        terminated = tuple(map(app_snapshot, partition.terminated.values()))
        _prune(cache, "app", partition.apps.keys() | partition.terminated.keys())
    if len(shared) > 2 * sum(len(n.allocations) + len(n.foreign) for n in partition.nodes.values()) + 1000:
        partition.allocation_snapshots = {key: shared[key] for n in partition.nodes.values()
                                          for key in (*n.allocations, *n.foreign) if key in shared}
    live_apps = partition.apps.values()
    used = total(n.allocated + n.occupied for n in partition.nodes.values()) if partition.nodes else Resource()
    by_state = Counter(a.state for a in live_apps) + Counter(a.state for a in partition.terminated.values())
    config = partition.config
    return PartitionSnapshot(
        partition.name, partition.rm_id, "Active", partition.created, partition.total, used,
        percent(used, partition.total), config.node_sort_policy.type, dict(config.node_sort_policy.resource_weights),
        config.preemption.enabled, len(partition.nodes), sum(1 for n in partition.nodes.values() if n.schedulable),
        dict(by_state), len(partition.apps) + len(partition.terminated), sum(len(a.allocations) for a in live_apps),
        queue_snapshot(partition.queues.root, partition.name, config.preemption.enabled), apps, terminated, nodes,
        tuple(partition.placement.describe()), tuple(partition.usage.users()), tuple(partition.usage.groups()),
        health.check(partition) if HEALTH in areas else None, stats)
