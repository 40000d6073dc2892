"""The order the outlet sends a step's SI items in: merged by kind, registrations first where safe."""

from actors.shim import translate
from actors.shim.messages import NodeAllocations, PlacedPod
from actors.shim.outbox import Outbox
from actors.shim.pods import parse_pod
from si import si_pb2
from tests.shim.factories import pod_json

Action = si_pb2.NodeInfo


def node(name, action):
    return si_pb2.NodeInfo(nodeID=name, action=action)


def allocation(key, node_id):
    return si_pb2.Allocation(allocationKey=key, applicationID="app", nodeID=node_id)


def shape(messages):
    """Each SI request as (kind, [node or allocation ids])."""
    out = []
    for m in messages:
        if isinstance(m, si_pb2.NodeRequest):
            out.append(("node", [(n.nodeID, n.action) for n in m.nodes]))
        elif isinstance(m, si_pb2.AllocationRequest):
            out.append(("alloc", [a.allocationKey for a in m.allocations]))
        else:
            out.append(("app", [a.applicationID for a in m.new]))
    return out


def test_recovering_nodes_register_in_one_request_before_their_pods():
    box = Outbox("rm")
    for i in range(3):  # as three node actors send them: registration, then the node's pods
        box.node(node(f"n{i}", Action.CREATE_DRAIN))
        box.allocate(allocation(f"p{i}", f"n{i}"))
    assert shape(box.drain()) == [("node", [(f"n{i}", Action.CREATE_DRAIN) for i in range(3)]),
                                  ("alloc", ["p0", "p1", "p2"])]


def test_a_registration_after_something_else_about_its_node_keeps_its_place():
    box = Outbox("rm")
    box.node(node("n1", Action.DECOMISSION))  # lost, then back within one step
    box.node(node("n1", Action.CREATE_DRAIN))
    box.node(node("n2", Action.DRAIN_TO_SCHEDULABLE))
    box.node(node("n2", Action.CREATE))  # named before: stays behind the drain change
    assert shape(box.drain()) == [("node", [("n1", Action.DECOMISSION), ("n1", Action.CREATE_DRAIN),
                                            ("n2", Action.DRAIN_TO_SCHEDULABLE), ("n2", Action.CREATE)])]


def build(allocations, item):
    for placed in item.pods:
        translate.allocation(placed.pod, placed.priority, "default", item.node_id, into=allocations)


def on_n1(*pods):
    return NodeAllocations("n1", tuple(PlacedPod(pod, 0, True) for pod in pods))


def test_a_nodes_allocations_are_built_into_their_request_in_order_and_dropped_when_released_first():
    box = Outbox("rm", build)
    kept, dropped, alone, beside = (parse_pod(pod_json(name, node="n1")) for name in ("kept", "dropped", "alone", "beside"))
    box.allocate(on_n1(kept, dropped, beside))
    box.allocate(allocation("ready-made", "n1"))
    box.allocate(on_n1(alone))
    assert len(box) == 5  # each pod counted: the outlet sends at most so many at once
    box.release(si_pb2.AllocationRelease(allocationKey=dropped.uid))
    box.release(si_pb2.AllocationRelease(allocationKey=alone.uid))
    assert len(box) == 5  # the two pods left, the ready-made allocation, the two releases
    allocations, releases = box.drain()
    assert [a.allocationKey for a in allocations.allocations] == [kept.uid, beside.uid, "ready-made"]
    assert allocations.allocations[0] == translate.allocation(kept, 0, "default", "n1")
    assert [r.allocationKey for r in releases.releases.allocationsToRelease] == [dropped.uid, alone.uid]
