"""Pooled actors: many pykka actors sharing a few worker threads.

A ``ThreadingActor`` is one OS thread; 5,000 nodes would be 5,000 threads. A :class:`PooledActor` has
the same ``ActorRef`` / ``tell`` / ``ask`` / proxy / ``stop`` / ``ActorRegistry`` API, but no thread of
its own: its inbox, when a message arrives while the actor is idle, puts the actor on its
:class:`Dispatcher`'s run queue, and a worker of the dispatcher handles its messages.

Guarantees, as for a thread actor:
- one message at a time per actor, in mailbox order (an actor is on the run queue at most once);
- an exception from an ``ask`` goes to the asker; one from a ``tell`` stops the actor, is logged and
  ``on_failure`` runs; ``stop()`` handles the messages queued before it, then ``on_stop`` runs;
- every ask still queued when the actor stops, or sent after, fails with ``ActorDeadError``.

Fairness: a worker handles at most ``Dispatcher.slice`` messages of one actor, then puts it back at
the end of the run queue, so a busy actor cannot hold a worker while an idle one waits behind it.
Handlers must not block (no I/O, no ``ask`` of another pooled actor of the same dispatcher): actors
that wait on the network keep their own thread.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any, ClassVar

import pykka
from pykka import ActorDeadError, ActorRegistry, messages
from pykka._envelope import Envelope

log = logging.getLogger(__name__)

# Handlers hold the GIL: more workers only add switching (measured: recovery of 5,000 nodes took 11.2 s
# with one worker, 12.8 s with two, 14.5 s with four). The pool exists so that actors are not threads.
DEFAULT_WORKERS = 1
DEFAULT_SLICE = 64


@dataclass(frozen=True, slots=True)
class DispatcherStats:
    """What an operator reads of a dispatcher: its size, the actors waiting for a worker, the
    messages handled, and the seconds its workers spent handling them."""

    name: str
    workers: int
    run_queue: int
    messages: int
    busy_seconds: float


class Dispatcher:
    """A fixed pool of daemon worker threads running the actors that have messages."""

    def __init__(self, name: str = "actors", workers: int = DEFAULT_WORKERS, slice_: int = DEFAULT_SLICE) -> None:
        if workers < 1 or slice_ < 1:
            raise ValueError("a dispatcher needs at least one worker and a slice of at least one message")
        self.name = name
        self.slice = slice_
        self._ready: queue.SimpleQueue[PooledActor | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._messages = 0
        self._busy = 0.0
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(workers)]
        for thread in self._threads:
            thread.start()
        _running.add(self)

    def schedule(self, actor: PooledActor) -> None:
        self._ready.put(actor)

    def stats(self) -> DispatcherStats:
        with self._lock:
            return DispatcherStats(self.name, len(self._threads), self._ready.qsize(), self._messages, self._busy)

    def shutdown(self) -> None:
        """Stop the workers once the actors already queued have had their turn (for tests and exit)."""
        _running.discard(self)
        for _ in self._threads:
            self._ready.put(None)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=10)

    def _work(self) -> None:
        while True:
            actor = self._ready.get()
            if actor is None:
                return
            began = time.perf_counter()
            handled = actor._run_slice(self.slice)
            took = time.perf_counter() - began
            with self._lock:
                self._messages += handled
                self._busy += took


_running: weakref.WeakSet[Dispatcher] = weakref.WeakSet()
_default: Dispatcher | None = None
_default_lock = threading.Lock()


def running_dispatchers() -> list[Dispatcher]:
    """Every dispatcher started and not shut down, by name."""
    return sorted(_running, key=lambda d: d.name)


def default_dispatcher() -> Dispatcher:
    """The process's shared dispatcher, started on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Dispatcher()
        return _default


