"""The DaemonSet controller, through the official client: one pod per node the template admits (node
selector, required node affinity, taints against its tolerations and those every daemon pod gets), each
pinned to its node by the required affinity on ``metadata.name``, nodes coming and going, a failed pod
made again, the status, validation, and the switch."""

from __future__ import annotations

import pytest

from kubesim.daemonsets import target_node
from kubesim.resources import NODE
from tests.kubesim.raw import post
from tests.waiting import wait_for


def daemon_set(name: str, **pod_spec) -> dict:
    return {"metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "agent"}], **pod_spec}}}}


def targets(sim, live: bool = True) -> dict[str, str]:
    """The node each pod is for, by pod name (as the controller reads it; the first test checks the affinity)."""
    return {pod["metadata"]["name"]: target_node(pod) for pod in sim.objects("pods", "default")
            if not (live and pod["metadata"].get("deletionTimestamp")) and target_node(pod)}


def add_node(sim, name: str, labels: dict | None = None, taints: list | None = None) -> None:
    sim.store.create(NODE, "", {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
                                "spec": {"taints": taints or []}, "status": {}})


def test_one_pod_per_node_each_pinned_by_required_node_affinity(sim, apps):
    created = apps.create_namespaced_daemon_set("default", daemon_set("agent"))
    assert created.spec.update_strategy.type == "RollingUpdate"
    wait_for(lambda: sorted(targets(sim).values()) == ["node-00000", "node-00001"], timeout=5,
             message="a pod for each node")
    pod = sim.objects("pods")[0]
    assert pod["metadata"]["name"].startswith("agent-") and len(pod["metadata"]["name"]) == len("agent-") + 5
    assert pod["metadata"]["labels"]["app"] == "agent"
    assert pod["metadata"]["labels"]["pod-template-generation"] == "1"
    assert "controller-revision-hash" in pod["metadata"]["labels"]
    assert pod["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                                   "uid": created.metadata.uid, "controller": True,
                                                   "blockOwnerDeletion": True}]
    assert pod["spec"]["affinity"] == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                "values": [targets(sim)[pod["metadata"]["name"]]]}]}]}}}
    assert "nodeName" not in pod["spec"]  # the scheduler binds it
    assert {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]} == {
        ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"), ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unschedulable", "NoSchedule")}


def test_the_template_chooses_the_nodes(sim, apps):
    add_node(sim, "gpu-0", labels={"gpu": "yes"}, taints=[{"key": "gpu", "value": "only", "effect": "NoSchedule"}])
    add_node(sim, "gpu-1", labels={"gpu": "yes"})
    add_node(sim, "cordoned", labels={"gpu": "yes"},
             taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}])
    apps.create_namespaced_daemon_set("default", daemon_set("by-selector", nodeSelector={"gpu": "yes"}))
    apps.create_namespaced_daemon_set("default", daemon_set("tolerant", tolerations=[
        {"key": "gpu", "operator": "Equal", "value": "only", "effect": "NoSchedule"}], affinity={"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "gpu", "operator": "In", "values": ["yes"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [
                {"key": "gpu", "operator": "Exists"}]}}]}}))

    def placed(prefix: str) -> list[str]:
        return sorted(node for pod, node in targets(sim).items() if pod.startswith(prefix + "-"))
    wait_for(lambda: placed("by-selector") == ["cordoned", "gpu-1"]
             and placed("tolerant") == ["cordoned", "gpu-0", "gpu-1"], timeout=5,
             message="pods only where the selector, the affinity and the taints allow")
    tolerant = next(p for p in sim.objects("pods") if p["metadata"]["name"].startswith("tolerant-"))
    node_affinity = tolerant["spec"]["affinity"]["nodeAffinity"]  # the required terms replaced, the rest kept
    assert node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0].keys() == {
        "matchFields"}
    assert node_affinity["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"] == 1


def test_nodes_coming_and_going_and_a_failed_pod(sim, apps, sim_core):
    apps.create_namespaced_daemon_set("default", daemon_set("agent"))
    wait_for(lambda: len(targets(sim)) == 2, timeout=5, message="two pods")
    add_node(sim, "late")
    wait_for(lambda: "late" in targets(sim).values(), timeout=5, message="a pod for the new node")
    sim_core.delete_node("node-00001")
    wait_for(lambda: sorted(targets(sim).values()) == ["late", "node-00000"], timeout=5,
             message="the gone node's pod deleted")
    sim_core.patch_node("late", {"spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoExecute"}]}})
    wait_for(lambda: sorted(targets(sim).values()) == ["node-00000"], timeout=5,
             message="the pod of a node it no longer tolerates deleted")
    [(failed, _)] = targets(sim).items()
    sim.complete_pod("default", failed, "Failed")
    wait_for(lambda: list(targets(sim).values()) == ["node-00000"] and failed not in targets(sim, live=False),
             timeout=5, message="the failed pod replaced")


