"""How much of the core's time its readers may take.

A snapshot is taken on the partitions' threads, between scheduling batches: while the core allocates,
every read of ``/nodes`` renders the nodes that changed since the last one, and four dashboards
polling it every second took a tenth of the scheduler's CPU in snapshots (``benchmarks/rest_latency.py``
at 5,000 nodes). Readers therefore draw on a budget
of the core's CPU time: it grows by ``share`` of every second that passes, up to what ``saved``
seconds give, and a snapshot takes from it what its partitions' threads spent taking it. While the
budget is spent, the next snapshot waits, and every reader arriving meanwhile shares it
(:meth:`actors.core.scheduler.Scheduler.snapshot`): a read under load answers later, never older. A
reader waits at most ``longest_wait`` seconds: what one snapshot overspends beyond that is not owed.

Only a read of a changed core draws on it: while nothing changed, readers share the last snapshot at
once. Time here is the machine's, whatever clock the core is given: it is the CPU it spends.
"""

from __future__ import annotations

import argparse
import time

DEFAULT_SHARE = 0.05  # of the core's time: the dashboards' load keeps 95% of the allocation rate


def checked_share(share: float) -> float:
    """``share``, if it can be the readers' share of the core's time: above 0 and at most 1."""
    if not 0 < share <= 1:
        raise ValueError(f"the readers' share of the core's time must be above 0 and at most 1, got {share}")
    return share


def share_argument(text: str) -> float:
    """A share from a command line (argparse's ``type``), anything else refused with its reason."""
    try:
        share = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r} (e.g. 0.05)") from None
    try:
        return checked_share(share)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


class ReadBudget:
    """The CPU seconds readers may spend now (negative: what they owe); used under its owner's lock."""

    def __init__(self, share: float = DEFAULT_SHARE, saved: float = 0.5, longest_wait: float = 2.0,
                 now: float | None = None) -> None:
        self.share, self.saved, self.longest_wait = checked_share(share), saved, longest_wait
        self._balance = share * saved
        self._at = time.monotonic() if now is None else now

    def _balance_at(self, now: float) -> float:
        return min(self._balance + (now - self._at) * self.share, self.share * self.saved)

    def wait(self, now: float | None = None) -> float:
        """Seconds until the next snapshot may be taken (0: now)."""
        if self.share >= 1:
            return 0.0
        balance = self._balance_at(time.monotonic() if now is None else now)
        return -balance / self.share if balance < 0 else 0.0

    def spend(self, seconds: float, now: float | None = None) -> None:
        """A snapshot took ``seconds`` of the core's CPU."""
        now = time.monotonic() if now is None else now
        self._balance = max(self._balance_at(now) - seconds, -self.share * self.longest_wait)
        self._at = now
