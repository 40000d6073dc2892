"""The writer off the scheduling path: a database that goes away costs no scheduling, the buffer stays
bounded (drops counted), health and metrics say the store is degraded, and writes resume when the
database returns. Under leader election only the fence's holder writes (two scheduler processes failing
over: test_failover)."""

import time

from actors.history.store import ApplicationQuery, HistoryStore
from actors.history.writer import HistoryWriter
from actors.shim.fence import LeaderFence
from tests.history.harness import HistoryCore
from tests.history.records import finished as finished_at
from tests.waiting import wait_for


def finished(app_id: str):
    """An application finished a minute ago (well within the retention the writer prunes by)."""
    return finished_at(app_id, submitted=time.time_ns() - 120 * 10**9)


def gone_from_core(core, app_id: str) -> bool:
    """Whether ``app_id`` has completed and left the core (its record handed to the history store)."""
    snapshot = core.scheduler.snapshot()
    return all(app.application_id != app_id for partition in snapshot.partitions for app in partition.applications)


HEALTH = "/ws/v1/scheduler/healthcheck"


def history_check(rest) -> dict:
    [check] = [c for c in rest.simulate_get(HEALTH).json["HealthChecks"] if c["Name"] == "History store"]
    return check


def test_the_store_going_away_mid_run_loses_no_scheduling(postgres):
    dsn = postgres.new_database()
    history = HistoryCore(dsn, capacity=3)
    core = history.core
    try:
        core.nodes(2)
        history.run_app("before")
        wait_for(lambda: history.store.count() == 1, timeout=10, message="the first application stored")
        assert history_check(history.rest)["Succeeded"] is True
        postgres.stop()
        try:
            history.run_app("during-0")
            # Once the first application's record has left the buffer, the writer holds it in a batch it
            # cannot write until a write succeeds, so everything that finishes from here on waits in the
            # buffer: five applications cannot all fit in three places. (A writer not holding a batch, even
            # one degraded by a failed pruning, takes whatever is buffered, however many, in its next batch.)
            wait_for(lambda: gone_from_core(core, "during-0") and history.writer.status().buffered == 0, timeout=10,
                     message="the first application's record taken by the writer")
            wait_for(lambda: history.writer.status().degraded, timeout=10, message="the store degraded")
            for i in range(1, 6):
                history.run_app(f"during-{i}")
            # Every ask was allocated while the database was down.
            allocated = {a.allocationKey for a in core.callback.new()}
            assert {f"during-{i}-{k}" for i in range(6) for k in range(2)} <= allocated
            wait_for(lambda: history.writer.status().dropped > 0, timeout=10, message="records dropped")
            status = history.writer.status()
            assert status.buffered <= 3
            check = history_check(history.rest)
            assert check["Succeeded"] is False and "writes fail" in check["DiagnosisMessage"]
            metrics = history.rest.simulate_get("/ws/v1/metrics").text
            assert "yunikorn_history_degraded 1" in metrics
            assert f"yunikorn_history_dropped_records_total {float(status.dropped)}" in metrics
        finally:
            postgres.start()
        # The buffered records are written first: until then it is full, and a new record would be dropped.
        wait_for(lambda: not history.writer.status().degraded, timeout=30, message="the store writing again")
        history.run_app("after")
        wait_for(lambda: history.store.application("default", "after") is not None, timeout=30,
                 message="the application finished after the database returned")
        assert history_check(history.rest)["Succeeded"] is True
        assert history.store.application("default", "before") is not None
    finally:
        history.close()


def test_a_full_buffer_drops_the_newest_records_and_counts_them(sqlite_dsn):
    store = HistoryStore(sqlite_dsn).migrate()
    writer = HistoryWriter(store, capacity=2)  # not started: nothing leaves the buffer
    writer.publish([finished("a"), finished("b"), finished("c")])
    writer.publish([finished("d")])
    status = writer.status()
    assert (status.buffered, status.dropped) == (2, 2)
    writer.start()
    assert writer.flush(10)
    assert sorted(a.application_id for a in store.applications(ApplicationQuery("default", ("Completed",)))) \
        == ["a", "b"]
    writer.stop()
    store.close()


def test_only_the_fence_holder_writes(sqlite_dsn):
    store = HistoryStore(sqlite_dsn).migrate()
    fence = LeaderFence()
    writer = HistoryWriter(store, fence).start()
    try:
        writer.publish([finished("as-standby")])
        assert writer.flush(10)
        assert store.count() == 0 and writer.status().fenced == 1
        fence.open_until(float("inf"))
        writer.publish([finished("as-leader")])
        assert writer.flush(10)
        assert store.application("default", "as-leader") is not None and store.count() == 1
    finally:
        writer.stop()
        store.close()
