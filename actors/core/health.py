"""Consistency checks over a partition: the numbers must add up, nothing negative, nothing orphaned."""

from __future__ import annotations

from actors.core.snapshot import HealthCheck, HealthReport
from si.resources import total


def _node_problems(node) -> tuple[tuple[str, str], ...]:
    """What is wrong with one node on its own: (check name, finding) pairs."""
    found = []
    for label, value in (("capacity", node.capacity), ("allocated", node.allocated), ("occupied", node.occupied)):
        if value.has_negative():
            found.append(("Negative resources", f"node {node.node_id} {label} {value.negative_components()}"))
    if total(a.resource for a in node.allocations.values()) != node.allocated:
        found.append(("Consistency of data", f"node {node.node_id}: allocated is not the sum of its allocations"))
    if total(a.resource for a in node.foreign.values()) != node.occupied:
        found.append(("Consistency of data", f"node {node.node_id}: occupied is not the sum of foreign allocations"))
    return tuple(found)


def check(partition) -> HealthReport:
    """Health of a live :class:`~actors.core.partition.Partition` (call on its owning thread).

    A node's own findings are kept in ``partition.health_cache`` by node version: summing the
    allocations of thousands of unchanged nodes again would make every snapshot cost that much more.
    """
    problems: dict[str, list[str]] = {"Negative resources": [], "Consistency of data": [],
                                      "Orphan allocation on node check": [], "Orphan allocation on app check": []}
    nodes = partition.nodes.values()
    if total(n.capacity for n in nodes) != partition.total:
        problems["Consistency of data"].append(f"partition total {partition.total} is not the sum of its nodes")
    cache = partition.health_cache
    for node_id in [n for n in cache if n not in partition.nodes]:
        del cache[node_id]
    for node in nodes:
        entry = cache.get(node.node_id)
        if entry is None or entry[0] != node.version:
            entry = cache[node.node_id] = (node.version, _node_problems(node))
        for name, finding in entry[1]:
            problems[name].append(finding)
        for key, allocation in node.allocations.items():
            app = partition.apps.get(allocation.application_id)
            if app is None or key not in app.allocations:
                problems["Orphan allocation on node check"].append(f"{key} on {node.node_id}")
    for app in partition.apps.values():
        for key, allocation in app.allocations.items():
            node = partition.nodes.get(allocation.node_id)
            if node is None or key not in node.allocations:
                problems["Orphan allocation on app check"].append(f"{key} of {app.application_id}")
        if app.used.has_negative():
            problems["Negative resources"].append(f"application {app.application_id} used {app.used}")
    for path, queue in partition.queues.by_path.items():
        if queue.allocated.has_negative():
            problems["Negative resources"].append(f"queue {path} allocated {queue.allocated}")
    descriptions = {"Negative resources": "no negative resources in partitions, nodes, queues, applications",
                    "Consistency of data": "partition total = sum of nodes; node capacity = allocated + occupied + available",
                    "Orphan allocation on node check": "every allocation on a node belongs to an application",
                    "Orphan allocation on app check": "every allocation of an application is on a node"}
    checks = tuple(HealthCheck(name, not found, descriptions[name], "; ".join(found[:10]))
                   for name, found in problems.items())
    return HealthReport(all(c.succeeded for c in checks), checks)
