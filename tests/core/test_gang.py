"""Gang scheduling in the core, through SI: placeholders, their replacement and their timeout."""

from si import si_pb2
from si.resources import Resource
from tests.queues import config, queue
from tests.waiting import wait_for

GIB = 2**30
QUEUE = config(queue("batch", max={"vcore": 8}))


def gang_app(core, app_id, members, vcore=1000, timeout_ms=60_000, style="Soft"):
    ask = Resource.of(vcore=vcore * members, memory=GIB * members)
    core.scheduler.update_application(si_pb2.ApplicationRequest(rmID="rm", new=[si_pb2.AddApplicationRequest(
        applicationID=app_id, queueName="root.batch", partitionName="default",
        ugi=si_pb2.UserGroupInformation(user="alice"), placeholderAsk=ask.to_proto(),
        executionTimeoutMilliSeconds=timeout_ms, gangSchedulingStyle=style)]))


def asks(core, app_id, keys, placeholder, group="workers", vcore=1000):
    core.scheduler.update_allocation(si_pb2.AllocationRequest(rmID="rm", allocations=[
        si_pb2.Allocation(allocationKey=key, applicationID=app_id, partitionName="default", taskGroupName=group,
                          placeholder=placeholder, resourcePerAlloc=Resource.of(vcore=vcore, memory=GIB).to_proto())
        for key in keys]))


def node_of(core, key):
    return next(a.nodeID for a in core.callback.new() if a.allocationKey == key)


def released(core, key):
    return [r.terminationType for r in core.callback.released() if r.allocationKey == key]


def test_the_gang_runs_only_once_every_placeholder_is_allocated(core_factory):
    core = core_factory(QUEUE)
    core.nodes(1, vcore=2000)
    gang_app(core, "gang", 3)
    asks(core, "gang", ["ph-0", "ph-1", "ph-2"], placeholder=True)
    core.settle()
    assert len(core.callback.new()) == 2 and "Running" not in core.callback.app_states("gang")
    core.nodes(1, vcore=2000, prefix="more-")
    wait_for(lambda: "Running" in core.callback.app_states("gang"))
    assert len(core.callback.new()) == 3


def test_a_real_pod_gets_its_placeholders_node_only_after_the_placeholder_is_gone(core_factory):
    core = core_factory(QUEUE)
    core.nodes(2, vcore=2000)
    gang_app(core, "gang", 2)
    asks(core, "gang", ["ph-0", "ph-1"], placeholder=True)
    wait_for(lambda: "Running" in core.callback.app_states("gang"))
    asks(core, "gang", ["real-0"], placeholder=False)
    wait_for(lambda: released(core, "ph-0") or released(core, "ph-1"))
    replaced = "ph-0" if released(core, "ph-0") else "ph-1"
    assert released(core, replaced) == [si_pb2.PLACEHOLDER_REPLACED]
    core.settle()
    assert "real-0" not in {a.allocationKey for a in core.callback.new()}, "the placeholder still holds the room"
    node = core.snapshot().partitions[0]
    assert sum(n.allocated.get("vcore", 0) for n in node.nodes) == 2000
    core.release("gang", replaced)  # the resource manager confirms the placeholder's pod is gone
    wait_for(lambda: "real-0" in {a.allocationKey for a in core.callback.new()})
    assert node_of(core, "real-0") == node_of(core, replaced)
    app = next(a for a in core.snapshot().partitions[0].applications if a.application_id == "gang")
    assert [(d.count, d.replaced, d.timed_out) for d in app.placeholder_data] == [(2, 1, 0)]
    assert next(a for a in app.allocations if a.allocation_key == "real-0").placeholder_used


def test_a_real_pod_larger_than_its_placeholder_ends_the_placeholder(core_factory):
    core = core_factory(QUEUE)
    core.nodes(2, vcore=4000)
    gang_app(core, "gang", 1)
    asks(core, "gang", ["ph-0"], placeholder=True)
    wait_for(lambda: "Running" in core.callback.app_states("gang"))
    asks(core, "gang", ["big"], placeholder=False, vcore=3000)
    wait_for(lambda: released(core, "ph-0"))
    assert released(core, "ph-0") == [si_pb2.TIMEOUT]
    core.release("gang", "ph-0")
    wait_for(lambda: "big" in {a.allocationKey for a in core.callback.new()}, message="placed as an ordinary pod")


