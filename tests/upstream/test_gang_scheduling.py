"""Port of upstream's test/e2e/gang_scheduling/gang_scheduling_test.go (suite: gang_scheduling_suite_test.go:
BeforeSuite applies the basic configmap with fifo apps; BeforeEach makes a namespace (the app's queue,
root.<ns>) and an app id; AfterEach deletes the jobs and tears the namespace down).

Upstream writes ``yunikorn.apache.org/task-groups`` with encoding/json from cache.TaskGroup, whose fields
carry no json tags: the keys are ``Name``, ``MinMember``, ``MinResource``, ``NodeSelector``... (and the
unset ones ``null``), which the shim must read case-insensitively as the Go decoder does.

Verify_HugePage skips, as upstream does, when no node has 2Mi huge pages; the suite's workers have 1Gi of
them (kind's nodes have none), so it runs."""

from __future__ import annotations

import time

import pytest

from si.quantity import from_kubernetes
from tests.upstream.framework import (
    DEFAULT_PARTITION,
    TIMEOUT,
    PodAnnotation,
    States,
    TestPodConfig,
    YAPIError,
    get_worker_nodes,
    init_job_config,
    init_test_pod,
    rand_seq,
    resource_value,
    task_group,
)
from tests.waiting import wait_for

GROUP_A, GROUP_B, GROUP_C = "groupa", "groupb", "groupc"
UNSATISFIABLE_NODE_SELECTOR = {"kubernetes.io/hostname": "unsatisfiable_node"}
TIMEOUT_PARAM, STYLE_PARAM = "placeholderTimeoutInSeconds", "gangSchedulingStyle"
SCHED_POLICY = "fifo"


class Gang:
    """BeforeEach's state: the namespace, its queue, the app id, the task groups' min resource, the jobs."""

    def __init__(self, yk) -> None:
        self.yk, self.kube, self.rest = yk, yk.kube, yk.rest
        self.ns = "ns-" + rand_seq(10)
        self.ns_queue = "root." + self.ns
        assert self.kube.create_namespace(self.ns, None).status.phase == "Active"
        self.min_resource = {"cpu": "10m", "memory": "20M"}
        self.job_names: list[str] = []
        self.app_id = "appid-" + rand_seq(5)

    def create_job(self, app_id: str, annotations: PodAnnotation, parallelism: int):
        requests = dict(self.min_resource)
        limits = {k: v for k, v in self.min_resource.items() if k.startswith("hugepages-")}
        pod_conf = TestPodConfig(labels={"app": "sleep-" + rand_seq(5), "applicationId": app_id},
                                 annotations=annotations, resources={"requests": requests, "limits": limits})
        name = f"gangjob-{app_id}-{rand_seq(5)}"
        job = self.kube.create_job(init_job_config(name, self.ns, parallelism, pod_conf), self.ns)
        self.kube.wait_for_job_pods_created(self.ns, name, parallelism)
        self.job_names.append(name)
        return job

    def check_app_status(self, app_id: str, state: str) -> None:
        self.rest.wait_for_app_state_transition(DEFAULT_PARTITION, self.ns_queue, app_id, state)

    def check_completed_app_status(self, app_id: str, state: str) -> None:
        self.rest.wait_for_completed_app_state_transition(DEFAULT_PARTITION, app_id, state)

    def wait_for_placeholder_data(self, app_id: str, group: str, count: int, replaced: int, timed_out: int,
                                  timeout: float = TIMEOUT) -> None:
        def matches() -> bool:
            try:
                app = self.rest.get_app_info(DEFAULT_PARTITION, self.ns_queue, app_id)
            except YAPIError:
                return False
            return get_placeholder_data(app, group) == (True, count, replaced, timed_out)
        wait_for(matches, timeout=timeout, interval=0.1,
                 message=f"placeholder data of {group}: count {count}, replaced {replaced}, timed out {timed_out}")

    def close(self) -> None:
        for name in self.job_names:
            self.kube.delete_job(name, self.ns)
        self.kube.tear_down_namespace(self.ns)


def get_placeholder_data(app: dict, group: str):
    for data in app.get("placeholderData") or []:
        if data["taskGroupName"] == group:
            return True, data["count"], data["replaced"], data["timedout"]
    return False, 0, 0, 0


