"""One object's failure is its own: a pod, application or namespace whose handling raises (an exception
nobody foresaw, injected here into the real code for one named object) fails that object alone, with
a Warning event, while the shim context, the partition and the informers go on and a canary pod binds;
an informer that does die fails liveness naming it; a scheduler started with the poison present
comes up and schedules the others. The last tests send the hostile values of issue 27's findings
themselves, before and after a start. Real scheduler, kubesim, the official client, the REST probes."""

from __future__ import annotations

import json
import logging
import urllib.request

import pytest

from actors.core import partition
from actors.shim import kinds, translate
from actors.shim.context import ShimContext
from actors.shim.informer import Informer
from tests.rest.test_with_cluster import served
from tests.waiting import wait_for


class Poisoned(RuntimeError):
    """What the injected failure raises."""


def raising_for(function, poisoned):
    """``function``, raising ``Poisoned`` when ``poisoned(*args)`` says so."""
    def wrapper(*args, **kwargs):
        if poisoned(*args):
            raise Poisoned("injected for this object")
        return function(*args, **kwargs)
    return wrapper


def poison_application_submit(monkeypatch) -> None:
    """Submitting application ``poison`` raises (on the context's thread, where its actor is built)."""
    monkeypatch.setattr(translate, "add_application", raising_for(
        translate.add_application, lambda pod, *_: pod.app_id == "poison"))


def poison_task_ask(monkeypatch) -> None:
    """Asking for pod ``poison-task`` raises (in its application's actor)."""
    monkeypatch.setattr(translate, "allocation", raising_for(
        translate.allocation, lambda pod, *_: pod.name == "poison-task"))


def poison_pod_parse(monkeypatch) -> None:
    """Reading pod ``unreadable`` raises (in the pods informer), as a JSON nested too deep did."""
    monkeypatch.setattr(kinds, "parse_pod", raising_for(
        kinds.parse_pod, lambda raw: raw["metadata"]["name"] == "unreadable"))


def poison_core_application(monkeypatch) -> None:
    """Adding application ``poison-core`` raises in the core's partition, as a namespace maxApps of "²" did."""
    monkeypatch.setattr(partition, "AppPlacementInfo", raising_for(
        partition.AppPlacementInfo, lambda app_id, *_: app_id == "poison-core"))


def nodes(cluster) -> None:
    cluster.node("node-a")


def app(name: str) -> dict:
    return {"applicationId": name}


def canary_binds_beside(cluster, poisoned: str, poisoned_app: str, canary_app: str = "canary") -> None:
    """Create the poisoned pod, then a canary; the canary is bound."""
    cluster.pod(poisoned, labels=app(poisoned_app))
    cluster.pod("canary", labels=app(canary_app))
    cluster.wait_bound("canary")


def assert_room_still_taken(cluster, http) -> None:
    """node-a (4 cpu) holds a 3 cpu pod: a 2 cpu pod finds no room there, a 500m one does."""
    cluster.pod("too-big", cpu="2", labels=app("big"))
    cluster.pod("fits", cpu="500m", labels=app("small"))
    cluster.wait_bound("fits")
    wait_for(lambda: cluster.events("FailedScheduling", "too-big"), message="the big pod found no room")
    assert not cluster.bound("too-big")
    cluster.assert_consistent()
    probes_pass(cluster, http)


def probes_pass(cluster, http) -> None:
    assert cluster.service.supervision.failures() == ()
    assert http.get("/ws/v1/health/live") == (200, {"alive": True})
    assert http.get("/ws/v1/health/ready")[0] == 200


def warned(cluster, reason: str, name: str) -> list:
    return wait_for(lambda: cluster.events(reason, name), timeout=10, message=f"a {reason} event on {name}")


def test_an_application_whose_actor_cannot_be_built_fails_alone(tmp_path, monkeypatch):
    poison_application_submit(monkeypatch)
    with served(tmp_path, nodes) as (cluster, http):
        canary_binds_beside(cluster, "poisoned", "poison")
        [event] = warned(cluster, "FailedScheduling", "poisoned")
        assert event.type == "Warning" and "Poisoned" in event.message
        cluster.pod("later", labels=app("later"))  # the context still routes
        cluster.wait_bound("later")
        assert not cluster.bound("poisoned")
        probes_pass(cluster, http)


def test_a_pod_whose_ask_raises_is_rejected_and_its_application_goes_on(tmp_path, monkeypatch):
    poison_task_ask(monkeypatch)
    with served(tmp_path, nodes) as (cluster, http):
        canary_binds_beside(cluster, "poison-task", "shared", "shared")  # one application: its actor goes on
        [event] = warned(cluster, "TaskRejected", "poison-task")
        assert event.type == "Warning" and "Poisoned" in event.message
        state = wait_for(lambda: {p.name: p.state for p in cluster.service.state().pods}.get("poison-task"))
        assert state == "Rejected" and not cluster.bound("poison-task")
        probes_pass(cluster, http)


