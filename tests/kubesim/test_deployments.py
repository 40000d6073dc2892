"""The Deployment and ReplicaSet controllers, through the official client: a Deployment's ReplicaSet and
its pods (names, labels, owner references), replacement of deleted and failed pods, scaling, a template
change rolled out, the status counts, validation, deletion, and the switches."""

from __future__ import annotations

import re

import pytest
from kubernetes import client

from kubesim import KubeSim
from tests.kubesim.test_jobs import bind_all, run_marker_job
from tests.waiting import wait_for


@pytest.fixture
def core(sim_api):
    return client.CoreV1Api(sim_api)


def deployment(name: str, replicas: int = 3, image: str = "nginx") -> dict:
    return {"metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}, "annotations": {"note": "kept"}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def pods_of(sim, app: str, live: bool = True) -> list[dict]:
    return [p for p in sim.objects("pods", "default") if (p["metadata"].get("labels") or {}).get("app") == app
            and not (live and (p["metadata"].get("deletionTimestamp")
                               or p.get("status", {}).get("phase") in ("Succeeded", "Failed")))]


def running(sim, core, app: str, count: int) -> None:
    def all_run() -> bool:
        bind_all(sim, core)
        pods = pods_of(sim, app)
        return len(pods) == count and all(p["status"].get("phase") == "Running" for p in pods)
    wait_for(all_run, timeout=10, message=f"{count} pods of {app} Running")


def test_a_deployment_makes_a_hashed_replicaset_which_makes_its_pods(sim, apps, core):
    created = apps.create_namespaced_deployment("default", deployment("web"))
    assert (created.spec.strategy.type, created.spec.revision_history_limit) == ("RollingUpdate", 10)
    wait_for(lambda: len(pods_of(sim, "web")) == 3, timeout=5, message="three pods")
    [replica_set] = apps.list_namespaced_replica_set("default").items
    template_hash = replica_set.metadata.labels["pod-template-hash"]
    assert re.fullmatch(r"[bcdfghjklmnpqrstvwxz2456789]{1,10}", template_hash)
    assert replica_set.metadata.name == f"web-{template_hash}"
    assert replica_set.spec.selector.match_labels == {"app": "web", "pod-template-hash": template_hash}
    assert replica_set.metadata.annotations["deployment.kubernetes.io/revision"] == "1"
    [owner] = replica_set.metadata.owner_references
    assert (owner.api_version, owner.kind, owner.name, owner.uid, owner.controller, owner.block_owner_deletion) == (
        "apps/v1", "Deployment", "web", created.metadata.uid, True, True)
    for pod in pods_of(sim, "web"):
        assert re.fullmatch(rf"web-{template_hash}-[bcdfghjklmnpqrstvwxz2456789]{{5}}", pod["metadata"]["name"])
        assert pod["metadata"]["labels"] == {"app": "web", "pod-template-hash": template_hash}
        assert pod["metadata"]["annotations"] == {"note": "kept"}
        assert pod["metadata"]["ownerReferences"] == [{
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replica_set.metadata.name,
            "uid": replica_set.metadata.uid, "controller": True, "blockOwnerDeletion": True}]
    running(sim, core, "web", 3)

    def complete() -> bool:
        status = apps.read_namespaced_deployment("web", "default").status
        return (status.replicas, status.ready_replicas, status.available_replicas, status.updated_replicas) == (3,) * 4
    wait_for(complete, timeout=5, message="the Deployment's status counts three of each")
    status = apps.read_namespaced_deployment("web", "default").status
    assert status.observed_generation == 1 and status.unavailable_replicas is None
    conditions = {c.type: (c.status, c.reason) for c in status.conditions}
    assert conditions == {"Available": ("True", "MinimumReplicasAvailable"),
                          "Progressing": ("True", "NewReplicaSetAvailable")}
    rs_status = apps.read_namespaced_replica_set(replica_set.metadata.name, "default").status
    assert (rs_status.replicas, rs_status.ready_replicas, rs_status.available_replicas,
            rs_status.fully_labeled_replicas) == (3, 3, 3, 3)


def test_a_replicaset_replaces_deleted_evicted_and_failed_pods(sim, apps, core):
    apps.create_namespaced_deployment("default", deployment("web"))
    running(sim, core, "web", 3)
    first, second, third = sorted(p["metadata"]["name"] for p in pods_of(sim, "web"))
    core.delete_namespaced_pod(first, "default")
    core.create_namespaced_pod_eviction(second, "default", {"metadata": {"name": second, "namespace": "default"}})
    sim.complete_pod("default", third, "Failed")
    running(sim, core, "web", 3)
    assert not {first, second, third} & {p["metadata"]["name"] for p in pods_of(sim, "web")}
    failed = [p for p in pods_of(sim, "web", live=False) if p["status"].get("phase") == "Failed"]
    assert [p["metadata"]["name"] for p in failed] == [third]  # left for the pod GC, as the controller does


def test_scaling_a_deployment_scales_its_replicaset_unscheduled_pods_going_first(sim, apps, core):
    apps.create_namespaced_deployment("default", deployment("web", replicas=2))
    running(sim, core, "web", 2)
    scheduled = {p["metadata"]["name"] for p in pods_of(sim, "web")}
    apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 4}})
    wait_for(lambda: len(pods_of(sim, "web")) == 4, timeout=5, message="four pods")
    apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 2}})
    wait_for(lambda: len(pods_of(sim, "web")) == 2, timeout=5, message="back to two pods")
    assert {p["metadata"]["name"] for p in pods_of(sim, "web")} == scheduled
    [replica_set] = apps.list_namespaced_replica_set("default").items
    assert replica_set.spec.replicas == 2


