"""The partition's side of preemption and reservations: nodes held for one ask.

A node is held for an ask that reserved it (``actors.core.reservation``) or that waits for the victims
it preempted there (``actors.core.preemption``, ``actors.core.quota`` for a lowered max); a held node
is out of the partition's node order, so no other ask is placed on it. ``NodeHolds`` is a part of
:class:`actors.core.partition.Partition`, kept apart so that the scheduling cycle reads without it:
it uses the partition's objects and its booking methods (``_place``, ``_remove_ask``, ``_event``...).
"""

from __future__ import annotations

import itertools
from time import perf_counter
from typing import TYPE_CHECKING

from actors.core import preemption, quota, reservation
from actors.core.allocation import Allocation
from actors.core.application import Application
from actors.core.node import Node
from actors.core.queue import Queue
from si import si_pb2
from si.constants import (
    NO_VICTIM_FOR_REQUIRED_NODE,
    PREEMPTION_DOES_NOT_HELP,
    PREEMPTION_MAX_ATTEMPTS_EXHAUSTED,
    TAG_NAMESPACE,
    TAG_POD_NAME,
)
from si.resources import Resource

if TYPE_CHECKING:
    from actors.core.partition import _Cycle
    from si.clock import Clock

E = si_pb2.EventRecord


class NodeHolds:
    """Preempting, reserving, and placing an ask on the node held for it (a mixin of ``Partition``)."""

    clock: Clock

    def _init_holds(self) -> None:
        self.holds: dict[str, preemption.InFlight] = {}  # node id -> the preemption holding it
        self.reservations: dict[str, reservation.Reservation] = {}  # node id -> the ask that reserved it
        self.wake_due = 0  # when a waiting ask may next preempt or reserve (ns; 0: none waits)

    def _tick_holds(self, now: int) -> None:
        if self.wake_due and now >= self.wake_due:
            self.wake_due = 0
            self.dirty = True  # a waiting ask's preemption.delay or reservation delay ended
        if self.config.preemption.quota_preemption_enabled:
            self._enforce_quotas(now)
        timeout = int(self.timing.reservation_timeout * 1e9)
        for held in [r for r in self.reservations.values() if now - r.since >= timeout]:
            self._unreserve(held, "reservation timed out")

    def _node_going(self, node: Node) -> None:
        if node.node_id in self.holds:
            self._end_hold(self.holds[node.node_id])
        if node.node_id in self.reservations:
            self._unreserve(self.reservations[node.node_id])

    def _ask_going(self, ask: Allocation) -> None:
        """The ask is placed or removed: the node it held is free."""
        if ask.preempting is not None:
            self._end_hold(ask.preempting)
        if ask.reserved is not None:
            self._unreserve(ask.reserved)

    # Preemption (the decision: actors.core.preemption).
    def _no_node(self, app: Application, queue: Queue, ask: Allocation, cycle: _Cycle, headroom: Resource | None,
                 user_headroom: Resource | None) -> bool:
        """``ask`` fits no node now: it may preempt (True: victims chosen), else reserve a node."""
        if ask.required_node:
            return self._required_node(app, queue, ask, headroom, user_headroom)
        if self._try_preempt(app, queue, ask, cycle, headroom, user_headroom):
            return True
        if cycle.preemptions.get(id(queue), 0) < preemption.MAX_PER_QUEUE:  # else it may preempt next cycle
            self._try_reserve(app, ask, cycle, headroom, user_headroom)
        return False

    def _required_node(self, app: Application, queue: Queue, ask: Allocation, headroom: Resource | None,
                       user_headroom: Resource | None) -> bool:
        """A DaemonSet pod's ask: it reserves its node at once and preempts lower-priority pods there."""
        node = self.nodes.get(ask.required_node)
        if (node is None or not node.schedulable or ask.preempting is not None or ask.placeholder
                or not (ask.resource.fits_in_max(headroom) and ask.resource.fits_in_max(user_headroom))):
            return False
        if ask.reserved is None and not node.held_by and ask.resource.fits_in(node.capacity - node.occupied):
            self._reserve(app, ask, node)
        if not (self.config.preemption.enabled and ask.preempts_others) or node.held_by != ask.key:
            return False
        began = perf_counter()
        found = preemption.on_required_node(node, ask, self._meets_constraints)
        self.stats.histograms["trypreemption_latency"].observe(perf_counter() - began)
        if found is None:
            self._log_failure(app, ask, NO_VICTIM_FOR_REQUIRED_NODE)
            return False
        self._preempt(app, queue, ask, found)
        return True

    def _try_preempt(self, app: Application, queue: Queue, ask: Allocation, cycle: _Cycle,
                     headroom: Resource | None, user_headroom: Resource | None) -> bool:
        """``ask`` fits no node: preempt for it if the laws allow, holding the victims' node for it."""
        if not ask.preempts_others or ask.placeholder or not self.config.preemption.enabled:
            return False
        if cycle.preemptions.get(id(queue), 0) >= preemption.MAX_PER_QUEUE:
            cycle.preemptions_capped = True
            self._log_failure(app, ask, PREEMPTION_MAX_ATTEMPTS_EXHAUSTED)
            return False
        if (id(app), ask.shape) in cycle.unpreemptable:
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
        if self.clock.now_ns() < due:
            self._wake_at(due)
            return False
        began = perf_counter()
        # The node it reserved is out of the node order, but its victims may well be there.
        order = self.index if ask.reserved is None else itertools.chain((ask.reserved.node_id,), self.index)
        found = preemption.plan(self.nodes, order, self.queues.by_path, self.apps, app.application_id, queue, ask,
                                self._meets_constraints, shortfall)
        self.stats.histograms["trypreemption_latency"].observe(perf_counter() - began)
        if found is None:
            if ask.shape is not None:
                cycle.unpreemptable.add((id(app), ask.shape))
            self._log_failure(app, ask, PREEMPTION_DOES_NOT_HELP)
            return False
        cycle.preemptions[id(queue)] = cycle.preemptions.get(id(queue), 0) + 1
        self._preempt(app, queue, ask, found)
        return True

    def _preempt(self, app: Application, queue: Queue, ask: Allocation, found: preemption.Plan) -> None:
        if ask.reserved is not None:  # its room comes from victims now, maybe on the node it reserved
            self._unreserve(ask.reserved)
        node = found.node
        flight = preemption.InFlight(ask, app.application_id, queue.path, node.node_id, (v.key for v in found.victims))
        ask.preempting = flight
        ask.triggered_preemption = True
        app.version += 1
        node.held_by = ask.key
        self.holds[node.node_id] = flight
        self.index.update(node)
        queue.add_awaiting(ask.resource)
        pod = ask.tags.get(TAG_POD_NAME)
        preemptor = f"{ask.tags.get(TAG_NAMESPACE, '')}/{pod}" if pod else ask.key
        message = f"preempted by {preemptor} of application {app.application_id} in queue {queue.path}"
        for victim in found.victims:
            self._take_victim(victim, flight, message)

    def _log_failure(self, app: Application, ask: Allocation, message: str) -> None:
        """Count ``message`` (upstream's constant text) in the ask's allocation log."""
        ask.log_failure(message, self.clock.now_ns())
        app.version += 1

    def _take_victim(self, victim: Allocation, flight: preemption.InFlight | None, message: str) -> None:
        """Tell the resource manager to remove ``victim``; it stays booked until its pod is gone."""
        owner = self.apps[victim.application_id]
        victim_queue = self.queues.get(owner.queue_path)
        victim.preempted = True
        victim.preempted_by = flight
        owner.version += 1
        victim_queue.add_preempting(victim.resource)
        self.outbox.released.append(si_pb2.AllocationRelease(
            partitionName=self.name, applicationID=owner.application_id, allocationKey=victim.key,
            terminationType=si_pb2.PREEMPTED_BY_SCHEDULER, message=message))
        self._event(E.APP, owner.application_id, E.ALLOC_PREEMPT, E.REMOVE, message, victim.key, victim.resource)
        self._event(E.QUEUE, victim_queue.path, E.QUEUE_PREEMPTION, E.REMOVE, message, victim.key, victim.resource)

    def _enforce_quotas(self, now: int) -> None:
        """Quota-change preemption (actors.core.quota): a queue over a lowered max for its
        ``quota.preemption.delay`` gives pods back until it fits."""
        for queue in list(self.queues.by_path.values()):
            if not queue.quota_preemption_delay or not quota.over_max(queue):
                queue.over_max_since = 0
            elif not queue.over_max_since:
                queue.over_max_since = now
            elif now - queue.over_max_since >= queue.quota_preemption_delay * 1e9:
                message = quota.MESSAGE.format(queue=queue.path)
                for victim in quota.victims(queue, self.apps, quota.subtree(queue)):
                    self._take_victim(victim, None, message)

    def _victim_gone(self, victim: Allocation, queue: Queue | None) -> None:
        """A victim's pod is gone; once all of them are, its preemptor gets their node."""
        if queue is not None:
            queue.add_preempting(-victim.resource)
        flight = victim.preempted_by
        if flight is None:  # a queue over its lowered max: nobody waits for the room
            return
        victim.preempted_by = None
        flight.victims.discard(victim.key)
        if flight.victims or flight.ask.preempting is not flight:
            return
        ask = flight.ask
        self._end_hold(flight)
        app = self.apps.get(flight.app_id)
        node = self.nodes.get(flight.node_id)
        if app is None or app.find_ask(ask.key) is not ask or node is None:
            return
        queue = self.queues.get(app.queue_path)
        if (node.schedulable and ask.resource.fits_in(node.available) and ask.resource.fits_in_max(queue.headroom())
                and self._meets_constraints(ask, node)):
            self._remove_ask(app, ask)
            ask.last_failure = ""
            self._place(app, queue, ask, node, decided=True)

    def _eviction_refused(self, app: Application, victim: Allocation) -> None:
        """The resource manager could not remove a victim (e.g. a disruption budget): it stays, is never
        chosen again, and its preemptor looks for room anew."""
        flight = victim.preempted_by
        victim.preempted = False
        victim.eviction_refused = True
        victim.preempted_by = None
        app.version += 1
        queue = self.queues.get(app.queue_path)
        if queue is not None:
            queue.add_preempting(-victim.resource)
        self._event(E.APP, app.application_id, E.ALLOC_PREEMPT, E.SET, "eviction refused: the allocation stays",
                    victim.key, victim.resource)
        if flight is not None:
            flight.victims.discard(victim.key)
            if flight.ask.preempting is flight:
                self._end_hold(flight)

    def _end_hold(self, flight: preemption.InFlight) -> None:
        """The ask no longer waits for its victims (they are gone, or it is gone itself, or its node, or a
        victim stays): the node is free for any ask; victims already told to leave still leave."""
        flight.ask.preempting = None
        self.holds.pop(flight.node_id, None)
        app = self.apps.get(flight.app_id)
        if app is not None:
            app.version += 1
        node = self.nodes.get(flight.node_id)
        if node is not None and node.held_by == flight.ask.key:
            node.held_by = ""
            self.index.update(node)
        queue = self.queues.get(flight.queue_path)
        if queue is not None:
            queue.add_awaiting(-flight.ask.resource)
        self.dirty = True

    def _wake_at(self, due: int) -> None:
        if not self.wake_due or due < self.wake_due:
            self.wake_due = due

    # Reservations (actors.core.reservation).
    def _try_reserve(self, app: Application, ask: Allocation, cycle: _Cycle, headroom: Resource | None,
                     user_headroom: Resource | None) -> None:
        """``ask`` fits no node: once it has waited long enough, it reserves the node that fits it soonest."""
        if ask.reserved is not None or ask.preempting is not None or ask.placeholder:
            return
        now = self.clock.now_ns()
        due = ask.request_time + int(self.timing.reservation_delay * 1e9)
        if now < due:
            self._wake_at(due)
            return
        memo = (id(app), ask.shape if ask.shape is not None else ask.key)
        if cycle.reservations >= reservation.MAX_PER_CYCLE or memo in cycle.unreservable:
            return
        if not (ask.resource.fits_in_max(headroom) and ask.resource.fits_in_max(user_headroom)):
            return
        node = reservation.best_node(self.nodes, self.index, ask, self._meets_constraints)
        if node is None:
            cycle.unreservable.add(memo)
            return
        cycle.reservations += 1
        self._reserve(app, ask, node)

    def _reserve(self, app: Application, ask: Allocation, node: Node) -> None:
        held = ask.reserved = reservation.Reservation(ask, app.application_id, node.node_id, self.clock.now_ns())
        app.version += 1
        self.reservations[node.node_id] = held
        node.held_by = ask.key
        self.index.update(node)
        self._event(E.NODE, node.node_id, E.NODE_RESERVATION, E.ADD, f"reserved for {ask.key}", ask.key,
                    ask.resource)

    def _unreserve(self, held: reservation.Reservation, message: str = "reservation released") -> None:
        held.ask.reserved = None
        self.reservations.pop(held.node_id, None)
        app = self.apps.get(held.app_id)
        if app is not None:
            app.version += 1
        node = self.nodes.get(held.node_id)
        if node is not None and node.held_by == held.ask.key:
            node.held_by = ""
            self.index.update(node)
            self._event(E.NODE, node.node_id, E.NODE_RESERVATION, E.REMOVE, message, held.ask.key)
        self.dirty = True

    def _place_reserved(self, cycle: _Cycle) -> None:
        """Each reserving ask that now fits its node (and its quotas) is placed there."""
        for held in list(self.reservations.values()):
            ask, node = held.ask, self.nodes[held.node_id]
            app = self.apps.get(held.app_id)
            if app is None or not node.schedulable or not ask.resource.fits_in(node.available):
                continue
            queue = self.queues.get(app.queue_path)
            if not self.usage.tracks(app.application_id) and not (
                    queue.can_run_another_app()
                    and self.usage.can_run_app(app.user, app.groups, queue.path, app.application_id)):
                continue
            if not (ask.resource.fits_in_max(queue.headroom())
                    and ask.resource.fits_in_max(self.usage.headroom(app.user, app.groups, queue.path))):
                continue
            if not self._meets_constraints(ask, node):
                continue
            self._remove_ask(app, ask)  # ends the reservation
            ask.last_failure = ""
            self._place(app, queue, ask, node, decided=True)
            cycle.allocations += 1
