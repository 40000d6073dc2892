"""A partition: intake of the resource manager's nodes, applications and asks, and the scheduling cycle
run as *decide, then book*.

This is plain logic owned by one actor (:mod:`actors.core.scheduler`). Its parts, as upstream's
``PartitionContext``: the :class:`~actors.core.ledger.Ledger` holds nodes, queues and applications and
alone changes them; the :class:`~actors.core.cycle.Cycle` walks queues and applications and returns
decisions (:class:`~actors.core.cycle.AllocationResult`), which :meth:`Partition.allocate` books;
:class:`~actors.core.gangs.Gangs` and :class:`~actors.core.holds.Holds` see placeholders, preemptions
and reservations through. Everything the resource manager must learn is collected in an
:class:`Outbox` that the actor sends after each message, one response per kind.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter

from actors.core import application as states
from actors.core.accounting import Accounts
from actors.core.allocation import Allocation, shared_resource
from actors.core.application import Application
from actors.core.config import PartitionConfig
from actors.core.cycle import AllocationResult, Cycle, Decided
from actors.core.gangs import Gangs, too_large
from actors.core.holds import Holds
from actors.core.ledger import Ledger, Outbox
from actors.core.node import Node
from actors.core.placement import AppPlacementInfo, PlacementManager, PlacementRejected
from actors.core.plugins import NodePredicates, NoPredicates
from actors.core.queue import Queue, limits_from_tags
from actors.core.usergroups import GroupResolver, UnknownUser
from si import si_pb2
from si.clock import NS, REAL_CLOCK, Clock, ns
from si.constants import APP_TAG_NAMESPACE, RECOVERY_QUEUE, TAG_NAMESPACE
from si.resources import Resource

log = logging.getLogger(__name__)
E = si_pb2.EventRecord
Action = si_pb2.NodeInfo


@dataclass(frozen=True)
class Timing:
    """Timers of the application life cycle, in seconds (short in tests)."""

    completing: float = 30.0  # Completing -> Completed when nothing new arrives
    retention: float = 3 * 24 * 3600.0  # terminated apps are kept this long, then expire
    starting: float = 300.0  # stateaware: Starting -> Running without a second allocation
    reservation_delay: float = 2.0  # an ask that fitted no node this long reserves one
    reservation_timeout: float = 3600.0  # a reservation not satisfied this long is released


class Partition:
    def __init__(self, config: PartitionConfig, rm_id: str, predicates: NodePredicates | None = None,
                 timing: Timing | None = None, clock: Clock = REAL_CLOCK) -> None:
        self.name = config.name
        self.clock = clock
        self.rm_id = rm_id
        self.predicates = predicates or NoPredicates()
        self.timing = timing or Timing()
        self.created = clock.now_ns()
        self.ledger = ledger = Ledger(config, clock, self.predicates)
        self.gangs = Gangs(ledger)
        self.held_nodes = Holds(ledger, self.timing.reservation_timeout)
        # What the ledger keeps, as readers (snapshots, health, the simulator) know it.
        self.nodes, self.apps, self.terminated = ledger.nodes, ledger.apps, ledger.terminated
        self.queues, self.usage, self.stats = ledger.queues, ledger.usage, ledger.stats
        self.holds, self.reservations, self.retired = ledger.holds, ledger.reservations, ledger.retired
        self.snapshot_pictures: object | None = None  # what snapshots last pictured, reused while unchanged (views)
        self.health_cache: dict[str, tuple[int, tuple]] = {}  # node id -> (version, its findings) (health)
        self._configure(config)

    @property
    def config(self) -> PartitionConfig:
        return self.ledger.config

    @property
    def total(self) -> Resource:
        return self.ledger.total

    @total.setter
    def total(self, value: Resource) -> None:
        self.ledger.total = value

    @property
    def dirty(self) -> bool:
        """Something changed that may allow a new allocation."""
        return self.ledger.dirty

    @dirty.setter
    def dirty(self, value: bool) -> None:
        self.ledger.dirty = value

    @property
    def history(self) -> Accounts | None:
        """What the partition remembers for a history store, while one listens."""
        return self.ledger.history

    @history.setter
    def history(self, accounts: Accounts | None) -> None:
        self.ledger.history = accounts

    # Configuration.
    def apply_config(self, config: PartitionConfig) -> None:
        self.ledger.reconfigure(config)
        self._configure(config)

    def _configure(self, config: PartitionConfig) -> None:
        self.placement = PlacementManager(config.placement_rules)
        self.group_resolver = GroupResolver(config.user_group_resolver, lambda: self.clock.monotonic_ns() / NS)

    # Outputs.
    @property
    def outbox(self) -> Outbox:
        return self.ledger.outbox

    def take_outbox(self) -> Outbox:
        return self.ledger.take_outbox()

    def _failed(self, kind: str, object_id: str, error: Exception, refuse: Callable[..., None] | None = None,
                *args) -> None:
        """Handling one object of a batch raised ``error``: it fails that object alone (``refuse(*args,
        reason)``), never the batch or the partition. (A ``try`` around each object, not a context
        manager: it wraps every allocation of a recovery, and costs nothing until something raises.)"""
        log.error("partition %s: %s %s refused, handling it failed: %r", self.name, kind, object_id, error,
                  exc_info=error)
        if refuse is not None:
            try:
                refuse(*args, f"the scheduler could not handle {kind} {object_id}: {error!r}"[:1024])
            except Exception:  # refusing raised as well: the object is dropped unanswered, the batch goes on
                log.exception("partition %s: refusing %s %s failed", self.name, kind, object_id)

    def _refuse_app(self, request, reason: str) -> None:
        if request.applicationID not in self.apps:
            self.ledger.reject_app(request, reason)

    def _refuse_node(self, info, reason: str) -> None:
        if info.nodeID not in self.nodes:
            self.outbox.rejected_nodes.append(si_pb2.RejectedNode(nodeID=info.nodeID, reason=reason))

    def _refuse_allocation(self, message, reason: str) -> None:
        self._reject_allocation(message.allocationKey, message.applicationID, reason)

    # Nodes.
    def update_nodes(self, infos) -> None:
        """One at a time: a node whose handling raises is refused alone, never the batch."""
        for info in infos:
            try:
                self._update_node(info)
            except Exception as error:
                self._failed("node", info.nodeID, error, self._refuse_node, info)
        self.dirty = True

    def _update_node(self, info: si_pb2.NodeInfo) -> None:
        ledger = self.ledger
        action = info.action
        node = self.nodes.get(info.nodeID)
        if action in (Action.CREATE, Action.CREATE_DRAIN):
            if node is not None:
                self.outbox.rejected_nodes.append(si_pb2.RejectedNode(
                    nodeID=info.nodeID, reason=f"node {info.nodeID} already exists"))
                return
            capacity = shared_resource(info.schedulableResource)
            if capacity.has_negative():
                self.outbox.rejected_nodes.append(si_pb2.RejectedNode(
                    nodeID=info.nodeID, reason=f"negative capacity {capacity.negative_components()}"))
                self.stats.add("nodes_failed")
                return
            ledger.add_node(Node(info.nodeID, capacity, info.attributes, action == Action.CREATE))
        elif node is None:
            self.outbox.rejected_nodes.append(si_pb2.RejectedNode(
                nodeID=info.nodeID, reason=f"node {info.nodeID} not found"))
        elif action == Action.UPDATE:
            capacity = shared_resource(info.schedulableResource) if info.HasField("schedulableResource") else None
            ledger.update_node(node, info.attributes, capacity)
        elif action in (Action.DRAIN_NODE, Action.DRAIN_TO_SCHEDULABLE):
            ledger.set_schedulable(node, action == Action.DRAIN_TO_SCHEDULABLE)
            # Our shim's turns carry the node's record (its state is an attribute): applied as an UPDATE
            # sent after the turn would be. Upstream's shim sends none on a drain action: nothing changes.
            capacity = shared_resource(info.schedulableResource) if info.HasField("schedulableResource") else None
            if info.attributes or capacity is not None:
                ledger.update_node(node, info.attributes, capacity)
        elif action == Action.DECOMISSION:
            ledger.free_node(node)
            for allocation in list(node.allocations.values()):
                self._release(allocation, si_pb2.STOPPED_BY_RM, f"node {node.node_id} removed", notify=True)
                ledger.event(E.APP, allocation.application_id, E.ALLOC_NODEREMOVED, E.REMOVE,
                             f"node {node.node_id} removed", allocation.key)
            ledger.remove_node(node)

    # Applications.
    def add_applications(self, requests) -> None:
        """One at a time: an application whose handling raises is refused alone, never the batch."""
        self.stats.add("apps_new", len(requests))
        for request in requests:
            try:
                self._add_application(request)
            except Exception as error:
                self._failed("application", request.applicationID, error, self._refuse_app, request)

    def _add_application(self, request: si_pb2.AddApplicationRequest) -> None:
        ledger = self.ledger
        existing = self.apps.get(request.applicationID)
        if existing is not None:
            # The shim submits an application again when a new actor takes it over (its last pod went
            # and a new one came before the core completed it): it goes on, as upstream's shim would
            # have kept it. Its first answer may come before the old actor's last releases.
            self.outbox.accepted_apps.append(si_pb2.AcceptedApplication(applicationID=existing.application_id))
            return
        tags = dict(request.tags)
        tags.setdefault(APP_TAG_NAMESPACE, tags.get(TAG_NAMESPACE, ""))
        user = request.ugi.user or "nobody"
        try:
            groups = self.group_resolver.groups(user, tuple(request.ugi.groups))
        except UnknownUser as error:
            ledger.reject_app(request, str(error))
            return
        info = AppPlacementInfo(request.applicationID, request.queueName, user, groups, tags)
        try:
            placement = self.placement.place(info, self.queues)
        except PlacementRejected as rejected:
            ledger.reject_app(request, rejected.reason)
            return
        queue = self.queues.create(placement.queue_path) if placement.create else self.queues.get(placement.queue_path)
        if placement.create:
            ledger.event(E.QUEUE, queue.path, E.QUEUE_DYNAMIC, E.ADD, "created by placement rule")
        if not queue.managed and queue.path != RECOVERY_QUEUE:
            self._apply_tag_limits(queue, tags)
        why = too_large(queue, Resource.from_proto(request.placeholderAsk))
        if why:
            ledger.reject_app(request, why)
            return
        app = Application(request, self.name, queue.path, self.clock.now_ns(), ledger.next_sequence())
        app.groups = groups
        ledger.add_app(app, queue)

    def _apply_tag_limits(self, queue: Queue, tags) -> None:
        """A dynamic queue takes the limits its application's namespace asks for (as upstream, on every
        application placed there): the quota as max, the guaranteed resource, the maximum applications."""
        guaranteed, maximum, max_apps = limits_from_tags(tags)
        if guaranteed is None and maximum is None and not max_apps:
            return
        before = (queue.guaranteed, queue.max, queue.max_apps)
        queue.apply_limits(guaranteed, maximum, max_apps)
        event = self.ledger.event
        if before[1] != queue.max:
            event(E.QUEUE, queue.path, E.QUEUE_MAX, E.SET, f"max {dict(queue.max or {})} from the namespace")
        if before[0] != queue.guaranteed:
            event(E.QUEUE, queue.path, E.QUEUE_GUARANTEED, E.SET,
                  f"guaranteed {dict(queue.guaranteed or {})} from the namespace")
        if before[1] != queue.max or before[2] != queue.max_apps:
            self.dirty = True

    def remove_applications(self, requests) -> None:
        ledger = self.ledger
        set_state = ledger.set_state
        for request in requests:
            app = self.apps.get(request.applicationID)
            if app is None:
                continue
            for ask in list(app.asks):
                ledger.remove_ask(app, ask)
            for allocation in list(app.allocations.values()):
                self._release(allocation, si_pb2.STOPPED_BY_RM, "application removed", notify=False)
            if app.state == states.FAILING:
                set_state(app, states.FAILED, "removed by the resource manager")
            elif app.state in (states.NEW, states.ACCEPTED, states.RESUMING):
                if app.state == states.RESUMING:
                    set_state(app, states.ACCEPTED)
                set_state(app, states.COMPLETED, "removed before it ran")
            elif app.state in (states.STARTING, states.RUNNING, states.COMPLETING):
                set_state(app, states.COMPLETING)
                set_state(app, states.COMPLETED, "removed by the resource manager")
        self.dirty = True

    # Asks and allocations.
    def update_allocations(self, allocations, releases) -> None:
        for release in releases:
            try:
                self._handle_release(release)
            except Exception as error:
                self._failed("release", release.allocationKey, error)
        self.ledger.begin_found()
        try:
            for message in allocations:
                try:
                    if message.nodeID:
                        self._add_existing(message)
                    else:
                        self._add_ask(message)
                except Exception as error:
                    self._failed("allocation", message.allocationKey, error, self._refuse_allocation, message)
        finally:
            self.ledger.end_found()
        self.dirty = True

    def _reject_allocation(self, key: str, app_id: str, reason: str) -> None:
        self.outbox.rejected_allocations.append(si_pb2.RejectedAllocation(
            allocationKey=key, applicationID=app_id, reason=reason))

    def _add_ask(self, message: si_pb2.Allocation) -> None:
        ledger = self.ledger
        app = self.apps.get(message.applicationID)
        if app is None:
            self._reject_allocation(message.allocationKey, message.applicationID,
                                    f"application {message.applicationID} not found")
            self.stats.add("errors")
            return
        if message.allocationKey in app.allocations:
            return  # already placed: an ask repeated by the resource manager changes nothing
        ask = Allocation(message, self.name, self.clock.now_ns(), ledger.next_sequence(),
                         self.predicates.ask_constrained(message.allocationTags))
        if ask.resource.has_negative():
            self._reject_allocation(ask.key, app.application_id,
                                    f"negative resource request {ask.resource.negative_components()}")
            return
        replaced = ledger.pend(app, ask)
        if ask.placeholder and replaced is None:
            app.count_placeholder(ask, self.clock.now_ns())
        if app.state == states.NEW:
            ledger.set_state(app, states.ACCEPTED)
        elif app.state == states.COMPLETING:
            ledger.set_state(app, states.RUNNING, "new request")
        ledger.event(E.APP, app.application_id, E.APP_REQUEST, E.ADD, "", ask.key, ask.resource)

    def _add_existing(self, message: si_pb2.Allocation) -> None:
        """An allocation already running on a node: accepted as the cluster's truth, even over quota."""
        ledger = self.ledger
        allocation = Allocation(message, self.name, self.clock.now_ns(), ledger.next_sequence())
        node = self.nodes.get(allocation.node_id)
        if node is None:
            self._reject_allocation(allocation.key, allocation.application_id, f"node {message.nodeID} not found")
            self.stats.add("errors")
            return
        if allocation.foreign:
            ledger.book_foreign(node, allocation)
            return
        app = self.apps.get(allocation.application_id)
        if app is None:
            self._reject_allocation(allocation.key, allocation.application_id,
                                    f"application {allocation.application_id} not found")
            self.stats.add("errors")
            return
        current = app.allocations.get(allocation.key)
        queue = self.queues.get(app.queue_path)
        if current is not None and current.preempted:  # still running: its eviction was refused
            ledger.victim_stays(app, current)
            return
        if current is not None:  # the resource manager reports a changed size (a resized pod)
            problem = ("allocation contains no resources" if allocation.resource.is_zero()
                       else f"allocation contains negative resources {allocation.resource.negative_components()}"
                       if allocation.resource.has_negative() else "")
            if problem:  # refused as upstream's UpdateAllocation refuses it, changing nothing
                self._reject_allocation(current.key, app.application_id, problem)
                self.stats.add("errors")
                return
            ledger.resize(app, queue, current, allocation.resource)
            return
        pending = app.find_ask(allocation.key)
        if pending is not None:
            ledger.remove_ask(app, pending)
        elif allocation.placeholder:
            app.count_placeholder(allocation, self.clock.now_ns())
        ledger.book(app, queue, allocation, node, decided=False)

    def _handle_release(self, release: si_pb2.AllocationRelease) -> None:
        ledger = self.ledger
        key = release.allocationKey
        app = self.apps.get(release.applicationID)
        if app is None:
            if not release.applicationID:
                ledger.release_foreign(key)
            return
        if not key:
            for ask in list(app.asks):
                ledger.remove_ask(app, ask)
            app.replacing.clear()
            for allocation in list(app.allocations.values()):
                self._release(allocation, release.terminationType, release.message, notify=False)
            ledger.maybe_completing(app)
            return
        allocation = app.allocations.get(key)
        if allocation is not None:
            self._release(allocation, release.terminationType, release.message, notify=False)
            if allocation.replacement is not None:
                self.gangs.take_over(app, allocation)
        elif key in app.replacing:  # a real pod gone before its placeholder was: the placeholder just ends
            app.replacing.pop(key).replacement = None
        else:
            ask = app.find_ask(key)
            if ask is not None:
                ledger.remove_ask(app, ask)
                ledger.event(E.REQUEST, key, E.REQUEST_CANCEL, E.REMOVE, "request cancelled", app.application_id)
        ledger.maybe_completing(app)

    def _release(self, allocation: Allocation, termination: int, message: str, notify: bool) -> None:
        """Release ``allocation``: a gang whose placeholders are all gone settles, a preemptor whose
        victims are all gone takes their room."""
        ledger = self.ledger
        app = ledger.detach(allocation)
        if app is None:
            return
        if app.state in (states.RESUMING, states.FAILING):
            self.gangs.settle(app)
        queue = ledger.unbook(app, allocation)
        if allocation.preempted:
            self.held_nodes.victim_gone(allocation, queue)
        ledger.released(app, allocation, termination, message, notify)

    # The scheduling cycle: decide, then book.
    def schedule(self, max_allocations: int = 1000, max_seconds: float = 0.05) -> int:
        """Place as many pending asks as possible, within the given budget; returns how many."""
        if not self.dirty:
            return 0
        began = perf_counter()
        cycle = Cycle(self.ledger, self.timing.reservation_delay)
        deadline = self.clock.monotonic_ns() + ns(max_seconds)
        for result in cycle.decisions(max_allocations, deadline):
            self.allocate(result)
        if cycle.drained:
            self.dirty = False
        if cycle.preemptions_capped:
            self.dirty = True
        self.held_nodes.wake_at(cycle.wake_due)
        took = perf_counter() - began
        histograms = self.stats.histograms
        histograms["scheduling_cycle"].observe(took)
        # Upstream times each allocation it makes; a batch makes many, each taking the batch's mean.
        histograms["scheduling_latency"].observe_total(took, cycle.allocations)
        cycle.record(self.stats)
        return cycle.allocations

    def allocate(self, result: AllocationResult) -> None:
        """Book what the cycle decided (upstream's ``PartitionContext.allocate``)."""
        kind, app, ask = result.kind, result.app, result.ask
        ledger = self.ledger
        if kind is Decided.ALLOCATED or kind is Decided.ALLOCATED_RESERVED:
            node, placeholder = result.node, result.placeholder
            if placeholder is not None:  # it runs elsewhere than its placeholder, which is given up
                self.gangs.give_up(app, placeholder, si_pb2.PLACEHOLDER_REPLACED, f"replaced by {ask.key} on {node.node_id}")
            ledger.remove_ask(app, ask)  # ends its reservation, if it had one
            ledger.book(app, result.queue, ask, node, decided=True, took_placeholder=placeholder is not None)
        elif kind is Decided.RESERVED:
            ledger.reserve(app, ask, result.node)
        elif kind is Decided.PREEMPTING:
            self.held_nodes.preempt(app, result.queue, ask, result.plan)
        elif kind is Decided.REPLACED:
            self.gangs.replace(app, ask, result.placeholder)
        elif kind is Decided.PLACEHOLDER_CANCELLED:
            self.gangs.give_up(app, result.placeholder, si_pb2.TIMEOUT,
                               f"cancel placeholder: {ask.key} asks more than it holds")

    # Timers.
    def tick(self) -> None:
        """Advance the application timers to the clock's time."""
        ledger = self.ledger
        now = self.clock.now_ns()
        for app in list(self.apps.values()):
            age = (now - app.state_since) / 1e9
            if app.state == states.COMPLETING and age >= self.timing.completing:
                ledger.set_state(app, states.COMPLETED, "no new requests")
            elif app.state == states.STARTING and age >= self.timing.starting:
                ledger.set_state(app, states.RUNNING, "starting timed out")
                self.dirty = True
            if app.placeholder_deadline and now >= app.placeholder_deadline:
                self.gangs.timed_out(app)
        self.held_nodes.tick(now)
        for app_id, app in list(self.terminated.items()):
            if (now - app.state_since) / 1e9 >= self.timing.retention:
                ledger.expire(app_id, now)
        ledger.prune_queues()
