"""Health checks: upstream's seven checks, over every partition.

Names, descriptions and the order of the entries are upstream's (``health_checker.go``): "Scheduling
errors" and "Failed nodes" read the core's counters; "Negative resources" (partitions, nodes), four
"Consistency of data" entries, "Reservation check" and the two orphan allocation checks read the
partitions. Each partition gathers its findings on its own thread (:func:`findings`); the core joins
them into one report (:func:`report`), periodically every ``health.checkInterval`` and for readers.

A partition's findings also cover what upstream's data structures cannot get wrong but ours could:
a node's allocated (occupied) resource must be the sum of its (foreign) allocations, and queues and
applications must not go negative.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from operator import attrgetter

from actors.base import record
from actors.core.snapshot import HealthCheck, HealthReport
from si.resources import total

SCHEDULING_ERRORS = "Scheduling errors"
FAILED_NODES = "Failed nodes"
NEGATIVE = "Negative resources"
CONSISTENCY = "Consistency of data"
RESERVATIONS = "Reservation check"
ORPHANS_ON_NODE = "Orphan allocation on node check"
ORPHANS_ON_APP = "Orphan allocation on app check"
CHECK_NAMES = (SCHEDULING_ERRORS, FAILED_NODES, NEGATIVE, CONSISTENCY, RESERVATIONS, ORPHANS_ON_NODE,
               ORPHANS_ON_APP)


@record
class PartitionHealth:
    """What one partition found wrong; every entry names the object (and what is wrong with it)."""

    partition: str
    negative_partition: tuple[str, ...]
    negative_nodes: tuple[str, ...]
    allocation_mismatch: tuple[str, ...]  # the partition's allocated is not the sum of its nodes'
    total_mismatch: tuple[str, ...]  # the partition's total is not the sum of its nodes' capacity
    node_total_mismatch: tuple[str, ...]
    node_capacity_mismatch: tuple[str, ...]
    reservations: int
    nodes: int
    orphans_on_node: tuple[str, ...]
    orphans_on_app: tuple[str, ...]


# A node's own findings, by kind (kept per node version by the partition).
_NEGATIVE, _TOTAL, _CAPACITY = "negative", "total", "capacity"
_resource = attrgetter("resource")


def _node_problems(node) -> tuple[tuple[str, str], ...]:
    found = []
    available = node.available
    # As upstream, a node whose running pods exceed its capacity is reported (negative available, allocated
    # above capacity): the core accepts what the resource manager says runs there, but it is worth seeing.
    for label, value in (("capacity", node.capacity), ("allocated", node.allocated), ("occupied", node.occupied),
                         ("available", available)):
        if value.has_negative():
            found.append((_NEGATIVE, f"{node.node_id} ({label} {value.negative_components()})"))
    if node.allocated + node.occupied + available != node.capacity:
        found.append((_TOTAL, f"{node.node_id} (capacity is not allocated + occupied + available)"))
    if total(map(_resource, node.allocations.values())) != node.allocated:
        found.append((_TOTAL, f"{node.node_id} (allocated is not the sum of its allocations)"))
    if total(map(_resource, node.foreign.values())) != node.occupied:
        found.append((_TOTAL, f"{node.node_id} (occupied is not the sum of its foreign allocations)"))
    if any(node.capacity.get(name, 0) < value for name, value in node.allocated.items()):
        found.append((_CAPACITY, f"{node.node_id} (allocated {dict(node.allocated)} exceeds capacity)"))
    return tuple(found)


def findings(partition) -> PartitionHealth:
    """The findings of a live :class:`~actors.core.partition.Partition` (call on its owning thread).

    A node's own findings are kept in ``partition.health_cache`` by node version: summing the
    allocations of thousands of unchanged nodes again would make every check cost that much more.
    """
    name = partition.name
    nodes = partition.nodes.values()
    by_kind: dict[str, list[str]] = {_NEGATIVE: [], _TOTAL: [], _CAPACITY: []}
    negative_partition: list[str] = []
    orphans_on_node: list[str] = []
    orphans_on_app: list[str] = []
    cache = partition.health_cache
    for node_id in [n for n in cache if n not in partition.nodes]:
        del cache[node_id]
    app_of = partition.apps.get
    for node in nodes:
        entry = cache.get(node.node_id)
        if entry is None or entry[0] != node.version:
            entry = cache[node.node_id] = (node.version, _node_problems(node))
        for kind, finding in entry[1]:
            by_kind[kind].append(finding)
        for key, allocation in node.allocations.items():
            app = app_of(allocation.application_id)
            if app is None or key not in app.allocations:
                orphans_on_node.append(f"{key} on {node.node_id}")
    node_of = partition.nodes.get
    for app in partition.apps.values():
        for key, allocation in app.allocations.items():
            node = node_of(allocation.node_id)
            if node is None or key not in node.allocations:
                orphans_on_app.append(f"{key} of {app.application_id}")
        if app.used.has_negative():
            negative_partition.append(f"{name} (application {app.application_id} used {app.used.negative_components()})")
    if partition.total.has_negative():
        negative_partition.append(f"{name} (total {partition.total.negative_components()})")
    for path, queue in partition.queues.by_path.items():
        if queue.allocated.has_negative():
            negative_partition.append(f"{name} (queue {path} allocated {queue.allocated.negative_components()})")
    allocated = partition.queues.root.allocated
    allocation_mismatch = () if total(n.allocated for n in nodes) == allocated else (name,)
    total_mismatch = () if total(n.capacity for n in nodes) == partition.total else (name,)
    return PartitionHealth(name, tuple(negative_partition), tuple(by_kind[_NEGATIVE]), allocation_mismatch,
                           total_mismatch, tuple(by_kind[_TOTAL]), tuple(by_kind[_CAPACITY]),
                           len(partition.reservations) + len(partition.holds),
                           len(partition.nodes), tuple(orphans_on_node), tuple(orphans_on_app))


def _quoted(items: Iterable[str], limit: int = 20) -> str:
    """A list as Go's %q prints one (``["a" "b"]``), cut after ``limit`` entries."""
    items = list(items)
    shown = " ".join(json.dumps(item) for item in items[:limit])
    more = f" ... and {len(items) - limit} more" if len(items) > limit else ""
    return f"[{shown}{more}]"


