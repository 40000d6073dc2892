"""The history store on real databases (a SQLite file and a PostgreSQL server): what is written is read
back whole, filtered and paged; writes are idempotent; the usage report sums and ranks; retention prunes."""

from actors.history.store import ApplicationQuery, HistoryStore, Retention
from si import si_pb2
from si.history import ClusterSample, QueueSample
from tests.history.records import T0, S, finished

DONE = ("Completed", "Failed", "Expired")


def open_store(dsn: str) -> HistoryStore:
    return HistoryStore(dsn).migrate()


def test_an_application_is_read_back_whole_and_a_second_write_changes_nothing(dsn):
    store = open_store(dsn)
    app = finished("app-1", pods=3)
    store.write([app])
    store.write([app])  # a batch written again after a failover
    assert store.count() == 1
    assert store.applications(ApplicationQuery("default", DONE)) == [app]
    assert store.application("default", "app-1") == app
    assert store.application("other", "app-1") is None
    store.close()


def test_a_run_stored_by_one_scheduler_is_not_stored_again_by_the_next_leader(dsn):
    """The new leader recovered the application as a standby (so its submission time is its own) and
    finished it once it led: the run overlaps the stored one, and is the same run. A later run is new."""
    store = open_store(dsn)
    store.write([finished("app-1", submitted=T0, runtime=60)])
    store.write([finished("app-1", submitted=T0 + 5 * S, runtime=60)])  # the new leader's view of it
    assert store.count() == 1 and store.application("default", "app-1").submission_time == T0
    assert [row.applications for row in store.usage("queue", None, None)] == [1]
    store.write([finished("app-1", submitted=T0 + 3600 * S)])  # the id runs again, later
    assert store.count() == 2 and store.count(distinct_ids=True) == 1
    store.close()


def test_migrating_again_keeps_the_rows(dsn):
    store = open_store(dsn)
    store.write([finished("app-1")])
    store.close()
    again = open_store(dsn)
    assert again.count() == 1
    again.close()


def test_a_store_already_at_the_head_opens_without_alembic_nor_for_sqlite_the_postgresql_dialect(dsn):
    """Alembic and SQLAlchemy's PostgreSQL dialect cost a scheduler's start 0.14 s and 35 ms of CPU:
    Alembic is loaded only when the schema is behind, the PostgreSQL dialect only for a PostgreSQL store."""
    import subprocess
    import sys

    unwanted = ("alembic", "sqlalchemy.dialects.postgresql") if dsn.startswith("sqlite") else ("alembic",)
    open_store(dsn).close()
    code = (f"import sys; from actors.history.store import HistoryStore; HistoryStore({dsn!r}).migrate().close(); "
            f"print(sorted(m for m in sys.modules if m.startswith({unwanted!r})))")
    opened = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=50)
    assert (opened.returncode, opened.stderr, opened.stdout) == (0, "", "[]\n")


def test_the_head_revision_the_store_checks_for_is_the_newest_migration():
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from actors.history.store import HEAD_REVISION, MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_heads() == [HEAD_REVISION]


def test_lists_are_newest_first_filtered_and_paged(dsn):
    store = open_store(dsn)
    apps = [finished(f"app-{i}", queue="root.a" if i % 2 else "root.b", user="bob" if i % 3 == 0 else "alice",
                     state="Failed" if i == 4 else "Completed", submitted=T0 + i * 100 * S) for i in range(10)]
    store.write([*apps, finished("rejected", state="Rejected", wait=None)])

    def ids(**query):
        return [a.application_id for a in store.applications(ApplicationQuery("default", DONE, **query))]

    assert ids() == [f"app-{i}" for i in reversed(range(10))]
    assert ids(limit=3, offset=2) == ["app-7", "app-6", "app-5"]
    assert ids(queue="root.b") == ["app-8", "app-6", "app-4", "app-2", "app-0"]
    assert ids(user="bob") == ["app-9", "app-6", "app-3", "app-0"]
    assert [a.application_id for a in store.applications(ApplicationQuery("default", ("Failed",)))] == ["app-4"]
    finish = [a.finished_time for a in apps]
    assert ids(since=finish[3], until=finish[6]) == ["app-5", "app-4", "app-3"]
    assert [a.application_id for a in store.applications(ApplicationQuery("default", ("Rejected",)))] == ["rejected"]
    assert ids(queue="root.none") == []
    store.close()