def check_placeholder_data(app: dict, group: str, count: int, replaced: int, timed_out: int) -> None:
    found, got_count, got_replaced, got_timed_out = get_placeholder_data(app, group)
    assert found, f"Can't find task group {group} in app info"
    assert got_count == count, "Placeholder count is not correct"
    assert got_replaced == replaced, "Placeholder replaced is not correct"
    assert got_timed_out == timed_out, "Placeholder timeout is not correct"


@pytest.fixture
def gang(suite):
    made = Gang(suite)
    yield made
    made.close()


def tg(gang: Gang, name: str, min_member: int, **fields) -> dict:
    return task_group(name, min_member, gang.min_resource, **fields)


def test_verify_annotation_taskgroup_def(gang):
    """It("Verify_Annotation_TaskGroup_Def")"""
    annotations = PodAnnotation(task_groups=[tg(gang, GROUP_A, 5)])
    gang.create_job(gang.app_id, annotations, 1)
    gang.check_app_status(gang.app_id, States.Application.Running)
    gang.wait_for_placeholder_data(gang.app_id, GROUP_A, 5, 0, 0)
    annotations.task_group_name = GROUP_A
    real_job = gang.create_job(gang.app_id, annotations, 5)
    gang.kube.wait_for_placeholders(gang.ns, f"tg-{gang.app_id}-{GROUP_A}-", 0)
    gang.kube.wait_for_job_pods(gang.ns, real_job.metadata.name, real_job.spec.parallelism)
    gang.check_app_status(gang.app_id, States.Application.Running)
    gang.wait_for_placeholder_data(gang.app_id, GROUP_A, 5, 5, 0)


def test_verify_multiple_taskgroups_nodes(gang):
    """It("Verify_Multiple_TaskGroups_Nodes"): the real pods land where their group's placeholders ran."""
    kube = gang.kube
    groups = [tg(gang, GROUP_A, 3), tg(gang, GROUP_B, 5), tg(gang, GROUP_C, 7)]
    annotations = PodAnnotation(task_groups=groups)
    gang.create_job(gang.app_id, annotations, 1)
    gang.check_app_status(gang.app_id, States.Application.Running)
    prefix = f"tg-{gang.app_id}-"
    kube.wait_for_placeholders(gang.ns, prefix, 15, phase="Running")
    task_group_nodes: dict[str, dict[str, int]] = {}
    for ph in kube.list_placeholders(gang.ns, prefix):
        group = (ph.metadata.annotations or {}).get("yunikorn.apache.org/task-group-name")
        if group is None:
            continue
        nodes = task_group_nodes.setdefault(group, {})
        nodes[ph.spec.node_name] = nodes.get(ph.spec.node_name, 0) + 1
    real_jobs = []
    for group in groups:
        annotations.task_group_name = group["Name"]
        real_jobs.append(gang.create_job(gang.app_id, annotations, group["MinMember"]).metadata.name)
    kube.wait_for_placeholders(gang.ns, prefix, 0)
    real_pod_nodes: dict[str, dict[str, int]] = {}
    for group, job_name in zip(groups, real_jobs, strict=True):
        job_pods = kube.list_pods(gang.ns, f"job-name={job_name}").items
        assert len(job_pods) == group["MinMember"], "Job pods count is not correct"
        nodes = real_pod_nodes.setdefault(group["Name"], {})
        for pod in job_pods:
            kube.wait_for_pod_running(gang.ns, pod.metadata.name)
            node = kube.get_pod(pod.metadata.name, gang.ns).spec.node_name
            nodes[node] = nodes.get(node, 0) + 1
    assert real_pod_nodes == task_group_nodes
    gang.check_app_status(gang.app_id, States.Application.Running)


def test_verify_tg_with_more_than_min_members(gang):
    """It("Verify_TG_with_More_Than_minMembers")"""
    annotations = PodAnnotation(task_group_name=GROUP_A, task_groups=[tg(gang, GROUP_A, 3)])
    gang.create_job(gang.app_id, annotations, 6)
    gang.check_app_status(gang.app_id, States.Application.Running)
    gang.kube.wait_for_placeholders(gang.ns, f"tg-{gang.app_id}-", 0)
    gang.wait_for_placeholder_data(gang.app_id, GROUP_A, 3, 3, 0)
    app = gang.rest.get_app_info(DEFAULT_PARTITION, gang.ns_queue, gang.app_id)
    assert len(app["allocations"]) == 6, "Allocations count is not correct"


