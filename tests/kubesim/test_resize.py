"""In-place pod resize on kubesim, through the official client and kubectl: ``pods/{name}/resize`` validated
as kube-apiserver 1.34 does, a plain update refused when it changes resources, and the kubelet applying a
resize (``allocatedResources``, ``PodResizeInProgress``, the statuses' ``resources``) or reporting it
``PodResizePending`` (``Infeasible``, ``Deferred``)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from kubernetes import client

from kubesim import KubeSim
from tests.chart.get_helm import HelmUnavailable
from tests.kubesim.get_kubectl import kubectl_path
from tests.kubesim.test_kubectl import kubectl_runner
from tests.waiting import wait_for

NODE = "node-00000"  # seeded with 8 cpu and 32Gi


@pytest.fixture
def slow_sim():
    """Kubelets that take 0.3 s for each step, so a resize in progress can be seen."""
    with KubeSim(kubelet_delay=0.3) as started:
        started.seed_nodes(1)
        yield started


def _core(sim):
    return client.CoreV1Api(sim.api_client())


@pytest.fixture
def core(sim):
    api = _core(sim)
    yield api
    api.api_client.close()


def running(core, name: str, requests: dict | None = None, limits: dict | None = None, **container) -> None:
    resources = {key: value for key, value in (("requests", requests), ("limits", limits)) if value}
    core.create_namespaced_pod("default", {"metadata": {"name": name}, "spec": {"containers": [
        {"name": "c", "image": "busybox", "resources": resources, **container}]}})
    core.create_namespaced_pod_binding(name, "default", {"metadata": {"name": name}, "target": {"name": NODE}},
                                       _preload_content=False)
    wait_for(lambda: core.read_namespaced_pod(name, "default").status.phase == "Running", timeout=5,
             message=f"{name} runs")


def resize(core, name: str, requests: dict | None = None, limits: dict | None = None, **container):
    resources = {key: value for key, value in (("requests", requests), ("limits", limits)) if value}
    return core.patch_namespaced_pod_resize(name, "default", {"spec": {"containers": [
        {"name": "c", "resources": resources, **container}]}})


def status(core, name: str):
    return core.read_namespaced_pod(name, "default").status


def conditions(core, name: str) -> dict[str, tuple]:
    return {c.type: (c.status, c.reason, c.message) for c in status(core, name).conditions or ()}


def refusal(call) -> tuple[int, str]:
    with pytest.raises(client.ApiException) as raised:
        call()
    return raised.value.status, json.loads(raised.value.body)["message"]


def test_a_resize_is_allocated_then_applied_in_place(slow_sim):
    core = _core(slow_sim)
    running(core, "p", {"cpu": "100m", "memory": "100M"})
    generation = core.read_namespaced_pod("p", "default").metadata.generation
    before = status(core, "p")
    statuses = before.container_statuses[0]
    assert statuses.allocated_resources == {"cpu": "100m", "memory": "100M"}
    assert statuses.resources.requests == {"cpu": "100m", "memory": "100M"}
    answered = resize(core, "p", {"cpu": "200m"})
    assert answered.spec.containers[0].resources.requests == {"cpu": "200m", "memory": "100M"}
    assert answered.metadata.generation == generation + 1

    def in_progress() -> bool:
        now = status(core, "p")
        return "PodResizeInProgress" in conditions(core, "p") \
            and now.container_statuses[0].allocated_resources["cpu"] == "200m"
    wait_for(in_progress, timeout=5, message="the kubelet allocates the resize")
    assert status(core, "p").container_statuses[0].resources.requests["cpu"] == "100m"

    def applied() -> bool:
        now = status(core, "p").container_statuses[0]
        return now.resources.requests["cpu"] == "200m" and "PodResizeInProgress" not in conditions(core, "p")
    wait_for(applied, timeout=5, message="the kubelet applies the resize")
    after = status(core, "p")
    assert (after.start_time, after.container_statuses[0].restart_count) == (before.start_time, 0)
    assert "PodResizePending" not in conditions(core, "p")


def test_a_resize_beyond_the_node_is_infeasible_and_keeps_what_runs(core):
    running(core, "p", {"cpu": "100m", "memory": "100M"})
    resize(core, "p", {"cpu": "100", "memory": "100Gi"})
    wait_for(lambda: "PodResizePending" in conditions(core, "p"), timeout=5, message="the resize is pending")
    assert conditions(core, "p")["PodResizePending"] == (
        "True", "Infeasible", f"Node didn't have enough capacity: memory, requested: {100 * 2**30}, "
                              f"capacity: {32 * 2**30}")
    statuses = status(core, "p").container_statuses[0]
    assert statuses.allocated_resources == {"cpu": "100m", "memory": "100M"}
    assert statuses.resources.requests == {"cpu": "100m", "memory": "100M"}
    resize(core, "p", {"cpu": "300m", "memory": "100M"})  # asking what fits again clears the verdict
    wait_for(lambda: status(core, "p").container_statuses[0].resources.requests["cpu"] == "300m", timeout=5,
             message="the feasible resize is applied")
    assert "PodResizePending" not in conditions(core, "p")


def test_a_resize_the_other_pods_leave_no_room_for_is_deferred_until_they_go(core):
    running(core, "small", {"cpu": "1"})
    running(core, "big", {"cpu": "6"})
    resize(core, "small", {"cpu": "3"})
    wait_for(lambda: "PodResizePending" in conditions(core, "small"), timeout=5, message="the resize waits")
    assert conditions(core, "small")["PodResizePending"] == (
        "True", "Deferred", "Node didn't have enough resource: cpu, requested: 3000, used: 6000, capacity: 8000")
    assert status(core, "small").container_statuses[0].allocated_resources == {"cpu": "1"}
    core.delete_namespaced_pod("big", "default", grace_period_seconds=0)
    wait_for(lambda: status(core, "small").container_statuses[0].resources.requests == {"cpu": "3"}, timeout=5,
             message="the deferred resize is applied once the room is free")
    assert "PodResizePending" not in conditions(core, "small")


def test_a_resize_changes_only_resources(core):
    running(core, "p", {"cpu": "100m"})
    answered = core.patch_namespaced_pod_resize("p", "default", {
        "metadata": {"labels": {"sneaked": "in"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "200m"}}}],
                 "activeDeadlineSeconds": 5}})
    assert answered.metadata.labels is None
    assert answered.spec.active_deadline_seconds is None
    assert (answered.spec.containers[0].image, answered.spec.containers[0].resources.requests) == (
        "busybox", {"cpu": "200m"})
    assert core.read_namespaced_pod_resize("p", "default").spec.containers[0].resources.requests == {"cpu": "200m"}


def test_an_update_of_the_pod_itself_may_not_change_its_resources(core):
    running(core, "p", {"cpu": "100m"})
    pod = core.read_namespaced_pod("p", "default")
    pod.spec.containers[0].resources.requests = {"cpu": "200m"}
    for call in (lambda: core.replace_namespaced_pod("p", "default", pod),
                 lambda: core.patch_namespaced_pod("p", "default", [
                     {"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": "200m"}])):
        code, message = refusal(call)
        assert code == 422
        assert message == (
            'Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than '
            "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
            "`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
            "(allow it to be set to 1 if it was previously negative)")
    assert core.read_namespaced_pod("p", "default").spec.containers[0].resources.requests == {"cpu": "100m"}


GUARANTEED = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}


@pytest.mark.parametrize("created, asked, message", [
    (GUARANTEED, {"requests": {"cpu": "500m"}},
     'spec: Invalid value: "Guaranteed": Pod QOS Class may not change as a result of resizing'),
    ({"requests": {"cpu": "1"}}, {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
     '[spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing, '
     "spec.containers[0].resources.limits[memory]: Forbidden: memory limits cannot be added unless resizePolicy "
     "is RestartContainer]"),
    ({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
     {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1536Mi"}},
     "spec.containers[0].resources.limits[memory]: Forbidden: memory limits cannot be decreased unless "
     "resizePolicy is RestartContainer"),
    ({"requests": {"cpu": "1", "memory": "1Gi"}}, {"requests": {"cpu": "1", "memory": None}},
     "spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"),
    ({"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}, {"requests": {"cpu": "3"}},
     'spec.containers[0].resources.requests: Invalid value: "3": must be less than or equal to cpu limit of 2'),
    ({"requests": {"cpu": "1", "ephemeral-storage": "1Gi"}}, {"requests": {"ephemeral-storage": "2Gi"}},
     "spec: Forbidden: only cpu and memory resources are mutable"),
])
def test_a_resize_kube_apiserver_refuses_is_refused_with_its_words(core, created, asked, message):
    running(core, "p", created.get("requests"), created.get("limits"))
    before = core.read_namespaced_pod("p", "default")
    code, said = refusal(lambda: resize(core, "p", asked.get("requests"), asked.get("limits")))
    assert (code, said) == (422, f'Pod "p" is invalid: {message}')
    assert core.read_namespaced_pod("p", "default").metadata.resource_version == before.metadata.resource_version


def test_a_memory_limit_may_go_down_when_the_container_restarts_for_memory(core):
    policy = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    running(core, "p", {"memory": "1Gi"}, {"memory": "2Gi"}, resizePolicy=policy)
    answered = resize(core, "p", {"memory": "1Gi"}, {"memory": "1536Mi"})
    assert answered.spec.containers[0].resources.limits == {"memory": "1536Mi"}
    code, message = refusal(lambda: resize(core, "p", resizePolicy=[
        {"resourceName": "memory", "restartPolicy": "NotRequired"}], requests={"memory": "1Gi"},
        limits={"memory": "1536Mi"}))
    assert (code, message) == (422, 'Pod "p" is invalid: spec: Forbidden: only cpu and memory resources are mutable')


@pytest.mark.parametrize("change, message", [
    ({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}},
     ": Forbidden: static pods cannot be resized"),
    ({"spec": {"os": {"name": "windows"}}}, ": Forbidden: windows pods cannot be resized"),
    ({"spec": {"resources": {"requests": {"cpu": "1"}}}}, ": Forbidden: pods with pod-level resources cannot be resized"),
])
def test_static_windows_and_pod_level_resources_pods_cannot_be_resized(core, sim, change, message):
    body = {"metadata": {"name": "p", **change.get("metadata", {})},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                     **change.get("spec", {})}}
    core.create_namespaced_pod("default", body)
    assert refusal(lambda: resize(core, "p", {"cpu": "2"})) == (422, f'Pod "p" is invalid: {message}')


@pytest.mark.parametrize("policy, restart, message", [
    ([{"resourceName": "gpu", "restartPolicy": "NotRequired"}], "Always",
     'spec.containers[0].resizePolicy: Unsupported value: "gpu": supported values: "cpu", "memory"'),
    ([{"resourceName": "cpu", "restartPolicy": "Sometimes"}], "Always",
     'spec.containers[0].resizePolicy: Unsupported value: "Sometimes": supported values: "NotRequired", '
     '"RestartContainer"'),
    ([{"resourceName": "cpu", "restartPolicy": "RestartContainer"}], "Never",
     'spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be \'NotRequired\' when '
     "`restartPolicy` is 'Never'"),
    ([{"resourceName": "cpu", "restartPolicy": "NotRequired"}, {"resourceName": "cpu", "restartPolicy": "NotRequired"}],
     "Always", 'spec.containers[0].resizePolicy[1]: Duplicate value: "cpu"'),
])
def test_a_pod_with_a_resize_policy_kube_apiserver_refuses_is_not_created(core, policy, restart, message):
    code, said = refusal(lambda: core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {
        "restartPolicy": restart, "containers": [{"name": "c", "image": "busybox", "resizePolicy": policy}]}}))
    assert (code, said) == (422, f'Pod "p" is invalid: {message}')


def test_kubelets_switched_off_for_resize_leave_the_resize_unapplied():
    with KubeSim(kubelet_delay=0.0, kubelet_resize=False) as sim:
        sim.seed_nodes(1)
        core = _core(sim)
        running(core, "p", {"cpu": "100m"})
        resize(core, "p", {"cpu": "200m"})
        running(core, "later", {"cpu": "100m"})  # the kubelets worked through what came before it
        assert status(core, "p").container_statuses[0].allocated_resources == {"cpu": "100m"}
        assert "PodResizeInProgress" not in conditions(core, "p")
        core.api_client.close()


def test_discovery_lists_the_resize_subresource(core):
    resources = {r.name: r.verbs for r in core.get_api_resources().resources}
    assert resources["pods/resize"] == ["get", "patch", "update"]


@pytest.fixture
def kubectl(sim, tmp_path):
    try:
        return kubectl_runner(kubectl_path(), sim, tmp_path)
    except HelmUnavailable as error:
        pytest.fail(str(error), pytrace=False)


def test_kubectl_patches_the_resize_subresource(kubectl, core):
    running(core, "p", {"cpu": "100m", "memory": "100Mi"})
    done = kubectl("patch", "pod", "p", "--subresource", "resize", "-p",
                   '{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"250m"}}}]}}')
    assert done.stdout.strip() == "pod/p patched"
    wait_for(lambda: status(core, "p").container_statuses[0].resources.requests["cpu"] == "250m", timeout=5,
             message="the kubelet applies kubectl's resize")
    shown = kubectl("get", "pod", "p", "-o", "jsonpath={.status.containerStatuses[0].allocatedResources.cpu}")
    assert shown.stdout == "250m"
    refused = kubectl("patch", "pod", "p", "--type", "json", "-p",
                      '[{"op":"replace","path":"/spec/containers/0/resources/requests/cpu","value":"300m"}]',
                      check=False)
    assert refused.returncode == 1
    assert 'The Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than' in refused.stderr


def test_a_resize_by_update_takes_the_resources_of_the_body(core):
    running(core, "p", {"cpu": "100m"})
    pod = core.read_namespaced_pod_resize("p", "default")
    pod.spec.containers[0].resources.requests = {"cpu": "400m"}
    pod.metadata.labels = {"ignored": "yes"}
    replaced = core.replace_namespaced_pod_resize("p", "default", pod)
    assert (replaced.spec.containers[0].resources.requests, replaced.metadata.labels) == ({"cpu": "400m"}, None)
    pod.spec.containers[0].resources.requests = {"cpu": "500m"}  # its resourceVersion is now stale
    assert refusal(lambda: core.replace_namespaced_pod_resize("p", "default", pod))[0] == 409


def test_an_update_may_change_an_init_containers_image(core):
    core.create_namespaced_pod("default", {"metadata": {"name": "p"}, "spec": {
        "initContainers": [{"name": "i", "image": "busybox:1"}], "containers": [{"name": "c", "image": "busybox"}]}})
    patched = core.patch_namespaced_pod("p", "default", {"spec": {"initContainers": [{"name": "i", "image": "busybox:2"}]}})
    assert patched.spec.init_containers[0].image == "busybox:2"


@pytest.mark.parametrize("container, message", [
    ({"name": "c", "resources": "lots"}, "Invalid value: requests and limits must be maps of quantities"),
    ({"name": "c", "resources": {"requests": ["cpu"]}}, "Invalid value: requests and limits must be maps of quantities"),
    ({"name": "c", "resources": {"requests": {"cpu": {"much": 1}}}}, "quantities must match the regular expression"),
    ({"name": "c", "resources": {"requests": {"cpu": "-1"}}}, 'Invalid value: "-1": must be greater than or equal to 0'),
    ({"name": "c", "resizePolicy": "x", "resources": {"requests": {"cpu": "1"}}}, "must be a list of resize policies"),
    ({"name": "c", "resizePolicy": ["x"], "resources": {"requests": {"cpu": "1"}}}, "a resize policy must be an object"),
])
def test_a_resize_of_a_hostile_shape_is_refused_and_changes_nothing(sim, container, message):
    core = _core(sim)
    running(core, "p", {"cpu": "100m"})
    before = core.read_namespaced_pod("p", "default").metadata.resource_version
    code, said = post_patch(sim, "p", {"spec": {"containers": [container]}})
    assert code == 422 and message in said
    assert core.read_namespaced_pod("p", "default").metadata.resource_version == before
    assert post_patch(sim, "p", {"spec": {"containers": "all"}}) == (
        422, 'Pod "p" is invalid: spec.containers: Required value')
    core.api_client.close()


def post_patch(sim, name: str, body) -> tuple[int, str]:
    """A merge patch of pods/resize as any client may send it (the official client checks types first)."""
    return send(sim, "PATCH", f"pods/{name}/resize", body, "application/merge-patch+json")


def send(sim, method: str, path: str, body, content_type: str = "application/json") -> tuple[int, str]:
    """``body`` to ``path`` in the default namespace, unchecked: the status and the refusal's message."""
    request = urllib.request.Request(f"{sim.url}/api/v1/namespaces/default/{path}", method=method,
                                     data=json.dumps(body).encode(), headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, ""
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())["message"]


