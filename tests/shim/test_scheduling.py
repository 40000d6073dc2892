"""End to end: kubesim -> informers -> shim context -> real core -> binder -> kubesim, observed only
through the Kubernetes API (official client) and kubesim's request log."""

import pytest

from tests.queues import config, queue
from tests.shim.doubles import wait_for


def small_and_big(small: int) -> str:
    """Queues small (``small`` vcores at most) and big under root; pods name their queue."""
    return config(queue("small", max={"vcore": small}), queue("big"), create=False)


def test_pods_are_bound_once_with_events(cluster):
    cluster.sim.seed_nodes(2)
    cluster.start_scheduler()
    names = [f"p{i}" for i in range(12)]
    for name in names:
        cluster.pod(name)
    cluster.wait_bound(*names)
    wait_for(lambda: set(cluster.binds_per_pod()) == set(names))
    cluster.assert_consistent()
    wait_for(lambda: len(cluster.events("Scheduled")) == 12)
    assert cluster.events("Scheduled", "p0")[0].message.startswith("Successfully assigned default/p0 to node ")
    state = cluster.service.state()
    assert state.state == "Running" and sum(p.state == "Bound" for p in state.pods) == 12


def test_queue_quota_keeps_extra_pods_pending_with_a_reason(cluster):
    cluster.sim.seed_nodes(2)
    cluster.configure(small_and_big(1))
    cluster.start_scheduler()
    names = [f"q{i}" for i in range(5)]
    for name in names:
        cluster.pod(name, cpu="300m", labels={"queue": "root.small", "applicationId": "quota-app"})
    wait_for(lambda: sum(cluster.bound(n) for n in names) == 3)
    waiting = [n for n in names if not cluster.bound(n)]
    wait_for(lambda: all(cluster.events("FailedScheduling", n) for n in waiting))
    assert "root.small" in cluster.events("FailedScheduling", waiting[0])[0].message

    def unschedulable(name):  # the condition is written apart from the event, maybe after it
        conditions = cluster.core_api.read_namespaced_pod_status(name, "default").status.conditions or []
        return any(c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
                   for c in conditions)

    wait_for(lambda: all(unschedulable(n) for n in waiting), message="PodScheduled=False on the waiting pods")
    assert sum(cluster.bound(n) for n in names) == 3
    cluster.assert_consistent()


def test_hot_reload_changes_scheduling_and_a_bad_config_keeps_the_old_one(cluster):
    cluster.sim.seed_nodes(2)
    cluster.configure(small_and_big(1))
    cluster.start_scheduler()
    names = [f"h{i}" for i in range(4)]
    for name in names:
        cluster.pod(name, cpu="400m", labels={"queue": "root.small", "applicationId": "hot-app"})
    wait_for(lambda: sum(cluster.bound(n) for n in names) == 2)
    cluster.configure("partitions: [this is not a queue config")
    wait_for(lambda: cluster.events("ConfigurationRefused"))
    assert sum(cluster.bound(n) for n in names) == 2  # the old limit still holds
    cluster.configure(small_and_big(4))
    cluster.wait_bound(*names)
    cluster.assert_consistent()


def test_node_selector_affinity_and_taints(cluster):
    cluster.node("ssd-node", labels={"disk": "ssd", "zone": "a"})
    cluster.node("hdd-node", labels={"disk": "hdd", "zone": "b"})
    cluster.node("gpu-node", labels={"zone": "c"}, taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}])
    cluster.start_scheduler()
    cluster.pod("wants-ssd", nodeSelector={"disk": "ssd"})
    cluster.pod("wants-b", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}})
    cluster.pod("gpu-job", tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                nodeSelector={"zone": "c"})
    cluster.pod("wants-c-no-toleration", nodeSelector={"zone": "c"})
    cluster.wait_bound("wants-ssd", "wants-b", "gpu-job")
    assert cluster.node_of("wants-ssd") == "ssd-node"
    assert cluster.node_of("wants-b") == "hdd-node"
    assert cluster.node_of("gpu-job") == "gpu-node"
    wait_for(lambda: cluster.events("FailedScheduling", "wants-c-no-toleration"))
    assert "didn't match Pod's node affinity/selector" in cluster.events("FailedScheduling", "wants-c-no-toleration")[0].message
    assert not cluster.bound("wants-c-no-toleration")
    cluster.assert_consistent()


def test_untainted_pods_spread_but_never_onto_tainted_nodes(cluster):
    cluster.node("plain", cpu="2")
    cluster.node("tainted", taints=[{"key": "dedicated", "value": "x", "effect": "NoExecute"}])
    cluster.start_scheduler()
    names = [f"s{i}" for i in range(6)]
    for name in names:
        cluster.pod(name, cpu="300m")
    cluster.wait_bound(*names)
    assert {cluster.node_of(n) for n in names} == {"plain"}


def test_existing_pods_anti_affinity_keeps_unconstrained_newcomers_away(cluster):
    """Anti-affinity is symmetric: a pod without constraints must not join a pod that repels it, whether
    that pod is YuniKorn's or another scheduler's, on a plain (untainted) node."""
    cluster.node("a", cpu="4")
    cluster.node("b", cpu="4")
    cluster.node("c", cpu="4")
    repel = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"role": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    cluster.pod("foreign-guard", cpu="100m", scheduler="default-scheduler", node="c", affinity=repel)
    cluster.start_scheduler()
    cluster.pod("guard", cpu="100m", affinity=repel, nodeSelector={"kubernetes.io/hostname": "a"})
    cluster.wait_bound("guard")
    # Unconstrained db pods of the same shape: only node b is free of repelling pods.
    names = [f"db{i}" for i in range(4)]
    for name in names:
        cluster.pod(name, cpu="100m", labels={"role": "db"})
    cluster.wait_bound(*names)
    assert {cluster.node_of(n) for n in names} == {"b"}
    cluster.pod("web", cpu="100m", labels={"role": "web"})  # not repelled: may go anywhere
    cluster.wait_bound("web")
    cluster.assert_consistent()


