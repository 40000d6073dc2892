"""A node actor alone: SI out through a recording outlet, confirmations in. A node stays Recovering
until the core has processed what it reported (the resilience design's Node0)."""

import pytest

from actors.shim.messages import (
    CoreConfirmed,
    CountedForeign,
    NodeAllocations,
    NodeChanged,
    NodeDeleted,
    NodeRecovered,
    PlacedPod,
    PodsLeft,
    PodsOnNode,
    Settle,
    ToCore,
    Unplaced,
)
from actors.shim.nodeactor import ATTR_NODE_STATE, NodeActor
from actors.shim.nodes import parse_node
from actors.shim.pods import parse_pod
from actors.shim.state import FOREIGN, StateBoard
from actors.shim.ticker import Alarms
from si import si_pb2
from si.clock import REAL_CLOCK, VirtualClock
from tests.shim.doubles import Inbox, inbox_messages
from tests.shim.factories import node_json, pod_json
from tests.waiting import wait_for

Action = si_pb2.NodeInfo


class Node:
    def __init__(self, record, pods=(), clock=REAL_CLOCK):
        self.outlet, self.context, self.recorder = Inbox.start(), Inbox.start(), Inbox.start()
        self.board = StateBoard()
        self.alarms = Alarms(clock=clock)
        self.ref = NodeActor.start("n1", record, {p.pod.uid: p for p in pods}, context=self.context, outlet=self.outlet,
                                   recorder=self.recorder, board=self.board, alarms=self.alarms, lost_after=60.0)

    def sent(self):
        self.ref.ask(Settle())
        return [i for m in inbox_messages(self.outlet, ToCore) for i in m.items]

    def confirmations(self):
        self.ref.ask(Settle())
        return [m.token for m in inbox_messages(self.outlet, ToCore) if m.confirm_to is not None]

    def state(self):
        self.ref.ask(Settle())
        return {v.name: v.state for v in self.board.nodes.all()}["n1"]

    def stop(self):
        for ref in (self.ref, self.outlet, self.context, self.recorder):
            ref.stop()
        self.alarms.stop()


@pytest.fixture
def node():
    made = []

    def make(*args):
        made.append(Node(*args))
        return made[-1]

    yield make
    for each in made:
        each.stop()


def allocated(items):
    """(pod uid, node) of every allocation among ``items``: the pods' the node tells the outlet to build."""
    return [(placed.pod.uid, i.node_id) for i in items if isinstance(i, NodeAllocations) for placed in i.pods]


def ours(name):
    return PlacedPod(parse_pod(pod_json(name, node="n1")), 0, report=True)


def test_node0_stays_recovering_until_the_core_confirms_its_pods(node):
    pod0 = ours("pod0")
    n = node(parse_node(node_json("n1")), [pod0])
    sent = n.sent()
    assert sent[0].action == Action.CREATE_DRAIN and sent[0].nodeID == "n1"
    assert allocated(sent[1:]) == [(pod0.pod.uid, "n1")]
    assert n.state() == "Recovering"
    (token,) = n.confirmations()
    n.ref.tell(CoreConfirmed(token - 1))  # an older step's answer does not end the recovery
    assert n.state() == "Recovering"
    n.ref.tell(CoreConfirmed(token))
    assert n.state() == "Schedulable"
    turn = [i for i in n.sent() if isinstance(i, si_pb2.NodeInfo)][-1]  # one item: the turn carries the state
    assert (turn.action, turn.attributes[ATTR_NODE_STATE]) == (Action.DRAIN_TO_SCHEDULABLE, "Schedulable")
    assert turn.schedulableResource == sent[0].schedulableResource
    wait_for(lambda: inbox_messages(n.context, NodeRecovered) == [NodeRecovered("n1", 1)])


def test_a_recovering_node_reports_every_pod_on_it_as_one_item_after_its_registration(node):
    other = PlacedPod(parse_pod(pod_json("other", node="n1", scheduler="default-scheduler")), 0, report=True,
                      foreign=True)
    pods = [ours("pod0"), other, ours("pod1")]
    n = node(parse_node(node_json("n1")), pods)
    register, report = n.sent()
    assert (register.action, register.nodeID) == (Action.CREATE_DRAIN, "n1")
    assert (report.node_id, report.reporter) == ("n1", n.ref)
    assert [(p.pod.uid, p.foreign) for p in report.pods] == [(p.pod.uid, p.foreign) for p in pods]
    assert {v.uid for v in n.board.pods.all()[0] if v.state == FOREIGN} == {other.pod.uid}


