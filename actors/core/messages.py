"""Every message the core's actors are told or asked, under the actor that receives it.

The ``CoreScheduler`` takes the SI's requests as they are (``NodeRequest``, ``ApplicationRequest``,
``AllocationRequest``, ``UpdateConfigurationRequest``) and the messages of its section below; it is
also told ``Hold`` and ``Tick`` and asked ``Barrier``, ``TakeSnapshot``, ``CheckHealth`` and ``Counts``,
which it passes on to every ``PartitionActor`` and answers for them all.
"""

from __future__ import annotations

from actors.base import message
from actors.core.config import PartitionConfig
from actors.core.plugins import ResourceManagerCallback
from actors.core.snapshot import ALL_AREAS
from si import si_pb2

# ---- CoreScheduler -------------------------------------------------------------------------------


@message
class Register:
    """Ask: register the resource manager, which hears the core's answers on ``callback``; raises
    (to the asker) on a configuration or settings the core refuses."""

    request: si_pb2.RegisterResourceManagerRequest
    callback: ResourceManagerCallback


@message
class CurrentSettings:
    """Ask: the core's parsed settings (``CoreSettings``) from the extra configuration it holds."""


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
