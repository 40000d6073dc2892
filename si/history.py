"""What the core tells the history store: finished applications and the periodic samples, as frozen
records (the store's own package turns them into rows; the core never sees SQL).

Times are nanoseconds since the epoch; resources are plain ``{name: quantity}`` mappings as the SI
counts them (vcore in millicores, memory in bytes); resource-seconds are quantity times seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AllocationBrief:
    """One allocation an application held: where, how much, from when to when (0: still held)."""

    key: str
    node_id: str
    resource: Mapping[str, int]
    allocated_at: int
    released_at: int
    placeholder: bool
    task_group: str


@dataclass(frozen=True, slots=True)
class PlaceholderBrief:
    task_group: str
    count: int
    min_resource: Mapping[str, int]
    replaced: int
    timed_out: int


@dataclass(frozen=True, slots=True)
class FinishedApplication:
    """An application in a terminal state (Completed, Failed, Rejected, Expired), as the core last saw it."""

    application_id: str
    partition: str
    queue: str
    user: str
    groups: tuple[str, ...]
    state: str
    submission_time: int
    finished_time: int
    rejected_message: str
    state_log: tuple[tuple[int, str], ...]
    tags: Mapping[str, str]
    used: Mapping[str, int]
    max_used: Mapping[str, int]
    resource_seconds: Mapping[str, float]
    first_allocation_time: int  # 0: never allocated
    allocations: tuple[AllocationBrief, ...]
    allocations_untold: int  # held but beyond the briefs kept per application
    placeholders: tuple[PlaceholderBrief, ...]


@dataclass(frozen=True, slots=True)
class ClusterSample:
    """The web UI's front-page sample: running applications and containers."""

    timestamp: int
    total_applications: int
    total_containers: int


@dataclass(frozen=True, slots=True)
class QueueSample:
    timestamp: int
    partition: str
    queue: str
    allocated: Mapping[str, int]
    running_applications: int


HistoryRecord = FinishedApplication | ClusterSample | QueueSample
HistorySink = Callable[[Sequence[HistoryRecord]], None]  # never blocks: a full store drops and counts
