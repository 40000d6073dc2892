"""A pod the scheduler refuses (its application rejected) fails with a reason; it must not mark the
scheduler unhealthy, since any user can submit one."""


from tests.reliability.invariants import assert_invariants
from tests.reliability.test_config_flapping import GOOD


def test_a_pod_for_a_queue_no_rule_allows_is_refused_and_the_scheduler_stays_healthy(cluster, scheduler):
    cluster.node("only", cpu="4")
    url = scheduler(GOOD)  # placement: only the queue a pod names, never created
    cluster.pod("fits", labels={"applicationId": "good", "queue": "root.open"})
    cluster.pod("nowhere", labels={"applicationId": "lost", "queue": "root.missing"})
    found = assert_invariants(cluster.sim, url, timeout=5)
    assert (found.bound, found.refused) == (1, 1)
    assert cluster.pods()["nowhere"]["status"]["reason"] == "ApplicationRejected"