def test_a_template_change_rolls_out_a_new_replicaset_once_the_old_pods_are_gone(sim, apps, core):
    apps.create_namespaced_deployment("default", deployment("web", replicas=2))
    running(sim, core, "web", 2)
    [old] = apps.list_namespaced_replica_set("default").items
    apps.patch_namespaced_deployment("web", "default", {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "image": "nginx:2"}]}}}})

    def rolled_out() -> bool:
        bind_all(sim, core)
        pods = pods_of(sim, "web")
        return len(pods) == 2 and all(p["spec"]["containers"][0]["image"] == "nginx:2"
                                      and p["status"].get("phase") == "Running" for p in pods)
    wait_for(rolled_out, timeout=10, message="two pods of the new template Running")
    sets = {rs.metadata.name: rs for rs in apps.list_namespaced_replica_set("default").items}
    assert sets[old.metadata.name].spec.replicas == 0
    [new] = [rs for name, rs in sets.items() if name != old.metadata.name]
    assert new.metadata.annotations["deployment.kubernetes.io/revision"] == "2"
    assert {p["metadata"]["labels"]["pod-template-hash"] for p in pods_of(sim, "web")} == {
        new.metadata.labels["pod-template-hash"]}


def test_deleting_a_deployment_collects_its_replicaset_and_pods(sim, apps, core):
    apps.create_namespaced_deployment("default", deployment("web", replicas=2))
    wait_for(lambda: len(pods_of(sim, "web")) == 2, timeout=5, message="two pods")
    apps.delete_namespaced_deployment("web", "default")
    wait_for(lambda: not sim.objects("replicasets") and not pods_of(sim, "web", live=False), timeout=5,
             message="the ReplicaSet and its pods collected")


@pytest.mark.parametrize("spec, field", [
    ({"replicas": -1}, "spec.replicas"),
    ({"selector": {"matchLabels": {"app": "other"}}}, "spec.template.metadata.labels"),
    ({"selector": {}}, "empty selector is invalid"),
    ({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}],
                                                                     "restartPolicy": "Never"}}},
     "spec.template.spec.restartPolicy"),
])
def test_an_invalid_deployment_is_refused_and_nothing_is_made(sim, apps, spec, field):
    body = deployment("web")
    body["spec"].update(spec)
    with pytest.raises(client.ApiException) as raised:
        apps.create_namespaced_deployment("default", body)
    assert raised.value.status == 422 and field in raised.value.body
    assert sim.objects("deployments") == [] and sim.objects("replicasets") == []


def test_a_replicaset_alone_keeps_its_replicas(sim, apps, core):
    body = deployment("solo", replicas=2)
    apps.create_namespaced_replica_set("default", body)
    running(sim, core, "solo", 2)
    assert all(p["metadata"]["name"].startswith("solo-") for p in pods_of(sim, "solo"))
    wait_for(lambda: apps.read_namespaced_replica_set("solo", "default").status.ready_replicas == 2, timeout=5,
             message="two ready replicas")


def test_the_controllers_are_switched_off():
    with KubeSim(deployment_controller=False, replicaset_controller=False) as sim, sim.api_client() as api:
        apps = client.AppsV1Api(api)
        apps.create_namespaced_deployment("default", deployment("web"))
        apps.create_namespaced_replica_set("default", deployment("solo"))
        run_marker_job(sim, api)
        assert [rs["metadata"]["name"] for rs in sim.objects("replicasets")] == ["solo"]
        assert [p["metadata"]["name"].startswith("marker-") for p in sim.objects("pods")] == [True]

