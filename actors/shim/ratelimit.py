"""A token bucket for the shim's Kubernetes API calls (``kubernetes.qps`` / ``kubernetes.burst``), as
client-go's default client-side rate limiter: up to ``burst`` requests at once, then ``qps`` per second.

A caller takes a token or, when none is left, reserves the next one and waits for it outside the lock,
so concurrent callers (the binder's workers) are paced in arrival order without holding each other up.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

UNLIMITED = math.inf  # a qps that never waits: the clients of tools that stand in for other users' load


class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self.qps, self.burst = qps, burst
        self._tokens = float(burst)
        self._refilled = clock()

    def set_rate(self, qps: float, burst: int) -> None:
        """Change the rate; tokens saved beyond the new burst are dropped."""
        with self._lock:
            self._refill()
            self.qps, self.burst = qps, burst
            self._tokens = min(self._tokens, burst)

    def wait(self, requests: int = 1) -> None:
        """Return once the caller may send its ``requests`` (sent together: one wait for all of them)."""
        if self.qps == UNLIMITED:
            return
        with self._lock:
            self._refill()
            self._tokens -= requests
            delay = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if delay > 0:
            self._sleep(delay)

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._refilled) * self.qps)
        self._refilled = now
