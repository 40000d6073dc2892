"""Port of upstream's test/e2e/queue_quota_mgmt/queue_quota_mgmt_test.go (suite: queue_quota_mgmt_suite_test.go:
BeforeSuite applies the basic configmap, AfterEach checks the scheduler's health and tears the namespace down).

The two ``PIt`` (pending) specs upstream, Verify_Child_Max_Resource_Must_Be_Less_Than_Parent_Max and
Verify_Sum_Of_All_Child_Resource_Must_Be_Less_Than_Parent_Max, have no body and are not ported."""

from __future__ import annotations

import math

import pytest

from tests.upstream.framework import (
    DEFAULT_PARTITION,
    SleepPodConfig,
    States,
    init_sleep_pod,
    rand_seq,
    resource_value,
)

MAX_CPU = "yunikorn.apache.org/namespace.max.cpu"
MAX_MEM = "yunikorn.apache.org/namespace.max.memory"
QUOTA = "yunikorn.apache.org/namespace.quota"

OLD_ANNOTATIONS = {MAX_CPU: "300m", MAX_MEM: "300M"}
NEW_ANNOTATIONS = {QUOTA: "{\"cpu\": \"400m\", \"memory\": \"400M\", \"nvidia.com/gpu\": \"1\"}"}
OLD_AND_NEW_ANNOTATIONS = {MAX_CPU: "300m", MAX_MEM: "300M",
                           QUOTA: "{\"cpu\": \"600m\", \"memory\": \"600M\", \"nvidia.com/gpu\": \"2\"}"}
EMPTY_OLD_ANNOTATIONS = {MAX_CPU: "nil", MAX_MEM: "nil"}
WRONG_OLD_ANNOTATIONS = {MAX_CPU: "a", MAX_MEM: "b"}
EXPECTED_OLD = {"vcore": 300, "memory": 300}
EXPECTED_NEW = {"vcore": 400, "memory": 400, "nvidia.com/gpu": 1}
EXPECTED_OLD_AND_NEW = {"vcore": 600, "memory": 600, "nvidia.com/gpu": 2}


@pytest.fixture
def ns(suite):
    names = []
    yield names
    # AfterEach: the scheduler is healthy, the namespace is torn down
    assert suite.rest.get_failed_health_checks() == ""
    for name in names:
        suite.kube.tear_down_namespace(name)


def verify_quota_allocation_using_annotation(yk, names, annotations, resources, pod_count):
    kube, rest = yk.kube, yk.rest
    max_cpu, max_mem = resources["vcore"], resources["memory"]
    max_gpu = resources.get("nvidia.com/gpu", 0)
    ns = "ns-" + rand_seq(10)
    names.append(ns)
    ns1 = kube.create_namespace(ns, annotations)
    assert ns1.status.phase == "Active"

    req_cpu, req_mem = 100, 100
    pods = []
    for it in range(1, pod_count + 1):
        sleep_obj = init_sleep_pod(SleepPodConfig(ns=ns, time=60, cpu=req_cpu, mem=req_mem))
        pods.append(sleep_obj["metadata"]["name"])
        pod = kube.create_pod(sleep_obj, ns)
        kube.wait_for_pod_running(pod.metadata.namespace, pod.metadata.name)

        # the resources requested by the pod are accounted for in the queue's response
        queue_info = rest.get_queue(DEFAULT_PARTITION, "root." + ns)
        assert queue_info is not None
        assert queue_info["queuename"] == "root." + ns
        assert queue_info["status"] == "Active"
        assert not queue_info.get("properties")
        max_resource, used = queue_info.get("maxResource"), queue_info.get("allocatedResource")
        used_perct = queue_info.get("absUsedCapacity")
        # max capacity on the queue is accurate
        assert resource_value(max_resource, "vcore") == max_cpu
        assert resource_value(max_resource, "memory") == max_mem * 1000 * 1000
        assert resource_value(max_resource, "nvidia.com/gpu") == max_gpu
        # used capacity on the queue is accurate
        assert resource_value(used, "vcore") == req_cpu * it
        assert resource_value(used, "memory") == req_mem * it * 1000 * 1000
        # used percentage is accurate
        assert resource_value(used_perct, "vcore") == math.floor(req_cpu * it / max_cpu * 100)
        assert resource_value(used_perct, "memory") == math.floor(req_mem * it / max_mem * 100)

    # another app exceeds the queue's quota
    sleep_obj = init_sleep_pod(SleepPodConfig(ns=ns, time=60, cpu=req_cpu, mem=req_mem))
    pod = kube.create_pod(sleep_obj, ns)
    pods.append(sleep_obj["metadata"]["name"])
    rest.wait_for_app_state_transition("default", "root." + ns, pod.metadata.labels["applicationId"],
                                       States.Application.Accepted)
    kube.wait_for_pod_pending(ns, sleep_obj["metadata"]["name"])
    # the first app completes, which makes room for the last one
    kube.wait_for_pod_succeeded(ns, pods[0])
    kube.wait_for_pod_running(pod.metadata.namespace, pod.metadata.name)


def test_verify_queue_quota_allocation_using_old_annotations(suite, ns):
    """It("Verify_Queue_Quota_Allocation_Using_Old_Annotations")"""
    verify_quota_allocation_using_annotation(suite, ns, OLD_ANNOTATIONS, EXPECTED_OLD, 3)


def test_verify_queue_quota_allocation_using_new_annotations(suite, ns):
    """It("Verify_Queue_Quota_Allocation_Using_New_Annotations")"""
    verify_quota_allocation_using_annotation(suite, ns, NEW_ANNOTATIONS, EXPECTED_NEW, 4)


def test_verify_queue_quota_allocation_using_old_new_annotations(suite, ns):
    """It("Verify_Queue_Quota_Allocation_Using_Old_New_Annotations")"""
    verify_quota_allocation_using_annotation(suite, ns, OLD_AND_NEW_ANNOTATIONS, EXPECTED_OLD_AND_NEW, 6)


def test_verify_ns_without_quota(suite, ns):
    """It("Verify_NS_Without_Quota")"""
    name = "ns-" + rand_seq(10)
    ns.append(name)
    assert suite.kube.create_namespace(name, None).status.phase == "Active"


@pytest.mark.parametrize("annotations", [
    pytest.param(EMPTY_OLD_ANNOTATIONS, id="Verify_NS_With_Empty_Quota_Annotations"),
    pytest.param(WRONG_OLD_ANNOTATIONS, id="Verify_NS_With_Wrong_Quota_Annotations"),
])
def test_verify_ns_with_quota_annotations(suite, ns, annotations):
    """DescribeTable Entry("Verify_NS_With_Empty_Quota_Annotations") and
    Entry("Verify_NS_With_Wrong_Quota_Annotations")"""
    name = "ns-" + rand_seq(10)
    ns.append(name)
    assert suite.kube.create_namespace(name, annotations).status.phase == "Active"
    sleep_obj = init_sleep_pod(SleepPodConfig(ns=name, time=60, cpu=300, mem=300))
    pod = suite.kube.create_pod(sleep_obj, name)
    suite.kube.wait_for_pod_running(pod.metadata.namespace, pod.metadata.name)
