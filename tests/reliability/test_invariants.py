"""The invariants helper sees what breaks an invariant (so a scenario that passes has checked something)."""

from tests.reliability.invariants import survey
from tests.waiting import wait_for


def test_a_pod_bound_twice_and_an_over_committed_node_are_found(cluster, scheduler):
    cluster.node("small", cpu="1")
    url = scheduler()
    cluster.pod("first", cpu="100m", labels={"applicationId": "app"})
    cluster.wait_bound("first")
    assert survey(cluster.sim, url).double_bound == {}
    # The same pod name bound again after a delete counts as a second bind of that pod.
    cluster.core_api.delete_namespaced_pod("first", "default", grace_period_seconds=0)
    wait_for(lambda: "first" not in cluster.pods())
    cluster.pod("first", cpu="100m", labels={"applicationId": "app"})
    cluster.wait_bound("first")
    assert survey(cluster.sim, url).double_bound == {"default/first": 2}
    # A pod placed by hand on a node too small for it.
    cluster.pod("huge", cpu="2", node="small", labels={"applicationId": "app"})
    # The node's figure comes from the cluster at once; the queue's and the health from the core's
    # snapshots, a moment later.
    found = wait_for(lambda: len((f := survey(cluster.sim, url)).over_committed) == 2 and f.unhealthy and f)
    assert found.over_committed == ["node small: vcore 2100 > 1000", "queue root: vcore 2100 > 1000"]
    assert not found.ok
