"""A pod the scheduler refuses (its application rejected) fails with a reason; it must not mark the
scheduler unhealthy, since any user can submit one."""

import pytest

from tests.reliability.invariants import assert_invariants
from tests.reliability.test_config_flapping import GOOD


@pytest.mark.xfail(strict=True, reason="the shim sends a pod's ask together with its application, before the core "
                                       "accepts it; when the core rejects the application it counts the ask, naming "
                                       "an application it does not have, as a scheduling error, and the 'Scheduling "
                                       "errors' health check fails from then on")
def test_a_pod_for_a_queue_no_rule_allows_is_refused_and_the_scheduler_stays_healthy(cluster, scheduler):
    cluster.node("only", cpu="4")
    url = scheduler(GOOD)  # placement: only the queue a pod names, never created
    cluster.pod("fits", labels={"applicationId": "good", "queue": "root.open"})
    cluster.pod("nowhere", labels={"applicationId": "lost", "queue": "root.missing"})
    found = assert_invariants(cluster.sim, url, timeout=5)
    assert (found.bound, found.refused) == (1, 1)
    assert cluster.pods()["nowhere"]["status"]["reason"] == "ApplicationRejected"
