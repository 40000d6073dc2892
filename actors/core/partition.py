"""A partition: nodes, queues and applications, and the scheduling cycle that places asks on nodes.

This is plain logic owned by one actor (:mod:`actors.core.scheduler`): every decision is taken from
state this object holds, and everything the resource manager must learn is collected in an
:class:`Outbox` that the actor sends after each message, one response per kind.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from time import perf_counter

from actors.core import application as states
from actors.core.accounting import Accounts
from actors.core.allocation import Allocation
from actors.core.application import Application
from actors.core.config import PartitionConfig
from actors.core.events import PendingEvent, pending
from actors.core.holds import NodeHolds
from actors.core.node import Node, NodeIndex
from actors.core.placement import AppPlacementInfo, PlacementManager, PlacementRejected
from actors.core.plugins import NodePredicates, NoPredicates
from actors.core.queue import Queue, QueueTree, limits_from_tags
from actors.core.stats import PartitionStats
from actors.core.ugm import UsageTracker
from actors.core.usergroups import GroupResolver, UnknownUser
from si import si_pb2
from si.clock import NS, REAL_CLOCK, Clock, ns
from si.constants import (
    APP_TAG_NAMESPACE,
    NOT_ENOUGH_QUEUE_QUOTA,
    NOT_ENOUGH_USER_QUOTA,
    RECOVERY_QUEUE,
    TAG_NAMESPACE,
)
from si.history import FinishedApplication
from si.resources import Resource

log = logging.getLogger(__name__)
E = si_pb2.EventRecord
Action = si_pb2.NodeInfo


NO_NODES = "no nodes available to schedule pods"
SCORED_NODES = 100  # feasible nodes an ask with preferences compares (kube-scheduler's minimum to score)
UNSCHEDULABLE = "node(s) were unschedulable"
NODE_NAME = "node(s) didn't match the requested node name"


def is_node_failure(reason: str) -> bool:
    """Whether ``reason`` says that no node takes the ask (rather than a quota or limit holding it)."""
    return reason.startswith("0/") or reason == NO_NODES


@dataclass(frozen=True)
class Timing:
    """Timers of the application life cycle, in seconds (short in tests)."""

    completing: float = 30.0  # Completing -> Completed when nothing new arrives
    retention: float = 3 * 24 * 3600.0  # terminated apps are kept this long, then expire
    starting: float = 300.0  # stateaware: Starting -> Running without a second allocation
    reservation_delay: float = 2.0  # an ask that fitted no node this long reserves one
    reservation_timeout: float = 3600.0  # a reservation not satisfied this long is released


@dataclass
class Outbox:
    new: list[si_pb2.Allocation] = field(default_factory=list)
    released: list[si_pb2.AllocationRelease] = field(default_factory=list)
    rejected_allocations: list[si_pb2.RejectedAllocation] = field(default_factory=list)
    accepted_apps: list[si_pb2.AcceptedApplication] = field(default_factory=list)
    rejected_apps: list[si_pb2.RejectedApplication] = field(default_factory=list)
    updated_apps: list[si_pb2.UpdatedApplication] = field(default_factory=list)
    accepted_nodes: list[si_pb2.AcceptedNode] = field(default_factory=list)
    rejected_nodes: list[si_pb2.RejectedNode] = field(default_factory=list)
    events: list[PendingEvent] = field(default_factory=list)
    scheduling_states: list[si_pb2.UpdateContainerSchedulingStateRequest] = field(default_factory=list)
    finished: list[FinishedApplication] = field(default_factory=list)  # for the history store


class _Cycle:
    """What one scheduling cycle learned: shapes no node takes (and why), apps and queues with nothing
    to place; and the time it spent sorting and evaluating nodes (summed here, observed once per cycle)."""

    __slots__ = ("failed_shapes", "exhausted", "allocations", "sort_apps", "sort_apps_n", "sort_queues",
                 "sort_queues_n", "evaluation", "evaluation_n", "predicates", "predicates_n", "preemptions",
                 "unpreemptable", "preemptions_capped", "reservations", "unreservable")

    def __init__(self) -> None:
        self.failed_shapes: dict = {}
        self.exhausted: set[int] = set()
        self.allocations = 0
        self.sort_apps = self.sort_queues = self.evaluation = self.predicates = 0.0
        self.sort_apps_n = self.sort_queues_n = self.evaluation_n = self.predicates_n = 0
        self.preemptions: dict[int, int] = {}  # id(queue) -> asks of it that preempted this cycle
        self.unpreemptable: set[tuple] = set()  # (id(app), shape): no victims this cycle
        self.preemptions_capped = False  # a queue reached its preemptions of a cycle: another cycle follows
        self.reservations = 0  # made this cycle
        self.unreservable: set[tuple] = set()  # (id(app), shape): no node to reserve this cycle

    def record(self, stats: PartitionStats) -> None:
        histograms = stats.histograms
        histograms["sort_apps"].observe_total(self.sort_apps, self.sort_apps_n)
        histograms["sort_queues"].observe_total(self.sort_queues, self.sort_queues_n)
        histograms["trynode_evaluation"].observe_total(self.evaluation, self.evaluation_n)
        histograms["trynode_latency"].observe_total(self.predicates, self.predicates_n)


class _FoundUsage:
    """Running allocations booked in one batch, summed per queue and per application."""

    __slots__ = ("queues", "apps")

    def __init__(self) -> None:
        self.queues: dict[Queue, dict[str, int]] = {}
        self.apps: dict[str, dict[str, int]] = {}

    def add(self, queue: Queue, app_id: str, resource: Resource) -> None:
        for sums in (self.queues.setdefault(queue, {}), self.apps.setdefault(app_id, {})):
            for name, value in resource.items():
                sums[name] = sums.get(name, 0) + value

    def count(self, usage) -> None:
        for queue, sums in self.queues.items():
            queue.add_allocated(Resource(sums))
        for app_id, sums in self.apps.items():
            usage.allocated(app_id, Resource(sums))


class Partition(NodeHolds):
    def __init__(self, config: PartitionConfig, rm_id: str, predicates: NodePredicates | None = None,
                 timing: Timing | None = None, clock: Clock = REAL_CLOCK) -> None:
        self.name = config.name
        self.clock = clock
        self.rm_id = rm_id
        self.predicates = predicates or NoPredicates()
        self.view = self.predicates.view()  # the predicates' index of where allocations are
        self.timing = timing or Timing()
        self.nodes: dict[str, Node] = {}
        self.apps: dict[str, Application] = {}
        self.terminated: dict[str, Application] = {}  # kept for the retention unless a history store takes them
        self.history: Accounts | None = None  # set while a history store listens (see _retire)
        self.retired: Counter[str] = Counter()  # terminal states of the applications told to the store
        self.total = Resource()
        self.outbox = Outbox()
        self.created = clock.now_ns()
        self._sequence = itertools.count(1)  # orders what arrives and is booked at one time
        self.dirty = True  # something changed that may allow a new allocation
        self.snapshot_cache: dict[tuple[str, str], tuple[int, object]] = {}  # (kind, id) -> (version, snapshot)
        self.allocation_snapshots: dict[str, object] = {}  # allocation key -> its last snapshot (views)
        self.health_cache: dict[str, tuple[int, tuple]] = {}  # node id -> (version, its findings) (health)
        self.stats = PartitionStats()
        self._found: _FoundUsage | None = None  # while a batch of allocations is booked
        self._init_holds()
        self.apply_config(config)

    # Configuration.
    def apply_config(self, config: PartitionConfig) -> None:
        self.config = config
        changes = self.queues.apply(config.root) if hasattr(self, "queues") else []
        if not hasattr(self, "queues"):
            self.queues = QueueTree(config)
        self.placement = PlacementManager(config.placement_rules)
        self.group_resolver = GroupResolver(config.user_group_resolver, lambda: self.clock.monotonic_ns() / NS)
        if hasattr(self, "usage"):
            self.usage.reconfigure(config)
        else:
            self.usage = UsageTracker(config)
        policy = config.node_sort_policy
        self.index = NodeIndex(policy.type, policy.resource_weights)
        for node in self.nodes.values():
            node.index_key = None
            self.index.update(node)
        for change in changes:
            self._event(E.QUEUE, change.split(" ")[0], E.QUEUE_CONFIG, E.SET, change)
        self.dirty = True

    # Outputs.
    def take_outbox(self) -> Outbox:
        outbox, self.outbox = self.outbox, Outbox()
        return outbox

    def _one(self, kind: str, object_id: str, refuse: Callable[..., None] | None = None, *args) -> _Contained:
        """``with self._one(...)`` around the handling of one object of a batch: whatever it raises
        fails that object alone (``refuse(*args, reason)``), never the batch or the partition."""
        return _Contained(self, kind, object_id, refuse, args)

    def _refuse_app(self, request, reason: str) -> None:
        if request.applicationID not in self.apps:
            self._reject_app(request, reason)

    def _refuse_node(self, info, reason: str) -> None:
        if info.nodeID not in self.nodes:
            self.outbox.rejected_nodes.append(si_pb2.RejectedNode(nodeID=info.nodeID, reason=reason))

    def _refuse_allocation(self, message, reason: str) -> None:
        self.outbox.rejected_allocations.append(si_pb2.RejectedAllocation(
            allocationKey=message.allocationKey, applicationID=message.applicationID, reason=reason))

    def _event(self, type_, object_id, detail, change=E.ADD, message="", reference="", resource=None) -> None:
        self.outbox.events.append(pending(type_, object_id, detail, change, message, reference, resource,
                                          timestamp=self.clock.now_ns()))

    def _set_state(self, app: Application, state: str, message: str = "") -> None:
        if app.transition(state, self.clock.now_ns()):
            self.outbox.updated_apps.append(si_pb2.UpdatedApplication(
                applicationID=app.application_id, state=state, stateTransitionTimestamp=app.state_since,
                message=message))
            self._event(E.APP, app.application_id, states.STATE_EVENTS[state], E.SET, message)
            if state == states.COMPLETING:
                # as upstream: an application without allocations or asks no longer runs (its queue's
                # running count and its user's and group's runningApplications), though it is not done
                self._stop_running(app)
            if state in (states.COMPLETED, states.FAILED):
                label = "completed" if state == states.COMPLETED else "failed"
                self.stats.add(f"apps_{label}")
                queue = self.queues.get(app.queue_path)
                if queue is not None:
                    queue.app_totals[label] += 1
                self._forget(app)  # as upstream, on entering either: among the completed applications

    # Nodes.
    def update_nodes(self, infos) -> None:
        """One at a time: a node whose handling raises is refused alone, never the batch."""
        for info in infos:
            with self._one("node", info.nodeID, self._refuse_node, info):
                self._update_nodes((info,))

    def _update_nodes(self, infos) -> None:
        for info in infos:
            action = info.action
            node = self.nodes.get(info.nodeID)
            if action in (Action.CREATE, Action.CREATE_DRAIN):
                if node is not None:
                    self.outbox.rejected_nodes.append(si_pb2.RejectedNode(
                        nodeID=info.nodeID, reason=f"node {info.nodeID} already exists"))
                    continue
                self._add_node(info, schedulable=action == Action.CREATE)
            elif node is None:
                self.outbox.rejected_nodes.append(si_pb2.RejectedNode(
                    nodeID=info.nodeID, reason=f"node {info.nodeID} not found"))
            elif action == Action.UPDATE:
                self._update_node(node, info)
            elif action in (Action.DRAIN_NODE, Action.DRAIN_TO_SCHEDULABLE):
                node.schedulable = action == Action.DRAIN_TO_SCHEDULABLE
                self.index.update(node)
                self._event(E.NODE, node.node_id, E.NODE_SCHEDULABLE, E.SET, str(node.schedulable).lower())
            elif action == Action.DECOMISSION:
                self._remove_node(node)
        self.dirty = True

    def _add_node(self, info: si_pb2.NodeInfo, schedulable: bool) -> None:
        capacity = Resource.from_proto(info.schedulableResource)
        if capacity.has_negative():
            self.outbox.rejected_nodes.append(si_pb2.RejectedNode(
                nodeID=info.nodeID, reason=f"negative capacity {capacity.negative_components()}"))
            self.stats.add("nodes_failed")
            return
        node = Node(info.nodeID, capacity, info.attributes, schedulable)
        node.restricted = self.predicates.node_restricted(node.attributes)
        self.nodes[node.node_id] = node
        self.view.node_updated(node.node_id, node.attributes)
        self.total = self.total + capacity
        self.index.update(node)
        self.outbox.accepted_nodes.append(si_pb2.AcceptedNode(nodeID=node.node_id))
        self._event(E.NODE, node.node_id, E.DETAILS_NONE, E.ADD, "node added", resource=capacity)

    def _update_node(self, node: Node, info: si_pb2.NodeInfo) -> None:
        if info.attributes:
            node.attributes = dict(info.attributes)
            node.restricted = self.predicates.node_restricted(node.attributes)
            self.view.node_updated(node.node_id, node.attributes)
        if info.HasField("schedulableResource"):
            capacity = Resource.from_proto(info.schedulableResource)
            if capacity != node.capacity:
                self.total = self.total - node.capacity + capacity
                node.capacity = capacity
                self._event(E.NODE, node.node_id, E.NODE_CAPACITY, E.SET, "capacity changed", resource=capacity)
        self.index.update(node)

    def _remove_node(self, node: Node) -> None:
        self._node_going(node)
        for allocation in list(node.allocations.values()):
            self._release(allocation, si_pb2.STOPPED_BY_RM, f"node {node.node_id} removed", notify=True)
            self._event(E.APP, allocation.application_id, E.ALLOC_NODEREMOVED, E.REMOVE,
                        f"node {node.node_id} removed", allocation.key)
        for allocation in list(node.foreign.values()):
            self._unbook(node, allocation.key)
        self.index.discard(node)
        del self.nodes[node.node_id]
        self.view.node_removed(node.node_id)
        self.total = self.total - node.capacity
        self.stats.add("nodes_decommissioned")
        self._event(E.NODE, node.node_id, E.NODE_DECOMISSION, E.REMOVE, "node removed")

    # Applications.
    def add_applications(self, requests) -> None:
        """One at a time: an application whose handling raises is refused alone, never the batch."""
        for request in requests:
            with self._one("application", request.applicationID, self._refuse_app, request):
                self._add_applications((request,))

    def _add_applications(self, requests) -> None:
        self.stats.add("apps_new", len(requests))
        for request in requests:
            existing = self.apps.get(request.applicationID)
            if existing is not None:
                # The shim submits an application again when a new actor takes it over (its last pod went
                # and a new one came before the core completed it): it goes on, as upstream's shim would
                # have kept it. Its first answer may come before the old actor's last releases.
                self.outbox.accepted_apps.append(si_pb2.AcceptedApplication(applicationID=existing.application_id))
                continue
            tags = dict(request.tags)
            tags.setdefault(APP_TAG_NAMESPACE, tags.get(TAG_NAMESPACE, ""))
            user = request.ugi.user or "nobody"
            try:
                groups = self.group_resolver.groups(user, tuple(request.ugi.groups))
            except UnknownUser as error:
                self._reject_app(request, str(error))
                continue
            info = AppPlacementInfo(request.applicationID, request.queueName, user, groups, tags)
            try:
                placement = self.placement.place(info, self.queues)
            except PlacementRejected as rejected:
                self._reject_app(request, rejected.reason)
                continue
            queue = self.queues.create(placement.queue_path) if placement.create else self.queues.get(placement.queue_path)
            if placement.create:
                self._event(E.QUEUE, queue.path, E.QUEUE_DYNAMIC, E.ADD, "created by placement rule")
            if not queue.managed and queue.path != RECOVERY_QUEUE:
                self._apply_tag_limits(queue, tags)
            too_large = _gang_too_large(queue, Resource.from_proto(request.placeholderAsk))
            if too_large:
                self._reject_app(request, too_large)
                continue
            app = Application(request, self.name, queue.path, self.clock.now_ns(), next(self._sequence))
            app.groups = groups
            self.apps[app.application_id] = app
            queue.apps[app.application_id] = app
            self.outbox.accepted_apps.append(si_pb2.AcceptedApplication(applicationID=app.application_id))
            self._event(E.APP, app.application_id, E.APP_NEW, E.ADD, f"placed in {queue.path}")
            self._event(E.QUEUE, queue.path, E.QUEUE_APP, E.ADD, "", app.application_id)

    def _apply_tag_limits(self, queue: Queue, tags) -> None:
        """A dynamic queue takes the limits its application's namespace asks for (as upstream, on every
        application placed there): the quota as max, the guaranteed resource, the maximum applications."""
        guaranteed, maximum, max_apps = limits_from_tags(tags)
        if guaranteed is None and maximum is None and not max_apps:
            return
        before = (queue.guaranteed, queue.max, queue.max_apps)
        queue.apply_limits(guaranteed, maximum, max_apps)
        if before[1] != queue.max:
            self._event(E.QUEUE, queue.path, E.QUEUE_MAX, E.SET, f"max {dict(queue.max or {})} from the namespace")
        if before[0] != queue.guaranteed:
            self._event(E.QUEUE, queue.path, E.QUEUE_GUARANTEED, E.SET,
                        f"guaranteed {dict(queue.guaranteed or {})} from the namespace")
        if before[1] != queue.max or before[2] != queue.max_apps:
            self.dirty = True

    def _reject_app(self, request, reason: str) -> None:
        self.outbox.rejected_apps.append(si_pb2.RejectedApplication(applicationID=request.applicationID, reason=reason))
        self._event(E.APP, request.applicationID, E.APP_REJECT, E.ADD, reason)
        now = self.clock.now_ns()
        app = Application(request, self.name, "", now)
        app.rejected_message = reason
        app.transition(states.REJECTED, now)
        self._retire(app)

    def remove_applications(self, requests) -> None:
        for request in requests:
            app = self.apps.get(request.applicationID)
            if app is None:
                continue
            for ask in list(app.asks):
                self._remove_ask(app, ask)
            for allocation in list(app.allocations.values()):
                self._release(allocation, si_pb2.STOPPED_BY_RM, "application removed", notify=False)
            if app.state == states.FAILING:
                self._set_state(app, states.FAILED, "removed by the resource manager")
            elif app.state in (states.NEW, states.ACCEPTED, states.RESUMING):
                if app.state == states.RESUMING:
                    self._set_state(app, states.ACCEPTED)
                self._set_state(app, states.COMPLETED, "removed before it ran")
            elif app.state in (states.STARTING, states.RUNNING, states.COMPLETING):
                self._set_state(app, states.COMPLETING)
                self._set_state(app, states.COMPLETED, "removed by the resource manager")
        self.dirty = True

    def _forget(self, app: Application) -> None:
        """A terminated application leaves its queue for the partition's completed ones."""
        queue = self.queues.get(app.queue_path)
        if queue is not None:
            queue.apps.pop(app.application_id, None)
        self._stop_running(app)
        del self.apps[app.application_id]
        self._retire(app)
        for path in self.queues.prune():
            self._event(E.QUEUE, path, E.QUEUE_CONFIG, E.REMOVE, "queue removed")

    def _retire(self, app: Application) -> None:
        """A terminal application: kept for the retention, or, with a history store, told to it and
        dropped from memory."""
        if self.history is None:
            self.terminated[app.application_id] = app
        else:
            self.outbox.finished.append(self.history.finished(app, self.clock.now_ns()))
            self.retired[app.state] += 1

    def _start_running(self, app: Application, queue: Queue) -> None:
        queue.add_running(1)
        self.usage.app_started(app.application_id, app.user, app.groups, queue.path)

    def _stop_running(self, app: Application) -> None:
        if self.usage.tracks(app.application_id):
            queue = self.queues.get(app.queue_path)
            if queue is not None:
                queue.add_running(-1)
            self.usage.app_removed(app.application_id)
            self.dirty = True  # a running slot is free: an application held by maxapplications may start

    # Asks and allocations.
    def update_allocations(self, allocations, releases) -> None:
        for release in releases:
            with self._one("release", release.allocationKey):
                self._handle_release(release)
        # Allocations found running are summed per queue and per application and counted once at the
        # end of the batch (a recovery books tens of thousands; nothing in between reads the sums).
        self._found = _FoundUsage()
        try:
            for message in allocations:
                with self._one("allocation", message.allocationKey, self._refuse_allocation, message):
                    if message.nodeID:
                        self._add_existing(message)
                    else:
                        self._add_ask(message)
        finally:
            found, self._found = self._found, None
            found.count(self.usage)
        self.dirty = True

    def _add_ask(self, message: si_pb2.Allocation) -> None:
        app = self.apps.get(message.applicationID)
        if app is None:
            self.outbox.rejected_allocations.append(si_pb2.RejectedAllocation(
                allocationKey=message.allocationKey, applicationID=message.applicationID,
                reason=f"application {message.applicationID} not found"))
            self.stats.add("errors")
            return
        if message.allocationKey in app.allocations:
            return  # already placed: an ask repeated by the resource manager changes nothing
        ask = Allocation(message, self.name, self.clock.now_ns(), next(self._sequence),
                         self.predicates.ask_constrained(message.allocationTags))
        if ask.resource.has_negative():
            self.outbox.rejected_allocations.append(si_pb2.RejectedAllocation(
                allocationKey=ask.key, applicationID=app.application_id,
                reason=f"negative resource request {ask.resource.negative_components()}"))
            return
        replaced = self._pend(app, ask)
        if ask.placeholder and replaced is None:
            app.count_placeholder(ask, self.clock.now_ns())
        if app.state == states.NEW:
            self._set_state(app, states.ACCEPTED)
        elif app.state == states.COMPLETING:
            self._set_state(app, states.RUNNING, "new request")
        self._event(E.APP, app.application_id, E.APP_REQUEST, E.ADD, "", ask.key, ask.resource)

    def _add_existing(self, message: si_pb2.Allocation) -> None:
        """An allocation already running on a node: accepted as the cluster's truth, even over quota."""
        node = self.nodes.get(message.nodeID)
        allocation = Allocation(message, self.name, self.clock.now_ns(), next(self._sequence))
        if node is None:
            self.outbox.rejected_allocations.append(si_pb2.RejectedAllocation(
                allocationKey=allocation.key, applicationID=allocation.application_id,
                reason=f"node {message.nodeID} not found"))
            self.stats.add("errors")
            return
        if allocation.foreign:
            existing = node.foreign.get(allocation.key)
            if existing is not None:
                node.resize(existing, allocation.resource)
            else:
                self._book(node, allocation)
            self.index.update(node)
            self._event(E.NODE, node.node_id, E.NODE_OCCUPIED, E.SET, "foreign allocation", allocation.key,
                        node.occupied)
            return
        app = self.apps.get(allocation.application_id)
        if app is None:
            self.outbox.rejected_allocations.append(si_pb2.RejectedAllocation(
                allocationKey=allocation.key, applicationID=allocation.application_id,
                reason=f"application {allocation.application_id} not found"))
            self.stats.add("errors")
            return
        current = app.allocations.get(allocation.key)
        queue = self.queues.get(app.queue_path)
        if current is not None and current.preempted:  # still running: its eviction was refused
            self._eviction_refused(app, current)
            return
        if current is not None:  # the resource manager reports a changed size (a resized pod)
            self._resize_allocation(app, queue, current, allocation.resource)
            return
        pending = app.find_ask(allocation.key)
        if pending is not None:
            self._remove_ask(app, pending)
        elif allocation.placeholder:
            app.count_placeholder(allocation, self.clock.now_ns())
        self._place(app, queue, allocation, node, decided=False)

    def _resize_allocation(self, app: Application, queue: Queue, current: Allocation, resource: Resource) -> None:
        """A running allocation changed size (an in-place pod resize), as upstream's ``UpdateAllocation`` takes
        it: the allocation, its application, node, queues and user and group usage all move by the
        difference, even over a quota. A size with nothing or a negative amount is refused, changing nothing."""
        problem = ("allocation contains no resources" if resource.is_zero()
                   else f"allocation contains negative resources {resource.negative_components()}"
                   if resource.has_negative() else "")
        if problem:
            self.outbox.rejected_allocations.append(si_pb2.RejectedAllocation(
                allocationKey=current.key, applicationID=app.application_id, reason=problem))
            self.stats.add("errors")
            return
        delta = resource - current.resource
        if delta.is_zero():
            return
        app.resize(current, resource)
        holder = self.nodes.get(current.node_id)
        if holder is not None:
            holder.resize(current, resource)
            self.index.update(holder)
        else:
            current.resource = resource
        queue.add_allocated(delta)
        self.usage.allocated(app.application_id, delta)
        log.debug("allocation %s of %s resized by %s", current.key, app.application_id, delta)

    def _pend(self, app: Application, ask: Allocation) -> Allocation | None:
        """Put ``ask`` among the application's pending asks, counted in its queues; the ask it replaced."""
        replaced = app.add_ask(ask)
        if replaced is not None and (replaced.preempting is not None or replaced.reserved is not None):
            self._ask_going(replaced)  # its node is held for the ask it was, not for this one
        queue = self.queues.get(app.queue_path)
        if queue is not None:
            queue.add_pending(ask.resource - (replaced.resource if replaced else Resource()))
            queue.count_priority(ask.priority, 1)
            if replaced is not None:
                queue.count_priority(replaced.priority, -1)
        return replaced

    def _remove_ask(self, app: Application, ask: Allocation) -> None:
        if ask.preempting is not None or ask.reserved is not None:
            self._ask_going(ask)
        app.remove_ask(ask)
        queue = self.queues.get(app.queue_path)
        if queue is not None:
            queue.add_pending(-ask.resource)
            queue.count_priority(ask.priority, -1)

    def _handle_release(self, release: si_pb2.AllocationRelease) -> None:
        key = release.allocationKey
        app = self.apps.get(release.applicationID)
        if app is None:
            for node in self.nodes.values() if not release.applicationID else ():
                if key in node.foreign:
                    self._unbook(node, key)
                    self.index.update(node)
                    self._event(E.NODE, node.node_id, E.NODE_OCCUPIED, E.SET, "foreign allocation released", key,
                                node.occupied)
                    return
            return
        if not key:
            for ask in list(app.asks):
                self._remove_ask(app, ask)
            app.replacing.clear()
            for allocation in list(app.allocations.values()):
                self._release(allocation, release.terminationType, release.message, notify=False)
            self._maybe_completing(app)
            return
        allocation = app.allocations.get(key)
        if allocation is not None:
            self._release(allocation, release.terminationType, release.message, notify=False)
            if allocation.replacement is not None:
                self._take_over(app, allocation)
        elif key in app.replacing:  # a real pod gone before its placeholder was: the placeholder just ends
            app.replacing.pop(key).replacement = None
        else:
            ask = app.find_ask(key)
            if ask is not None:
                self._remove_ask(app, ask)
                self._event(E.REQUEST, key, E.REQUEST_CANCEL, E.REMOVE, "request cancelled", app.application_id)
        self._maybe_completing(app)

    def release_foreign(self, key: str) -> None:
        for node in self.nodes.values():
            if key in node.foreign:
                self._unbook(node, key)
                self.index.update(node)
                return

    def _release(self, allocation: Allocation, termination: int, message: str, notify: bool) -> None:
        app = self.apps.get(allocation.application_id)
        if app is None or app.remove_allocation(allocation.key) is None:
            return
        if self.history is not None:
            self.history.released(allocation, self.clock.now_ns())
        if allocation.placeholder:
            app.allocated_placeholder = app.allocated_placeholder - allocation.resource
            app.placeholder_ended(allocation, replaced=allocation.placeholder_released == si_pb2.PLACEHOLDER_REPLACED)
        if app.state in (states.RESUMING, states.FAILING):
            self._gang_settled(app)
        node = self.nodes.get(allocation.node_id)
        if node is not None:
            self._unbook(node, allocation.key)
            self.index.update(node)
        queue = self.queues.get(app.queue_path)
        if queue is not None:
            queue.add_allocated(-allocation.resource)
            queue.containers["released"] += 1
        if allocation.preempted:
            self._victim_gone(allocation, queue)
        self.stats.add("released")
        self.usage.released(app.application_id, allocation.resource)
        self._event(E.APP, app.application_id, E.APP_ALLOC, E.REMOVE, message, allocation.key, allocation.resource)
        if notify:
            self.outbox.released.append(si_pb2.AllocationRelease(
                partitionName=self.name, applicationID=app.application_id, allocationKey=allocation.key,
                terminationType=termination, message=message))
        self.dirty = True

    def _maybe_completing(self, app: Application) -> None:
        if app.is_empty and app.state in (states.STARTING, states.RUNNING, states.ACCEPTED):
            self._set_state(app, states.COMPLETING)

    def _place(self, app: Application, queue: Queue, allocation: Allocation, node: Node, decided: bool) -> None:
        """Book ``allocation`` on ``node`` for ``app`` (a new decision, or one found running)."""
        allocation.node_id = node.node_id
        allocation.allocation_time = self.clock.now_ns()
        allocation.booked = next(self._sequence)
        if not self.usage.tracks(app.application_id):
            self._start_running(app, queue)
        app.add_allocation(allocation)
        if allocation.placeholder:
            app.allocated_placeholder = app.allocated_placeholder + allocation.resource
        self._book(node, allocation)
        self.index.update(node)
        queue.containers["allocated"] += 1
        if self._found is not None and not decided:
            self._found.add(queue, app.application_id, allocation.resource)
        else:
            queue.add_allocated(allocation.resource)
            self.usage.allocated(app.application_id, allocation.resource)
        if app.state in (states.NEW, states.ACCEPTED):
            if app.state == states.NEW:
                self._set_state(app, states.ACCEPTED)
            if not allocation.placeholder or app.all_placeholders_allocated():  # a gang runs once it has all its room
                self._set_running(app, queue, decided)
        elif app.state == states.STARTING and len(app.allocations) > 1:
            self._set_state(app, states.RUNNING)
        elif app.state == states.COMPLETING:
            self._set_state(app, states.RUNNING)
        if decided:
            self.outbox.new.append(allocation.to_proto())
            self._event(E.REQUEST, allocation.key, E.REQUEST_ALLOC, E.NONE, f"allocated on {node.node_id}",
                        app.application_id, allocation.resource)
        self._event(E.NODE, node.node_id, E.NODE_ALLOC, E.ADD, "", allocation.key, allocation.resource)

    def _set_running(self, app: Application, queue: Queue, decided: bool) -> None:
        stateaware = queue.sort_policy == "stateaware" and app.state_aware and decided
        self._set_state(app, states.STARTING if stateaware else states.RUNNING)

    # Gang placeholders.
    def _try_replace(self, app: Application) -> bool:
        """The placeholder pass: a real pod of a task group takes over an allocated placeholder of its
        group, on the placeholder's node. The placeholder is released (``PLACEHOLDER_REPLACED``) and
        stays booked until its pod is gone; then the real pod gets its allocation (``_take_over``).
        A real pod larger than its group's placeholders ends them instead (``TIMEOUT``), and
        one whose constraints no placeholder's node meets is placed on another node while one
        placeholder of its group is given up."""
        held = [a for a in app.allocations.values() if a.placeholder and not a.placeholder_released]
        for ask in app.asks:
            if not app.waits_for_placeholder(ask):
                continue
            fallback = None
            for placeholder in held:
                if placeholder.placeholder_released or placeholder.task_group != ask.task_group:
                    continue
                if not ask.resource.fits_in(placeholder.resource):
                    self._give_up_placeholder(app, placeholder, si_pb2.TIMEOUT,
                                              f"cancel placeholder: {ask.key} asks more than it holds")
                    continue
                node = self.nodes.get(placeholder.node_id)
                if node is None or not self._meets_constraints(ask, node):
                    fallback = fallback or placeholder
                    continue
                self._remove_ask(app, ask)
                placeholder.replacement = ask
                app.replacing[ask.key] = placeholder
                self._give_up_placeholder(app, placeholder, si_pb2.PLACEHOLDER_REPLACED, f"replaced by {ask.key}")
                return True
            if fallback is not None:
                node, _ = self._find_node(ask, _Cycle())
                if node is not None:
                    self._give_up_placeholder(app, fallback, si_pb2.PLACEHOLDER_REPLACED,
                                              f"replaced by {ask.key} on {node.node_id}")
                    self._remove_ask(app, ask)
                    ask.placeholder_used = True
                    self._place(app, self.queues.get(app.queue_path), ask, node, decided=True)
                    return True
        return False

    def _meets_constraints(self, ask: Allocation, node: Node, without: Collection[str] = ()) -> bool:
        """Whether ``node`` passes ``ask``'s predicates, with the allocations ``without`` gone from it (a
        preemption's victims; the topology view still counts them, so it errs on the side of refusing)."""
        if not (ask.constrained or node.restricted or self.view.guarded(node.node_id)):
            return True
        return self.predicates.check(ask.tags, node.node_id, node.attributes,
                                     (a.tags for a in node.all_allocations() if a.key not in without),
                                     self.view) is None

    def _give_up_placeholder(self, app: Application, placeholder: Allocation, termination: int, message: str) -> None:
        """Tell the resource manager to remove a placeholder's pod; its room stays booked until it
        confirms, so the node is never promised twice."""
        placeholder.placeholder_released = termination
        self.outbox.released.append(si_pb2.AllocationRelease(
            partitionName=self.name, applicationID=app.application_id, allocationKey=placeholder.key,
            terminationType=termination, message=message))
        detail = E.ALLOC_REPLACED if termination == si_pb2.PLACEHOLDER_REPLACED else E.ALLOC_TIMEOUT
        self._event(E.APP, app.application_id, detail, E.REMOVE, message, placeholder.key, placeholder.resource)

    def _take_over(self, app: Application, placeholder: Allocation) -> None:
        """The placeholder's pod is gone: the real pod waiting for it gets its room on its node."""
        real = placeholder.replacement
        placeholder.replacement = None
        app.replacing.pop(real.key, None)
        node = self.nodes.get(placeholder.node_id)
        queue = self.queues.get(app.queue_path)
        if node is not None and queue is not None and node.schedulable and real.resource.fits_in(node.available):
            real.placeholder_used = True
            self._place(app, queue, real, node, decided=True)
        else:  # the node went meanwhile: the real pod is asked for again, as any other
            real.last_failure = ""
            self._pend(app, real)

    def _placeholders_timed_out(self, app: Application) -> None:
        """The reservation's timer ran out. A gang that got all its room gives back the placeholders no
        real pod took; otherwise a Soft gang resumes as ordinary pods and a Hard one fails."""
        app.placeholder_deadline = 0
        if app.state not in (states.STARTING, states.RUNNING, states.COMPLETING):
            hard = app.gang_style == states.HARD
            if hard:  # the application's pods are failed by the resource manager: nothing more to place
                for ask in [a for a in app.asks if not a.placeholder]:
                    self._remove_ask(app, ask)
            self._set_state(app, states.FAILING if hard else states.RESUMING, states.RESERVATION_TIMEOUT)
        for ask in [a for a in app.asks if a.placeholder]:
            self._remove_ask(app, ask)
            app.placeholder_ended(ask, replaced=False)
            self.outbox.released.append(si_pb2.AllocationRelease(
                partitionName=self.name, applicationID=app.application_id, allocationKey=ask.key,
                terminationType=si_pb2.TIMEOUT, message="placeholder timed out"))
        for placeholder in list(app.allocations.values()):
            if placeholder.placeholder and not placeholder.placeholder_released:
                self._give_up_placeholder(app, placeholder, si_pb2.TIMEOUT, "placeholder timed out")
        self._gang_settled(app)
        self.dirty = True

    def _gang_settled(self, app: Application) -> None:
        """After a timeout, once no placeholder is left: a resuming gang is an ordinary application, a
        failing one has failed."""
        if any(a.placeholder for a in app.allocations.values()):
            return
        if app.state == states.RESUMING:
            self._set_state(app, states.ACCEPTED, "placeholders released")
        elif app.state == states.FAILING and not app.allocations:
            self._set_state(app, states.FAILED, states.RESERVATION_TIMEOUT)

    # The scheduling cycle.
    def schedule(self, max_allocations: int = 1000, max_seconds: float = 0.05) -> int:
        """Place as many pending asks as possible, within the given budget; returns how many."""
        if not self.dirty:
            return 0
        began = perf_counter()
        cycle = _Cycle()
        deadline = self.clock.monotonic_ns() + ns(max_seconds)
        if self.reservations:
            self._place_reserved(cycle)
        while cycle.allocations < max_allocations and self.clock.monotonic_ns() < deadline:
            if not self._allocate_one(self.queues.root, cycle):
                self.dirty = False
                break
            cycle.allocations += 1
        if cycle.preemptions_capped:
            self.dirty = True
        took = perf_counter() - began
        histograms = self.stats.histograms
        histograms["scheduling_cycle"].observe(took)
        # Upstream times each allocation it makes; a batch makes many, each taking the batch's mean.
        histograms["scheduling_latency"].observe_total(took, cycle.allocations)
        cycle.record(self.stats)
        return cycle.allocations

    def _allocate_one(self, queue: Queue, cycle: _Cycle) -> bool:
        if id(queue) in cycle.exhausted or not queue.pending_priorities:
            return False
        if queue.leaf:
            placed = self._allocate_in_leaf(queue, cycle)
        else:
            began = perf_counter()
            children = self._sorted_children(queue)
            cycle.sort_queues += perf_counter() - began
            cycle.sort_queues_n += 1
            placed = any(self._allocate_one(child, cycle) for child in children)
        if not placed:
            cycle.exhausted.add(id(queue))
        return placed

    def _sorted_children(self, queue: Queue) -> list[Queue]:
        children = [c for c in queue.children.values() if c.pending_priorities]
        if len(children) < 2:
            return children
        total = self.total
        if queue.priority_sorting:
            return sorted(children, key=lambda c: (-c.priority(), c.share(total), -sum(c.pending.values()), c.name))
        return sorted(children, key=lambda c: (c.share(total), -sum(c.pending.values()), c.name))

    def _sorted_apps(self, queue: Queue) -> list[Application]:
        apps = [a for a in queue.apps.values() if a.asks]
        policy = queue.sort_policy
        if policy == "fair":
            total = self.total
            key = lambda a: (a.used.dominant_share(total), a.submission_time, a.arrived, a.application_id)  # noqa: E731
        else:
            key = lambda a: (a.submission_time, a.arrived, a.application_id)  # noqa: E731
        if queue.priority_sorting:
            apps.sort(key=lambda a: (-a.priority, *key(a)))
        else:
            apps.sort(key=key)
        if policy == "stateaware":
            apps = self._stateaware_filter(queue, apps)
        return apps

    @staticmethod
    def _stateaware_filter(queue: Queue, apps: list[Application]) -> list[Application]:
        """Only one application may be starting at a time: running ones, plus one Starting or new one."""
        starting = any(a.state == states.STARTING for a in queue.apps.values())
        chosen, admitted_new = [], starting
        for app in apps:
            if app.state in (states.RUNNING, states.COMPLETING, states.STARTING) or not app.state_aware:
                chosen.append(app)
            elif not admitted_new:
                chosen.append(app)
                admitted_new = True
        return chosen

    def _allocate_in_leaf(self, queue: Queue, cycle: _Cycle) -> bool:
        began = perf_counter()
        apps = self._sorted_apps(queue)
        cycle.sort_apps += perf_counter() - began
        cycle.sort_apps_n += 1
        now = 0
        for app in apps:
            if id(app) in cycle.exhausted:
                continue
            if app.backoff_until:
                now = now or self.clock.now_ns()
                if now < app.backoff_until:
                    continue
                app.backoff_until = 0
                app.version += 1
            if not self.usage.tracks(app.application_id):
                if not queue.can_run_another_app():
                    self._note_waiting(app, f"queue {queue.path}: maxapplications reached")
                    cycle.exhausted.add(id(app))
                    continue
                if not self.usage.can_run_app(app.user, app.groups, queue.path, app.application_id):
                    self._note_waiting(app, f"user {app.user}: maxapplications limit reached in {queue.path}")
                    cycle.exhausted.add(id(app))
                    continue
            if self._allocate_for_app(app, queue, cycle):
                app.unplaced_attempts = 0
                return True
            cycle.exhausted.add(id(app))
            if queue.ask_backoff:
                self._count_unplaced(app, queue)
        return False

    def _count_unplaced(self, app: Application, queue: Queue) -> None:
        """The unschedulable-ask backoff: after ``application.unschedasks.backoff`` attempts in a row that
        placed nothing, the application is not tried for ``application.unschedasks.backoff.delay``."""
        app.unplaced_attempts += 1
        if app.unplaced_attempts < queue.ask_backoff:
            return
        app.unplaced_attempts = 0
        app.backoff_until = self.clock.now_ns() + int(queue.ask_backoff_delay * 1e9)
        app.version += 1
        self._wake_at(app.backoff_until)
        self._event(E.APP, app.application_id, E.DETAILS_NONE, E.SET,
                    f"backs off for {queue.ask_backoff_delay:g}s after {queue.ask_backoff} attempts without a placement")

    def _note_waiting(self, app: Application, reason: str) -> None:
        for ask in app.asks:
            self._note_failure(app, ask, reason)

    def _allocate_for_app(self, app: Application, queue: Queue, cycle: _Cycle) -> bool:
        if app.placeholders and not app.allocated_placeholder.is_zero() and self._try_replace(app):
            return True
        headroom = queue.headroom()
        user_headroom = self.usage.headroom(app.user, app.groups, queue.path)
        for ask in app.asks:
            if ask.preempting is not None or (app.placeholders and app.waits_for_placeholder(ask)):
                continue
            shape_failure = cycle.failed_shapes.get(ask.shape) if ask.shape is not None else None
            if shape_failure is not None:
                # Every pod waiting for this reason is told so, not only the first one of its shape.
                if not is_node_failure(ask.last_failure):
                    self._note_failure(app, ask, shape_failure)
                if self._no_node(app, queue, ask, cycle, headroom, user_headroom):
                    return True
                continue
            if not ask.attempted:
                ask.attempted = True
                app.version += 1
            if user_headroom is not None and not ask.resource.fits_in_max(user_headroom):
                self._note_failure(app, ask, f"user {app.user}: resource limit reached in {queue.path}",
                                   NOT_ENOUGH_USER_QUOTA)
                continue
            if headroom is not None and not ask.resource.fits_in_max(headroom):
                # As upstream, victims inside the queue whose max it would break may make room.
                if self._try_preempt(app, queue, ask, cycle, headroom, user_headroom):
                    return True
                self._note_failure(app, ask, queue.limiting_max(ask.resource) or f"queue {queue.path}: max reached",
                                   NOT_ENOUGH_QUEUE_QUOTA)
                continue
            began = perf_counter()
            node, shape_decided = self._find_node(ask, cycle)
            cycle.evaluation += perf_counter() - began
            cycle.evaluation_n += 1
            if node is None:
                if ask.shape is not None and shape_decided:
                    cycle.failed_shapes[ask.shape] = ask.last_failure
                if self._no_node(app, queue, ask, cycle, headroom, user_headroom):
                    return True
                continue
            self._remove_ask(app, ask)
            ask.last_failure = ""
            self._place(app, queue, ask, node, decided=True)
            return True
        return False

    def _book(self, node: Node, allocation: Allocation) -> None:
        node.add(allocation)
        self.view.allocation_added(node.node_id, allocation.key, allocation.tags)

    def _unbook(self, node: Node, key: str) -> None:
        if node.remove(key) is not None:
            self.view.allocation_removed(node.node_id, key)

    def _find_node(self, ask: Allocation, cycle: _Cycle) -> tuple[Node | None, bool]:
        """The first node in policy order that takes ``ask``, and whether the ask's shape alone decided
        the outcome (no predicate looked at the ask's other properties, e.g. its labels or tolerations)."""
        nodes = self.nodes
        if ask.required_node:
            required = nodes.get(ask.required_node)
            candidates = [ask.required_node] if required is not None and required.held_by in ("", ask.key) else []
        else:
            candidates = self.index
        rejected: dict[str, int] = {}  # predicate reason -> nodes it rejected
        guarded = self.view.guarded
        prefers = ask.constrained and self.predicates.ask_prefers(ask.tags)
        best, best_score, scored = None, 0.0, 0
        for node_id in candidates:
            node = nodes[node_id]
            if not node.schedulable:
                continue
            if not ask.resource.fits_in(node.available):
                continue
            if ask.constrained or node.restricted or guarded(node_id):
                began = perf_counter()
                why = self.predicates.check(ask.tags, node_id, node.attributes,
                                            (a.tags for a in node.all_allocations()), self.view)
                cycle.predicates += perf_counter() - began
                cycle.predicates_n += 1
                if why is not None:
                    rejected[why] = rejected.get(why, 0) + 1
                    continue
            if not prefers:
                return node, False
            # The ask ranks nodes: the best of the first SCORED_NODES that take it, in policy order on ties.
            score = self.predicates.score(ask.tags, node_id, node.attributes, self.view)
            if best is None or score > best_score:
                best, best_score = node, score
            scored += 1
            if scored >= SCORED_NODES:
                break
        if best is not None:
            return best, False
        if not is_node_failure(ask.last_failure):
            self._note_failure(None, ask, self._explain(ask, candidates, rejected))
        return None, not rejected

    def _explain(self, ask: Allocation, candidates, rejected: dict[str, int]) -> str:
        """Why no node takes ``ask``, as kube-scheduler writes it: ``0/5 nodes are available: 3 Insufficient
        vcore, 2 node(s) didn't match pod anti-affinity rules.`` (each node counted once per reason)."""
        if not self.nodes:
            return NO_NODES
        counts = dict(rejected)
        considered = 0
        for node_id in candidates:
            node = self.nodes[node_id]
            considered += 1
            if not node.schedulable:
                counts[UNSCHEDULABLE] = counts.get(UNSCHEDULABLE, 0) + 1
                continue
            available = node.available
            for name, amount in ask.resource.items():
                if amount > available[name]:
                    reason = f"Insufficient {name}"
                    counts[reason] = counts.get(reason, 0) + 1
        unschedulable = len(self.nodes) - len(self.index) if not ask.required_node else 0
        if unschedulable:
            counts[UNSCHEDULABLE] = counts.get(UNSCHEDULABLE, 0) + unschedulable
        others = len(self.nodes) - considered - unschedulable
        if others > 0:
            counts[NODE_NAME] = counts.get(NODE_NAME, 0) + others
        reasons = sorted(f"{n} {reason}" for reason, n in counts.items())
        return f"0/{len(self.nodes)} nodes are available: {', '.join(reasons)}."

    def _note_failure(self, app: Application | None, ask: Allocation, reason: str, logged: str = "") -> None:
        """Remember why ``ask`` waits; tell the resource manager once per change of reason. The allocation
        log counts ``logged`` (upstream's constant text) for it when given."""
        if ask.last_failure == reason:
            return
        ask.note_failure(reason, self.clock.now_ns(), logged)
        if is_node_failure(reason):  # it fits its quotas but no node: the autoscaler's signal
            ask.scale_up_triggered = True
        owner = app or self.apps.get(ask.application_id)
        if owner is not None:
            owner.version += 1
        self.outbox.scheduling_states.append(si_pb2.UpdateContainerSchedulingStateRequest(
            applicationID=ask.application_id, allocationKey=ask.key,
            state=si_pb2.UpdateContainerSchedulingStateRequest.FAILED, reason=reason))

    # Timers.
    def tick(self) -> None:
        """Advance the application timers to the clock's time."""
        now = self.clock.now_ns()
        for app in list(self.apps.values()):
            age = (now - app.state_since) / 1e9
            if app.state == states.COMPLETING and age >= self.timing.completing:
                self._set_state(app, states.COMPLETED, "no new requests")
            elif app.state == states.STARTING and age >= self.timing.starting:
                self._set_state(app, states.RUNNING, "starting timed out")
                self.dirty = True
            if app.placeholder_deadline and now >= app.placeholder_deadline:
                self._placeholders_timed_out(app)
        self._tick_holds(now)
        for app_id, app in list(self.terminated.items()):
            if (now - app.state_since) / 1e9 >= self.timing.retention:
                app.transition(states.EXPIRED, now)
                self._event(E.APP, app_id, E.APP_EXPIRED, E.REMOVE)
                del self.terminated[app_id]
        for path in self.queues.prune():
            self._event(E.QUEUE, path, E.QUEUE_CONFIG, E.REMOVE, "queue removed")


