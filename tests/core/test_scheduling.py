"""The core through its SI interface: what the resource manager receives for what it sends."""

from collections import Counter

import pytest

from actors.core.partition import Timing
from actors.core.scheduler import Tuning
from actors.core.snapshot import ALL_AREAS, HEALTH, NODES, SUMMARY
from si import si_pb2
from si.constants import FOREIGN_DEFAULT, TAG_FOREIGN
from si.resources import Resource
from tests.queues import config, partition, queue
from tests.waiting import wait_for

GIB = 2**30


def per_node(core):
    return Counter(a.nodeID for a in core.callback.new())


def test_asks_are_placed_and_answered_in_one_response_per_batch(core_factory):
    core = core_factory()
    core.nodes(2)
    core.app("app", queue="root.sandbox", namespace="ns")
    keys = core.asks("app", 6)
    core.settle()
    assert sorted(a.allocationKey for a in core.callback.new()) == sorted(keys)
    assert all(a.nodeID in ("node-0", "node-1") for a in core.callback.new())
    assert len([r for r in core.callback.allocations if r.new]) <= 2
    assert core.callback.app_states("app") == ["Accepted", "Running"]


def test_queue_max_is_never_exceeded_and_the_wait_names_the_queue(core_factory):
    core = core_factory(config(queue("small", max={"vcore": 3})))
    core.nodes(4)
    core.app("app", queue="root.small")
    keys = core.asks("app", 10)
    core.settle()
    assert len(core.callback.new()) == 3
    waiting = [k for k in keys if k not in {a.allocationKey for a in core.callback.new()}]
    assert core.callback.failures(waiting[0]) == ["queue root.small: max vcore 3000 reached (vcore in use 3000)"]
    small = core.snapshot().partitions[0].root_queue.find("root.small")
    assert small.allocated_resource["vcore"] == 3000 and small.headroom["vcore"] == 0
    core.release("app", core.callback.new()[0].allocationKey)
    core.settle()
    assert len(core.callback.new()) == 4, "a release makes room for exactly one more"


def test_guaranteed_shares_are_honoured_under_contention(core_factory):
    core = core_factory(config(queue("a", guaranteed={"vcore": 4}), queue("b", guaranteed={"vcore": 12})))
    core.app("app-a", queue="root.a")
    core.app("app-b", queue="root.b")
    core.asks("app-a", 40)
    core.asks("app-b", 40)
    core.settle()
    core.nodes(4)  # 16 vcore arrive at once: both queues compete for them
    core.settle()
    by_app = Counter(a.applicationID for a in core.callback.new())
    assert by_app == {"app-a": 4, "app-b": 12}


def test_fifo_serves_the_oldest_application_first(core_factory):
    core = core_factory(config(queue("q", properties={"application.sort.policy": "fifo"})))
    core.app("first", queue="root.q")
    core.app("second", queue="root.q")
    core.settle()
    core.asks("second", 3)
    core.asks("first", 3)
    core.settle()
    core.nodes(1, vcore=4000)
    core.settle()
    assert Counter(a.applicationID for a in core.callback.new()) == {"first": 3, "second": 1}


def test_fair_serves_the_least_used_application_first(core_factory):
    core = core_factory(config(queue("q", properties={"application.sort.policy": "fair"})))
    core.app("first", queue="root.q")
    core.app("second", queue="root.q")
    core.settle()
    core.asks("first", 4)
    core.asks("second", 4)
    core.settle()
    core.nodes(1, vcore=4000, memory=64 * GIB)
    core.settle()
    assert Counter(a.applicationID for a in core.callback.new()) == {"first": 2, "second": 2}


@pytest.mark.parametrize("policy", ["fair", "fifo"])
def test_without_priority_sorting_the_highest_ask_priority_breaks_a_tie(core_factory, policy):
    """Upstream's sortApplications: equal shares (fair) or submissions (fifo) go to the application whose
    pending asks have the highest priority, whichever arrived first."""
    core = core_factory(config(queue("q", properties={"application.sort.policy": policy,
                                                      "application.sort.priority": "disabled"})))
    core.app("first", queue="root.q")
    core.app("second", queue="root.q")
    core.settle()
    core.asks("first", 1, priority=1)
    core.asks("second", 1, priority=100)
    core.settle()
    core.nodes(1, vcore=1000)  # room for one of the two
    core.settle()
    assert [a.applicationID for a in core.callback.new()] == ["second"]


