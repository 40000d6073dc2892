"""Immutable pictures of the core for readers (REST, the state dump, tests).

Field names are the snake_case of the REST DAO names, so the web layer maps them mechanically.
Times are nanoseconds since the epoch (0: unset); resources are :class:`si.resources.Resource`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from si.resources import Resource

# What a reader may leave out of a snapshot: the parts that cost in proportion to the cluster's size.
# The partition's summary, its queue tree, placement rules and usage are always taken.
NODES = "nodes"
APPLICATIONS = "applications"
HEALTH = "health"
ALL_AREAS = frozenset({NODES, APPLICATIONS, HEALTH})


@dataclass(frozen=True, slots=True)
class AllocationSnapshot:
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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True, weakref_slot=True)  # readers cache by identity
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


@dataclass(frozen=True, slots=True)
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

    def find(self, path: str) -> QueueSnapshot | None:
        if self.queue_name == path:
            return self
        for child in self.children:
            if path == child.queue_name or path.startswith(child.queue_name + "."):
                return child.find(path)
        return None


@dataclass(frozen=True, slots=True, weakref_slot=True)  # readers cache by identity
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


@dataclass(frozen=True, slots=True)
class HealthCheck:
    name: str
    succeeded: bool
    description: str
    diagnosis_message: str


@dataclass(frozen=True, slots=True)
class HealthReport:
    healthy: bool
    checks: tuple[HealthCheck, ...]


@dataclass(frozen=True, slots=True)
class SchedulingStats:
    """Cumulative figures of a partition's scheduling loop (the metrics endpoint renders them)."""

    cycles: int
    allocations: int
    waiting_reasons: int  # asks told they wait (a new reason each time)
    rejected: int  # asks, allocations, applications refused outright
    seconds: float
    cycle_buckets: tuple[tuple[float, int], ...]  # (upper bound in seconds, cycles at most that long)


@dataclass(frozen=True, slots=True)
class PartitionSnapshot:
    name: str
    cluster_id: str
    state: str
    last_state_transition_time: int
    capacity: Resource
    used_capacity: Resource
    utilization: Mapping[str, int]
    node_sort_policy: str
    resource_weights: Mapping[str, float]
    preemption_enabled: bool
    total_nodes: int
    schedulable_nodes: int
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
    health: HealthReport | None  # None: HEALTH was not asked for
    scheduling: SchedulingStats


@dataclass(frozen=True, slots=True)
class CoreSnapshot:
    taken_at: int
    rm_id: str
    partitions: tuple[PartitionSnapshot, ...]
    config_yaml: str
    checksum: str
    extra_config: Mapping[str, str]
    health: HealthReport | None  # None: HEALTH was not asked for
    areas: frozenset[str]  # the optional parts this snapshot holds

    def partition(self, name: str) -> PartitionSnapshot | None:
        return next((p for p in self.partitions if p.name == name), None)


def percent(used: Resource, total: Resource) -> dict[str, int]:
    return {name: int(used[name] * 100 / value) for name, value in total.items() if value > 0}
