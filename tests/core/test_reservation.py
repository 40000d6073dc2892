"""Reservations through the core's SI interface: a large ask that waits reserves a node, which takes
no other ask until the reservation ends."""

from actors.core.partition import Timing
from actors.core.scheduler import Tuning
from si import si_pb2
from tests.waiting import wait_for

GIB = 2**30
E = si_pb2.EventRecord


def placed(core, key):
    return [a.nodeID for a in core.callback.new() if a.allocationKey == key]


def reserved_nodes(core):
    return {n.node_id: n.reservations for n in core.snapshot().partitions[0].nodes if n.is_reserved}


def full_cluster(core, nodes=2):
    """``nodes`` nodes of 8 vcore, each full of one-vcore pods of application "small"."""
    core.nodes(nodes, vcore=8000, memory=64 * GIB)
    core.app("small", queue="root.q")
    core.asks("small", 8 * nodes, vcore=1000, memory=GIB)
    core.settle()
    return {a.allocationKey: a.nodeID for a in core.callback.new()}


def test_a_large_ask_among_a_stream_of_small_ones_is_placed(core_factory):
    core = core_factory()
    running = full_cluster(core)
    core.app("big", queue="root.q")
    core.asks("big", 1, vcore=8000, memory=GIB, prefix="big-")
    wait_for(lambda: reserved_nodes(core), timeout=5, message="the large ask reserves a node once it waited 2 s")
    [(node, holders)] = reserved_nodes(core).items()
    assert holders == ("big-0",)
    health = core.scheduler.check_health()
    assert next(c for c in health.checks if c.name == "Reservation check").diagnosis_message == \
        "Reservation/node nr ratio: [0.500000]"
    # The stream: each step a small pod ends, alternately on each node, and a new small ask arrives.
    order = sorted(running, key=lambda key: (int(key.rsplit("-", 1)[1]) % 2, key))
    for step, key in enumerate(order):
        core.release("small", key)
        core.asks("small", 1, vcore=1000, memory=GIB, prefix=f"stream-{step}-")
        core.settle()
        if placed(core, "big-0"):
            break
    assert placed(core, "big-0") == [node]
    stream_nodes = {a.nodeID for a in core.callback.new() if a.allocationKey.startswith("stream-")}
    assert node not in stream_nodes, "no small ask took the reserved node's room"
    assert all("big-0" not in holders for holders in reserved_nodes(core).values())


def test_a_reservation_is_satisfied_on_another_node_and_its_node_freed(core_factory):
    core = core_factory()
    full_cluster(core, nodes=1)
    core.app("big", queue="root.q")
    core.asks("big", 1, vcore=4000, memory=GIB, prefix="big-")
    wait_for(lambda: reserved_nodes(core), timeout=5, message="a reservation")
    core.nodes(1, vcore=8000, memory=64 * GIB, prefix="new-")
    core.settle()
    assert placed(core, "big-0") == ["new-0"]
    assert reserved_nodes(core) == {}
    core.release("small", "small-0")
    core.asks("small", 1, vcore=1000, memory=GIB, prefix="after-")
    core.settle()
    assert placed(core, "after-0") != [], "the node takes asks again"
    details = [(e.eventChangeType, e.eventChangeDetail) for e in core.callback.events if e.objectID == "node-0"]
    assert (E.ADD, E.NODE_RESERVATION) in details and (E.REMOVE, E.NODE_RESERVATION) in details


def test_a_cancelled_ask_releases_its_reservation(core_factory):
    core = core_factory()
    full_cluster(core, nodes=1)
    core.app("big", queue="root.q")
    core.asks("big", 1, vcore=4000, memory=GIB, prefix="big-")
    wait_for(lambda: reserved_nodes(core), timeout=5, message="a reservation")
    apps = {a.application_id: a for a in core.snapshot().partitions[0].applications}
    assert apps["big"].reservations == ("big-0",)
    core.release("big", "big-0")
    core.settle()
    assert reserved_nodes(core) == {}


def test_a_reservation_times_out(core_factory):
    core = core_factory(tuning=Tuning(timing=Timing(completing=0.2, retention=0.5, reservation_delay=0.1,
                                                    reservation_timeout=0.5)))
    full_cluster(core, nodes=1)
    core.app("big", queue="root.q")
    core.asks("big", 1, vcore=4000, memory=GIB, prefix="big-")
    wait_for(lambda: reserved_nodes(core), timeout=5, message="a reservation")
    wait_for(lambda: any(e.objectID == "node-0" and e.eventChangeDetail == E.NODE_RESERVATION
                         and e.message == "reservation timed out" for e in core.callback.events),
             timeout=5, message="the reservation times out")