def test_the_status_counts_the_pods_as_they_run(sim, apps, sim_core):
    apps.create_namespaced_daemon_set("default", daemon_set("agent"))
    wait_for(lambda: len(targets(sim)) == 2, timeout=5, message="two pods")
    status = apps.read_namespaced_daemon_set("agent", "default").status
    assert (status.desired_number_scheduled, status.current_number_scheduled, status.number_ready,
            status.number_misscheduled, status.number_unavailable) == (2, 2, 0, 0, 2)
    for pod, node in targets(sim).items():
        sim_core.create_namespaced_pod_binding(pod, "default", {"metadata": {"name": pod}, "target": {"name": node}},
                                           _preload_content=False)

    def counted() -> bool:
        status = apps.read_namespaced_daemon_set("agent", "default").status
        return (status.number_ready, status.number_available, status.updated_number_scheduled,
                status.number_unavailable) == (2, 2, 2, None)
    wait_for(counted, timeout=5, message="two ready, available and updated pods")


@pytest.mark.parametrize(("spec", "message"), [
    ({"selector": None}, "spec.selector: Required value"),
    ({"selector": {}}, "spec.selector: Invalid value: {}: empty selector is invalid for daemonset"),
    ({"selector": {"matchLabels": {"app": "other"}}}, "`selector` does not match template `labels`"),
    ({"template": None}, "spec.template.spec: Required value"),
])
def test_an_invalid_daemonset_is_refused_and_nothing_is_made(sim, spec, message):
    body = daemon_set("agent")
    body["spec"].update(spec)
    body["spec"] = {k: v for k, v in body["spec"].items() if v is not None}
    status, answer = post(f"{sim.url}/apis/apps/v1/namespaces/default/daemonsets", body)
    assert (status, answer["reason"]) == (422, "Invalid")
    assert answer["message"].startswith('DaemonSet.apps "agent" is invalid: ') and message in answer["message"]
    assert sim.objects("daemonsets") == [] and sim.objects("pods") == []


@pytest.mark.parametrize(("pod_spec", "message"), [
    ({"nodeSelector": ["gpu"]}, "array into Go struct field PodSpec.spec.template.spec.nodeSelector of type "
     "map[string]string"),
    ({"nodeSelector": {"gpu": True}}, "bool into Go struct field PodSpec.spec.template.spec.nodeSelector of type "
     "string"),
    ({"tolerations": [1]}, "number 1 into Go struct field PodSpec.spec.template.spec.tolerations of type "
     "v1.Toleration"),
    ({"affinity": {"nodeAffinity": "gpu"}}, "string into Go struct field Affinity.spec.template.spec.affinity."
     "nodeAffinity of type v1.NodeAffinity"),
])
def test_a_daemonset_that_cannot_be_decoded_is_refused_with_400(sim, pod_spec, message):
    status, answer = post(f"{sim.url}/apis/apps/v1/namespaces/default/daemonsets", daemon_set("agent", **pod_spec))
    assert (status, answer["reason"]) == (400, "BadRequest")
    assert answer["message"] == f'DaemonSet in version "v1" cannot be handled as a DaemonSet: json: cannot unmarshal ' \
                                f"{message}"
    assert sim.objects("daemonsets") == [] and sim.objects("pods") == []


def test_a_hostile_pod_claiming_a_daemonset_does_not_stop_it(sim, apps):
    created = apps.create_namespaced_daemon_set("default", daemon_set("agent"))
    wait_for(lambda: len(targets(sim)) == 2, timeout=5, message="two pods")
    status, _ = post(f"{sim.url}/api/v1/namespaces/default/pods", {"metadata": {
        "name": "odd", "labels": {"app": "agent"}, "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": created.metadata.uid,
             "controller": True}]}, "spec": {"containers": [{"name": "c", "image": "x"}], "affinity": {
                 "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": ["odd"]}}}}})
    assert status == 201
    add_node(sim, "late")
    wait_for(lambda: "late" in targets(sim).values(), timeout=5, message="a pod for a new node all the same")