def test_stateaware_lets_one_application_start_at_a_time(core_factory):
    core = core_factory(config(queue("q", properties={"application.sort.policy": "stateaware"})))
    core.nodes(2)
    core.app("one", queue="root.q")
    core.app("two", queue="root.q")
    core.app("free", queue="root.q", disableStateAware="true")
    core.settle()
    core.asks("one", 1, prefix="one-a")
    core.asks("two", 1)
    core.asks("free", 1)
    core.settle()
    placed = {a.applicationID for a in core.callback.new()}
    assert placed == {"one", "free"}, "two waits while one is Starting; free skips Starting"
    assert core.callback.app_states("one")[-1] == "Starting"
    assert core.callback.app_states("free")[-1] == "Running"
    core.asks("one", 1, prefix="one-b")  # a second allocation moves one to Running
    core.settle()
    assert core.callback.app_states("one")[-1] == "Running"
    assert {a.applicationID for a in core.callback.new()} == {"one", "two", "free"}


def test_binpacking_fills_a_node_before_the_next_and_fair_spreads(core_factory):
    packed = core_factory(config(queue("q"), create=False, nodesortpolicy={"type": "binpacking"}))
    packed.nodes(3)
    packed.app("app", queue="root.q")
    packed.settle()
    for i in range(4):  # one at a time, so each decision sees the last one's usage
        packed.asks("app", 1, prefix=f"p{i}-")
        packed.settle()
    assert sorted(per_node(packed).values()) == [4]
    spread = core_factory(config(queue("q")))
    spread.nodes(3)
    spread.app("app", queue="root.q")
    spread.settle()
    for i in range(3):
        spread.asks("app", 1, prefix=f"s{i}-")
        spread.settle()
    assert sorted(per_node(spread).values()) == [1, 1, 1]


def test_placement_rules_and_acl_rejections_carry_reasons(core_factory):
    core = core_factory(partition(queue("root", queue("open", submitacl="*"), queue("closed", submitacl="alice"), submitacl=" "),
                                  placementrules=[{"name": "provided"}]))
    core.app("ok", queue="root.open", user="bob")
    core.app("denied", queue="root.closed", user="bob", groups=("dev",))
    core.app("nowhere", queue="root.missing", user="bob")
    core.app("allowed", queue="root.closed", user="alice")
    core.settle()
    assert set(core.callback.accepted_apps()) == {"ok", "allowed"}
    rejected = core.callback.rejected_apps()
    assert rejected["denied"] == "application rejected: no placement rule matched (requested queue 'root.closed')"
    assert "nowhere" in rejected
    assert core.snapshot().partitions[0].applications_by_state["Rejected"] == 2


def test_tag_rule_creates_queues_and_user_rule_replaces_dots(core_factory):
    core = core_factory(partition(queue("root", queue("users", parent=True), submitacl="*"), placementrules=[
        {"name": "user", "create": True, "parent": {"name": "fixed", "value": "users"},
         "filter": {"type": "allow", "users": ["john.*"]}},
        {"name": "tag", "value": "namespace", "create": True}]))
    core.app("a1", user="john.doe")
    core.app("a2", user="mary", namespace="team-x")
    core.settle()
    apps = {a.application_id: a.queue_name for a in core.snapshot().partitions[0].applications}
    assert apps == {"a1": "root.users.john_dot_doe", "a2": "root.team-x"}


