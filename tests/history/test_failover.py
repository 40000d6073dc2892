"""Two ``yunikorn-scheduler`` processes with leader election on one kubesim, sharing one PostgreSQL
database: the leader stores the applications that finish; the standby's REST API reads the same history;
when the leader goes (killed, or its Lease taken) the standby leads and stores what finishes from then
on, and serves the history written before intact. A trigger in the database names the writer of every
stored application (each process connects under its own ``application_name``), so the test sees that
only the leader writes."""

from __future__ import annotations

import json

import psycopg
import pytest

from kubesim.resources import BY_PATH, POD
from tests.queues import config, queue
from tests.reliability.invariants import HEALTH_ON_READ, get_json
from tests.reliability.process import SchedulerProcess
from tests.waiting import wait_for

pytestmark = pytest.mark.slow  # scheduler processes, a Lease expiring, applications completing on the core's timer

ELECTION = ("--leader-elect", "--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "1500ms",
            "--leader-elect-retry-period", "0.25s")
CONFIG = config(queue("a"), queue("b"), create=False)
COMPLETED = "/ws/v1/partition/default/applications/completed"
REJECTED = "/ws/v1/partition/default/applications/rejected"
# Who stored each application: the session's application_name, set per process in its DSN.
AUDIT = """
CREATE TABLE stored_by (application_id text, writer text);
CREATE FUNCTION record_writer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO stored_by VALUES (NEW.application_id, current_setting('application_name'));
  RETURN NEW;
END $$;
CREATE TRIGGER record_writer AFTER INSERT ON applications FOR EACH ROW EXECUTE FUNCTION record_writer();
"""


class Database:
    """The shared history database, read directly."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    def execute(self, sql: str) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as connection:
            connection.execute(sql)

    def query(self, sql: str) -> list[tuple]:
        with psycopg.connect(self.dsn, autocommit=True) as connection:
            return connection.execute(sql).fetchall()

    def writers(self) -> dict[str, str]:
        """Application id -> the process that stored it."""
        return dict(self.query("SELECT application_id, writer FROM stored_by"))

    def stored(self) -> list[str]:
        return sorted(row[0] for row in self.query("SELECT application_id FROM applications"))


def run_application(cluster, app_id: str, queue: str, user: str, pods: int = 2) -> list[str]:
    """``pods`` pods of ``app_id`` (as ``user``); returns their names."""
    names = [f"{app_id}-{i}" for i in range(pods)]
    for name in names:
        cluster.core_api.create_namespaced_pod("default", {
            "metadata": {"name": name, "labels": {"applicationId": app_id, "queue": queue},
                         "annotations": {"yunikorn.apache.org/user.info": json.dumps({"user": user,
                                                                                      "groups": ["staff"]})}},
            "spec": {"schedulerName": "yunikorn", "containers": [{"name": "main", "image": "busybox",
                                                                 "resources": {"requests": {"cpu": "100m"}}}]}})
    return names


def finish(cluster, names: list[str]) -> None:
    """The pods end (deleted at once): their application completes on the core's timer."""
    for name in names:
        cluster.core_api.delete_namespaced_pod(name, "default", grace_period_seconds=0)


def listed(process: SchedulerProcess, path: str, query: str = "") -> list[dict]:
    return get_json(f"{process.url}{path}{query}", timeout=10)


def ids(applications: list[dict]) -> list[str]:
    return sorted(app["applicationID"] for app in applications)


def usage(process: SchedulerProcess) -> dict[str, dict]:
    return {row["user"]: row for row in get_json(f"{process.url}/ws/v1/history/usage?groupBy=user",
                                                 timeout=10)["usage"]}


def written(process: SchedulerProcess) -> float:
    """The process's ``yunikorn_history_written_records_total``."""
    text = get_text(f"{process.url}/ws/v1/metrics")
    [line] = [line for line in text.splitlines() if line.startswith("yunikorn_history_written_records_total ")]
    return float(line.split()[1])


