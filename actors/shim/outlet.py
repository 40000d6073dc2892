"""The shim's one door to the core: every SI item the shim's actors send goes through it, in order.

The node and application actors and the context tell ``ToCore`` batches; the outlet merges what
arrives within ``LINGER`` of the first item (or up to ``FLUSH_AT`` items), in ``Outbox`` order, and
sends a few large SI requests: thousands of node actors recovering at once reach the core as a few
requests, not one each. One door keeps the order across senders that causality gives: an item told
after another (by any actor, once it knew of the first) reaches the core after it. ``confirm_to`` asks for a
``CoreConfirmed`` once the core has processed the batch (node recovery waits for that).

Being the door, it also sets each node's SI instance type from the node label that
``service.instanceTypeNodeLabelKey`` names (``InstanceTypeLabel``); when that key changes, every node
the core knows is updated with its new instance type.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
from collections.abc import Mapping

import pykka

from actors.base import Actor, tell_if_alive
from actors.shim import translate
from actors.shim.corelink import CoreLink
from actors.shim.messages import (
    CoreConfirmed,
    CountedForeign,
    FlushDue,
    FlushToCore,
    InstanceTypeLabel,
    NodeAllocations,
    PlacedPod,
    Registered,
    ToCore,
)
from actors.shim.outbox import Outbox
from actors.shim.settings import DEFAULT_INSTANCE_TYPE_LABEL
from actors.shim.ticker import Alarms
from si import si_pb2
from si.clock import REAL_CLOCK, Clock
from si.constants import DEFAULT_PARTITION, NODE_ATTR_INSTANCE_TYPE, label_tag

log = logging.getLogger(__name__)

FLUSH_AT = 2000  # items collected before they are sent even though messages still wait
LINGER = 0.002  # seconds a first item waits for others to be sent with it


class CoreOutlet(Actor):
    """See the module docstring; the requests name the cluster once the shim has registered
    (``Registered``)."""

    kind = "outlet"

    def __init__(self, core: CoreLink, supervisor=None, clock: Clock = REAL_CLOCK) -> None:
        super().__init__(supervisor)
        self._core = core
        self._outbox = Outbox("", self._build)
        self._counted_foreign: set[str] = set()  # pods of ours reported as foreign (``_build``) until released
        self._confirmations: list[tuple[pykka.ActorRef, int]] = []
        self._confirmer = _Confirmer(core)
        self._alarms = Alarms("outlet-linger", clock)
        self._flush_due = False
        self._instance_label = DEFAULT_INSTANCE_TYPE_LABEL
        self._instance_tag = label_tag(DEFAULT_INSTANCE_TYPE_LABEL)  # the attribute that carries the label
        self._node_attributes: dict[str, Mapping[str, str]] = {}  # the last attributes sent, per node

    def on_ToCore(self, msg: ToCore) -> None:
        outbox = self._outbox
        for item in msg.items:
            if isinstance(item, (NodeAllocations, si_pb2.Allocation)):
                outbox.allocate(item)
            elif isinstance(item, si_pb2.AllocationRelease):
                outbox.release(self._released(item) if self._counted_foreign else item)
            elif isinstance(item, si_pb2.NodeInfo):
                outbox.node(self._typed(item))
            elif isinstance(item, si_pb2.AddApplicationRequest):
                outbox.add_application(item)
            else:
                outbox.remove_application(item.applicationID, item.partitionName)
        if msg.confirm_to is not None:
            self._confirmations.append((msg.confirm_to, msg.token))
        if len(outbox) >= FLUSH_AT:
            self._flush()
        elif not self._flush_due:
            # Many actors tell a few items each: linger a moment so that they reach the core together.
            self._flush_due = True
            self._alarms.after(LINGER, self.actor_ref, FlushDue())

    def on_FlushDue(self, msg: FlushDue) -> None:
        if self._flush_due:
            self._flush()

    def on_start(self) -> None:
        self._confirmer.start()

    def on_stop(self) -> None:
        self._alarms.stop()
        self._flush()
        self._confirmer.stop()

    def on_FlushToCore(self, msg: FlushToCore) -> None:
        self._flush()
        self._core.barrier()
        self._confirmer.wait_idle()

    def on_Registered(self, msg: Registered) -> None:
        self._outbox.rm_id = msg.rm_id

    def on_InstanceTypeLabel(self, msg: InstanceTypeLabel) -> None:
        if msg.label == self._instance_label:
            return
        self._instance_label = msg.label
        self._instance_tag = label_tag(msg.label)
        for name, attributes in self._node_attributes.items():
            self._outbox.node(self._typed(si_pb2.NodeInfo(nodeID=name, action=si_pb2.NodeInfo.UPDATE,
                                                          attributes=attributes)))
        self._flush()

    def _typed(self, info: si_pb2.NodeInfo) -> si_pb2.NodeInfo:
        """``info`` with the instance type of the configured label (a copy when that changes it)."""
        if info.action == si_pb2.NodeInfo.DECOMISSION:
            self._node_attributes.pop(info.nodeID, None)
        attributes = info.attributes
        if not attributes:
            return info
        self._node_attributes[info.nodeID] = attributes  # of a message sent as it is: nothing changes it
        value = attributes.get(self._instance_tag)
        if value == attributes.get(NODE_ATTR_INSTANCE_TYPE):
            return info
        typed = si_pb2.NodeInfo()
        typed.CopyFrom(info)
        if value is None:
            del typed.attributes[NODE_ATTR_INSTANCE_TYPE]
        else:
            typed.attributes[NODE_ATTR_INSTANCE_TYPE] = value
        return typed

    def _build(self, allocations, item: NodeAllocations) -> None:
        """The allocations of ``item``'s pods built as the last of ``allocations`` (a request's). A pod of
        ours whose allocation cannot be built is reported as another scheduler's pod at priority 0, so its
        room is counted whatever else it holds, and its node is told; one that cannot be built at all is
        left out."""
        node_id = item.node_id
        allocation, foreign_allocation = translate.allocation, translate.foreign_allocation
        built = len(allocations)  # each pod built adds one
        for placed in item.pods:
            try:
                if placed.foreign:
                    foreign_allocation(placed.pod, placed.priority, DEFAULT_PARTITION, allocations)
                else:
                    allocation(placed.pod, placed.priority, DEFAULT_PARTITION, node_id, placed.originator, allocations)
                built += 1
            except Exception as error:
                del allocations[built:]
                self._build_failed(allocations, item, placed, error)
                built = len(allocations)

    def _build_failed(self, allocations, item: NodeAllocations, placed: PlacedPod, error: Exception) -> None:
        pod = placed.pod
        if placed.foreign:
            log.error("pod %s on node %s not reported, its allocation cannot be built: %r", pod.full_name,
                      item.node_id, error)
            return
        log.error("pod %s on node %s counted as another scheduler's pod at priority 0: %r", pod.full_name,
                  item.node_id, error)
        self._counted_foreign.add(pod.uid)
        if item.reporter is not None:
            tell_if_alive(item.reporter, CountedForeign(pod.uid))
        self._build(allocations, NodeAllocations(item.node_id, (dataclasses.replace(placed, priority=0, foreign=True),)))

    def _released(self, release: si_pb2.AllocationRelease) -> si_pb2.AllocationRelease:
        """A pod reported as foreign (``_build``) is released as foreign, even by a node that had not heard yet."""
        if release.allocationKey not in self._counted_foreign:
            return release
        self._counted_foreign.discard(release.allocationKey)
        foreign = si_pb2.AllocationRelease()
        foreign.CopyFrom(release)
        foreign.applicationID = ""
        return foreign

    def _flush(self) -> None:
        self._flush_due = False
        for request in self._outbox.drain():
            if isinstance(request, si_pb2.AllocationRequest):
                self._core.update_allocation(request)
            elif isinstance(request, si_pb2.ApplicationRequest):
                self._core.update_application(request)
            else:
                self._core.update_node(request)
        if self._confirmations:
            self._confirmer.confirm(tuple(self._confirmations))
            self._confirmations = []


class _Confirmer:
    """Tells senders ``CoreConfirmed`` once the core has processed what was flushed before, on a thread
    of its own: waiting for the core here would keep the outlet from sending the next requests, and
    the core would idle between batches (node recovery sends thousands of confirmed batches)."""

    def __init__(self, core: CoreLink) -> None:
        self._core = core
        self._pending: queue.Queue[tuple[tuple[pykka.ActorRef, int], ...] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="core-confirmer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def confirm(self, confirmations: tuple[tuple[pykka.ActorRef, int], ...]) -> None:
        self._pending.put(confirmations)

    def wait_idle(self) -> None:
        self._pending.join()

    def stop(self) -> None:
        self._pending.put(None)
        self._thread.join(timeout=10)

    def _run(self) -> None:
        stopping = False
        while not stopping:
            batches = [self._pending.get()]
            while not self._pending.empty():  # one wait on the core answers everything flushed so far
                batches.append(self._pending.get())
            stopping = None in batches
            confirmed = [b for b in batches if b is not None]
            try:
                if confirmed:
                    self._core.barrier()
                for confirmations in confirmed:
                    for ref, token in confirmations:
                        tell_if_alive(ref, CoreConfirmed(token))
            except Exception:  # the core stopped: nobody waits for a confirmation any more
                log.exception("confirming node recovery with the core failed")
            finally:
                for _ in batches:
                    self._pending.task_done()