def test_user_limits_hold_and_extra_apps_wait(core_factory):
    core = core_factory(config(queue("q", limits=[
        {"limit": "one app each", "users": ["*"], "maxapplications": 1},
        {"limit": "bob cap", "users": ["bob"], "maxresources": {"vcore": 2}}])))
    core.nodes(4)
    for app, user in (("bob-1", "bob"), ("bob-2", "bob"), ("eve-1", "eve"), ("eve-2", "eve")):
        core.app(app, queue="root.q", user=user)
    core.settle()
    core.asks("bob-1", 5)
    core.asks("bob-2", 1)
    core.asks("eve-1", 3)
    core.asks("eve-2", 1)
    core.settle()
    placed = Counter(a.applicationID for a in core.callback.new())
    assert placed == {"bob-1": 2, "eve-1": 3}, "bob's own limit replaces the wildcard for him"
    assert core.callback.failures("bob-2-0")[-1] == "user bob: resource limit reached in root.q"
    bob = next(a for a in core.snapshot().partitions[0].applications if a.application_id == "bob-1")
    assert {reason for a in bob.requests for reason, _, _ in a.failure_log} == {"Not enough user quota"}, "upstream's"
    assert core.callback.failures("eve-2-0")[-1] == "user eve: maxapplications limit reached in root.q"
    assert not core.callback.rejected_apps(), "over a limit an application waits; it is not rejected"
    usage = {u["userName"]: u for u in core.snapshot().partitions[0].user_usage}
    assert usage["bob"]["queues"]["resourceUsage"]["vcore"] == 2000


def test_a_completing_application_no_longer_runs_for_its_user_and_queue(core_factory):
    """As yunikorn-core's ugm: the application's last allocation gone, it leaves its user's and group's
    runningApplications (and its queue's running count) while it waits in Completing."""
    core = core_factory(config(queue("q", limits=[
        {"limit": "one app", "users": ["bob"], "groups": ["dev"], "maxapplications": 1}])),
                        tuning=Tuning(timing=Timing(completing=60.0, retention=60.0)))
    core.nodes(1)
    core.app("bob-1", queue="root.q", user="bob", groups=["dev"])
    core.app("bob-2", queue="root.q", user="bob", groups=["dev"])
    core.asks("bob-1", 1)
    core.settle()
    core.asks("bob-2", 1)
    core.settle()
    assert core.callback.failures("bob-2-0")[-1] == "user bob: maxapplications limit reached in root.q"

    def running(kind: str, name_key: str, name: str) -> list[str]:
        views = getattr(core.snapshot().partitions[0], kind)
        return next(v for v in views if v[name_key] == name)["queues"]["children"][0]["runningApplications"]
    assert running("user_usage", "userName", "bob") == ["bob-1"]
    core.release("bob-1", "bob-1-0")
    wait_for(lambda: [a.applicationID for a in core.callback.new()][-1:] == ["bob-2"],
             message="bob-2 placed once bob-1 stops running")
    assert core.callback.app_states("bob-1")[-1] == "Completing"
    assert running("user_usage", "userName", "bob") == ["bob-2"]
    assert running("group_usage", "groupName", "dev") == ["bob-2"]


def test_foreign_allocations_occupy_nodes_and_are_released(core_factory):
    core = core_factory()
    core.nodes(1, vcore=4000)
    foreign = si_pb2.Allocation(allocationKey="uid-1", nodeID="node-0", partitionName="default",
                                allocationTags={TAG_FOREIGN: FOREIGN_DEFAULT},
                                resourcePerAlloc=Resource.of(vcore=3000, memory=GIB).to_proto())
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[foreign]))
    core.app("app", queue="root.q")
    core.asks("app", 2)
    core.settle()
    assert len(core.callback.new()) == 1, "only 1000m is left beside the foreign pod"
    node = core.snapshot().partitions[0].nodes[0]
    assert node.occupied["vcore"] == 3000 and node.allocated["vcore"] == 1000 and node.available["vcore"] == 0
    assert [a.allocation_key for a in node.foreign_allocations] == ["uid-1"]
    assert [a.allocation_key for a in node.allocations] == ["app-0"]
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", releases=si_pb2.AllocationReleasesRequest(
        allocationsToRelease=[si_pb2.AllocationRelease(partitionName="default", allocationKey="uid-1")])))
    core.settle()
    assert len(core.callback.new()) == 2
    assert core.snapshot().partitions[0].nodes[0].occupied.is_zero()
    occupied_events = [e for e in core.callback.events if e.eventChangeDetail == si_pb2.EventRecord.NODE_OCCUPIED]
    assert len(occupied_events) == 2


