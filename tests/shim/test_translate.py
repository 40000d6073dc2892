"""Nodes, namespaces and pods in SI messages."""

import dataclasses
import json

import pytest

from actors.shim import keys, translate
from actors.shim.nodes import NodeRecord, parse_node
from actors.shim.objects import namespace_app_tags, parse_namespace, parse_priority_class
from actors.shim.pods import parse_pod
from si import si_pb2
from si.resources import Resource
from tests.shim.factories import node_json, pod_json

GiB = 2**30


def test_node_attributes_and_schedulable_resource():
    node = parse_node(node_json("n1", cpu="4", memory="16Gi", labels={
        "topology.kubernetes.io/zone": "z1", "kubernetes.io/arch": "amd64", "disk": "ssd"},
        taints=[{"key": "a", "value": "b", "effect": "NoSchedule"},
                {"key": "c", "value": "d", "effect": "PreferNoSchedule"}]))
    info = translate.node_info(node, si_pb2.NodeInfo.CREATE)
    assert info.nodeID == "n1" and info.action == si_pb2.NodeInfo.CREATE
    assert Resource.from_proto(info.schedulableResource) == Resource({"vcore": 4000, "memory": 16 * GiB,
                                                                      "pods": 110})
    attributes = dict(info.attributes)
    assert attributes["si/hostname"] == "n1"
    assert attributes["si/rackname"] == "/rack-default"
    assert attributes["si/zone"] == "z1" and attributes["si/arch"] == "amd64"
    assert attributes["kubernetes.io/label/disk"] == "ssd"
    assert json.loads(attributes[keys.ATTR_TAINTS]) == [{"key": "a", "value": "b", "effect": "NoSchedule"}]
    assert keys.ATTR_UNSCHEDULABLE not in attributes


