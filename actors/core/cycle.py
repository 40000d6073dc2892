"""The scheduling cycle: walks the queues and their applications and decides, without booking.

:meth:`Cycle.decisions` yields an :class:`AllocationResult` for each thing it decides (an ask placed, a
node reserved, victims chosen, a placeholder replaced or given up; upstream's
``objects.AllocationResult``); the partition books each through its ledger before the walk goes on, so
the walk always sees what it decided. The cycle reads the partition's books and notes on an ask why it
waits (:class:`Books`: its failure, its allocation log, an application's backoff); it never changes
usage, a node, an index or a queue.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Collection, Generator, Iterator, Mapping
from enum import Enum
from time import perf_counter
from typing import NamedTuple, Protocol

from actors.core import application as states
from actors.core import preemption, reservation
from actors.core.allocation import NO_NODES, Allocation, is_node_failure
from actors.core.application import Application
from actors.core.config import PartitionConfig
from actors.core.node import Node, NodeIndex
from actors.core.plugins import NodePredicates
from actors.core.queue import Queue, QueueTree
from actors.core.reservation import Reservation
from actors.core.stats import PartitionStats
from actors.core.ugm import UsageTracker
from si.clock import Clock
from si.constants import (
    NO_VICTIM_FOR_REQUIRED_NODE,
    NOT_ENOUGH_QUEUE_QUOTA,
    NOT_ENOUGH_USER_QUOTA,
    PREEMPTION_DOES_NOT_HELP,
    PREEMPTION_MAX_ATTEMPTS_EXHAUSTED,
)
from si.resources import Resource

SCORED_NODES = 100  # feasible nodes an ask with preferences compares (kube-scheduler's minimum to score)
UNSCHEDULABLE = "node(s) were unschedulable"
NODE_NAME = "node(s) didn't match the requested node name"


class Books(Protocol):
    """What the cycle reads of the partition's ledger, and the notes it may leave on an ask."""

    config: PartitionConfig
    clock: Clock
    predicates: NodePredicates
    view: object
    nodes: dict[str, Node]
    apps: dict[str, Application]
    queues: QueueTree
    index: NodeIndex
    usage: UsageTracker
    total: Resource
    reservations: Mapping[str, Reservation]
    stats: PartitionStats

    def meets_constraints(self, ask: Allocation, node: Node, without: Collection[str] = ()) -> bool: ...
    def note_failure(self, app: Application | None, ask: Allocation, reason: str, logged: str = "") -> None: ...
    def log_failure(self, app: Application, ask: Allocation, message: str) -> None: ...
    def attempted(self, app: Application, ask: Allocation) -> None: ...
    def back_off(self, app: Application, seconds: float, attempts: int) -> int: ...


class Decided(Enum):
    ALLOCATED = "allocated"  # ``ask`` on ``node`` (taking over ``placeholder``'s room when one is given)
    ALLOCATED_RESERVED = "allocated on its reserved node"
    RESERVED = "reserved"  # ``node`` is kept for ``ask`` until it fits
    PREEMPTING = "preempting"  # ``plan``'s victims leave ``node`` for ``ask``
    REPLACED = "placeholder replaced"  # ``ask`` takes ``placeholder``'s room once its pod is gone
    PLACEHOLDER_CANCELLED = "placeholder cancelled"  # ``ask`` is larger than ``placeholder``: it is given up


# Decisions that end a walk: one more ask was served this cycle.
SERVED = frozenset((Decided.ALLOCATED, Decided.ALLOCATED_RESERVED, Decided.PREEMPTING, Decided.REPLACED))


class AllocationResult(NamedTuple):
    """One decision of the cycle (a named tuple: frozen, and made a few times faster than a dataclass)."""

    kind: Decided
    app: Application
    queue: Queue
    ask: Allocation
    node: Node | None = None
    plan: preemption.Plan | None = None
    placeholder: Allocation | None = None


_Walk = Generator[AllocationResult, None, bool]