def test_a_foreign_pod_that_goes_is_released_from_its_own_node_even_after_a_resize_or_its_nodes_removal(core_factory):
    core = core_factory()
    core.nodes(3, vcore=4000)

    def report(key, node, vcore):
        core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[si_pb2.Allocation(
            allocationKey=key, nodeID=node, partitionName="default", allocationTags={TAG_FOREIGN: FOREIGN_DEFAULT},
            resourcePerAlloc=Resource.of(vcore=vcore).to_proto())]))

    def release(key):
        core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", releases=si_pb2.AllocationReleasesRequest(
            allocationsToRelease=[si_pb2.AllocationRelease(partitionName="default", allocationKey=key)])))

    def occupied():
        return {n.node_id: n.occupied["vcore"] for n in core.snapshot().partitions[0].nodes}

    report("a", "node-0", 1000)
    report("b", "node-2", 1000)
    report("c", "node-1", 500)
    report("b", "node-2", 3000)  # resized
    core.settle()
    assert occupied() == {"node-0": 1000, "node-1": 500, "node-2": 3000}
    release("b")
    core.settle()
    assert occupied() == {"node-0": 1000, "node-1": 500, "node-2": 0}
    core.scheduler.update_node(si_pb2.NodeRequest(rmID="rm", nodes=[si_pb2.NodeInfo(
        nodeID="node-1", action=si_pb2.NodeInfo.DECOMISSION)]))
    release("c")  # its node went with it
    release("b")  # already gone
    core.settle()
    assert occupied() == {"node-0": 1000, "node-2": 0}
    released = [e.referenceID for e in core.callback.events if e.message == "foreign allocation released"]
    assert released == ["b"]


def test_existing_allocations_are_accepted_even_over_quota(core_factory):
    core = core_factory(config(queue("q", max={"vcore": 1})))
    core.nodes(1)
    core.app("app", queue="root.q")
    core.asks("app", 3, node="node-0")
    core.asks("app", 1, prefix="pending-")
    core.settle()
    snapshot = core.snapshot().partitions[0]
    assert snapshot.root_queue.find("root.q").allocated_resource["vcore"] == 3000
    assert len(snapshot.nodes[0].allocations) == 3
    assert core.callback.new() == [], "running allocations need no decision; the new ask stays under quota"
    assert snapshot.health.healthy


def test_unknown_application_and_node_are_rejected_with_reasons(core_factory):
    core = core_factory()
    core.nodes(1)
    core.asks("ghost", 1)
    core.app("app")
    core.asks("app", 1, node="no-such-node", prefix="x")
    core.settle()
    reasons = {r.allocationKey: r.reason for r in core.callback.rejected_allocations()}
    assert reasons == {"ghost-0": "application ghost not found", "x0": "node no-such-node not found"}


def test_an_impossible_ask_waits_with_a_reason(core_factory):
    core = core_factory()
    core.nodes(2, vcore=2000)
    core.app("app", queue="root.q")
    core.asks("app", 1, vcore=64_000)
    core.settle()
    assert core.callback.new() == []
    assert core.callback.failures("app-0")[0] == "0/2 nodes are available: 2 Insufficient vcore."


def test_every_waiting_ask_of_one_shape_is_told_why_once(core_factory):
    core = core_factory()
    core.nodes(2, vcore=2000)
    core.app("app", queue="root.q")
    keys = core.asks("app", 7, vcore=1000)  # four fit; three of the same shape wait
    core.settle()
    waiting = sorted(set(keys) - {a.allocationKey for a in core.callback.new()})
    assert len(waiting) == 3
    for key in waiting:
        assert len(core.callback.failures(key)) == 1, key
        assert core.callback.failures(key)[0].endswith("Insufficient vcore."), key


def test_removing_a_node_releases_its_allocations(core_factory):
    core = core_factory()
    core.nodes(1)
    core.app("app", queue="root.q")
    core.asks("app", 2)
    core.settle()
    core.scheduler.update_node(si_pb2.NodeRequest(rmID="rm", nodes=[
        si_pb2.NodeInfo(nodeID="node-0", action=si_pb2.NodeInfo.DECOMISSION)]))
    core.settle()
    released = core.callback.released()
    assert sorted(r.allocationKey for r in released) == ["app-0", "app-1"]
    assert {e.eventChangeDetail for e in core.callback.events} >= {si_pb2.EventRecord.ALLOC_NODEREMOVED,
                                                                   si_pb2.EventRecord.NODE_DECOMISSION}
    snapshot = core.snapshot().partitions[0]
    assert snapshot.total_nodes == 0 and snapshot.root_queue.allocated_resource.is_zero() and snapshot.health.healthy


