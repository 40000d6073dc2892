"""Node actors through kubesim: the resilience design's recovery story (Node0 / Node1 / Node2), cordon,
NotReady, lost nodes that come back with pods on them, and the states shown to readers."""

import threading

import pykka
import pytest

from actors.shim.nodeactor import ATTR_NODE_STATE
from tests.shim.cluster import Cluster
from tests.waiting import wait_for


def node_state(cluster: Cluster, name: str) -> str | None:
    views = {n.name: n.state for n in cluster.service.state().nodes}
    return views.get(name)


def held_by_core(cluster: Cluster, node: str) -> set[str]:
    found = cluster.core_node(node)
    if found is None:
        return set()
    return {a.allocation_key for a in (*found.allocations, *found.foreign_allocations)}


def set_ready(cluster: Cluster, name: str, ready: bool) -> None:
    cluster.core_api.patch_node_status(name, {"status": {"conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}})


def test_recovery_story_node0_node1_node2(cluster):
    """Node0 and Node1 recover their pods and become schedulable; Node2, only named by a pod, is lost
    and recovers with that pod once it appears."""
    cluster.node("node0", cpu="2")
    cluster.node("node1", cpu="2")
    pod0 = cluster.pod("pod0", cpu="1500m", node="node0", labels={"applicationId": "app"})
    pod1 = cluster.pod("pod1", cpu="1", node="node1", labels={"applicationId": "app"})
    foreign = cluster.pod("sys", cpu="500m", scheduler="default-scheduler", node="node1")
    pod2 = cluster.pod("pod2", cpu="1", node="node2", labels={"applicationId": "app"})
    cluster.start_scheduler()
    assert node_state(cluster, "node0") == "Schedulable" and node_state(cluster, "node1") == "Schedulable"
    assert node_state(cluster, "node2") == "Lost"
    assert held_by_core(cluster, "node0") == {pod0} and held_by_core(cluster, "node1") == {pod1, foreign}
    assert cluster.core_node("node2") is None
    assert cluster.core_node("node1").attributes[ATTR_NODE_STATE] == "Schedulable"
    state = cluster.service.state()
    assert state.recovery.nodes_total == 2 and state.recovery.nodes_recovered == 2

    cluster.node("node2", cpu="2")
    wait_for(lambda: node_state(cluster, "node2") == "Schedulable", message="node2 recovered")
    assert held_by_core(cluster, "node2") == {pod2}
    for reason in ("NodeLost", "NodeRecovering", "NodeSchedulable"):
        wait_for(lambda reason=reason: cluster.events(reason, "node2"), message=f"event {reason}")
    # Only node2 has a whole cpu left once its pod is counted.
    cluster.pod("new0", cpu="1")
    cluster.wait_bound("new0")
    assert cluster.node_of("new0") == "node2"
    cluster.assert_consistent()


def test_a_cordoned_node_drains_and_takes_pods_again_when_uncordoned(cluster):
    cluster.node("n1", cpu="2")
    cluster.start_scheduler()
    cluster.core_api.patch_node("n1", {"spec": {"unschedulable": True}})
    wait_for(lambda: node_state(cluster, "n1") == "Draining")
    assert not cluster.core_node("n1").schedulable
    cluster.pod("waits", cpu="500m")
    wait_for(lambda: cluster.events("FailedScheduling", "waits"))
    assert not cluster.bound("waits")
    cluster.core_api.patch_node("n1", {"spec": {"unschedulable": False}})
    cluster.wait_bound("waits")
    assert node_state(cluster, "n1") == "Schedulable"
    wait_for(lambda: cluster.events("NodeDraining", "n1"))


@pytest.mark.timeout(60)
def test_a_not_ready_node_takes_no_pods_is_lost_after_a_while_and_recovers_its_pods(cluster):
    cluster.node("n1", cpu="2")
    cluster.node("n2", cpu="2")
    cluster.start_scheduler(node_lost_after=1.0)
    cluster.pod("runs", cpu="1", labels={"applicationId": "app"})
    cluster.wait_bound("runs")
    home = cluster.node_of("runs")
    other = "n2" if home == "n1" else "n1"
    uid = cluster.pods()["runs"]["metadata"]["uid"]
    set_ready(cluster, home, False)
    wait_for(lambda: node_state(cluster, home) == "NotReady")
    cluster.pod("elsewhere", cpu="1")
    cluster.wait_bound("elsewhere")
    assert cluster.node_of("elsewhere") == other
    wait_for(lambda: node_state(cluster, home) == "Lost", message="NotReady for longer than node_lost_after")
    assert cluster.core_node(home) is None
    set_ready(cluster, home, True)
    wait_for(lambda: node_state(cluster, home) == "Schedulable", message="back and recovered")
    assert uid in held_by_core(cluster, home)
    cluster.assert_consistent()


def test_a_deleted_node_with_pods_is_lost_and_recovers_them_when_it_returns(cluster):
    cluster.node("n1", cpu="2")
    cluster.start_scheduler()
    cluster.pod("stays", cpu="1500m", labels={"applicationId": "app"})
    cluster.wait_bound("stays")
    uid = cluster.pods()["stays"]["metadata"]["uid"]
    cluster.core_api.delete_node("n1")
    wait_for(lambda: node_state(cluster, "n1") == "Lost")
    assert cluster.core_node("n1") is None
    cluster.node("n1", cpu="2")
    wait_for(lambda: node_state(cluster, "n1") == "Schedulable")
    assert held_by_core(cluster, "n1") == {uid}
    # The recovered pod is counted: 500m are left, so a 1-cpu pod waits.
    cluster.pod("too-big", cpu="1")
    wait_for(lambda: cluster.events("FailedScheduling", "too-big"))
    assert not cluster.bound("too-big")


def test_a_deleted_node_without_pods_is_removed(cluster):
    cluster.node("n1")
    cluster.node("gone")
    cluster.start_scheduler()
    cluster.core_api.delete_node("gone")
    wait_for(lambda: node_state(cluster, "gone") is None and cluster.core_node("gone") is None)
    wait_for(lambda: cluster.events("NodeRemoved", "gone"))


@pytest.mark.timeout(120)
def test_2000_nodes_run_on_a_bounded_number_of_threads(cluster):
    cluster.sim.seed_nodes(2000, cpu="4")
    before = threading.active_count()
    cluster.start_scheduler(running_timeout=90)
    states = {n.state for n in cluster.service.state().nodes}
    assert len(cluster.service.state().nodes) == 2000 and states == {"Schedulable"}
    assert sum(1 for ref in pykka.ActorRegistry.get_all() if ref.actor_class.kind == "node") == 2000
    # The core, the shim's few thread actors, their workers and the dispatcher: not a thread per node.
    assert threading.active_count() - before < 64
    cluster.pod("fits")
    cluster.wait_bound("fits")
