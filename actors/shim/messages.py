"""The messages the shim's actors exchange, by the actor that receives them.

Node actors and the core outlet are told these; the shim context's own inbound messages (informer
changes, core answers, bind outcomes) are declared beside their senders.
"""

from __future__ import annotations

import pykka

from actors.base import message
from actors.shim.nodes import NodeRecord
from actors.shim.pods import PodRecord
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


# ---- ShimContext, from node actors --------------------------------------------------------------

@message
class NodeRecovered:
    """A node left Recovering: the core holds every pod that was on it (``pods`` of them)."""

    name: str
    pods: int


@message
class NodeGone:
    """A node actor has nothing left to watch (no record, no pods): the context may stop it."""

    name: str