@pytest.mark.parametrize("raw", [
    node_json("n1", labels={"disk": "ssd"}, taints=[{"key": "a", "value": "b", "effect": "NoExecute"}], unschedulable=True),
    node_json("n2", cpu="fast"),  # invalid: its record says why
])
def test_a_parsed_node_is_whole_and_frozen_as_the_dataclass_makes_one(raw):
    node = parse_node(raw)
    # Made slot by slot: the dataclass's own constructor, given every field read back, makes an equal record.
    assert type(node) is NodeRecord and dataclasses.replace(node) == node
    assert (node.name, node.resource_version, node.ready) == (raw["metadata"]["name"], "1", True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.unschedulable = False


def test_a_node_that_offers_nothing_still_carries_its_schedulable_resource():
    raw = node_json("n1")
    raw["status"]["allocatable"] = {}
    for action in (si_pb2.NodeInfo.CREATE, si_pb2.NodeInfo.UPDATE):  # an update without one keeps the capacity
        info = translate.node_info(parse_node(raw), action)
        assert info.HasField("schedulableResource") and not info.schedulableResource.resources


def test_decommission_carries_only_the_node_id():
    info = translate.node_info(parse_node(node_json("n1")), si_pb2.NodeInfo.DECOMISSION)
    assert not info.attributes and not info.HasField("schedulableResource")


def test_same_offer_tracks_what_the_core_sees():
    base = parse_node(node_json("n1"))
    assert base.same_offer(parse_node(node_json("n1", resource_version="2")))
    assert not base.same_offer(parse_node(node_json("n1", cpu="16")))
    assert not base.same_offer(parse_node(node_json("n1", unschedulable=True)))
    assert not base.same_offer(parse_node(node_json("n1", labels={"x": "y"})))


def test_malformed_allocatable_is_reported_not_raised():
    raw = node_json("n1", cpu="fast")
    assert "invalid allocatable" in parse_node(raw).invalid
    assert "invalid allocatable" in parse_node(raw).invalid  # the same size refused again, not remembered


def test_nodes_of_one_size_read_it_alike_whatever_its_spelling():
    sizes = [parse_node(node_json(f"n{i}", cpu=cpu, memory="16Gi")).allocatable
             for i, cpu in enumerate(("4", "4000m", "4", 4))]  # a number where a string belongs reads as such
    assert sizes == [Resource({"vcore": 4000, "memory": 16 * GiB, "pods": 110})] * 4
    unhashable = node_json("n9")
    unhashable["status"]["allocatable"]["cpu"] = {"not": "a quantity"}
    assert "invalid allocatable" in parse_node(unhashable).invalid


def test_yunikorn_ask_has_application_tags_and_no_node():
    pod = parse_pod(pod_json(name="p1", namespace="ns", labels={"applicationId": "app-1", "team": "x"}))
    ask = translate.allocation(pod, priority=7)
    assert ask.allocationKey == pod.uid and ask.applicationID == "app-1" and not ask.nodeID
    assert ask.priority == 7 and ask.partitionName == "default"
    assert dict(ask.allocationTags) == {
        "kubernetes.io/meta/namespace": "ns", "kubernetes.io/meta/podName": "p1",
        "creationTime": "1714557600", "kubernetes.io/label/applicationId": "app-1",
        "kubernetes.io/label/team": "x"}
    assert Resource.from_proto(ask.resourcePerAlloc) == Resource({"vcore": 100, "memory": 128 * 2**20, "pods": 1})


def test_foreign_allocations_are_tagged_static_or_default_and_have_no_application():
    static = parse_pod(pod_json(scheduler="default-scheduler", node="n1", owner_kind="Node"))
    managed = parse_pod(pod_json(scheduler="default-scheduler", node="n1", owner_kind="ReplicaSet"))
    for pod, kind in ((static, "static"), (managed, "default")):
        message = translate.foreign_allocation(pod, 0)
        assert message.allocationTags["foreign"] == kind
        assert message.nodeID == "n1" and not message.applicationID
    yunikorn = translate.allocation(parse_pod(pod_json(node="n1")), 0, node_id="n1")
    assert "foreign" not in yunikorn.allocationTags


def test_allocations_built_into_a_request_are_those_built_alone_pod_by_pod():
    """The outlet builds a node's pods into its request from shapes their workload shares: each is the
    allocation built alone, none carrying another's own tags (name, creation time, constraints)."""
    labels = {"applicationId": "app-1", "team": "x"}
    pods = [parse_pod(pod_json(name=f"p{i}", node="n1", labels=labels)) for i in range(3)]
    pods.append(parse_pod(pod_json(name="pinned", node="n1", labels=labels, spec={"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"team": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}})))
    foreign = [parse_pod(pod_json(name=f"f{i}", scheduler="default-scheduler", node="n1", owner_kind=kind))
               for i, kind in enumerate(("Node", "ReplicaSet", "Node"))]
    request = si_pb2.AllocationRequest()
    for round_ in range(2):  # the second round from the shapes the first made
        del request.allocations[:]
        for i, pod in enumerate(pods):
            translate.allocation(pod, 5, node_id="n1", originator=i == 0, into=request.allocations)
        for pod in foreign:
            translate.foreign_allocation(pod, 0, into=request.allocations)
        alone = [translate.allocation(pod, 5, node_id="n1", originator=i == 0) for i, pod in enumerate(pods)]
        alone += [translate.foreign_allocation(pod, 0) for pod in foreign]
        assert list(request.allocations) == alone, round_
    tags = [allocation.allocationTags for allocation in request.allocations]
    assert "antiAffinity" in tags[3][keys.TAG_CONSTRAINTS] and "antiAffinity" not in tags[2][keys.TAG_CONSTRAINTS]
    assert [t["kubernetes.io/meta/podName"] for t in tags] == ["p0", "p1", "p2", "pinned", "f0", "f1", "f2"]


def test_release_names_the_allocation_key():
    pod = parse_pod(pod_json(labels={"applicationId": "a"}))
    release = translate.release(pod, "pod deleted")
    assert (release.allocationKey, release.applicationID, release.terminationType) == (pod.uid, "a",
                                                                                        si_pb2.STOPPED_BY_RM)


def test_application_carries_queue_user_and_namespace_tags():
    ns = parse_namespace({"metadata": {"name": "team-a", "annotations": {
        "yunikorn.apache.org/parentqueue": "root.teams",
        "yunikorn.apache.org/namespace.quota": '{"cpu": "2", "memory": "1Gi"}',
        "yunikorn.apache.org/namespace.guaranteed": '{"cpu": "500m"}',
        "yunikorn.apache.org/namespace.maxApps": "4"}}})
    pod = parse_pod(pod_json(namespace="team-a", labels={"queue": "root.teams.a", "disableStateAware": "true"},
                             annotations={"yunikorn.apache.org/user.info": '{"user": "bob", "groups": ["g"]}'}))
    request = translate.add_application(pod, translate.application_tags(pod, ns.app_tags, force=True))
    assert request.applicationID == "yunikorn-team-a-autogen" and request.queueName == "root.teams.a"
    assert request.ugi.user == "bob" and list(request.ugi.groups) == ["g"]
    tags = dict(request.tags)
    assert tags["namespace"] == "team-a" and tags["namespace.parentqueue"] == "root.teams"
    assert json.loads(tags["namespace.resourcequota"]) == {"resources": {"memory": {"value": GiB},
                                                                         "vcore": {"value": 2000}}}
    assert json.loads(tags["namespace.resourceguaranteed"]) == {"resources": {"vcore": {"value": 500}}}
    assert tags["namespace.resourcemaxapps"] == "4"
    assert tags["application.stateaware.disable"] == "true" and tags["disableStateAware"] == "true"
    assert tags["application.create.force"] == "true"


def test_bad_namespace_annotations_are_left_out():
    tags = namespace_app_tags("ns", {"yunikorn.apache.org/namespace.quota": "{cpu: 2",
                                     "yunikorn.apache.org/namespace.maxApps": "many"})
    assert tags == {"namespace": "ns"}


def test_priority_class_value():
    assert parse_priority_class({"metadata": {"name": "high"}, "value": 1000}).value == 1000


def test_preemption_policy_from_the_annotation_and_spec_preemption_policy():
    plain = translate.allocation(parse_pod(pod_json("p")), 0)
    assert plain.preemptionPolicy.allowPreemptSelf and plain.preemptionPolicy.allowPreemptOther
    kept = parse_pod(pod_json("k", annotations={keys.ANNOTATION_ALLOW_PREEMPTION: "false"}))
    assert kept.allow_preemption is False
    assert not translate.allocation(kept, 0).preemptionPolicy.allowPreemptSelf
    never = translate.allocation(parse_pod(pod_json("n", spec={"preemptionPolicy": "Never"})), 0)
    assert never.preemptionPolicy.allowPreemptSelf and not never.preemptionPolicy.allowPreemptOther
    assert parse_pod(pod_json("t", annotations={keys.ANNOTATION_ALLOW_PREEMPTION: "true"})).allow_preemption is True
    assert parse_pod(pod_json("u")).allow_preemption is None, "no annotation: its PriorityClass decides"
    assert not parse_priority_class({"metadata": {"name": "c", "annotations": {
        keys.ANNOTATION_ALLOW_PREEMPTION: "false"}}, "value": 5}).allow_preemption
    assert parse_priority_class({"metadata": {"name": "d"}, "value": 5}).allow_preemption
