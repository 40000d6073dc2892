"""The Job controller and the garbage collector, through the official client: a Job's pods, their
names, labels and owner references, its status through to Complete, a failing Job's backoff limit,
and what deleting an owner does to its dependents under each propagation policy."""

from __future__ import annotations

import json
import re

import pytest
from kubernetes import client

from kubesim import KubeSim
from tests.kubesim.raw import post
from tests.waiting import wait_for


@pytest.fixture
def core(sim_api):
    return client.CoreV1Api(sim_api)


def job(name: str, command: list[str], completions: int | None = 1, parallelism: int | None = None,
        backoff: int | None = None) -> dict:
    spec = {"template": {"metadata": {"labels": {"app": name}},
                         "spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "c", "image": "busybox", "command": command}]}}}
    for field, value in (("completions", completions), ("parallelism", parallelism), ("backoffLimit", backoff)):
        if value is not None:
            spec[field] = value
    return {"metadata": {"name": name}, "spec": spec}


def job_pods(sim, name: str) -> list[dict]:
    return [p for p in sim.objects("pods", "default")
            if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == name]


def run_marker_job(sim, api) -> None:
    """Make a Job and wait for its pod: by then the controllers left on have had their turn."""
    client.BatchV1Api(api).create_namespaced_job("default", {"metadata": {"name": "marker"}, "spec": {
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}})
    wait_for(lambda: sim.objects("pods"), timeout=5, message="the marker Job's pod")


def bind_all(sim, core) -> None:
    """Play a scheduler: bind every pending pod."""
    for pod in sim.objects("pods", "default"):
        if not pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp"):
            try:
                core.create_namespaced_pod_binding(pod["metadata"]["name"], "default", {
                    "metadata": {"name": pod["metadata"]["name"]}, "target": {"name": "node-00000"}},
                    _preload_content=False)
            except client.ApiException as error:
                if error.status not in (404, 409):
                    raise


def test_a_job_runs_parallel_pods_it_owns_until_its_completions(sim, batch, core):
    created = batch.create_namespaced_job("default", job("work", ["sleep", "10"], completions=4, parallelism=2))
    uid = created.metadata.uid
    assert created.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    assert (created.spec.backoff_limit, created.spec.completion_mode) == (6, "NonIndexed")
    wait_for(lambda: len(job_pods(sim, "work")) == 2, timeout=5, message="two pods at a time")
    pod = job_pods(sim, "work")[0]
    assert re.fullmatch(r"work-[bcdfghjklmnpqrstvwxz2456789]{5}", pod["metadata"]["name"])
    assert pod["metadata"]["labels"] == {"app": "work", "batch.kubernetes.io/controller-uid": uid,
                                         "batch.kubernetes.io/job-name": "work", "controller-uid": uid,
                                         "job-name": "work"}
    assert pod["metadata"]["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "Job", "name": "work",
                                                   "uid": uid, "controller": True, "blockOwnerDeletion": True}]
    wait_for(lambda: batch.read_namespaced_job_status("work", "default").status.active == 2, timeout=5,
             message="status: two active")

    def complete() -> bool:
        bind_all(sim, core)
        return any(c.type == "Complete" for c in batch.read_namespaced_job("work", "default").status.conditions or ())
    wait_for(complete, timeout=20, message="the job completes")
    status = batch.read_namespaced_job("work", "default").status
    assert (status.succeeded, status.active, status.failed, status.ready, status.terminating) == (4, None, None, 0, 0)
    assert [(c.type, c.status, c.reason) for c in status.conditions] == [
        ("SuccessCriteriaMet", "True", "CompletionsReached"), ("Complete", "True", "CompletionsReached")]
    assert status.start_time is not None and status.completion_time is not None
    assert len(job_pods(sim, "work")) == 4


def test_a_job_whose_pods_fail_stops_at_its_backoff_limit(sim, batch):
    batch.create_namespaced_job("default", job("flaky", ["false"], backoff=1))

    def fail_running() -> bool:
        for pod in job_pods(sim, "flaky"):
            if pod["status"].get("phase") == "Pending":
                sim.complete_pod("default", pod["metadata"]["name"], "Failed")
        return any(c.type == "Failed" for c in batch.read_namespaced_job("flaky", "default").status.conditions or ())
    wait_for(fail_running, timeout=10, message="the job fails")
    status = batch.read_namespaced_job("flaky", "default").status
    assert status.failed == 2 and status.active is None
    assert [(c.type, c.reason, c.message) for c in status.conditions] == [
        ("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]


def test_a_job_template_must_not_restart_always(batch, sim):
    body = job("bad", ["sleep", "1"])
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(client.ApiException) as refused:
        batch.create_namespaced_job("default", body)
    assert refused.value.status == 422
    assert json.loads(refused.value.body)["message"] == (
        'Job.batch "bad" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", '
        '"Never"')
    assert sim.objects("jobs") == []


def test_deleting_a_job_in_background_deletes_its_pods(sim, batch):
    batch.create_namespaced_job("default", job("bg", ["sleep", "100"], parallelism=3, completions=3))
    wait_for(lambda: len(job_pods(sim, "bg")) == 3, timeout=5, message="three pods")
    batch.delete_namespaced_job("bg", "default", propagation_policy="Background")
    assert sim.objects("jobs") == []
    wait_for(lambda: not job_pods(sim, "bg"), timeout=5, message="the job's pods are collected")


def test_deleting_a_job_by_default_orphans_its_pods_with_the_api_servers_warning(sim, batch):
    batch.create_namespaced_job("default", job("kept", ["sleep", "100"]))
    wait_for(lambda: len(job_pods(sim, "kept")) == 1, timeout=5, message="one pod")
    response = batch.delete_namespaced_job("kept", "default", _preload_content=False)
    assert response.headers["Warning"] == (
        '299 - "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to '
        'remove them or set propagationPolicy=Orphan to suppress this warning"')
    [pod] = job_pods(sim, "kept")
    assert "ownerReferences" not in pod["metadata"]


def test_a_foreground_deletion_keeps_the_owner_until_its_dependents_are_gone(sim, batch, core):
    batch.create_namespaced_job("default", job("fg", ["sleep", "100"]))
    wait_for(lambda: len(job_pods(sim, "fg")) == 1, timeout=5, message="one pod")
    bind_all(sim, core)  # on a node: the pod takes its grace period (30 s * 0.01) to go
    marked = json.loads(batch.delete_namespaced_job("fg", "default", propagation_policy="Foreground",
                                                    _preload_content=False).data)
    assert marked["metadata"]["finalizers"] == ["foregroundDeletion"] and marked["metadata"]["deletionTimestamp"]
    assert batch.read_namespaced_job("fg", "default").metadata.deletion_timestamp is not None
    wait_for(lambda: not sim.objects("jobs"), timeout=5, message="the job goes after its pod")
    assert job_pods(sim, "fg") == []


def test_placeholders_go_with_their_originator_and_dangling_dependents_are_collected(sim, core):
    originator = core.create_namespaced_pod("default", {"metadata": {"name": "driver"}, "spec": {
        "containers": [{"name": "c", "image": "busybox"}]}})
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "driver", "uid": originator.metadata.uid,
             "controller": False, "blockOwnerDeletion": True}
    for name in ("tg-0", "tg-1"):
        core.create_namespaced_pod("default", {"metadata": {"name": name, "ownerReferences": [owner]},
                                               "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    shared = core.create_namespaced_pod("default", {
        "metadata": {"name": "shared", "ownerReferences": [owner, {**owner, "name": "tg-0", "uid": "absent"}]},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    assert shared.metadata.name == "shared"
    core.create_namespaced_pod("default", {"metadata": {"name": "foreign", "ownerReferences": [
        {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication", "name": "spark", "uid": "spark-1"}]},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    core.delete_namespaced_pod("driver", "default")
    wait_for(lambda: {p["metadata"]["name"] for p in sim.objects("pods")} == {"foreign"}, timeout=5,
             message="the placeholders and the dangling dependent go; an owner of a kind kubesim lacks is kept")


def test_every_controller_can_be_switched_off():
    with KubeSim(job_controller=False, garbage_collector=False) as sim, sim.api_client() as api:
        client.BatchV1Api(api).create_namespaced_job("default", job("idle", ["sleep", "1"]))
        core = client.CoreV1Api(api)
        owner = core.create_namespaced_pod("default", {"metadata": {"name": "o"}, "spec": {
            "containers": [{"name": "c", "image": "busybox"}]}})
        core.create_namespaced_pod("default", {"metadata": {"name": "d", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "o", "uid": owner.metadata.uid}]},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        core.delete_namespaced_pod("o", "default")
        client.BatchV1Api(api).delete_namespaced_job("idle", "default", propagation_policy="Background")
        assert [p["metadata"]["name"] for p in sim.objects("pods")] == ["d"]


def test_a_delete_with_an_unknown_propagation_policy_is_refused(sim, core):
    core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "busybox"}]}})
    with pytest.raises(client.ApiException) as refused:
        core.delete_namespaced_pod("p", "default", propagation_policy="Sideways")
    assert refused.value.status == 422
    assert json.loads(refused.value.body)["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported '
        'values: "Foreground", "Background", "Orphan"')
    assert [p["metadata"]["name"] for p in sim.objects("pods")] == ["p"]


@pytest.mark.parametrize("template_meta", ["labels", {"labels": ["a"]}, {"annotations": {"a": 1}}])
def test_a_job_template_with_malformed_metadata_is_refused(sim, template_meta):
    body = job("bad", ["sleep", "1"])
    body["spec"]["template"]["metadata"] = template_meta
    status, answer = post(f"{sim.url}/apis/batch/v1/namespaces/default/jobs", body)
    assert status == 422 and "spec.template.metadata" in answer["message"]
    assert sim.objects("jobs") == []