def report(partitions: Iterable[PartitionHealth], scheduling_errors: int, failed_nodes: int) -> HealthReport:
    """The scheduler's health: upstream's entries, in upstream's order."""
    parts = list(partitions)

    def joined(field: str) -> list[str]:
        return [item for p in parts for item in getattr(p, field)]

    ratios = " ".join(f"{(p.reservations / p.nodes) if p.nodes else 0.0:f}" for p in parts)
    entries = [
        (scheduling_errors == 0, SCHEDULING_ERRORS, "Check for scheduling error entries in metrics",
         f"There were {scheduling_errors} scheduling errors logged in the metrics"),
        (failed_nodes == 0, FAILED_NODES, "Check for failed nodes entries in metrics",
         f"There were {failed_nodes} failed nodes logged in the metrics"),
        (not joined("negative_partition"), NEGATIVE, "Check for negative resources in the partitions",
         f"Partitions with negative resources: {_quoted(joined('negative_partition'))}"),
        (not joined("negative_nodes"), NEGATIVE, "Check for negative resources in the nodes",
         f"Nodes with negative resources: {_quoted(joined('negative_nodes'))}"),
        (not joined("allocation_mismatch"), CONSISTENCY,
         "Check if a partition's allocated resource <= total resource of the partition",
         f"Partitions with inconsistent data: {_quoted(joined('allocation_mismatch'))}"),
        (not joined("total_mismatch"), CONSISTENCY,
         "Check if total partition resource == sum of the node resources from the partition",
         f"Partitions with inconsistent data: {_quoted(joined('total_mismatch'))}"),
        (not joined("node_total_mismatch"), CONSISTENCY,
         "Check if node total resource = allocated resource + occupied resource + available resource",
         f"Nodes with inconsistent data: {_quoted(joined('node_total_mismatch'))}"),
        (not joined("node_capacity_mismatch"), CONSISTENCY, "Check if node capacity >= allocated resources on the node",
         f"Nodes with inconsistent data: {_quoted(joined('node_capacity_mismatch'))}"),
        # Always passes, as upstream's: no ratio is known to be wrong.
        (True, RESERVATIONS, "Check the reservation nr compared to the number of nodes",
         f"Reservation/node nr ratio: [{ratios}]"),
        (not joined("orphans_on_node"), ORPHANS_ON_NODE, "Check if there are orphan allocations on the nodes",
         f"Orphan allocations: {_quoted(joined('orphans_on_node'))}"),
        (not joined("orphans_on_app"), ORPHANS_ON_APP, "Check if there are orphan allocations on the applications",
         f"OrphanAllocations: {_quoted(joined('orphans_on_app'))}"),
    ]
    checks = tuple(HealthCheck(name, ok, description, message) for ok, name, description, message in entries)
    return HealthReport(all(c.succeeded for c in checks), checks)


def check(partition) -> HealthReport:
    """The checks of one partition's data alone (call on its owning thread): the counters of scheduling
    errors and failed nodes count as zero."""
    return report((findings(partition),), 0, 0)
