"""Gang placeholders: a real pod taking over its placeholder's room, and the gang's timeout.

The cycle decides which placeholder a real pod replaces (:mod:`actors.core.cycle`); :class:`Gangs`
books it through the ledger and sees it through: the placeholder is released (``PLACEHOLDER_REPLACED``)
and stays booked until its pod is gone, then the real pod gets its allocation (:meth:`Gangs.take_over`).
When the reservation's timer runs out, a Soft gang resumes as ordinary pods and a Hard one fails.
"""

from __future__ import annotations

from actors.core import application as states
from actors.core.allocation import Allocation
from actors.core.application import Application
from actors.core.ledger import Ledger
from actors.core.queue import Queue
from si import si_pb2
from si.resources import Resource

E = si_pb2.EventRecord


class Gangs:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def replace(self, app: Application, ask: Allocation, placeholder: Allocation) -> None:
        """``ask`` takes over ``placeholder`` once its pod is gone (see :meth:`take_over`)."""
        self.ledger.remove_ask(app, ask)
        placeholder.replacement = ask
        app.replacing[ask.key] = placeholder
        self.give_up(app, placeholder, si_pb2.PLACEHOLDER_REPLACED, f"replaced by {ask.key}")

    def give_up(self, app: Application, placeholder: Allocation, termination: int, message: str) -> None:
        """Tell the resource manager to remove a placeholder's pod; its room stays booked until it
        confirms, so the node is never promised twice."""
        placeholder.placeholder_released = termination
        self.ledger.tell_release(app, placeholder, termination, message)
        detail = E.ALLOC_REPLACED if termination == si_pb2.PLACEHOLDER_REPLACED else E.ALLOC_TIMEOUT
        self.ledger.event(E.APP, app.application_id, detail, E.REMOVE, message, placeholder.key, placeholder.resource)

    def take_over(self, app: Application, placeholder: Allocation) -> None:
        """The placeholder's pod is gone: the real pod waiting for it gets its room on its node."""
        ledger = self.ledger
        real = placeholder.replacement
        placeholder.replacement = None
        app.replacing.pop(real.key, None)
        node = ledger.nodes.get(placeholder.node_id)
        queue = ledger.queues.get(app.queue_path)
        if node is not None and queue is not None and node.schedulable and real.resource.fits_in(node.available):
            ledger.book(app, queue, real, node, decided=True, took_placeholder=True)
        else:  # the node went meanwhile: the real pod is asked for again, as any other
            ledger.pend(app, real)

    def timed_out(self, app: Application) -> None:
        """The reservation's timer ran out. A gang that got all its room gives back the placeholders no
        real pod took; otherwise a Soft gang resumes as ordinary pods and a Hard one fails."""
        ledger = self.ledger
        app.stop_placeholder_timer()
        if app.state not in (states.STARTING, states.RUNNING, states.COMPLETING):
            hard = app.gang_style == states.HARD
            if hard:  # the application's pods are failed by the resource manager: nothing more to place
                for ask in [a for a in app.asks if not a.placeholder]:
                    ledger.remove_ask(app, ask)
            ledger.set_state(app, states.FAILING if hard else states.RESUMING, states.RESERVATION_TIMEOUT)
        for ask in [a for a in app.asks if a.placeholder]:
            ledger.remove_ask(app, ask)
            app.placeholder_ended(ask, replaced=False)
            ledger.tell_release(app, ask, si_pb2.TIMEOUT, "placeholder timed out")
        for placeholder in list(app.allocations.values()):
            if placeholder.placeholder and not placeholder.placeholder_released:
                self.give_up(app, placeholder, si_pb2.TIMEOUT, "placeholder timed out")
        self.settle(app)
        ledger.dirty = True

    def settle(self, app: Application) -> None:
        """After a timeout, once no placeholder is left: a resuming gang is an ordinary application, a
        failing one has failed."""
        if any(a.placeholder for a in app.allocations.values()):
            return
        if app.state == states.RESUMING:
            self.ledger.set_state(app, states.ACCEPTED, "placeholders released")
        elif app.state == states.FAILING and not app.allocations:
            self.ledger.set_state(app, states.FAILED, states.RESERVATION_TIMEOUT)


def too_large(queue: Queue, placeholder_ask: Resource) -> str:
    """Why a gang can never be placed in ``queue`` (its placeholders together exceed a max on the
    queue's path), or ``""``."""
    if placeholder_ask.is_zero():
        return ""
    for q in queue.chain():
        if q.max is not None and not placeholder_ask.fits_in_max(q.max):
            return (f"placeholder ask {dict(placeholder_ask)} exceeds the max of queue {q.path} {dict(q.max)}: "
                    "the gang can never be placed")
    return ""