def test_a_tolerating_pod_is_not_held_back_by_an_intolerant_one_of_the_same_size(cluster):
    cluster.node("tainted", cpu="1", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])
    cluster.start_scheduler()
    cluster.pod("intolerant", cpu="500m", labels={"applicationId": "same"})
    wait_for(lambda: cluster.events("FailedScheduling", "intolerant"))
    cluster.pod("tolerant", cpu="500m", labels={"applicationId": "same"},
                tolerations=[{"key": "dedicated", "operator": "Exists"}])
    cluster.wait_bound("tolerant")
    assert cluster.node_of("tolerant") == "tainted" and not cluster.bound("intolerant")


def test_foreign_pods_take_capacity_until_deleted(cluster):
    cluster.node("only", cpu="1")
    cluster.pod("foreign", cpu="800m", scheduler="default-scheduler", node="only")
    cluster.start_scheduler()
    cluster.pod("ours", cpu="500m")
    wait_for(lambda: cluster.events("FailedScheduling", "ours"))
    cluster.scheduler.barrier()
    assert not cluster.bound("ours")
    cluster.core_api.delete_namespaced_pod("foreign", "default")
    cluster.wait_bound("ours")
    cluster.assert_consistent()


def test_completed_pods_free_their_resources(cluster):
    cluster.node("only", cpu="1")
    cluster.start_scheduler()
    cluster.pod("first", cpu="800m")
    cluster.wait_bound("first")
    cluster.pod("second", cpu="800m")
    wait_for(lambda: cluster.events("FailedScheduling", "second"))
    cluster.sim.complete_pod("default", "first")
    cluster.wait_bound("second")
    cluster.assert_consistent()


def test_recovery_counts_existing_pods_before_scheduling_new_ones(cluster):
    cluster.node("n1", cpu="2")
    cluster.node("n2", cpu="2")
    # already running before the scheduler starts: ours (bound earlier) and a foreign one
    cluster.pod("old-ours", cpu="1500m", node="n1", labels={"applicationId": "old-app"})
    cluster.pod("old-foreign", cpu="1500m", scheduler="default-scheduler", node="n2")
    pending = [f"new{i}" for i in range(4)]
    for name in pending:
        cluster.pod(name, cpu="400m")
    cluster.start_scheduler()
    state = cluster.service.latest_state()
    assert state.recovery.nodes_total == 2 and state.recovery.nodes_recovered == 2
    assert state.recovery.pods_recovered == 2
    wait_for(lambda: sum(cluster.bound(n) for n in pending) == 2)
    wait_for(lambda: any(cluster.events("FailedScheduling", n) for n in pending if not cluster.bound(n)))
    assert sum(cluster.bound(n) for n in pending) == 2  # only 2 x 500m were left
    assert set(cluster.binds_per_pod()) <= set(pending)
    cluster.assert_consistent()


def test_restart_recovers_state_and_finishes_the_work(cluster):
    cluster.sim.seed_nodes(2, cpu="2")
    cluster.start_scheduler()
    first = [f"a{i}" for i in range(6)]
    for name in first:
        cluster.pod(name, cpu="500m")
    cluster.wait_bound(*first)
    cluster.stop_scheduler()
    second = [f"b{i}" for i in range(4)]
    for name in second:
        cluster.pod(name, cpu="500m")
    cluster.start_scheduler()
    wait_for(lambda: sum(cluster.bound(n) for n in second) == 2)
    wait_for(lambda: any(cluster.events("FailedScheduling", n) for n in second if not cluster.bound(n)))
    assert sum(cluster.bound(n) for n in second) == 2  # 4 cpu: 6 old pods + 2 new
    cluster.assert_consistent()


@pytest.mark.timeout(90)
def test_faults_lose_nothing_and_bind_nothing_twice(cluster):
    cluster.sim.seed_nodes(4)
    cluster.start_scheduler()
    faults = cluster.sim.faults
    faults.fail(verb="create", resource="pods/binding", status=500, count=5)
    faults.fail(verb="create", resource="pods/binding", status=429, count=5, retry_after=0)
    faults.latency(verb="create", resource="pods/binding", seconds=0.02)
    names = []
    for i in range(40):
        names.append(f"f{i}")
        cluster.pod(names[-1])
        if i == 10:
            faults.drop_watches()
        if i == 20:
            faults.gone_next_watches(count=2, resource="pods")
            faults.drop_watches()
    cluster.wait_bound(*names, timeout=60)
    faults.clear()
    wait_for(lambda: set(cluster.binds_per_pod()) == set(names))  # the log entry follows the answer
    cluster.assert_consistent()
    # The shim learns of each bind from the binder and from the pod watch, both after kubesim answered.
    wait_for(lambda: sorted(p.name for p in cluster.service.state().pods if p.state == "Bound") == sorted(names),
             timeout=10, message="every pod Bound in the shim's state")


def test_bind_failure_after_retries_schedules_the_pod_again(cluster):
    cluster.sim.seed_nodes(2)
    cluster.start_scheduler()
    cluster.sim.faults.fail(verb="create", resource="pods/binding", status=500, count=5)  # one bind's retries
    cluster.pod("unlucky")
    cluster.wait_bound("unlucky")
    wait_for(lambda: cluster.events("PodBindFailure", "unlucky"))
    wait_for(lambda: cluster.binds_per_pod()["unlucky"] == 1)
    cluster.assert_consistent()
