"""Time as the core and the shim read it: one injected ``Clock`` instead of the wall clock.

``RealClock`` (the default) is the machine's clock and runs timers on threads. ``VirtualClock`` moves
only when told (``advance``) and runs the timers that fall due on the way, in order, in the thread that
advances it: tests assert exact times without waiting, and a simulation runs faster than real time.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

NS = 1_000_000_000
log = logging.getLogger(__name__)


class Timer(Protocol):
    def stop(self) -> None:
        """Cancel the runs not yet started (one starting at that very moment may still run)."""


class Clock(Protocol):
    def now_ns(self) -> int:
        """Wall time, ns since the epoch: the timestamps reported and every deadline of the core."""

    def monotonic_ns(self) -> int:
        """ns from an arbitrary start, never going back: periods and deadlines that a change of the
        wall time must not move."""

    def every(self, interval: Callable[[], float], action: Callable[[], object], name: str) -> Timer:
        """Run ``action`` each ``interval()`` seconds (read again after each run) until stopped or it
        returns False."""

    def after(self, delay: float, action: Callable[[], object], name: str) -> Timer:
        """Run ``action`` once, ``delay`` seconds from now, unless stopped first (actions that fall due
        together may run in one thread, one after the other: they must be quick)."""


class _ThreadTimer:
    def __init__(self, name: str, run: Callable[[threading.Event], None]) -> None:
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=run, args=(self._stopping,), name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not threading.current_thread():
            self._thread.join()


class _Alarm:
    __slots__ = ("action", "name", "stopped")

    def __init__(self, action: Callable[[], object], name: str) -> None:
        self.action = action
        self.name = name
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


# Seconds the alarms' thread waits for a new alarm before it ends: an actor that sets one alarm after
# another (the outlet's linger, every few milliseconds while the shim recovers) starts no thread each.
ALARMS_IDLE = 1.0


class _AlarmThread:
    """One thread runs every one-shot timer of a clock, in due order: thousands of pending alarms (a node
    not ready, a claim to check again) cost no thread each. It ends once none has been pending for
    ``ALARMS_IDLE`` seconds."""

    def __init__(self) -> None:
        self._due: list[tuple[int, int, _Alarm]] = []
        self._sequence = itertools.count()
        self._changed = threading.Condition()
        self._running = False

    def add(self, due: int, alarm: _Alarm) -> None:
        with self._changed:
            heapq.heappush(self._due, (due, next(self._sequence), alarm))
            self._changed.notify()
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, name="clock-alarms", daemon=True).start()

    def _run(self) -> None:
        while True:
            with self._changed:
                while True:
                    while self._due and self._due[0][2].stopped:
                        heapq.heappop(self._due)
                    if not self._due:
                        if self._changed.wait(ALARMS_IDLE) or self._due:
                            continue
                        self._running = False
                        return
                    wait = self._due[0][0] - time.monotonic_ns()
                    if wait <= 0:
                        break
                    self._changed.wait(wait / NS)
                alarm = heapq.heappop(self._due)[2]
            _run_guarded(alarm.action, alarm.name)


def _run_guarded(action: Callable[[], object], name: str) -> object:
    """``action()``; one that raises is logged and counts as done, so the thread that ran it goes on
    with the timers after it (one broken action must not silence every alarm of the clock)."""
    try:
        return action()
    except Exception:
        log.exception("timer %s failed; the clock's other timers go on", name)
        return None


class RealClock:
    """The machine's clock: each periodic timer is a thread, one thread runs the one-shot timers."""

    now_ns = staticmethod(time.time_ns)
    monotonic_ns = staticmethod(time.monotonic_ns)

    def __init__(self) -> None:
        self._alarms = _AlarmThread()

    def every(self, interval: Callable[[], float], action: Callable[[], object], name: str = "timer") -> Timer:
        def run(stopping: threading.Event) -> None:
            while not stopping.wait(interval()):
                if _run_guarded(action, name) is False:
                    return
        return _ThreadTimer(name, run)

    def after(self, delay: float, action: Callable[[], object], name: str = "timer") -> Timer:
        alarm = _Alarm(action, name)
        self._alarms.add(time.monotonic_ns() + ns(delay), alarm)
        return alarm


REAL_CLOCK = RealClock()
VIRTUAL_EPOCH_NS = 1_767_225_600 * NS  # 2026-01-01T00:00:00Z: a plausible wall time, never zero


class _VirtualTimer:
    __slots__ = ("action", "interval", "stopped")

    def __init__(self, action: Callable[[], object], interval: Callable[[], float] | None) -> None:
        self.action = action
        self.interval = interval
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


class VirtualClock:
    """A clock that stands still until ``advance`` moves it. Reads are safe from any thread."""

    def __init__(self, start_ns: int = VIRTUAL_EPOCH_NS) -> None:
        self._now = start_ns
        self._start = start_ns
        self._due: list[tuple[int, int, _VirtualTimer]] = []
        self._sequence = itertools.count()
        self._lock = threading.Lock()

    def now_ns(self) -> int:
        return self._now

    def monotonic_ns(self) -> int:
        return self._now - self._start

    def every(self, interval: Callable[[], float], action: Callable[[], object], name: str = "timer") -> Timer:
        timer = _VirtualTimer(action, interval)
        self._push(self._now + ns(interval()), timer)
        return timer

    def after(self, delay: float, action: Callable[[], object], name: str = "timer") -> Timer:
        timer = _VirtualTimer(action, None)
        self._push(self._now + ns(delay), timer)
        return timer

    def _push(self, due: int, timer: _VirtualTimer) -> None:
        with self._lock:
            heapq.heappush(self._due, (due, next(self._sequence), timer))

    def advance(self, seconds: float, between: Callable[[], object] | None = None) -> None:
        """Move the clock ``seconds`` on, stopping at each timer due on the way: the time is set to its
        due time, it runs, then ``between()`` (e.g. to let actors settle before time moves again)."""
        if seconds < 0:
            raise ValueError(f"a clock never goes back ({seconds}s)")
        target = self._now + ns(seconds)
        while True:
            with self._lock:
                if not self._due or self._due[0][0] > target:
                    break
                due, _, timer = heapq.heappop(self._due)
                if timer.stopped:
                    continue
                self._now = max(self._now, due)
            if timer.action() is False:
                timer.stop()
            if timer.interval is not None and not timer.stopped:
                self._push(due + max(ns(timer.interval()), 1), timer)
            if between is not None:
                between()
        with self._lock:
            self._now = max(self._now, target)


def ns(seconds: float) -> int:
    """``seconds`` in whole ns (a clock's unit)."""
    return round(seconds * NS)
