"""kubesim through the official client: CRUD, concurrency control, patches, status, errors."""

import json
import urllib.error
import urllib.request

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from kubesim.patch import STRATEGIC


def pod(name, labels=None, **spec):
    return {"metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def status_of(error: ApiException) -> dict:
    return json.loads(error.body)


def test_create_get_list_delete_pod(core):
    created = core.create_namespaced_pod("default", pod("p1"))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.metadata.generation == 1
    assert created.status.phase == "Pending"
    assert core.read_namespaced_pod("p1", "default").metadata.uid == created.metadata.uid
    listed = core.list_namespaced_pod("default")
    assert [p.metadata.name for p in listed.items] == ["p1"]
    assert int(listed.metadata.resource_version) >= int(created.metadata.resource_version)
    core.delete_namespaced_pod("p1", "default")
    with pytest.raises(ApiException) as error:
        core.read_namespaced_pod("p1", "default")
    assert error.value.status == 404
    assert status_of(error.value)["reason"] == "NotFound"
    assert status_of(error.value)["message"] == 'pods "p1" not found'


def test_resource_version_is_cluster_wide_and_monotonic(core):
    versions = [int(core.create_namespaced_pod("default", pod(f"p{i}")).metadata.resource_version) for i in range(3)]
    versions.append(int(core.create_namespaced_config_map("default", {"metadata": {"name": "c"}}).metadata.resource_version))
    assert versions == sorted(versions) and len(set(versions)) == 4


def test_already_exists(core):
    core.create_namespaced_pod("default", pod("p1"))
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod("default", pod("p1"))
    assert error.value.status == 409
    assert status_of(error.value)["reason"] == "AlreadyExists"
    assert status_of(error.value)["message"] == 'pods "p1" already exists'


def test_generate_name(core):
    created = core.create_namespaced_pod("default", {"metadata": {"generateName": "job-"},
                                                     "spec": {"containers": [{"name": "c", "image": "i"}]}})
    assert created.metadata.name.startswith("job-") and len(created.metadata.name) > 4


@pytest.mark.parametrize(("body", "field"), [
    ({"metadata": {}, "spec": {"containers": [{"name": "c", "image": "i"}]}}, "metadata.name"),
    ({"metadata": {"name": "Bad_Name"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}, "metadata.name"),
    ({"metadata": {"name": "p"}, "spec": {"containers": []}}, "spec.containers"),
    ({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, "spec.containers[0].image"),
])
def test_invalid_objects_are_422(core, body, field):
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod("default", body)
    assert error.value.status == 422
    status = status_of(error.value)
    assert status["reason"] == "Invalid" and field in status["message"]
    assert core.list_namespaced_pod("default").items == []


def test_create_in_a_missing_namespace_is_404(core):
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod("nowhere", pod("p1"))
    assert error.value.status == 404
    assert status_of(error.value)["message"] == 'namespaces "nowhere" not found'


def test_stale_resource_version_put_is_a_conflict(core):
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    first = core.read_namespaced_config_map("cm", "default")
    first.data = {"a": "2"}
    core.replace_namespaced_config_map("cm", "default", first)
    stale = created
    stale.data = {"a": "3"}
    with pytest.raises(ApiException) as error:
        core.replace_namespaced_config_map("cm", "default", stale)
    assert error.value.status == 409
    assert status_of(error.value)["reason"] == "Conflict"
    assert "the object has been modified" in status_of(error.value)["message"]
    assert core.read_namespaced_config_map("cm", "default").data == {"a": "2"}


def test_a_no_op_write_keeps_the_resource_version(core):
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    again = core.replace_namespaced_config_map("cm", "default", created)
    assert again.metadata.resource_version == created.metadata.resource_version


def test_pod_spec_is_immutable_except_through_binding(core):
    created = core.create_namespaced_pod("default", pod("p1"))
    created.spec.node_name = "node-x"
    with pytest.raises(ApiException) as error:
        core.replace_namespaced_pod("p1", "default", created)
    assert error.value.status == 422 and "Forbidden" in status_of(error.value)["message"]
    fresh = core.read_namespaced_pod("p1", "default")
    fresh.spec.containers[0].image = "busybox:2"
    assert core.replace_namespaced_pod("p1", "default", fresh).spec.containers[0].image == "busybox:2"


def test_status_is_ignored_on_the_main_resource_and_spec_on_status(core):
    core.create_namespaced_pod("default", pod("p1"))
    core.patch_namespaced_pod("p1", "default", {"status": {"phase": "Running"}})
    assert core.read_namespaced_pod("p1", "default").status.phase == "Pending"
    core.patch_namespaced_pod_status("p1", "default", {"status": {"phase": "Running"},
                                                       "metadata": {"labels": {"x": "y"}}})
    after = core.read_namespaced_pod("p1", "default")
    assert after.status.phase == "Running" and not after.metadata.labels


def test_three_patch_kinds(core):
    core.create_namespaced_pod("default", pod("p1", labels={"a": "1", "b": "2"}))
    # A dict body is a strategic merge patch.
    core.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"a": "9", "b": None}}})
    assert core.read_namespaced_pod("p1", "default").metadata.labels == {"a": "9"}
    # A list body is a JSON patch.
    core.patch_namespaced_pod("p1", "default", [{"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}},
                                                {"op": "replace", "path": "/metadata/labels/a", "value": "10"}])
    after = core.read_namespaced_pod("p1", "default")
    assert after.metadata.annotations == {"k": "v"} and after.metadata.labels == {"a": "10"}
    # Merge patch by content type.
    core.patch_namespaced_pod("p1", "default", {"metadata": {"annotations": {"k": None, "m": "n"}}},
                              _content_type="application/merge-patch+json")
    assert core.read_namespaced_pod("p1", "default").metadata.annotations == {"m": "n"}


def test_strategic_merge_merges_conditions_by_type(core):
    core.create_namespaced_pod("default", pod("p1"))
    core.patch_namespaced_pod_status("p1", "default", {"status": {"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}})
    core.patch_namespaced_pod_status("p1", "default", {"status": {"conditions": [
        {"type": "Ready", "status": "False"}]}})
    conditions = {c.type: c.status for c in core.read_namespaced_pod("p1", "default").status.conditions}
    assert conditions == {"PodScheduled": "False", "Ready": "False"}


def test_a_failing_json_patch_changes_nothing(core):
    created = core.create_namespaced_pod("default", pod("p1", labels={"a": "1"}))
    with pytest.raises(ApiException) as error:
        core.patch_namespaced_pod("p1", "default", [{"op": "replace", "path": "/metadata/labels/a", "value": "2"},
                                                    {"op": "remove", "path": "/metadata/nothing/here"}])
    assert error.value.status == 422
    after = core.read_namespaced_pod("p1", "default")
    assert after.metadata.labels == {"a": "1"}
    assert after.metadata.resource_version == created.metadata.resource_version


def test_binding_sets_node_and_condition_and_refuses_a_second_bind(core):
    core.create_namespaced_pod("default", pod("p1"))
    response = core.create_namespaced_pod_binding("p1", "default", {"metadata": {"name": "p1"},
                                                                     "target": {"name": "n1"}},
                                                  _preload_content=False)
    assert response.status == 201 and json.loads(response.data)["status"] == "Success"
    bound = core.read_namespaced_pod("p1", "default")
    assert bound.spec.node_name == "n1"
    assert [(c.type, c.status) for c in bound.status.conditions] == [("PodScheduled", "True")]
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod_binding("p1", "default", {"metadata": {"name": "p1"}, "target": {"name": "n2"}},
                                           _preload_content=False)
    assert error.value.status == 409
    assert 'pod p1 is already assigned to node "n1"' in status_of(error.value)["message"]
    with pytest.raises(ApiException) as missing:
        core.create_namespaced_pod_binding("nope", "default", {"metadata": {"name": "nope"},
                                                               "target": {"name": "n1"}}, _preload_content=False)
    assert missing.value.status == 404


def test_eviction_deletes_the_pod(core):
    core.create_namespaced_pod("default", pod("p1"))
    core.create_namespaced_pod_eviction("p1", "default", {"metadata": {"name": "p1", "namespace": "default"}},
                                        _preload_content=False)
    assert core.list_namespaced_pod("default").items == []


def test_nodes_and_status(kubesim, core):
    kubesim.seed_nodes(2, cpu="4", memory="8Gi")
    nodes = core.list_node().items
    assert [n.metadata.name for n in nodes] == ["node-00000", "node-00001"]
    assert nodes[0].status.allocatable == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    core.patch_node("node-00000", {"spec": {"unschedulable": True}})
    assert core.read_node("node-00000").spec.unschedulable is True
    core.patch_node_status("node-00000", {"status": {"allocatable": {"cpu": "2"}}})
    assert core.read_node("node-00000").status.allocatable["cpu"] == "2"


def test_other_kinds(kube_api):
    core = client.CoreV1Api(kube_api)
    core.create_namespace({"metadata": {"name": "team-a", "annotations": {"k": "v"}}})
    assert core.read_namespace("team-a").status.phase == "Active"
    core.create_namespaced_secret("team-a", {"metadata": {"name": "s"}, "data": {"k": "dg=="}})
    core.create_namespaced_service("team-a", {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}})
    core.create_namespaced_event("team-a", {"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p"},
                                            "reason": "Scheduled", "message": "m", "type": "Normal"})
    assert [e.reason for e in core.list_namespaced_event("team-a").items] == ["Scheduled"]
    scheduling = client.SchedulingV1Api(kube_api)
    scheduling.create_priority_class({"metadata": {"name": "high"}, "value": 1000})
    assert scheduling.read_priority_class("high").value == 1000
    admission = client.AdmissionregistrationV1Api(kube_api)
    hook = {"metadata": {"name": "m"}, "webhooks": [{"name": "a.b.c", "sideEffects": "None",
                                                     "admissionReviewVersions": ["v1"],
                                                     "clientConfig": {"caBundle": "YQ==", "service": {
                                                         "name": "s", "namespace": "team-a", "port": 443}}}]}
    admission.create_mutating_webhook_configuration(hook)
    admission.create_validating_webhook_configuration(hook)
    assert admission.read_mutating_webhook_configuration("m").webhooks[0].name == "a.b.c"
    assert len(admission.list_validating_webhook_configuration().items) == 1
    core.delete_namespace("team-a")
    assert core.list_secret_for_all_namespaces().items == []


def test_discovery(kube_api):
    assert "v1" in client.CoreApi(kube_api).get_api_versions().versions
    groups = {g.name for g in client.ApisApi(kube_api).get_api_versions().groups}
    assert {"scheduling.k8s.io", "admissionregistration.k8s.io"} <= groups
    resources = {r.name for r in client.CoreV1Api(kube_api).get_api_resources().resources}
    assert {"pods", "pods/binding", "pods/status", "nodes", "configmaps"} <= resources
    assert client.VersionApi(kube_api).get_code().major == "1"


def test_chunked_lists_are_ordered_consistent_and_resumable(core):
    for index in (3, 0, 4, 1, 2):
        core.create_namespaced_pod("default", pod(f"p{index}"))
    first = core.list_namespaced_pod("default", limit=2)
    assert [p.metadata.name for p in first.items] == ["p0", "p1"]
    assert first.metadata.remaining_item_count == 3 and first.metadata._continue
    core.create_namespaced_pod("default", pod("p5"))  # after the first page: not part of this list
    core.delete_namespaced_pod("p4", "default")
    second = core.list_namespaced_pod("default", limit=2, _continue=first.metadata._continue)
    again = core.list_namespaced_pod("default", limit=2, _continue=first.metadata._continue)
    assert [p.metadata.name for p in second.items] == [p.metadata.name for p in again.items] == ["p2", "p3"]
    last = core.list_namespaced_pod("default", limit=2, _continue=second.metadata._continue)
    assert [p.metadata.name for p in last.items] == ["p4"], "the list shows the cluster as of its first page"
    assert not last.metadata._continue and not last.metadata.remaining_item_count
    assert first.metadata.resource_version == second.metadata.resource_version == last.metadata.resource_version
    assert len(core.list_namespaced_pod("default").items) == 5, "without a limit, one page"


def test_an_unknown_continue_token_is_410_and_a_bad_limit_is_400(kubesim, core):
    with pytest.raises(ApiException) as error:
        core.list_namespaced_pod("default", _continue="no-such-list.2")
    assert error.value.status == 410 and status_of(error.value)["reason"] == "Expired"
    with pytest.raises(urllib.error.HTTPError) as bad:  # the official client would not send it
        urllib.request.urlopen(f"{kubesim.url}/api/v1/namespaces/default/pods?limit=two")
    assert bad.value.code == 400 and "limit" in json.loads(bad.value.read())["message"]


def test_strategic_merge_follows_kubectl_apply_directives(core):
    core.create_node({"metadata": {"name": "n", "finalizers": ["a/one", "a/two"], "labels": {"keep": "1", "drop": "1"}},
                      "spec": {"taints": [{"key": "x", "effect": "NoSchedule"}, {"key": "y", "effect": "NoSchedule"}]}})
    patched = core.patch_node("n", {
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["a/one"], "labels": {"$retainKeys": ["keep"]}},
        "spec": {"$setElementOrder/taints": [{"key": "y"}, {"key": "x"}],
                 "taints": [{"key": "x", "effect": "NoExecute"}]}}, _content_type=STRATEGIC)
    assert patched.metadata.finalizers == ["a/two"]
    assert patched.metadata.labels == {"keep": "1"}
    assert [(t.key, t.effect) for t in patched.spec.taints] == [("y", "NoSchedule"), ("x", "NoExecute")]
    replaced = core.patch_node("n", {"metadata": {"labels": {"$patch": "replace", "new": "1"}}}, _content_type=STRATEGIC)
    assert replaced.metadata.labels == {"new": "1"}


def test_eviction_honours_pod_disruption_budgets(kubesim, kube_api, core):
    from kubesim.kubelet import set_phase
    policy = client.PolicyV1Api(kube_api)
    for name in ("w1", "w2", "w3"):
        core.create_namespaced_pod("default", pod(name, labels={"app": "web"}))
        set_phase(kubesim.store, "default", name, "Running")
    core.create_namespaced_pod("default", pod("other", labels={"app": "db"}))
    budget = policy.create_namespaced_pod_disruption_budget("default", {
        "metadata": {"name": "web"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    assert (budget.status.expected_pods, budget.status.current_healthy, budget.status.desired_healthy,
            budget.status.disruptions_allowed) == (3, 3, 2, 1)
    eviction = {"metadata": {"name": "w1", "namespace": "default"}}
    core.create_namespaced_pod_eviction("w1", "default", eviction, _preload_content=False)
    assert policy.read_namespaced_pod_disruption_budget("web", "default").status.disruptions_allowed == 0
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod_eviction("w2", "default", {"metadata": {"name": "w2", "namespace": "default"}})
    assert refused.value.status == 429
    status = status_of(refused.value)
    assert status["reason"] == "TooManyRequests" and status["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert "needs 2 healthy pods and has 2 currently" in status["details"]["causes"][0]["message"]
    core.read_namespaced_pod("w2", "default")  # still there
    core.create_namespaced_pod_eviction("other", "default", {"metadata": {"name": "other", "namespace": "default"}},
                                        _preload_content=False)  # no budget selects it
    policy.patch_namespaced_pod_disruption_budget("web", "default", {"spec": {"maxUnavailable": None,
                                                                              "minAvailable": "30%"}})
    core.create_namespaced_pod_eviction("w2", "default", {"metadata": {"name": "w2", "namespace": "default"}},
                                        _preload_content=False)  # 30% of 3 pods: one must stay
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["w3"]


@pytest.mark.parametrize("resources, qos", [
    ({}, "BestEffort"),
    ({"requests": {"cpu": "0"}}, "BestEffort"),
    ({"requests": {"cpu": "100m"}}, "Burstable"),
    ({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}, "Burstable"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
    ({"requests": {"cpu": "1000m", "memory": "1024Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
    ({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}, "BestEffort"),
])
def test_a_pods_qos_class_comes_from_its_requests_and_limits(core, resources, qos):
    created = core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "busybox", "resources": resources}]}})
    assert created.status.qos_class == qos
