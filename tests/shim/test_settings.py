"""The settings of the scheduler's configmaps, changed while it runs (kubesim, the official client, the
shim, the core and the REST API): each one takes effect, a bad value is refused and the configuration
in force stays, a key the scheduler does not support is logged once and listed by ``/ws/v1/config``."""

from __future__ import annotations

import logging
import time

import pytest
import yaml

from actors import loglevels
from rest.app import SchedulerView
from rest.server import RestServer
from si.clock import REAL_CLOCK, VirtualClock
from tests.queues import partition, queue
from tests.rest.test_with_cluster import Http
from tests.waiting import wait_for

QUEUES = partition(queue("root", submitacl="*"), placementrules=[{"name": "tag", "value": "namespace", "create": True}])


@pytest.fixture
def core_clock():
    return REAL_CLOCK


@pytest.fixture
def running(cluster, core_clock):
    """The scheduler on kubesim with two nodes, and an HTTP client of its REST API."""
    cluster.configure(QUEUES)
    cluster.node("node-a", labels={"node.kubernetes.io/instance-type": "m5.large", "example.com/flavour": "big"})
    cluster.node("node-b")
    cluster.start_scheduler(core_clock=core_clock)
    server = RestServer(SchedulerView(cluster.scheduler), host="127.0.0.1", port=0)
    yield cluster, Http(server.url)
    server.stop()


@pytest.fixture
def restore_log_levels():
    yield
    for names in loglevels.SUBSYSTEMS.values():
        for name in names:
            logging.getLogger(name).setLevel(logging.NOTSET)


def config_json(http: Http) -> dict:
    return http.get("/ws/v1/config", Accept="application/json")[1]


def reloaded(http: Http, key: str, value: str | None) -> bool:
    return config_json(http).get("Extra", {}).get(key) == value  # omitted when empty, as Go's omitempty


def test_an_unsupported_key_is_logged_once_and_listed_by_the_config_endpoint(running, caplog):
    cluster, http = running
    cluster.configure(QUEUES, **{"made.up": "1", "made.up.too": "5m", "event.maxStreams": "10"})
    wait_for(lambda: reloaded(http, "made.up", "1"), message="the configuration to be reloaded")
    assert config_json(http)["Unsupported"] == ["made.up", "made.up.too"]
    status, _, body = http.raw("/ws/v1/config")
    document = yaml.safe_load(body)
    assert status == 200 and document["unsupported"] == ["made.up", "made.up.too"]
    assert document["extra"]["event.maxStreams"] == "10" and document["partitions"][0]["name"] == "default"
    cluster.configure(QUEUES, **{"made.up": "2", "made.up.too": "5m"})
    wait_for(lambda: reloaded(http, "made.up", "2"), message="the second configuration to be reloaded")
    warnings = [r.getMessage() for r in caplog.records if "key made.up " in r.getMessage()]
    assert warnings == ["configuration key made.up is unknown: it has no effect"]


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("event.ringBufferCapacity", "lots", "event.ringBufferCapacity: 'lots' is not usable"),
    ("service.schedulingInterval", "0s", "service.schedulingInterval: '0s' is not usable: must be more than 0"),
    ("kubernetes.qps", "-5", "kubernetes.qps: '-5' is not a positive number"),
    ("log.core.level", "loud", "log.core.level: 'loud' is not a log level"),
    ("service.volumeBindTimeout", "soon", "service.volumeBindTimeout: 'soon' is not a positive duration"),
    ("service.maxPlaceholdersPerGang", "²", "service.maxPlaceholdersPerGang: '²' is not a positive integer"),
])
def test_a_bad_value_is_refused_and_the_configuration_in_force_stays(running, key, value, reason):
    cluster, http = running
    cluster.configure(QUEUES, **{"event.RESTResponseSize": "7"})
    wait_for(lambda: reloaded(http, "event.RESTResponseSize", "7"), message="the good configuration")
    cluster.configure(QUEUES, **{"event.RESTResponseSize": "8", key: value})
    refused = wait_for(lambda: cluster.events("ConfigurationRefused"), message="the refusal event")
    assert reason in refused[0].message
    assert reloaded(http, "event.RESTResponseSize", "7") and key not in config_json(http)["Extra"]


def test_event_ring_capacity_and_rest_response_size(running):
    cluster, http = running
    cluster.configure(QUEUES, **{"event.ringBufferCapacity": "5", "event.RESTResponseSize": "3"})
    wait_for(lambda: reloaded(http, "event.ringBufferCapacity", "5"), message="the configuration to be reloaded")
    for i in range(4):
        cluster.pod(f"p-{i}")
    cluster.wait_bound(*(f"p-{i}" for i in range(4)))
    wait_for(lambda: http.ok("/ws/v1/events/batch")["HighestID"] >= 10, message="more events than the ring holds")
    batch = http.ok("/ws/v1/events/batch")
    assert len(batch["EventRecords"]) == 3, "the REST response size is the default count"
    assert batch["HighestID"] - batch["LowestID"] + 1 == 5, "the ring keeps the newest five"
    assert http.get("/ws/v1/events/batch?count=4")[0] == 400, "nor may a reader ask for more"