class _Order:
    """One queue's child queues or applications with something pending, in sort order under the keys
    they had when last placed (each key ends with a name unique among them, so the order is total)."""

    __slots__ = ("key", "keys", "members", "key_of")

    def __init__(self, members: list, key) -> None:
        self.key = key
        keyed = sorted((key(m), m) for m in members)  # no two keys are equal: members are never compared
        self.keys = [k for k, _ in keyed]
        self.members = [m for _, m in keyed]
        self.key_of = {id(m): k for k, m in keyed}

    def replace(self, member, pending: bool) -> None:
        """Move ``member`` to where its key sorts now (not ``pending``: it leaves)."""
        key = self.key(member) if pending else None
        old = self.key_of.get(id(member))
        if old == key:  # e.g. fifo: placing an ask of an application leaves its key as it was
            return
        keys, members = self.keys, self.members
        if old is not None:
            del self.key_of[id(member)]
            at = bisect_left(keys, old)
            del keys[at], members[at]
        if key is not None:
            at = bisect_left(keys, key)
            keys.insert(at, key)
            members.insert(at, member)
            self.key_of[id(member)] = key


class Cycle:
    """One scheduling cycle: what it decided, what it learned (shapes no node takes and why, apps and
    queues with nothing to place), and the time it spent sorting and evaluating nodes (summed here,
    recorded once per cycle).

    The queues' children and the leaves' applications are sorted once per cycle and kept in order: a walk
    that placed an ask changed the sort keys of that ask's application and of the queues on its path
    only, so those alone are moved before the next walk; any other decision sorts everything again."""

    __slots__ = ("books", "reservation_delay", "failed_shapes", "exhausted", "allocations", "sort_apps",
                 "sort_apps_n", "sort_queues", "sort_queues_n", "evaluation", "evaluation_n", "predicates",
                 "predicates_n", "preemptions", "unpreemptable", "preemptions_capped", "reservations", "unreservable",
                 "drained", "wake_due", "orders", "placed")

    def __init__(self, books: Books, reservation_delay: float) -> None:
        self.books = books
        self.reservation_delay = reservation_delay
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
        self.drained = False  # a walk found nothing to do: nothing will until something changes
        self.wake_due = 0  # when an ask that waits to preempt or reserve may do so (ns; 0: none waits)
        self.orders: dict[int, _Order] = {}  # id(queue) -> its children (a leaf: its applications) in order
        self.placed: list[AllocationResult] | None = []  # what the walk placed; None: sort everything again

    def record(self, stats: PartitionStats) -> None:
        histograms = stats.histograms
        histograms["sort_apps"].observe_total(self.sort_apps, self.sort_apps_n)
        histograms["sort_queues"].observe_total(self.sort_queues, self.sort_queues_n)
        histograms["trynode_evaluation"].observe_total(self.evaluation, self.evaluation_n)
        histograms["trynode_latency"].observe_total(self.predicates, self.predicates_n)

    def _wake_at(self, due: int) -> None:
        if not self.wake_due or due < self.wake_due:
            self.wake_due = due

    def decisions(self, max_allocations: int, deadline: int) -> Iterator[AllocationResult]:
        """Decide until ``max_allocations`` asks are served, the monotonic ``deadline`` passes or nothing
        is left to do; each decision is booked by the caller before the next is taken."""
        books = self.books
        if books.reservations:
            yield from self._reserved()
        clock = books.clock
        root = books.queues.root
        while self.allocations < max_allocations and clock.monotonic_ns() < deadline:
            walk = self._walk(root)
            while True:  # ``yield from``, noting the decisions that change sort keys beyond _reorder's
                try:
                    result = next(walk)
                except StopIteration as done:
                    served = done.value
                    break
                if self.placed is not None:
                    if result.kind in _REORDERED and result.placeholder is None:
                        self.placed.append(result)
                    else:
                        self.placed = None
                yield result
            if not served:
                self.drained = True
                break
            self.allocations += 1
            self._reorder()

    def _reorder(self) -> None:
        """Bring the orders in line with what the last walk booked."""
        placed, orders = self.placed, self.orders
        self.placed = []
        if placed is None:
            orders.clear()
            return
        for result in placed:
            queue = result.queue
            apps = orders.get(id(queue))
            if apps is not None:
                apps.replace(result.app, bool(result.app.asks))
            while queue.parent is not None:
                children = orders.get(id(queue.parent))
                if children is not None:
                    children.replace(queue, bool(queue.pending_priorities))
                queue = queue.parent

    def _reserved(self) -> Iterator[AllocationResult]:
        """Each reserving ask that now fits its node (and its quotas) is placed there."""
        books = self.books
        usage = books.usage
        for held in list(books.reservations.values()):
            ask, node = held.ask, books.nodes[held.node_id]
            app = books.apps.get(held.app_id)
            if app is None or not node.schedulable or not node.fits(ask.resource):
                continue
            queue = books.queues.get(app.queue_path)
            if not usage.tracks(app.application_id) and not (
                    queue.can_run_another_app()
                    and usage.can_run_app(app.user, app.groups, queue.path, app.application_id)):
                continue
            if not (ask.resource.fits_in_max(queue.headroom())
                    and ask.resource.fits_in_max(usage.headroom(app.user, app.groups, queue.path))):
                continue
            if not books.meets_constraints(ask, node):
                continue
            yield AllocationResult(Decided.ALLOCATED_RESERVED, app, queue, ask, node)
            self.allocations += 1

    # Queues.
    def _walk(self, queue: Queue) -> _Walk:
        if id(queue) in self.exhausted or not queue.pending_priorities:
            return False
        placed = False
        if queue.leaf:
            placed = yield from self._leaf(queue)
        else:
            began = perf_counter()
            children = self._sorted_children(queue)
            self.sort_queues += perf_counter() - began
            self.sort_queues_n += 1
            for child in children:
                if (yield from self._walk(child)):
                    placed = True
                    break
        if not placed:
            self.exhausted.add(id(queue))
        return placed

    def _sorted_children(self, queue: Queue) -> list[Queue]:
        order = self.orders.get(id(queue))
        if order is None:
            order = self.orders[id(queue)] = _Order([c for c in queue.children.values() if c.pending_priorities],
                                                    _queue_key(queue, self.books.total))
        return order.members

    def _sorted_apps(self, queue: Queue) -> list[Application]:
        order = self.orders.get(id(queue))
        if order is None:
            order = self.orders[id(queue)] = _Order([a for a in queue.apps.values() if a.asks],
                                                    _app_key(queue, self.books.total))
        if queue.sort_policy == "stateaware":
            return _stateaware_filter(queue, order.members)
        return order.members

    def _leaf(self, queue: Queue) -> _Walk:
        began = perf_counter()
        apps = self._sorted_apps(queue)
        self.sort_apps += perf_counter() - began
        self.sort_apps_n += 1
        books = self.books
        now = 0
        for app in apps:
            if id(app) in self.exhausted:
                continue
            if app.backoff_until:
                now = now or books.clock.now_ns()
                if now < app.backoff_until:
                    continue
                app.back_off(0)
            if not books.usage.tracks(app.application_id):
                if not queue.can_run_another_app():
                    self._note_waiting(app, f"queue {queue.path}: maxapplications reached")
                    self.exhausted.add(id(app))
                    continue
                if not books.usage.can_run_app(app.user, app.groups, queue.path, app.application_id):
                    self._note_waiting(app, f"user {app.user}: maxapplications limit reached in {queue.path}")
                    self.exhausted.add(id(app))
                    continue
            if (yield from self._app(app, queue)):
                if app.unplaced_attempts:
                    app.placed()
                return True
            self.exhausted.add(id(app))
            if queue.ask_backoff and app.unplaced(queue.ask_backoff):
                # The unschedulable-ask backoff: after ``application.unschedasks.backoff`` attempts in a row
                # that placed nothing, the application is not tried for ``...backoff.delay``.
                self._wake_at(books.back_off(app, queue.ask_backoff_delay, queue.ask_backoff))
        return False

    def _note_waiting(self, app: Application, reason: str) -> None:
        for ask in app.asks:
            self.books.note_failure(app, ask, reason)

    # Applications.
    def _app(self, app: Application, queue: Queue) -> _Walk:
        if app.placeholders and not app.allocated_placeholder.is_zero() and (yield from self._replace(app, queue)):
            return True
        books = self.books
        headroom = queue.headroom()
        user_headroom = books.usage.headroom(app.user, app.groups, queue.path)
        failed_shapes = self.failed_shapes
        for ask in app.asks:
            if ask.preempting is not None or (app.placeholders and app.waits_for_placeholder(ask)):
                continue
            # A shape's tuple is hashed anew on each lookup: none is made while no shape has failed.
            shape_failure = failed_shapes.get(ask.shape) if failed_shapes and ask.shape is not None else None
            if shape_failure is not None:
                # Every pod waiting for this reason is told so, not only the first one of its shape.
                if not is_node_failure(ask.last_failure):
                    books.note_failure(app, ask, shape_failure)
                if (yield from self._no_node(app, queue, ask, headroom, user_headroom)):
                    return True
                continue
            if not ask.attempted:
                books.attempted(app, ask)
            if user_headroom is not None and not ask.resource.fits_in_max(user_headroom):
                books.note_failure(app, ask, f"user {app.user}: resource limit reached in {queue.path}",
                                   NOT_ENOUGH_USER_QUOTA)
                continue
            if headroom is not None and not ask.resource.fits_in_max(headroom):
                # As upstream, victims inside the queue whose max it would break may make room.
                if (yield from self._preempt(app, queue, ask, headroom, user_headroom)):
                    return True
                books.note_failure(app, ask, queue.limiting_max(ask.resource) or f"queue {queue.path}: max reached",
                                   NOT_ENOUGH_QUEUE_QUOTA)
                continue
            began = perf_counter()
            node, shape_decided = self._find_node(ask)
            self.evaluation += perf_counter() - began
            self.evaluation_n += 1
            if node is None:
                if ask.shape is not None and shape_decided:
                    self.failed_shapes[ask.shape] = ask.last_failure
                if (yield from self._no_node(app, queue, ask, headroom, user_headroom)):
                    return True
                continue
            yield AllocationResult(Decided.ALLOCATED, app, queue, ask, node)
            return True
        return False

    def _replace(self, app: Application, queue: Queue) -> _Walk:
        """The placeholder pass: a real pod of a task group takes over an allocated placeholder of its
        group, on the placeholder's node. A real pod larger than its group's placeholders ends them
        instead, and one whose constraints no placeholder's node meets is placed on another node while
        one placeholder of its group is given up."""
        books = self.books
        held = [a for a in app.allocations.values() if a.placeholder and not a.placeholder_released]
        for ask in app.asks:
            if not app.waits_for_placeholder(ask):
                continue
            fallback = None
            for placeholder in held:
                if placeholder.placeholder_released or placeholder.task_group != ask.task_group:
                    continue
                if not ask.resource.fits_in(placeholder.resource):
                    yield AllocationResult(Decided.PLACEHOLDER_CANCELLED, app, queue, ask, placeholder=placeholder)
                    continue
                node = books.nodes.get(placeholder.node_id)
                if node is None or not books.meets_constraints(ask, node):
                    fallback = fallback or placeholder
                    continue
                yield AllocationResult(Decided.REPLACED, app, queue, ask, node, placeholder=placeholder)
                return True
            if fallback is not None:
                node, _ = self._find_node(ask, timed=False)
                if node is not None:
                    yield AllocationResult(Decided.ALLOCATED, app, queue, ask, node, placeholder=fallback)
                    return True
        return False

    # Nodes.
    def _find_node(self, ask: Allocation, timed: bool = True) -> tuple[Node | None, bool]:
        """The first node in policy order that takes ``ask``, and whether the ask's shape alone decided
        the outcome (no predicate looked at the ask's other properties, e.g. its labels or tolerations)."""
        books = self.books
        nodes = books.nodes
        predicates = books.predicates
        view = books.view
        if ask.required_node:
            required = nodes.get(ask.required_node)
            candidates = [ask.required_node] if required is not None and required.held_by in ("", ask.key) else []
        else:
            candidates = books.index
        rejected: dict[str, int] = {}  # predicate reason -> nodes it rejected
        guarded = view.guarded
        prefers = ask.constrained and predicates.ask_prefers(ask.tags)
        best, best_score, scored = None, 0.0, 0
        for node_id in candidates:
            node = nodes[node_id]
            if not node.schedulable:
                continue
            if not node.fits(ask.resource):
                continue
            if ask.constrained or node.restricted or guarded(node_id):
                began = perf_counter()
                why = predicates.check(ask.tags, node_id, node.attributes, (a.tags for a in node.all_allocations()), view)
                if timed:
                    self.predicates += perf_counter() - began
                    self.predicates_n += 1
                if why is not None:
                    rejected[why] = rejected.get(why, 0) + 1
                    continue
            if not prefers:
                return node, False
            # The ask ranks nodes: the best of the first SCORED_NODES that take it, in policy order on ties.
            score = predicates.score(ask.tags, node_id, node.attributes, view)
            if best is None or score > best_score:
                best, best_score = node, score
            scored += 1
            if scored >= SCORED_NODES:
                break
        if best is not None:
            return best, False
        if not is_node_failure(ask.last_failure):
            books.note_failure(None, ask, self._explain(ask, candidates, rejected))
        return None, not rejected

    def _explain(self, ask: Allocation, candidates, rejected: dict[str, int]) -> str:
        """Why no node takes ``ask``, as kube-scheduler writes it: ``0/5 nodes are available: 3 Insufficient
        vcore, 2 node(s) didn't match pod anti-affinity rules.`` (each node counted once per reason)."""
        nodes = self.books.nodes
        if not nodes:
            return NO_NODES
        counts = dict(rejected)
        considered = 0
        for node_id in candidates:
            node = nodes[node_id]
            considered += 1
            if not node.schedulable:
                counts[UNSCHEDULABLE] = counts.get(UNSCHEDULABLE, 0) + 1
                continue
            available = node.available
            for name, amount in ask.resource.items():
                if amount > available[name]:
                    reason = f"Insufficient {name}"
                    counts[reason] = counts.get(reason, 0) + 1
        unschedulable = len(nodes) - len(self.books.index) if not ask.required_node else 0
        if unschedulable:
            counts[UNSCHEDULABLE] = counts.get(UNSCHEDULABLE, 0) + unschedulable
        others = len(nodes) - considered - unschedulable
        if others > 0:
            counts[NODE_NAME] = counts.get(NODE_NAME, 0) + others
        reasons = sorted(f"{n} {reason}" for reason, n in counts.items())
        return f"0/{len(nodes)} nodes are available: {', '.join(reasons)}."

    # Preemption and reservations: an ask that fits no node.
    def _no_node(self, app: Application, queue: Queue, ask: Allocation, headroom: Resource | None,
                 user_headroom: Resource | None) -> _Walk:
        """``ask`` fits no node now: it may preempt (True: victims chosen), else reserve a node."""
        if ask.required_node:
            return (yield from self._required_node(app, queue, ask, headroom, user_headroom))
        if (yield from self._preempt(app, queue, ask, headroom, user_headroom)):
            return True
        if self.preemptions.get(id(queue), 0) < preemption.MAX_PER_QUEUE:  # else it may preempt next cycle
            yield from self._reserve(app, queue, ask, headroom, user_headroom)
        return False

    def _required_node(self, app: Application, queue: Queue, ask: Allocation, headroom: Resource | None,
                       user_headroom: Resource | None) -> _Walk:
        """A DaemonSet pod's ask: it reserves its node at once and preempts lower-priority pods there."""
        books = self.books
        node = books.nodes.get(ask.required_node)
        if (node is None or not node.schedulable or ask.preempting is not None or ask.placeholder
                or not (ask.resource.fits_in_max(headroom) and ask.resource.fits_in_max(user_headroom))):
            return False
        if ask.reserved is None and not node.held_by and ask.resource.fits_in(node.capacity - node.occupied):
            yield AllocationResult(Decided.RESERVED, app, queue, ask, node)
        if not (books.config.preemption.enabled and ask.preempts_others) or node.held_by != ask.key:
            return False
        began = perf_counter()
        found = preemption.on_required_node(node, ask, books.meets_constraints)
        books.stats.histograms["trypreemption_latency"].observe(perf_counter() - began)
        if found is None:
            books.log_failure(app, ask, NO_VICTIM_FOR_REQUIRED_NODE)
            return False
        yield AllocationResult(Decided.PREEMPTING, app, queue, ask, found.node, plan=found)
        return True

    def _preempt(self, app: Application, queue: Queue, ask: Allocation, headroom: Resource | None,
                 user_headroom: Resource | None) -> _Walk:
        """``ask`` fits no node: preempt for it if the laws allow, holding the victims' node for it."""
        books = self.books
        if not ask.preempts_others or ask.placeholder or not books.config.preemption.enabled:
            return False
        if self.preemptions.get(id(queue), 0) >= preemption.MAX_PER_QUEUE:
            self.preemptions_capped = True
            books.log_failure(app, ask, PREEMPTION_MAX_ATTEMPTS_EXHAUSTED)
            return False
        if (id(app), ask.shape) in self.unpreemptable:
            return False
        if not preemption.guarded_types(queue, ask):
            return False
        if not ask.resource.fits_in_max(user_headroom):
            return False
        shortfall = None
        if not ask.resource.fits_in_max(headroom):  # victims under the max it breaks may make room
            shortfall = Resource({n: v - headroom[n] for n, v in ask.resource.items() if n in headroom and v > headroom[n]})
        elif not (ask.resource + queue.awaiting).fits_in_max(headroom):
            return False  # the room under the max is promised to asks waiting for their victims
        due = ask.request_time + int(queue.preemption_delay * 1e9)
        if books.clock.now_ns() < due:
            self._wake_at(due)
            return False
        began = perf_counter()
        # The node it reserved is out of the node order, but its victims may well be there.
        order = books.index if ask.reserved is None else itertools.chain((ask.reserved.node_id,), books.index)
        found = preemption.plan(books.nodes, order, books.queues.by_path, books.apps, app.application_id, queue, ask,
                                books.meets_constraints, shortfall)
        books.stats.histograms["trypreemption_latency"].observe(perf_counter() - began)
        if found is None:
            if ask.shape is not None:
                self.unpreemptable.add((id(app), ask.shape))
            books.log_failure(app, ask, PREEMPTION_DOES_NOT_HELP)
            return False
        self.preemptions[id(queue)] = self.preemptions.get(id(queue), 0) + 1
        yield AllocationResult(Decided.PREEMPTING, app, queue, ask, found.node, plan=found)
        return True

    def _reserve(self, app: Application, queue: Queue, ask: Allocation, headroom: Resource | None,
                 user_headroom: Resource | None) -> Iterator[AllocationResult]:
        """``ask`` fits no node: once it has waited long enough, it reserves the node that fits it soonest."""
        if ask.reserved is not None or ask.preempting is not None or ask.placeholder:
            return
        books = self.books
        due = ask.request_time + int(self.reservation_delay * 1e9)
        if books.clock.now_ns() < due:
            self._wake_at(due)
            return
        memo = (id(app), ask.shape if ask.shape is not None else ask.key)
        if self.reservations >= reservation.MAX_PER_CYCLE or memo in self.unreservable:
            return
        if not (ask.resource.fits_in_max(headroom) and ask.resource.fits_in_max(user_headroom)):
            return
        node = reservation.best_node(books.nodes, books.index, ask, books.meets_constraints)
        if node is None:
            self.unreservable.add(memo)
            return
        self.reservations += 1
        yield AllocationResult(Decided.RESERVED, app, queue, ask, node)


