"""A leader-election standby recovers ahead of leading (kubesim, the real core and shim): its held core
books every running pod and follows the cluster, it decides and writes nothing, and once it leads it
schedules the pending pods without recovering again."""

from __future__ import annotations

import math

from kubernetes import client as k8s

from actors.shim.fence import LeaderFence
from tests.shim.doubles import wait_for
from tests.shim.test_gang import SPARK, bound_placeholders, gang_pod, phase, placeholders, start


def _allocated(cluster) -> dict[str, str]:
    """Allocation key -> node, of YuniKorn's and foreign pods, as the core books them."""
    partition = cluster.scheduler.snapshot().partition("default")
    return {a.allocation_key: node.node_id for node in partition.nodes
            for a in (*node.allocations, *node.foreign_allocations)}


def _bind(cluster, name: str, node: str) -> None:
    """A bind by someone else (the leader, while this scheduler stands by)."""
    cluster.core_api.create_namespaced_pod_binding(name, "default", k8s.V1Binding(
        metadata=k8s.V1ObjectMeta(name=name), target=k8s.V1ObjectReference(kind="Node", name=node)),
        _preload_content=False).release_conn()


def test_a_standby_recovers_ahead_decides_nothing_and_schedules_at_once_when_it_leads(cluster):
    nodes = cluster.sim.seed_nodes(3, cpu="2")
    running = {cluster.pod(f"run-{i}", cpu="500m", node=nodes[i % 3]): nodes[i % 3] for i in range(6)}
    running[cluster.pod("other", cpu="500m", scheduler="default-scheduler", node=nodes[0])] = nodes[0]
    pending = [f"wait-{i}" for i in range(4)]
    for name in pending:
        cluster.pod(name, cpu="200m")
    fence = LeaderFence()  # closed: this scheduler does not lead
    service = cluster.start_scheduler(standby=fence)

    assert service.latest_state().state == "Recovering"
    assert _allocated(cluster) == running  # booked ahead, foreign pod included
    # It follows the cluster while it stands by: a pod the leader binds, a pod that ends.
    late = cluster.pod("late", cpu="500m")
    _bind(cluster, "late", nodes[1])
    cluster.core_api.delete_namespaced_pod("run-0", "default", grace_period_seconds=0)
    expected = {uid: node for uid, node in running.items() if uid != next(iter(running))} | {late: nodes[1]}
    wait_for(lambda: _allocated(cluster) == expected, message="the standby's core following the cluster")
    # Its core decided nothing and it wrote nothing: the pending pods wait, unbound, with no event.
    cluster.scheduler.barrier()
    assert not any(cluster.bound(name) for name in pending)
    assert set(cluster.binds_per_pod()) == {"late"}
    assert [r for r in cluster.sim.request_log if r.verb in ("create", "patch") and r.resource == "events"] == []
    assert service.latest_state().state == "Recovering"

    fence.open_until(math.inf)  # what the elector does once it holds the Lease
    service.lead()
    assert service.wait_until("Running", 10)
    cluster.wait_bound(*pending)
    cluster.assert_consistent()
    assert set(cluster.binds_per_pod()) == {"late", *pending}


def test_a_standby_short_of_a_gangs_placeholders_makes_them_only_once_it_leads(cluster):
    start(cluster, nodes=2, cpu="5")
    gang_pod(cluster, "driver", "spark-s", "driver", SPARK)
    wait_for(lambda: len(bound_placeholders(cluster, "spark-s")) == 10, message="10 placeholders bound")
    cluster.stop_scheduler()
    made = len(placeholders(cluster, "spark-s"))  # one driver and ten executors
    for name in sorted(placeholders(cluster, "spark-s"))[:3]:  # caught while they were being replaced
        cluster.core_api.delete_namespaced_pod(name, "default", grace_period_seconds=0)
    fence = LeaderFence()
    service = cluster.start_scheduler(standby=fence)
    wait_for(lambda: any(a.application_id == "spark-s" and a.state == "Reserving"
                         for a in service.state().applications), message="the standby's gang reserving")
    assert len(placeholders(cluster, "spark-s")) == made - 3  # it made none: the leader would

    fence.open_until(math.inf)
    service.lead()
    assert service.wait_until("Running", 10)
    wait_for(lambda: len(placeholders(cluster, "spark-s")) == made, message="the 3 missing placeholders made")
    cluster.node("n2", cpu="4", memory="64Gi")
    cluster.wait_bound("driver")
    assert phase(cluster, "driver") != "Failed"
    cluster.assert_consistent()
