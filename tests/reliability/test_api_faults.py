"""The API server misbehaving while a burst of pods is scheduled: failed binds (500, 429), binds that
time out and are carried out late, cut and expired watches, slow lists. Whatever happens, every pod is
bound once or pending with a reason, nothing is over-committed, the core agrees with the cluster and
its health checks pass."""

from collections import Counter

from tests.reliability.invariants import assert_invariants
from tests.reliability.workload import burst


def bind_codes(sim) -> Counter:
    return Counter(r.code for r in list(sim.request_log) if r.subresource == "binding")


def test_failed_binds_are_retried_and_every_pod_is_bound_once(cluster, scheduler):
    cluster.sim.seed_nodes(3, cpu="4")
    url = scheduler()
    faults = cluster.sim.faults
    faults.fail(verb="create", resource="pods/binding", status=500, count=15)
    faults.fail(verb="create", resource="pods/binding", status=429, count=5, retry_after=1)
    burst(cluster, "b", 60, oversized_every=20)
    found = assert_invariants(cluster.sim, url)
    assert (found.bound, found.pending) == (57, 3)
    codes = bind_codes(cluster.sim)
    assert codes[500] == 15 and codes[429] == 5 and codes[201] == 57


def test_binds_answered_with_a_timeout_but_carried_out_late_are_not_bound_twice(cluster, scheduler):
    cluster.sim.seed_nodes(3, cpu="4")
    url = scheduler()
    faults = cluster.sim.faults
    # Some late binds land before the scheduler's retry, some after it; some retries fail too.
    faults.fail(verb="create", resource="pods/binding", status=504, count=8, apply_after=0.2)
    faults.fail(verb="create", resource="pods/binding", status=503, count=4)
    faults.fail(verb="create", resource="pods/binding", status=504, count=4, apply_after=0.0)
    burst(cluster, "t", 60, oversized_every=20)
    found = assert_invariants(cluster.sim, url)
    assert (found.bound, found.pending) == (57, 3)
    assert bind_codes(cluster.sim)[504] == 12


def test_cut_and_expired_watches_lose_no_pod_and_no_node(cluster, scheduler):
    cluster.sim.seed_nodes(2, cpu="4")
    url = scheduler()
    faults, cuts = cluster.sim.faults, 0
    for wave in range(4):
        burst(cluster, f"w{wave}", 15, oversized_every=15)
        if wave == 2:  # a node that arrives while the informers are between watches
            cluster.node("late", cpu="4", labels={"pool": "late"})
        faults.gone_next_watches(count=3)  # the informers' next watches are answered 410 Gone
        cuts += faults.drop_watches()
    cluster.pod("on-late", labels={"applicationId": "late"}, nodeSelector={"pool": "late"})
    assert cuts >= 4
    found = assert_invariants(cluster.sim, url)
    assert (found.bound, found.pending) == (57, 4)
    assert cluster.node_of("on-late") == "late"


def test_slow_lists_at_start_and_on_every_relist(cluster, scheduler):
    cluster.sim.seed_nodes(2, cpu="4")
    cluster.sim.faults.latency(verb="list", seconds=0.4)
    url = scheduler()
    burst(cluster, "s", 20)
    cluster.sim.faults.gone_next_watches(count=5)
    cluster.sim.faults.drop_watches()  # every informer lists again, slowly, while pods keep coming
    burst(cluster, "t", 20, oversized_every=10)
    found = assert_invariants(cluster.sim, url)
    assert (found.bound, found.pending) == (38, 2)
    slow_lists = [r for r in list(cluster.sim.request_log) if r.verb == "list" and r.resource == "pods"]
    assert len(slow_lists) >= 2
