"""What a partition remembers of an application for the history store: the allocations it released
(in brief, a bounded number), its resource-seconds and its first allocation; and the record the store
gets once the application is terminal. Only kept while a store listens."""

from __future__ import annotations

from actors.core.allocation import Allocation
from actors.core.application import Application
from si.history import AllocationBrief, FinishedApplication, PlaceholderBrief

# Allocations told in full per application (kept in memory while it runs); the rest are counted.
BRIEFS_PER_APPLICATION = 32


class _Account:
    __slots__ = ("briefs", "untold", "seconds", "first")

    def __init__(self) -> None:
        self.briefs: list[AllocationBrief] = []
        self.untold = 0
        self.seconds: dict[str, float] = {}
        self.first = 0


class Accounts:
    def __init__(self) -> None:
        self._accounts: dict[str, _Account] = {}

    def released(self, allocation: Allocation, now: int) -> None:
        account = self._accounts.get(allocation.application_id)
        if account is None:
            account = self._accounts[allocation.application_id] = _Account()
        _count(account, allocation, now)

    def finished(self, app: Application, now: int) -> FinishedApplication:
        """The record of ``app``, now terminal; its account is closed."""
        account = self._accounts.pop(app.application_id, None) or _Account()
        for allocation in app.allocations.values():  # still held (an application failed with them)
            _count(account, allocation, 0, now)
        return FinishedApplication(
            app.application_id, app.partition, app.queue_path, app.user, tuple(app.groups), app.state,
            app.submission_time, app.finished_time or now, app.rejected_message, tuple(app.state_log),
            dict(app.tags), app.used.as_dict(), app.max_used.as_dict(), account.seconds, account.first,
            tuple(account.briefs), account.untold,
            tuple(PlaceholderBrief(d.task_group, d.count, d.min_resource.as_dict(), d.replaced, d.timed_out)
                  for d in app.placeholders.values()))


def _count(account: _Account, allocation: Allocation, released_at: int, until: int | None = None) -> None:
    allocated_at = allocation.allocation_time
    if not allocated_at:
        return
    end = released_at or until or allocated_at
    seconds = max(end - allocated_at, 0) / 1e9
    for name, value in allocation.resource.items():
        account.seconds[name] = account.seconds.get(name, 0.0) + value * seconds
    if not account.first or allocated_at < account.first:
        account.first = allocated_at
    if len(account.briefs) < BRIEFS_PER_APPLICATION:
        account.briefs.append(AllocationBrief(allocation.key, allocation.node_id, allocation.resource.as_dict(),
                                              allocated_at, released_at, allocation.placeholder,
                                              allocation.task_group))
    else:
        account.untold += 1