def test_a_pod_created_with_resources_of_the_wrong_shape_is_refused(sim):
    request = urllib.request.Request(f"{sim.url}/api/v1/namespaces/default/pods", method="POST", data=json.dumps(
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox", "resources": "lots"}]}}
    ).encode(), headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=10)
    assert raised.value.code == 422
    assert json.loads(raised.value.read())["message"] == (
        'Pod "p" is invalid: spec.containers[0].resources: Invalid value: requests and limits must be maps of '
        "quantities")


def test_the_statuses_report_every_resource_the_container_was_given(core):
    running(core, "p", {"cpu": "1", "ephemeral-storage": "1Gi"}, {"cpu": "2", "ephemeral-storage": "2Gi"})
    statuses = status(core, "p").container_statuses[0]
    assert statuses.allocated_resources == {"cpu": "1", "ephemeral-storage": "1Gi"}
    assert (statuses.resources.requests, statuses.resources.limits) == (
        {"cpu": "1", "ephemeral-storage": "1Gi"}, {"cpu": "2", "ephemeral-storage": "2Gi"})


def test_a_quantity_is_judged_the_same_each_time_pods_repeat_it(sim):
    """Quantities written as text are parsed once and kept: a pod repeating one is judged as the first."""
    def create(name: str, cpu) -> tuple[int, str]:
        return send(sim, "POST", "pods", {"metadata": {"name": name}, "spec": {"containers": [
            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}})

    for name in ("a", "b"):
        code, said = create(f"lots-{name}", "lots")
        assert code == 422 and 'Invalid value: "lots": quantities must match' in said
        assert create(f"fine-{name}", "100m") == (201, "")
        code, said = create(f"negative-{name}", "-1")
        assert code == 422 and 'Invalid value: "-1": must be greater than or equal to 0' in said
    assert create("number", 1) == (201, "")  # a bare number is a quantity too, and not confused with text
    with urllib.request.urlopen(f"{sim.url}/api/v1/namespaces/default/pods", timeout=10) as response:
        made = json.loads(response.read())["items"]
    assert sorted((p["metadata"]["name"], p["status"]["qosClass"]) for p in made) == [
        ("fine-a", "Burstable"), ("fine-b", "Burstable"), ("number", "Burstable")]
