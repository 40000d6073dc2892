"""Guaranteed-based preemption through the core's SI interface: each law, broken on purpose, is refused."""


import pytest

from si import si_pb2
from si.clock import VirtualClock
from si.resources import Resource
from tests.queues import config, queue
from tests.waiting import wait_for

GIB = 2**30
E = si_pb2.EventRecord


def two_queues(a: dict | None = None, b: dict | None = None, a_props: dict | None = None,
               b_props: dict | None = None, **partition_keys) -> str:
    """Queues a (4 vcores guaranteed, preempting without delay) and b (nothing guaranteed) under root; ``a`` and
    ``b`` replace their resources, ``a_props`` and ``b_props`` their properties."""
    return config(queue("a", **(a or {"guaranteed": {"vcore": 4}}),
                        properties={"preemption.delay": "0s"} if a_props is None else a_props),
                  queue("b", **(b or {"guaranteed": {"vcore": 0}}), properties=b_props), **partition_keys)


def ask(core, app_id, key, vcore=1000, priority=0, policy=None, node=""):
    message = si_pb2.Allocation(allocationKey=key, applicationID=app_id, partitionName="default", priority=priority,
                                nodeID=node, resourcePerAlloc=Resource.of(vcore=vcore, memory=GIB).to_proto())
    if policy is not None:
        message.preemptionPolicy.CopyFrom(si_pb2.PreemptionPolicy(allowPreemptSelf=policy[0],
                                                                  allowPreemptOther=policy[1]))
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[message]))


def preempted(core):
    return [r for r in core.callback.released() if r.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER]


def confirm(core):
    """The resource manager removes every victim's pod and says so."""
    for release in preempted(core):
        core.release(release.applicationID, release.allocationKey, si_pb2.PREEMPTED_BY_SCHEDULER)
    core.settle()


def full_cluster(core, b_pods=4, priority=0, policy=None, nodes=1, vcore=4000):
    """``nodes`` nodes filled by queue b's application."""
    core.nodes(nodes, vcore=vcore, memory=64 * GIB)
    core.app("app-b", queue="root.b")
    for i in range(b_pods):
        ask(core, "app-b", f"b-{i}", priority=priority, policy=policy)
    core.settle()
    assert len(core.callback.new()) == b_pods


def placed(core, key):
    return [a.nodeID for a in core.callback.new() if a.allocationKey == key]


def test_a_queue_under_its_guarantee_takes_room_back_and_the_preemptor_is_placed(core_factory):
    core = core_factory(two_queues())
    full_cluster(core, b_pods=4, priority=0)
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0", priority=0)
    core.settle()
    victims = preempted(core)
    assert len(victims) == 1 and victims[0].allocationKey == "b-3", "the youngest of the lowest priority"
    assert "a-0 of application app-a in queue root.a" in victims[0].message
    assert placed(core, "a-0") == [], "the preemptor waits until the victim is gone"
    snapshot = core.snapshot().partitions[0]
    assert snapshot.root_queue.find("root.b").preempting_resource["vcore"] == 1000
    confirm(core)
    assert placed(core, "a-0") == ["node-0"]
    details = {(e.type, e.eventChangeDetail) for e in core.callback.events}
    assert (E.APP, E.ALLOC_PREEMPT) in details and (E.QUEUE, E.QUEUE_PREEMPTION) in details


def test_the_held_node_takes_no_other_ask_while_the_victims_leave(core_factory):
    core = core_factory(two_queues())
    full_cluster(core, b_pods=4)
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    ask(core, "app-b", "b-late")  # queue b has no guarantee: it never preempts
    core.release("app-b", "b-3", si_pb2.PREEMPTED_BY_SCHEDULER)
    core.settle()
    assert placed(core, "a-0") == ["node-0"] and placed(core, "b-late") == []


def test_law_preemptor_queue_must_stay_within_its_guarantee(core_factory):
    core = core_factory(two_queues(a={"guaranteed": {"vcore": 1}}))
    full_cluster(core, b_pods=4)
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-big", vcore=2000)  # 2 vcore would take root.a over its guarantee of 1
    core.settle()
    assert preempted(core) == []


def test_law_a_queue_without_a_guarantee_never_preempts(core_factory):
    core = core_factory(two_queues(a={"max": {"vcore": 100}}))
    full_cluster(core, b_pods=4)
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    assert preempted(core) == []


def test_law_victims_never_take_their_queue_below_its_guarantee(core_factory):
    core = core_factory(two_queues(b={"guaranteed": {"vcore": 4}}))
    full_cluster(core, b_pods=4)  # b uses exactly its guarantee
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    assert preempted(core) == []


