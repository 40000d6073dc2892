"""Timers for actors, on the shim's clock: ``Ticker`` tells one message to an actor at a fixed interval
until stopped, and ``Alarms`` tells messages once each, after a delay (pykka has no timers, and an
actor must not sleep in its own thread)."""

from __future__ import annotations

import pykka

from actors.base import tell_if_alive
from si.clock import REAL_CLOCK, Clock, Timer


class Ticker:
    """``Ticker(ref, message, interval).start()``; ``stop()`` ends it (also ends when the actor dies)."""

    def __init__(self, ref: pykka.ActorRef, message: object, interval: float, name: str = "ticker",
                 clock: Clock = REAL_CLOCK) -> None:
        self._ref = ref
        self._message = message
        self._interval = interval
        self._name = name
        self._clock = clock
        self._timer: Timer | None = None

    def start(self) -> Ticker:
        self._timer = self._clock.every(lambda: self._interval, lambda: tell_if_alive(self._ref, self._message),
                                        self._name)
        return self

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()


class Alarms:
    """Tells actors a message once, after a delay (``after``); ``stop()`` drops the alarms not yet due."""

    def __init__(self, name: str = "alarms", clock: Clock = REAL_CLOCK) -> None:
        self._name = name
        self._clock = clock
        self._stopped = False

    def after(self, delay: float, ref: pykka.ActorRef, message: object) -> None:
        self._clock.after(delay, lambda: self._stopped or tell_if_alive(ref, message), self._name)

    def stop(self) -> None:
        self._stopped = True
