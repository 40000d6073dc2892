"""Timers for actors: ``Ticker`` tells one message to an actor at a fixed interval until stopped, and
``Alarms`` tells messages once each, after a delay (pykka has no timers, and an actor must not sleep
in its own thread)."""

from __future__ import annotations

import heapq
import itertools
import threading
import time

import pykka

from actors.base import tell_if_alive


class Ticker:
    """``Ticker(ref, message, interval).start()``; ``stop()`` ends it (also ends when the actor dies)."""

    def __init__(self, ref: pykka.ActorRef, message: object, interval: float, name: str = "ticker") -> None:
        self._ref = ref
        self._message = message
        self._interval = interval
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Ticker:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while not self._stopping.wait(self._interval):
            if not tell_if_alive(self._ref, self._message):
                return


class Alarms:
    """One thread that tells actors a message once, after a delay (``after``); cheap for thousands of
    pending alarms, unlike a timer thread each. ``stop()`` drops the alarms not yet due."""

    def __init__(self, name: str = "alarms") -> None:
        self._due: list[tuple[float, int, pykka.ActorRef, object]] = []
        self._sequence = itertools.count()
        self._changed = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def after(self, delay: float, ref: pykka.ActorRef, message: object) -> None:
        with self._changed:
            heapq.heappush(self._due, (time.monotonic() + delay, next(self._sequence), ref, message))
            self._changed.notify()

    def stop(self) -> None:
        with self._changed:
            self._stopping = True
            self._due.clear()
            self._changed.notify()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._stopping and (not self._due or self._due[0][0] > time.monotonic()):
                    self._changed.wait(self._due[0][0] - time.monotonic() if self._due else None)
                if self._stopping:
                    return
                _, _, ref, message = heapq.heappop(self._due)
            tell_if_alive(ref, message)
