"""Immutable pictures of the core for readers (REST, the state dump, tests).

Field names are the snake_case of the REST DAO names, so the web layer maps them mechanically.
Times are nanoseconds since the epoch (0: unset); resources are :class:`si.resources.Resource`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from actors.base import record
from si.resources import Resource

if TYPE_CHECKING:
    from actors.core.health import PartitionHealth
    from actors.core.stats import StatsSnapshot

# What a reader may leave out of a snapshot: the parts that cost in proportion to the cluster's size.
# The partition's counts, its queue tree, placement rules and usage are always taken.
SUMMARY = "summary"  # the partition's used capacity, utilization and schedulable nodes: summed over its nodes
NODES = "nodes"
NODES_JSON = "nodes json"  # each node's JSON as /nodes shows it (actors.core.nodejson), without its picture
APPLICATIONS = "applications"
HEALTH = "health"
METRICS = "metrics"  # what only /ws/v1/metrics reads: application states per queue, node usage buckets
ALL_AREAS = frozenset({SUMMARY, NODES, APPLICATIONS, HEALTH, METRICS})


class AllocationSnapshot(NamedTuple):
    """A tuple, not a frozen dataclass: a snapshot after a burst builds one per allocation (100,000 at
    scale), and a tuple is built in half the time."""

    allocation_key: str
    allocation_tags: Mapping[str, str]
    request_time: int
    allocation_time: int
    resource: Resource
    priority: int
    node_id: str
    application_id: str
    placeholder: bool
    task_group_name: str
    foreign: bool
    preemptable: bool
    originator: bool
    placeholder_used: bool = False  # a real pod's allocation that took over a placeholder
    preempted: bool = False  # released by preemption, its pod not yet gone


@record
class AskSnapshot:
    allocation_key: str
    allocation_tags: Mapping[str, str]
    request_time: int
    resource: Resource
    priority: int
    required_node_id: str
    application_id: str
    placeholder: bool
    task_group_name: str
    scheduling_attempted: bool
    last_failure: str
    originator: bool
    triggered_scale_up: bool  # the resource manager was told no node fits it (the autoscaler's signal)
    failure_log: tuple[tuple[str, int, int], ...]  # (reason, last time it became the reason, times)
    triggered_preemption: bool = False


@record
class PlaceholderSnapshot:
    task_group_name: str
    count: int
    min_resource: Resource
    replaced: int
    timed_out: int


@record(weakref_slot=True)  # readers cache by identity
class ApplicationSnapshot:
    application_id: str
    partition: str
    queue_name: str
    user: str
    groups: tuple[str, ...]
    state: str
    submission_time: int
    finished_time: int
    used_resource: Resource
    max_used_resource: Resource
    pending_resource: Resource
    requests: tuple[AskSnapshot, ...]
    allocations: tuple[AllocationSnapshot, ...]
    rejected_message: str
    state_log: tuple[tuple[int, str], ...]
    tags: Mapping[str, str]
    placeholder_data: tuple[PlaceholderSnapshot, ...] = ()
    reservations: tuple[str, ...] = ()  # its asks holding a node (reserved, or waiting for victims)
    backoff_deadline: int = 0  # ns since the epoch until which its queue's ask backoff skips it; 0: none


@record
class QueueSnapshot:
    queue_name: str
    status: str
    partition: str
    pending_resource: Resource
    max_resource: Resource | None
    guaranteed_resource: Resource | None
    allocated_resource: Resource
    headroom: Resource | None
    is_leaf: bool
    is_managed: bool
    properties: Mapping[str, str]
    parent: str
    template: Mapping | None
    children: tuple[QueueSnapshot, ...]
    max_running_apps: int
    running_apps: int
    current_priority: int
    sorting_policy: str
    priority_sorting: bool
    preemption_enabled: bool
    abs_used_capacity: Mapping[str, int]
    applications: tuple[str, ...]
    containers: Mapping[str, int]  # allocated, released: cumulative counts of this queue's allocations
    app_totals: Mapping[str, int]  # completed, failed, rejected: cumulative counts of this queue's apps
    app_states: Mapping[str, int] | None  # live applications by state; None: METRICS was not asked for
    preempting_resource: Resource = Resource()  # victims of preemptions under way in this subtree
    is_preemption_fence: bool = False
    preemption_delay: float = 30.0  # seconds
    quota_preemption_delay: float = 0.0  # seconds; 0: never

    def find(self, path: str) -> QueueSnapshot | None:
        if self.queue_name == path:
            return self
        for child in self.children:
            if path == child.queue_name or path.startswith(child.queue_name + "."):
                return child.find(path)
        return None


@record(weakref_slot=True)  # readers cache by identity
class NodeSnapshot:
    node_id: str
    host_name: str
    rack_name: str
    attributes: Mapping[str, str]
    capacity: Resource
    allocated: Resource
    occupied: Resource
    available: Resource
    utilized: Mapping[str, int]
    allocations: tuple[AllocationSnapshot, ...]
    foreign_allocations: tuple[AllocationSnapshot, ...]
    schedulable: bool
    is_reserved: bool
    reservations: tuple[str, ...] = ()  # the ask holding the node: reserved, or waiting for its victims


@record
class HealthCheck:
    name: str
    succeeded: bool
    description: str
    diagnosis_message: str


@record
class HealthReport:
    healthy: bool
    checks: tuple[HealthCheck, ...]


@record
class PartitionSnapshot:
    name: str
    cluster_id: str
    state: str
    last_state_transition_time: int
    capacity: Resource
    used_capacity: Resource | None  # None: SUMMARY was not asked for
    utilization: Mapping[str, int] | None
    node_sort_policy: str
    resource_weights: Mapping[str, float]
    preemption_enabled: bool
    quota_preemption_enabled: bool
    total_nodes: int
    schedulable_nodes: int | None
    applications_by_state: Mapping[str, int]
    total_applications: int
    total_containers: int
    root_queue: QueueSnapshot
    applications: tuple[ApplicationSnapshot, ...] | None  # None: APPLICATIONS was not asked for
    terminated_applications: tuple[ApplicationSnapshot, ...] | None
    nodes: tuple[NodeSnapshot, ...] | None  # None: NODES was not asked for
    placement_rules: tuple[Mapping, ...]
    user_usage: tuple[Mapping, ...]
    group_usage: tuple[Mapping, ...]
    health: HealthReport | None  # this partition's checks; None: HEALTH was not asked for
    health_findings: PartitionHealth | None  # what the core joins into the scheduler's report
    stats: StatsSnapshot
    running_applications: int  # Running (or Starting) applications
    node_usage: Mapping[str, tuple[int, ...]] | None  # resource -> nodes per 10% of allocated; METRICS only
    nodes_json: tuple[bytes, ...] | None = None  # NODES_JSON only
    cost: float = 0.0  # CPU seconds the partition's thread spent taking it (what readers are budgeted)


@record
class CoreSnapshot:
    taken_at: int
    rm_id: str
    partitions: tuple[PartitionSnapshot, ...]
    config_yaml: str
    checksum: str
    extra_config: Mapping[str, str]
    health: HealthReport | None  # None: HEALTH was not asked for
    areas: frozenset[str]  # the optional parts this snapshot holds
    build_info: Mapping[str, str]  # the resource manager's and the core's build information
    core_counters: Mapping[str, int]  # what the core itself counted: errors, failed_nodes (unknown partition)
    unsupported: tuple[str, ...] = ()  # keys of the extra configuration the scheduler does not support

    def partition(self, name: str) -> PartitionSnapshot | None:
        return next((p for p in self.partitions if p.name == name), None)


def percent(used: Resource, total: Resource) -> dict[str, int]:
    return {name: int(used[name] * 100 / value) for name, value in total.items() if value > 0}


MAX_PERCENT = 2**31 - 1  # upstream never shows a percentage beyond a 32-bit integer


def abs_used_capacity(capacity: Resource | None, used: Resource) -> dict[str, int]:
    """Upstream's ``CalculateAbsUsedCapacity``: per type of ``capacity`` that ``used`` names, the
    percentage used, truncated; nothing used is 0%, any use of a zero capacity 100%. A type ``used``
    does not name is left out, and no capacity gives nothing."""
    if capacity is None:
        return {}
    result = {}
    for name, limit in capacity.items():
        if name not in used:
            continue
        value = used[name]
        if value <= 0:
            result[name] = 0
        elif limit <= 0:
            result[name] = 100
        else:
            result[name] = int(min(value / limit * 100, MAX_PERCENT))
    return result


def utilized(capacity: Resource, allocated: Resource) -> dict[str, int]:
    """Upstream's ``Node.GetUtilizedResource``: the share of the node's capacity its scheduler's own
    allocations use (foreign pods are not counted), per allocated type the node has: as
    :func:`abs_used_capacity`, in one loop (a snapshot takes it for every node that changed)."""
    result = {}
    for name, value in allocated.items():
        limit = capacity.get(name, 0)
        if limit > 0:
            result[name] = int(min(value / limit * 100, MAX_PERCENT)) if value > 0 else 0
    return result
