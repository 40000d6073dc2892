"""The StatefulSet controller, through the official client: pods ``<set>-0..N-1`` made in order (each once
the one before runs and is ready) or all at once under ``Parallel``, their labels, owner references,
host names and claims, scaling down from the top, a failed pod made again, a template change rolled out,
the status, validation, and the switch."""

from __future__ import annotations

import pytest
from kubernetes import client

from kubesim import KubeSim
from tests.kubesim.raw import post
from tests.kubesim.test_cronjobs import cron_job
from tests.kubesim.test_daemonsets import daemon_set
from tests.kubesim.test_jobs import bind_all, run_marker_job
from tests.waiting import wait_for

POD_NAME = "statefulset.kubernetes.io/pod-name"


def stateful_set(name: str, replicas: int = 3, image: str = "nginx", **spec) -> dict:
    return {"metadata": {"name": name},
            "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}, "annotations": {"note": "kept"}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}, **spec}}


def pod_names(sim, live: bool = True) -> list[str]:
    return sorted(p["metadata"]["name"] for p in sim.objects("pods", "default")
                  if not (live and p["metadata"].get("deletionTimestamp")))


def status_replicas(apps, name: str, count: int):
    return lambda: (apps.read_namespaced_stateful_set(name, "default").status.replicas or 0) == count


def all_ready(sim, apps, sim_core, name: str, count: int) -> None:
    def ready() -> bool:
        bind_all(sim, sim_core)
        return apps.read_namespaced_stateful_set(name, "default").status.ready_replicas == count
    wait_for(ready, timeout=10, message=f"{count} ready pods of {name}")


def test_pods_are_made_in_order_each_once_the_one_before_runs(sim, apps, sim_core):
    created = apps.create_namespaced_stateful_set("default", stateful_set("web"))
    assert (created.spec.pod_management_policy, created.spec.update_strategy.type,
            created.spec.update_strategy.rolling_update.partition) == ("OrderedReady", "RollingUpdate", 0)
    wait_for(status_replicas(apps, "web", 1), timeout=5, message="web-0 counted")
    assert pod_names(sim) == ["web-0"]  # web-1 waits for web-0 to run
    [pod] = sim.objects("pods")
    revision = apps.read_namespaced_stateful_set("web", "default").status.update_revision
    assert revision.startswith("web-")
    assert pod["metadata"]["labels"] == {"app": "web", POD_NAME: "web-0", "apps.kubernetes.io/pod-index": "0",
                                         "controller-revision-hash": revision}
    assert pod["metadata"]["annotations"] == {"note": "kept"}
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("web-0", "web")
    assert pod["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                                                   "uid": created.metadata.uid, "controller": True,
                                                   "blockOwnerDeletion": True}]

    def all_ready() -> bool:
        bind_all(sim, sim_core)
        status = apps.read_namespaced_stateful_set("web", "default").status
        return (status.replicas, status.ready_replicas, status.available_replicas, status.current_replicas,
                status.updated_replicas) == (3,) * 5
    wait_for(all_ready, timeout=10, message="three ready pods, made one after another")
    assert pod_names(sim) == ["web-0", "web-1", "web-2"]
    status = apps.read_namespaced_stateful_set("web", "default").status
    assert (status.current_revision, status.observed_generation, status.collision_count) == (revision, 1, 0)


def test_scaling_down_deletes_the_highest_ordinal_first_one_at_a_time(sim, apps, sim_core):
    apps.create_namespaced_stateful_set("default", stateful_set("web"))
    all_ready(sim, apps, sim_core, "web", 3)
    deleted = []
    sim.store.listeners.append(lambda event: deleted.append(event.new["metadata"]["name"])
                               if event.kind.plural == "pods" and event.type == "DELETED" else None)
    apps.patch_namespaced_stateful_set("web", "default", {"spec": {"replicas": 1}})
    wait_for(lambda: pod_names(sim, live=False) == ["web-0"], timeout=10, message="web-2, then web-1, gone")
    assert deleted == ["web-2", "web-1"]
    wait_for(status_replicas(apps, "web", 1), timeout=5, message="one replica counted")


def test_parallel_makes_every_pod_at_once_and_a_failed_pod_is_made_again(sim, apps):
    apps.create_namespaced_stateful_set("default", stateful_set("batch", podManagementPolicy="Parallel"))
    wait_for(lambda: pod_names(sim) == ["batch-0", "batch-1", "batch-2"], timeout=5,
             message="three pods though none runs")
    first = next(p for p in sim.objects("pods") if p["metadata"]["name"] == "batch-1")
    sim.complete_pod("default", "batch-1", "Failed")
    wait_for(lambda: any(p["metadata"]["name"] == "batch-1" and p["metadata"]["uid"] != first["metadata"]["uid"]
                         for p in sim.objects("pods")), timeout=5, message="batch-1 made again")


