"""A core whose finished applications and samples go to a history store, with its REST API."""

from __future__ import annotations

import falcon.testing

from actors.history.store import HistoryStore
from actors.history.writer import HistoryWriter
from rest.app import SchedulerView, create_app
from rest.history import History
from tests.coreharness import Core


class HistoryCore:
    """A :class:`Core` writing to ``dsn`` through a writer; ``rest`` is its REST API (snapshots never stale)."""

    def __init__(self, dsn: str, fence=None, capacity: int = 100_000, **options) -> None:
        self.store = HistoryStore(dsn).migrate()
        self.writer = HistoryWriter(self.store, fence, capacity=capacity)
        self.core = Core(history_store=self.writer.publish, **options)
        self.writer.start(events=self.core.scheduler.events)
        view = SchedulerView(self.core.scheduler, max_age=0.0, history=History(self.store, self.writer.status))
        self.rest = falcon.testing.TestClient(create_app(view))

    def run_app(self, app_id: str, pods: int = 2, queue: str = "root.a", user: str = "alice") -> None:
        """An application whose ``pods`` asks are allocated, then released (it completes soon after)."""
        core = self.core
        core.app(app_id, queue=queue, user=user)
        keys = core.asks(app_id, pods)
        core.settle()
        for key in keys:
            core.release(app_id, key)
        core.settle()

    def close(self) -> None:
        self.core.scheduler.stop()
        self.writer.stop()
        self.store.close()


def rest_for(dsn: str, core: Core) -> falcon.testing.TestClient:
    """A REST API reading ``dsn`` (as a standby or a restarted scheduler does), over ``core``."""
    view = SchedulerView(core.scheduler, max_age=0.0, history=History(HistoryStore(dsn).migrate()))
    return falcon.testing.TestClient(create_app(view))
