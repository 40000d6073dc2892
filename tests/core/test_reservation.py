"""Reservations through the core's SI interface: a large ask that waits reserves a node, which takes
no other ask until the reservation ends."""

from actors.core.partition import Timing
from actors.core.scheduler import Tuning
from si import si_pb2
from si.constants import TAG_REQUIRED_NODE
from si.resources import Resource
from tests.queues import config, queue

GIB = 2**30
TICK = 0.05  # the core's timers' period in the tests
E = si_pb2.EventRecord


def placed(core, key):
    return [a.nodeID for a in core.callback.new() if a.allocationKey == key]


def reserved_nodes(core):
    return {n.node_id: n.reservations for n in core.snapshot().partitions[0].nodes if n.is_reserved}


def reserved_after(core, seconds):
    """Move the clock to one tick (50 ms) before ``seconds``: no node is reserved; then to ``seconds``: the
    reserved nodes."""
    core.advance(seconds - TICK)
    assert reserved_nodes(core) == {}, f"no reservation before {seconds}s"
    core.advance(TICK)
    return reserved_nodes(core)


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
    [(node, holders)] = reserved_after(core, 2.0).items()  # the large ask reserves a node once it waited 2 s
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
    assert reserved_after(core, 2.0)
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
    assert reserved_after(core, 2.0)
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
    assert reserved_after(core, 0.1)

    def timed_out():
        return [e for e in core.callback.events if e.objectID == "node-0" and e.eventChangeDetail == E.NODE_RESERVATION
                and e.message == "reservation timed out"]
    core.advance(0.5 - TICK)
    assert not timed_out() and reserved_nodes(core)
    core.advance(TICK)
    assert [e.timestampNano for e in timed_out()] == [core.clock.now_ns()], "timed out 0.5 s after it was made"


def required_node_ask(core, app_id, key, node, vcore=1000, priority=1000):
    message = si_pb2.Allocation(allocationKey=key, applicationID=app_id, partitionName="default", priority=priority,
                                allocationTags={TAG_REQUIRED_NODE: node},
                                resourcePerAlloc=Resource.of(vcore=vcore, memory=GIB).to_proto())
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[message]))


def daemonset_victims(core):
    return [r.allocationKey for r in core.callback.released() if r.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER]


def full_nodes_with_an_opted_out_pod(core):
    """Two full nodes of queue q's pods of priority 0; the node of the opted-out pod ``keep``."""
    core.nodes(2, vcore=4000, memory=64 * GIB)
    core.app("work", queue="root.q")
    opted_out = si_pb2.Allocation(allocationKey="keep", applicationID="work", partitionName="default", priority=0,
                                  resourcePerAlloc=Resource.of(vcore=1000, memory=GIB).to_proto(),
                                  preemptionPolicy=si_pb2.PreemptionPolicy(allowPreemptSelf=False,
                                                                           allowPreemptOther=True))
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[opted_out]))
    core.settle()
    core.asks("work", 7, vcore=1000, memory=GIB)  # both nodes full
    core.settle()
    core.app("daemons", queue="root.system")
    return placed(core, "keep")[0]


def test_a_daemonset_pod_on_a_full_node_reserves_it_and_preempts_pods_of_its_priority_or_lower(core_factory):
    core = core_factory()
    target = full_nodes_with_an_opted_out_pod(core)
    work_on_target = {a.allocationKey for a in core.callback.new() if a.nodeID == target}
    required_node_ask(core, "daemons", "ds-0", target, vcore=2000)
    core.settle()
    victims = daemonset_victims(core)
    assert len(victims) == 2 and set(victims) <= work_on_target - {"keep"}
    assert reserved_nodes(core) == {target: ("ds-0",)}, "held for the DaemonSet pod meanwhile"
    for victim in victims:
        core.release("work", victim, si_pb2.PREEMPTED_BY_SCHEDULER)
    core.settle()
    assert placed(core, "ds-0") == [target]


def test_a_daemonset_pod_takes_a_pod_of_equal_priority_and_an_opted_out_one_last(core_factory):
    core = core_factory()
    target = full_nodes_with_an_opted_out_pod(core)
    youngest = [a.allocationKey for a in core.callback.new() if a.nodeID == target and a.allocationKey != "keep"][-1]
    required_node_ask(core, "daemons", "ds-equal", target, priority=0)  # as upstream: equal priority is no shield
    core.settle()
    assert daemonset_victims(core) == [youngest], "the youngest pod that did not opt out"
    core.release("work", youngest, si_pb2.PREEMPTED_BY_SCHEDULER)
    core.settle()
    assert placed(core, "ds-equal") == [target]
    required_node_ask(core, "daemons", "ds-most", target, vcore=3000, priority=0)
    core.settle()
    victims = daemonset_victims(core)[1:]
    assert len(victims) == 3 and victims[-1] == "keep", "an opted-out pod is a victim too, after the others"


def test_an_ask_that_reserved_a_node_preempts_there_once_its_delay_ends(core_factory):
    core = core_factory(config(queue("a", guaranteed={"vcore": 4}, properties={"preemption.delay": "600ms"}),
                               queue("q")),
                        tuning=Tuning(timing=Timing(completing=0.2, retention=0.5, reservation_delay=0.1)))
    full_cluster(core, nodes=1)
    core.app("a", queue="root.a")
    core.asks("a", 1, vcore=2000, memory=GIB, prefix="a-")
    assert reserved_after(core, 0.1), "a reservation before the preemption delay ends"
    core.advance(0.6 - 0.1 - TICK)
    assert daemonset_victims(core) == [], "no preemption before its delay"
    core.advance(TICK)
    assert daemonset_victims(core), "the reserving ask preempts on its node once the delay ends"
    for victim in [r for r in core.callback.released() if r.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER]:
        core.release(victim.applicationID, victim.allocationKey, si_pb2.PREEMPTED_BY_SCHEDULER)
    core.settle()
    assert placed(core, "a-0") == ["node-0"] and reserved_nodes(core) == {}


def test_an_ask_resent_with_a_new_size_gives_up_the_node_its_old_size_reserved(core_factory):
    """A pending pod resized in place: its ask comes again, and the reservation the old ask held ends."""
    core = core_factory()
    full_cluster(core)
    core.app("big", queue="root.q")
    core.asks("big", 1, vcore=8000, memory=GIB, prefix="big-")
    assert list(reserved_after(core, 2.0).values()) == [("big-0",)]
    core.asks("big", 1, vcore=7000, memory=GIB, prefix="big-")
    core.release("big", "big-0")
    core.settle()
    assert reserved_nodes(core) == {}