def test_event_tracking_off_and_streams_per_host(running):
    cluster, http = running
    cluster.configure(QUEUES, **{"event.maxStreamsPerHost": "0"})
    wait_for(lambda: reloaded(http, "event.maxStreamsPerHost", "0"), message="the configuration to be reloaded")
    assert http.get("/ws/v1/events/stream")[0] == 503
    cluster.configure(QUEUES, **{"event.trackingEnabled": "false"})
    wait_for(lambda: reloaded(http, "event.trackingEnabled", "false"), message="tracking to be switched off")
    status, body = http.get("/ws/v1/events/batch")
    assert status == 500 and body["message"] == "Event tracking is disabled"


def seconds_to_bind(cluster, prefix: str, count: int = 8) -> float:
    pods = [f"{prefix}-{i}" for i in range(count)]
    started = time.monotonic()
    for name in pods:
        cluster.pod(name)
    cluster.wait_bound(*pods)
    return time.monotonic() - started


def test_kubernetes_qps_paces_the_binds(running):
    cluster, http = running
    cluster.configure(QUEUES, **{"kubernetes.qps": "10", "kubernetes.burst": "1"})
    wait_for(lambda: reloaded(http, "kubernetes.qps", "10"), message="the configuration to be reloaded")
    # 8 binds (and their events and conditions) at 10 requests/s after a burst of 1: at least 0.7 s.
    assert seconds_to_bind(cluster, "paced") >= 0.7
    cluster.configure(QUEUES, **{"kubernetes.qps": "1000", "kubernetes.burst": "1000"})
    wait_for(lambda: reloaded(http, "kubernetes.qps", "1000"), message="the rate to be raised")
    assert seconds_to_bind(cluster, "fast") < 5.0


def test_log_levels_are_applied_live(running, caplog, restore_log_levels):
    cluster, http = running

    def debug_lines(app: str) -> list[str]:
        return [r.getMessage() for r in caplog.records
                if r.name == "actors.shim.appactor" and r.levelno == logging.DEBUG and app in r.getMessage()]

    cluster.configure(QUEUES, **{"log.shim.cache.application.level": "debug"})
    wait_for(lambda: reloaded(http, "log.shim.cache.application.level", "debug"), message="debug to be on")
    cluster.pod("loud", labels={"applicationId": "loud-app"})
    wait_for(lambda: debug_lines("loud-app"), message="the application's debug line")
    cluster.configure(QUEUES, **{"log.shim.cache.application.level": "info"})
    wait_for(lambda: reloaded(http, "log.shim.cache.application.level", "info"), message="debug to be off")
    cluster.pod("quiet", labels={"applicationId": "quiet-app"})
    cluster.wait_bound("quiet")
    assert not debug_lines("quiet-app")


def test_instance_type_node_label_key(running):
    cluster, http = running

    def instance_type() -> str | None:
        return http.ok("/ws/v1/partition/default/node/node-a")["attributes"].get("si/instance-type")

    wait_for(lambda: instance_type() == "m5.large", message="the default label's instance type")
    cluster.configure(QUEUES, **{"service.instanceTypeNodeLabelKey": "example.com/flavour"})
    wait_for(lambda: instance_type() == "big", message="the instance type from the configured label")
    assert "si/instance-type" not in http.ok("/ws/v1/partition/default/node/node-b")["attributes"]


@pytest.mark.parametrize("core_clock", [VirtualClock()], ids=["virtual"])
def test_scheduling_interval_paces_the_core_timers(running, core_clock):
    cluster, http = running
    cluster.configure(QUEUES, **{"service.schedulingInterval": "1h"})
    wait_for(lambda: reloaded(http, "service.schedulingInterval", "1h"), message="the configuration to be reloaded")
    cluster.pod("done", labels={"applicationId": "done-app"})
    cluster.wait_bound("done")
    cluster.core_api.patch_namespaced_pod_status("done", "default", {"status": {"phase": "Succeeded"}})

    def state() -> str:
        status, app = http.get("/ws/v1/partition/default/application/done-app")
        return app["applicationState"] if status == 200 else "Gone"

    wait_for(lambda: state() == "Completing", message="the application to be completing")
    # Completing turns Completed 0.5 s after, on a timer round: the first comes an hour after the reload.
    core_clock.advance(3599.8)
    cluster.scheduler.barrier()
    assert state() == "Completing"
    core_clock.advance(0.2, between=cluster.scheduler.barrier)
    assert state() in ("Completed", "Gone"), "the timers ran an hour on"


def test_volume_bind_timeout_parses_go_durations():
    from actors.shim import settings

    assert settings.parse({}).volume_bind_timeout == 600.0
    assert settings.parse({"service.volumeBindTimeout": "1m30s"}).volume_bind_timeout == 90.0
    with pytest.raises(ValueError, match="not a positive duration"):
        settings.parse({"service.volumeBindTimeout": "0s"})
