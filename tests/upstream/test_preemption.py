"""Port of upstream's test/e2e/preemption/preemption_test.go (suite: preemption_suite_test.go: BeforeSuite
keeps one compute node (Worker), taints the others, and sizes the sleep pods at a third (a quarter for
Verify_allow_preemption_tag) of the memory the scheduler reports available on it; each spec applies its
own configmap, AfterEach tears the namespace down and restores the configmap)."""

from __future__ import annotations

import re

import pytest

from tests.upstream.framework import (
    ALLOW,
    ALLOW_PREEMPTION,
    NOT_CONFIG,
    SleepPodConfig,
    add_queue,
    alloc_log_to_strings,
    init_sleep_pod,
    is_compute_node,
    is_master_node,
    rand_seq,
)

TAINT_KEY = "e2e_test_preemption"


@pytest.fixture(scope="module")
def suite(yk):
    workers = [n.metadata.name for n in yk.kube.get_nodes().items if not is_master_node(n) and is_compute_node(n)]
    yk.worker, to_taint = workers[0], workers[1:]
    assert yk.worker, "Worker node not found"
    yk.kube.taint_nodes(to_taint, TAINT_KEY, "value", "NoSchedule")
    worker_mem = next(n for n in yk.rest.get_nodes("default") if n["nodeID"] == yk.worker)["available"]["memory"]
    yk.worker_mem_res = worker_mem // (1000 * 1000)
    yk.limit = int(yk.worker_mem_res / 3)
    yk.limit2 = int(yk.worker_mem_res / 4)
    assert yk.limit and yk.limit2, "Sleep pod memory limit cannot be zero"
    yield yk
    yk.kube.untaint_nodes(to_taint, TAINT_KEY)
    assert yk.rest.get_failed_health_checks() == ""


@pytest.fixture
def dev(suite):
    name = "dev-" + rand_seq(5)
    assert suite.kube.create_namespace(name, None).status.phase == "Active"
    state = {"ns": name, "old": None}
    yield state
    suite.kube.tear_down_namespace(name)
    if state["old"] is not None:
        suite.configmaps.restore(state["old"])


def sandboxes(*queues: tuple[str, str, dict], parent: dict | None = None):
    """Queues under root (or under ``parent``), each with a guaranteed memory and its properties."""
    def mutate(config: dict) -> None:
        config["partitions"][0].pop("placementrules", None)
        under = "root"
        if parent is not None:
            add_queue(config, "default", "root", parent)
            under = "root." + parent["name"]
        for name, memory, properties in queues:
            add_queue(config, "default", under, {"name": name, "resources": {"guaranteed": {"memory": memory}},
                                                 "properties": properties})
    return mutate


def create_sandbox1_sleep_pod_configs(ns: str, limit: int, count: int, time: int, queue: str):
    return [SleepPodConfig(name=f"sleepjob{i + 1}", ns=ns, mem=limit, time=time, optedout=ALLOW,
                           labels={"queue": queue}) for i in range(count)]


def deploy_running(kube, ns: str, config: SleepPodConfig, pod_mutator=None):
    pod = init_sleep_pod(config)
    if pod_mutator:
        pod_mutator(pod)
    created = kube.create_pod(pod, ns)
    kube.wait_for_pod_by_selector_running(ns, f"app={created.metadata.labels['app']}")
    return created


def running_not_deleted(kube, ns: str, selector: str) -> int:
    return sum(p.metadata.deletion_timestamp is None and p.status.phase == "Running"
               for p in kube.list_pods(ns, selector).items)


def test_verify_basic_preemption(suite, dev):
    """It("Verify_basic_preemption"): a queue over its guaranteed memory even without one of its pods is
    preempted for a queue under its guaranteed memory."""
    ns, kube, limit = dev["ns"], suite.kube, suite.limit
    dev["old"] = suite.configmaps.update("", sandboxes(("sandbox1", f"{limit}M", {"preemption.delay": "1s"}),
                                                       ("sandbox2", f"{limit}M", {"preemption.delay": "1s"})))
    configs = create_sandbox1_sleep_pod_configs(ns, limit, 3, 600, "root.sandbox1")
    configs.append(SleepPodConfig(name="sleepjob4", ns=ns, mem=limit, time=600, optedout=ALLOW,
                                  labels={"queue": "root.sandbox2"}))
    for config in configs:
        deploy_running(kube, ns, config)
    assert running_not_deleted(kube, ns, "queue=root.sandbox1") == 2, \
        "One of the pods in root.sandbox1 should be preempted"


def verify_no_preemption(suite, dev, sandbox_mem: str, sandbox2_properties: dict) -> None:
    """sleepjob4 in root.sandbox2 stays unschedulable until the pods in root.sandbox1 succeed."""
    ns, kube, limit = dev["ns"], suite.kube, suite.limit
    dev["old"] = suite.configmaps.update("", sandboxes(("sandbox1", sandbox_mem, {"preemption.delay": "1s"}),
                                                       ("sandbox2", sandbox_mem, sandbox2_properties)))
    sandbox1 = create_sandbox1_sleep_pod_configs(ns, limit, 3, 30, "root.sandbox1")
    for config in sandbox1:
        deploy_running(kube, ns, config)
    pod4 = kube.create_pod(init_sleep_pod(SleepPodConfig(name="sleepjob4", ns=ns, mem=limit, time=30, optedout=ALLOW,
                                                         labels={"queue": "root.sandbox2"})), ns)
    kube.wait_for_pod_unschedulable(pod4)
    for config in sandbox1:
        kube.wait_for_pod_succeeded(ns, config.name)


