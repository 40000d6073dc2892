"""A crashed actor in a running scheduler fed by kubesim: the health check names it, both probes answer
503 (it never comes back: Kubernetes must restart the pod) and the log says so once."""

from __future__ import annotations

import logging

import pykka
import pytest

from actors.base import message
from actors.core.messages import CurrentSettings, Tick
from actors.core.scheduler import CoreScheduler, PartitionActor
from actors.shim.nodeactor import NodeActor
from tests.rest.test_with_cluster import Http, served
from tests.waiting import wait_for


@message
class Poison:
    """No actor handles it: told, it stops the actor by a failure."""


@pytest.fixture
def running(tmp_path):
    with served(tmp_path, lambda cluster: cluster.node("node-a")) as (cluster, http):
        cluster.pod("first")
        cluster.wait_bound("first")
        yield cluster, http


def actors_check(http: Http) -> dict:
    status, health = http.get("/ws/v1/scheduler/healthcheck")
    assert status == 200, health
    [check] = [c for c in health["HealthChecks"] if c["Name"] == "Actors"]
    return {"healthy": health["Healthy"], **check}


def failed_check(http: Http) -> dict | None:
    check = actors_check(http)
    return None if check["Succeeded"] else check


def pods_informer(cluster):
    return next(ref for ref in cluster.service.informers if ref.proxy().name.get() == "Informer(pods)")


VICTIMS = {
    "informer": pods_informer,
    "binder": lambda cluster: cluster.service.binder,
    "node actor": lambda cluster: pykka.ActorRegistry.get_by_class(NodeActor)[0],
}


def kill(ref: pykka.ActorRef, caplog) -> str:
    name = ref.proxy().name.get()
    caplog.set_level(logging.ERROR)
    ref.tell(Poison())
    return name


def assert_dead_once(http: Http, name: str, caplog) -> None:
    """Both probes fail naming the actor, and the log has one line about it."""
    assert http.get("/ws/v1/health/live") == (503, {"alive": False, "failedActors": [name]})
    status, ready = http.get("/ws/v1/health/ready")
    assert status == 503 and ready["ready"] is False and ready["failedActors"] == [name]
    assert [r.getMessage() for r in caplog.records if name in r.getMessage()] == [
        f"actor {name} stopped by a failure: TypeError('{name} has no handler for Poison')"]


@pytest.mark.parametrize("victim", VICTIMS)
def test_a_crashed_shim_actor_fails_health_and_both_probes(running, victim, caplog):
    cluster, http = running
    assert actors_check(http)["Succeeded"] and http.get("/ws/v1/health/live") == (200, {"alive": True})
    assert http.get("/ws/v1/health/ready")[0] == 200

    name = kill(VICTIMS[victim](cluster), caplog)

    check = wait_for(lambda: failed_check(http), timeout=10, message="the Actors check to fail")
    assert not check["healthy"]
    assert name in check["DiagnosisMessage"] and "Poison" in check["DiagnosisMessage"]
    assert_dead_once(http, name, caplog)


def test_a_crashed_partition_actor_fails_both_probes(running, caplog):
    cluster, http = running
    name = kill(pykka.ActorRegistry.get_by_class(PartitionActor)[0], caplog)

    wait_for(lambda: http.get("/ws/v1/health/live")[0] == 503, timeout=10, message="liveness to fail")
    # The core's timers go on ticking its partitions (every 0.2 s here): one tick for the dead partition
    # fails nobody else. The ask after it returns once the core has handled the tick.
    [core] = pykka.ActorRegistry.get_by_class(CoreScheduler)
    core.tell(Tick())
    assert core.ask(CurrentSettings()) is not None
    # No new snapshot can be taken without the partition: the health check answers its last periodic
    # report, with the Actors check failed.
    check = failed_check(http)
    assert not check["healthy"] and name in check["DiagnosisMessage"]
    assert_dead_once(http, name, caplog)
