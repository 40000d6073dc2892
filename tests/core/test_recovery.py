"""Recovery: the pods a restarted scheduler finds running reach the core as allocations on their nodes,
in batches, and the inter-pod constraints of the asks that come after see every one of them."""

from __future__ import annotations

from actors.shim.nodes import parse_node
from actors.shim.pods import parse_pod
from actors.shim.predicates import KubernetesPredicates
from actors.shim.translate import allocation_tags
from si import si_pb2
from si.constants import TAG_FOREIGN
from si.resources import Resource
from tests.queues import config, queue
from tests.shim.factories import node_json, pod_json

ZONE = "topology.kubernetes.io/zone"
Action = si_pb2.NodeInfo


def zonal_nodes(core, zones: dict[str, str]) -> None:
    core.scheduler.update_node(si_pb2.NodeRequest(rmID="rm", nodes=[si_pb2.NodeInfo(
        nodeID=name, action=Action.CREATE_DRAIN, attributes=parse_node(node_json(name, labels={ZONE: zone})).attributes(),
        schedulableResource=Resource.of(vcore=8000, memory=16 * 2**30, pods=110).to_proto())
        for name, zone in zones.items()]))


def found(key: str, node: str, labels: dict, app_id: str = "web", foreign: bool = False) -> si_pb2.Allocation:
    """A pod found running on ``node``, as the shim reports it (a foreign one belongs to another scheduler)."""
    tags = allocation_tags(parse_pod(pod_json(key, labels=labels, node=node)))
    if foreign:
        tags[TAG_FOREIGN] = "default"
    return si_pb2.Allocation(allocationKey=key, applicationID="" if foreign else app_id, partitionName="default",
                             nodeID=node, allocationTags=tags,
                             resourcePerAlloc=Resource.of(vcore=100, memory=2**27, pods=1).to_proto())


def repelled_by(key: str, labels: dict) -> si_pb2.Allocation:
    """An ask whose pod may not share a zone with a pod carrying ``labels``."""
    spec = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": ZONE}]}}}
    return si_pb2.Allocation(allocationKey=key, applicationID="new", partitionName="default",
                             allocationTags=allocation_tags(parse_pod(pod_json(key, spec=spec))),
                             resourcePerAlloc=Resource.of(vcore=100, memory=2**27, pods=1).to_proto())


def placed(core) -> dict[str, str]:
    core.settle()
    return {a.allocationKey: a.nodeID for a in core.callback.new()}


def test_pods_found_in_one_batch_repel_an_anti_affinity_ask_from_their_zones(core_factory):
    core = core_factory(config(queue("q")), predicates=KubernetesPredicates())
    zonal_nodes(core, {"a1": "a", "b1": "b", "c1": "c", "c2": "c"})
    core.app("web", queue="root.q")
    core.app("new", queue="root.q")
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[
        found("web-1", "a1", {"app": "web"}), found("web-2", "b1", {"app": "web"}),
        found("cache-1", "c1", {"app": "cache"}),
        found("other-1", "c2", {"app": "web"}, foreign=True),  # another scheduler's pod counts like ours
        found("web-3", "c1", {"app": "web"})]))
    # web-3 leaves and the foreign pod's node moves to zone d before any ask has looked for pods
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", releases=si_pb2.AllocationReleasesRequest(
        allocationsToRelease=[si_pb2.AllocationRelease(partitionName="default", applicationID="web",
                                                       allocationKey="web-3",
                                                       terminationType=si_pb2.STOPPED_BY_RM)])))
    core.scheduler.update_node(si_pb2.NodeRequest(rmID="rm", nodes=[si_pb2.NodeInfo(
        nodeID="c2", action=Action.UPDATE, attributes=parse_node(node_json("c2", labels={ZONE: "d"})).attributes())]))
    core.scheduler.update_node(si_pb2.NodeRequest(rmID="rm", nodes=[
        si_pb2.NodeInfo(nodeID=name, action=Action.DRAIN_TO_SCHEDULABLE) for name in ("a1", "b1", "c1", "c2")]))
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[repelled_by("ask-1", {"app": "web"})]))
    assert placed(core) == {"ask-1": "c1"}, "zone c alone holds no web pod once web-3 left and c2 moved to zone d"
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[repelled_by("ask-2", {"app": "cache"})]))
    assert placed(core)["ask-2"] in {"a1", "b1", "c2"}
    nodes = {n.node_id: n for n in core.snapshot().partitions[0].nodes}
    assert {a.allocation_key for n in nodes.values() for a in n.allocations} == {"web-1", "web-2", "cache-1", "ask-1",
                                                                                  "ask-2"}
    assert [a.allocation_key for a in nodes["c2"].foreign_allocations] == ["other-1"]


def test_allocations_found_in_batches_count_in_their_queues_containers_and_health(core_factory):
    core = core_factory(config(queue("q"), queue("r")), predicates=KubernetesPredicates())
    zonal_nodes(core, {"a1": "a", "b1": "b"})
    core.app("web", queue="root.q")
    core.app("batch", queue="root.r")
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[
        found("web-1", "a1", {"app": "web"}), found("web-2", "a1", {"app": "web"}),
        found("batch-1", "b1", {"app": "batch"}, app_id="batch"), found("other-1", "b1", {}, foreign=True),
        found("web-3", "b1", {"app": "web"})]))
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[
        found("batch-2", "a1", {"app": "batch"}, app_id="batch")]))
    partition = core.snapshot().partitions[0]
    assert partition.root_queue.find("root.q").containers["allocated"] == 3
    assert partition.root_queue.find("root.r").containers["allocated"] == 2
    nodes = {n.node_id: n for n in partition.nodes}
    assert nodes["a1"].allocated == Resource.of(vcore=300, memory=3 * 2**27, pods=3)
    assert nodes["b1"].allocated == Resource.of(vcore=200, memory=2 * 2**27, pods=2)
    assert nodes["b1"].occupied == Resource.of(vcore=100, memory=2**27, pods=1)
    assert core.scheduler.check_health().healthy
