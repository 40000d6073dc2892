"""Readers of the core's snapshots while it changes: concurrent reads share one snapshot, and every
read shows the changes made before it began."""

import threading

from actors.core.snapshot import NODES
from si import si_pb2

READERS, READS = 8, 5


def test_concurrent_readers_share_snapshots_while_the_core_changes(core_factory):
    core = core_factory()
    core.nodes(1, prefix="busy-")
    core.settle()
    taken: list[list] = [[] for _ in range(READERS)]
    start = threading.Barrier(READERS)

    def read(mine: list) -> None:
        start.wait()
        for _ in range(READS):
            # A change before each read: a reader alone would make the core take a snapshot every time.
            core.nodes(1, prefix="busy-", action=si_pb2.NodeInfo.UPDATE)
            core.scheduler.barrier()  # made before the read begins
            mine.append(core.scheduler.snapshot(frozenset({NODES})))

    readers = [threading.Thread(target=read, args=(mine,)) for mine in taken]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(30)
    reads = [s for mine in taken for s in mine]
    assert len(reads) == READERS * READS
    distinct = len({id(s) for s in reads})
    assert distinct <= READERS * READS // 2, f"{distinct} snapshots for {len(reads)} concurrent reads"


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
