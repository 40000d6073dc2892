"""Finished applications through the real core: they leave its memory for the store with their usage,
and the REST API serves them (paged, filtered, after a restart, and with the usage report)."""

import csv
import io

import pytest

from actors.core.partition import Timing
from actors.core.scheduler import Tuning
from actors.history.store import ApplicationQuery, HistoryStore
from si.clock import REAL_CLOCK
from tests.coreharness import Core
from tests.history.harness import HistoryCore, rest_for
from tests.waiting import wait_for

COMPLETED = "/ws/v1/partition/default/applications/completed"


@pytest.fixture
def history(dsn):
    made = HistoryCore(dsn)
    made.core.nodes(2)
    yield made
    made.close()


def completed(rest, query: str = "") -> list[dict]:
    result = rest.simulate_get(COMPLETED, query_string=query)
    assert result.status_code == 200, result.text
    return result.json


def test_a_finished_application_leaves_memory_for_the_store_with_its_usage(history):
    history.run_app("app-1", pods=2)
    wait_for(lambda: history.store.count() == 1, timeout=10, message="the finished application in the store")
    partition = history.core.snapshot().partition("default")
    assert partition.terminated_applications == ()
    # The partition still counts it, as upstream counts the finished applications it keeps.
    assert partition.applications_by_state["Completed"] == 1 and partition.total_applications == 1
    [app] = history.store.applications(ApplicationQuery("default", ("Completed",)))
    assert (app.application_id, app.queue, app.user, app.state) == ("app-1", "root.a", "alice", "Completed")
    assert [state for _, state in app.state_log][-1] == "Completed"
    assert len(app.allocations) == 2 and all(a.released_at >= a.allocated_at > 0 for a in app.allocations)
    assert app.first_allocation_time >= app.submission_time
    assert app.resource_seconds["vcore"] > 0 and app.max_used == {"vcore": 2000, "memory": 2 * 2**30}
    # REST reads it from the store, as a list and by id.
    [listed] = completed(history.rest)
    assert (listed["applicationID"], listed["applicationState"], listed["queueName"]) == ("app-1", "Completed", "root.a")
    assert len(listed["allocations"]) == 2
    one = history.rest.simulate_get("/ws/v1/partition/default/application/app-1")
    assert one.status_code == 200 and one.json["applicationState"] == "Completed"


def test_completed_applications_are_paged_and_filtered(history):
    for i in range(6):
        history.run_app(f"app-{i}", pods=1, queue="root.a" if i % 2 else "root.b", user="bob" if i < 3 else "alice")
    wait_for(lambda: history.store.count() == 6, timeout=15, message="six finished applications in the store")
    newest_first = [a["applicationID"] for a in completed(history.rest)]
    assert sorted(newest_first) == [f"app-{i}" for i in range(6)]
    assert [a["applicationID"] for a in completed(history.rest, "limit=2&offset=1")] == newest_first[1:3]
    assert {a["applicationID"] for a in completed(history.rest, "queue=root.a")} == {"app-1", "app-3", "app-5"}
    assert {a["applicationID"] for a in completed(history.rest, "user=bob&queue=root.b")} == {"app-0", "app-2"}
    assert completed(history.rest, "state=failed") == []
    assert completed(history.rest, "since=2000-01-01T00:00:00Z&until=2001-01-01T00:00:00Z") == []
    assert len(completed(history.rest, "since=946684800")) == 6
    for bad in ("limit=-1", "limit=x", "state=running", "since=yesterday", "since=2026-01-01T00:00:00",
                "offset=1e3"):
        result = history.rest.simulate_get(COMPLETED, query_string=bad)
        assert result.status_code == 400, bad
        assert result.json["message"] == "Invalid parameter"


def test_the_usage_report_per_queue_and_user_as_json_and_csv(history):
    history.run_app("a-0", pods=2, queue="root.a", user="alice")
    history.run_app("b-0", pods=1, queue="root.b", user="bob")
    wait_for(lambda: history.store.count() == 2, timeout=10, message="two finished applications in the store")
    result = history.rest.simulate_get("/ws/v1/history/usage", query_string="groupBy=queue")
    assert result.status_code == 200
    rows = {row["queue"]: row for row in result.json["usage"]}
    assert set(rows) == {"root.a", "root.b"}
    assert rows["root.a"]["applications"] == 1 and rows["root.a"]["completed"] == 1
    assert rows["root.a"]["coreHours"] >= 0 and rows["root.b"]["memoryGiBHours"] >= 0
    seconds = {row.key: row.vcore_seconds for row in history.store.usage("queue", None, None)}
    assert seconds["root.a"] > 0 and seconds["root.b"] > 0  # the pods ran for milliseconds: no core-hour yet
    assert rows["root.a"]["waitP50Seconds"] is not None
    users = history.rest.simulate_get("/ws/v1/history/usage", query_string="groupBy=user&format=csv")
    assert users.headers["content-type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(users.text)))
    assert [row["user"] for row in table] == ["alice", "bob"]
    assert table[0]["applications"] == "1"
    empty = history.rest.simulate_get("/ws/v1/history/usage", query_string="since=2000-01-01T00:00:00Z&until=946684801")
    assert empty.json["usage"] == []
    for bad in ("groupBy=node", "format=xml", "since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z"):
        assert history.rest.simulate_get("/ws/v1/history/usage", query_string=bad).status_code == 400, bad


def test_history_survives_a_restart(dsn):
    first = HistoryCore(dsn, history_period=0.05)
    first.core.nodes(1)
    first.run_app("before-restart")
    wait_for(lambda: first.store.count() == 1 and first.store.cluster_samples(10), timeout=10,
             message="the application and a sample in the store")
    first.close()
    again = Core(history_store=lambda records: None, clock=REAL_CLOCK)
    try:
        rest = rest_for(dsn, again)
        assert [a["applicationID"] for a in completed(rest)] == ["before-restart"]
        assert rest.simulate_get("/ws/v1/partition/default/application/before-restart").status_code == 200
        samples = rest.simulate_get("/ws/v1/history/apps").json
        assert samples and set(samples[0]) == {"timestamp", "totalApplications"}
    finally:
        again.scheduler.stop()


def test_without_a_store_completed_applications_stay_in_memory_and_page_alike(core_factory):
    import falcon.testing

    from rest.app import SchedulerView, create_app

    core = core_factory(tuning=Tuning(timing=Timing(completing=0.2, retention=60.0)), clock=REAL_CLOCK)
    core.nodes(1)
    for i in range(3):
        core.app(f"app-{i}", queue="root.a")
        [key] = core.asks(f"app-{i}", 1)
        core.settle()
        core.release(f"app-{i}", key)
    wait_for(lambda: len(core.snapshot().partition("default").terminated_applications) == 3, timeout=10,
             message="three completed applications in memory")
    rest = falcon.testing.TestClient(create_app(SchedulerView(core.scheduler)))
    assert len(completed(rest)) == 3
    assert len(completed(rest, "limit=2")) == 2
    assert completed(rest, "user=nobody-else") == []
    assert rest.simulate_get("/ws/v1/history/usage").status_code == 404


def test_events_go_to_the_store(history):
    history.run_app("app-1")
    wait_for(lambda: any(e["object_id"] == "app-1" for e in history.store.events(0, 1000)), timeout=10,
             message="the application's events in the store")


def test_a_second_store_reader_sees_what_the_writer_wrote(dsn, history):
    history.run_app("app-1")
    wait_for(lambda: history.store.count() == 1, timeout=10, message="the finished application in the store")
    reader = HistoryStore(dsn).migrate()
    assert reader.application("default", "app-1") is not None
    reader.close()
