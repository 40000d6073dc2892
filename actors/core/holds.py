"""Nodes held for one ask: the preemptions and reservations the cycle decided, booked and seen through.

A node is held for an ask that reserved it (``actors.core.reservation``) or that waits for the victims
it preempted there (``actors.core.preemption``, ``actors.core.quota`` for a lowered max); a held node
is out of the partition's node order, so no other ask is placed on it. :class:`Holds` books what the
cycle decided through the ledger, and follows what happens next: a victim gone (its preemptor takes the
room), a victim that stays, a reservation that times out, a queue over a lowered max.
"""

from __future__ import annotations

from actors.core import quota
from actors.core.allocation import Allocation
from actors.core.application import Application
from actors.core.ledger import Ledger
from actors.core.preemption import Plan
from actors.core.queue import Queue
from si.constants import TAG_NAMESPACE, TAG_POD_NAME


class Holds:
    def __init__(self, ledger: Ledger, reservation_timeout: float) -> None:
        self.ledger = ledger
        self.reservation_timeout = reservation_timeout
        self.wake_due = 0  # when a waiting ask may next preempt or reserve (ns; 0: none waits)

    def wake_at(self, due: int) -> None:
        if due and (not self.wake_due or due < self.wake_due):
            self.wake_due = due

    def tick(self, now: int) -> None:
        ledger = self.ledger
        if self.wake_due and now >= self.wake_due:
            self.wake_due = 0
            ledger.dirty = True  # a waiting ask's preemption.delay or reservation delay ended
        if ledger.config.preemption.quota_preemption_enabled:
            self._enforce_quotas(now)
        timeout = int(self.reservation_timeout * 1e9)
        for held in [r for r in ledger.reservations.values() if now - r.since >= timeout]:
            ledger.unreserve(held, "reservation timed out")

    def preempt(self, app: Application, queue: Queue, ask: Allocation, found: Plan) -> None:
        """Book a preemption: the victims are told to leave, their node is kept for ``ask`` meanwhile."""
        ledger = self.ledger
        if ask.reserved is not None:  # its room comes from victims now, maybe on the node it reserved
            ledger.unreserve(ask.reserved)
        flight = ledger.hold(app, queue, ask, found.node, [v.key for v in found.victims])
        pod = ask.tags.get(TAG_POD_NAME)
        preemptor = f"{ask.tags.get(TAG_NAMESPACE, '')}/{pod}" if pod else ask.key
        message = f"preempted by {preemptor} of application {app.application_id} in queue {queue.path}"
        for victim in found.victims:
            ledger.preempt(victim, flight, message)

    def _enforce_quotas(self, now: int) -> None:
        """Quota-change preemption (actors.core.quota): a queue over a lowered max for its
        ``quota.preemption.delay`` gives pods back until it fits."""
        ledger = self.ledger
        for queue in list(ledger.queues.by_path.values()):
            if not queue.quota_preemption_delay or not quota.over_max(queue):
                queue.over_max_since = 0
            elif not queue.over_max_since:
                queue.over_max_since = now
            elif now - queue.over_max_since >= queue.quota_preemption_delay * 1e9:
                message = quota.MESSAGE.format(queue=queue.path)
                for victim in quota.victims(queue, ledger.apps, quota.subtree(queue)):
                    ledger.preempt(victim, None, message)

    def victim_gone(self, victim: Allocation, queue: Queue | None) -> None:
        """A victim's pod is gone; once all of them are, its preemptor gets their node."""
        ledger = self.ledger
        flight = ledger.victim_gone(victim, queue)
        if flight is None or flight.victims or flight.ask.preempting is not flight:
            return
        ask = flight.ask
        ledger.end_hold(flight)
        app = ledger.apps.get(flight.app_id)
        node = ledger.nodes.get(flight.node_id)
        if app is None or app.find_ask(ask.key) is not ask or node is None:
            return
        queue = ledger.queues.get(app.queue_path)
        if (node.schedulable and ask.resource.fits_in(node.available) and ask.resource.fits_in_max(queue.headroom())
                and ledger.meets_constraints(ask, node)):
            ledger.remove_ask(app, ask)
            ledger.book(app, queue, ask, node, decided=True)
