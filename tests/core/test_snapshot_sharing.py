"""Readers of the core's snapshots while it changes: concurrent reads share one snapshot, and every
read shows the changes made before it began."""

import threading

from actors.core.messages import TakeSnapshot
from actors.core.snapshot import APPLICATIONS, NODES
from si import si_pb2
from si.resources import Resource, total
from tests.waiting import wait_for

READERS = 7


class _HeldSnapshots:
    """The scheduler's handle on the core actor, holding the first snapshot asked for until released."""

    def __init__(self, core) -> None:
        self.core = core
        self.asked: list[frozenset[str]] = []
        self.release = threading.Event()

    def __getattr__(self, name: str):
        return getattr(self.core, name)

    def ask(self, message, *args, **kwargs):
        if isinstance(message, TakeSnapshot):
            self.asked.append(message.areas)
            if len(self.asked) == 1:
                self.release.wait(30)
        return self.core.ask(message, *args, **kwargs)


def test_readers_arriving_while_a_snapshot_is_taken_share_the_next_one(core_factory, monkeypatch):
    core = core_factory()
    core.nodes(1, prefix="first-")
    core.settle()
    held = _HeldSnapshots(core.scheduler._core)
    monkeypatch.setattr(core.scheduler, "_core", held)
    first: list = []
    taking = threading.Thread(target=lambda: first.append(core.scheduler.snapshot(frozenset({NODES}))))
    taking.start()
    wait_for(lambda: len(held.asked) == 1, timeout=10, message="the first reader taking its snapshot")
    core.nodes(1, prefix="later-")  # a change after the first snapshot was asked for
    core.scheduler.barrier()
    later: list = []
    readers = [threading.Thread(target=lambda areas=areas: later.append(core.scheduler.snapshot(areas)))
               for areas in [frozenset({NODES})] * (READERS - 1) + [frozenset({APPLICATIONS})]]
    for reader in readers:
        reader.start()
    wait_for(lambda: getattr(core.scheduler._next_snapshot, "readers", 0) == READERS, timeout=10,
             message="every later reader waiting for the next snapshot")
    held.release.set()
    for thread in [taking, *readers]:
        thread.join(30)

    assert held.asked == [frozenset({NODES}), frozenset({NODES, APPLICATIONS})]  # two snapshots for eight reads
    assert len(later) == READERS and all(snapshot is later[0] for snapshot in later)
    assert first[0] is not later[0]
    assert {n.node_id for n in later[0].partition("default").nodes} == {"first-0", "later-0"}


def test_a_read_after_a_change_sees_it_while_others_read(core_factory):
    core = core_factory()
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            core.scheduler.snapshot(frozenset({NODES}))

    pollers = [threading.Thread(target=poll) for _ in range(4)]
    for poller in pollers:
        poller.start()
    try:
        for count in range(1, 30):
            core.nodes(1, prefix=f"n{count}-")
            core.scheduler.barrier()  # the change is made: a read begun now must show it
            nodes = core.scheduler.snapshot(frozenset({NODES})).partition("default").nodes
            assert len(nodes) == count
    finally:
        stop.set()
        for poller in pollers:
            poller.join(30)


def test_a_node_pictured_again_shows_its_new_attributes(core_factory):
    core = core_factory()
    core.nodes(1, zone="a")
    core.settle()
    assert core.snapshot().partitions[0].nodes[0].attributes["zone"] == "a"
    core.nodes(1, action=si_pb2.NodeInfo.UPDATE, zone="b")
    core.settle()
    assert core.snapshot().partitions[0].nodes[0].attributes["zone"] == "b"


def test_an_allocation_is_pictured_once_for_its_node_and_its_application(core_factory):
    core = core_factory()
    core.nodes(2)
    core.app("app-1", queue="root.a")
    core.asks("app-1", 4, tags={"pod": "a"})

    def pictures() -> tuple[dict, dict]:
        partition = core.snapshot().partitions[0]
        on_nodes = {a.allocation_key: a for n in partition.nodes for a in n.allocations}
        (app,) = partition.applications
        return on_nodes, {a.allocation_key: a for a in app.allocations}

    on_nodes, of_app = pictures()
    assert sorted(of_app) == ["app-1-0", "app-1-1", "app-1-2", "app-1-3"]
    assert all(of_app[key] is on_nodes[key] for key in of_app)
    assert {a.node_id for a in of_app.values()} == {"node-0", "node-1"}
    assert all(a.allocation_tags == {"pod": "a"} for a in of_app.values())
    core.release("app-1", "app-1-0")
    core.asks("app-1", 1, prefix="later-")
    on_nodes, of_app = pictures()
    assert sorted(of_app) == ["app-1-1", "app-1-2", "app-1-3", "later-0"]
    assert all(of_app[key] is on_nodes[key] for key in of_app)
    assert of_app["later-0"].node_id in {"node-0", "node-1"} and of_app["later-0"].allocation_time > 0