def test_verify_no_preemption_on_resources_less_than_guaranteed_value(suite, dev):
    """It("Verify_no_preemption_on_resources_less_than_guaranteed_value")"""
    verify_no_preemption(suite, dev, f"{suite.worker_mem_res}M", {"preemption.delay": "1s"})


def test_verify_no_preemption_outside_fence(suite, dev):
    """It("Verify_no_preemption_outside_fence")"""
    verify_no_preemption(suite, dev, f"{suite.limit}M", {"preemption.delay": "1s", "preemption.policy": "fence"})


def test_verify_preemption_on_priority_queue(suite, dev):
    """It("Verify_preemption_on_priority_queue"): a task preempts only tasks of lower or equal priority."""
    ns, kube, rest, limit = dev["ns"], suite.kube, suite.rest, suite.limit
    dev["old"] = suite.configmaps.update("", sandboxes(
        ("high-priority", f"{limit}M", {"preemption.delay": "1s", "priority.offset": "100"}),
        ("sandbox1", f"{limit}M", {"preemption.delay": "1s", "priority.offset": "0"}),
        ("low-priority", f"{limit}M", {"preemption.delay": "1s", "priority.offset": "-100"}),
        parent={"name": "parent", "resources": {"max": {"memory": f"{3 * limit}M"}}}))
    for config in create_sandbox1_sleep_pod_configs(ns, limit, 3, 60, "root.parent.sandbox1"):
        deploy_running(kube, ns, config)
    pod4 = kube.create_pod(init_sleep_pod(SleepPodConfig(name="sleepjob4", ns=ns, mem=limit, time=600, optedout=ALLOW,
                                                         labels={"queue": "root.parent.low-priority"})), ns)
    pod5 = kube.create_pod(init_sleep_pod(SleepPodConfig(name="sleepjob5", ns=ns, mem=limit, time=600, optedout=ALLOW,
                                                         labels={"queue": "root.parent.high-priority"})), ns)
    # sleepjob4 cannot be scheduled before the pods in root.parent.sandbox1 succeed
    kube.wait_for_pod_pending(ns, "sleepjob4")
    app4 = pod4.metadata.labels["applicationId"]
    rest.wait_for_allocation_log("default", "root.parent.low-priority", app4, "sleepjob4")
    log = rest.get_allocation_log("default", "root.parent.low-priority", app4, "sleepjob4")
    assert log is not None, "Log can't be empty"
    assert any(re.match(".*Not enough queue quota", entry) for entry in alloc_log_to_strings(log)), \
        "Log entry message mismatch"
    # sleepjob5 can be scheduled before the pods in root.parent.sandbox1 succeed
    kube.wait_for_pod_scheduled(ns, pod5.metadata.name)
    assert running_not_deleted(kube, ns, "queue=root.parent.sandbox1") == 2, \
        "One of the pods in root.parent.sandbox1 should be preempted"


def test_verify_allow_preemption_tag(suite, dev):
    """It("Verify_allow_preemption_tag"): 'false' for allow-preemption on the PriorityClass moves its pods to
    the back of the preemption list."""
    ns, kube, limit2 = dev["ns"], suite.kube, suite.limit2
    dev["old"] = suite.configmaps.update("", sandboxes(*((name, f"{limit2}M", {"preemption.delay": "1s"})
                                                         for name in ("sandbox3", "sandbox4", "sandbox5"))))
    kube.scheduling.create_priority_class({"metadata": {"name": "allow-preemption",
                                                        "annotations": {ALLOW_PREEMPTION: "true"}}, "value": 0})
    kube.scheduling.create_priority_class({"metadata": {"name": "preemption-not-allow",
                                                        "annotations": {ALLOW_PREEMPTION: "false"}}, "value": 0})
    try:
        for name, queue in (("sleepjob1", "root.sandbox3"), ("sleepjob2", "root.sandbox3"),
                            ("sleepjob3", "root.sandbox4"), ("sleepjob4", "root.sandbox4")):
            klass = "preemption-not-allow" if name in ("sleepjob3", "sleepjob4") else "allow-preemption"
            deploy_running(kube, ns, SleepPodConfig(name=name, ns=ns, mem=limit2, time=60, optedout=NOT_CONFIG,
                                                    labels={"queue": queue}),
                           lambda pod, klass=klass: pod["spec"].__setitem__("priorityClassName", klass))
        pod5 = kube.create_pod(init_sleep_pod(SleepPodConfig(name="sleepjob5", ns=ns, mem=limit2, time=600,
                                                             optedout=NOT_CONFIG, labels={"queue": "root.sandbox5"})),
                               ns)
        kube.wait_for_pod_scheduled(ns, pod5.metadata.name)
        assert running_not_deleted(kube, ns, "queue=root.sandbox3") == 1, \
            "One of the pods in root.sandbox3 should be preempted"
    finally:
        kube.delete_priority_class("allow-preemption")
        kube.delete_priority_class("preemption-not-allow")
