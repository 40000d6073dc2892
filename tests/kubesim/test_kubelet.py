"""The simulated kubelets, through the official client: a bound pod runs after the configured delay,
ends after its ``sleep`` (scaled by the time factor) or its annotated run time, restarts under
restartPolicy Always, and a graceful deletion waits its (scaled) grace period."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client

from kubesim import KubeSim
from kubesim.kubelet import container_seconds
from tests.kubesim.raw import post
from tests.waiting import wait_for


@pytest.fixture
def core(sim_api):
    return client.CoreV1Api(sim_api)


def pod(name: str, command: list[str] | None = None, restart: str = "Never", annotations: dict | None = None,
        **spec) -> dict:
    container = {"name": "c", "image": "busybox", **({"command": command} if command else {})}
    return {"metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"containers": [container], "restartPolicy": restart, **spec}}


def bind(core, name: str) -> None:
    core.create_namespaced_pod_binding(name, "default", {"metadata": {"name": name},
                                                         "target": {"name": "node-00000"}}, _preload_content=False)


def phase(core, name: str) -> str:
    return core.read_namespaced_pod(name, "default").status.phase


@pytest.mark.parametrize("argv, seconds", [(["sleep", "30"], 30.0), (["/bin/sleep", "2m"], 120.0),
                                           (["sh", "-c", "sleep 1.5"], 1.5), (["sh", "-c", "exec sleep 3"], 3.0),
                                           (["sleep", "infinity"], None), (["sh", "-c", "sleep 3 && exit 1"], None),
                                           (["nginx"], None), ([], None)])
def test_the_run_time_of_a_container_comes_from_its_sleep(argv, seconds):
    assert container_seconds({"command": argv}) == seconds


def test_a_sleeping_pod_runs_then_succeeds_after_its_scaled_sleep(core, sim):
    core.create_namespaced_pod("default", pod("p", ["sleep", "30"]))
    assert phase(core, "p") == "Pending"
    bind(core, "p")
    wait_for(lambda: phase(core, "p") == "Running", timeout=5, message="p runs")
    running = core.read_namespaced_pod("p", "default").status
    assert running.container_statuses[0].ready and running.container_statuses[0].state.running
    wait_for(lambda: phase(core, "p") == "Succeeded", timeout=5, message="p ends after 30 s * 0.01")
    ended = core.read_namespaced_pod("p", "default").status
    terminated = ended.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (0, "Completed")
    assert {c.type: (c.status, c.reason) for c in ended.conditions}["Ready"] == ("False", "PodCompleted")


def test_an_annotated_run_time_ends_the_pod(core):
    core.create_namespaced_pod("default", pod("p", annotations={"kubesim/run-seconds": "20"}, restart="Always"))
    bind(core, "p")
    wait_for(lambda: phase(core, "p") == "Succeeded", timeout=5, message="p ends after 20 s * 0.01")


def test_a_pod_without_a_known_end_keeps_running(core):
    core.create_namespaced_pod("default", pod("server", ["nginx"]))
    core.create_namespaced_pod("default", pod("short", ["sleep", "10"]))
    bind(core, "server")
    bind(core, "short")
    wait_for(lambda: phase(core, "short") == "Succeeded", timeout=5, message="short ends")
    assert phase(core, "server") == "Running"


def test_an_ending_container_restarts_under_restart_policy_always(core):
    core.create_namespaced_pod("default", pod("p", ["sleep", "10"], restart="Always"))
    bind(core, "p")
    wait_for(lambda: (core.read_namespaced_pod("p", "default").status.container_statuses or [None])[0] is not None
             and core.read_namespaced_pod("p", "default").status.container_statuses[0].restart_count >= 2,
             timeout=5, message="p restarts")
    assert phase(core, "p") == "Running"


def test_a_graceful_deletion_waits_the_scaled_grace_period(core, sim):
    core.create_namespaced_pod("default", pod("p", terminationGracePeriodSeconds=50))
    bind(core, "p")
    wait_for(lambda: phase(core, "p") == "Running", timeout=5, message="p runs")
    started = time.monotonic()
    deleted = core.delete_namespaced_pod("p", "default")
    assert deleted.metadata.deletion_timestamp is not None and deleted.metadata.deletion_grace_period_seconds == 50
    assert core.read_namespaced_pod("p", "default").metadata.deletion_timestamp is not None
    wait_for(lambda: not sim.objects("pods"), timeout=5, message="p goes after 50 s * 0.01")
    assert time.monotonic() - started >= 0.4


def test_a_zero_grace_period_or_an_unbound_pod_goes_at_once(core, sim):
    core.create_namespaced_pod("default", pod("bound"))
    core.create_namespaced_pod("default", pod("pending"))
    bind(core, "bound")
    wait_for(lambda: phase(core, "bound") == "Running", timeout=5, message="bound runs")
    core.delete_namespaced_pod("bound", "default", grace_period_seconds=0)
    core.delete_namespaced_pod("pending", "default")
    assert sim.objects("pods") == []


def test_a_second_deletion_with_zero_grace_ends_the_wait():
    with KubeSim(kubelet_delay=0.0) as sim, sim.api_client() as api:
        sim.seed_nodes(1)
        core = client.CoreV1Api(api)
        core.create_namespaced_pod("default", pod("p"))
        bind(core, "p")
        core.delete_namespaced_pod("p", "default")
        assert [p["metadata"]["deletionGracePeriodSeconds"] for p in sim.objects("pods")] == [30]
        core.delete_namespaced_pod("p", "default", body=client.V1DeleteOptions(grace_period_seconds=0))
        assert sim.objects("pods") == []


def test_without_kubelets_a_deletion_is_immediate_and_pods_never_run(kubesim, kube_api):
    kubesim.seed_nodes(1)
    core = client.CoreV1Api(kube_api)
    core.create_namespaced_pod("default", pod("p", ["sleep", "0"]))
    bind(core, "p")
    assert phase(core, "p") == "Pending"
    time.sleep(0.1)  # no condition to await: nothing must happen
    assert phase(core, "p") == "Pending"
    core.delete_namespaced_pod("p", "default")
    assert kubesim.objects("pods") == []


def test_an_eviction_terminates_the_pod_gracefully(core, sim):
    core.create_namespaced_pod("default", pod("p", terminationGracePeriodSeconds=20))
    bind(core, "p")
    wait_for(lambda: phase(core, "p") == "Running", timeout=5, message="p runs")
    core.create_namespaced_pod_eviction("p", "default", {"metadata": {"name": "p", "namespace": "default"}},
                                        _preload_content=False)
    assert core.read_namespaced_pod("p", "default").metadata.deletion_grace_period_seconds == 20
    wait_for(lambda: not sim.objects("pods"), timeout=5, message="p goes after 20 s * 0.01")


def test_init_containers_run_before_the_pod_does(core):
    core.create_namespaced_pod("default", pod("p", initContainers=[
        {"name": "first", "image": "busybox", "command": ["sleep", "30"]},
        {"name": "second", "image": "busybox", "command": ["sleep", "20"]}]))
    started = time.monotonic()
    bind(core, "p")
    wait_for(lambda: phase(core, "p") == "Running", timeout=5, message="p runs after its init containers")
    assert time.monotonic() - started >= 0.45  # (30 s + 20 s) * 0.01


def test_a_container_command_of_the_wrong_shape_runs_until_stopped(sim):
    status, _ = post(f"{sim.url}/api/v1/namespaces/default/pods", {"metadata": {"name": "odd"}, "spec": {
        "nodeName": "node-00000", "terminationGracePeriodSeconds": "soon",
        "containers": [{"name": "c", "image": "busybox", "command": 5}]}})
    assert status == 201
    wait_for(lambda: sim.objects("pods")[0]["status"].get("phase") == "Running", timeout=5, message="odd runs")
    status, _ = post(f"{sim.url}/api/v1/namespaces/default/pods", {"metadata": {"name": "next"}, "spec": {
        "nodeName": "node-00000", "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "1"]}]}})
    wait_for(lambda: {p["metadata"]["name"]: p["status"].get("phase") for p in sim.objects("pods")} == {
        "odd": "Running", "next": "Succeeded"}, timeout=5, message="the next pod still runs and ends")
    with sim.api_client() as api:  # a grace period that is no number: the default one, 30 s
        deleted = client.CoreV1Api(api).delete_namespaced_pod("odd", "default", _preload_content=False)
        assert json.loads(deleted.data)["metadata"]["deletionGracePeriodSeconds"] == 30


def test_a_created_pod_carries_no_deletion_its_client_wrote(core, sim):
    created = core.create_namespaced_pod("default", {**pod("p"), "metadata": {
        "name": "p", "deletionTimestamp": "2020-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0}})
    assert created.metadata.deletion_timestamp is None and created.metadata.deletion_grace_period_seconds is None
    bind(core, "p")
    wait_for(lambda: phase(core, "p") == "Running", timeout=5, message="p runs and is not removed")


def killing_events(core, name: str) -> list:
    return [e for e in core.list_namespaced_event("default").items
            if e.involved_object.name == name and e.reason == "Killing"]


@pytest.mark.parametrize("grace", [None, 0], ids=["graceful", "immediate"])
def test_a_running_pod_deleted_gets_the_kubelets_killing_event_per_container(sim, core, grace):
    body = pod("victim")
    body["spec"]["containers"].append({"name": "side", "image": "busybox"})
    core.create_namespaced_pod("default", body)
    bind(core, "victim")
    wait_for(lambda: phase(core, "victim") == "Running", timeout=5, message="victim Running")
    uid = core.read_namespaced_pod("victim", "default").metadata.uid
    core.delete_namespaced_pod("victim", "default", grace_period_seconds=grace)
    wait_for(lambda: len(killing_events(core, "victim")) == 2, timeout=5, message="two Killing events")
    events = sorted(killing_events(core, "victim"), key=lambda e: e.message)
    assert [e.message for e in events] == ["Stopping container c", "Stopping container side"]
    for event in events:
        assert (event.type, event.source.component, event.source.host) == ("Normal", "kubelet", "node-00000")
        assert (event.involved_object.kind, event.involved_object.uid) == ("Pod", uid)
    assert events[0].involved_object.field_path == "spec.containers{c}"
    wait_for(lambda: not sim.objects("pods", "default"), timeout=5, message="victim gone")
    assert len(killing_events(core, "victim")) == 2  # its removal after the grace period stops nothing more


def test_a_pod_deleted_before_it_runs_gets_no_killing_event(sim, core):
    core.create_namespaced_pod("default", pod("never-ran"))
    core.create_namespaced_pod("default", pod("marker"))
    bind(core, "marker")
    wait_for(lambda: phase(core, "marker") == "Running", timeout=5, message="marker Running")
    core.delete_namespaced_pod("never-ran", "default")
    core.delete_namespaced_pod("marker", "default", grace_period_seconds=0)
    wait_for(lambda: killing_events(core, "marker"), timeout=5, message="the marker's Killing event")
    assert killing_events(core, "never-ran") == []
