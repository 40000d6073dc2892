"""Port of upstream's test/e2e/recovery_and_restart/recovery_and_restart_test.go (suite:
recovery_and_restart_suite_test.go: BeforeSuite applies the basic configmap and restarts the scheduler;
BeforeEach makes a namespace and runs two sleep pods in it; AfterEach tears it down).

Restarting the scheduler is RestartYunikorn upstream (the scheduler's pod is deleted and its Deployment
makes a new one); here the scheduler in process is stopped and a new one started against the same
cluster, which then recovers from what it lists."""

from __future__ import annotations

import pytest

from si.quantity import from_kubernetes
from tests.upstream.framework import (
    SleepPodConfig,
    decorate_pod_for_gang_scheduling,
    init_sleep_pod,
    init_test_job,
    is_master_node,
    rand_seq,
    task_group,
)

GANG_SLEEP_JOB_PREFIX, NORMAL_SLEEP_JOB_PREFIX = "gang-sleep-job", "normal-sleep-job"
TASK_GROUP_A, TASK_GROUP_B, TASK_GROUP_E2E = "groupa", "groupb", "e2e-task-group"
TASK_GROUP_E2E_PREFIX = f"tg-{GANG_SLEEP_JOB_PREFIX}-{TASK_GROUP_E2E}"
PARALLELISM = 3
TAINT_KEY = "e2e_test"


@pytest.fixture(scope="module")
def suite(yk):
    old = yk.configmaps.update("")
    yk.restart_yunikorn()
    yield yk
    yk.configmaps.restore(old)


@pytest.fixture
def dev(suite):
    """BeforeEach: a namespace with two running sleep pods."""
    kube = suite.kube
    name = "dev" + rand_seq(5)
    assert kube.create_namespace(name, None).status.phase == "Active"
    pods = []
    for pod_name in ("sleepjob", "sleepjob2"):
        pod = kube.create_pod(init_sleep_pod(SleepPodConfig(name=pod_name, ns=name)), name)
        kube.wait_for_pod_by_selector_running(name, f"applicationId={pod.metadata.labels['applicationId']}")
        pods.append(pod)
    yield name, pods[0]
    kube.tear_down_namespace(name)


def test_verify_pod_alloc_props(suite, dev):
    """It("Verify_Pod_Alloc_Props")"""
    ns, sleep_resp_pod = dev
    app_id = sleep_resp_pod.metadata.labels["applicationId"]
    suite.rest.wait_for_app_state_transition("default", "root." + ns, app_id, "Running")
    apps_info = suite.rest.get_app_info("default", "root." + ns, app_id)
    assert apps_info is not None
    assert apps_info["allocations"] is not None
    allocation = apps_info["allocations"][0]
    assert allocation is not None
    assert allocation["allocationKey"] is not None
    assert allocation["nodeId"] is not None
    assert allocation["applicationId"] == app_id
    requests = from_kubernetes(sleep_resp_pod.spec.containers[0].resources.requests)
    res_map = allocation["resource"]
    assert res_map
    assert res_map["memory"] == requests["memory"]
    assert res_map["vcore"] == requests["vcore"]


def test_verify_sleepjobs_restart_yk(suite, dev):
    """It("Verify_SleepJobs_Restart_YK"): jobs submitted just before the scheduler restarts all run."""
    ns, _ = dev
    kube = suite.kube
    jobs = []
    for name in ("normal-sleep-job", "normal-sleep-job-2"):
        app_id = NORMAL_SLEEP_JOB_PREFIX + "-" + rand_seq(5)
        pod = init_sleep_pod(SleepPodConfig(name=name, ns=ns, time=300, app_id=app_id))
        jobs.append(kube.create_job(init_test_job(app_id, PARALLELISM, PARALLELISM, pod), ns).metadata.name)
    suite.restart_yunikorn()
    for job in jobs:
        kube.wait_for_job_pods(ns, job, PARALLELISM)


def init_task_groups(conf: SleepPodConfig, main: str, second: str, parallelism: int) -> list[dict]:
    """InitTaskGroups: the second group has one member more than the job and a node selector no node has."""
    resources = {"cpu": "0" if not conf.cpu else f"{conf.cpu}m", "memory": "0" if not conf.mem else f"{conf.mem}M"}
    return [task_group(main, parallelism, resources),
            task_group(second, parallelism + 1, resources, node_selector={"kubernetes.io/hostname": "nonexistingnode"})]