def test_draining_nodes_take_nothing_new(core_factory):
    core = core_factory()
    core.nodes(1, action=si_pb2.NodeInfo.CREATE_DRAIN)
    core.app("app", queue="root.q")
    core.asks("app", 1)
    core.settle()
    assert core.callback.new() == []
    core.scheduler.update_node(si_pb2.NodeRequest(rmID="rm", nodes=[
        si_pb2.NodeInfo(nodeID="node-0", action=si_pb2.NodeInfo.DRAIN_TO_SCHEDULABLE)]))
    core.settle()
    assert len(core.callback.new()) == 1


def test_application_life_cycle_with_timers(core_factory):
    core = core_factory()
    core.nodes(1)
    core.app("app", queue="root.q")
    core.asks("app", 1)
    core.settle()
    core.release("app", "app-0")
    core.advance(0.15)
    assert core.callback.app_states("app") == ["Accepted", "Running", "Completing"]
    core.advance(0.05)
    assert core.callback.app_states("app") == ["Accepted", "Running", "Completing", "Completed"], "after the timer"
    core.advance(0.45)
    assert core.scheduler.snapshot().partitions[0].terminated_applications, "kept for the retention time"
    core.advance(0.05)
    assert not core.scheduler.snapshot().partitions[0].terminated_applications, "expired after it"
    assert core.scheduler.snapshot().partitions[0].root_queue.find("root.q") is None, "empty dynamic queue removed"


def test_hot_reload_adds_drains_and_changes_queues(core_factory):
    core = core_factory(config(queue("old"), queue("capped", max={"vcore": 1})))
    core.nodes(2)
    core.app("app", queue="root.capped")
    core.app("old-app", queue="root.old")
    core.asks("app", 3)
    core.asks("old-app", 1)
    core.settle()
    assert Counter(a.applicationID for a in core.callback.new()) == {"app": 1, "old-app": 1}
    assert core.configure(config(queue("new"), queue("capped", max={"vcore": 2}))) is None
    core.settle()
    root = core.snapshot().partitions[0].root_queue
    assert root.find("root.new") is not None and root.find("root.old").status == "Draining"
    assert Counter(a.applicationID for a in core.callback.new())["app"] == 2, "the raised max applies at once"
    core.release("old-app")
    core.scheduler.update_application(si_pb2.ApplicationRequest(rmID="rm", remove=[
        si_pb2.RemoveApplicationRequest(applicationID="old-app", partitionName="default")]))
    core.settle()
    assert core.snapshot().partitions[0].root_queue.find("root.old") is None, "a drained queue goes when empty"


def test_a_refused_reload_keeps_the_running_config(core_factory):
    core = core_factory(config(queue("capped", max={"vcore": 1})))
    reason = core.configure(config(queue("capped", max={"vcore": "many"})))
    assert reason.startswith("partitions[0].queues.root.queues.capped.resources.max.vcore")
    core.nodes(1)
    core.app("app", queue="root.capped")
    core.asks("app", 3)
    core.settle()
    assert len(core.callback.new()) == 1


def test_registering_again_resets_the_core(core_factory):
    core = core_factory()
    core.nodes(1)
    core.app("app", queue="root.q")
    core.settle()
    core.scheduler.register(si_pb2.RegisterResourceManagerRequest(rmID="rm", config=""), core.callback)
    snapshot = core.snapshot().partitions[0]
    assert snapshot.total_nodes == 0 and snapshot.applications == ()


def test_priority_orders_asks_within_and_across_applications(core_factory):
    core = core_factory(config(queue("q")))
    core.app("low", queue="root.q")
    core.app("high", queue="root.q")
    core.settle()
    core.asks("low", 2, priority=1)
    core.asks("high", 2, priority=100)
    core.settle()
    core.nodes(1, vcore=2000)
    core.settle()
    assert {a.applicationID for a in core.callback.new()} == {"high"}


