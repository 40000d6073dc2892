"""A timer for actors: tells one message to an actor at a fixed interval until stopped (pykka has no
timers, and an actor must not sleep in its own thread)."""

from __future__ import annotations

import threading

import pykka


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
            try:
                self._ref.tell(self._message)
            except pykka.ActorDeadError:
                return
