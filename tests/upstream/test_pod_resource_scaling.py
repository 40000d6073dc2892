"""Port of upstream's test/e2e/pod_resource_scaling/pod_resource_scaling_test.go (suite:
pod_resource_scaling_suite_test.go: BeforeSuite applies the configmap with no policy; BeforeEach skips below
Kubernetes 1.32 and makes a namespace "test-<10>"; AfterEach deletes its pods and the namespace).

kubesim answers as Kubernetes 1.34: a resize goes through ``pods/{name}/resize`` and its kubelet applies it
in place, or marks it ``PodResizePending``/``Infeasible`` when the node could never hold it (before 1.36,
where admission refuses it instead)."""

from __future__ import annotations

import pytest

from tests.upstream.framework import TIMEOUT, SleepPodConfig, YAPIError, init_sleep_pod, rand_seq
from tests.waiting import wait_for

MI = 1024 * 1024


@pytest.fixture
def ns(suite):
    kube = suite.kube
    version = kube.get_kubernetes_version()
    if version.major < "1" or (version.major == "1" and version.minor < "32"):
        pytest.skip("InPlacePodVerticalScaling requires K8s 1.32+")
    name = "test-" + rand_seq(10)
    kube.create_namespace(name, None)
    yield name
    kube.delete_pods(name)
    kube.core.delete_namespace(name)


def verify_yunikorn_resource_usage(rest, ns: str, app_id: str, resource_name: str, value: int) -> None:
    """verifyYunikornResourceUsage: one of the application's allocations has ``value`` of ``resource_name``."""
    def allocated() -> bool:
        try:
            app = rest.get_app_info("default", "root." + ns, app_id)
        except YAPIError:
            return False
        for alloc in app.get("allocations") or ():
            res_val = alloc.get("resource", {}).get(resource_name)
            if res_val is None:
                return False
            if res_val == value:
                return True
        return False
    wait_for(allocated, timeout=TIMEOUT, interval=0.1,
             message=f"Pod should be scheduled by YuniKorn with correct resource({resource_name}) allocation")


def running_sleep_pod(suite, ns: str, cpu: int, mem: int):
    """The sleep pod each spec starts with: created, Running, counted by YuniKorn at ``cpu``; as read back."""
    kube = suite.kube
    pod = kube.create_pod(init_sleep_pod(SleepPodConfig(ns=ns, time=600, cpu=cpu, mem=mem)), ns)
    kube.wait_for_pod_running(ns, pod.metadata.name, 60)
    verify_yunikorn_resource_usage(suite.rest, ns, pod.metadata.labels["applicationId"], "vcore", cpu)
    return kube.get_pod(pod.metadata.name, ns)


def assert_not_restarted(pod, initial_start_time, initial_restart_count: int) -> None:
    assert pod.status.start_time == initial_start_time, "Pod should not have restarted"
    assert pod.status.container_statuses[0].restart_count == initial_restart_count, \
        "Container should not have restarted"


def test_pod_resources_cpu_memory_resize_up(suite, ns):
    """It("Pod resources(cpu/memory) resize up")"""
    kube, rest = suite.kube, suite.rest
    pod = running_sleep_pod(suite, ns, 100, 100)
    initial_restart_count = pod.status.container_statuses[0].restart_count

    pod = kube.modify_resource_usage(pod, ns, 200, 100)
    assert pod.status.container_statuses[0].restart_count == initial_restart_count, \
        "Container should not have restarted"
    verify_yunikorn_resource_usage(rest, ns, pod.metadata.labels["applicationId"], "vcore", 200)

    pod = kube.modify_resource_usage(pod, ns, 200, 200)
    assert pod.status.container_statuses[0].restart_count == initial_restart_count, \
        "Container should not have restarted"
    verify_yunikorn_resource_usage(rest, ns, pod.metadata.labels["applicationId"], "memory", 200 * MI)


def test_pod_resources_cpu_memory_resize_down(suite, ns):
    """It("Pod resources(cpu/memory) resize down")"""
    kube, rest = suite.kube, suite.rest
    pod = running_sleep_pod(suite, ns, 200, 200)
    initial_start_time = pod.status.start_time
    initial_restart_count = pod.status.container_statuses[0].restart_count

    pod = kube.modify_resource_usage(pod, ns, 100, 200)
    name = pod.metadata.name
    wait_for(lambda: kube.get_pod(name, ns).spec.containers[0].resources.requests["cpu"] == "100m",
             timeout=TIMEOUT, message="the cpu request is 100m")
    assert_not_restarted(pod, initial_start_time, initial_restart_count)
    verify_yunikorn_resource_usage(rest, ns, pod.metadata.labels["applicationId"], "vcore", 100)

    pod = kube.modify_resource_usage(pod, ns, 100, 100)
    assert_not_restarted(pod, initial_start_time, initial_restart_count)
    verify_yunikorn_resource_usage(rest, ns, pod.metadata.labels["applicationId"], "memory", 100 * MI)


def test_pod_resources_cpu_memory_resize_to_excessive_values_should_fail(suite, ns):
    """It("Pod resources(cpu/memory) resize to excessive values should fail")"""
    kube = suite.kube
    pod = running_sleep_pod(suite, ns, 100, 100)
    name = pod.metadata.name
    initial_start_time = pod.status.start_time
    initial_restart_count = pod.status.container_statuses[0].restart_count
    app_id = pod.metadata.labels["applicationId"]

    # Patch CPU/Memory to an excessive value; kubesim answers as Kubernetes 1.34 (before 1.36, where admission
    # refuses it with 403), so the resize is accepted and its kubelet marks it Infeasible.
    pod = kube.modify_resource_usage(pod, ns, 100000, 100000)
    assert kube.get_kubernetes_version().minor < "36"

    def infeasible() -> bool:
        conditions = kube.get_pod(name, ns).status.conditions or ()
        return any(c.type == "PodResizePending" and c.reason == "Infeasible" for c in conditions)
    wait_for(infeasible, timeout=TIMEOUT, message="the resize is PodResizePending/Infeasible")
    assert_not_restarted(pod, initial_start_time, initial_restart_count)

    # Verify pod resource usage is unchanged after set an excessive value
    verify_yunikorn_resource_usage(suite.rest, ns, app_id, "vcore", 100)
