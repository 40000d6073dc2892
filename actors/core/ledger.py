"""The partition's books: nodes, applications and queues, and the only code that changes them.

Every change of usage (a queue's, a node's, a user's and a group's), of the node order, of the holds on
nodes, of an object's version and every event goes through a :class:`Ledger` method, so each invariant
is kept in one place: what the cycle (:mod:`actors.core.cycle`) decides, the partition books here. The
ledger knows nothing of the cycle, the gangs, the holds or the partition that use it.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Collection
from operator import attrgetter

from actors.core import application as states
from actors.core.accounting import Accounts
from actors.core.allocation import Allocation, is_node_failure
from actors.core.application import Application
from actors.core.config import PartitionConfig
from actors.core.events import PendingEvent
from actors.core.node import Node, NodeIndex
from actors.core.plugins import NodePredicates, PlacementView
from actors.core.preemption import InFlight
from actors.core.queue import Queue, QueueTree
from actors.core.reservation import Reservation
from actors.core.stats import PartitionStats
from actors.core.ugm import UsageTracker
from si import si_pb2
from si.clock import Clock
from si.history import FinishedApplication
from si.resources import Resource

E = si_pb2.EventRecord
_tuple_new = tuple.__new__
_key_and_tags = attrgetter("key", "tags")  # what the placement view is told of an allocation, read in C


class Outbox:
    """What a partition has to tell after a message or a batch (a plain class: one is made per message,
    and a dataclass's default factories made it cost several times more)."""

    __slots__ = ("allocations", "released", "rejected_allocations", "accepted_apps", "rejected_apps", "updated_apps",
                 "accepted_nodes", "rejected_nodes", "events", "scheduling_states", "finished")

    def __init__(self) -> None:
        # The response the new allocations are written into where they lie (Allocation.fill), not copied in.
        self.allocations = si_pb2.AllocationResponse()
        self.released: list[si_pb2.AllocationRelease] = []
        self.rejected_allocations: list[si_pb2.RejectedAllocation] = []
        self.accepted_apps: list[si_pb2.AcceptedApplication] = []
        self.rejected_apps: list[si_pb2.RejectedApplication] = []
        self.updated_apps: list[si_pb2.UpdatedApplication] = []
        self.accepted_nodes: list[si_pb2.AcceptedNode] = []
        self.rejected_nodes: list[si_pb2.RejectedNode] = []
        self.events: list[PendingEvent] = []
        self.scheduling_states: list[si_pb2.UpdateContainerSchedulingStateRequest] = []
        self.finished: list[FinishedApplication] = []  # for the history store

    def __bool__(self) -> bool:
        """Whether anything waits to be told."""
        return bool(self.allocations.new or self.events or self.released or self.rejected_allocations
                    or self.accepted_apps or self.rejected_apps or self.updated_apps or self.accepted_nodes
                    or self.rejected_nodes or self.scheduling_states or self.finished)


class _Found:
    """Running allocations booked in one batch (a recovery books tens of thousands): placed on their
    nodes and applications at once, their resources counted once per node, application, queue, user and
    group, and told to the placement view once per node, at the end of the batch (nothing in between
    reads those sums or the view)."""

    __slots__ = ("apps", "queues", "nodes", "viewed")

    def __init__(self) -> None:
        self.apps: dict[Application, list[Resource]] = {}
        self.queues: dict[Application, Queue] = {}
        self.nodes: defaultdict[Node, list[Resource]] = defaultdict(list)
        self.viewed: defaultdict[Node, list[Allocation]] = defaultdict(list)  # for the placement view

    def book(self, app: Application, queue: Queue, node: Node, allocation: Allocation) -> None:
        app.place(allocation)
        node.place(allocation)
        resource = allocation.resource
        used = self.apps.get(app)
        if used is None:
            used = self.apps[app] = []
            self.queues[app] = queue
        used.append(resource)
        self.nodes[node].append(resource)
        self.viewed[node].append(allocation)

    def touch(self, node: Node, allocation: Allocation) -> None:
        """``allocation`` joined ``node`` (counted already): the node is re-sorted once, and the view told,
        at the end of the batch."""
        self.nodes[node]  # noqa: B018 (the default list is the mark)
        self.viewed[node].append(allocation)

    def settle(self, app: Application, usage: UsageTracker) -> None:
        """Count what ``app`` booked so far in the batch now (its usage is about to change otherwise)."""
        resources = self.apps.pop(app, None)
        if resources:
            total, growing = _summed(resources)
            app.add_used(resources, total, growing)
            queue = self.queues.pop(app)
            queue.add_allocated(total)
            queue.count_container("allocated", len(resources))
            usage.allocated(app.application_id, total)

    def count(self, usage: UsageTracker, index: NodeIndex, view: PlacementView) -> None:
        for node, allocations in self.viewed.items():
            view.allocations_added(node.node_id, map(_key_and_tags, allocations))
        for node, resources in self.nodes.items():
            if resources:
                node.add_allocated(_summed(resources)[0])
            index.update(node)
        for app in list(self.apps):
            self.settle(app, usage)


def _summed(resources: list[Resource]) -> tuple[Resource, bool]:
    """The sum of ``resources`` and whether none of them is negative: the records of a workload share one
    vector (``actors.core.allocation``), so each distinct vector is added once, times its count."""
    first = resources[0]
    if resources.count(first) == len(resources):  # one shape, as a node's or a workload's pods mostly are
        return first.multiply(len(resources)), not first.has_negative()
    counts = Counter(map(id, resources))
    distinct = {id(resource): resource for resource in resources}
    total: dict[str, int] = {}
    growing = True
    for key, count in counts.items():
        for name, value in distinct[key].items():
            total[name] = total.get(name, 0) + value * count
            growing = growing and value >= 0
    return Resource(total), growing


class Ledger:
    """The state of one partition and every change to it (owned by the partition actor)."""

    def __init__(self, config: PartitionConfig, clock: Clock, predicates: NodePredicates) -> None:
        self.name = config.name
        self.clock = clock
        self.predicates = predicates
        self.view = predicates.view()  # the predicates' index of where allocations are
        self.nodes: dict[str, Node] = {}
        self.apps: dict[str, Application] = {}
        self.terminated: dict[str, Application] = {}  # kept for the retention unless a history store takes them
        self.history: Accounts | None = None  # set while a history store listens (see retire)
        self.retired: Counter[str] = Counter()  # terminal states of the applications told to the store
        self.holds: dict[str, InFlight] = {}  # node id -> the preemption holding it
        self.reservations: dict[str, Reservation] = {}  # node id -> the ask that reserved it
        self.total = Resource()
        self.outbox = Outbox()
        self.stats = PartitionStats()
        self.dirty = True  # something changed that may allow a new allocation
        self._sequence = itertools.count(1)  # orders what arrives and is booked at one time
        self._found: _Found | None = None  # while a batch of running allocations is booked
        # Foreign allocation key -> its node: a pod of another scheduler that goes names no node, and
        # looking through every node for it made each such release cost as many lookups as there are nodes.
        self._foreign_on: dict[str, Node] = {}
        self.config = config
        self.queues = QueueTree(config)
        self.usage = UsageTracker(config)
        self.index = self._new_index(config)

    def next_sequence(self) -> int:
        return next(self._sequence)

    def take_outbox(self) -> Outbox:
        outbox, self.outbox = self.outbox, Outbox()
        return outbox

    def event(self, type_, object_id, detail, change=E.ADD, message="", reference="", resource=None) -> None:
        # The tuple built directly: the named tuple's own __new__ is one more Python call (an event per allocation).
        self.outbox.events.append(_tuple_new(PendingEvent, (type_, object_id, detail, change, message, reference,
                                                            resource, self.clock.now_ns())))

    # Configuration.
    def reconfigure(self, config: PartitionConfig) -> None:
        self.config = config
        changes = self.queues.apply(config.root)
        self.usage.reconfigure(config)
        self.index = self._new_index(config)
        for node in self.nodes.values():
            node.index_key = None
            self.index.update(node)
        for change in changes:
            self.event(E.QUEUE, change.split(" ")[0], E.QUEUE_CONFIG, E.SET, change)
        self.dirty = True

    @staticmethod
    def _new_index(config: PartitionConfig) -> NodeIndex:
        policy = config.node_sort_policy
        return NodeIndex(policy.type, policy.resource_weights)

    def prune_queues(self) -> None:
        for path in self.queues.prune():
            self.event(E.QUEUE, path, E.QUEUE_CONFIG, E.REMOVE, "queue removed")

    # Nodes.
    def add_node(self, node: Node) -> None:
        node.restricted = self.predicates.node_restricted(node.attributes)
        self.nodes[node.node_id] = node
        self.view.node_updated(node.node_id, node.attributes)
        self.total = self.total + node.capacity
        self.index.update(node)
        self.outbox.accepted_nodes.append(si_pb2.AcceptedNode(nodeID=node.node_id))
        self.event(E.NODE, node.node_id, E.DETAILS_NONE, E.ADD, "node added", resource=node.capacity)

    def update_node(self, node: Node, attributes, capacity: Resource | None) -> None:
        if attributes:
            attributes = {name: attributes[name] for name in attributes}  # dict(map) goes through Mapping's views
            node.set_attributes(attributes, self.predicates.node_restricted(attributes))
            self.view.node_updated(node.node_id, node.attributes)
        if capacity is not None and capacity != node.capacity:
            self.total = self.total - node.capacity + capacity
            node.set_capacity(capacity)
            self.event(E.NODE, node.node_id, E.NODE_CAPACITY, E.SET, "capacity changed", resource=capacity)
            self.index.update(node)  # the node order reads its capacity, never its attributes

    def set_schedulable(self, node: Node, schedulable: bool) -> None:
        node.set_schedulable(schedulable)
        self.index.update(node)
        self.event(E.NODE, node.node_id, E.NODE_SCHEDULABLE, E.SET, str(node.schedulable).lower())

    def free_node(self, node: Node) -> None:
        """The node is going: the preemption or reservation holding it ends."""
        if node.node_id in self.holds:
            self.end_hold(self.holds[node.node_id])
        if node.node_id in self.reservations:
            self.unreserve(self.reservations[node.node_id])

    def remove_node(self, node: Node) -> None:
        """Drop the node (its own allocations already released) and what other schedulers run there."""
        for allocation in list(node.foreign.values()):
            self._unbook(node, allocation.key)
        self.index.discard(node)
        del self.nodes[node.node_id]
        self.view.node_removed(node.node_id)
        self.total = self.total - node.capacity
        self.stats.add("nodes_decommissioned")
        self.event(E.NODE, node.node_id, E.NODE_DECOMISSION, E.REMOVE, "node removed")

    def book_foreign(self, node: Node, allocation: Allocation) -> None:
        """A pod of another scheduler runs on ``node`` (or changed its size): it occupies room there."""
        existing = node.foreign.get(allocation.key)
        if existing is not None:
            node.resize(existing, allocation.resource)
            self.index.update(node)
        else:
            self._book(node, allocation)
        self.event(E.NODE, node.node_id, E.NODE_OCCUPIED, E.SET, "foreign allocation", allocation.key, node.occupied)

    def release_foreign(self, key: str) -> None:
        """A pod of another scheduler is gone."""
        node = self._foreign_on.get(key)
        if node is not None:
            self._unbook(node, key)
            self.event(E.NODE, node.node_id, E.NODE_OCCUPIED, E.SET, "foreign allocation released", key,
                       node.occupied)

    # Every change of a node's usage or hold re-sorts it in the node order.
    def _book(self, node: Node, allocation: Allocation) -> None:
        node.add_allocation(allocation)
        if allocation.foreign:
            self._foreign_on[allocation.key] = node
        if self._found is not None:
            self._found.touch(node, allocation)
        else:
            self.view.allocation_added(node.node_id, allocation.key, allocation.tags)
            self.index.update(node)

    def _unbook(self, node: Node, key: str) -> None:
        removed = node.remove_allocation(key)
        if removed is not None:
            if removed.foreign and self._foreign_on.get(key) is node:
                del self._foreign_on[key]
            self.view.allocation_removed(node.node_id, key)
        self.index.update(node)

    def _hold(self, node: Node, ask_key: str) -> None:
        node.hold(ask_key)
        self.index.update(node)

    def _free(self, node: Node | None, ask_key: str) -> bool:
        if node is None or not node.free(ask_key):
            return False
        self.index.update(node)
        return True

    def meets_constraints(self, ask: Allocation, node: Node, without: Collection[str] = ()) -> bool:
        """Whether ``node`` passes ``ask``'s predicates, with the allocations ``without`` gone from it (a
        preemption's victims; the topology view still counts them, so it errs on the side of refusing)."""
        if not (ask.constrained or node.restricted or self.view.guarded(node.node_id)):
            return True
        return self.predicates.check(ask.tags, node.node_id, node.attributes,
                                     (a.tags for a in node.all_allocations() if a.key not in without),
                                     self.view) is None

    # Applications.
    def add_app(self, app: Application, queue: Queue) -> None:
        self.apps[app.application_id] = app
        queue.add_app(app)
        self.outbox.accepted_apps.append(si_pb2.AcceptedApplication(applicationID=app.application_id))
        self.event(E.APP, app.application_id, E.APP_NEW, E.ADD, f"placed in {queue.path}")
        self.event(E.QUEUE, queue.path, E.QUEUE_APP, E.ADD, "", app.application_id)

    def reject_app(self, request: si_pb2.AddApplicationRequest, reason: str) -> None:
        self.outbox.rejected_apps.append(si_pb2.RejectedApplication(applicationID=request.applicationID, reason=reason))
        self.event(E.APP, request.applicationID, E.APP_REJECT, E.ADD, reason)
        now = self.clock.now_ns()
        app = Application(request, self.name, "", now)
        app.rejected_message = reason
        app.transition(states.REJECTED, now)
        self.retire(app)

    def set_state(self, app: Application, state: str, message: str = "") -> None:
        if app.transition(state, self.clock.now_ns()):
            self.outbox.updated_apps.append(si_pb2.UpdatedApplication(
                applicationID=app.application_id, state=state, stateTransitionTimestamp=app.state_since,
                message=message))
            self.event(E.APP, app.application_id, states.STATE_EVENTS[state], E.SET, message)
            if state == states.COMPLETING:
                # as upstream: an application without allocations or asks no longer runs (its queue's
                # running count and its user's and group's runningApplications), though it is not done
                self._stop_running(app)
            if state in (states.COMPLETED, states.FAILED):
                label = "completed" if state == states.COMPLETED else "failed"
                self.stats.add(f"apps_{label}")
                self._forget(app, label)  # as upstream, on entering either: among the completed applications

    def maybe_completing(self, app: Application) -> None:
        if app.is_empty and app.state in (states.STARTING, states.RUNNING, states.ACCEPTED):
            self.set_state(app, states.COMPLETING)

    def _forget(self, app: Application, outcome: str) -> None:
        """A terminated application leaves its queue for the partition's completed ones."""
        queue = self.queues.get(app.queue_path)
        if queue is not None:
            queue.remove_app(app, outcome)
        self._stop_running(app)
        del self.apps[app.application_id]
        self.retire(app)
        self.prune_queues()

    def retire(self, app: Application) -> None:
        """A terminal application: kept for the retention, or, with a history store, told to it and
        dropped from memory."""
        if self.history is None:
            self.terminated[app.application_id] = app
        else:
            self.outbox.finished.append(self.history.finished(app, self.clock.now_ns()))
            self.retired[app.state] += 1

    def expire(self, app_id: str, now: int) -> None:
        self.terminated.pop(app_id).transition(states.EXPIRED, now)
        self.event(E.APP, app_id, E.APP_EXPIRED, E.REMOVE)

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

    # Asks.
    def pend(self, app: Application, ask: Allocation) -> Allocation | None:
        """Put ``ask`` among the application's pending asks, counted in its queues; the ask it replaced."""
        ask.last_failure = ""  # asked for anew (a real pod whose placeholder's node went)
        replaced = app.add_ask(ask)
        if replaced is not None:  # a node held for the ask it was is not held for this one
            self._let_go(replaced)
        queue = self.queues.get(app.queue_path)
        if queue is not None:
            queue.count_pending(ask.resource, ask.priority, 1)
            if replaced is not None:
                queue.count_pending(replaced.resource, replaced.priority, -1)
        return replaced

    def remove_ask(self, app: Application, ask: Allocation) -> None:
        """The ask is placed or gone: the node it held is free."""
        self._let_go(ask)
        app.remove_ask(ask)
        queue = self.queues.get(app.queue_path)
        if queue is not None:
            queue.count_pending(ask.resource, ask.priority, -1)

    def _let_go(self, ask: Allocation) -> None:
        if ask.preempting is not None:
            self.end_hold(ask.preempting)
        if ask.reserved is not None:
            self.unreserve(ask.reserved)
    def note_failure(self, app: Application | None, ask: Allocation, reason: str, logged: str = "") -> None:
        """Remember why ``ask`` waits; tell the resource manager once per change of reason. The allocation
        log counts ``logged`` (upstream's constant text) for it when given."""
        if ask.last_failure == reason:
            return
        ask.note_failure(reason, self.clock.now_ns(), logged)
        if is_node_failure(reason):  # it fits its quotas but no node: the autoscaler's signal
            ask.scale_up_triggered = True
        owner = app or self.apps.get(ask.application_id)
        if owner is not None:
            owner.bump()
        self.outbox.scheduling_states.append(si_pb2.UpdateContainerSchedulingStateRequest(
            applicationID=ask.application_id, allocationKey=ask.key,
            state=si_pb2.UpdateContainerSchedulingStateRequest.FAILED, reason=reason))

    def log_failure(self, app: Application, ask: Allocation, message: str) -> None:
        """Count ``message`` (upstream's constant text) in the ask's allocation log."""
        ask.log_failure(message, self.clock.now_ns())
        app.bump()

    def attempted(self, app: Application, ask: Allocation) -> None:
        ask.attempted = True
        app.bump()

    def back_off(self, app: Application, seconds: float, attempts: int) -> int:
        """The application is not tried for ``seconds``; returns when it is tried again (ns)."""
        app.back_off(self.clock.now_ns() + int(seconds * 1e9))
        self.event(E.APP, app.application_id, E.DETAILS_NONE, E.SET,
                   f"backs off for {seconds:g}s after {attempts} attempts without a placement")
        return app.backoff_until

    # Allocations.
    def begin_found(self) -> None:
        """Allocations found running are summed per queue and per application and counted once at the
        end of the batch (a recovery books tens of thousands; nothing in between reads the sums)."""
        self._found = _Found()

    def end_found(self) -> None:
        found, self._found = self._found, None
        if found is not None:
            found.count(self.usage, self.index, self.view)

    def book(self, app: Application, queue: Queue, allocation: Allocation, node: Node, decided: bool,
             took_placeholder: bool = False) -> None:
        """Book ``allocation`` on ``node`` for ``app``: a new decision (``decided``), or one found running.
        ``took_placeholder``: a real pod of a gang placed in a placeholder's stead."""
        if took_placeholder:
            allocation.placeholder_used = True
        elif decided:
            allocation.last_failure = ""
        now = self.clock.now_ns()
        allocation.node_id = node.node_id
        allocation.allocation_time = now
        allocation.picture = allocation.json = None
        allocation.booked = next(self._sequence)
        if not self.usage.tracks(app.application_id):
            self._start_running(app, queue)
        found = None if decided else self._found
        if found is None:
            app.add_allocation(allocation)
            self._book(node, allocation)
            queue.add_allocated(allocation.resource)
            self.usage.allocated(app.application_id, allocation.resource)
            queue.count_container("allocated")
        else:
            found.book(app, queue, node, allocation)
        state = app.state
        if state == states.RUNNING:
            pass  # most bookings: nothing to move
        elif state in (states.NEW, states.ACCEPTED):
            if state == states.NEW:
                self.set_state(app, states.ACCEPTED)
            if not allocation.placeholder or app.all_placeholders_allocated():  # a gang runs once it has all its room
                stateaware = queue.sort_policy == "stateaware" and app.state_aware and decided
                self.set_state(app, states.STARTING if stateaware else states.RUNNING)
        elif state == states.STARTING and len(app.allocations) > 1:
            self.set_state(app, states.RUNNING)
        elif state == states.COMPLETING:
            self.set_state(app, states.RUNNING)
        events = self.outbox.events
        if decided:
            allocation.fill(self.outbox.allocations.new.add())
            events.append(_tuple_new(PendingEvent, (E.REQUEST, allocation.key, E.REQUEST_ALLOC, E.NONE,
                                                    f"allocated on {node.node_id}", app.application_id,
                                                    allocation.resource, now)))
        # Noted here rather than through event(): one per allocation, a recovery's 100,000 among them.
        events.append(_tuple_new(PendingEvent, (E.NODE, node.node_id, E.NODE_ALLOC, E.ADD, "", allocation.key,
                                                allocation.resource, now)))

    def resize(self, app: Application, queue: Queue, allocation: Allocation, resource: Resource) -> None:
        """The resource manager reports a running allocation's new size (an in-place pod resize): the
        allocation, its application, node, queues and user and group usage all move by the difference,
        even over a quota, as upstream's ``UpdateAllocation`` moves them."""
        delta = resource - allocation.resource
        if delta.is_zero():
            return
        if self._found is not None:
            self._found.settle(app, self.usage)
        app.resize(allocation, resource)
        holder = self.nodes.get(allocation.node_id)
        if holder is not None:
            holder.resize(allocation, resource)
            self.index.update(holder)
        else:
            allocation.resource = resource
            allocation.picture = allocation.json = None
        queue.add_allocated(delta)
        self.usage.allocated(app.application_id, delta)

    # Releasing an allocation takes three steps, between which gangs and holds react (see the partition).
    def detach(self, allocation: Allocation) -> Application | None:
        """Take ``allocation`` from its application; None when it has none (or no longer has it)."""
        app = self.apps.get(allocation.application_id)
        if app is None or app.remove_allocation(allocation.key) is None:
            return None
        if self.history is not None:
            self.history.released(allocation, self.clock.now_ns())
        if allocation.placeholder:
            app.placeholder_ended(allocation, replaced=allocation.placeholder_released == si_pb2.PLACEHOLDER_REPLACED)
        return app

    def unbook(self, app: Application, allocation: Allocation) -> Queue | None:
        """Take ``allocation`` from its node and its queues' usage; returns its queue."""
        node = self.nodes.get(allocation.node_id)
        if node is not None:
            self._unbook(node, allocation.key)
        queue = self.queues.get(app.queue_path)
        if queue is not None:
            queue.add_allocated(-allocation.resource)
            queue.count_container("released")
        return queue

    def released(self, app: Application, allocation: Allocation, termination: int, message: str, notify: bool) -> None:
        """Count the release in the user's and group's usage, and tell it."""
        self.stats.add("released")
        self.usage.released(app.application_id, allocation.resource)
        self.event(E.APP, app.application_id, E.APP_ALLOC, E.REMOVE, message, allocation.key, allocation.resource)
        if notify:
            self.tell_release(app, allocation, termination, message)
        self.dirty = True

    def tell_release(self, app: Application, allocation: Allocation, termination: int, message: str) -> None:
        """Ask the resource manager to remove ``allocation``'s pod (it stays booked until it confirms)."""
        self.outbox.released.append(si_pb2.AllocationRelease(
            partitionName=self.name, applicationID=app.application_id, allocationKey=allocation.key,
            terminationType=termination, message=message))

    # Holds on nodes: a reservation, or a preemption waiting for its victims.
    def reserve(self, app: Application, ask: Allocation, node: Node) -> None:
        held = ask.reserved = Reservation(ask, app.application_id, node.node_id, self.clock.now_ns())
        app.bump()
        self.reservations[node.node_id] = held
        self._hold(node, ask.key)
        self.event(E.NODE, node.node_id, E.NODE_RESERVATION, E.ADD, f"reserved for {ask.key}", ask.key, ask.resource)

    def unreserve(self, held: Reservation, message: str = "reservation released") -> None:
        held.ask.reserved = None
        self.reservations.pop(held.node_id, None)
        app = self.apps.get(held.app_id)
        if app is not None:
            app.bump()
        if self._free(self.nodes.get(held.node_id), held.ask.key):
            self.event(E.NODE, held.node_id, E.NODE_RESERVATION, E.REMOVE, message, held.ask.key)
        self.dirty = True

    def hold(self, app: Application, queue: Queue, ask: Allocation, node: Node, victims: Collection[str]) -> InFlight:
        """``ask`` preempted ``victims`` on ``node``: the node is kept for it until they are gone."""
        flight = InFlight(ask, app.application_id, queue.path, node.node_id, victims)
        ask.preempting = flight
        ask.triggered_preemption = True
        app.bump()
        self._hold(node, ask.key)
        self.holds[node.node_id] = flight
        queue.add_awaiting(ask.resource)
        return flight

    def end_hold(self, flight: InFlight) -> None:
        """The ask no longer waits for its victims (they are gone, or it is gone itself, or its node, or a
        victim stays): the node is free for any ask; victims already told to leave still leave."""
        flight.ask.preempting = None
        self.holds.pop(flight.node_id, None)
        app = self.apps.get(flight.app_id)
        if app is not None:
            app.bump()
        self._free(self.nodes.get(flight.node_id), flight.ask.key)
        queue = self.queues.get(flight.queue_path)
        if queue is not None:
            queue.add_awaiting(-flight.ask.resource)
        self.dirty = True

    def preempt(self, victim: Allocation, flight: InFlight | None, message: str) -> None:
        """Tell the resource manager to remove ``victim``; it stays booked until its pod is gone."""
        owner = self.apps[victim.application_id]
        victim_queue = self.queues.get(owner.queue_path)
        victim.preempted = True
        self._shown_changed(victim)
        victim.preempted_by = flight
        owner.bump()
        victim_queue.add_preempting(victim.resource)
        self.tell_release(owner, victim, si_pb2.PREEMPTED_BY_SCHEDULER, message)
        self.event(E.APP, owner.application_id, E.ALLOC_PREEMPT, E.REMOVE, message, victim.key, victim.resource)
        self.event(E.QUEUE, victim_queue.path, E.QUEUE_PREEMPTION, E.REMOVE, message, victim.key, victim.resource)

    def _shown_changed(self, allocation: Allocation) -> None:
        """A field of ``allocation`` that readers see changed: its node's readers render it anew."""
        node = self.nodes.get(allocation.node_id)
        if node is not None:
            node.changed(allocation)
        else:
            allocation.picture = allocation.json = None

    def victim_gone(self, victim: Allocation, queue: Queue | None) -> InFlight | None:
        """A victim's pod is gone; returns the preemption still waiting for it, now one victim fewer."""
        if queue is not None:
            queue.add_preempting(-victim.resource)
        flight = victim.preempted_by
        if flight is None:  # a queue over its lowered max: nobody waits for the room
            return None
        victim.preempted_by = None
        flight.victims.discard(victim.key)
        return flight

    def victim_stays(self, app: Application, victim: Allocation) -> None:
        """The resource manager could not remove a victim (e.g. a disruption budget): it is never chosen again."""
        flight = victim.preempted_by
        victim.preempted = False
        self._shown_changed(victim)
        victim.eviction_refused = True
        victim.preempted_by = None
        app.bump()
        queue = self.queues.get(app.queue_path)
        if queue is not None:
            queue.add_preempting(-victim.resource)
        self.event(E.APP, app.application_id, E.ALLOC_PREEMPT, E.SET, "eviction refused: the allocation stays",
                   victim.key, victim.resource)
        if flight is not None:
            flight.victims.discard(victim.key)
            if flight.ask.preempting is flight:
                self.end_hold(flight)