def test_verify_default_gs_style(gang):
    """It("Verify_Default_GS_Style"): soft gang scheduling: after the placeholder timeout the real pods run."""
    pd_timeout = 20
    annotations = PodAnnotation(scheduling_policy_params=f"{TIMEOUT_PARAM}={pd_timeout}", task_groups=[
        tg(gang, GROUP_A, 3), tg(gang, GROUP_B, 1, node_selector=UNSATISFIABLE_NODE_SELECTOR)])
    job = gang.create_job(gang.app_id, annotations, 3)
    # upstream sleeps the placeholder timeout, then waits for the pods
    gang.kube.wait_for_job_pods(gang.ns, job.metadata.name, job.spec.parallelism, timeout=pd_timeout + TIMEOUT)
    gang.check_app_status(gang.app_id, States.Application.Running)
    gang.wait_for_placeholder_data(gang.app_id, GROUP_A, 3, 0, 3)
    gang.wait_for_placeholder_data(gang.app_id, GROUP_B, 1, 0, 1)
    app = gang.rest.get_app_info(DEFAULT_PARTITION, gang.ns_queue, gang.app_id)
    assert len(app["placeholderData"]) == 2, "Placeholder count is not correct"
    assert len(app["allocations"]) == 3, "Allocations count is not correct"
    for alloc in app["allocations"]:
        assert alloc["placeholder"] is False, "Allocation should be non placeholder"
        assert alloc["placeholderUsed"] is False, "Allocation should not be replacement of ph"


def test_verify_hard_gs_failed_state(gang):
    """It("Verify_Hard_GS_Failed_State"): hard gang scheduling: the app fails once its placeholders time out."""
    pd_timeout = 20
    annotations = PodAnnotation(
        task_groups=[tg(gang, GROUP_A, 3, node_selector=UNSATISFIABLE_NODE_SELECTOR), tg(gang, GROUP_B, 3)],
        scheduling_policy_params=f"{TIMEOUT_PARAM}={pd_timeout} {STYLE_PARAM}=Hard")
    gang.create_job(gang.app_id, annotations, 1)
    time.sleep(pd_timeout)  # upstream's: nothing observable marks the timeout before the app fails
    gang.check_completed_app_status(gang.app_id, States.Application.Failed)
    app = gang.rest.get_completed_app_info(DEFAULT_PARTITION, gang.app_id)
    assert len(app["placeholderData"]) == 2, "Placeholder count is not correct"
    check_placeholder_data(app, GROUP_A, 3, 0, 3)
    check_placeholder_data(app, GROUP_B, 3, 0, 3)


def test_verify_deleted_placeholders(gang):
    """It("Verify_Deleted_Placeholders"): deleted placeholders leave the app, the node and the queue."""
    kube, rest = gang.kube, gang.rest
    workers = get_worker_nodes(kube.get_nodes())
    assert workers
    annotations = PodAnnotation(scheduling_policy_params=f"{TIMEOUT_PARAM}=60", task_groups=[
        tg(gang, GROUP_A, 3, node_selector={"kubernetes.io/hostname": workers[0].metadata.name}),
        tg(gang, GROUP_B, 1, node_selector=UNSATISFIABLE_NODE_SELECTOR)])
    gang.create_job(gang.app_id, annotations, 3)
    gang.check_app_status(gang.app_id, States.Application.Accepted)
    prefix = f"tg-{gang.app_id}-{GROUP_A}-"
    kube.wait_for_placeholders(gang.ns, prefix, 3, phase="Running")
    for ph in kube.list_placeholders(gang.ns, prefix):
        kube.delete_pod(ph.metadata.name, gang.ns)

    # upstream sleeps 5 s for the scheduler to remove the allocations; here they are awaited
    def released() -> bool:
        return not rest.get_app_info(DEFAULT_PARTITION, gang.ns_queue, gang.app_id).get("allocations")
    wait_for(released, timeout=TIMEOUT, message="Placeholder allocation not removed from app")
    for node in rest.get_nodes(DEFAULT_PARTITION):
        for alloc in node.get("allocations") or []:
            assert alloc["applicationId"] != gang.app_id, "Placeholder allocation not removed from node"
    queue = rest.get_queue(DEFAULT_PARTITION, gang.ns_queue)
    for name in ("vcore", "memory"):
        assert resource_value(queue.get("allocatedResource"), name) == 0, "Placeholder allocation not removed from queue"
        assert resource_value(queue.get("absUsedCapacity"), name) == 0, "Placeholder allocation not removed from queue"