def get_text(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def kill(cluster, leader: SchedulerProcess) -> None:
    leader.kill()


def take_lease(cluster, leader: SchedulerProcess) -> None:
    """The Lease names the standby: the leader sees it at once and exits (3), writing nothing more."""
    resource = BY_PATH[("coordination.k8s.io", "v1", "leases")]
    [lease] = [lease for lease in cluster.sim.objects("leases") if lease["metadata"]["name"] == "yunikorn-scheduler"]
    lease["spec"]["holderIdentity"] = "yunikorn-b"
    cluster.sim.store.replace(resource, "default", "yunikorn-scheduler", lease, None)
    assert leader.process.wait(timeout=30) == 3


@pytest.mark.timeout(240)
@pytest.mark.parametrize("depose", [kill, take_lease], ids=["killed", "lease-taken"])
def test_the_standby_reads_the_leaders_history_and_keeps_storing_once_it_leads(cluster, postgres, tmp_path,
                                                                              depose):
    cluster.sim.seed_nodes(2, cpu="4")
    cluster.configure(CONFIG, **HEALTH_ON_READ)
    dsn = postgres.new_database()
    database = Database(dsn)
    processes: list[SchedulerProcess] = []

    def start(name: str) -> SchedulerProcess:
        cluster.sim.store.create(POD, "default", {"metadata": {"name": name},
                                                  "spec": {"containers": [{"name": "main", "image": "busybox"}]}})
        process = SchedulerProcess(cluster.kubeconfig, tmp_path / f"{name}.log", *ELECTION, "--history-dsn",
                                   f"{dsn}&application_name={name}", env={"POD_NAME": name})
        processes.append(process)
        return process

    try:
        leader = start("yunikorn-a").wait_ready()
        database.execute(AUDIT)  # the leader made the tables at its start
        standby = start("yunikorn-b")
        wait_for(lambda: standby.readiness().get("warm"), timeout=60, interval=0.1, message="b standing by, warm")

        pods = run_application(cluster, "before-0", "root.a", "alice") + \
            run_application(cluster, "before-1", "root.b", "bob")
        run_application(cluster, "before-rejected", "root.missing", "bob", pods=1)  # no such queue
        cluster.wait_bound(*pods, timeout=60)
        finish(cluster, pods)
        wait_for(lambda: database.stored() == ["before-0", "before-1", "before-rejected"], timeout=90,
                 interval=0.2, message="the applications finished before the failover stored")

        # The standby's REST API reads the same history; only the leader wrote it.
        before_completed = listed(leader, COMPLETED)
        assert ids(before_completed) == ["before-0", "before-1"]
        assert all(app["applicationState"] == "Completed" for app in before_completed)
        assert listed(standby, COMPLETED) == before_completed
        assert ids(listed(standby, REJECTED)) == ["before-rejected"]
        before_usage = usage(leader)
        assert usage(standby) == before_usage
        assert (before_usage["alice"]["completed"], before_usage["bob"]["completed"],
                before_usage["bob"]["rejected"]) == (1, 1, 1)
        assert set(database.writers().values()) == {"yunikorn-a"}
        assert written(leader) > 0 and written(standby) == 0

        depose(cluster, leader)
        standby.wait_ready(timeout=60)
        after = run_application(cluster, "after-0", "root.a", "carol")
        cluster.wait_bound(*after, timeout=60)
        finish(cluster, after)
        wait_for(lambda: "after-0" in database.stored(), timeout=90, interval=0.2,
                 message="the new leader storing what finishes after the failover")

        assert database.stored() == ["after-0", "before-0", "before-1", "before-rejected"]  # each stored once
        assert database.writers() == {"before-0": "yunikorn-a", "before-1": "yunikorn-a",
                                      "before-rejected": "yunikorn-a", "after-0": "yunikorn-b"}
        # The new leader serves the history written before the failover as it was, and what came after.
        now_completed = listed(standby, COMPLETED)
        assert ids(now_completed) == ["after-0", "before-0", "before-1"]
        assert [app for app in now_completed if app["applicationID"] != "after-0"] == before_completed
        assert listed(standby, COMPLETED, "?user=carol")[0]["applicationID"] == "after-0"
        now_usage = usage(standby)
        assert {user: now_usage[user] for user in before_usage} == before_usage
        # Two pods that ran for milliseconds: the report's hours (rounded to 6 places) are the stored
        # millicore-seconds, whatever their size.
        [(carol_vcore_seconds,)] = database.query("SELECT vcore_seconds FROM applications "
                                                  "WHERE application_id = 'after-0'")
        assert carol_vcore_seconds > 0
        assert now_usage["carol"]["completed"] == 1
        assert now_usage["carol"]["coreHours"] == round(carol_vcore_seconds / 1000 / 3600, 6)
        assert written(standby) > 0
    finally:
        for process in reversed(processes):
            process.stop()
