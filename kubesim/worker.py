"""A controller's loop: items due at a monotonic time, handled one at a time on the controller's thread.

Store listeners run under the store lock, so they only note what to do (``schedule``); the work, which
takes the lock itself, runs here. A failing item is logged and never stops the loop.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Hashable

log = logging.getLogger(__name__)


class Worker:
    def __init__(self, name: str) -> None:
        self._due: list[tuple[float, int, Hashable]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def schedule(self, item: Hashable, after: float = 0.0) -> None:
        with self._wake:
            heapq.heappush(self._due, (time.monotonic() + after, next(self._order), item))
            self._wake.notify()

    def handle(self, item) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._stopped and (not self._due or self._due[0][0] > time.monotonic()):
                    self._wake.wait(timeout=None if not self._due else self._due[0][0] - time.monotonic())
                if self._stopped:
                    return
                _, _, item = heapq.heappop(self._due)
            try:
                self.handle(item)
            except Exception:  # one object's failure never stops the others'
                log.exception("%s failed on %r", self._thread.name, item)