def test_law_only_down_to_the_victim_queue_guarantee(core_factory):
    core = core_factory(two_queues(b={"guaranteed": {"vcore": 3}}))
    full_cluster(core, b_pods=4)  # one vcore above its guarantee
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    ask(core, "app-a", "a-1")
    core.settle()
    assert len(preempted(core)) == 1, "the second would take root.b below its guarantee"


def test_law_never_the_preemptor_own_application(core_factory):
    core = core_factory(two_queues(a={"guaranteed": {"vcore": 8}}))
    core.nodes(1, vcore=4000, memory=64 * GIB)
    core.app("app-a", queue="root.a")
    for i in range(4):
        ask(core, "app-a", f"a-{i}", priority=0)
    core.settle()
    ask(core, "app-a", "a-urgent", priority=100)
    core.settle()
    assert preempted(core) == []


def test_law_victim_priority_at_most_the_preemptor(core_factory):
    core = core_factory(two_queues())
    full_cluster(core, b_pods=4, priority=10)
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-low", priority=5)
    core.settle()
    assert preempted(core) == []
    ask(core, "app-a", "a-high", priority=10)
    core.settle()
    assert len(preempted(core)) == 1


def test_victims_prefer_the_lowest_priority_then_the_youngest(core_factory):
    core = core_factory(two_queues())
    core.nodes(1, vcore=4000, memory=64 * GIB)
    core.app("app-b", queue="root.b")
    for key, priority in (("b-p1-old", 1), ("b-p0-old", 0), ("b-p0-young", 0), ("b-p2", 2)):
        ask(core, "app-b", key, priority=priority)
        core.settle()
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0", priority=5)
    core.settle()
    assert [v.allocationKey for v in preempted(core)] == ["b-p0-young"]


def test_the_fewest_victims_on_one_node_are_chosen(core_factory):
    core = core_factory(two_queues())
    core.nodes(2, vcore=4000, memory=64 * GIB)
    core.app("app-b", queue="root.b")
    for i in range(4):
        ask(core, "app-b", f"small-{i}", vcore=1000)
    ask(core, "app-b", "big", vcore=2000)
    ask(core, "app-b", "filler", vcore=2000)
    core.settle()
    assert len(core.callback.new()) == 6
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0", vcore=2000)
    core.settle()
    victims = preempted(core)
    assert len(victims) == 1 and victims[0].allocationKey in ("big", "filler")
    confirm(core)
    assert len(placed(core, "a-0")) == 1


def test_fence_keeps_outside_preemptors_away_from_the_fenced_queue(core_factory):
    core = core_factory(two_queues(b_props={"preemption.policy": "fence"}))
    full_cluster(core, b_pods=4)
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    assert preempted(core) == []


def test_a_fenced_preemptor_takes_no_victim_outside_its_fence(core_factory):
    core = core_factory(two_queues(a_props={"preemption.delay": "0s", "preemption.policy": "fence"}))
    full_cluster(core, b_pods=4)
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    assert preempted(core) == []


def test_disabled_queue_pods_are_never_victims(core_factory):
    core = core_factory(two_queues(b_props={"preemption.policy": "disabled"}))
    full_cluster(core, b_pods=4)
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    assert preempted(core) == []


def test_partition_preemption_disabled(core_factory):
    core = core_factory(two_queues(preemption={"enabled": False}))
    full_cluster(core, b_pods=4)
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    assert preempted(core) == []


def test_opt_outs_allow_preemption_false_and_preemption_policy_never(core_factory):
    core = core_factory(two_queues())
    full_cluster(core, b_pods=4, policy=(False, True))  # allow-preemption: "false"
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    assert preempted(core) == []

    other = core_factory(two_queues())
    full_cluster(other, b_pods=4)
    other.app("app-a", queue="root.a")
    ask(other, "app-a", "a-never", policy=(True, False))  # preemptionPolicy: Never
    other.settle()
    assert preempted(other) == []


def test_foreign_pods_are_never_victims(core_factory):
    core = core_factory(two_queues())
    core.nodes(1, vcore=4000, memory=64 * GIB)
    message = si_pb2.Allocation(allocationKey="foreign", nodeID="node-0", allocationTags={"foreign": "default"},
                                resourcePerAlloc=Resource.of(vcore=4000).to_proto())
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[message]))
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    assert preempted(core) == []


def test_preemption_delay_is_waited_for(core_factory):
    core = core_factory(two_queues(a_props={"preemption.delay": "1s"}))
    full_cluster(core, b_pods=4)
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    core.advance(0.95)
    assert preempted(core) == [], "not before the delay"
    core.advance(0.05)
    assert preempted(core), "preemption once the delay ends"