def test_usage_sums_core_and_memory_hours_and_ranks_waits_per_queue_and_user(dsn):
    store = open_store(dsn)
    # root.a: 10 applications of 2 pods of 1 core and 1 GiB for an hour, waiting 1..10 seconds.
    store.write([finished(f"a-{i}", queue="root.a", user="alice" if i < 5 else "bob", wait=i + 1, runtime=3600,
                          pods=2) for i in range(10)])
    store.write([finished("b-0", queue="root.b", user="bob", state="Failed", wait=30, runtime=1800, vcore=500),
                 finished("b-1", queue="root.b", user="bob", state="Rejected", wait=None)])
    by_queue = {row.key: row for row in store.usage("queue", None, None)}
    assert set(by_queue) == {"root.a", "root.b"}
    a, b = by_queue["root.a"], by_queue["root.b"]
    assert (a.applications, a.by_state) == (10, {"Completed": 10})
    assert a.core_hours == 20.0 and a.memory_gib_hours == 20.0
    for percent, expected in ((50, 5.0), (90, 9.0), (99, 10.0)):
        assert abs(a.wait_percentile(percent) - expected) <= 0.05 * expected
    assert (b.applications, b.by_state) == (2, {"Failed": 1, "Rejected": 1})
    assert b.core_hours == 0.25
    assert abs(b.wait_percentile(50) - 30) <= 1.5  # the rejected one never waited for a pod
    by_user = {row.key: row for row in store.usage("user", None, None)}
    assert by_user["alice"].applications == 5 and by_user["bob"].applications == 7
    assert by_user["alice"].core_hours == 10.0
    # Only what finished in the range counts.
    first = store.usage("queue", T0, T0 + 3600 * S + 6 * S)
    assert [(row.key, row.applications) for row in first] == [("root.a", 5), ("root.b", 2)]
    assert store.usage("queue", T0 + 10**6 * S, None) == []
    store.close()


def test_samples_and_events_are_kept_and_pruned_after_their_own_retention(dsn):
    store = open_store(dsn)
    day = 86400 * S
    event = si_pb2.EventRecord(type=si_pb2.EventRecord.APP, objectID="app-1", message="m", timestampNano=T0,
                               eventChangeType=si_pb2.EventRecord.ADD, eventChangeDetail=si_pb2.EventRecord.APP_NEW)
    store.write([ClusterSample(T0, 3, 7), ClusterSample(T0 + day, 4, 8),
                 QueueSample(T0, "default", "root.a", {"vcore": 2000}, 2), finished("old", submitted=T0 - 40 * day),
                 finished("new", submitted=T0)], [event])
    assert store.cluster_samples(1) == [ClusterSample(T0 + day, 4, 8)]
    assert store.cluster_samples(10) == [ClusterSample(T0, 3, 7), ClusterSample(T0 + day, 4, 8)]
    assert store.queue_samples(T0, "root.a") == [QueueSample(T0, "default", "root.a", {"vcore": 2000}, 2)]
    [stored] = store.events(0, 10)
    assert (stored["type"], stored["change_detail"], stored["object_id"]) == ("APP", "APP_NEW", "app-1")
    # 30 days for applications, 2 for samples, 1 for events, as of T0 + 1.5 days.
    deleted = store.prune(Retention(30 * 86400.0, 2 * 86400.0, 86400.0), T0 + 3 * day // 2)
    assert deleted == 2  # the 40-day-old application and the event
    assert [a.application_id for a in store.applications(ApplicationQuery("default", DONE))] == ["new"]
    assert len(store.cluster_samples(10)) == 2 and store.events(0, 10) == []
    store.close()


def test_processes_starting_together_migrate_one_at_a_time(dsn):
    """Replicas (or a restarted pod beside its successor) open the same store at once."""
    import subprocess
    import sys

    code = f"from actors.history.store import HistoryStore; HistoryStore({dsn!r}).migrate().close()"
    starting = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE) for _ in range(4)]
    failures = [p.stderr.read().decode() for p in starting if p.wait(timeout=50) != 0]
    assert failures == []
    store = open_store(dsn)
    store.write([finished("app-1")])
    assert store.count() == 1
    store.close()


def test_a_dsn_names_sqlite_or_postgresql_and_logs_without_its_password():
    import pytest

    from actors.history.store import describe, engine_url

    assert engine_url("postgresql://u:secret@db:5432/h").startswith("postgresql+psycopg://u:secret@db:5432/h")
    assert engine_url("postgres://u@/h?host=/run/pg").startswith("postgresql+psycopg://")
    assert engine_url("sqlite:////var/lib/yunikorn/history.db") == "sqlite:////var/lib/yunikorn/history.db"
    assert "secret" not in describe("postgresql://u:secret@db/h")
    with pytest.raises(ValueError, match="unsupported database"):
        engine_url("mysql://u@db/h")