def test_claim_templates_give_each_pod_its_own_claim(sim, apps, sim_core):
    body = stateful_set("db", replicas=2, podManagementPolicy="Parallel", volumeClaimTemplates=[{
        "metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                               "resources": {"requests": {"storage": "1Gi"}}}}])
    apps.create_namespaced_stateful_set("default", body)
    wait_for(lambda: pod_names(sim) == ["db-0", "db-1"], timeout=5, message="two pods")
    claims = {c.metadata.name: c for c in sim_core.list_namespaced_persistent_volume_claim("default").items}
    assert sorted(claims) == ["data-db-0", "data-db-1"]
    assert claims["data-db-0"].metadata.labels == {"app": "db"}
    pod = sim_core.read_namespaced_pod("db-0", "default")
    assert [(v.name, v.persistent_volume_claim.claim_name) for v in pod.spec.volumes] == [("data", "data-db-0")]


def test_a_template_change_replaces_the_pods_from_the_highest_ordinal(sim, apps, sim_core):
    apps.create_namespaced_stateful_set("default", stateful_set("web", replicas=2))
    all_ready(sim, apps, sim_core, "web", 2)
    old = apps.read_namespaced_stateful_set("web", "default").status.current_revision
    replaced = []
    sim.store.listeners.append(lambda event: replaced.append(event.new["metadata"]["name"])
                               if event.kind.plural == "pods" and event.type == "DELETED" else None)
    apps.patch_namespaced_stateful_set("web", "default", {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "nginx:2"}]}}}})

    def rolled_out() -> bool:
        bind_all(sim, sim_core)
        status = apps.read_namespaced_stateful_set("web", "default").status
        return status.updated_replicas == 2 and status.ready_replicas == 2 and status.current_revision != old
    wait_for(rolled_out, timeout=15, message="both pods replaced with the new template")
    assert replaced == ["web-1", "web-0"]
    assert {p["spec"]["containers"][0]["image"] for p in sim.objects("pods")} == {"nginx:2"}


@pytest.mark.parametrize(("spec", "message"), [
    ({"selector": None}, "spec.selector: Required value"),
    ({"selector": {}}, "spec.selector: Invalid value: {}: empty selector is invalid for statefulset"),
    ({"selector": {"matchLabels": {"app": "other"}}}, "`selector` does not match template `labels`"),
    ({"podManagementPolicy": "Random"}, 'spec.podManagementPolicy: Unsupported value: "Random"'),
    ({"replicas": -1}, "spec.replicas: Invalid value: -1"),
    ({"ordinals": {"start": -1}}, "spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0"),
    ({"updateStrategy": {"type": "Sometimes"}}, 'spec.updateStrategy.type: Unsupported value: "Sometimes"'),
    ({"volumeClaimTemplates": [{"spec": {}}]}, "spec.volumeClaimTemplates[0].metadata.name: Required value"),
])
def test_an_invalid_statefulset_is_refused_and_nothing_is_made(sim, spec, message):
    body = stateful_set("web")
    body["spec"].update(spec)
    body["spec"] = {k: v for k, v in body["spec"].items() if v is not None}
    status, answer = post(f"{sim.url}/apis/apps/v1/namespaces/default/statefulsets", body)
    assert (status, answer["reason"]) == (422, "Invalid")
    assert answer["message"].startswith('StatefulSet.apps "web" is invalid: ') and message in answer["message"]
    assert sim.objects("statefulsets") == [] and sim.objects("pods") == []


@pytest.mark.parametrize(("spec", "message"), [
    ({"updateStrategy": {"rollingUpdate": {"partition": "1"}}}, "cannot unmarshal string into Go struct field "
     "RollingUpdateStatefulSetStrategy.spec.updateStrategy.rollingUpdate.partition of type int32"),
    ({"volumeClaimTemplates": ["data"]}, "cannot unmarshal string into Go struct field "
     "StatefulSetSpec.spec.volumeClaimTemplates of type v1.PersistentVolumeClaim"),
    ({"template": {"metadata": "web", "spec": {}}}, "cannot unmarshal string into Go struct field "
     "PodTemplateSpec.spec.template.metadata of type v1.ObjectMeta"),
])
def test_a_statefulset_that_cannot_be_decoded_is_refused_with_400(sim, spec, message):
    body = stateful_set("web")
    body["spec"].update(spec)
    status, answer = post(f"{sim.url}/apis/apps/v1/namespaces/default/statefulsets", body)
    assert (status, answer["reason"]) == (400, "BadRequest")
    assert answer["message"] == f'StatefulSet in version "v1" cannot be handled as a StatefulSet: json: {message}'
    assert sim.objects("statefulsets") == []


@pytest.mark.parametrize("switch", ["statefulset_controller", "daemonset_controller", "cronjob_controller"])
def test_each_workload_controller_is_switched_off(switch):
    with KubeSim(time_factor=0.001, **{switch: False}) as sim, sim.api_client() as api:
        sim.seed_nodes(1)
        apps, batch = client.AppsV1Api(api), client.BatchV1Api(api)
        made = {"statefulset_controller": lambda: apps.create_namespaced_stateful_set("default", stateful_set("web")),
                "daemonset_controller": lambda: apps.create_namespaced_daemon_set("default", daemon_set("agent")),
                "cronjob_controller": lambda: batch.create_namespaced_cron_job("default", cron_job("tick"))}
        made[switch]()
        run_marker_job(sim, api)
        assert [p["metadata"]["name"].startswith("marker-") for p in sim.objects("pods")] == [True]
        assert [j["metadata"]["name"] for j in sim.objects("jobs")] == ["marker"]
