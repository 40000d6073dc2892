"""Preemption end to end: the core chooses victims, the shim evicts them through the Eviction API
(disruption budgets honoured), and the preemptor is bound where they ran."""

from kubernetes import client as k8s

from tests.queues import config, queue
from tests.shim.doubles import wait_for

A_AND_B = (queue("a", guaranteed={"vcore": 1}, properties={"preemption.delay": "0s"}), queue("b"))
QUEUES = config(*A_AND_B, create=False)


def fill(cluster, names, queue, app, **labels):
    """Pods of 500m CPU ``names`` in ``queue``, bound."""
    for name in names:
        cluster.pod(name, cpu="500m", labels={"queue": queue, "applicationId": app, **labels})
    cluster.wait_bound(*names)
    return names


def fill_queue_b(cluster, count=4, **labels):
    names = fill(cluster, [f"b{i}" for i in range(count)], "root.b", "b-app", **labels)
    for name in names:  # their kubelet reports them running and ready
        cluster.sim.complete_pod("default", name, "Running")
    return names


def evictions(cluster, code=201):
    return [r.name for r in cluster.sim.request_log if r.subresource == "eviction" and r.code == code]


def test_a_queue_under_its_guarantee_evicts_a_victim_and_its_pod_is_bound_there(cluster):
    cluster.node("n1", cpu="2")
    cluster.configure(QUEUES)
    cluster.start_scheduler()
    victims = fill_queue_b(cluster)
    cluster.pod("a0", cpu="500m", labels={"queue": "root.a", "applicationId": "a-app"})
    cluster.wait_bound("a0")
    evicted = evictions(cluster)
    assert len(evicted) == 1 and evicted[0] in victims and evicted[0] not in cluster.pods()
    wait_for(lambda: cluster.events("Preempted", evicted[0]), message="the victim's event")
    event = cluster.events("Preempted", evicted[0])[0]
    assert "preempted by default/a0 of application a-app in queue root.a" in event.message
    cluster.assert_consistent()


def test_a_victim_protected_by_its_disruption_budget_is_kept_and_another_is_evicted(cluster):
    cluster.node("n1", cpu="2")
    cluster.configure(QUEUES)
    cluster.start_scheduler()
    others = fill(cluster, [f"c{i}" for i in range(2)], "root.b", "b-app")
    for name in others:
        cluster.sim.complete_pod("default", name, "Running")
    protected = fill_queue_b(cluster, count=2, tier="web")  # the youngest: chosen first
    k8s.PolicyV1Api(cluster.api).create_namespaced_pod_disruption_budget("default", {
        "metadata": {"name": "web"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": {"tier": "web"}}}})
    cluster.pod("a0", cpu="500m", labels={"queue": "root.a", "applicationId": "a-app"})
    cluster.wait_bound("a0")
    assert all(name in cluster.pods() for name in protected), "the budget's pods stay"
    assert len(evictions(cluster)) == 1 and evictions(cluster)[0] in others
    refused = evictions(cluster, 429)
    assert refused and set(refused) <= set(protected), "the youngest victim was protected, then another chosen"
    wait_for(lambda: cluster.events("PreemptionRefused", refused[0]), message="the kept victim's event")
    cluster.assert_consistent()


def test_opted_out_pods_are_never_evicted(cluster):
    cluster.node("n1", cpu="2")
    cluster.configure(QUEUES)
    scheduling = k8s.SchedulingV1Api(cluster.api)
    scheduling.create_priority_class({"metadata": {"name": "keep", "annotations": {
        "yunikorn.apache.org/allow-preemption": "false"}}, "value": 0})
    scheduling.create_priority_class({"metadata": {"name": "never"}, "value": 0, "preemptionPolicy": "Never"})
    cluster.start_scheduler()
    for i in range(2):
        cluster.pod(f"kept{i}", cpu="500m", labels={"queue": "root.b", "applicationId": "b-app"},
                    priorityClassName="keep")
    for i in range(2):
        cluster.core_api.create_namespaced_pod("default", {
            "metadata": {"name": f"annotated{i}", "labels": {"queue": "root.b", "applicationId": "b-app"},
                         "annotations": {"yunikorn.apache.org/allow-preemption": "false"}},
            "spec": {"schedulerName": "yunikorn", "containers": [{"name": "main", "image": "busybox", "resources": {
                "requests": {"cpu": "500m", "memory": "64Mi"}}}]}})
    cluster.wait_bound("kept0", "kept1", "annotated0", "annotated1")
    cluster.pod("never", cpu="500m", labels={"queue": "root.a", "applicationId": "a-app"}, priorityClassName="never")
    cluster.pod("a0", cpu="500m", labels={"queue": "root.a", "applicationId": "a-app"})
    wait_for(lambda: cluster.events("FailedScheduling", "a0"), message="a0 waits")
    assert evictions(cluster) == [] and evictions(cluster, 429) == []
    assert not cluster.bound("a0") and not cluster.bound("never")


def test_a_daemonset_pod_on_a_full_node_evicts_a_lower_priority_pod_and_runs_there(cluster):
    cluster.node("n1", cpu="2")
    cluster.node("n2", cpu="2")
    cluster.configure(QUEUES)
    k8s.SchedulingV1Api(cluster.api).create_priority_class({"metadata": {"name": "daemons"}, "value": 1000})
    cluster.start_scheduler()
    workers = [f"w{i}" for i in range(8)]
    for name in workers:
        cluster.pod(name, cpu="500m", labels={"queue": "root.b", "applicationId": "work"})
    cluster.wait_bound(*workers)
    nodes = {name: cluster.node_of(name) for name in workers}
    pinned = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}}
    cluster.pod("daemon-n2", cpu="500m", labels={"queue": "root.b", "applicationId": "daemons"},
                affinity=pinned, priorityClassName="daemons")
    cluster.wait_bound("daemon-n2")
    assert cluster.node_of("daemon-n2") == "n2"
    [evicted] = evictions(cluster)
    assert nodes[evicted] == "n2" and evicted not in cluster.pods()
    cluster.assert_consistent()


PRIORITY_QUEUES = config(*A_AND_B, queue(
    "parent",
    queue("sandbox", guaranteed={"vcore": "500m"}),
    queue("high", guaranteed={"vcore": "500m"}, properties={"preemption.delay": "1s", "priority.offset": "100"}),
    queue("low", guaranteed={"vcore": "500m"}, properties={"preemption.delay": "1s", "priority.offset": "-100"}),
    max={"vcore": "1500m"}), create=False)


def test_a_full_parent_max_gives_room_to_the_queue_of_higher_priority_only(cluster):
    """Upstream's e2e Verify_preemption_on_priority_queue, on a node with room to spare."""
    cluster.node("n1", cpu="4")
    cluster.configure(PRIORITY_QUEUES)
    cluster.start_scheduler()
    sandbox = fill(cluster, [f"s{i}" for i in range(3)], "root.parent.sandbox", "sandbox-app")
    cluster.pod("low", cpu="500m", labels={"queue": "root.parent.low", "applicationId": "low-app"})
    cluster.pod("high", cpu="500m", labels={"queue": "root.parent.high", "applicationId": "high-app"})
    cluster.wait_bound("high")
    assert len(evictions(cluster)) == 1 and evictions(cluster)[0] in sandbox
    assert not cluster.bound("low")
    low = next(a for a in cluster.scheduler.snapshot().partition("default").applications
               if a.application_id == "low-app")
    logged = {reason for request in low.requests for reason, _, _ in request.failure_log}
    assert "Not enough queue quota" in logged
