"""Random queues, guarantees, priorities and workloads: every preemption the core decides keeps
upstream's laws at the moment it is decided, and every preemptor runs on its node once its victims
are gone."""

import pytest
from hypothesis import HealthCheck, example, given, settings, target
from hypothesis import strategies as st

from actors.core import config as cfg
from actors.core.partition import Partition, Timing
from si import si_pb2
from si.resources import Resource
from tests.queues import config as built_config
from tests.queues import queue

LEAVES = ("root.x.a", "root.x.b", "root.c")
POLICIES = ("default", "default", "fence", "disabled")


def config(guarantees, policies) -> cfg.PartitionConfig:
    def leaf(name, index):
        guaranteed = None if guarantees[index] is None else {"vcore": guarantees[index]}
        return queue(name, guaranteed=guaranteed,
                     properties={"preemption.delay": "0s", "preemption.policy": policies[index]})

    x_guarantee = guarantees[3]
    if x_guarantee is not None:  # a parent guarantees at least what its children do
        x_guarantee += (guarantees[0] or 0) + (guarantees[1] or 0)
    x = queue("x", leaf("a", 0), leaf("b", 1), guaranteed=None if x_guarantee is None else {"vcore": x_guarantee},
              properties={"preemption.policy": policies[3]})
    return cfg.parse(built_config(x, leaf("c", 2))).partitions[0]


