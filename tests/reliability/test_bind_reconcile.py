"""A bind the cluster carried out after the scheduler gave up on it: the cluster's truth wins. The pod
is counted on the node it is bound to (never also where the core placed it again), and no node is
over-committed. The defect this guards against: the shim kept the allocation on another node and
ignored the binding (see also the application actor's test of the same case)."""

from tests.waiting import wait_for


def test_a_bind_applied_after_the_scheduler_gave_up_is_counted_where_the_pod_is(cluster):
    cluster.node("node-a", cpu="1")
    cluster.node("node-b", cpu="1")
    cluster.start_scheduler()
    faults = cluster.sim.faults
    # The first bind is answered 504 and carried out a second later; every retry of it, and of the
    # next bind, fails meanwhile: the scheduler gives up, places the pod again, and then sees it bound.
    faults.fail(verb="create", resource="pods/binding", status=504, count=1, apply_after=1.0)
    faults.fail(verb="create", resource="pods/binding", status=503, count=9)
    cluster.pod("first", cpu="600m", labels={"applicationId": "app"})
    wait_for(lambda: cluster.events("PodBindFailure", "first"), message="the scheduler giving up on the bind")
    cluster.wait_bound("first")
    faults.clear()
    home = cluster.node_of("first")
    uid = cluster.pods()["first"]["metadata"]["uid"]

    def holders():
        partition = cluster.scheduler.snapshot().partition("default")
        return [n.node_id for n in partition.nodes if uid in {a.allocation_key for a in n.allocations}]
    wait_for(lambda: holders() == [home], message="the pod's allocation on its node, and only there")
    for name in ("second", "third"):
        cluster.pod(name, cpu="600m", labels={"applicationId": "app"})
    wait_for(lambda: sum(cluster.bound(n) for n in ("second", "third")) == 1
             and any(cluster.events("FailedScheduling", n) for n in ("second", "third") if not cluster.bound(n)))
    assert home not in {cluster.node_of("second"), cluster.node_of("third")}
    assert holders() == [home]
    cluster.assert_consistent()