def test_a_pod_the_informer_cannot_read_is_skipped_alone_and_logged_once(tmp_path, monkeypatch, caplog):
    poison_pod_parse(monkeypatch)
    caplog.set_level(logging.WARNING, logger="actors.shim.informer")
    with served(tmp_path, nodes) as (cluster, http):
        cluster.pod("unreadable", labels=app("unreadable"))
        for attempt in range(3):  # updates of the same object: read (and refused) again, logged once
            cluster.core_api.patch_namespaced_pod("unreadable", "default",
                                                  {"metadata": {"labels": {"attempt": str(attempt)}}})
        cluster.pod("canary", labels=app("canary"))
        cluster.wait_bound("canary")
        skipped = [r for r in caplog.records if "default/unreadable" in r.getMessage()]
        assert len(skipped) == 1 and "Poisoned" in skipped[0].getMessage()
        assert not cluster.bound("unreadable")
        probes_pass(cluster, http)


def test_an_application_the_core_cannot_add_is_rejected_and_the_partition_goes_on(tmp_path, monkeypatch):
    poison_core_application(monkeypatch)
    with served(tmp_path, nodes) as (cluster, http):
        canary_binds_beside(cluster, "poisoned", "poison-core")
        wait_for(lambda: cluster.pods()["poisoned"].get("status", {}).get("reason") == "ApplicationRejected",
                 message="the poisoned pod failed as rejected")
        [event] = warned(cluster, "ApplicationRejected", "poisoned")
        assert "Poisoned" in event.message
        cluster.pod("later", labels=app("later"))  # the partition still adds applications
        cluster.wait_bound("later")
        probes_pass(cluster, http)


def test_an_informer_that_dies_fails_liveness_naming_it_once(tmp_path, monkeypatch, caplog):
    with served(tmp_path, nodes) as (cluster, http):
        caplog.set_level(logging.ERROR)
        apply = Informer._apply

        def dying(self, store, batch, resource_version):
            if any(obj.get("metadata", {}).get("name") == "trigger" for _, obj in batch):
                raise Poisoned("an informer's pump broken outside any one object")
            return apply(self, store, batch, resource_version)

        monkeypatch.setattr(Informer, "_apply", dying)
        cluster.pod("trigger", labels=app("trigger"))
        wait_for(lambda: http.get("/ws/v1/health/live")[0] == 503, message="liveness to fail")
        assert http.get("/ws/v1/health/live") == (503, {"alive": False, "failedActors": ["Informer(pods)"]})
        status, ready = http.get("/ws/v1/health/ready")
        assert status == 503 and ready["failedActors"] == ["Informer(pods)"]
        health = http.ok("/ws/v1/scheduler/healthcheck")
        [actors] = [check for check in health["HealthChecks"] if check["Name"] == "Actors"]
        assert not health["Healthy"] and not actors["Succeeded"] and "Informer(pods)" in actors["DiagnosisMessage"]
        lines = [r.getMessage() for r in caplog.records if "Informer(pods)" in r.getMessage()]
        assert lines == ["actor Informer(pods) stopped by a failure: Poisoned(\"an informer's pump broken "
                         "outside any one object\")"]


def test_a_start_up_that_cannot_finish_fails_liveness_instead_of_staying_unready(cluster, monkeypatch):
    def broken(self):
        raise Poisoned("start-up broken outside any one object")

    monkeypatch.setattr(ShimContext, "_recover", broken)
    cluster.node("node-a")
    with pytest.raises(AssertionError):
        cluster.start_scheduler(running_timeout=3)
    failures = wait_for(cluster.service.supervision.failures, message="the context reported")
    assert [f.actor.split("(")[0] for f in failures] == ["ShimContext"] and "start-up broken" in failures[0].error


@pytest.mark.parametrize("poison", [poison_application_submit, poison_task_ask, poison_pod_parse,
                                    poison_core_application])
def test_a_restart_with_the_poison_present_comes_up_and_schedules_the_others(tmp_path, monkeypatch, poison):
    def poisoned_cluster(cluster) -> None:
        nodes(cluster)
        for name, app_id in (("poisoned", "poison"), ("poison-task", "shared"), ("unreadable", "unreadable"),
                             ("poisoned-core", "poison-core")):
            cluster.pod(name, labels=app(app_id))
        cluster.pod("canary-before", labels=app("shared"))

    poison(monkeypatch)
    with served(tmp_path, poisoned_cluster) as (cluster, http):  # served waits until it is Running
        cluster.wait_bound("canary-before")
        cluster.pod("canary-after", labels=app("after"))
        cluster.wait_bound("canary-after")
        probes_pass(cluster, http)


@pytest.mark.parametrize("when", ["at start", "while running"])
def test_a_running_pod_left_aside_still_holds_its_room_on_its_node(tmp_path, monkeypatch, when):
    poison_application_submit(monkeypatch)

    def bound_poison(cluster) -> None:
        cluster.pod("poisoned", cpu="3", node="node-a", labels=app("poison"))  # bound by someone else

    def prepare(cluster) -> None:
        nodes(cluster)  # node-a: 4 cpu
        if when == "at start":
            bound_poison(cluster)

    with served(tmp_path, prepare) as (cluster, http):
        if when == "while running":
            bound_poison(cluster)
            warned(cluster, "FailedScheduling", "poisoned")
        assert_room_still_taken(cluster, http)