def test_at_most_ten_asks_of_a_queue_preempt_per_cycle(core_factory):
    core = core_factory(two_queues(a={"guaranteed": {"vcore": 40}}))
    core.nodes(20, vcore=1000, memory=64 * GIB)
    core.app("app-b", queue="root.b")
    for i in range(20):
        ask(core, "app-b", f"b-{i}")
    core.settle()
    core.app("app-a", queue="root.a")
    # All twenty asks arrive in one message; the first cycle lets only ten of them preempt.
    messages = [si_pb2.Allocation(allocationKey=f"a-{i}", applicationID="app-a", partitionName="default",
                                  resourcePerAlloc=Resource.of(vcore=1000, memory=GIB).to_proto()) for i in range(20)]
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=messages))
    core.settle()
    assert 10 <= len(preempted(core)) <= 20
    first_batch = [r for r in core.callback.allocations
                   if any(x.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER for x in r.released)][0]
    assert len(first_batch.released) <= 10


def test_a_refused_eviction_keeps_the_victim_and_another_is_chosen(core_factory):
    core = core_factory(two_queues())
    full_cluster(core, b_pods=4)
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    first = preempted(core)[0].allocationKey
    # The resource manager reports the victim again: it still runs (its eviction was refused).
    running = si_pb2.Allocation(allocationKey=first, applicationID="app-b", partitionName="default", nodeID="node-0",
                                resourcePerAlloc=Resource.of(vcore=1000, memory=GIB).to_proto())
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[running]))
    core.settle()
    keys = [v.allocationKey for v in preempted(core)]
    assert len(keys) == 2 and keys[1] != first
    core.release("app-b", keys[1], si_pb2.PREEMPTED_BY_SCHEDULER)
    core.settle()
    assert placed(core, "a-0") == ["node-0"]


def test_a_cancelled_preemptor_frees_its_node(core_factory):
    core = core_factory(two_queues())
    full_cluster(core, b_pods=4)
    core.app("app-a", queue="root.a")
    ask(core, "app-a", "a-0")
    core.settle()
    core.release("app-a", "a-0")  # the preemptor's pod is deleted while its victim leaves
    confirm(core)
    ask(core, "app-b", "b-after")
    core.settle()
    assert placed(core, "b-after") == ["node-0"]


@pytest.mark.parametrize("policy", ["default", "fence"])
def test_two_queues_regain_their_guarantees(core_factory, policy):
    """The README's example: root.a and root.b guaranteed half each; b fills the cluster, a takes its half back."""
    core = core_factory(two_queues(a={"guaranteed": {"vcore": 4}}, b={"guaranteed": {"vcore": 4}},
                                   b_props={"preemption.delay": "0s"}))
    full_cluster(core, b_pods=8, nodes=2)
    core.app("app-a", queue="root.a")
    for i in range(8):
        ask(core, "app-a", f"a-{i}")
    core.settle()
    for _ in range(4):
        confirm(core)
    by_queue = core.snapshot().partitions[0].root_queue
    assert by_queue.find("root.a").allocated_resource["vcore"] == 4000
    assert by_queue.find("root.b").allocated_resource["vcore"] == 4000


def quota(enabled: bool, max: int, delay: str) -> str:  # noqa: A002
    """Queue b under a max of ``max`` vcore, preempted ``delay`` after it is over it (when ``enabled``)."""
    return config(queue("b", max={"vcore": max}, properties={"quota.preemption.delay": delay}),
                  preemption={"quotapreemptionenabled": enabled})


def test_quota_change_preemption_brings_a_queue_back_under_its_lowered_max(core_factory):
    core = core_factory(quota(True, 8, "200ms"))
    core.nodes(1, vcore=8000, memory=64 * GIB)
    core.app("app-b", queue="root.b")
    for i, priority in enumerate((5, 0, 0, 5)):
        ask(core, "app-b", f"b-{i}", vcore=2000, priority=priority)
        core.settle()
    core.configure(quota(True, 4, "200ms"))
    core.settle()
    core.advance(0.2)  # the first tick (at 50 ms) sees the queue over its max; the delay runs from there
    assert preempted(core) == [], "not before the delay"
    core.advance(0.05)
    assert len(preempted(core)) == 2, "two pods preempted once the delay ends"
    victims = preempted(core)
    assert {v.allocationKey for v in victims} == {"b-1", "b-2"}, "the lowest priority ones"
    assert victims[0].message == "Preempted by Quota change enforcement process in root.b"
    confirm(core)
    queue = core.snapshot().partitions[0].root_queue.find("root.b")
    assert queue.allocated_resource["vcore"] == 4000 and queue.preempting_resource["vcore"] == 0
    assert len(preempted(core)) == 2, "nothing more once the queue fits"


