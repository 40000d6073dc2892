"""The messages the shim's actors exchange, by the actor that receives them.

The core outlet, node actors and application actors are told these (and SI messages); the shim
context is told these by node actors, and informer changes, core answers and bind outcomes, declared
beside their senders.
"""

from __future__ import annotations

import pykka

from actors.base import message
from actors.shim.nodes import NodeRecord
from actors.shim.pods import PodRecord
from actors.shim.ticker import Alarms
from si import si_pb2

CoreItem = (si_pb2.NodeInfo | si_pb2.AddApplicationRequest | si_pb2.RemoveApplicationRequest | si_pb2.Allocation
            | si_pb2.AllocationRelease)


# ---- CoreOutlet ----------------------------------------------------------------------------------

@message
class ToCore:
    """SI items for the core, in the order they must reach it. With ``confirm_to``, the outlet tells
    that actor ``CoreConfirmed(token)`` once the core has processed them."""

    items: tuple[CoreItem, ...]
    confirm_to: pykka.ActorRef | None = None
    token: int = 0


@message
class InstanceTypeLabel:
    """The node label whose value is a node's SI instance type (``service.instanceTypeNodeLabelKey``)."""

    label: str


@message
class Registered:
    """The shim registered with the core as ``rm_id``: the outlet names it in every request."""

    rm_id: str


@message
class FlushToCore:
    """Ask the outlet: return once everything told to it before has been processed by the core."""


# ---- NodeActor -----------------------------------------------------------------------------------

@message
class PlacedPod:
    """A pod on the node; ``foreign``: a pod the core does not schedule. ``report``: the node sends its
    allocation (a foreign pod, or one of ours the core did not place: found at recovery or bound by
    someone else); else the core placed it."""

    pod: PodRecord
    priority: int
    report: bool
    foreign: bool = False


@message
class PodsOnNode:
    pods: tuple[PlacedPod, ...]


@message
class PodsLeft:
    """Pods gone from the node (deleted, terminated, or moved)."""

    pods: tuple[PodRecord, ...]


@message
class NodeChanged:
    """The node's record was listed, added or updated (also: it came back after it was lost)."""

    record: NodeRecord


@message
class NodeDeleted:
    """The node object was deleted."""


@message
class NotReadyTooLong:
    """An alarm: the node has been NotReady since ``since`` (monotonic seconds)."""

    since: float


@message
class CoreConfirmed:
    token: int


@message
class Settle:
    """Ask: answered once everything told before has been handled."""


# ---- ApplicationActor ----------------------------------------------------------------------------
# Also told: the SI answers of the core that concern the application (``AllocationResponse``,
# ``ApplicationResponse``, ``UpdateContainerSchedulingStateRequest``, ``CoreEvents``), ``BindOutcome``
# from the binder and ``RetractTask`` from the plugin-mode handoff, and ``Settle``.

@message
class TaskUpdate:
    """A pod of the application as the cluster shows it now (``deleted``: it is gone)."""

    pod: PodRecord
    priority: int
    deleted: bool = False


@message
class TaskUpdates:
    updates: tuple[TaskUpdate, ...]


# ---- ShimContext ---------------------------------------------------------------------------------
# Also told: informer batches (``Listed``, ``Changes``), the core's SI answers, ``CoreEvents``,
# ``BindOutcome`` and ``RetractTask`` (routed to the pod's application) and ``ShimStateRequest``.

@message
class Connect:
    """Where the binder, the event recorder and the core outlet are, and the alarms node actors use
    (told once, before the informers start)."""

    binder: pykka.ActorRef
    recorder: pykka.ActorRef
    outlet: pykka.ActorRef
    alarms: Alarms


@message
class Shutdown:
    """Ask: stop taking cluster changes (``Draining``)."""


@message
class Stopped:
    """Ask: the shim has shut down (``Stopped``)."""


@message
class Publish:
    """Publish a snapshot if something changed (told by the service's timer)."""


@message
class PlacedElsewhere:
    """From an application: a pod of its that was pending is on a node the core did not choose; its
    ask is withdrawn, so the node may report it now."""

    placed: PlacedPod


@message
class NodeRecovered:
    """A node left Recovering: the core holds every pod that was on it (``pods`` of them)."""

    name: str
    pods: int


@message
class NodeGone:
    """A node actor has nothing left to watch (no record, no pods): the context may stop it."""

    name: str
