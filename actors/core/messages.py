"""Every message the core's actors are told or asked, under the actor that receives it.

The ``CoreScheduler`` is called through its pykka proxy (``register``, ``update_node``, ... on
:class:`~actors.core.scheduler.Scheduler`), whose calls carry SI messages; the messages below are
what it, the ticker and the partition actors tell each ``PartitionActor``.
"""

from __future__ import annotations

from actors.base import message
from actors.core.config import PartitionConfig
from actors.core.snapshot import ALL_AREAS
from si import si_pb2

# ---- PartitionActor ------------------------------------------------------------------------------


@message
class NodeUpdates:
    """Nodes of the partition registered, updated or removed (``NodeInfo.action``)."""

    nodes: tuple[si_pb2.NodeInfo, ...]


@message
class AppUpdates:
    new: tuple[si_pb2.AddApplicationRequest, ...]
    remove: tuple[si_pb2.RemoveApplicationRequest, ...]


@message
class AllocationUpdates:
    """Asks and existing allocations to add, and allocations to release."""

    allocations: tuple[si_pb2.Allocation, ...]
    releases: tuple[si_pb2.AllocationRelease, ...]


@message
class Reconfigure:
    """A new configuration of the partition (already validated by the core scheduler)."""

    config: PartitionConfig


@message
class Hold:
    """``held``: decide nothing (no scheduling cycle, no timer) until told otherwise; what arrives
    meanwhile is booked as usual. A standby's core is held while it keeps up with the cluster."""

    held: bool


@message
class ScheduleCycle:
    """Schedule one bounded batch (the partition tells itself while there is work)."""


@message
class Tick:
    """Time passed: expire what has timed out (told every second by the scheduler's ticker)."""


@message
class TakeSnapshot:
    """Ask: the partition's snapshot, holding the optional ``areas``."""

    areas: frozenset[str] = ALL_AREAS


@message
class Barrier:
    """Ask: answered once everything told before has been handled (and its answers sent)."""


@message
class CheckHealth:
    """Ask: the partition's health checks, run now."""


@message
class Counts:
    """Ask: the partition's running applications and allocations (the web UI's history samples)."""
