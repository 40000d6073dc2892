"""A core whose finished applications and samples go to a history store, with its REST API."""

from __future__ import annotations

import falcon.testing

from actors.history.store import HistoryStore
from actors.history.writer import HistoryWriter
from rest.app import SchedulerView, create_app
from rest.history import History
from si.clock import REAL_CLOCK
from tests.coreharness import Core


class HistoryCore:
    """A :class:`Core` writing to ``dsn`` through a writer; ``rest`` is its REST API (snapshots never stale)."""

    def __init__(self, dsn: str, capacity: int = 100_000, **options) -> None:
        self.store = HistoryStore(dsn).migrate()
        self.writer = HistoryWriter(self.store, capacity=capacity)
        # Real time: the writer's batches and retries run on it, and applications complete on the core's timer.
        self.core = Core(history_store=self.writer.publish, **{"clock": REAL_CLOCK, **options})
        self.writer.start(events=self.core.scheduler.events)
        view = SchedulerView(self.core.scheduler, history=History(self.store, self.writer.status))
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
    view = SchedulerView(core.scheduler, history=History(HistoryStore(dsn).migrate()))
    return falcon.testing.TestClient(create_app(view))