class _Contained:
    """See ``Partition._one``; a class, not a generator, as it wraps every allocation of a recovery."""

    __slots__ = ("partition", "kind", "object_id", "refuse", "args")

    def __init__(self, partition: Partition, kind: str, object_id: str, refuse, args: tuple) -> None:
        self.partition, self.kind, self.object_id, self.refuse, self.args = partition, kind, object_id, refuse, args

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, error, trace) -> bool:
        if error is None or not isinstance(error, Exception):
            return False
        log.error("partition %s: %s %s refused, handling it failed: %r", self.partition.name, self.kind,
                  self.object_id, error, exc_info=error)
        if self.refuse is not None:
            try:
                self.refuse(*self.args, f"the scheduler could not handle {self.kind} {self.object_id}: {error!r}"[:1024])
            except Exception:  # refusing raised as well: the object is dropped unanswered, the batch goes on
                log.exception("partition %s: refusing %s %s failed", self.partition.name, self.kind, self.object_id)
        return True


def _gang_too_large(queue: Queue, placeholder_ask: Resource) -> str:
    """Why a gang can never be placed in ``queue`` (its placeholders together exceed a max on the
    queue's path), or ``""``."""
    if placeholder_ask.is_zero():
        return ""
    for q in queue.chain():
        if q.max is not None and not placeholder_ask.fits_in_max(q.max):
            return (f"placeholder ask {dict(placeholder_ask)} exceeds the max of queue {q.path} {dict(q.max)}: "
                    "the gang can never be placed")
    return ""
