"""Gang scheduling end to end: pods declaring task groups, created with the official client in kubesim,
scheduled by the real core and shim; observed through the Kubernetes API and the core's snapshot."""

from __future__ import annotations

import json
from collections import Counter

from tests.queues import config, queue
from tests.shim.doubles import wait_for

SPARK = [{"name": "driver", "minMember": 1, "minResource": {"cpu": "1", "memory": "1Gi"}},
         {"name": "executor", "minMember": 10, "minResource": {"cpu": "1", "memory": "1Gi"}}]


def batch_queue(max_vcore: int) -> str:
    """One queue, batch, of ``max_vcore`` vcores at most; pods name their queue."""
    return config(queue("batch", max={"vcore": max_vcore}), create=False)


def gang_pod(cluster, name: str, app: str, group: str, task_groups: list | None = None, cpu: str = "1",
             policy: str = "", queue: str = "root.batch") -> str:
    annotations = {"yunikorn.apache.org/task-group-name": group}
    if task_groups is not None:
        annotations["yunikorn.apache.org/task-groups"] = json.dumps(task_groups)
    if policy:
        annotations["yunikorn.apache.org/schedulingPolicyParameters"] = policy
    body = {"metadata": {"name": name, "namespace": "default", "annotations": annotations,
                         "labels": {"applicationId": app, "queue": queue}},
            "spec": {"schedulerName": "yunikorn",
                     "containers": [{"name": "main", "image": "spark",
                                     "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}}
    return cluster.core_api.create_namespaced_pod("default", body).metadata.uid


def placeholders(cluster, app: str | None = None) -> dict[str, dict]:
    return {name: pod for name, pod in cluster.pods().items()
            if pod["metadata"].get("annotations", {}).get("internal.yunikorn.apache.org/placeholder") == "true"
            and (app is None or pod["metadata"]["annotations"].get("yunikorn.apache.org/app-id") == app)}


def bound_placeholders(cluster, app: str | None = None) -> dict[str, str]:
    return {name: pod["spec"]["nodeName"] for name, pod in placeholders(cluster, app).items()
            if pod["spec"].get("nodeName")}


def core_app(cluster, app: str):
    partition = cluster.scheduler.snapshot().partition("default")
    return next((a for a in partition.applications + partition.terminated_applications if a.application_id == app),
                None)


def phase(cluster, name: str) -> str:
    return cluster.pods()[name].get("status", {}).get("phase", "")


def start(cluster, max_vcore: int = 100, nodes: int = 3, cpu: str = "4", **extra: str) -> None:
    for i in range(nodes):
        cluster.node(f"n{i}", cpu=cpu, memory="64Gi")
    cluster.configure(batch_queue(max_vcore), **extra)
    cluster.start_scheduler()


def test_a_spark_driver_starts_only_once_its_whole_gang_fits(cluster):
    start(cluster, nodes=2, cpu="5")  # room for 10 of the 11 placeholders (each 1 cpu)
    gang_pod(cluster, "driver", "spark-1", "driver", SPARK)
    wait_for(lambda: len(bound_placeholders(cluster, "spark-1")) == 10, message="10 placeholders bound")
    made = placeholders(cluster, "spark-1")
    assert len(made) == 11
    sample = next(iter(made.values()))
    assert sample["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:3.7"
    assert sample["metadata"]["ownerReferences"][0]["name"] == "driver"
    assert all(name.startswith("tg-spark-1-") for name in made)
    assert not cluster.bound("driver") and core_app(cluster, "spark-1").state == "Accepted"

    cluster.node("n2", cpu="4", memory="64Gi")  # now all 11 fit
    cluster.wait_bound("driver")
    wait_for(lambda: len(placeholders(cluster, "spark-1")) == 10, message="the driver's placeholder deleted")
    nodes_held = Counter(bound_placeholders(cluster, "spark-1").values())
    executors = [f"exec-{i}" for i in range(10)]
    for name in executors:
        gang_pod(cluster, name, "spark-1", "executor")
    cluster.wait_bound(*executors)
    wait_for(lambda: not placeholders(cluster, "spark-1"), message="every placeholder replaced")
    assert Counter(cluster.node_of(n) for n in executors) == nodes_held  # each took a placeholder's node
    wait_for(lambda: cluster.events("TaskGroupMatch", "exec-0"))
    data = {d.task_group_name: d for d in core_app(cluster, "spark-1").placeholder_data}
    assert (data["executor"].count, data["executor"].replaced, data["executor"].timed_out) == (10, 10, 0)
    assert data["driver"].replaced == 1
    cluster.assert_consistent()


def test_two_gangs_competing_for_one_queue_never_split_it(cluster):
    groups = [{"name": "worker", "minMember": 4, "minResource": {"cpu": "500m", "memory": "1Gi"}}]
    start(cluster, max_vcore=2)  # exactly one gang's placeholders (4 x 500m)
    gang_pod(cluster, "a-0", "gang-a", "worker", groups, cpu="500m")
    gang_pod(cluster, "b-0", "gang-b", "worker", groups, cpu="500m")
    wait_for(lambda: cluster.bound("a-0") or cluster.bound("b-0"), message="one gang to start")
    winner, loser = ("a", "b") if cluster.bound("a-0") else ("b", "a")
    for i in range(1, 4):
        gang_pod(cluster, f"{winner}-{i}", f"gang-{winner}", "worker", cpu="500m")
    cluster.wait_bound(*(f"{winner}-{i}" for i in range(4)))
    assert not bound_placeholders(cluster, f"gang-{loser}") and not cluster.bound(f"{loser}-0")
    for i in range(4):  # the winner finishes: the other gang gets the queue
        cluster.core_api.delete_namespaced_pod(f"{winner}-{i}", "default")
    cluster.wait_bound(f"{loser}-0")
    cluster.assert_consistent()


def test_soft_timeout_schedules_the_real_pods_without_the_gang(cluster):
    start(cluster, nodes=1, cpu="4")
    groups = [{"name": "worker", "minMember": 6, "minResource": {"cpu": "1", "memory": "1Gi"}}]  # never fits
    gang_pod(cluster, "soft-0", "soft", "worker", groups, policy="placeholderTimeoutInSeconds=1")
    wait_for(lambda: cluster.events("PlaceholderTimeOut", "soft-0"), timeout=20)
    cluster.wait_bound("soft-0")
    wait_for(lambda: not placeholders(cluster, "soft"), message="the placeholders deleted")
    data = core_app(cluster, "soft").placeholder_data[0]
    assert data.count == 6 and data.timed_out == 6 and data.replaced == 0
    assert [s for _, s in core_app(cluster, "soft").state_log][:4] == ["New", "Accepted", "Resuming", "Accepted"]
    cluster.assert_consistent()


def test_hard_timeout_fails_the_pods(cluster):
    start(cluster, nodes=1, cpu="4")
    groups = [{"name": "worker", "minMember": 6, "minResource": {"cpu": "1", "memory": "1Gi"}}]
    gang_pod(cluster, "hard-0", "hard", "worker", groups,
             policy="placeholderTimeoutInSeconds=1 gangSchedulingStyle=Hard")
    wait_for(lambda: phase(cluster, "hard-0") == "Failed", timeout=20)
    assert cluster.pods()["hard-0"]["status"]["reason"] == "ResourceReservationTimeout"
    wait_for(lambda: not placeholders(cluster, "hard"), message="the placeholders deleted")
    wait_for(lambda: core_app(cluster, "hard").state == "Failed")
    wait_for(lambda: cluster.events("PlaceholderTimeOut", "hard-0"))


def test_a_gang_larger_than_its_queue_is_rejected_up_front(cluster):
    start(cluster, max_vcore=4)
    gang_pod(cluster, "huge-0", "huge", "executor", SPARK)  # 11 vcore of placeholders in a 4 vcore queue
    wait_for(lambda: phase(cluster, "huge-0") == "Failed")
    message = cluster.pods()["huge-0"]["status"]["message"]
    assert "placeholder ask" in message and "root.batch" in message
    assert not placeholders(cluster)


def test_malformed_task_groups_are_reported_and_the_pod_runs_without_a_gang(cluster):
    start(cluster)
    body_groups = [{"name": "worker", "minMember": -1, "minResource": {"cpu": "1"}}]
    gang_pod(cluster, "neg", "neg-app", "worker", body_groups)
    gang_pod(cluster, "unknown", "known-app", "nosuchgroup",
             [{"name": "worker", "minMember": 1, "minResource": {"cpu": "1", "memory": "1Gi"}}])
    cluster.wait_bound("neg", "unknown")
    events = wait_for(lambda: cluster.events("TaskGroupsError", "neg"))
    assert "minMember must be a whole number of at least 0" in events[0].message
    events = wait_for(lambda: cluster.events("TaskGroupsError", "unknown"))
    assert "task group nosuchgroup is not declared" in events[0].message
    assert not placeholders(cluster, "neg-app")
    cluster.assert_consistent()


def test_bad_json_task_groups_are_reported(cluster):
    start(cluster)
    body = {"metadata": {"name": "badjson", "namespace": "default", "labels": {"applicationId": "bad", "queue": "root.batch"},
                         "annotations": {"yunikorn.apache.org/task-groups": "[{not json"}},
            "spec": {"schedulerName": "yunikorn", "containers": [{"name": "main", "image": "x"}]}}
    cluster.core_api.create_namespaced_pod("default", body)
    cluster.wait_bound("badjson")
    assert "not valid JSON" in wait_for(lambda: cluster.events("TaskGroupsError", "badjson"))[0].message


def test_disabling_gang_scheduling_ignores_task_groups(cluster):
    start(cluster, **{"service.disableGangScheduling": "true"})
    gang_pod(cluster, "plain", "plain-app", "driver", SPARK)
    cluster.wait_bound("plain")
    assert not placeholders(cluster) and not core_app(cluster, "plain-app").placeholder_data


def test_a_restart_during_reserving_continues_the_gang(cluster):
    start(cluster, nodes=2, cpu="5")
    gang_pod(cluster, "driver", "spark-r", "driver", SPARK)
    wait_for(lambda: len(bound_placeholders(cluster, "spark-r")) == 10, message="10 placeholders bound")
    before = set(placeholders(cluster, "spark-r"))
    cluster.stop_scheduler()
    cluster.start_scheduler()
    wait_for(lambda: core_app(cluster, "spark-r") is not None
             and sum(a.placeholder for a in core_app(cluster, "spark-r").allocations) == 10,
             message="the bound placeholders recovered as the gang's allocations")
    cluster.node("n2", cpu="4", memory="64Gi")
    cluster.wait_bound("driver")
    assert set(placeholders(cluster, "spark-r")) < before  # no new placeholder was made
    cluster.assert_consistent()


def test_placeholder_settings_shape_the_placeholder_pods(cluster):
    start(cluster, **{"service.placeholderImage": "registry.example/pause:1", "service.placeholderRunAsUser": "1000",
                      "service.placeholderFsGroup": "2000"})
    groups = [{"name": "w", "minMember": 2, "minResource": {"cpu": "1", "memory": "1Gi"},
               "nodeSelector": {"kubernetes.io/hostname": "n1"}, "labels": {"team": "ml"},
               "tolerations": [{"key": "gpu", "operator": "Exists"}]}]
    gang_pod(cluster, "w-0", "shaped", "w", groups)  # one real pod: one placeholder stays
    cluster.wait_bound("w-0")
    assert cluster.node_of("w-0") == "n1"  # the placeholder's node selector decided, the real pod followed
    (left,) = wait_for(lambda: list(placeholders(cluster, "shaped").values()))
    spec = left["spec"]
    assert spec["containers"][0]["image"] == "registry.example/pause:1"
    assert spec["containers"][0]["resources"]["limits"] == {"cpu": "1", "memory": "1Gi"}
    assert spec["securityContext"] == {"runAsUser": 1000, "fsGroup": 2000}
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "n1"} and spec["tolerations"][0]["key"] == "gpu"
    assert left["metadata"]["labels"] == {"team": "ml"} and spec["nodeName"] == "n1"
    assert left["metadata"]["annotations"]["yunikorn.apache.org/task-group-name"] == "w"


def test_a_bad_placeholder_setting_refuses_the_configuration(cluster):
    start(cluster)
    cluster.configure(batch_queue(100), **{"service.placeholderRunAsUser": "root"})
    events = wait_for(lambda: cluster.events("ConfigurationRefused"))
    assert "service.placeholderRunAsUser" in events[0].message


def test_placeholders_that_cannot_be_created_fail_the_application(cluster):
    start(cluster)
    gang_pod(cluster, "lonely", "refused", "w", [{"name": "w", "minMember": 3, "minResource": {"cpu": "1"}}])
    cluster.sim.faults.fail(verb="create", resource="pods", status=403, count=None)
    try:
        wait_for(lambda: phase(cluster, "lonely") == "Failed")
    finally:
        cluster.sim.faults.clear()
    assert cluster.pods()["lonely"]["status"]["reason"] == "PlaceholderCreationFailed"
    assert not placeholders(cluster, "refused")


def forged_placeholder(cluster, name: str, app: str, group: str, owner_uid: str = "", owner_name: str = "") -> None:
    """A pod a user made look like one of ``app``'s placeholders (label, task group, placeholder mark)."""
    metadata = {"name": name, "namespace": "default", "labels": {"applicationId": app, "queue": "root.batch"},
                "annotations": {"internal.yunikorn.apache.org/placeholder": "true",
                                "yunikorn.apache.org/task-group-name": group}}
    if owner_uid:
        metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner_name, "uid": owner_uid,
                                        "controller": False, "blockOwnerDeletion": True}]
    cluster.core_api.create_namespaced_pod("default", {
        "metadata": metadata,
        "spec": {"schedulerName": "yunikorn",
                 "containers": [{"name": "main", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]}})


def test_a_forged_placeholder_in_a_plain_application_runs_as_an_ordinary_pod(cluster):
    """F10: only the scheduler makes placeholders; before, such a pod stayed Pending with no event."""
    start(cluster, nodes=1)
    gang_pod(cluster, "plain-0", "plain", "")
    cluster.wait_bound("plain-0")
    forged_placeholder(cluster, "fake-0", "plain", "worker")
    cluster.wait_bound("fake-0")
    (event,) = wait_for(lambda: cluster.events("PlaceholderRefused", "fake-0"), message="the warning")
    assert event.type == "Warning" and "not created by the scheduler" in event.message
    assert not core_app(cluster, "plain").placeholder_data
    cluster.assert_consistent()


def test_forged_placeholders_do_not_stand_in_for_a_gangs(cluster):
    """F10: a placeholder is a pod the scheduler named for the application's gang, owned by an ordinary pod
    of that application; a pod lacking either is an ordinary member of its task group, with a warning."""
    start(cluster, nodes=2)
    groups = [{"name": "driver", "minMember": 1, "minResource": {"cpu": "1", "memory": "1Gi"}},
              {"name": "executor", "minMember": 2, "minResource": {"cpu": "1", "memory": "1Gi"}}]
    driver = gang_pod(cluster, "driver", "gang", "driver", groups)
    cluster.wait_bound("driver")
    made = set(placeholders(cluster, "gang"))
    assert len(made) == 2
    other = gang_pod(cluster, "other-0", "other", "")
    forged_placeholder(cluster, "tg-gang-executor-abcdefghij", "gang", "executor", other, "other-0")
    forged_placeholder(cluster, "fake-executor", "gang", "executor", driver, "driver")
    cluster.wait_bound("tg-gang-executor-abcdefghij", "fake-executor")
    for name in ("tg-gang-executor-abcdefghij", "fake-executor"):
        wait_for(lambda name=name: cluster.events("PlaceholderRefused", name), message=f"the warning on {name}")
    # As the executors they claim to be, they take over the gang's own placeholders.
    wait_for(lambda: not placeholders(cluster, "gang"), message="the gang's placeholders replaced")
    assert not any(cluster.events("PlaceholderRefused", name) for name in made)
    data = {d.task_group_name: d for d in core_app(cluster, "gang").placeholder_data}
    assert (data["executor"].count, data["executor"].replaced) == (2, 2)
    cluster.assert_consistent()


# Issue 26: upstream decodes task-groups into a Go struct without json tags, so its keys match
# case-insensitively; upstream's own e2e framework sends the Go field names, and "null" for none.
def test_task_groups_in_go_field_names_make_a_gang(cluster):
    start(cluster)
    groups = [{"Name": "driver", "MinMember": 1, "MinResource": {"cpu": "1", "memory": "1Gi"}},
              {"Name": "executor", "MinMember": 2, "MinResource": {"cpu": "1", "memory": "1Gi"},
               "NodeSelector": {"kubernetes.io/hostname": "n1"}, "Tolerations": None, "Affinity": None}]
    gang_pod(cluster, "driver", "go-names", "driver", groups)
    cluster.wait_bound("driver")  # in the room of the driver's placeholder
    wait_for(lambda: [node for name, node in bound_placeholders(cluster, "go-names").items() if "executor" in name]
             == ["n1", "n1"], message="the executors' 2 placeholders bound on n1, their node selector's")
    assert not cluster.events("TaskGroupsError")


def test_null_task_groups_are_no_gang_and_no_warning(cluster):
    start(cluster)
    for name, task_groups in (("plain", "null"), ("broken", "[{")):  # the second's warning follows the first's
        body = {"metadata": {"name": name, "namespace": "default", "labels": {"applicationId": name,
                                                                              "queue": "root.batch"},
                             "annotations": {"yunikorn.apache.org/task-groups": task_groups}},
                "spec": {"schedulerName": "yunikorn", "containers": [{"name": "main", "image": "x"}]}}
        cluster.core_api.create_namespaced_pod("default", body)
    cluster.wait_bound("plain", "broken")
    wait_for(lambda: cluster.events("TaskGroupsError", "broken"), message="the broken pod's warning")
    assert not placeholders(cluster) and not cluster.events("TaskGroupsError", "plain")


def test_the_pod_that_declares_the_application_is_its_originator_also_after_a_restart(cluster):
    """upstream's Task.IsOriginator: the application's first pod (never a placeholder) is the originator."""
    start(cluster)
    driver = gang_pod(cluster, "driver", "spark-o", "driver", SPARK)
    cluster.wait_bound("driver")
    executor = gang_pod(cluster, "exec-0", "spark-o", "executor")
    cluster.wait_bound("exec-0")

    def originators() -> dict[str, bool]:
        app = core_app(cluster, "spark-o")
        return {a.allocation_key: a.originator for a in app.allocations} if app is not None else {}
    wait_for(lambda: len(originators()) == 11, message="the driver, one executor and 9 placeholders allocated")
    flagged = originators()
    assert [key for key, originator in flagged.items() if originator] == [driver]
    assert flagged[executor] is False
    cluster.stop_scheduler()
    cluster.start_scheduler()
    wait_for(lambda: len(originators()) == 11, message="the allocations recovered")
    assert [key for key, originator in originators().items() if originator] == [driver]