def test_a_gang_larger_than_its_queue_max_is_rejected(core_factory):
    core = core_factory(QUEUE)
    core.nodes(4)
    gang_app(core, "huge", 9)  # 9 vcore of placeholders in an 8 vcore queue
    wait_for(lambda: "huge" in core.callback.rejected_apps())
    assert "exceeds the max of queue root.batch" in core.callback.rejected_apps()["huge"]


def test_timeout_releases_unused_placeholders_of_a_running_gang(core_factory):
    core = core_factory(QUEUE)
    core.nodes(2, vcore=2000)
    gang_app(core, "gang", 2, timeout_ms=300)
    asks(core, "gang", ["ph-0", "ph-1"], placeholder=True)
    wait_for(lambda: "Running" in core.callback.app_states("gang"))
    core.advance(0.25)
    assert released(core, "ph-0") == released(core, "ph-1") == [], "not before the timeout"
    core.advance(0.05)
    assert released(core, "ph-0") == released(core, "ph-1") == [si_pb2.TIMEOUT], "released at the timeout"
    assert "Resuming" not in core.callback.app_states("gang")


def test_timeout_of_an_incomplete_gang_resumes_soft_and_fails_hard(core_factory):
    core = core_factory(QUEUE)
    core.nodes(1, vcore=1000)
    gang_app(core, "soft", 2, timeout_ms=300)
    gang_app(core, "hard", 2, timeout_ms=300, style="Hard")
    asks(core, "soft", ["s-ph-0", "s-ph-1"], placeholder=True)
    asks(core, "hard", ["h-ph-0", "h-ph-1"], placeholder=True)
    core.advance(0.25)
    assert "Resuming" not in core.callback.app_states("soft") and "Failing" not in core.callback.app_states("hard")
    core.advance(0.05)
    assert "Resuming" in core.callback.app_states("soft") and "Failing" in core.callback.app_states("hard")
    assert core.callback.app_states("hard")[-1] == "Failed"  # nothing of it was allocated
    held = next(a.allocationKey for a in core.callback.new())
    assert held.startswith("s-") and released(core, held) == [si_pb2.TIMEOUT]
    asks(core, "soft", ["s-real"], placeholder=False)
    core.settle()
    assert core.callback.app_states("soft")[-1] == "Resuming", "resumed only once the placeholder is gone"
    assert "s-real" not in {a.allocationKey for a in core.callback.new()}
    core.release("soft", held)
    wait_for(lambda: "s-real" in {a.allocationKey for a in core.callback.new()}, message="an ordinary allocation")
    assert core.callback.app_states("soft")[-3:] == ["Resuming", "Accepted", "Running"]


def test_a_held_core_books_but_decides_nothing_until_let_go(core_factory):
    """A warm standby's core: asks and nodes are booked, no allocation is made and no timer fires
    (here a placeholder timeout) while it is held; let go, it decides at once."""
    core = core_factory(QUEUE)
    core.nodes(2, vcore=2000)
    gang_app(core, "gang", 2, timeout_ms=300)
    asks(core, "gang", ["ph-0", "ph-1"], placeholder=True)
    wait_for(lambda: "Running" in core.callback.app_states("gang"))
    core.scheduler.hold(True)
    gang_app(core, "later", 1)
    asks(core, "later", ["later-ph-0"], placeholder=True)
    core.advance(0.9)  # three times the placeholder timeout: a timer that is not held would have fired
    assert released(core, "ph-0") == [] and "later-ph-0" not in {a.allocationKey for a in core.callback.new()}
    partition = core.scheduler.snapshot().partition("default")
    assert "later-ph-0" in {ask.allocation_key for app in partition.applications for ask in app.requests}
    core.scheduler.hold(False)
    core.settle()
    assert "later-ph-0" in {a.allocationKey for a in core.callback.new()}, "placed once let go"
    core.advance(0.05)
    assert released(core, "ph-0") == [si_pb2.TIMEOUT], "the placeholder timeout long past: at the next tick"
