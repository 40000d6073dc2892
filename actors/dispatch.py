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

Built on pykka's extension points for new actor types (``_create_actor_inbox``, ``_create_future``,
``_start_actor_loop``): a worker runs pykka's own ``_actor_loop_setup``, ``_actor_loop_running`` and
``_actor_loop_teardown`` over the actor's mailbox, whose ``get`` ends the loop at the turn's end.
``tests/actors/test_pykka_contract.py`` pins what this relies on. One difference: a handler raising a
``BaseException`` that is not an ``Exception`` fails its actor, where pykka stops every actor and waits,
which a worker cannot do for the actors only it runs.
"""

from __future__ import annotations

import contextlib
import queue
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import pykka

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
        self._deferred: list[PooledActor] | None = None  # see ``deferred``
        self._deferring = 0  # the thread that defers
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(workers)]
        for thread in self._threads:
            thread.start()
        _running.add(self)

    def schedule(self, actor: PooledActor) -> None:
        if self._deferred is not None and threading.get_ident() == self._deferring:
            self._deferred.append(actor)
        else:
            self._ready.put(actor)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """The actors the calling thread schedules meanwhile are put on the run queue at the end, in order
        (other threads' at once): starting thousands of actors then wakes a worker once, instead of waking it
        again and again to contend for the interpreter lock with the starting thread (measured, 10,000
        actors with a short first turn: 15 to 17 us of the process's CPU an actor against 23 to 27). One
        thread defers at a time: while it does, another one entered adds nothing (its thread schedules at
        once; the deferring thread's schedules wait for the first one's end)."""
        with self._lock:
            nested = self._deferred is not None
            if not nested:
                self._deferring, self._deferred = threading.get_ident(), []
        if nested:
            yield
            return
        try:
            yield
        finally:
            with self._lock:
                deferred, self._deferred = self._deferred, None
            for actor in deferred:
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
    if _default is not None:  # started: read without the lock (every pooled actor's start asks)
        return _default
    with _default_lock:
        if _default is None:
            _default = Dispatcher()
        return _default


class _SliceOver(Exception):
    """Raised by a mailbox's ``get`` when the actor's turn is over: it ends pykka's message loop."""


class _Mailbox:
    """A pooled actor's inbox: a deque whose first message schedules the actor on its dispatcher.

    The worker runs pykka's own loop (``Actor._actor_loop_running``) over it, which takes messages with
    ``get`` until the actor stops: ``get`` ends the loop by raising :class:`_SliceOver` once the turn's
    budget is spent or nothing waits. Once closed (the actor stopped), every message is answered by
    pykka's ``_actor_loop_teardown`` (``ActorDeadError`` to an asker), also one that races the close.
    """

    __slots__ = ("_actor", "_items", "_lock", "_drain", "_scheduled", "_closed", "budget")

    def __init__(self, actor: PooledActor) -> None:
        self._actor = actor
        self._items: deque[Any] = deque()
        self._lock = threading.Lock()
        self._drain = threading.Lock()  # one teardown at a time: empty() then get() must agree
        self._scheduled = True  # held until the actor's first turn is scheduled at start
        self._closed = False
        self.budget = sys.maxsize  # messages the current turn may still take (teardown takes them all)

    def put(self, envelope: Any, /) -> None:
        with self._lock:
            self._items.append(envelope)
            closed, idle = self._closed, not self._scheduled
            self._scheduled = True
        if closed:
            self.teardown()
        elif idle:
            self._actor.dispatcher.schedule(self._actor)

    def get(self) -> Any:
        if self.budget <= 0 or not self._items:
            raise _SliceOver
        self.budget -= 1
        return self._items.popleft()

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)

    def release(self) -> bool:
        """End the actor's turn: ``True`` if messages wait (the caller schedules it again)."""
        with self._lock:
            if self._items:
                return True
            self._scheduled = False
            return False

    def close(self) -> None:
        """Refuse further messages and answer those still queued."""
        with self._lock:
            self._closed = True
        self.teardown()

    def teardown(self) -> None:
        with self._drain:
            self.budget = sys.maxsize
            self._actor._actor_loop_teardown()


class PooledActor(pykka.Actor):
    """A pykka actor run by a :class:`Dispatcher` (see the module docstring).

    A subclass may set ``pool`` to a dispatcher of its own; the default is the process's shared one.
    Everything else is pykka's ``Actor``: only its extension points for new actor types are replaced.
    """

    pool: ClassVar[Dispatcher | None] = None
    dispatcher: Dispatcher
    actor_inbox: _Mailbox

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.dispatcher = self.pool or default_dispatcher()
        self._started = False
        super().__init__(*args, **kwargs)

    @classmethod
    def starts_deferred(cls) -> contextlib.AbstractContextManager[None]:
        """``Dispatcher.deferred`` of the dispatcher this class's actors run on: for starting many at once."""
        return (cls.pool or default_dispatcher()).deferred()

    def _create_actor_inbox(self) -> _Mailbox:  # pykka calls it on the instance
        return _Mailbox(self)

    @staticmethod
    def _create_future() -> pykka.Future[Any]:
        return pykka.ThreadingFuture()

    def _start_actor_loop(self) -> None:
        self.dispatcher.schedule(self)  # the first turn runs on_start, even with an empty inbox

    def _run_slice(self, budget: int) -> int:
        """Handle up to ``budget`` messages with pykka's loop; return how many. Runs on a worker."""
        if not self._started:
            self._started = True
            self._actor_loop_setup()
        inbox = self.actor_inbox
        inbox.budget = budget
        try:
            self._actor_loop_running()
        except _SliceOver:
            pass
        handled = budget - inbox.budget
        if self.actor_stopped.is_set():
            inbox.close()
        elif inbox.release():
            self.dispatcher.schedule(self)
        return handled

    def _handle_receive(self, message: Any) -> Any:
        try:
            return super()._handle_receive(message)
        except Exception:
            raise
        except BaseException as error:
            # pykka's loop answers a BaseException by stopping every actor and waiting for them all; a
            # worker would wait for the very actors only it runs. Here it fails this actor instead.
            raise RuntimeError(f"{type(error).__name__} raised in a pooled actor's handler") from error
