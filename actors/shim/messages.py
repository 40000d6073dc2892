"""Every message the shim's actors are told or asked, under the actor that receives it.

One place to read what each actor answers to; the actors handle ``Msg`` in ``on_Msg``
(``actors.base``). Answers to asks (``InformerStatus``, ``BinderStats``, ...) stay beside the actor that
gives them, and a message an actor sends only to itself stays private in its module.
"""

from __future__ import annotations

from typing import Any

import pykka

from actors.base import constructor, message
from actors.shim.gang import TaskGroup
from actors.shim.nodes import NodeRecord
from actors.shim.placeholders import PlaceholderSettings
from actors.shim.pods import PodRecord
from actors.shim.ticker import Alarms
from si import si_pb2


@message
class PlacedPod:
    """A pod on the node; ``foreign``: a pod the core does not schedule. ``report``: the node sends its
    allocation (a foreign pod, or one of ours the core did not place: found at recovery or bound by
    someone else); else the core placed it."""

    pod: PodRecord
    priority: int
    report: bool
    foreign: bool = False
    originator: bool = False  # the pod that declared its application (see translate.allocation)


placed_pod = constructor(PlacedPod)  # as ``PlacedPod(...)``, at half the cost: a recovery makes one a pod


@message
class NodeAllocations:
    """The allocations of pods on ``node_id`` that its node reports together (``translate.allocation``, or
    ``foreign_allocation`` for a foreign pod), which the outlet builds straight into the request it sends,
    in one pass: a recovering node reports every pod on it as this one item (a message and an item for each
    pod cost more than building its allocation). ``reporter`` is told ``CountedForeign`` for a pod that
    cannot be built as ours."""

    node_id: str
    pods: tuple[PlacedPod, ...]
    reporter: pykka.ActorRef | None = None


CoreItem = (si_pb2.NodeInfo | si_pb2.AddApplicationRequest | si_pb2.RemoveApplicationRequest | si_pb2.Allocation
            | NodeAllocations | si_pb2.AllocationRelease)


# ---- Informer ------------------------------------------------------------------------------------

@message
class InformerStatusRequest:
    """Ask: the informer's ``InformerStatus``."""


# ---- Binder (and AllocationHandoff, which answers the same) --------------------------------------

@message
class NamespaceOverdue:
    """The context's own reminder: the pods of a new application in ``namespace`` have waited long enough
    for the namespace's event (its quota and queue annotations); they go ahead without it."""

    namespace: str


@message
class BindRequest:
    uid: str
    namespace: str
    name: str
    node: str
    reply_to: pykka.ActorRef | None = None
    claims: tuple[str, ...] = ()  # WaitForFirstConsumer claims to bind for the node first (see ``volumes``)


@message
class Binds:
    """Several ``BindRequest`` in one message."""

    requests: tuple[BindRequest, ...]


@message
class FailPod:
    """Set a pod of ours that will never run to phase ``Failed`` (its application was rejected or failed)."""

    namespace: str
    name: str
    reason: str
    message: str


@message
class DeletePod:
    uid: str
    namespace: str
    name: str
    reason: str


@message
class EvictPod:
    """Evict a pod the core preempted (the Eviction API honours its disruption budgets); a refusal
    goes back to ``reply_to`` as ``EvictionRefused``."""

    uid: str
    namespace: str
    name: str
    reason: str
    reply_to: Any


@message
class EvictionRefused:
    """From the binder: pod ``uid`` was not evicted (``reason``: e.g. its disruption budget)."""

    uid: str
    reason: str


@message
class CreatePlaceholders:
    """Create ``count`` placeholder pods of each task group for ``originator``'s gang; one
    ``PlaceholdersCreated`` goes back to ``reply_to``."""

    originator: PodRecord
    queue: str
    groups: tuple[tuple[TaskGroup, int], ...]
    settings: PlaceholderSettings
    reply_to: pykka.ActorRef


@message
class StopPlaceholders:
    """The placeholders still to be made for ``app`` (the ``reply_to`` of its ``CreatePlaceholders``) are
    not: its originating pod is gone."""

    app: pykka.ActorRef


@message
class PlaceholdersCreated:
    """``error``: why creating stopped ("" when every placeholder was created); ``created`` are the
    (uid, namespace, name) of those made, for the application to delete after a failure. ``fenced``:
    nothing was tried, this scheduler does not lead (a standby recovering ahead)."""

    created: tuple[tuple[str, str, str], ...]
    error: str = ""
    fenced: bool = False


@message
class Drain:
    """Ask: returns once every accepted bind has finished."""


@message
class BinderStatsRequest:
    """Ask: the binder's ``BinderStats``."""


# ---- AllocationHandoff ---------------------------------------------------------------------------

@message
class FilterAsk:
    """Ask: which of ``nodes`` may the managed pod ``uid`` go to?"""

    uid: str
    nodes: tuple[str, ...]


@message
class BindAsk:
    """Ask: may pod ``uid`` (``namespace/name``) be bound to ``node`` now? Answers a ``BindVerdict``."""

    uid: str
    namespace: str
    name: str
    node: str


@message
class Settled:
    """The pod is bound, or gone: forget its allocation."""

    uid: str


@message
class WaitingReason:
    """Why the core has not placed pod ``uid`` yet (e.g. its queue's quota): what filter calls answer."""

    uid: str
    reason: str


# ---- EventRecorder -------------------------------------------------------------------------------

@message
class KubeEvent:
    """An event about one object (``kind`` Pod, Node or ConfigMap; ``namespace`` empty for nodes)."""

    kind: str
    namespace: str
    name: str
    uid: str
    type: str
    reason: str
    message: str


