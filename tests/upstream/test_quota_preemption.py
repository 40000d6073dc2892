"""Port of upstream's test/e2e/quota-preemption/quota_preemption_test.go (suite: quota_preemption_suite_test.go;
BeforeEach makes a namespace and saves the configmap, AfterEach tears the namespace down and restores it).
testdata/quota-preemption/ holds upstream's configmaps and Deployments byte for byte.

Every spec runs a Deployment whose ReplicaSet recreates the pod quota preemption takes, which then waits
(upstream counts it Pending). The "Needs Investigation-..." spec is a ``PIt`` (pending) upstream and is
not ported."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from tests.upstream.framework import CONFIG_MAP, consistently, eventually, rand_seq

TESTDATA = pathlib.Path(__file__).parent / "testdata" / "quota-preemption"
QUEUE_A = "queue=root.parent.queue-a"


@pytest.fixture
def dev(yk):
    name = "dev-" + rand_seq(5)
    assert yk.kube.create_namespace(name, None).status.phase == "Active"
    old = yk.kube.get_config_map(CONFIG_MAP, yk.configmaps.namespace)
    assert old is not None
    yield name
    yk.kube.tear_down_namespace(name)
    yk.configmaps.restore(old)


def update_config_map(yk, name: str) -> None:
    body = yaml.safe_load((TESTDATA / "configs" / name).read_text())
    body["metadata"]["namespace"] = yk.configmaps.namespace
    yk.kube.core.replace_namespaced_config_map(CONFIG_MAP, yk.configmaps.namespace, body)


def deploy(yk, dev: str, name: str = "deployment1.yaml") -> None:
    yk.kube.create_deployment(yaml.safe_load((TESTDATA / "deployments" / name).read_text()), dev)
    yk.kube.wait_for_pod_by_selector(dev, "app=app-a")
    yk.kube.wait_for_pod_by_selector_running(dev, "app=app-a")


def phases(yk, dev: str) -> tuple[int, int]:
    pods = yk.kube.list_pods(dev, QUEUE_A).items
    return sum(p.status.phase == "Running" for p in pods), sum(p.status.phase == "Pending" for p in pods)


def running_stays(yk, dev: str, count: int, seconds: float) -> None:
    def check() -> None:
        running = phases(yk, dev)[0]
        assert running == count, f"Expected {count} pods to remain running, but got {running}"
    consistently(check, seconds)


def preempted_to(yk, dev: str, running: int, pending: int, timeout: float) -> None:
    def check() -> None:
        assert phases(yk, dev) == (running, pending), \
            f"Expected {running} running and {pending} pending after quota preemption, got {phases(yk, dev)}"
    eventually(check, timeout)


def test_check_basic_quota_preemption(yk, dev):
    """It("Check_Basic_Quota_Preemption")"""
    update_config_map(yk, "yunikorn-configs-quota-preemption-enabled.yaml")
    deploy(yk, dev)
    update_config_map(yk, "yunikorn-configs-quota-reduced.yaml")
    preempted_to(yk, dev, 2, 1, 10)


def test_quota_preemption_not_triggered_on_quota_increase(yk, dev):
    """It("Quota_Preemption_NOT_triggered_On_Quota_Increase")"""
    update_config_map(yk, "yunikorn-configs-quota-preemption-enabled.yaml")
    deploy(yk, dev)
    update_config_map(yk, "yunikorn-configs-quota-increased.yaml")
    running_stays(yk, dev, 3, 5)


def test_check_quota_preemption_with_delay(yk, dev):
    """It("Check_Quota_Preemption_With_Delay")"""
    update_config_map(yk, "yunikorn-configs-quota-preemption-enabled.yaml")
    deploy(yk, dev)
    update_config_map(yk, "yunikorn-configs-reduced-quota-preemption-20-seconds-delay.yaml")
    running_stays(yk, dev, 3, 5)
    preempted_to(yk, dev, 2, 1, 30)


@pytest.mark.parametrize("initial", [
    pytest.param("yunikorn-configs-quota-preemption-zero-delay.yaml", id="Quota_Preemption_With_Zero_Delay"),
    pytest.param("yunikorn-configs-quota-preemption-disabled.yaml", id="Basic_Quota_Preemption_Disabled"),
])
def test_quota_preemption_disabled(yk, dev, initial):
    """It("Quota_Preemption_With_Zero_Delay") and It("Basic_Quota_Preemption_Disabled"): the quota is reduced
    with quota preemption off, and all three pods keep running."""
    update_config_map(yk, initial)
    deploy(yk, dev)
    update_config_map(yk, "yunikorn-configs-quota-reduced-preemption-disabled.yaml")
    running_stays(yk, dev, 3, 5)


def test_quota_preemption_delay_inherited_from_parent(yk, dev):
    """It("Quota_Preemption_Delay_Inherited_From_Parent")"""
    update_config_map(yk, "yunikorn-configs-parent-delay-no-child-delay.yaml")
    deploy(yk, dev)
    update_config_map(yk, "yunikorn-configs-parent-delay-child-quota-reduced.yaml")
    running_stays(yk, dev, 3, 5)
    preempted_to(yk, dev, 2, 1, 30)


def test_quota_preemption_not_triggered_when_new_quota_above_usage(yk, dev):
    """It("Quota_Preemption_NOT_Triggered_When_New_Quota_Above_Usage")"""
    update_config_map(yk, "yunikorn-configs-quota-preemption-enabled.yaml")
    deploy(yk, dev, "deployment2.yaml")
    update_config_map(yk, "yunikorn-configs-quota-above-current-usage.yaml")
    running_stays(yk, dev, 2, 5)


def test_quota_preemption_delay_timer_reset_on_delay_update(yk, dev):
    """It("Quota_Preemption_Delay_Timer_Reset_On_Delay_Update")"""
    update_config_map(yk, "yunikorn-configs-quota-preemption-enabled.yaml")
    deploy(yk, dev)
    update_config_map(yk, "yunikorn-configs-quota-reduced-5s-delay.yaml")
    running_stays(yk, dev, 3, 2)  # upstream sleeps these 2 s before the delay changes
    update_config_map(yk, "yunikorn-configs-quota-reduced-15s-delay.yaml")
    running_stays(yk, dev, 3, 5)
    preempted_to(yk, dev, 2, 1, 15)


def test_quota_preemption_delay_timer_reset_on_quota_re_reduction(yk, dev):
    """It("Quota_Preemption_Delay_Timer_Reset_On_Quota_Re_Reduction")"""
    update_config_map(yk, "yunikorn-configs-quota-preemption-enabled.yaml")
    yk.kube.create_deployment(yaml.safe_load((TESTDATA / "deployments" / "deployment1.yaml").read_text()), dev)
    yk.kube.wait_for_n_pods_by_selector_running(dev, "app=app-a", 3, 5)
    update_config_map(yk, "yunikorn-configs-quota-reduced-5s-delay.yaml")
    running_stays(yk, dev, 3, 3)  # upstream sleeps these 3 s before the quota is reduced again
    update_config_map(yk, "yunikorn-configs-quota-further-reduced-100Mi-10s-delay.yaml")
    running_stays(yk, dev, 3, 6)
    preempted_to(yk, dev, 1, 2, 5)
