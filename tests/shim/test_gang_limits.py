"""The placeholders one gang may make are bounded: by the setting, by the pods the cluster's nodes
hold, and by its originating pod still being there; a capped gang says why. Real core and shim on
kubesim, driven with the official client."""

from __future__ import annotations

import logging

from tests.shim.doubles import wait_for
from tests.shim.test_gang import batch_queue, bound_placeholders, gang_pod, start


def pods_created(cluster) -> int:
    """Pods created through the API (the test's and the placeholders)."""
    return sum(1 for r in cluster.sim.request_log
               if r.verb == "create" and r.resource == "pods" and not r.subresource and r.code == 201)


def test_a_gang_larger_than_the_setting_allows_makes_that_many_placeholders_and_says_why(cluster):
    start(cluster, **{"service.maxPlaceholdersPerGang": "3"})
    groups = [{"name": "w", "minMember": 8, "minResource": {"cpu": "100m", "memory": "64Mi"}}]
    gang_pod(cluster, "w-0", "capped", "w", groups, cpu="100m", policy="placeholderTimeoutInSeconds=1")
    [event] = wait_for(lambda: cluster.events("PlaceholdersCapped", "w-0"))
    assert event.type == "Warning"
    assert "3 of the gang's 8 placeholders" in event.message and "service.maxPlaceholdersPerGang is 3" in event.message
    cluster.wait_bound("w-0", timeout=20)  # the capped gang timed out (Soft): its pod runs on its own
    assert pods_created(cluster) == 1 + 3
    cluster.assert_consistent()


def test_a_gang_of_a_million_makes_no_more_placeholders_than_the_cluster_has_pod_slots(cluster):
    for name in ("small-0", "small-1"):
        capacity = {"cpu": "8", "memory": "16Gi", "pods": "5"}
        cluster.core_api.create_node({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                                      "status": {"capacity": capacity, "allocatable": capacity,
                                                 "conditions": [{"type": "Ready", "status": "True"}]}})
    cluster.configure(batch_queue(1_000_000_000))
    cluster.start_scheduler()
    groups = [{"name": "w", "minMember": 1_000_000, "minResource": {"cpu": "1m", "memory": "1Mi"}}]
    gang_pod(cluster, "huge-0", "million", "w", groups, cpu="1m")
    [event] = wait_for(lambda: cluster.events("PlaceholdersCapped", "huge-0"))
    assert "10 of the gang's 1000000 placeholders" in event.message and "hold 10 pods" in event.message
    wait_for(lambda: len(bound_placeholders(cluster, "million")) == 10, message="the placeholders bound")
    assert pods_created(cluster) == 1 + 10
    cluster.assert_consistent()


def test_placeholder_creation_stops_once_the_originating_pod_is_deleted(cluster, caplog):
    caplog.set_level(logging.INFO, logger="actors.shim.binder")
    start(cluster)
    cluster.sim.faults.latency(verb="create", resource="pods", seconds=0.05)
    groups = [{"name": "w", "minMember": 200, "minResource": {"cpu": "1m", "memory": "1Mi"}}]
    gang_pod(cluster, "origin", "orphaned", "w", groups, cpu="1m")
    wait_for(lambda: pods_created(cluster) >= 1 + 3, message="placeholders being made")
    cluster.core_api.delete_namespaced_pod("origin", "default")
    wait_for(lambda: any("the rest not: the application is gone" in r.getMessage() for r in caplog.records),
             timeout=20, message="creation to stop")
    made = pods_created(cluster) - 1
    assert 3 <= made < 200
    cluster.sim.faults.clear()
    gang_pod(cluster, "canary", "canary", "w", [{"name": "w", "minMember": 1, "minResource": {"cpu": "1m"}}], cpu="1m")
    cluster.wait_bound("canary")
    assert pods_created(cluster) == 1 + made + 2  # the canary and its placeholder