@message
class PodCondition:
    """``PodScheduled=False`` with ``reason`` and ``message`` on a pod that cannot be placed."""

    namespace: str
    name: str
    uid: str
    reason: str
    message: str


@message
class Feedback:
    """Several events and conditions in one message."""

    items: tuple[KubeEvent | PodCondition, ...]


@message
class Flush:
    """Write what the rate allows now (told by the recorder's timer; an ask in tests)."""


@message
class RecorderStatsRequest:
    """Ask: the recorder's ``RecorderStats``."""


# ---- CoreOutlet ----------------------------------------------------------------------------------

@message
class ToCore:
    """SI items for the core, in the order they must reach it. With ``confirm_to``, the outlet tells
    that actor ``CoreConfirmed(token)`` once the core has processed them."""

    items: tuple[CoreItem, ...]
    confirm_to: pykka.ActorRef | None = None
    token: int = 0


@message
class VolumeBindTimeout:
    """How long the binder waits for a pod's claims to be bound (``service.volumeBindTimeout``)."""

    seconds: float


@message
class InstanceTypeLabel:
    """The node label whose value is a node's SI instance type (``service.instanceTypeNodeLabelKey``)."""

    label: str


@message
class Registered:
    """The shim registered with the core as ``rm_id``: the outlet names it in every request."""

    rm_id: str


@message
class FlushDue:
    """The outlet's own alarm: the items told since its last flush have lingered long enough."""


@message
class FlushToCore:
    """Ask the outlet: return once everything told to it before has been processed by the core."""


# ---- NodeActor -----------------------------------------------------------------------------------

@message
class PodsOnNode:
    pods: tuple[PlacedPod, ...]


@message
class Unplaced:
    """From a node's actor removed before ``pods`` reached it (its deletion came first): the context
    places them again, on an actor of the node started anew, rather than losing them with this one."""

    node_name: str
    pods: tuple[PlacedPod, ...]
    node: pykka.ActorRef


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
class CountedForeign:
    """The allocation of a pod of ours on the node could not be built: the core was told it as another
    scheduler's pod at priority 0 instead, so its room stays taken."""

    uid: str


@message
class Settle:
    """Ask: answered once everything told before has been handled."""


# ---- ApplicationActor ----------------------------------------------------------------------------
# Also told: the SI answers of the core that concern the application (``AllocationResponse``,
# ``ApplicationResponse``, ``UpdateContainerSchedulingStateRequest``), and, routed by the context,
# ``CoreEvents``, ``BindOutcome``, ``BindOutcomes`` and ``RetractTask`` (under ``ShimContext``), and ``Settle``.

@message
class TaskUpdate:
    """A pod of the application as the cluster shows it now (``deleted``: it is gone)."""

    pod: PodRecord
    priority: int
    deleted: bool = False


task_update = constructor(TaskUpdate)  # as ``TaskUpdate(...)``, at half the cost: a recovery makes one a pod


@message
class TaskUpdates:
    updates: tuple[TaskUpdate, ...]


@message
class Leading:
    """The scheduler runs as the leader now (told after the pending pods were routed): what a standby
    could not write, it may now (a gang's missing placeholders)."""


# ---- ShimContext ---------------------------------------------------------------------------------
# Also told: the core's SI answers (``AllocationResponse``, ``ApplicationResponse``, ``NodeResponse``,
# ``UpdateContainerSchedulingStateRequest``). ``CoreEvents``, ``BindOutcome``, ``BindOutcomes`` and
# ``RetractTask`` are routed on to the application they concern.

@message
class Added:
    record: Any


@message
class Updated:
    old: Any
    new: Any


@message
class Deleted:
    record: Any


@message
class Listed:
    """From an informer: the first complete list of ``kind``, the listener's starting point."""

    kind: str
    records: tuple


@message
class Changes:
    """From an informer: what changed since its previous message, in order."""

    kind: str
    changes: tuple[Added | Updated | Deleted, ...]


@message
class CoreEvents:
    """Event records the core published (``send_events``)."""

    events: tuple[si_pb2.EventRecord, ...]


@message
class BindOutcome:
    """From the binder: how the bind of pod ``uid`` to ``node`` ended."""

    uid: str
    node: str
    bound: bool
    gone: bool = False
    reason: str = ""
    volumes: bool = False  # the pod's volumes could not be bound for the node


@message
class BindOutcomes:
    """From the binder: the outcomes for one receiver that finished together, in the order they did."""

    outcomes: tuple[BindOutcome, ...]


@message
class RetractTask:
    """From the plugin-mode handoff: the pod was not bound on ``node``; give its allocation back."""

    uid: str
    node: str
    reason: str


@message
class ShimStateRequest:
    """Ask: a fresh ``ShimStateSnapshot``."""


@message
class Connect:
    """Where the binder, the event recorder and the core outlet are, and the alarms node actors use
    (told once, before the informers start)."""

    binder: pykka.ActorRef
    recorder: pykka.ActorRef
    outlet: pykka.ActorRef
    alarms: Alarms


@message
class Lead:
    """This scheduler has become the leader: register with the core and recover (leader election)."""


@message
class Shutdown:
    """Ask: stop taking cluster changes (``Draining``)."""


@message
class Stopped:
    """Ask: the shim has shut down (``Stopped``)."""


@message
class SendMail:
    """Send what the context collected for its actors (told by the service's timer, so a quiet moment
    never leaves mail waiting)."""


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
    """A node actor has nothing left to watch (no record, no pods) and has ended: the context stops it."""

    name: str
    node: pykka.ActorRef
