"""Port of upstream's test/e2e/simple_preemptor/simple_preemptor_test.go (suite: simple_preemptor_suite_test.go:
BeforeSuite applies the basic configmap, takes the first two compute nodes as Worker1 and Worker2, taints
the others, and sizes the sleep pods at a 3.5th of each worker's free memory)."""

from __future__ import annotations

import pytest

from si.quantity import from_kubernetes
from tests.upstream.framework import (
    ALLOW,
    DENY,
    SleepPodConfig,
    init_sleep_pod,
    is_compute_node,
    is_master_node,
)
from tests.upstream.framework import rand_seq as rand

TAINT_KEY = "e2e_test_simple_preemptor"


@pytest.fixture(scope="module")
def suite(yk):
    old = yk.configmaps.update("")
    workers, to_taint = [], []
    for node in yk.kube.get_nodes().items:
        if is_master_node(node) or not is_compute_node(node):
            continue
        (workers if len(workers) < 2 else to_taint).append(node)
    yk.kube.taint_nodes([n.metadata.name for n in to_taint], TAINT_KEY, "value", "NoSchedule")
    # upstream subtracts what the pods in the scheduler's namespace request; here the scheduler is in process.
    limits = [int(_bytes(node.status.allocatable["memory"]) / 3.5) // (1000 * 1000) for node in workers]
    yk.worker1, yk.worker2 = workers[0].metadata.name, workers[1].metadata.name
    yk.limit1, yk.limit2 = limits
    yield yk
    yk.kube.untaint_nodes([n.metadata.name for n in to_taint], TAINT_KEY)
    assert yk.rest.get_failed_health_checks() == ""
    yk.configmaps.restore(old)


def _bytes(quantity: str) -> int:
    return from_kubernetes({"memory": quantity})["memory"]


@pytest.fixture
def dev(suite):
    with suite.kube.test_namespace("dev" + rand(5)) as made:
        yield made


def deploy(kube, dev, config):
    pod = kube.create_pod(init_sleep_pod(config), dev)
    kube.wait_for_pod_by_selector_running(dev, f"app={pod.metadata.labels['app']}")
    return pod


def test_verify_basic_simple_preemption(suite, dev):
    """It("Verify_basic_simple_preemption"): the only running pod is the victim."""
    kube = suite.kube
    for config in (SleepPodConfig(name="sleepjob", ns=dev, mem=suite.limit1 * 2, time=600, required_node=suite.worker1),
                   SleepPodConfig(name="sleepjob2", ns=dev, mem=suite.limit2 * 2, time=600),
                   SleepPodConfig(name="sleepjob3", ns=dev, required_node=suite.worker2, mem=suite.limit2 * 2,
                                  time=600)):
        deploy(kube, dev, config)
    # sleepjob2 is killed
    kube.wait_for_pod_event(dev, "sleepjob2", "Killing")


def test_verify_simple_preemption(suite, dev):
    """It("Verify_simple_preemption"): of three pods (two opted out), the regular one is the victim."""
    kube = suite.kube
    for config in (
            SleepPodConfig(name="sleepjob", ns=dev, mem=suite.limit1, time=600, required_node=suite.worker1),
            SleepPodConfig(name="sleepjob2", ns=dev, mem=suite.limit1, time=600, required_node=suite.worker1),
            # the same app id as sleepjob4, so that sleepjob4 is not its app's originator
            SleepPodConfig(name="sleepjob3", ns=dev, mem=suite.limit1, time=600, required_node=suite.worker1,
                           app_id="test01"),
            SleepPodConfig(name="sleepjob4", ns=dev, mem=suite.limit2, time=600, optedout=ALLOW, app_id="test01"),
            SleepPodConfig(name="sleepjob5", ns=dev, mem=suite.limit2, time=600, optedout=DENY),
            SleepPodConfig(name="sleepjob6", ns=dev, mem=suite.limit2, time=600, optedout=DENY)):
        deploy(kube, dev, config)
    pod = kube.create_pod(init_sleep_pod(SleepPodConfig(name="sleepjob7", ns=dev, mem=suite.limit2, time=600,
                                                        required_node=suite.worker2)), dev)
    kube.wait_for_pod_running(dev, pod.metadata.name)
    # sleepjob4 is killed
    kube.wait_for_pod_event(dev, "sleepjob4", "Killing")