def test_events_are_recorded_in_the_ring(core_factory):
    core = core_factory()
    core.nodes(1)
    core.app("app", queue="root.q")
    core.asks("app", 1)
    core.settle()
    lowest, highest, events = core.scheduler.events.batch(0, 1000)
    details = {e.eventChangeDetail for _, e in events}
    assert {si_pb2.EventRecord.APP_NEW, si_pb2.EventRecord.APP_ACCEPTED, si_pb2.EventRecord.APP_RUNNING,
            si_pb2.EventRecord.REQUEST_ALLOC, si_pb2.EventRecord.NODE_ALLOC} <= details
    assert [i for i, _ in events] == list(range(lowest, highest + 1))


def test_a_snapshot_holds_only_the_areas_asked_for_and_serves_narrower_reads_until_the_core_changes(core_factory):
    core = core_factory()
    core.nodes(2)
    core.app("app", queue="root.sandbox")
    core.asks("app", 3)
    core.settle()
    scheduler = core.scheduler
    queues_only = scheduler.snapshot(frozenset()).partitions[0]
    assert queues_only.nodes is None and queues_only.applications is None and queues_only.health is None
    assert queues_only.total_nodes == 2 and queues_only.schedulable_nodes is None
    assert queues_only.used_capacity is None and queues_only.utilization is None
    assert queues_only.total_containers == 3 and queues_only.root_queue.find("root.sandbox") is not None
    nodes_only = scheduler.snapshot(frozenset({NODES})).partitions[0]
    assert sum(len(n.allocations) for n in nodes_only.nodes) == 3
    assert nodes_only.applications is None and nodes_only.health is None
    full = scheduler.snapshot()
    assert full.areas == ALL_AREAS and full.health.healthy
    assert [a.application_id for a in full.partitions[0].applications] == ["app"]
    assert scheduler.snapshot(frozenset({HEALTH})) is full, "while nothing changes, one with more areas serves"
    core.nodes(1, prefix="later-")
    core.settle()
    again = scheduler.snapshot(frozenset({HEALTH}))
    assert again is not full and again.partitions[0].total_nodes == 3, "a read that follows a change sees it"


def test_a_partition_summary_skipped_by_narrower_reads_counts_every_change_when_asked_for(core_factory):
    core = core_factory()
    core.nodes(3)
    core.app("app", queue="root.sandbox")
    core.asks("app", 2)
    core.settle()
    scheduler = core.scheduler
    first = scheduler.snapshot(frozenset({SUMMARY})).partitions[0]
    assert first.schedulable_nodes == 3 and first.used_capacity == sum(
        (n.allocated for n in scheduler.snapshot(frozenset({NODES})).partitions[0].nodes), Resource())
    core.asks("app", 4, prefix="more-")
    core.settle()
    assert scheduler.snapshot(frozenset()).partitions[0].used_capacity is None  # the queues' read: not summed
    core.asks("app", 1, prefix="last-")
    core.settle()
    nodes = scheduler.snapshot(frozenset({NODES})).partitions[0].nodes
    later = scheduler.snapshot(frozenset({SUMMARY})).partitions[0]
    assert sum(len(n.allocations) for n in nodes) == 7
    assert later.used_capacity == sum((n.allocated for n in nodes), Resource()) != first.used_capacity
    assert later.utilization == {name: int(later.used_capacity[name] * 100 / value)
                                 for name, value in later.capacity.items() if value > 0}


def test_an_allocation_and_its_events_carry_the_ask_as_sent(core_factory):
    core = core_factory()
    core.nodes(1)
    core.app("app", queue="root.q")
    core.asks("app", 1, vcore=1500, memory=3 * 2**20, priority=7, tags={"kubernetes.io/meta/podName": "p", "a": ""})
    core.settle()
    placed = {a.allocationKey: a for a in core.callback.new()}
    assert placed["app-0"] == si_pb2.Allocation(
        allocationKey="app-0", applicationID="app", partitionName="default", nodeID="node-0", priority=7,
        resourcePerAlloc=Resource.of(vcore=1500, memory=3 * 2**20).to_proto(),
        allocationTags={"kubernetes.io/meta/podName": "p", "a": ""})
    _, _, events = core.scheduler.events.batch(0, 1000)
    by_detail = {(e.eventChangeDetail, e.objectID, e.referenceID): e for _, e in events}
    size = Resource.of(vcore=1500, memory=3 * 2**20)
    assert Resource.from_proto(by_detail[si_pb2.EventRecord.NODE_ALLOC, "node-0", "app-0"].resource) == size
    assert Resource.from_proto(by_detail[si_pb2.EventRecord.REQUEST_ALLOC, "app-0", "app"].resource) == size
    assert not by_detail[si_pb2.EventRecord.APP_NEW, "app", ""].HasField("resource")


