"""Building snapshots from a live partition (on its owning actor's thread)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from itertools import chain, compress, count
from operator import attrgetter, itemgetter, ne
from types import MappingProxyType

from actors.core import application as states
from actors.core import health
from actors.core.allocation import Allocation
from actors.core.application import Application
from actors.core.node import Node
from actors.core.nodejson import NodeJson
from actors.core.queue import Queue
from actors.core.snapshot import (
    ALL_AREAS,
    APPLICATIONS,
    HEALTH,
    METRICS,
    NODES,
    NODES_JSON,
    SUMMARY,
    AllocationSnapshot,
    ApplicationSnapshot,
    AskSnapshot,
    NodeSnapshot,
    PartitionSnapshot,
    PlaceholderSnapshot,
    QueueSnapshot,
    abs_used_capacity,
    percent,
    utilized,
)
from si.resources import Resource, min_limit, remaining, total

RUNNING_STATES = (states.RUNNING, states.STARTING)  # Starting (stateaware) is running to upstream


def ask_snapshot(a: Allocation) -> AskSnapshot:
    log = tuple((reason, when, count) for reason, (when, count) in a.failure_log.items()) if a.failure_log else ()
    return AskSnapshot(a.key, MappingProxyType(dict(a.tags)), a.request_time, a.resource, a.priority,
                       a.required_node, a.application_id, a.placeholder, a.task_group, a.attempted, a.last_failure,
                       a.originator, a.scale_up_triggered, log, a.triggered_preemption)


def application_snapshot(app: Application) -> ApplicationSnapshot:
    return ApplicationSnapshot(
        app.application_id, app.partition, app.queue_path, app.user, app.groups, app.state, app.submission_time,
        app.finished_time, app.used, app.max_used, app.pending, tuple(ask_snapshot(a) for a in app.asks),
        _pictured(app.allocations.values()), app.rejected_message,
        tuple(app.state_log), MappingProxyType(dict(app.tags)),
        tuple(PlaceholderSnapshot(d.task_group, d.count, d.min_resource, d.replaced, d.timed_out)
              for d in app.placeholders.values()),
        tuple(a.key for a in app.asks if a.reserved is not None or a.preempting is not None), app.backoff_until)


_NO_TAGS = MappingProxyType({})
_PICTURE = attrgetter("picture")


def _picture(a: Allocation, _new=tuple.__new__) -> AllocationSnapshot:
    """A new snapshot of ``a``, kept as its picture until it changes. Built inline as the tuple it is
    (without the generated constructor's call): after a burst a snapshot builds 100,000. The tags dict is
    never changed after the allocation is created: a read-only view of it suffices."""
    picture = a.picture = _new(AllocationSnapshot, (
        a.key, MappingProxyType(a.tags) if a.tags else _NO_TAGS, a.request_time, a.allocation_time,
        a.resource, a.priority, a.node_id, a.application_id, a.placeholder, a.task_group, a.foreign,
        a.preemptable, a.originator, a.placeholder_used, a.preempted))
    return picture


def _pictured(allocations: Collection[Allocation]) -> tuple[AllocationSnapshot, ...]:
    """One snapshot per allocation, whether a node or an application lists it, kept with the allocation
    from one partition snapshot to the next while it is unchanged (so a snapshot pays only for what
    changed): the kept ones are taken and checked in C, only the new or changed ones built."""
    pictures = tuple(map(_PICTURE, allocations))
    if None not in pictures:
        return pictures
    return tuple(a.picture or _picture(a) for a in allocations)


def node_snapshot(node: Node, attributes: dict[str, tuple[dict, Mapping[str, str]]] | None = None) -> NodeSnapshot:
    """``attributes``: by node, the attributes dict last pictured and its read-only copy, reused while the
    node holds the same dict (it replaces it whole when its attributes change, never edits it)."""
    capacity, allocated, occupied = node.capacity, node.allocated, node.occupied
    kept = attributes.get(node.node_id) if attributes is not None else None
    if kept is None or kept[0] is not node.attributes:
        kept = (node.attributes, MappingProxyType(dict(node.attributes)))
        if attributes is not None:
            attributes[node.node_id] = kept
    return NodeSnapshot(node.node_id, node.host_name, node.rack_name, kept[1], capacity, allocated, occupied,
                        capacity - allocated - occupied if occupied else capacity - allocated,
                        utilized(capacity, allocated), _pictured(node.allocations.values()),
                        _pictured(node.foreign.values()) if node.foreign else (), node.schedulable,
                        bool(node.held_by), (node.held_by,) if node.held_by else ())


def queue_snapshot(queue: Queue, partition: str, preemption: bool, cluster: Resource,
                   metrics: bool = False, cluster_free: Resource | None = None) -> QueueSnapshot:
    """The queue and its subtree. As upstream, the root's maximum is the partition's capacity
    (``cluster``), which every queue's headroom shows too; scheduling needs no such limit (an ask
    larger than the cluster finds no node anyway)."""
    template = None
    if queue.template is not None:
        template = MappingProxyType({"maxApplications": queue.template.max_applications or 0,
                                     "maxResource": queue.template.resources.max,
                                     "guaranteedResource": queue.template.resources.guaranteed,
                                     "properties": dict(queue.template.properties)})
    maximum = cluster if queue.parent is None else queue.max
    if cluster_free is None:  # the root: what the cluster has left
        cluster_free = remaining(cluster, queue.allocated)
    headroom = min_limit(queue.headroom(), cluster_free)
    app_states = None
    if metrics:
        app_states = {}
        for app in queue.apps.values():
            app_states[app.state] = app_states.get(app.state, 0) + 1
    return QueueSnapshot(
        queue.path, queue.status, partition, queue.pending, maximum, queue.guaranteed, queue.allocated,
        headroom, queue.leaf, queue.managed, MappingProxyType(dict(queue.properties)),
        queue.parent.path if queue.parent else "", template,
        tuple(queue_snapshot(c, partition, preemption, cluster, metrics, cluster_free)
              for _, c in sorted(queue.children.items())),
        queue.max_apps, queue.running_apps, queue.priority(), queue.sort_policy, queue.priority_sorting, preemption,
        MappingProxyType(abs_used_capacity(maximum, queue.allocated)), tuple(sorted(queue.apps)),
        MappingProxyType(dict(queue.containers)), MappingProxyType(dict(queue.app_totals)),
        MappingProxyType(app_states) if app_states is not None else None, queue.preempting,
        queue.preemption_policy == "fence", queue.preemption_delay, queue.quota_preemption_delay)


def running_applications(partition) -> int:
    return sum(1 for a in partition.apps.values() if a.state in RUNNING_STATES)


def node_usage(nodes) -> dict[str, tuple[int, ...]]:
    """Nodes per tenth of allocated capacity, by resource type: upstream's node usage buckets
    ``[0,10%]``, ``(10%,20%]`` ... ``(90%,100%]`` (allocated only; what other schedulers' pods occupy
    does not count, as upstream)."""
    counts: dict[str, list[int]] = {}
    for node in nodes:
        allocated = node.allocated
        for name, capacity in node.capacity.items():
            if capacity > 0:
                index = min(max(math.ceil(allocated.get(name, 0) / capacity * 10) - 1, 0), 9)
                counts.setdefault(name, [0] * 10)[index] += 1
    return {name: tuple(buckets) for name, buckets in counts.items()}


class _Built:
    """What was built from each object of an ordered collection (the partition's nodes, its applications),
    kept with the object and its version: a later update rebuilds only the objects whose version changed.

    The comparisons run in C (``map``, ``compress``): a snapshot of thousands of unchanged nodes costs
    microseconds, where a Python loop over them would cost milliseconds, each time a reader polls."""

    __slots__ = ("objects", "versions", "built")

    def __init__(self) -> None:
        self.objects: list = []
        self.versions: list[int] = []
        self.built: list = []

    def update(self, objects: list, build: Callable) -> list[int] | None:
        """Brings ``built`` up to ``objects``; the positions rebuilt, or None when the objects are not the
        same ones in the same order as before (then each is looked up by identity)."""
        versions = list(map(_VERSION, objects))
        if objects == self.objects:  # the same objects (none has an __eq__ of its own): compared by identity
            changed = list(compress(count(), map(ne, versions, self.versions)))
            built = self.built
            for index in changed:
                built[index] = build(objects[index])
            self.versions = versions
            return changed
        # self.objects keeps alive the objects whose ids are taken here
        previous = dict(zip(map(id, self.objects), zip(self.versions, self.built, strict=True), strict=True))
        built = []
        for obj, version in zip(objects, versions, strict=True):
            found = previous.get(id(obj))
            built.append(found[1] if found is not None and found[0] == version else build(obj))
        self.objects, self.versions, self.built = objects, versions, built
        return None


_VERSION = attrgetter("version")
_TYPES = itemgetter(3)


class _NodeTotals:
    """Per node what the partition's summary adds up (schedulable, allocated + occupied),
    and the partition's used capacity kept up to date from the nodes that changed.

    The used capacity is the one ``total`` gives over all nodes, its types in the order they first
    appear: a node whose types (or their order) changed, an added or removed node, makes it summed anew."""

    __slots__ = ("built", "used")

    def __init__(self) -> None:
        self.built = _Built()
        self.used: dict[str, int] = {}

    @staticmethod
    def _of(node: Node) -> tuple:
        allocated, occupied = node.allocated, node.occupied
        return (node.schedulable, allocated, occupied,
                (*allocated.keys(), None, *occupied.keys()))  # the types, compared in C (_same_types)

    def update(self, nodes: list[Node]) -> None:
        before = self.built.built.copy()
        changed = self.built.update(nodes, self._of)
        if changed is None or not self._same_types(before, changed):
            self.used = dict(total(chain.from_iterable((n[1], n[2]) for n in self.built.built)).items())
            return
        used = self.used
        for index in changed:
            _, allocated, occupied, _ = before[index]
            for name, value in chain(allocated.items(), occupied.items()):
                used[name] -= value
            _, allocated, occupied, _ = self.built.built[index]
            for name, value in chain(allocated.items(), occupied.items()):
                used[name] += value

    def _same_types(self, before: list, changed: list[int]) -> bool:
        return (list(map(_TYPES, map(before.__getitem__, changed)))
                == list(map(_TYPES, map(self.built.built.__getitem__, changed))))

    def schedulable(self) -> int:
        return sum(map(itemgetter(0), self.built.built))


class _Pictures:
    """A partition's snapshot parts kept for the next snapshot (only its owning actor's thread uses them)."""

    __slots__ = ("totals", "nodes", "attributes", "apps", "terminated", "json", "node_json")

    def __init__(self) -> None:
        self.totals = _NodeTotals()
        self.nodes = _Built()
        self.json = _Built()  # each node's JSON (NODES_JSON)
        self.node_json = NodeJson(_picture)
        self.attributes: dict[str, tuple[dict, Mapping[str, str]]] = {}  # see node_snapshot
        self.apps = _Built()
        self.terminated = _Built()


def _pictures(partition) -> _Pictures:
    if partition.snapshot_pictures is None:
        partition.snapshot_pictures = _Pictures()
    return partition.snapshot_pictures


def partition_snapshot(partition, areas: frozenset[str] = ALL_AREAS) -> PartitionSnapshot:
    """The partition as readers see it; of the optional ``areas`` only those asked for are taken. Only
    the nodes and applications that changed since the last snapshot are pictured again."""
    pictures = _pictures(partition)
    all_nodes = list(partition.nodes.values())
    totals = pictures.totals
    if SUMMARY in areas:  # else the nodes that changed are added up when a reader next asks for it
        totals.update(all_nodes)
    nodes = apps = terminated = None
    if NODES in areas:
        attributes = pictures.attributes
        if len(attributes) > 2 * len(all_nodes) + 1000:  # nodes gone
            pictures.attributes = attributes = {n.node_id: attributes[n.node_id] for n in all_nodes
                                                if n.node_id in attributes}
        pictures.nodes.update(all_nodes, lambda n: node_snapshot(n, attributes))
        nodes = tuple(pictures.nodes.built)
    nodes_json = None
    if NODES_JSON in areas:
        node_json = pictures.node_json
        if pictures.json.update(all_nodes, node_json.render) is None:  # nodes added or removed
            node_json.prune(partition.nodes)
        nodes_json = tuple(pictures.json.built)
    if APPLICATIONS in areas:
        pictures.apps.update(list(partition.apps.values()), application_snapshot)
        pictures.terminated.update(list(partition.terminated.values()), application_snapshot)
        apps, terminated = tuple(pictures.apps.built), tuple(pictures.terminated.built)
    live_apps = partition.apps.values()
    containers = sum(len(a.allocations) for a in live_apps)
    used = Resource(totals.used) if SUMMARY in areas else None
    by_state = (Counter(a.state for a in live_apps) + Counter(a.state for a in partition.terminated.values())
                + partition.retired)
    config = partition.config
    findings = report = None
    if HEALTH in areas:
        findings = health.findings(partition)
        counters = partition.stats.counters
        report = health.report((findings,), counters["errors"], counters["nodes_failed"])
    metrics = METRICS in areas
    # A partition is Active from its start; the core never drains or stops one (removing a partition
    # from the configuration is refused while it runs).
    return PartitionSnapshot(
        partition.name, partition.rm_id, "Active", partition.created, partition.total, used,
        percent(used, partition.total) if used is not None else None, config.node_sort_policy.type,
        dict(config.node_sort_policy.resource_weights), config.preemption.enabled,
        config.preemption.quota_preemption_enabled, len(partition.nodes),
        totals.schedulable() if used is not None else None, dict(by_state), sum(by_state.values()), containers,
        queue_snapshot(partition.queues.root, partition.name, config.preemption.enabled, partition.total, metrics),
        apps, terminated, nodes, tuple(partition.placement.describe()), tuple(partition.usage.users()),
        tuple(partition.usage.groups()), report, findings, partition.stats.snapshot(),
        sum(1 for a in live_apps if a.state in RUNNING_STATES),
        node_usage(partition.nodes.values()) if metrics else None, nodes_json)
