"""Port of upstream's test/e2e/priority_scheduling/priority_scheduling_test.go (suite:
priority_scheduling_suite_test.go: BeforeSuite applies the basic configmap and creates the priority
classes yk-test-low (-100), yk-test-high (100) and yk-test-normal (0), all PreemptionPolicy Never;
each spec applies its own configmap, and AfterEach deletes the pods, the namespace, and restores it).

Upstream sleeps 1 s between submissions and 10 s "for the scheduler state to settle" before asserting
that no test pod runs; here each submission is awaited until the scheduler reports the application with
its request pending, which is the state those sleeps wait for."""

from __future__ import annotations

import pytest

from tests.upstream.framework import (
    DEFAULT_PARTITION,
    PodAnnotation,
    TestPodConfig,
    YAPIError,
    add_queue,
    init_test_job,
    init_test_pod,
    rand_seq,
    task_group,
)
from tests.waiting import wait_for

REQUEST_CPU, REQUEST_MEM = "100m", "100M"
RR = {"requests": {"cpu": REQUEST_CPU, "memory": REQUEST_MEM}}
LOW, HIGH, NORMAL = "yk-test-low", "yk-test-high", "yk-test-normal"
QUEUE, APP = "queue", "applicationId"  # constants.LabelQueueName, LabelApplicationID


@pytest.fixture(scope="module")
def suite(yk):
    old = yk.configmaps.update("")
    for name, value in ((LOW, -100), (HIGH, 100), (NORMAL, 0)):
        yk.kube.create_priority_class(name, value, preemption_policy="Never")
    yield yk
    for name in (NORMAL, HIGH, LOW):
        yk.kube.delete_priority_class(name)
    yk.configmaps.restore(old)


@pytest.fixture
def ns(suite):
    name = "test-" + rand_seq(10)
    assert suite.kube.create_namespace(name, {}).status.phase == "Active"
    state = {"ns": name, "old": None}
    yield state
    suite.kube.delete_pods(name)
    suite.kube.tear_down_namespace(name)
    if state["old"] is not None:
        suite.configmaps.restore(state["old"])


def fence_config(parent: str, offsets: dict[str, str] | None = None):
    def mutate(config: dict) -> None:
        config["partitions"][0].pop("placementrules", None)  # no placement rules: the label picks the queue
        add_queue(config, "default", "root", {"name": parent, "parent": True,
                                              "resources": {"max": {"vcore": REQUEST_CPU, "memory": REQUEST_MEM}},
                                              "properties": {"priority.policy": "fence"}})
        for child, offset in (offsets or {"child1": None, "child2": None}).items():
            queue = {"name": child}
            if offset is not None:
                queue["properties"] = {"priority.offset": offset}
            add_queue(config, "default", "root." + parent, queue)
    return mutate


def pod_conf(kind: str, ns: str, queue: str | None = None, priority_class: str = "") -> TestPodConfig:
    labels = {APP: f"app-{kind}-{rand_seq(5)}"}
    if queue:
        labels = {QUEUE: queue, **labels}
    name = f"test-{kind}-priority-{rand_seq(5)}" if kind != "sleep" else "test-sleep-" + rand_seq(5)
    return TestPodConfig(name=name, labels=labels, namespace=ns, resources=RR, priority_class_name=priority_class)


def await_pending(yk, app_id: str) -> None:
    """The scheduler holds the app's request (what upstream's sleeps give it time to reach)."""
    def pending() -> bool:
        try:
            return bool(yk.rest.get_app_info(DEFAULT_PARTITION, "", app_id).get("requests"))
        except YAPIError:
            return False
    wait_for(pending, timeout=10, interval=0.05, message=f"a pending request of {app_id}")


def ensure_not_running(yk, ns: str, *pods) -> None:
    for pod in pods:
        assert yk.kube.get_pod(pod.metadata.name, ns).status.phase != "Running", pod.metadata.name


def validate_pod_scheduling_order(yk, ns, sleep_conf, low_conf, normal_conf, high_conf) -> None:
    kube = yk.kube
    sleep_pod = kube.create_pod(init_test_pod(sleep_conf), ns)
    kube.wait_for_pod_running(ns, sleep_pod.metadata.name)
    created = []
    for conf in (low_conf, normal_conf, high_conf):
        created.append(kube.create_pod(init_test_pod(conf), ns))
        await_pending(yk, conf.labels[APP])
    low_pod, normal_pod, high_pod = created
    ensure_not_running(yk, ns, low_pod, normal_pod, high_pod)

    kube.delete_pod(sleep_pod.metadata.name, ns)  # room for the test pods
    kube.wait_for_pod_running(ns, high_pod.metadata.name)
    ensure_not_running(yk, ns, low_pod, normal_pod)
    kube.delete_pod(high_pod.metadata.name, ns)
    kube.wait_for_pod_running(ns, normal_pod.metadata.name)
    ensure_not_running(yk, ns, low_pod)
    kube.delete_pod(normal_pod.metadata.name, ns)
    kube.wait_for_pod_running(ns, low_pod.metadata.name)
    kube.delete_pod(low_pod.metadata.name, ns)


