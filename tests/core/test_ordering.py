"""The cycle keeps queues and applications in order between walks, moving only what a placement changed:
after any sequence of asks, placements and releases it decides exactly as a cycle that sorts everything
again before every walk."""

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from actors.core import config as cfg
from actors.core.cycle import Cycle
from actors.core.partition import Partition
from si import si_pb2
from si.clock import VirtualClock
from si.resources import Resource
from tests.queues import config, queue

FAIR, FIFO = {"application.sort.policy": "fair"}, {"application.sort.policy": "fifo"}
NO_PRIORITY = {"application.sort.priority": "disabled"}
CONFIG = cfg.parse(config(
    queue("p", queue("fair", properties=FAIR, guaranteed={"vcore": 4}), queue("fifo", properties=FIFO),
          properties=NO_PRIORITY),
    queue("q", queue("fair", properties={**FAIR, **NO_PRIORITY}), queue("fifo", properties={**FIFO, **NO_PRIORITY}),
          guaranteed={"vcore": 6}),
    queue("leaf", properties=FAIR),
    queue("fenced", properties={**FIFO, "priority.policy": "fence", "priority.offset": "2"}),
)).partitions[0]
LEAVES = ("root.p.fair", "root.p.fifo", "root.q.fair", "root.q.fifo", "root.leaf", "root.fenced")


class SortingEveryWalk(Cycle):
    """The reference: what the cycle did before it kept its orders, a full sort before every walk."""

    def _reorder(self) -> None:
        self.orders.clear()
        self.placed = []


asks = st.tuples(st.just("asks"), st.integers(0, 11), st.integers(1, 6), st.integers(1, 2), st.integers(-1, 3))
operations = st.lists(st.one_of(
    asks, asks, asks,
    st.tuples(st.just("app"), st.sampled_from(LEAVES)),
    st.tuples(st.just("release"), st.integers(0, 100), st.integers(1, 6)),
    st.tuples(st.just("schedule"), st.integers(1, 20)),
), min_size=1, max_size=30)


def new_partition() -> Partition:
    """Eight nodes of 8 cores, and two applications in each leaf."""
    partition = Partition(CONFIG, "rm", clock=VirtualClock())
    partition.update_nodes([si_pb2.NodeInfo(nodeID=f"n{i}", action=si_pb2.NodeInfo.CREATE,
                                            schedulableResource=Resource.of(vcore=8000).to_proto())
                            for i in range(8)])
    for leaf in LEAVES * 2:
        apply(partition, Cycle, ("app", leaf), 0)
    return partition


def apply(partition: Partition, cycle: type[Cycle], operation: tuple, serial: int) -> list[tuple[str, str]]:
    """Do ``operation`` on ``partition``; the allocations it decided, in order, as (ask, node)."""
    kind = operation[0]
    partition.clock.advance(0.001)
    if kind == "app":
        partition.add_applications([si_pb2.AddApplicationRequest(
            applicationID=f"app{len(partition.apps)}", queueName=operation[1],
            ugi=si_pb2.UserGroupInformation(user="u"))])
    elif kind == "asks" and partition.apps:
        _, which, count, cores, priority = operation
        app_id = sorted(partition.apps)[which % len(partition.apps)]
        partition.update_allocations([si_pb2.Allocation(
            allocationKey=f"{app_id}-{serial}-{i}", applicationID=app_id, priority=priority,
            resourcePerAlloc=Resource.of(vcore=cores * 1000).to_proto()) for i in range(count)], [])
    elif kind == "release":
        _, first, count = operation
        running = sorted((key, app.application_id) for app in partition.apps.values() for key in app.allocations)
        chosen = running[first % len(running):][:count] if running else []
        partition.update_allocations([], [si_pb2.AllocationRelease(
            applicationID=app_id, allocationKey=key, terminationType=si_pb2.STOPPED_BY_RM) for key, app_id in chosen])
    elif kind == "schedule":
        decisions = cycle(partition.ledger, reservation_delay=3600).decisions(operation[1], 2**62)
        for result in decisions:
            partition.allocate(result)
    return [(a.allocationKey, a.nodeID) for a in partition.take_outbox().allocations.new]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
@example([("asks", 0, 3, 1, 0), ("asks", 4, 3, 1, 0), ("schedule", 20)])  # leaves under two parents
@example([("asks", 4, 3, 1, 0), ("asks", 10, 3, 1, 0), ("schedule", 20)])  # two applications of a fair leaf
def test_the_kept_order_decides_as_a_full_sort_before_every_walk(ops):
    kept, sorting = new_partition(), new_partition()
    for serial, operation in enumerate(ops):
        assert apply(kept, Cycle, operation, serial) == apply(sorting, SortingEveryWalk, operation, serial), operation
