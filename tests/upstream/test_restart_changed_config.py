"""Port of upstream's test/e2e/restart_changed_config/restart_changed_config_test.go (suite:
restart_changed_config_suite_test.go: BeforeSuite applies the basic configmap; BeforeEach makes the
namespaces dev-* and test-*, AfterEach tears them down)."""

from __future__ import annotations

import pytest

from tests.upstream.framework import SleepPodConfig, add_queue, init_sleep_pod, rand_seq


@pytest.fixture
def namespaces(suite):
    dev, test = "dev-" + rand_seq(5), "test-" + rand_seq(5)
    for name in (dev, test):
        assert suite.kube.create_namespace(name, None).status.phase == "Active"
    yield dev, test
    for name in (dev, test):
        suite.kube.tear_down_namespace(name)


def test_pod_restored_in_recovery_queue(suite, namespaces):
    """It("Pod_Restored_In_Recovery_Queue"): after a restart with a configuration that has no queue for it, a
    running pod's application is recovered into root.@recovery@."""
    dev, test = namespaces
    kube, rest = suite.kube, suite.rest
    pod_dev = kube.create_pod(init_sleep_pod(SleepPodConfig(name="sleepjob", ns=dev)), dev)
    kube.wait_for_pod_running(dev, pod_dev.metadata.name)
    pod_test = kube.create_pod(init_sleep_pod(SleepPodConfig(name="sleepjob2", ns=test)), test)
    kube.wait_for_pod_running(test, pod_test.metadata.name)

    def only_dev(config: dict) -> None:
        config["partitions"][0]["placementrules"] = [{"name": "tag", "value": "namespace", "create": False}]
        add_queue(config, "default", "root", {"name": dev, "parent": False})
    old = suite.configmaps.update("fifo", only_dev)
    try:
        assert rest.get_app_info("default", "root." + dev, pod_dev.metadata.labels["applicationId"]) is not None
        assert rest.get_app_info("default", "root." + test, pod_test.metadata.labels["applicationId"]) is not None

        suite.restart_yunikorn()
        rest.wait_for_registration("default", 5)
        assert rest.get_app_info("default", "root." + dev, pod_dev.metadata.labels["applicationId"]) is not None
        apps_info2 = rest.get_app_info("default", "", pod_test.metadata.labels["applicationId"])
        assert apps_info2 is not None
        assert apps_info2["queueName"] == "root.@recovery@"
    finally:
        suite.configmaps.restore(old)