def _found_running(core, one_by_one: bool) -> None:
    """Three applications' pods found running over three nodes (two shapes, a pod of another scheduler, one
    allocation below zero and one reported again with a new size), in one request or one request each."""
    core.nodes(3, vcore=64_000, memory=64 * GIB, action=si_pb2.NodeInfo.CREATE_DRAIN)
    for app, user in (("a", "alice"), ("b", "bob"), ("c", "alice")):
        core.app(app, queue="root.q", user=user, groups=("staff",))
    core.settle()

    def running(key, app, node, vcore, memory=GIB, tags=None):
        return si_pb2.Allocation(allocationKey=key, applicationID=app, partitionName="default", nodeID=node,
                                 allocationTags=tags or {}, resourcePerAlloc=Resource.of(vcore=vcore, memory=memory).to_proto())

    found = [running(f"{app}-{i}", app, f"node-{i % 3}", 1000 if i % 2 else 500) for app in "ab" for i in range(7)]
    found += [running("c-0", "c", "node-1", 2000), running("c-1", "c", "node-1", -300, memory=0),
              running("c-2", "c", "node-2", 100), running("c-0", "c", "node-1", 1200),  # resized: 800 less
              running("other", "", "node-0", 250, tags={TAG_FOREIGN: FOREIGN_DEFAULT})]
    for batch in ([[message] for message in found] if one_by_one else [found]):
        core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=batch))
    core.settle()


def test_running_allocations_found_in_one_batch_count_as_found_one_by_one(core_factory):
    pictures = []
    for one_by_one in (True, False):
        core = core_factory(config(queue("q")))
        _found_running(core, one_by_one)
        snapshot = core.snapshot().partitions[0]
        pictures.append((
            {n.node_id: (n.allocated, n.occupied, len(n.allocations), n.available) for n in snapshot.nodes},
            {a.application_id: (a.used_resource, a.max_used_resource, a.state, len(a.allocations))
             for a in snapshot.applications},
            snapshot.root_queue.find("root.q").allocated_resource, snapshot.root_queue.allocated_resource,
            snapshot.user_usage, snapshot.group_usage))
    assert pictures[0] == pictures[1]
    nodes, apps, leaf, root = pictures[1][:4]
    assert apps["c"][:2] == (Resource.of(vcore=1000, memory=2 * GIB), Resource.of(vcore=2000, memory=2 * GIB)), \
        "the peak is as each allocation and the resize came: c-0 at 2000 before c-1 took 300 back"
    assert leaf == root == Resource.of(vcore=2 * (4 * 500 + 3 * 1000) + 1000, memory=16 * GIB)
    assert nodes["node-0"][1] == Resource.of(vcore=250, memory=GIB)


def test_a_running_allocation_whose_booking_raises_is_refused_alone_and_the_batch_is_counted(core_factory, monkeypatch):
    from actors.core.ledger import Ledger

    book = Ledger.book

    def failing(self, app, queue, allocation, node, decided, took_placeholder=False):
        if allocation.key == "app-2":
            raise RuntimeError("boom")
        book(self, app, queue, allocation, node, decided, took_placeholder)

    monkeypatch.setattr(Ledger, "book", failing)
    core = core_factory(config(queue("q")))
    core.nodes(2)
    core.app("app", queue="root.q")
    core.asks("app", 5, vcore=500, node="node-1")
    core.settle()
    [refused] = core.callback.rejected_allocations()
    assert refused.allocationKey == "app-2" and "could not handle allocation app-2" in refused.reason
    snapshot = core.snapshot().partitions[0]
    assert snapshot.root_queue.find("root.q").allocated_resource == Resource.of(vcore=2000, memory=4 * GIB)
    assert {n.node_id: n.allocated for n in snapshot.nodes}["node-1"] == Resource.of(vcore=2000, memory=4 * GIB)
