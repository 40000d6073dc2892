"""Leader election in the REST API: a standby's readiness, the ``standby=ready`` probe, the gauge."""

from __future__ import annotations

from dataclasses import dataclass

import falcon.testing
from prometheus_client.parser import text_string_to_metric_families

from rest.app import SchedulerView, create_app


@dataclass(frozen=True)
class Status:
    identity: str
    leading: bool
    leader: str
    warm: bool


@dataclass(frozen=True)
class ShimState:
    state: str


def _client(core, status: dict, shim: dict) -> falcon.testing.TestClient:
    view = SchedulerView(core.scheduler, shim_state=lambda: shim["value"], leadership=lambda: status["value"])
    return falcon.testing.TestClient(create_app(view))


def _leader_gauge(client) -> dict[str, float]:
    families = {f.name: f for f in text_string_to_metric_families(client.simulate_get("/ws/v1/metrics").text)}
    return {s.labels["identity"]: s.value for s in families["yunikorn_leader"].samples}


def test_a_standby_is_alive_not_ready_and_names_the_leader(core_factory):
    status = {"value": Status("pod-b", False, "pod-a", False)}
    shim = {"value": ShimState("New")}
    client = _client(core_factory(), status, shim)
    assert client.simulate_get("/ws/v1/health/live").status_code == 200
    ready = client.simulate_get("/ws/v1/health/ready")
    assert ready.status_code == 503
    assert ready.json == {"ready": False, "shimState": "New", "identity": "pod-b", "leader": "pod-a",
                          "standby": True, "warm": False, "reason": "standby: pod-a leads"}
    assert client.simulate_get("/ws/v1/health/ready", params={"standby": "ready"}).status_code == 503  # cold
    status["value"] = Status("pod-b", False, "pod-a", True)
    assert client.simulate_get("/ws/v1/health/ready").status_code == 503
    assert client.simulate_get("/ws/v1/health/ready", params={"standby": "ready"}).json["ready"] is True
    assert _leader_gauge(client) == {"pod-b": 0.0}
    status["value"] = Status("pod-b", False, "", True)
    assert client.simulate_get("/ws/v1/health/ready").json["reason"] == "standby: waiting for the lease"


def test_the_leader_is_ready_once_running(core_factory):
    status = {"value": Status("pod-a", True, "pod-a", True)}
    shim = {"value": ShimState("Recovering")}
    client = _client(core_factory(), status, shim)
    assert client.simulate_get("/ws/v1/health/ready").status_code == 503
    assert client.simulate_get("/ws/v1/health/ready", params={"standby": "ready"}).status_code == 503
    shim["value"] = ShimState("Running")
    ready = client.simulate_get("/ws/v1/health/ready")
    assert (ready.status_code, ready.json) == (200, {"ready": True, "shimState": "Running", "identity": "pod-a",
                                                     "leader": "pod-a"})
    assert _leader_gauge(client) == {"pod-a": 1.0}


def test_without_leader_election_there_is_no_gauge(core_factory):
    client = falcon.testing.TestClient(create_app(SchedulerView(core_factory().scheduler)))
    assert "yunikorn_leader" not in client.simulate_get("/ws/v1/metrics").text
