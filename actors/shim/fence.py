"""The write fence: the one gate every cluster write of the scheduler passes through.

``KubeClient.request`` admits every mutating request (POST, PUT, PATCH, DELETE: binds, evictions, pod
creations and deletions, patches, events), retries included, through its client's fence, so a writer
added later is fenced without knowing it. Reads (lists, watches, gets) are never fenced.

``OPEN`` admits everything: a scheduler without leader election. A ``LeaderFence`` admits writes only
while its holder leads: the leader elector opens it until ``renew deadline`` seconds after the start of
the last successful acquire or renewal of the Lease, and closes it when leadership ends. The deadline
is checked at every write, on the writer's own thread, so a leader whose elector is stuck or whose
renewals fail stops writing on time even before it notices; a standby (the fence never opened)
writes nothing. The elector also closes the fence the moment it sees the Lease name another holder or
vanish. Because the renew deadline is shorter than the lease duration, and a candidate that saw the
Lease held waits a full lease duration before taking it, even when the Lease vanished, the fence closes
before any other candidate may take the Lease over: a deposed leader never writes after the new one
starts (only writes it had already sent can still arrive).

``close`` also waits for the writes already admitted (those on the wire) to end, so a leader that
hands over on SIGTERM releases the Lease only once its last write has been answered.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Fenced(Exception):
    """A write refused because this scheduler does not lead (or no longer may write)."""


class Fence:
    """Admits every write (no leader election)."""

    @contextmanager
    def admit(self, method: str, path: str) -> Iterator[None]:
        yield


OPEN = Fence()


class LeaderFence(Fence):
    """Admits writes until a deadline on the monotonic clock (see the module docstring)."""

    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._until = float("-inf")
        self._in_flight = 0
        self._changed = threading.Condition()

    def open_until(self, deadline: float) -> None:
        """Admit writes until ``deadline`` (the clock's time), never shortening an open fence."""
        with self._changed:
            self._until = max(self._until, deadline)

    def is_open(self) -> bool:
        with self._changed:
            return self._clock() < self._until

    def close(self, wait: float = 0.0) -> bool:
        """Admit nothing more; wait up to ``wait`` seconds for the writes under way to end. ``True``
        when none is left."""
        with self._changed:
            self._until = float("-inf")
            return self._changed.wait_for(lambda: self._in_flight == 0, timeout=wait)

    @contextmanager
    def admit(self, method: str, path: str) -> Iterator[None]:
        with self._changed:
            if self._clock() >= self._until:
                raise Fenced(f"{method} {path} refused: this scheduler is not the leader")
            self._in_flight += 1
        try:
            yield
        finally:
            with self._changed:
                self._in_flight -= 1
                self._changed.notify_all()
