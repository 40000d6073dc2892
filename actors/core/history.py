"""The web UI's front-page history: running applications and containers, sampled on a timer.

Upstream keeps 1,440 samples taken once a minute (a day), for ``/ws/v1/history/apps`` and
``/ws/v1/history/containers``; the oldest sample goes when the ring is full. The sampler writes from
the core's housekeeping thread and REST threads read, so the ring guards itself with a lock.
"""

from __future__ import annotations

import threading
from collections import deque

from actors.base import record

SAMPLE_PERIOD = 60.0  # seconds, as upstream's internal metrics collector
RING_SIZE = 1440  # samples, as upstream's default metricsHistorySize


@record
class HistorySample:
    timestamp: int  # nanoseconds since the epoch
    total_applications: int
    total_containers: int


class MetricsHistory:
    def __init__(self, limit: int = RING_SIZE) -> None:
        if limit <= 0:
            raise ValueError(f"history size must be positive, got {limit}")
        self.limit = limit
        self._samples: deque[HistorySample] = deque(maxlen=limit)
        self._lock = threading.Lock()

    def store(self, total_applications: int, total_containers: int, timestamp: int) -> None:
        sample = HistorySample(timestamp, total_applications, total_containers)
        with self._lock:
            self._samples.append(sample)

    def records(self) -> tuple[HistorySample, ...]:
        """The samples, oldest first."""
        with self._lock:
            return tuple(self._samples)