# Decisions after which only the placed application and its queues need to move in the orders.
_REORDERED = frozenset((Decided.ALLOCATED, Decided.ALLOCATED_RESERVED))


def _queue_key(parent: Queue, total: Resource):
    """How ``parent`` orders its children, as upstream's ``sortQueue``: least share first, then highest
    pending priority (before the share with priority sorting), then most pending, then by name."""
    if parent.priority_sorting:
        return lambda c: (-c.priority(), c.share(total), -sum(c.pending.values()), c.name)
    return lambda c: (c.share(total), -c.priority(), -sum(c.pending.values()), c.name)


def _app_key(queue: Queue, total: Resource):
    """How the leaf ``queue`` orders its applications, as upstream's ``sortApplications``: by dominant share
    of the cluster (``fair``) or by submission (``fifo``), the highest ask priority breaking ties (or
    deciding first, with priority sorting), then by arrival and id."""
    if queue.sort_policy == "fair":
        if queue.priority_sorting:
            return lambda a: (-a.priority, a.used.dominant_share(total), a.submission_time, a.arrived, a.application_id)
        return lambda a: (a.used.dominant_share(total), -a.priority, a.submission_time, a.arrived, a.application_id)
    if queue.priority_sorting:
        return lambda a: (-a.priority, a.submission_time, a.arrived, a.application_id)
    return lambda a: (a.submission_time, -a.priority, a.arrived, a.application_id)


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