def test_verify_completed_job_placeholders_cleanup(gang):
    """It("Verify_Completed_Job_Placeholders_Cleanup")"""
    annotations = PodAnnotation(task_groups=[tg(gang, GROUP_A, 3, node_selector=UNSATISFIABLE_NODE_SELECTOR),
                                             tg(gang, GROUP_B, 3)])
    job = gang.create_job(gang.app_id, annotations, 1)
    gang.check_app_status(gang.app_id, States.Application.Accepted)
    gang.kube.wait_for_placeholders(gang.ns, f"tg-{gang.app_id}-{GROUP_B}-", 3, phase="Running")
    tg_pods = gang.kube.list_placeholders(gang.ns, f"tg-{gang.app_id}-")
    gang.kube.delete_job(job.metadata.name, gang.ns)
    gang.job_names = []
    gang.check_app_status(gang.app_id, States.Application.Completing)
    for ph in tg_pods:
        gang.kube.wait_for_pod_terminated(gang.ns, ph.metadata.name)
    assert not gang.rest.get_app_info(DEFAULT_PARTITION, gang.ns_queue, gang.app_id).get("allocations")


def verify_originator_deletion_case(gang: Gang, with_owner_ref: bool) -> None:
    kube = gang.kube
    pod_conf = TestPodConfig(
        name="gang-driver-pod" + rand_seq(5), labels={"app": "sleep-" + rand_seq(5), "applicationId": gang.app_id},
        annotations=PodAnnotation(task_groups=[tg(gang, GROUP_A, 3, node_selector=UNSATISFIABLE_NODE_SELECTOR),
                                               tg(gang, GROUP_B, 3)]),
        resources={"requests": {"cpu": gang.min_resource["cpu"], "memory": gang.min_resource["memory"]}})
    pod = init_test_pod(pod_conf)
    if with_owner_ref:
        config_map = kube.core.create_namespaced_config_map(gang.ns, {"metadata": {"name": "test-cm",
                                                                                   "uid": "test-cm-uid"},
                                                                      "data": {"test": "test"}})
        pod["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap",
                                               "name": config_map.metadata.name, "uid": config_map.metadata.uid}]
    try:
        originator = kube.create_pod(pod, gang.ns)
        gang.check_app_status(gang.app_id, States.Application.Accepted)
        kube.wait_for_placeholders(gang.ns, f"tg-{gang.app_id}-{GROUP_B}-", 3, phase="Running")
        tg_pods = kube.list_placeholders(gang.ns, f"tg-{gang.app_id}-")
        kube.delete_pod(originator.metadata.name, gang.ns)
        for ph in tg_pods:
            kube.wait_for_pod_terminated(gang.ns, ph.metadata.name)
        assert not gang.rest.get_app_info(DEFAULT_PARTITION, gang.ns_queue, gang.app_id).get("allocations")
    finally:
        if with_owner_ref:
            kube.core.delete_namespaced_config_map("test-cm", gang.ns)


def test_verify_originator_deletion_trigger_placeholders_cleanup(gang):
    """It("Verify_OriginatorDeletion_Trigger_Placeholders_Cleanup")"""
    verify_originator_deletion_case(gang, False)


def test_verify_originator_deletion_with_ownerreference_trigger_placeholders_cleanup(gang):
    """It("Verify_OriginatorDeletionWithOwnerreference_Trigger_Placeholders_Cleanup")"""
    verify_originator_deletion_case(gang, True)


