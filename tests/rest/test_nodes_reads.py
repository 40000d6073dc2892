"""Every read of ``/nodes`` shows every change the core made before it: the core keeps each allocation's
JSON and each node's name, attributes and capacity between reads, and each change of a field they show
must reach the next read, as rendering the node whole from its picture gives it."""

from __future__ import annotations

import orjson

from actors.core.snapshot import NODES as NODE_PICTURES
from rest import daos
from si import si_pb2
from si.constants import FOREIGN_DEFAULT, TAG_FOREIGN
from si.resources import Resource
from tests.core.test_reservation import daemonset_victims, full_nodes_with_an_opted_out_pod, required_node_ask

NODES = "/ws/v1/partition/default/nodes"


def _read(core, client) -> dict[str, dict]:
    """The nodes by name as ``/nodes`` answers now, after checking the answer is the whole rendering's."""
    core.settle()
    status, _, body = client.request("GET", NODES)
    assert status == 200
    pictured = core.scheduler.snapshot(frozenset({NODE_PICTURES})).partition("default").nodes
    assert body == orjson.dumps([daos.node(n) for n in pictured])
    return {node["nodeID"]: node for node in orjson.loads(body)}


def _node(core, action=si_pb2.NodeInfo.UPDATE, vcore=4000, **attributes) -> None:
    core.scheduler.update_node(si_pb2.NodeRequest(rmID="rm", nodes=[si_pb2.NodeInfo(
        nodeID="node-0", action=action, attributes=attributes,
        schedulableResource=Resource.of(vcore=vcore, memory=8 * 2**30).to_proto())]))


def _allocation(core, key: str, vcore: int, **fields) -> None:
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[si_pb2.Allocation(
        allocationKey=key, partitionName="default", nodeID="node-0",
        resourcePerAlloc=Resource.of(vcore=vcore, memory=2**28).to_proto(), **fields)]))


def _shown(node: dict) -> dict[str, dict]:
    return {a["allocationKey"]: a for a in node["allocations"]}


def test_each_change_of_an_allocation_reaches_the_next_read(rest):
    core, client = rest
    core.nodes(1)
    core.app("app-1", queue="root.team", user="alice")
    first, second = core.asks("app-1", 2)
    node = _read(core, client)["node-0"]
    assert set(_shown(node)) == {first, second} and node["allocated"]["vcore"] == 2000
    assert all(a["nodeId"] == "node-0" and a["allocationTime"] for a in node["allocations"])

    _allocation(core, first, 1500, applicationID="app-1")  # resized in place
    node = _read(core, client)["node-0"]
    assert _shown(node)[first]["resource"]["vcore"] == 1500 and _shown(node)[second]["resource"]["vcore"] == 1000
    assert node["allocated"]["vcore"] == 2500 and node["available"]["vcore"] == 1500

    core.release("app-1", second)
    node = _read(core, client)["node-0"]
    assert set(_shown(node)) == {first} and node["allocated"]["vcore"] == 1500

    [third] = core.asks("app-1", 1, vcore=700, prefix="again-")
    node = _read(core, client)["node-0"]
    assert list(_shown(node)) == [first, third] and _shown(node)[third]["resource"]["vcore"] == 700

    core.release("app-1", first)  # one gone and one gained between two reads: as many as before
    [fourth] = core.asks("app-1", 1, vcore=300, prefix="more-")
    node = _read(core, client)["node-0"]
    assert list(_shown(node)) == [third, fourth] and node["allocated"]["vcore"] == 1000


def test_each_change_of_a_node_reaches_the_next_read(rest):
    core, client = rest
    core.nodes(2)
    core.app("app-1", queue="root.team", user="alice")
    core.asks("app-1", 1, node="node-0")
    before = _read(core, client)
    assert before["node-0"]["capacity"]["vcore"] == 4000

    _node(core, vcore=6000)
    node = _read(core, client)["node-0"]
    assert node["capacity"]["vcore"] == 6000 and node["available"]["vcore"] == 6000 - node["allocated"]["vcore"]

    _node(core, vcore=6000, **{"si/hostname": "host-a", "si/rackname": "rack-1", "zone": "b"})
    node = _read(core, client)["node-0"]
    assert (node["hostName"], node["rackName"], node["attributes"].get("zone")) == ("host-a", "rack-1", "b")

    _node(core, action=si_pb2.NodeInfo.DRAIN_NODE)
    assert _read(core, client)["node-0"]["schedulable"] is False
    _node(core, action=si_pb2.NodeInfo.DRAIN_TO_SCHEDULABLE)
    assert _read(core, client)["node-0"]["schedulable"] is True

    _allocation(core, "foreign-1", 300, allocationTags={TAG_FOREIGN: FOREIGN_DEFAULT})
    node = _read(core, client)["node-0"]
    assert [a["allocationKey"] for a in node["foreignAllocations"]] == ["foreign-1"] and node["occupied"]["vcore"] == 300
    _allocation(core, "foreign-1", 800, allocationTags={TAG_FOREIGN: FOREIGN_DEFAULT})  # the pod grew
    node = _read(core, client)["node-0"]
    assert node["foreignAllocations"][0]["resource"]["vcore"] == 800 and node["occupied"]["vcore"] == 800
    core.release("", "foreign-1")
    node = _read(core, client)["node-0"]
    assert node["foreignAllocations"] == [] and node["occupied"].get("vcore", 0) == 0
    assert _read(core, client)["node-1"] == before["node-1"]  # the node that never changed