@pytest.mark.parametrize("enabled, delay, victims", [(False, "200ms", 0), (True, "0", 0), (True, "200ms", 2)])
def test_quota_change_preemption_needs_the_partition_switch_and_a_delay(enabled, delay, victims):
    from actors.core import config as cfg
    from actors.core.partition import Partition

    clock = VirtualClock()
    partition = Partition(cfg.parse(quota(enabled, 8, delay)).partitions[0], "rm",
                          clock=clock)
    partition.update_nodes([si_pb2.NodeInfo(nodeID="n", action=si_pb2.NodeInfo.CREATE,
                                            schedulableResource=Resource.of(vcore=8000).to_proto())])
    partition.add_applications([si_pb2.AddApplicationRequest(applicationID="app-b", queueName="root.b",
                                                             ugi=si_pb2.UserGroupInformation(user="u"))])
    partition.update_allocations([si_pb2.Allocation(allocationKey=f"b-{i}", applicationID="app-b", nodeID="n",
                                                    resourcePerAlloc=Resource.of(vcore=2000).to_proto())
                                  for i in range(4)], [])
    partition.apply_config(cfg.parse(quota(enabled, 4, delay)).partitions[0])
    partition.take_outbox()
    for later in (0, 1, 59, 3540):  # seconds: long past any delay
        clock.advance(later)
        partition.tick()
    released = [r for r in partition.take_outbox().released if r.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER]
    assert len(released) == victims
    assert partition.queues.get("root.b").preempting["vcore"] == 2000 * victims


def test_queues_that_only_share_a_guaranteed_parent_never_preempt_each_other(core_factory):
    no_delay = {"preemption.delay": "0s"}
    core = core_factory(config(queue("x", queue("a", properties=no_delay), queue("b", properties=no_delay),
                                     guaranteed={"vcore": 2}), queue("c")))
    core.nodes(1, vcore=4000, memory=64 * GIB)
    core.app("app-c", queue="root.c")
    for i in range(4):
        ask(core, "app-c", f"c-{i}")
    core.app("app-a", queue="root.x.a")
    core.app("app-b", queue="root.x.b")
    core.settle()
    ask(core, "app-a", "a-0")
    wait_for(lambda: preempted(core), message="a preempts c")
    confirm(core)
    wait_for(lambda: "a-0" in {a.allocationKey for a in core.callback.new()})
    ask(core, "app-b", "b-0")  # x has room under its guarantee: b takes it from c, not from its sibling a
    wait_for(lambda: len(preempted(core)) == 2, message="b preempts")
    assert {r.applicationID for r in preempted(core)} == {"app-c"}


PRIORITY_QUEUES = config(queue(
    "parent",
    queue("sandbox", guaranteed={"vcore": 1}),
    queue("high", guaranteed={"vcore": 1}, properties={"preemption.delay": "0s", "priority.offset": "100"}),
    queue("low", guaranteed={"vcore": 1}, properties={"preemption.delay": "0s", "priority.offset": "-100"}),
    max={"vcore": 3}))


def allocation_log(core, app_id, key):
    app = next(a for a in core.snapshot().partitions[0].applications if a.application_id == app_id)
    return {reason: count for reason, _, count in next(a for a in app.requests if a.allocation_key == key).failure_log}


@pytest.mark.parametrize("node_vcore", [8000, 3000], ids=["room on the node", "the node full too"])
def test_an_ask_its_queue_max_holds_back_preempts_inside_that_max_as_its_queue_priority_allows(core_factory,
                                                                                             node_vcore):
    """Upstream's e2e Verify_preemption_on_priority_queue: the parent's max is used up by a sibling over
    its guarantee; the queue of offset 100 preempts one of its pods, the one of offset -100 cannot and
    logs upstream's constant texts."""
    core = core_factory(PRIORITY_QUEUES)
    core.nodes(1, vcore=node_vcore, memory=64 * GIB)
    core.app("sandbox", queue="root.parent.sandbox")
    for i in range(3):
        ask(core, "sandbox", f"s-{i}")
    core.settle()
    core.app("low", queue="root.parent.low")
    ask(core, "low", "low-0")
    core.settle()
    assert preempted(core) == []
    log = allocation_log(core, "low", "low-0")
    assert log.keys() == {"Preemption does not help", "Not enough queue quota"}
    core.app("high", queue="root.parent.high")
    ask(core, "high", "high-0")
    core.settle()
    assert [v.allocationKey for v in preempted(core)] == ["s-2"], "one pod, the youngest"
    assert placed(core, "high-0") == []
    confirm(core)
    assert placed(core, "high-0") == ["node-0"] and placed(core, "low-0") == []