def test_verify_gangapp_fifo_order(gang):
    """It("Verify_GangApp_FIFO_Order"): with a 300m/300M namespace quota, appA runs, appB's gang reserves
    the rest and appC waits; once appA is deleted: appA Completing, appB Running, appC Accepted."""
    namespace = gang.kube.update_namespace(gang.ns, {
        "yunikorn.apache.org/namespace.quota": "{\"cpu\": \"300m\", \"memory\": \"300M\"}"})
    assert namespace.status.phase == "Active"
    app_a, app_b, app_c = ("app-a-" + rand_seq(5), "app-b-" + rand_seq(5), "app-c-" + rand_seq(5))
    gang.min_resource = {"cpu": "100m", "memory": "100M"}
    job_a = gang.create_job(app_a, PodAnnotation(task_group_name=GROUP_A, task_groups=[tg(gang, GROUP_A, 0)]), 1)
    gang.kube.wait_for_job_pods(gang.ns, job_a.metadata.name, job_a.spec.parallelism)
    gang.create_job(app_b, PodAnnotation(task_group_name=GROUP_B, task_groups=[tg(gang, GROUP_B, 3)]), 3)
    gang.kube.wait_for_placeholders(gang.ns, f"tg-{app_b}-", 3)
    gang.create_job(app_c, PodAnnotation(task_group_name=GROUP_C, task_groups=[tg(gang, GROUP_C, 0)]), 1)
    gang.kube.wait_for_placeholders(gang.ns, f"tg-{app_b}-", 2, phase="Running")
    gang.kube.delete_job(job_a.metadata.name, gang.ns)
    gang.job_names = gang.job_names[1:]
    gang.check_app_status(app_a, States.Application.Completing)
    gang.check_app_status(app_b, States.Application.Running)
    gang.check_app_status(app_c, States.Application.Accepted)
    info = gang.rest.get_app_info(DEFAULT_PARTITION, gang.ns_queue, app_a)
    assert not info.get("allocations"), "Allocations count is not correct"
    assert not info.get("placeholderData"), "Placeholder count is not correct"
    info = gang.rest.get_app_info(DEFAULT_PARTITION, gang.ns_queue, app_b)
    assert len(info["allocations"]) == 3, "Allocations count is not correct"
    assert len(info["placeholderData"]) == 1, "Placeholder count is not correct"
    assert info["placeholderData"][0]["count"] == 3, "Placeholder count is not correct"
    info = gang.rest.get_app_info(DEFAULT_PARTITION, gang.ns_queue, app_c)
    assert not info.get("allocations"), "Allocations count is not correct"
    assert not info.get("placeholderData"), "Placeholder count is not correct"


def test_verify_hugepage(gang):
    """It("Verify_HugePage")"""
    hugepage_key = "hugepages-2Mi"
    if not any(from_kubernetes({hugepage_key: (n.status.capacity or {}).get(hugepage_key, "0")})[hugepage_key]
               for n in gang.kube.get_nodes().items):
        pytest.skip("Skip hugepages test as no node has hugepages")
    gang.min_resource[hugepage_key] = "100Mi"
    job = gang.create_job(gang.app_id, PodAnnotation(task_group_name=GROUP_A, task_groups=[tg(gang, GROUP_A, 3)]), 3)
    gang.kube.wait_for_job_pods(gang.ns, job.metadata.name, job.spec.parallelism)
    gang.check_app_status(gang.app_id, States.Application.Running)
    gang.wait_for_placeholder_data(gang.app_id, GROUP_A, 3, 3, 0)
    info = gang.rest.get_app_info(DEFAULT_PARTITION, gang.ns_queue, gang.app_id)
    assert len(info["placeholderData"]) == 1, "Placeholder count is not correct"
    assert len(info["allocations"]) == 3, "Allocations count is not correct"
    assert info["usedResource"][hugepage_key] == 314572800, "Used huge page resource is not correct"


def check_originator(app: dict, originator: str) -> None:
    for alloc in app["allocations"]:
        if alloc["allocationTags"].get("kubernetes.io/meta/podName") == originator:
            assert alloc["originator"] is True, "Originator pod should be a originator pod"
            assert alloc["placeholder"] is False, "Originator pod should not be a placeholder pod"
        else:
            assert alloc["originator"] is False, "Placeholder pod should not be a originator pod"
            assert alloc["placeholder"] is True, "Placeholder pod should be a placeholder pod"


def test_verify_gang_app_originator_pod_does_not_change_after_restart(gang):
    """It("Verify_Gang_App_Originator_Pod_Does_Not_Change_After_Restart")"""
    placeholder_count = 5
    pod = init_test_pod(TestPodConfig(
        name="gang-driver-pod-" + rand_seq(5), labels={"app": "sleep-" + rand_seq(5), "applicationId": gang.app_id},
        annotations=PodAnnotation(task_groups=[tg(gang, GROUP_A, placeholder_count)]),
        resources={"requests": {"cpu": gang.min_resource["cpu"], "memory": gang.min_resource["memory"]}}))
    originator = gang.kube.create_pod(pod, gang.ns)
    for restarted in (False, True):
        if restarted:
            gang.yk.restart_yunikorn()
        gang.check_app_status(gang.app_id, States.Application.Running)
        gang.rest.wait_for_all_exec_pods_allocated(DEFAULT_PARTITION, gang.ns_queue, gang.app_id,
                                                   1 + placeholder_count)
        check_originator(gang.rest.get_app_info(DEFAULT_PARTITION, gang.ns_queue, gang.app_id),
                         originator.metadata.name)