def test_a_turn_carrying_the_nodes_record_applies_it_and_a_bare_turn_keeps_it(rest):
    core, client = rest
    core.nodes(1)
    state = "yunikorn.apache.org/node-state"
    _node(core, action=si_pb2.NodeInfo.DRAIN_NODE, vcore=5000, **{state: "Draining", "zone": "a"})
    node = _read(core, client)["node-0"]
    assert (node["schedulable"], node["capacity"]["vcore"]) == (False, 5000)
    assert (node["attributes"][state], node["attributes"]["zone"]) == ("Draining", "a")
    core.scheduler.update_node(si_pb2.NodeRequest(rmID="rm", nodes=[si_pb2.NodeInfo(
        nodeID="node-0", action=si_pb2.NodeInfo.DRAIN_TO_SCHEDULABLE)]))  # as upstream's shim sends it
    node = _read(core, client)["node-0"]
    assert (node["schedulable"], node["capacity"]["vcore"], node["attributes"][state]) == (True, 5000, "Draining")


def test_a_node_removed_and_added_again_is_read_as_it_is_now(rest):
    core, client = rest
    core.nodes(1)
    core.app("app-1", queue="root.team", user="alice")
    core.asks("app-1", 2)
    assert len(_read(core, client)["node-0"]["allocations"]) == 2
    core.nodes(1, action=si_pb2.NodeInfo.DECOMISSION)
    assert _read(core, client) == {}
    core.nodes(1, vcore=2000)
    node = _read(core, client)["node-0"]
    assert node["capacity"]["vcore"] == 2000 and node["allocations"] == []


def test_a_long_answer_sent_in_pieces_arrives_whole(rest):
    """Thousands of nodes, megabytes: sent as pieces over many system calls, the client gets every byte
    in order, as rendering the nodes whole gives them."""
    core, client = rest
    core.nodes(3000, **{"zone": "x" * 200})
    core.app("app-1", queue="root.team", user="alice")
    core.asks("app-1", 3000, vcore=100)
    nodes = _read(core, client)
    assert len(nodes) == 3000 and sum(len(n["allocations"]) for n in nodes.values()) == 3000


def test_a_victim_marked_preempted_and_a_node_held_for_its_preemptor_reach_the_next_read(rest):
    """An allocation's kept JSON must not outlive its being chosen as a victim, nor a node's its hold."""
    core, client = rest
    target = full_nodes_with_an_opted_out_pod(core)
    before = _read(core, client)[target]
    assert not any(a["preempted"] for a in before["allocations"]) and before["isReserved"] is False
    required_node_ask(core, "daemons", "ds-0", target, vcore=2000)
    node = _read(core, client)[target]
    victims = daemonset_victims(core)
    assert len(victims) == 2
    assert {key for key, a in _shown(node).items() if a["preempted"]} == set(victims)
    assert node["isReserved"] is True and node["reservations"] == ["ds-0"]
    for victim in victims:
        core.release("work", victim, si_pb2.PREEMPTED_BY_SCHEDULER)
    node = _read(core, client)[target]
    assert not set(victims) & set(_shown(node)) and "ds-0" in _shown(node)
    assert node["isReserved"] is False and node["reservations"] == []


def test_allocations_of_any_name_shape_and_flags_read_as_their_whole_rendering(rest):
    """Allocations share parts of their JSON by application, shape, priority and flags: each must still
    read as its own, whatever its names hold (quotes, backslashes, the text of a field's name, non-ASCII)."""
    core, client = rest
    core.nodes(2, vcore=64000, memory=64 * 2**30)
    odd = 'app,"nodeId":"x\\"é'
    for app in ("app-1", odd):
        core.app(app, queue="root.team", user="alice")
    shown = []
    shown += core.asks("app-1", 2, vcore=100)
    shown += core.asks("app-1", 2, vcore=100, priority=7, prefix='k"\\,"resource":{}-', tags={"a\"b": "ü\n"})
    shown += core.asks(odd, 2, vcore=100, prefix="odd-")  # the same shape and priority, another application
    shown += core.asks(odd, 1, vcore=300, memory=2**20, prefix="small-")
    _allocation(core, "plain-0", 100, applicationID="app-1")
    _allocation(core, "originator-0", 100, applicationID="app-1", originator=True)  # else as plain-0
    _allocation(core, "placeholder-0", 100, applicationID="app-1", placeholder=True, taskGroupName='g"1')
    read = [a for node in _read(core, client).values() for a in node["allocations"]]
    by_key = {a["allocationKey"]: a for a in read}
    assert set(by_key) == {*shown, "plain-0", "originator-0", "placeholder-0"}
    assert by_key[shown[2]]["priority"] == "7" and by_key[shown[2]]["allocationTags"] == {"a\"b": "ü\n"}
    assert by_key[shown[4]]["applicationId"] == odd and by_key[shown[0]]["applicationId"] == "app-1"
    assert by_key["originator-0"]["originator"] is True and by_key["plain-0"]["originator"] is False
    assert by_key["placeholder-0"]["placeholder"] is True and by_key["placeholder-0"]["taskGroupName"] == 'g"1'
    assert by_key[shown[6]]["resource"] == {"vcore": 300, "memory": 2**20}
