"""Port of upstream's test/e2e/basic_scheduling/basic_scheduling_test.go (suite: basic_scheduling_suite_test.go:
BeforeSuite applies the basic configmap; BeforeEach makes a namespace and runs the sleep pod "sleepjob" in it;
AfterEach checks the scheduler's health and tears the namespace down)."""

from __future__ import annotations

import pytest

from si.quantity import from_kubernetes
from tests.upstream.framework import SleepPodConfig, init_sleep_pod, rand_seq


@pytest.fixture
def dev(suite):
    kube, rest = suite.kube, suite.rest
    name = "dev" + rand_seq(5)
    assert kube.create_namespace(name, None).status.phase == "Active"
    pod = kube.create_pod(init_sleep_pod(SleepPodConfig(name="sleepjob", ns=name)), name)
    kube.wait_for_pod_running(name, "sleepjob")
    apps_info = rest.get_app_info("default", "root." + name, pod.metadata.labels["applicationId"])
    assert apps_info is not None
    yield name, pod, apps_info
    assert rest.get_failed_health_checks() == ""
    kube.tear_down_namespace(name)


def check_allocation(apps_info: dict, pod) -> None:
    assert apps_info["allocations"]
    allocation = apps_info["allocations"][0]
    assert allocation["allocationKey"] is not None
    assert allocation["nodeId"] is not None
    assert allocation["applicationId"] == pod.metadata.labels["applicationId"]
    requests = from_kubernetes((pod.spec.containers[0].resources and pod.spec.containers[0].resources.requests) or {})
    res_map = allocation["resource"]
    assert res_map
    assert res_map.get("memory", 0) == requests.get("memory", 0)
    assert res_map.get("vcore", 0) == requests.get("vcore", 0)


def test_verify_app_queue_info(dev):
    """It("Verify_App_Queue_Info")"""
    _, pod, apps_info = dev
    assert apps_info["applicationID"] == pod.metadata.labels["applicationId"]
    assert pod.metadata.namespace in apps_info["queueName"]


def test_verify_job_state(dev):
    """It("Verify_Job_State")"""
    _, pod, apps_info = dev
    assert apps_info["applicationState"] == "Running"
    assert pod.spec.scheduler_name == "yunikorn"


def test_verify_pod_alloc_props(dev):
    """It("Verify_Pod_Alloc_Props")"""
    _, pod, apps_info = dev
    check_allocation(apps_info, pod)


@pytest.mark.parametrize("name, best_effort", [
    pytest.param("besteffortpod", True, id="Verify_BestEffort_QOS_Pod_Scheduling"),
    pytest.param("burstablepod", False, id="Verify_NonBestEffort_QOS_Pod_Scheduling"),
])
def test_verify_qos_pod_scheduling(suite, dev, name, best_effort):
    """It("Verify_BestEffort_QOS_Pod_Scheduling") and It("Verify_NonBestEffort_QOS_Pod_Scheduling")"""
    ns = dev[0]
    kube, rest = suite.kube, suite.rest
    pod = kube.create_pod(init_sleep_pod(SleepPodConfig(name=name, ns=ns, best_effort=best_effort)), ns)
    kube.wait_for_pod_running(ns, name)
    apps_info = rest.get_app_info("default", "root." + ns, pod.metadata.labels["applicationId"])
    assert apps_info is not None
    assert apps_info["applicationState"] == "Running"
    if best_effort:
        assert pod.status.qos_class == "BestEffort"
    else:
        assert pod.status.qos_class != "BestEffort"
    assert pod.spec.scheduler_name == "yunikorn"
    check_allocation(apps_info, pod)