def test_verify_gangscheduling_twogangs_restart_yk(suite, dev):
    """It("Verify_GangScheduling_TwoGangs_Restart_YK"): placeholders keep their states across a restart."""
    ns, _ = dev
    kube = suite.kube
    app_id = GANG_SLEEP_JOB_PREFIX + "-" + rand_seq(5)
    conf = SleepPodConfig(name="gang-sleep-job", ns=ns, time=1, app_id=app_id)
    pod = decorate_pod_for_gang_scheduling(30, "Soft", TASK_GROUP_A,
                                           init_task_groups(conf, TASK_GROUP_A, TASK_GROUP_B, PARALLELISM),
                                           init_sleep_pod(conf))
    job = kube.create_job(init_test_job(app_id, PARALLELISM, PARALLELISM, pod), ns).metadata.name
    kube.wait_for_job_pods_created(ns, job, PARALLELISM)
    group_a, group_b = f"tg-{app_id}-{TASK_GROUP_A}-", f"tg-{app_id}-{TASK_GROUP_B}-"
    kube.wait_for_placeholders(ns, group_a, PARALLELISM, phase="Running")
    kube.wait_for_placeholders(ns, group_b, PARALLELISM + 1, phase="Pending")

    suite.restart_yunikorn()
    # the scheduler's state was restored: a new pod runs
    app3 = "sleepjob-" + rand_seq(5)
    kube.create_pod(init_sleep_pod(SleepPodConfig(name="sleepjob3", ns=ns, app_id=app3)), ns)
    kube.wait_for_pod_by_selector_running(ns, f"applicationId={app3}")
    # the same pods in the same states
    counts = {group_a: 0, group_b: 0}
    for item in kube.get_pods(ns).items:
        name, phase = item.metadata.name, item.status.phase
        if name.startswith(group_a):
            counts[group_a] += 1
            assert phase == "Running"
        elif name.startswith(group_b):
            counts[group_b] += 1
            assert phase == "Pending"
        elif name.startswith(GANG_SLEEP_JOB_PREFIX):
            assert phase == "Pending"
    assert counts == {group_a: PARALLELISM, group_b: PARALLELISM + 1}
    # the placeholders time out, the real pods replace them and end
    kube.wait_for_job_pods_succeeded(ns, job, PARALLELISM, timeout=30 + 12)


def test_verify_gangscheduling_pendingplaceholders_restart_yk(suite, dev):
    """It("Verify_GangScheduling_PendingPlaceholders_Restart_YK"): running and pending placeholders survive
    a restart, and the job completes once the other nodes are untainted."""
    ns, _ = dev
    kube = suite.kube
    nodes = kube.get_nodes().items
    assert len(nodes) >= 2, "Not enough nodes in the cluster, need at least 2"
    workers = [n for n in nodes if not is_master_node(n)]
    selected, to_taint = workers[0], [n.metadata.name for n in workers[1:]]
    memory_gib = from_kubernetes({"memory": selected.status.allocatable["memory"]})["memory"] // 10**9
    placeholder_count = memory_gib // 3 + 2  # both Running and Pending placeholders
    kube.taint_nodes(to_taint, TAINT_KEY, "value", "NoSchedule")
    try:
        app_id = GANG_SLEEP_JOB_PREFIX + "-" + rand_seq(5)
        conf = SleepPodConfig(name="gang-sleep-job", ns=ns, time=1, app_id=app_id, mem=3000, cpu=10)
        groups = [task_group(TAINT_KEY, placeholder_count, {"cpu": "10m", "memory": "3G"})]
        pod = decorate_pod_for_gang_scheduling(900, "Soft", TASK_GROUP_E2E, groups, init_sleep_pod(conf))
        job = kube.create_job(init_test_job(app_id, 1, 1, pod), ns).metadata.name
        kube.wait_for_placeholders_stable_state(ns, TASK_GROUP_E2E_PREFIX)
        suite.restart_yunikorn()
    finally:
        kube.untaint_nodes(to_taint, TAINT_KEY)
    kube.wait_for_job_pods_succeeded(ns, job, 1)
