"""Decide, then book: the cycle's decisions change nothing until the partition books them."""

from actors.core import config as cfg
from actors.core.cycle import Cycle, Decided
from actors.core.partition import Partition
from si import si_pb2
from si.resources import Resource
from tests.queues import config, queue

CONFIG = cfg.parse(config(queue("a"))).partitions[0]


def partition_with_one_ask() -> Partition:
    partition = Partition(CONFIG, "rm")
    partition.update_nodes([si_pb2.NodeInfo(nodeID="n0", action=si_pb2.NodeInfo.CREATE,
                                            schedulableResource=Resource.of(vcore=4000).to_proto())])
    partition.add_applications([si_pb2.AddApplicationRequest(applicationID="app", queueName="root.a",
                                                             ugi=si_pb2.UserGroupInformation(user="u"))])
    partition.update_allocations([si_pb2.Allocation(allocationKey="k", applicationID="app",
                                                    resourcePerAlloc=Resource.of(vcore=1000).to_proto())], [])
    partition.take_outbox()
    return partition


def test_a_decision_books_nothing_until_the_partition_allocates_it():
    partition = partition_with_one_ask()
    node, queue, app = partition.nodes["n0"], partition.queues.get("root.a"), partition.apps["app"]
    decisions = Cycle(partition.ledger, reservation_delay=2.0).decisions(10, partition.clock.monotonic_ns() + 10**9)

    result = next(decisions)

    assert (result.kind, result.ask.key, result.node) == (Decided.ALLOCATED, "k", node)
    assert node.allocated.is_zero() and queue.allocated.is_zero() and app.find_ask("k") is not None
    assert not partition.take_outbox().allocations.new

    partition.allocate(result)

    assert node.allocated == Resource.of(vcore=1000) and queue.allocated == Resource.of(vcore=1000)
    assert app.find_ask("k") is None and "k" in app.allocations
    assert [a.allocationKey for a in partition.take_outbox().allocations.new] == ["k"]
    assert next(decisions, None) is None  # nothing left: the walk saw what was booked


def test_a_decision_not_booked_leaves_the_ask_to_the_next_cycle():
    partition = partition_with_one_ask()
    decisions = Cycle(partition.ledger, reservation_delay=2.0).decisions(10, partition.clock.monotonic_ns() + 10**9)
    next(decisions)
    decisions.close()

    assert partition.schedule() == 1
    assert [a.allocationKey for a in partition.take_outbox().allocations.new] == ["k"]
