"""One actor per Kubernetes node: the node's record, the pods on it, and its recovery states.

States (``lifecycle.NodeState``, the resilience design): a node starts ``Recovering``: it registers
with the core draining (``CREATE_DRAIN``), reports the allocations of the pods already on it, and only
once the core has processed them (``CoreConfirmed``) does it become ``Schedulable``, so nothing is
placed on it before what runs there is counted. ``Draining`` while cordoned and ``NotReady`` while its
kubelet is not ready keep it in the core but take no new pods. ``Lost`` (deleted while pods are still
bound to it, ``NotReady`` for longer than ``lost_after``, or only named by pods) takes it out of the
core; when it returns it recovers again, reporting every pod on it. ``Removed`` is the end.

The node reports the allocations of foreign pods and of the pods of ours the core did not place
(``PlacedPod.report``), and releases them when they leave; it tells the context once it has recovered
(``NodeRecovered``) and when there is nothing left to watch (``NodeGone``). A pod of ours that is
invalid, or whose report cannot be built, is counted as another scheduler's pod (at priority 0 for the
latter): the room it takes is never given away, whatever else it holds.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable

import pykka

from actors.base import PooledActor, tell_if_alive
from actors.shim import keys, translate
from actors.shim.eventbuffer import NORMAL, WARNING
from actors.shim.lifecycle import NODE_IN_CORE, NODE_TRANSITIONS, NodeEvent, NodeState, StateMachine
from actors.shim.messages import (
    CoreConfirmed,
    CountedForeign,
    Feedback,
    KubeEvent,
    NodeAllocations,
    NodeChanged,
    NodeDeleted,
    NodeGone,
    NodeRecovered,
    NotReadyTooLong,
    PlacedPod,
    PodsLeft,
    PodsOnNode,
    Settle,
    ToCore,
    Unplaced,
)
from actors.shim.nodes import NodeRecord
from actors.shim.pods import PodRecord
from actors.shim.state import FOREIGN, NodeView, PodView, StateBoard, pod_view
from actors.shim.ticker import Alarms
from si import constants, si_pb2
from si.resources import ZERO

log = logging.getLogger(__name__)

PARTITION = constants.DEFAULT_PARTITION
ATTR_NODE_STATE = keys.DOMAIN_YUNIKORN + "node-state"
_ACTION = si_pb2.NodeInfo
_EVENTS = {NodeState.RECOVERING: (NORMAL, "NodeRecovering", "recovering: the pods on it are being counted"),
           NodeState.SCHEDULABLE: (NORMAL, "NodeSchedulable", "schedulable"),
           NodeState.DRAINING: (NORMAL, "NodeDraining", "cordoned: no new pods are placed on it"),
           NodeState.NOT_READY: (WARNING, "NodeNotReady", "not ready: no new pods are placed on it"),
           NodeState.LOST: (WARNING, "NodeLost", "lost: out of the scheduler until it returns"),
           NodeState.REMOVED: (NORMAL, "NodeRemoved", "removed from the scheduler")}

_TURNS = {NodeState.SCHEDULABLE: NodeEvent.SCHEDULABLE, NodeState.DRAINING: NodeEvent.DRAIN,
          NodeState.NOT_READY: NodeEvent.NOT_READY}  # the event that leads to each state ``_settle`` moves to


class NodeActor(PooledActor):
    """See the module docstring. ``record`` is ``None`` for a node only named by pods (it starts
    ``Lost``); ``pods`` are the pods already on it by uid, taken as they are (its maker gives the dict away:
    the context's recovery keys every pod on the nodes as it places them, rather than each actor again)."""

    kind = "node"
    contain_failures = True  # a node whose update raises keeps its actor: the message is dropped

    def __init__(self, name: str, record: NodeRecord | None, pods: dict[str, PlacedPod], *, context: pykka.ActorRef,
                 outlet: pykka.ActorRef, recorder: pykka.ActorRef | None, board: StateBoard, alarms: Alarms,
                 lost_after: float, supervisor=None) -> None:
        super().__init__(supervisor)
        self.node_name = name
        self._record = record
        self._context = context
        self._outlet = outlet
        self._recorder = recorder
        self._board = board
        self._alarms = alarms
        self._lost_after = lost_after
        self._machine = StateMachine(NODE_TRANSITIONS, NodeState.NEW, f"node {name}")
        self._pods = pods
        self._reported: set[str] = set()
        self._token = 0
        self._not_ready_since: float | None = None
        self._recovered_once = False
        self._info_of: tuple[NodeRecord, si_pb2.NodeInfo] | None = None  # see ``_node_info``

    @property
    def state(self) -> str:
        return self._machine.state

    def on_start(self) -> None:
        if self._record is None:
            self._fire(NodeEvent.LOSE)
        else:
            self._recover()

    # ---- the record ----------------------------------------------------------------------------

    def on_NodeChanged(self, msg: NodeChanged) -> None:
        old, self._record = self._record, msg.record
        if self.state == NodeState.LOST:
            if msg.record.ready:
                self._recover()
            else:
                self._publish()
            return
        self._track_readiness()
        if not self._settle() and old is not None and not old.same_offer(msg.record):
            self._send(self._node_info(_ACTION.UPDATE))

    def on_NodeDeleted(self, msg: NodeDeleted) -> None:
        self._record = None
        if self.state in NODE_IN_CORE:
            self._send(si_pb2.NodeInfo(nodeID=self.node_name, action=_ACTION.DECOMISSION))
            self._reported.clear()  # the core dropped them with the node
            if self._pods:
                self._fire(NodeEvent.LOSE)
        if not self._pods:
            self._remove()
        else:
            self._publish()

    def on_NotReadyTooLong(self, msg: NotReadyTooLong) -> None:
        if self.state == NodeState.NOT_READY and self._not_ready_since == msg.since:
            self._send(si_pb2.NodeInfo(nodeID=self.node_name, action=_ACTION.DECOMISSION))
            self._reported.clear()
            self._fire(NodeEvent.LOSE)

    # ---- the pods on it ------------------------------------------------------------------------

    def on_PodsOnNode(self, msg: PodsOnNode) -> None:
        if self.state == NodeState.REMOVED:  # told before the context heard that this actor is done
            tell_if_alive(self._context, Unplaced(self.node_name, msg.pods, self.actor_ref))
            return
        to_report = []
        for placed in msg.pods:
            uid = placed.pod.uid
            known = self._pods.get(uid)
            self._pods[uid] = placed
            if self.state not in NODE_IN_CORE:
                continue
            reported = uid in self._reported
            resized = known is not None and known.pod.resource != placed.pod.resource
            if (placed.report and not reported) or (reported and (known is None or resized)):
                to_report.append(placed)
        items = self._report(to_report)
        if self.state == NodeState.RECOVERING:
            self._send_confirmed(items)  # what just arrived is part of the recovery: wait for it too
        elif items:
            self._send(*items)

    def on_PodsLeft(self, msg: PodsLeft) -> None:
        items = []
        for pod in msg.pods:
            placed = self._pods.pop(pod.uid, None)
            if placed is None:
                continue
            if placed.foreign:
                self._board.pods.hide(pod.uid)
            if pod.uid in self._reported:
                self._reported.discard(pod.uid)
                items.append(translate.release(pod, "pod left the node", PARTITION, foreign=placed.foreign))
        if items:
            self._send(*items)
        if not self._pods and self._record is None and self.state == NodeState.LOST:
            self._remove()

    def on_Settle(self, msg: Settle) -> None:
        return None

    # ---- recovery ------------------------------------------------------------------------------

    def on_CoreConfirmed(self, msg: CoreConfirmed) -> None:
        if self.state != NodeState.RECOVERING or msg.token != self._token:
            return  # a later recovery step is still on its way
        self._settle(recovered=True)
        if not self._recovered_once:
            self._recovered_once = True
            tell_if_alive(self._context, NodeRecovered(self.node_name, len(self._pods)))

    def _recover(self) -> None:
        """Register draining, report every pod on the node, and wait for the core to confirm."""
        self._fire(NodeEvent.RECOVER)
        self._reported.clear()
        self._send_confirmed([self._node_info(_ACTION.CREATE_DRAIN), *self._report(self._pods.values(), self._pods)])
        self._track_readiness()

    def _send_confirmed(self, items: list) -> None:
        self._token += 1
        tell_if_alive(self._outlet, ToCore(tuple(items), confirm_to=self.actor_ref, token=self._token))

    def _report(self, placed_pods: Iterable[PlacedPod], uids: Iterable[str] | None = None) -> list[NodeAllocations]:
        """The allocations of ``placed_pods`` (whose uids are ``uids`` when known) to report, as one item (none
        for no pod); their foreign pods are shown at once (one lock, one version)."""
        reports = tuple(placed_pods)
        if not reports:
            return []
        if any(placed.pod.invalid and not placed.foreign for placed in reports):
            reports = tuple(map(self._counted_foreign, reports))
        self._reported.update([placed.pod.uid for placed in reports] if uids is None else uids)
        foreign = [_foreign_view(placed.pod) for placed in reports if placed.foreign]
        if foreign:
            self._board.pods.show_all(foreign)
        return [NodeAllocations(self.node_name, reports, self.actor_ref)]

    def _counted_foreign(self, placed: PlacedPod) -> PlacedPod:
        """``placed``, as another scheduler's pod if it is an invalid pod of ours: no task of ours, but it
        runs here, so its room is taken."""
        pod = placed.pod
        if not pod.invalid or placed.foreign:
            return placed
        log.warning("pod %s on node %s counted as another scheduler's pod: %s", pod.full_name, self.node_name,
                    pod.invalid)
        placed = self._pods[pod.uid] = dataclasses.replace(placed, foreign=True)
        return placed

    def on_CountedForeign(self, msg: CountedForeign) -> None:
        placed = self._pods.get(msg.uid)
        if placed is not None and not placed.foreign:
            placed = self._pods[msg.uid] = dataclasses.replace(placed, priority=0, foreign=True)
            self._board.pods.show(_foreign_view(placed.pod))

    # ---- state ---------------------------------------------------------------------------------

    def _desired(self) -> str:
        record = self._record
        if record is not None and not record.ready:
            return NodeState.NOT_READY
        if record is not None and record.unschedulable:
            return NodeState.DRAINING
        return NodeState.SCHEDULABLE

    def _settle(self, recovered: bool = False) -> bool:
        """Move between Schedulable, Draining and NotReady as the record says (not while recovering);
        ``True`` if the core was sent the node's record with its new state."""
        state = self.state
        desired = self._desired()
        if state not in NODE_IN_CORE or (state == NodeState.RECOVERING and not recovered) or desired == state:
            self._publish()
            return False
        if desired == NodeState.SCHEDULABLE:
            action = _ACTION.DRAIN_TO_SCHEDULABLE
        elif state == NodeState.SCHEDULABLE:
            action = _ACTION.DRAIN_NODE
        else:
            action = _ACTION.UPDATE  # not schedulable in the core already (recovering or draining)
        self._fire(_TURNS[desired])
        # A turn carries the node's record with its new state: our core applies the attributes and
        # capacity a drain action carries as an UPDATE after it (one item where every recovered node sent two).
        self._send(self._node_info(action))
        return True

    def _track_readiness(self) -> None:
        ready = self._record is None or self._record.ready
        if ready:
            self._not_ready_since = None
        elif self._not_ready_since is None:
            self._not_ready_since = time.monotonic()
            self._alarms.after(self._lost_after, self.actor_ref, NotReadyTooLong(self._not_ready_since))

    def _remove(self) -> None:
        self._fire(NodeEvent.REMOVE)
        self._board.nodes.hide(self.node_name)
        tell_if_alive(self._context, NodeGone(self.node_name, self.actor_ref))

    def _fire(self, event: NodeEvent) -> None:
        state = self._machine.fire(event)
        type_, reason, what = _EVENTS[state]
        # Every node passes New -> Recovering -> Schedulable at start: only trouble is worth a line at info.
        log.log(logging.INFO if type_ == WARNING else logging.DEBUG, "node %s: %s", self.node_name, state)
        if self._recorder is not None:
            tell_if_alive(self._recorder, Feedback((KubeEvent("Node", "", self.node_name, "", type_, reason,
                                                      f"node {self.node_name} is {what}"),)))
        self._publish()

    def _publish(self) -> None:
        if self.state == NodeState.REMOVED:
            return
        record = self._record
        state = self.state
        self._board.nodes.show(self.node_name, NodeView(self.node_name, state == NodeState.SCHEDULABLE,
                                        state not in (NodeState.NEW, NodeState.RECOVERING),
                                        record.allocatable if record else ZERO, 0, state))

    def _node_info(self, action: int) -> si_pb2.NodeInfo:
        """The record's ``NodeInfo`` for ``action`` (register or update): the first of a record built, sent
        and kept unchanged, the next ones copied from it (a recovering node sends two; measured: 1.4 us a
        copy, 6.4 built)."""
        record = self._record
        if self._info_of is None or self._info_of[0] is not record:
            info = translate.node_info(record, action)
            info.attributes[ATTR_NODE_STATE] = self.state
            self._info_of = (record, info)  # from here on only read (the outlet and the core only read it too)
            return info
        info = si_pb2.NodeInfo()
        info.CopyFrom(self._info_of[1])
        info.action = action
        info.attributes[ATTR_NODE_STATE] = self.state
        return info

    def _send(self, *items) -> None:
        tell_if_alive(self._outlet, ToCore(items))


def _foreign_view(pod: PodRecord) -> PodView:
    return pod_view(pod.uid, pod.namespace, pod.name, "", FOREIGN, pod.node_name, True)