class Checked(Partition):
    """A partition that checks each preemption against the laws when it decides it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.decided: list[tuple] = []
        self.victims: set[str] = set()

    def _take_victim(self, victim, flight, message):
        self.victims.add(victim.key)
        super()._take_victim(victim, flight, message)

    def _preempt(self, app, queue, ask, found):
        victims, node = found.victims, found.node
        assert ask.preempts_others and victims
        preemptor_chain = {q.path for q in queue.chain()}
        freed_in: dict[str, Resource] = {}
        for victim in victims:
            owner = self.apps[victim.application_id]
            assert victim.node_id == node.node_id and victim.key in node.allocations
            assert victim.application_id != app.application_id, "never the preemptor's own application"
            assert victim.priority <= ask.priority, "victim priority above the preemptor's"
            assert victim.preemptable and not victim.foreign and not victim.placeholder and not victim.preempted
            victim_queue = self.queues.get(owner.queue_path)
            for q in victim_queue.chain():
                assert q.preemption_policy != "disabled"
                if q.preemption_policy == "fence" and q.parent is not None:
                    assert queue.path.startswith(q.path + "."), "a fenced queue's pod taken from outside"
                freed_in[q.path] = freed_in.get(q.path, Resource()) + victim.resource
        for q in queue.chain():  # a fenced preemptor stays inside its fence
            if q.preemption_policy == "fence" and q.parent is not None:
                assert all(self.apps[v.application_id].queue_path.startswith(q.path + ".") for v in victims)
        for path, freed in freed_in.items():  # victim queues stay at or above their guarantee
            q = self.queues.get(path)
            if path in preemptor_chain or q.guaranteed is None:
                continue
            left = q.allocated - q.preempting - freed
            for name, amount in freed.items():
                if amount > 0 and name in q.guaranteed:
                    assert left[name] >= q.guaranteed[name], f"{path} taken below its guarantee"
        guarded = False
        for q in queue.chain():  # the preemptor's queues stay at or under their guarantee
            if q.guaranteed is None:
                continue
            after = q.allocated - q.preempting + q.awaiting + ask.resource - freed_in.get(q.path, Resource())
            for name, amount in ask.resource.items():
                if amount > 0 and name in q.guaranteed:
                    guarded = True
                    assert after[name] <= q.guaranteed[name], f"{q.path} would exceed its guarantee"
        assert guarded, "a preemptor without a guarantee"
        freed_here = sum((v.resource for v in victims), Resource())
        assert ask.resource.fits_in(node.available + freed_here), "the victims do not make room"
        self.decided.append((app.application_id, ask.key, node.node_id))
        super()._preempt(app, queue, ask, found)


def confirm_all(partition, outbox) -> int:
    releases = [r for r in outbox.released if r.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER]
    partition.update_allocations([], releases)
    return len(releases)


submit = st.tuples(st.just("submit"), st.integers(0, 2), st.integers(1, 4), st.integers(1, 3), st.integers(0, 3))
workloads = st.lists(st.one_of(submit, submit, st.tuples(st.just("confirm")), st.tuples(st.just("schedule"))),
                     min_size=1, max_size=14)
guarantee = st.one_of(st.none(), st.integers(0, 5))  # vcore


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# A preemptor placed, then the victim of a sibling queue's preemptor (found by the search).
@example(guarantees=(None, 1, None, 0), policies=("default",) * 4, nodes=1, filler=2, reserve=False,
         operations=[("submit", 0, 1, 1, 0), ("submit", 1, 1, 1, 0), ("confirm",)])
@given(guarantees=st.tuples(guarantee, guarantee, guarantee, guarantee),
       policies=st.tuples(*[st.sampled_from(POLICIES)] * 4), nodes=st.integers(1, 3), filler=st.integers(0, 2),
       reserve=st.booleans(), operations=workloads)
def test_preemption_never_breaks_a_law_and_always_places_the_preemptor(guarantees, policies, nodes, filler, reserve,
                                                                       operations):
    # Asks reserve nodes at once, so reservations and preemptions meet.
    partition = Checked(config(guarantees, policies), "rm", timing=Timing(reservation_delay=0.0 if reserve else 2.0))
    partition.update_nodes([si_pb2.NodeInfo(nodeID=f"n{i}", action=si_pb2.NodeInfo.CREATE,
                                            schedulableResource=Resource.of(vcore=4000).to_proto())
                            for i in range(nodes)])
    partition.add_applications([si_pb2.AddApplicationRequest(applicationID=f"app-{i}", queueName=leaf,
                                                             partitionName="default",
                                                             ugi=si_pb2.UserGroupInformation(user="u"))
                                for i, leaf in enumerate(LEAVES)])
    partition.take_outbox()
    pending = []
    counter = 0
    operations = [("submit", filler, nodes * 4, 1, 0), ("schedule",), *operations]  # one queue fills the cluster
    for op in operations:
        if op[0] == "submit":
            _, leaf, count, vcore, priority = op
            asks = []
            for _ in range(count):
                counter += 1
                asks.append(si_pb2.Allocation(allocationKey=f"k{counter}", applicationID=f"app-{leaf}",
                                              partitionName="default", priority=priority,
                                              resourcePerAlloc=Resource.of(vcore=vcore * 1000).to_proto()))
            partition.update_allocations(asks, [])
            partition.schedule(max_seconds=1.0)
            pending.append(partition.take_outbox())
        elif op[0] == "schedule":
            partition.schedule(max_seconds=1.0)
            pending.append(partition.take_outbox())
        else:
            for outbox in pending:
                confirm_all(partition, outbox)
            pending = []
    for _ in range(30):  # the resource manager removes every victim; the core settles
        partition.schedule(max_seconds=1.0)
        pending.append(partition.take_outbox())
        if not sum(confirm_all(partition, outbox) for outbox in pending):
            break
        pending = []
    partition.schedule(max_seconds=1.0)
    target(len(partition.decided))  # steer the search towards workloads that preempt
    for app_id, key, node_id in partition.decided:
        if key in partition.victims:
            continue  # placed, then itself the victim of a later preemptor
        allocation = partition.apps[app_id].allocations.get(key)
        assert allocation is not None and allocation.node_id == node_id, f"preemptor {key} not placed on {node_id}"
    assert not partition.holds
    for held in partition.reservations.values():  # what stays reserved waits for room that is not there
        assert held.ask.node_id == "" and not held.ask.resource.fits_in(partition.nodes[held.node_id].available)
    for node in partition.nodes.values():
        assert node.allocated.fits_in(node.capacity)
