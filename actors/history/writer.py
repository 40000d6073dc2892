"""The history writer: the one thread that writes the store, off the scheduling path.

The core and the sampler hand it records through :meth:`HistoryWriter.publish` (the core's
``HistorySink``), which never blocks: records wait in a bounded buffer and, when it is full (the
database slow or down), the newest are dropped, counted and logged. The writer takes batches from the
buffer, plus the events of the core's event stream, and writes each batch in one transaction. A failed
write is retried with a growing pause, the store reports itself degraded meanwhile, and scheduling
never waits for it.

With leader election only the leader writes: every batch passes the write fence first (its
``admit(method, path)``, as every cluster write does); a batch the fence refuses is dropped, as the
leader writes its own. Once an hour the store drops what is older than its retention (each kind its own)
and refreshes the planner's statistics.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from typing import Protocol

from actors.base import ActorFailed, Supervisor
from actors.history.store import HistoryStore, Retention
from si import si_pb2
from si.history import HistoryRecord

log = logging.getLogger(__name__)
PRUNE_PERIOD = 3600.0
DROP_LOG_PERIOD = 10.0
EVENT_STREAM_SIZE = 50_000


class WriteFence(Protocol):
    """The shim's write fence as the writer uses it: ``admit`` raises when this process may not write."""

    def admit(self, method: str, path: str) -> AbstractContextManager[None]: ...


class EventSource(Protocol):
    """The core's event ring, as a reader of its stream."""

    def subscribe(self, host: str = "", limit: int | None = None, size: int = 10_000): ...

    def unsubscribe(self, stream) -> None: ...


@dataclass(frozen=True)
class WriterStatus:
    degraded: bool  # the last write failed; records wait (and drop when the buffer is full)
    buffered: int
    dropped: int  # records lost to a full buffer since the start
    written: int  # records and events written since the start
    fenced: int  # records not written because this process does not lead
    last_error: str


class HistoryWriter:
    def __init__(self, store: HistoryStore, fence: WriteFence | None = None, capacity: int = 100_000,
                 batch_size: int = 2000, retention: Retention | None = None,
                 supervisor: Supervisor | None = None, clock: Callable[[], int] = time.time_ns) -> None:
        self.store = store
        self.fence = fence
        self.capacity = capacity
        self.batch_size = batch_size
        self.retention = retention or Retention()
        self._supervisor = supervisor
        self._clock = clock
        self._buffer: deque[HistoryRecord] = deque()
        self._changed = threading.Condition()
        self._busy = False  # a batch is taken and not yet written
        self._stopping = False
        self._events = None  # the event stream, while subscribed
        self._source: EventSource | None = None
        self.dropped = self.written = self.fenced = 0
        self.degraded = False
        self.last_error = ""
        self._drop_logged_at = float("-inf")
        self._thread = threading.Thread(target=self._run, name="history-writer", daemon=True)

    def start(self, events: EventSource | None = None) -> HistoryWriter:
        if events is not None:
            self._source = events
            self._events = events.subscribe("history-store", None, EVENT_STREAM_SIZE)
            if self._events is None:
                log.warning("history store: no room to read the event stream; events are not kept")
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Write what is buffered (up to ``timeout`` seconds), then stop."""
        self.flush(timeout)
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        self._thread.join(timeout)
        if self._source is not None and self._events is not None:
            self._source.unsubscribe(self._events)

    # The sink.
    def publish(self, records: Sequence[HistoryRecord]) -> None:
        with self._changed:
            room = self.capacity - len(self._buffer)
            self._buffer.extend(records[:room] if room < len(records) else records)
            lost = len(records) - max(room, 0)
            if lost > 0:
                self.dropped += lost
            self._changed.notify_all()
        if lost > 0:
            self._log_drops()

    def status(self) -> WriterStatus:
        with self._changed:
            return WriterStatus(self.degraded, len(self._buffer), self.dropped, self.written, self.fenced,
                                self.last_error)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything published so far is written (or dropped); False on timeout."""
        with self._changed:
            self._changed.notify_all()
            return self._changed.wait_for(lambda: not self._buffer and not self._busy, timeout)

    # The thread.
    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as error:  # the writer must never die silently
            failure = ActorFailed("history-writer", repr(error))
            if self._supervisor is not None:
                self._supervisor(failure)
            else:
                log.error("history writer stopped by a failure: %r", error)
            raise

    def _loop(self) -> None:
        next_prune = time.monotonic()
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._buffer or self._stopping, timeout=0.5)
                if self._stopping and not self._buffer:
                    return
                batch = [self._buffer.popleft() for _ in range(min(self.batch_size, len(self._buffer)))]
                self._busy = True
            try:
                events = self._take_events()
                if batch or events:
                    self._write(batch, events)
            finally:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()
            if time.monotonic() >= next_prune:
                next_prune = time.monotonic() + PRUNE_PERIOD
                self._prune()

    def _take_events(self) -> list[si_pb2.EventRecord]:
        stream = self._events
        taken: list[si_pb2.EventRecord] = []
        while stream is not None and len(taken) < self.batch_size:
            try:
                taken.append(stream.get_nowait()[1])
            except queue.Empty:
                break
        return taken

    def _write(self, batch: list[HistoryRecord], events: list[si_pb2.EventRecord]) -> None:
        pause = 0.5
        while True:
            with ExitStack() as admitted:
                if self.fence is not None:
                    try:
                        admitted.enter_context(self.fence.admit("INSERT", "history store"))
                    except Exception:  # not the leader: the leader writes its own history
                        with self._changed:
                            self.fenced += len(batch)
                        return
                try:
                    self.store.write(batch, events)
                except Exception as error:
                    self._failed(error)
                else:
                    self._recovered(len(batch) + len(events))
                    return
            with self._changed:
                if self._changed.wait_for(lambda: self._stopping, timeout=pause):
                    return  # stopping while the database is down: what is not written is lost
            pause = min(pause * 2, 30.0)

    def _failed(self, error: Exception) -> None:
        message = f"{type(error).__name__}: {error}".splitlines()[0][:500]
        with self._changed:
            first = not self.degraded
            self.degraded, self.last_error = True, message
        if first:
            log.warning("history store degraded: writes fail (%s); scheduling goes on, records wait in a "
                        "buffer of %d", message, self.capacity)

    def _recovered(self, count: int) -> None:
        with self._changed:
            was = self.degraded
            self.degraded, self.written = False, self.written + count
        if was:
            log.info("history store writes again")

    def _prune(self) -> None:
        with ExitStack() as admitted:
            if self.fence is not None:
                try:
                    admitted.enter_context(self.fence.admit("DELETE", "history store"))
                except Exception:  # the leader prunes
                    return
            try:
                deleted = self.store.prune(self.retention, self._clock())
                self.store.maintain()
            except Exception as error:
                self._failed(error)
                return
        if deleted:
            log.info("history store: %d rows past their retention deleted", deleted)

    def _log_drops(self) -> None:
        now = time.monotonic()
        if now - self._drop_logged_at < DROP_LOG_PERIOD:
            return
        self._drop_logged_at = now
        with self._changed:
            dropped = self.dropped
        log.warning("history store: buffer full (%d records): %d records dropped so far", self.capacity, dropped)
