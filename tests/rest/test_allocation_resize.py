"""An allocation whose pod was resized in place: the resource manager sends the allocation again, on its node,
with the new size (upstream's ``UpdateAllocation`` for a known key). The allocation, its node, its queues
and its user's usage all move by the difference, as REST shows them; a size with nothing or
a negative amount is refused and changes nothing."""

from __future__ import annotations

from si import si_pb2
from si.resources import Resource

GIB = 2**30


def _running(rest, vcore: int = 1000):
    core, client = rest
    core.nodes(1, vcore=4000, memory=8 * GIB)
    core.app("a1", queue="root.q", user="alice")
    [key] = core.asks("a1", 1, vcore=vcore, memory=GIB)
    core.settle()
    assert [a.nodeID for a in core.callback.new()] == ["node-0"]
    return core, client, key


def _resize(core, key: str, **resource) -> None:
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[si_pb2.Allocation(
        allocationKey=key, applicationID="a1", partitionName="default", nodeID="node-0",
        resourcePerAlloc=Resource.of(**resource).to_proto())]))
    core.settle()


def _usage(client) -> dict:
    """vcore of the allocation, the application, the queue, the node and the user (a group is tracked only
    when it has limits)."""
    _, app = client.get("/ws/v1/partition/default/application/a1")
    _, queue = client.get("/ws/v1/partition/default/queue/root.q")
    _, nodes = client.get("/ws/v1/partition/default/nodes")
    _, user = client.get("/ws/v1/partition/default/usage/user/alice")
    return {"allocation": app["allocations"][0]["resource"]["vcore"],
            "application": app["usedResource"]["vcore"],
            "queue": queue["allocatedResource"]["vcore"],
            "node": nodes[0]["allocated"]["vcore"],
            "user": _leaf(user["queues"], "root.q")["resourceUsage"]["vcore"]}


def _leaf(tracked: dict, path: str) -> dict:
    if tracked["queuePath"] == path:
        return tracked
    return next(_leaf(child, path) for child in tracked.get("children") or () if path.startswith(child["queuePath"]))


def test_a_resized_allocation_moves_every_usage_it_counts_in(rest):
    core, client, key = _running(rest)
    assert set(_usage(client).values()) == {1000}
    _resize(core, key, vcore=3000, memory=GIB)
    assert _usage(client) == dict.fromkeys(_usage(client), 3000)
    _resize(core, key, vcore=500, memory=GIB)
    assert _usage(client) == dict.fromkeys(_usage(client), 500)
    assert core.callback.rejected_allocations() == []


def test_a_resize_over_the_node_is_counted_as_the_cluster_reports_it(rest):
    """The pod runs with what its kubelet applied; the core books it even beyond the node, as upstream does."""
    core, client, key = _running(rest)
    _resize(core, key, vcore=6000, memory=GIB)
    assert _usage(client)["node"] == 6000
    _, nodes = client.get("/ws/v1/partition/default/nodes")
    assert nodes[0]["available"]["vcore"] == -2000


def test_a_resize_to_nothing_or_less_than_nothing_is_refused_and_changes_nothing(rest):
    core, client, key = _running(rest)
    _resize(core, key, vcore=-1000, memory=GIB)
    _resize(core, key)
    assert [(r.allocationKey, r.reason) for r in core.callback.rejected_allocations()] == [
        (key, "allocation contains negative resources {'vcore': -1000}"),
        (key, "allocation contains no resources")]
    assert set(_usage(client).values()) == {1000}


def test_a_pending_ask_resent_with_a_new_size_changes_the_pending_resource(rest):
    core, client = rest
    core.nodes(1, vcore=1000, memory=8 * GIB)
    core.app("a1", queue="root.q", user="alice")
    core.asks("a1", 1, vcore=2000, memory=GIB)
    core.settle()
    _, queue = client.get("/ws/v1/partition/default/queue/root.q")
    assert queue["pendingResource"]["vcore"] == 2000
    core.asks("a1", 1, vcore=3000, memory=GIB)
    _, queue = client.get("/ws/v1/partition/default/queue/root.q")
    assert queue["pendingResource"]["vcore"] == 3000