def test_verify_static_queue_app_scheduling_order(suite, ns):
    """It("Verify_Static_Queue_App_Scheduling_Order")"""
    ns["old"] = suite.configmaps.update("fifo", fence_config("fence"))
    name = ns["ns"]
    validate_pod_scheduling_order(suite, name, pod_conf("sleep", name, "root.fence.child2"),
                                  pod_conf("low", name, "root.fence.child1", LOW),
                                  pod_conf("normal", name, "root.fence.child2", NORMAL),
                                  pod_conf("high", name, "root.fence.child1", HIGH))


def test_verify_dynamic_queue_app_scheduling_order(suite, ns):
    """It("Verify_Dynamic_Queue_App_Scheduling_Order")"""
    ns["old"] = suite.configmaps.update("fifo")
    name = ns["ns"]
    namespace = suite.kube.update_namespace(name, {
        "yunikorn.apache.org/namespace.quota": f'{{"cpu": "{REQUEST_CPU}", "memory": "{REQUEST_MEM}"}}'})
    assert namespace.status.phase == "Active"
    validate_pod_scheduling_order(suite, name, pod_conf("sleep", name), pod_conf("low", name, None, LOW),
                                  pod_conf("normal", name, None, NORMAL), pod_conf("high", name, None, HIGH))


def test_verify_priority_offset_queue_app_scheduling_order(suite, ns):
    """It("Verify_Priority_Offset_Queue_App_Scheduling_Order")"""
    ns["old"] = suite.configmaps.update("fifo", fence_config("priority", {"high": "100", "normal": "0",
                                                                          "low": "-100"}))
    name = ns["ns"]
    validate_pod_scheduling_order(suite, name, pod_conf("sleep", name, "root.priority.high"),
                                  pod_conf("low", name, "root.priority.low"),
                                  pod_conf("normal", name, "root.priority.normal"),
                                  pod_conf("high", name, "root.priority.high"))


def create_pod_conf_with_task_group(ns: str, name: str, priority_class: str) -> TestPodConfig:
    return TestPodConfig(
        name=f"test-{name}-priority-{rand_seq(5)}",
        labels={QUEUE: "root.default", APP: f"app-{name}-{rand_seq(5)}"}, namespace=ns,
        annotations=PodAnnotation(task_group_name="group-" + name, task_groups=[
            task_group("group-" + name, 1, {"cpu": REQUEST_CPU, "memory": REQUEST_MEM})]),
        resources=RR, priority_class_name=priority_class, restart_policy="Never")


def test_verify_gang_scheduling_with_priority(suite, ns):
    """It("Verify_Gang_Scheduling_With_Priority")"""
    def mutate(config: dict) -> None:
        config["partitions"][0].pop("placementrules", None)
        add_queue(config, "default", "root", {"name": "default", "parent": False,
                                              "resources": {"max": {"vcore": "100m", "memory": "100M"}}})
    ns["old"] = suite.configmaps.update("fifo", mutate)
    name, kube = ns["ns"], suite.kube
    sleep_pod = kube.create_pod(init_test_pod(pod_conf("sleep", name, "root.default")), name)
    kube.wait_for_pod_running(name, sleep_pod.metadata.name)

    jobs, pods, confs = {}, {}, {}
    for kind, klass in (("low", LOW), ("normal", NORMAL), ("high", HIGH)):
        confs[kind] = create_pod_conf_with_task_group(name, kind, klass)
        pod = init_test_pod(confs[kind])
        jobs[kind] = kube.create_job(init_test_job(pod["metadata"]["labels"][APP], 1, 1, pod), name)
        kube.wait_for_job_pods_created(name, jobs[kind].metadata.name, 1)
        await_pending(suite, confs[kind].labels[APP])
    for kind, job in jobs.items():
        pods[kind] = kube.list_pods(name, f"job-name={job.metadata.name}").items[0]
    ensure_not_running(suite, name, pods["low"], pods["normal"], pods["high"])

    kube.delete_pod(sleep_pod.metadata.name, name)
    order = ("high", "normal", "low")
    for index, kind in enumerate(order):
        kube.wait_for_placeholders(name, "tg-" + confs[kind].labels[APP] + "-", 0)
        kube.wait_for_pod_running(name, pods[kind].metadata.name)
        ensure_not_running(suite, name, *(pods[k] for k in order[index + 1:]))
        kube.delete_job(jobs[kind].metadata.name, name)