@pytest.mark.parametrize("then", ["deleted", "listed again"])
def test_a_pod_that_becomes_unreadable_keeps_its_room_until_it_is_deleted(tmp_path, monkeypatch, caplog, then):
    monkeypatch.setattr(kinds, "parse_pod", raising_for(
        kinds.parse_pod, lambda raw: raw["metadata"].get("labels", {}).get("poison") == "yes"))
    caplog.set_level(logging.WARNING, logger="actors.shim.informer")
    with served(tmp_path, nodes) as (cluster, http):  # node-a: 4 cpu
        cluster.pod("holder", cpu="3", labels=app("holder"))
        cluster.wait_bound("holder")
        cluster.core_api.patch_namespaced_pod("holder", "default", {"metadata": {"labels": {"poison": "yes"}}})
        wait_for(lambda: any("default/holder" in r.getMessage() for r in caplog.records), message="holder skipped")
        if then == "deleted":
            cluster.core_api.delete_namespaced_pod("holder", "default")
        else:
            cluster.sim.faults.gone_next_watches(resource="pods")
            cluster.sim.faults.drop_watches()
            wait_for(lambda: [s for s in cluster.service.informer_status() if s.kind == "pods"][0].lists >= 2,
                     message="the pods listed again")
        cluster.pod("next", cpu="3", labels=app("next"))
        if then == "deleted":
            cluster.wait_bound("next")  # the room of the deleted pod was freed
        else:
            wait_for(lambda: cluster.events("FailedScheduling", "next"), message="no room for the next pod")
            assert not cluster.bound("next")
        cluster.assert_consistent()
        probes_pass(cluster, http)


NESTED = "[" * 5000 + "]" * 5000
HOSTILE_PODS = {  # (annotations, spec fields): the values of the findings, each of which stopped the scheduler
    "F1-policy": ({"yunikorn.apache.org/schedulingPolicyParameters": "placeholderTimeoutInSeconds=²",
                   "yunikorn.apache.org/task-groups": "[]"}, {}),
    "F2-user-info": ({"yunikorn.apache.org/user.info": NESTED}, {}),
    "F2-affinity": ({}, {"affinity": {"nodeAffinity": "everywhere"}}),
}  # F9's priority of 2**31 the API server refuses now, as kube-apiserver does: poison_task_ask stands in


def hostile_pod(cluster, name: str, finding: str, cpu: str = "100m", node: str = "") -> None:
    """Posted as raw JSON, as kubectl sends a manifest (the official client refuses some of these)."""
    annotations, spec = HOSTILE_PODS.get(finding, ({}, {}))  # "": an ordinary pod
    if node:
        spec = {**spec, "nodeName": node}
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": app(name), "annotations": annotations},
            "spec": {"schedulerName": "yunikorn", **spec,
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]}}
    request = urllib.request.Request(f"{cluster.sim.url}/api/v1/namespaces/default/pods", method="POST",
                                     data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201


@pytest.mark.parametrize("finding", HOSTILE_PODS)
def test_the_hostile_values_of_the_findings_stop_nothing_before_or_after_a_restart(tmp_path, finding):
    def hostile_cluster(cluster) -> None:
        nodes(cluster)
        hostile_pod(cluster, f"before-{finding.lower()}", finding)

    with served(tmp_path, hostile_cluster) as (cluster, http):
        hostile_pod(cluster, f"after-{finding.lower()}", finding)
        cluster.pod("canary", labels=app("canary"))
        cluster.wait_bound("canary")
        probes_pass(cluster, http)


def test_a_namespace_max_apps_that_is_no_number_stops_nothing(tmp_path):
    def hostile_namespace(cluster) -> None:
        nodes(cluster)
        cluster.sim.create_namespace("tenant", {"yunikorn.apache.org/namespace.maxApps": "²"})

    with served(tmp_path, hostile_namespace) as (cluster, http):
        cluster.pod("poisoned", namespace="tenant", labels=app("tenant-app"))
        canary_binds_beside(cluster, "poisoned-too", "tenant-app-2")
        probes_pass(cluster, http)


@pytest.mark.parametrize("when", ["at start", "while running"])
@pytest.mark.parametrize("cause", ["invalid", "its report raises"])
def test_a_running_pod_that_cannot_be_reported_as_ours_holds_its_room(tmp_path, monkeypatch, when, cause):
    if cause == "its report raises":
        monkeypatch.setattr(translate, "allocation", raising_for(
            translate.allocation, lambda pod, *_: pod.name == "hostile"))
    finding = "F2-user-info" if cause == "invalid" else ""

    def prepare(cluster) -> None:
        nodes(cluster)  # node-a: 4 cpu
        if when == "at start":
            hostile_pod(cluster, "hostile", finding, cpu="3", node="node-a")

    with served(tmp_path, prepare) as (cluster, http):
        if when == "while running":
            hostile_pod(cluster, "hostile", finding, cpu="3", node="node-a")
        assert_room_still_taken(cluster, http)