def test_a_node_s_picture_kept_from_one_snapshot_to_the_next_shows_every_change_of_its_allocations(core_factory):
    """A node's allocations are taken from its last picture while they lead its list unchanged: a node
    that gains allocations, one whose allocation was resized in place, or released, or released and
    then gained more, shows each allocation as its application does, in the order they were booked,
    and adds up to what the node has allocated."""
    core = core_factory()
    core.nodes(2, vcore=16000, memory=64 * 2**30)
    core.app("app-1", queue="root.team", user="alice")

    def pictured():
        core.settle()
        partition = core.scheduler.snapshot(frozenset({NODES, APPLICATIONS})).partition("default")
        by_key = {a.allocation_key: a for app in partition.applications for a in app.allocations}
        for node in partition.nodes:
            assert [by_key[a.allocation_key] for a in node.allocations] == list(node.allocations)
            assert total([a.resource for a in node.allocations]) == node.allocated
        return {n.node_id: [(a.allocation_key, a.resource["vcore"]) for a in n.allocations] for n in partition.nodes}

    keys = core.asks("app-1", 2, vcore=1000, memory=2**30, node="node-0")
    assert pictured()["node-0"] == [(keys[0], 1000), (keys[1], 1000)]
    more = core.asks("app-1", 2, vcore=1000, memory=2**30, node="node-0", prefix="more-")
    assert pictured()["node-0"] == [(k, 1000) for k in (*keys, *more)]
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[si_pb2.Allocation(
        allocationKey=keys[1], applicationID="app-1", partitionName="default", nodeID="node-0",
        resourcePerAlloc=Resource.of(vcore=3000, memory=2**30).to_proto())]))  # resized in place
    assert pictured()["node-0"] == [(keys[0], 1000), (keys[1], 3000), (more[0], 1000), (more[1], 1000)]
    core.release("app-1", keys[0])
    assert pictured()["node-0"] == [(keys[1], 3000), (more[0], 1000), (more[1], 1000)]
    last = core.asks("app-1", 1, vcore=2000, memory=2**30, node="node-0", prefix="last-")
    assert pictured()["node-0"] == [(keys[1], 3000), (more[0], 1000), (more[1], 1000), (last[0], 2000)]


def test_a_victim_pictured_before_it_was_preempted_shows_its_preemption_and_its_refused_eviction(core_factory):
    """An allocation's picture is kept while it is unchanged: being chosen as a victim, and then staying
    (its eviction refused), each show in the next snapshot, under its node and its application alike."""
    from tests.core.test_preemption import ask, full_cluster, preempted, two_queues

    core = core_factory(two_queues())
    full_cluster(core, b_pods=4)

    def flags() -> tuple[dict, dict]:
        core.settle()
        partition = core.scheduler.snapshot(frozenset({NODES, APPLICATIONS})).partition("default")
        on_node = {a.allocation_key: a.preempted for n in partition.nodes for a in n.allocations}
        (app,) = [a for a in partition.applications if a.application_id == "app-b"]
        return on_node, {a.allocation_key: a.preempted for a in app.allocations}

    assert flags() == ({f"b-{i}": False for i in range(4)},) * 2  # pictured before any preemption
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    victim = preempted(core)[0].allocationKey
    on_node, of_app = flags()
    assert on_node[victim] and of_app[victim]
    assert not any(on_node[k] or of_app[k] for k in on_node if k != victim)
    running = si_pb2.Allocation(allocationKey=victim, applicationID="app-b", partitionName="default", nodeID="node-0",
                                resourcePerAlloc=Resource.of(vcore=1000, memory=2**30).to_proto())
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[running]))  # it still runs
    core.settle()
    on_node, of_app = flags()
    assert not on_node[victim] and not of_app[victim]