def test_pods_arriving_while_recovering_extend_the_recovery(node):
    n = node(parse_node(node_json("n1")), [ours("pod0")])
    (first,) = n.confirmations()
    n.ref.tell(PodsOnNode((ours("pod1"),)))
    assert n.confirmations() == [first, first + 1]
    n.ref.tell(CoreConfirmed(first))
    assert n.state() == "Recovering"
    n.ref.tell(CoreConfirmed(first + 1))
    assert n.state() == "Schedulable"


def test_reported_pods_are_released_when_they_leave_and_core_placed_ones_are_not(node):
    n = node(parse_node(node_json("n1")))
    n.ref.tell(CoreConfirmed(n.confirmations()[0]))
    reported, placed = ours("found"), PlacedPod(parse_pod(pod_json("placed", node="n1")), 0, report=False)
    n.ref.tell(PodsOnNode((reported, placed)))
    n.ref.tell(PodsLeft((reported.pod, placed.pod)))
    items = n.sent()
    assert allocated(items) == [(reported.pod.uid, "n1")]
    assert [r.allocationKey for r in items if isinstance(r, si_pb2.AllocationRelease)] == [reported.pod.uid]


def test_a_node_only_named_by_pods_is_lost_and_recovers_when_it_appears(node):
    pod2 = ours("pod2")
    n = node(None, [pod2])
    assert n.state() == "Lost" and n.sent() == []
    n.ref.tell(NodeChanged(parse_node(node_json("n1"))))
    sent = n.sent()
    assert sent[0].action == Action.CREATE_DRAIN
    assert allocated(sent[1:]) == [(pod2.pod.uid, "n1")]
    assert n.state() == "Recovering"


def test_a_node_not_ready_for_lost_after_is_lost_exactly_then(node):
    clock = VirtualClock()
    n = node(parse_node(node_json("n1")), [], clock)
    for token in n.confirmations():
        n.ref.tell(CoreConfirmed(token))
    assert n.state() == "Schedulable"
    not_ready = node_json("n1", resource_version="2")
    not_ready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    n.ref.tell(NodeChanged(parse_node(not_ready)))
    assert n.state() == "NotReady"
    clock.advance(59.99, between=n.state)
    assert n.state() == "NotReady" and n.sent()[-1].action != Action.DECOMISSION
    clock.advance(0.01, between=n.state)
    assert n.state() == "Lost", "NotReady for the 60 s of lost_after"
    assert n.sent()[-1].action == Action.DECOMISSION


def test_a_pod_the_outlet_counted_as_foreign_is_shown_and_released_as_foreign(node):
    hostile = ours("hostile")
    n = node(parse_node(node_json("n1")), [hostile])
    n.ref.tell(CoreConfirmed(n.confirmations()[0]))
    n.ref.tell(CountedForeign(hostile.pod.uid))
    n.ref.ask(Settle())
    views, _ = n.board.pods.all()
    assert [(v.uid, v.state) for v in views] == [(hostile.pod.uid, FOREIGN)]
    n.ref.tell(PodsLeft((hostile.pod,)))
    [release] = [i for i in n.sent() if isinstance(i, si_pb2.AllocationRelease)]
    assert (release.allocationKey, release.applicationID) == (hostile.pod.uid, "")


def test_pods_told_to_a_node_removed_before_them_go_back_to_the_context(node):
    n = node(parse_node(node_json("n1")))
    wait_for(lambda: n.state() in ("Recovering", "Schedulable"))
    n.ref.tell(NodeDeleted())  # no pod known yet: removed
    placed = ours("late")
    n.ref.tell(PodsOnNode((placed,)))
    n.ref.ask(Settle())
    handed = inbox_messages(n.context, Unplaced)
    assert [(m.node_name, m.pods) for m in handed] == [("n1", (placed,))]
    assert handed[0].node.actor_urn == n.ref.actor_urn
