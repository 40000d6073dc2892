"""Priority admission as kube-apiserver plays it, through the official client: a pod's priority and
preemption policy come from its PriorityClass (or the global default), a missing class or a priority
other than the class's is Forbidden, and a priority outside int32 cannot be decoded."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from kubesim import KubeSim
from tests.kubesim.raw import post


def pod(name: str, **spec) -> dict:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def refusal(call) -> tuple[int, dict]:
    with pytest.raises(client.ApiException) as raised:
        call()
    return raised.value.status, json.loads(raised.value.body)


@pytest.fixture
def scheduling(kube_api):
    return client.SchedulingV1Api(kube_api)


def test_a_pod_takes_priority_and_policy_from_its_class(core, scheduling):
    scheduling.create_priority_class({"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"})
    created = core.create_namespaced_pod("default", pod("p", priorityClassName="high"))
    assert (created.spec.priority, created.spec.preemption_policy) == (1000, "Never")
    assert core.read_namespaced_pod("p", "default").spec.priority == 1000


def test_a_class_defaults_to_preempting_lower_priorities(scheduling):
    created = scheduling.create_priority_class({"metadata": {"name": "plain"}, "value": 5})
    assert created.preemption_policy == "PreemptLowerPriority"


def test_a_pod_naming_a_missing_class_is_forbidden(core, kubesim):
    status, body = refusal(lambda: core.create_namespaced_pod("default", pod("p", priorityClassName="nope")))
    assert status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == 'pods "p" is forbidden: no PriorityClass with name nope was found'
    assert body["details"] == {"name": "p", "kind": "pods"}
    assert kubesim.objects("pods") == []


def test_a_priority_other_than_the_class_value_is_forbidden(core, scheduling):
    scheduling.create_priority_class({"metadata": {"name": "high"}, "value": 1000})
    status, body = refusal(lambda: core.create_namespaced_pod("default", pod("p", priorityClassName="high",
                                                                             priority=7)))
    assert status == 403
    assert body["message"] == ('pods "p" is forbidden: the integer value of priority (7) must not be provided in pod '
                               "spec; priority admission controller computed 1000 from the given PriorityClass name")
    status, body = refusal(lambda: core.create_namespaced_pod("default", pod("q", preemptionPolicy="Never")))
    assert status == 403
    assert body["message"] == ('pods "q" is forbidden: the string value of PreemptionPolicy (Never) must not be '
                               "provided in pod spec; priority admission controller computed PreemptLowerPriority "
                               "from the given PriorityClass name")
    assert core.create_namespaced_pod("default", pod("r", priorityClassName="high", priority=1000)).spec.priority \
        == 1000


def test_without_a_class_the_global_default_applies_else_zero(core, scheduling):
    assert core.create_namespaced_pod("default", pod("before")).spec.priority == 0
    scheduling.create_priority_class({"metadata": {"name": "everyone"}, "value": 42, "globalDefault": True,
                                      "preemptionPolicy": "Never"})
    created = core.create_namespaced_pod("default", pod("after"))
    assert (created.spec.priority, created.spec.priority_class_name, created.spec.preemption_policy) == (
        42, "everyone", "Never")
    status, body = refusal(lambda: scheduling.create_priority_class(
        {"metadata": {"name": "second"}, "value": 1, "globalDefault": True}))
    assert status == 403
    assert body["message"] == ('priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass everyone is '
                               "already marked as default. Only one default can exist")


def test_the_system_classes_exist(core):
    created = core.create_namespaced_pod("kube-system", pod("dns", priorityClassName="system-cluster-critical"))
    assert created.spec.priority == 2000000000


@pytest.mark.parametrize("value, shown", [(2**31, "number 2147483648"), (-(2**31) - 1, "number -2147483649"),
                                          (1.5, "number 1.5"), ("7", "string"), (True, "bool")])
def test_a_priority_outside_int32_cannot_be_decoded(kubesim, value, shown):
    status, body = post(f"{kubesim.url}/api/v1/namespaces/default/pods", pod("p", priority=value))
    assert status == 400 and body["reason"] == "BadRequest"
    assert body["message"] == ('Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal '
                               f"{shown} into Go struct field PodSpec.spec.priority of type int32")
    status, body = post(f"{kubesim.url}/apis/scheduling.k8s.io/v1/priorityclasses",
                        {"metadata": {"name": "big"}, "value": value})
    assert status == 400
    assert body["message"] == ('PriorityClass in version "v1" cannot be handled as a PriorityClass: json: cannot '
                               f"unmarshal {shown} into Go struct field PriorityClass.value of type int32")
    assert kubesim.objects("pods") == []


def test_the_largest_int32_priority_is_accepted_without_admission():
    with KubeSim(priority_admission=False) as sim, sim.api_client() as api:
        created = client.CoreV1Api(api).create_namespaced_pod("default", pod("p", priority=2**31 - 1,
                                                                             priorityClassName="absent"))
        assert created.spec.priority == 2**31 - 1
        assert sim.objects("priorityclasses") == []


def test_an_update_leaving_out_the_admitted_priority_keeps_it(core, scheduling):
    scheduling.create_priority_class({"metadata": {"name": "high"}, "value": 1000})
    core.create_namespaced_pod("default", pod("p", priorityClassName="high"))
    body = json.loads(core.read_namespaced_pod("p", "default", _preload_content=False).data)
    body["metadata"]["labels"] = {"a": "b"}
    del body["spec"]["priority"], body["spec"]["preemptionPolicy"]
    updated = core.replace_namespaced_pod("p", "default", body)
    assert (updated.metadata.labels, updated.spec.priority, updated.spec.preemption_policy) == (
        {"a": "b"}, 1000, "PreemptLowerPriority")


@pytest.mark.parametrize("spec, field, go_type, shown", [
    ("a string", "Pod.spec", "v1.PodSpec", "string"),
    ({"containers": "c"}, "PodSpec.spec.containers", "[]v1.Container", "string"),
    ({"containers": {"name": "c"}}, "PodSpec.spec.containers", "[]v1.Container", "object")])
def test_a_pod_spec_of_the_wrong_shape_cannot_be_decoded(kubesim, spec, field, go_type, shown):
    """A tenant's spec that is no object (or containers that are no list) is the decoder's 400, never a 500."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    status, answer = post(f"{kubesim.url}/api/v1/namespaces/default/pods", body)
    assert status == 400 and answer["reason"] == "BadRequest"
    assert answer["message"] == ('Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal '
                                 f"{shown} into Go struct field {field} of type {go_type}")
    assert kubesim.objects("pods") == []