class _Mailbox:
    """A pooled actor's inbox: a deque whose first message schedules the actor on its dispatcher."""

    __slots__ = ("_actor", "_items", "_lock", "_scheduled", "_closed")

    def __init__(self, actor: PooledActor) -> None:
        self._actor = actor
        self._items: deque[Envelope[Any]] = deque()
        self._lock = threading.Lock()
        self._scheduled = True  # held until the actor's first turn is scheduled at start
        self._closed = False

    def put(self, envelope: Envelope[Any], /) -> None:
        with self._lock:
            closed, idle = self._closed, not self._scheduled
            if not closed:
                self._items.append(envelope)
                self._scheduled = True
        if closed:
            _refuse(envelope, self._actor)
        elif idle:
            self._actor.dispatcher.schedule(self._actor)

    def get(self) -> Envelope[Any]:
        """The next message; only the worker running the actor calls this, after ``empty()`` said no."""
        return self._items.popleft()

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)

    def release(self) -> bool:
        """End the actor's turn: ``True`` if messages wait (the caller schedules it again)."""
        with self._lock:
            if self._items and not self._closed:
                return True
            self._scheduled = False
            return False

    def close(self) -> list[Envelope[Any]]:
        """Refuse further messages and return those still queued."""
        with self._lock:
            self._closed = True
            left = list(self._items)
            self._items.clear()
            return left


def _refuse(envelope: Envelope[Any], actor: PooledActor) -> None:
    if envelope.reply_to is None:
        return
    if isinstance(envelope.message, messages._ActorStop):
        envelope.reply_to.set(None)  # stopping a stopped actor succeeds, as pykka's teardown answers it
        return
    error = ActorDeadError(f"{actor.actor_ref} stopped before handling the message")
    envelope.reply_to.set_exception(exc_info=(ActorDeadError, error, None))


class PooledActor(pykka.Actor):
    """A pykka actor run by a :class:`Dispatcher` (see the module docstring).

    A subclass may set ``pool`` to a dispatcher of its own; the default is the process's shared one.
    Everything else is pykka's ``Actor``.
    """

    pool: ClassVar[Dispatcher | None] = None
    dispatcher: Dispatcher

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.dispatcher = self.pool or default_dispatcher()
        self._started = False
        super().__init__(*args, **kwargs)

    def _create_actor_inbox(self) -> _Mailbox:  # pykka calls it on the instance
        return _Mailbox(self)

    @staticmethod
    def _create_future() -> pykka.Future[Any]:
        return pykka.ThreadingFuture()

    def _start_actor_loop(self) -> None:
        self.dispatcher.schedule(self)  # the first turn runs on_start, even with an empty inbox

    def _run_slice(self, budget: int) -> int:
        """Handle up to ``budget`` messages; return how many. Runs on a dispatcher worker."""
        if not self._started:
            self._started = True
            self._actor_loop_setup()
        handled = 0
        inbox = self.actor_inbox
        while handled < budget and not self.actor_stopped.is_set() and not inbox.empty():
            self._handle(inbox.get())
            handled += 1
        if self.actor_stopped.is_set():
            for envelope in inbox.close():
                _refuse(envelope, self)
        elif inbox.release():
            self.dispatcher.schedule(self)
        return handled

    def _handle(self, envelope: Envelope[Any]) -> None:
        # pykka's ``_actor_loop_running`` for one message, without the blocking ``get``.
        try:
            response = self._handle_receive(envelope.message)
            if envelope.reply_to is not None:
                envelope.reply_to.set(response)
        except Exception:
            if envelope.reply_to is not None:
                log.debug("exception returned from %s to its asker", self, exc_info=True)
                envelope.reply_to.set_exception()
            else:
                self._handle_failure(*sys.exc_info())
                try:
                    self.on_failure(*sys.exc_info())
                except Exception:
                    self._handle_failure(*sys.exc_info())
        except BaseException:
            log.debug("%r in %s: stopping all actors", sys.exc_info()[1], self)
            self._stop()
            ActorRegistry.stop_all(block=False)
