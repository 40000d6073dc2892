"""The shim context as an actor: informer messages and core answers in, SI requests, bind requests and
Kubernetes events out (the core is a recording double here; tests/shim/test_integration.py uses the real one)."""

import dataclasses
import gc
import json
import threading
from collections import Counter

import pykka
import pytest

from actors.base import PooledActor, message
from actors.shim import context as context_module
from actors.shim import kinds
from actors.shim.appactor import ApplicationActor
from actors.shim.context import ContextSettings, ShimContext
from actors.shim.messages import (
    Added,
    BindOutcome,
    BindOutcomes,
    BindRequest,
    Binds,
    Changes,
    Connect,
    Deleted,
    DeletePod,
    EvictPod,
    FailPod,
    Feedback,
    KubeEvent,
    Listed,
    PlacedPod,
    PodCondition,
    SendMail,
    ShimStateRequest,
    Shutdown,
    Unplaced,
    Updated,
)
from actors.shim.nodeactor import ATTR_NODE_STATE, NodeActor
from actors.shim.nodes import parse_node
from actors.shim.objects import parse_configmap, parse_namespace, parse_priority_class
from actors.shim.outlet import CoreOutlet
from actors.shim.pods import parse_pod
from actors.shim.state import PLACED, StateBoard
from actors.shim.ticker import Alarms
from si import si_pb2
from si.resources import Resource
from tests.shim.doubles import Inbox, RecordingCore, inbox_messages, wait_for
from tests.shim.factories import node_json, pod_json

NodeInfo = si_pb2.NodeInfo


@message
class Hold:
    gate: threading.Event


class Blocker(PooledActor):
    """Keeps the shared dispatcher's worker busy until its gate opens."""

    def on_Hold(self, msg: Hold) -> None:
        msg.gate.wait(30)


class Shim:
    """A context wired to a recording core, binder inbox and recorder inbox."""

    def __init__(self, core=None):
        self.core = core or RecordingCore()
        self.board = StateBoard()
        self.binder = Inbox.start()
        self.recorder = Inbox.start()
        self.outlet = CoreOutlet.start(self.core)
        self.alarms = Alarms()
        self.ref = ShimContext.start(self.core, self.board, ContextSettings())
        self.ref.tell(Connect(self.binder, self.recorder, self.outlet, self.alarms))

    def list_all(self, pods=(), nodes=(), configmaps=(), namespaces=()):
        self.ref.tell(Listed(kinds.CONFIGMAPS, tuple(parse_configmap(c) for c in configmaps)))
        self.ref.tell(Listed(kinds.PRIORITY_CLASSES, ()))
        for kind in sorted(kinds.VOLUME_KINDS):
            self.ref.tell(Listed(kind, ()))
        self.ref.tell(Listed(kinds.NAMESPACES, tuple(parse_namespace(n) for n in namespaces)))
        self.ref.tell(Listed(kinds.NODES, tuple(parse_node(n) for n in nodes)))
        self.ref.tell(Listed(kinds.PODS, tuple(parse_pod(p) for p in pods)))
        return self.state()

    def state(self):
        """The context's snapshot once the shim has settled (node actors tell the context when they have
        recovered), whose per-node pod counts (kept as pods change) must equal a recount."""
        previous, snapshot = None, self.ref.ask(ShimStateRequest())
        while _comparable(snapshot) != _comparable(previous):
            previous, snapshot = snapshot, self.ref.ask(ShimStateRequest())
        placed = Counter(p.node for p in snapshot.pods if p.state in PLACED)
        assert {n.name: n.pods for n in snapshot.nodes} == {n.name: placed[n.name] for n in snapshot.nodes}
        return snapshot

    def change(self, kind, *changes):
        self.ref.tell(Changes(kind, tuple(changes)))
        self.state()  # an ask after the tell: the change has been handled

    def tell_and_settle(self, message):
        self.ref.tell(message)
        self.state()

    def stop(self):
        for ref in (self.ref, self.binder, self.recorder, self.outlet):
            ref.stop()
        self.alarms.stop()

    def binds(self):
        """Bind requests, without the application actor each names for its outcome."""
        return [dataclasses.replace(r, reply_to=None) for batch in inbox_messages(self.binder, Binds)
                for r in batch.requests]

    def feedback(self, kind):
        return [i for batch in inbox_messages(self.recorder, Feedback) for i in batch.items if isinstance(i, kind)]

    def events(self, reason=None):
        return [e for e in self.feedback(KubeEvent) if reason is None or e.reason == reason]

    def conditions(self):
        return self.feedback(PodCondition)


def _comparable(snapshot):
    return None if snapshot is None else (snapshot.state, snapshot.recovery, set(snapshot.nodes), set(snapshot.pods),
                                          set(snapshot.applications))


@pytest.fixture
def make_shim():
    made = []

    def make(**kwargs):
        made.append(Shim(**kwargs))
        return made[-1]

    yield make
    for shim in made:
        shim.stop()


@pytest.fixture
def shim(make_shim):
    return make_shim()


def allocation_response(*pairs, app="yunikorn-default-autogen"):
    """The core's allocations of ``(uid, node)`` pairs of application ``app`` (default: the autogen id of
    pods in ``default`` that name none)."""
    return si_pb2.AllocationResponse(new=[si_pb2.Allocation(allocationKey=uid, nodeID=node, applicationID=app)
                                          for uid, node in pairs])


def test_start_up_registers_recovers_then_submits(shim):
    bound = pod_json("bound", node="n1", labels={"applicationId": "app-old"})
    foreign = pod_json("system", node="n2", scheduler="default-scheduler", owner_kind="Node")
    pending = pod_json("pending", labels={"applicationId": "app-new"})
    finished = pod_json("done", node="n1", phase="Succeeded")
    configs = {"metadata": {"name": "yunikorn-configs"}, "data": {"queues.yaml": "partitions: []",
                                                                   "service.clusterId": "c7"}}
    state = shim.list_all(pods=[pending, bound, foreign, finished], nodes=[node_json("n1"), node_json("n2")],
                          configmaps=[configs])
    assert state.state == "Running"
    assert state.recovery.nodes_total == 2 and state.recovery.nodes_recovered == 2
    assert state.recovery.pods_recovered == 2
    assert state.registered_at > 0
    core = shim.core
    register = core.of("register")[0]
    assert register.rmID == "c7" and register.config == "partitions: []"
    sequence = core.sequence()
    bound_uid, foreign_uid, pending_uid = (p["metadata"]["uid"] for p in (bound, foreign, pending))
    order = {item: n for n, item in enumerate(sequence)}
    for node, uid in (("n1", bound_uid), ("n2", foreign_uid)):
        # Registered draining, its pods counted, and only then schedulable.
        assert order[("node", node, NodeInfo.CREATE_DRAIN)] < order[("alloc", uid, node)] \
            < order[("node", node, NodeInfo.DRAIN_TO_SCHEDULABLE)]
    assert order[("app", "app-old")] < order[("alloc", bound_uid, "n1")]
    # New asks only once every node has recovered (Running).
    assert order[("alloc", pending_uid, "")] > max(order[("node", n, NodeInfo.DRAIN_TO_SCHEDULABLE)] for n in ("n1", "n2"))
    recovered_app, new_app = (r.new[0] for r in core.of("application") if r.new)
    assert recovered_app.applicationID == "app-old" and recovered_app.tags["application.create.force"] == "true"
    assert new_app.applicationID == "app-new" and "application.create.force" not in new_app.tags
    placed = {a.allocationKey: a for r in core.of("allocation") for a in r.allocations if a.nodeID}
    assert {key: a.nodeID for key, a in placed.items()} == {bound_uid: "n1", foreign_uid: "n2"}
    assert placed[foreign_uid].allocationTags["foreign"] == "static"
    assert core.barriers >= 1
    assert {p.name: p.state for p in state.pods} == {"bound": "Bound", "pending": "Scheduling", "system": "Foreign"}
    assert shim.board.latest().state == "Running"


def test_recovery_progress_counts_nodes_and_the_pods_they_recovered(shim):
    pods = [pod_json(f"p{i}", node="n1") for i in range(5)]
    state = shim.list_all(pods=pods, nodes=[node_json("n1"), node_json("n2")])
    assert state.recovery.pods_recovered == 5 and state.recovery.nodes_recovered == 2
    assert {n.name: (n.state, n.pods) for n in state.nodes} == {"n1": ("Schedulable", 5), "n2": ("Schedulable", 0)}


def test_nothing_is_sent_before_every_kind_is_listed(shim):
    shim.ref.tell(Listed(kinds.NODES, (parse_node(node_json("n1")),)))
    shim.change(kinds.NODES, Added(parse_node(node_json("n2"))))
    assert shim.state().state == "New" and shim.core.requests == []
    state = shim.list_all(nodes=[node_json("n1"), node_json("n2")])
    assert state.recovery.nodes_total == 2


def test_allocation_is_bound_and_reported(shim):
    pod = pod_json("p1")
    uid = pod["metadata"]["uid"]
    shim.list_all(pods=[pod], nodes=[node_json("n1")])
    shim.tell_and_settle(allocation_response((uid, "n1")))
    assert shim.binds() == [BindRequest(uid, "default", "p1", "n1")]
    shim.tell_and_settle(BindOutcome(uid, "n1", True))
    assert [p.state for p in shim.state().pods] == ["Bound"]
    assert shim.events("Scheduled")[0].message == "Successfully assigned default/p1 to node n1"
    assert shim.events("PodBindSuccessful")
    assert shim.events("Scheduling")


def test_outcomes_told_together_reach_each_pods_application(shim):
    pods = [pod_json("p1"), pod_json("p2", labels={"applicationId": "other"})]
    uids = [pod["metadata"]["uid"] for pod in pods]
    shim.list_all(pods=pods, nodes=[node_json("n1")])
    shim.tell_and_settle(allocation_response((uids[0], "n1")))
    shim.tell_and_settle(allocation_response((uids[1], "n1"), app="other"))
    shim.tell_and_settle(BindOutcomes((BindOutcome(uids[0], "n1", True), BindOutcome("unknown", "n1", True),
                                       BindOutcome(uids[1], "n1", True))))
    assert sorted(p.state for p in shim.state().pods) == ["Bound", "Bound"]


def test_informer_confirmation_binds_too_and_events_are_not_repeated(shim):
    pod = pod_json("p1")
    uid = pod["metadata"]["uid"]
    shim.list_all(pods=[pod], nodes=[node_json("n1")])
    shim.tell_and_settle(allocation_response((uid, "n1")))
    old = parse_pod(pod)
    shim.change(kinds.PODS, Updated(old, parse_pod(pod_json("p1", uid=uid, node="n1", resource_version="2"))))
    shim.tell_and_settle(BindOutcome(uid, "n1", True))
    assert len(shim.events("Scheduled")) == 1


def test_failed_bind_releases_and_asks_again(shim):
    pod = pod_json("p1")
    uid = pod["metadata"]["uid"]
    shim.list_all(pods=[pod], nodes=[node_json("n1")])
    shim.tell_and_settle(allocation_response((uid, "n1")))
    shim.tell_and_settle(BindOutcome(uid, "n1", False, reason="500 boom"))
    last = shim.core.of("allocation")[-2:]
    assert last[0].releases.allocationsToRelease[0].allocationKey == uid
    assert last[1].allocations[0].allocationKey == uid and not last[1].allocations[0].nodeID
    assert [p.state for p in shim.state().pods] == ["Scheduling"]
    assert shim.events("PodBindFailure")[0].message == "500 boom"
    shim.tell_and_settle(allocation_response((uid, "n1")))
    assert len(shim.binds()) == 2


def test_duplicate_or_stray_allocations(shim):
    pod = pod_json("p1")
    uid = pod["metadata"]["uid"]
    shim.list_all(pods=[pod], nodes=[node_json("n1")])
    shim.tell_and_settle(allocation_response((uid, "n1")))
    shim.tell_and_settle(allocation_response((uid, "n1")))
    assert len(shim.binds()) == 1
    shim.tell_and_settle(allocation_response(("no-such-pod", "n1")))
    assert shim.core.releases()[-1].allocationKey == "no-such-pod"


def test_deleted_and_finished_pods_release_their_allocation(shim):
    a, b = pod_json("a", node="n1"), pod_json("b", node="n1")
    shim.list_all(pods=[a, b], nodes=[node_json("n1")])
    shim.change(kinds.PODS, Deleted(parse_pod(a)))
    shim.change(kinds.PODS, Updated(parse_pod(b), parse_pod(pod_json("b", uid=b["metadata"]["uid"], node="n1",
                                                                     phase="Succeeded", resource_version="2"))))
    released = [r.allocationKey for r in shim.core.releases()]
    assert released == [a["metadata"]["uid"], b["metadata"]["uid"]]
    assert [p.state for p in shim.state().pods] == ["Completed"]


def test_app_is_left_to_the_core_to_complete_when_its_last_pod_goes(shim):
    pod = pod_json("a", labels={"applicationId": "app-1"})
    shim.list_all(pods=[pod], nodes=[node_json("n1")])
    shim.change(kinds.PODS, Deleted(parse_pod(pod)))
    assert [r.remove for r in shim.core.of("application") if r.remove] == [], "the core completes it on its timer"
    assert shim.state().applications == ()


def test_an_application_id_seen_again_is_submitted_again_after_its_ended_actor_stopped(shim):
    """The last pod of app-1 goes and a new one comes in one batch, while the ended application actor
    cannot run yet: the core hears the ended actor's release and the new actor's submission (which it
    accepts for the application it still has), and the new pod is asked for."""
    first = pod_json("a", labels={"applicationId": "app-1"})
    shim.list_all(pods=[first], nodes=[node_json("n1")])
    gate = threading.Event()
    blocker = Blocker.start()
    blocker.tell(Hold(gate))  # holds the shared dispatcher's worker
    again = parse_pod(pod_json("b", labels={"applicationId": "app-1"}))
    shim.ref.tell(Changes(kinds.PODS, (Deleted(parse_pod(first)), Added(again))))
    wait_for(lambda: shim.ref.actor_inbox.empty(), message="the context took the batch")
    gate.set()
    shim.state()
    blocker.stop()
    sequence = shim.core.sequence()
    assert [item for item in sequence if item[0] in ("app", "remove-app")] == [("app", "app-1")] * 2
    assert ("release", first["metadata"]["uid"]) in sequence
    assert ("alloc", again.uid, "") in sequence


def test_pod_added_and_deleted_in_one_batch_is_never_asked_for(shim):
    shim.list_all(nodes=[node_json("n1")])
    pod = parse_pod(pod_json("short"))
    shim.change(kinds.PODS, Added(pod), Deleted(pod))
    assert shim.core.allocations() == []


def test_foreign_pods_are_counted_updated_and_released(shim):
    raw = pod_json("f", node="n1", scheduler="default-scheduler", cpu="1")
    uid = raw["metadata"]["uid"]
    shim.list_all(pods=[raw], nodes=[node_json("n1")])
    resized = parse_pod(pod_json("f", uid=uid, node="n1", scheduler="default-scheduler", cpu="2",
                                 resource_version="2"))
    shim.change(kinds.PODS, Updated(parse_pod(raw), resized))
    relabelled = parse_pod(pod_json("f", uid=uid, node="n1", scheduler="default-scheduler", cpu="2",
                                    labels={"x": "y"}, resource_version="3"))
    shim.change(kinds.PODS, Updated(resized, relabelled))
    allocations = shim.core.allocations()
    assert [Resource.from_proto(a.resourcePerAlloc)["vcore"] for a in allocations] == [1000, 2000]
    assert all(a.allocationTags["foreign"] == "default" for a in allocations)
    shim.change(kinds.PODS, Deleted(relabelled))
    assert [r.allocationKey for r in shim.core.releases()] == [uid]


def test_pending_foreign_pods_are_ignored_until_assigned(shim):
    shim.list_all(nodes=[node_json("n1")])
    raw = pod_json("f", scheduler="default-scheduler")
    shim.change(kinds.PODS, Added(parse_pod(raw)))
    assert shim.core.allocations() == []
    bound = parse_pod(pod_json("f", uid=raw["metadata"]["uid"], node="n1", scheduler="default-scheduler",
                               resource_version="2"))
    shim.change(kinds.PODS, Updated(parse_pod(raw), bound))
    assert [a.nodeID for a in shim.core.allocations()] == ["n1"]


def test_pods_on_unknown_nodes_wait_for_the_node(shim):
    shim.list_all(nodes=[node_json("n1")])
    foreign = parse_pod(pod_json("f", node="n9", scheduler="default-scheduler"))
    ours = parse_pod(pod_json("y", node="n9"))
    shim.change(kinds.PODS, Added(foreign), Added(ours))
    assert shim.core.allocations() == []
    assert {n.name: n.state for n in shim.state().nodes} == {"n1": "Schedulable", "n9": "Lost"}
    shim.change(kinds.NODES, Added(parse_node(node_json("n9"))))
    assert sorted(a.allocationKey for a in shim.core.allocations()) == sorted([foreign.uid, ours.uid])
    order = {item: n for n, item in enumerate(shim.core.sequence())}
    for uid in (foreign.uid, ours.uid):
        assert order[("node", "n9", NodeInfo.CREATE_DRAIN)] < order[("alloc", uid, "n9")] \
            < order[("node", "n9", NodeInfo.DRAIN_TO_SCHEDULABLE)]
    assert {n.name: n.state for n in shim.state().nodes} == {"n1": "Schedulable", "n9": "Schedulable"}


def test_pods_a_removed_node_hands_back_wait_on_it_lost_and_recover_when_it_returns(shim):
    shim.list_all(nodes=[node_json("n1"), node_json("n9")])
    shim.change(kinds.NODES, Deleted(parse_node(node_json("n9"))))
    assert {n.name for n in shim.state().nodes} == {"n1"}
    # What n9's actor does with pods told to it after its removal (the deletion and the pod raced).
    late = parse_pod(pod_json("late", node="n9", scheduler="default-scheduler"))
    shim.tell_and_settle(Unplaced("n9", (PlacedPod(late, 0, report=True, foreign=True),), shim.binder))
    assert {n.name: n.state for n in shim.state().nodes} == {"n1": "Schedulable", "n9": "Lost"}
    shim.change(kinds.NODES, Added(parse_node(node_json("n9"))))
    assert [a.allocationKey for a in shim.core.allocations()] == [late.uid]
    assert {n.name: n.state for n in shim.state().nodes} == {"n1": "Schedulable", "n9": "Schedulable"}


def test_a_node_deleted_and_added_back_in_one_batch_registers_again(shim):
    """The deletion and the return reach n9's actor one after the other: the first removes it for good and
    the second finds it ended, so the context starts the node anew when that actor reports it has ended."""
    shim.list_all(nodes=[node_json("n1"), node_json("n9")])
    shim.change(kinds.NODES, Deleted(parse_node(node_json("n9"))),
                Added(parse_node(node_json("n9", resource_version="2"))))
    wait_for(lambda: {n.name: n.state for n in shim.state().nodes} == {"n1": "Schedulable", "n9": "Schedulable"},
             message="n9 schedulable again")
    actions = {"n1": [], "n9": []}
    for name, action in shim.core.node_actions():
        actions[name].append(action)
    assert NodeInfo.CREATE_DRAIN in actions["n1"]
    assert actions["n9"] == [*actions["n1"], NodeInfo.DECOMISSION, *actions["n1"]]  # registered as a new node
    assert len(pykka.ActorRegistry.get_by_class(NodeActor)) == 2


def test_running_pod_resize_updates_its_allocation(shim):
    raw = pod_json("p", node="n1", cpu="1")
    shim.list_all(pods=[raw], nodes=[node_json("n1")])
    resized = parse_pod(pod_json("p", uid=raw["metadata"]["uid"], node="n1", cpu="3", resource_version="2"))
    shim.change(kinds.PODS, Updated(parse_pod(raw), resized))
    last = shim.core.allocations()[-1]
    assert last.nodeID == "n1" and Resource.from_proto(last.resourcePerAlloc)["vcore"] == 3000


@pytest.mark.parametrize("bound_with_the_resize", [False, True])
def test_a_pod_resized_while_its_binding_is_under_way_updates_its_allocation(shim, bound_with_the_resize):
    raw = pod_json("p", cpu="1")
    uid = raw["metadata"]["uid"]
    shim.list_all(pods=[raw], nodes=[node_json("n1")])
    shim.tell_and_settle(allocation_response((uid, "n1")))
    resized = parse_pod(pod_json("p", uid=uid, cpu="3", resource_version="2",
                                 node="n1" if bound_with_the_resize else ""))
    shim.change(kinds.PODS, Updated(parse_pod(raw), resized))
    if not bound_with_the_resize:
        shim.change(kinds.PODS, Updated(resized, parse_pod(pod_json("p", uid=uid, cpu="3", node="n1",
                                                                    resource_version="3"))))
    last = shim.core.allocations()[-1]
    assert (last.nodeID, Resource.from_proto(last.resourcePerAlloc)["vcore"]) == ("n1", 3000)
    assert [p.state for p in shim.state().pods] == ["Bound"]


def test_pod_bound_by_someone_else_withdraws_the_ask(shim):
    raw = pod_json("p")
    shim.list_all(pods=[raw], nodes=[node_json("n1")])
    placed = parse_pod(pod_json("p", uid=raw["metadata"]["uid"], node="n1", resource_version="2"))
    shim.change(kinds.PODS, Updated(parse_pod(raw), placed))
    assert shim.core.releases()[-1].allocationKey == placed.uid
    assert shim.core.allocations()[-1].nodeID == "n1"
    assert [p.state for p in shim.state().pods] == ["Bound"]


def test_gated_pods_wait_for_their_gates(shim):
    raw = pod_json("g", spec={"schedulingGates": [{"name": "hold"}]})
    shim.list_all(pods=[raw], nodes=[node_json("n1")])
    assert shim.core.allocations() == []
    released = parse_pod(pod_json("g", uid=raw["metadata"]["uid"], resource_version="2"))
    shim.change(kinds.PODS, Updated(parse_pod(raw), released))
    assert [a.allocationKey for a in shim.core.allocations()] == [released.uid]


def test_invalid_pod_is_rejected_with_the_reason(shim):
    raw = pod_json("bad", cpu="plenty")
    shim.list_all(pods=[raw], nodes=[node_json("n1")])
    assert shim.core.allocations() == []
    [event] = shim.events("TaskRejected")
    assert "plenty" in event.message and event.type == "Warning"
    assert shim.conditions()[0].reason == "Unschedulable"


def test_rejected_application_rejects_its_tasks(make_shim):
    shim = make_shim(core=RecordingCore(accept_applications=False))
    raw = pod_json("p", labels={"applicationId": "a1", "queue": "root.nope"})
    shim.list_all(pods=[raw], nodes=[node_json("n1")])
    shim.tell_and_settle(si_pb2.ApplicationResponse(rejected=[si_pb2.RejectedApplication(
        applicationID="a1", reason="queue root.nope does not exist")]))
    assert shim.state().applications[0].state == "Rejected"
    assert [p.state for p in shim.state().pods] == ["Rejected"]
    assert "root.nope" in shim.events("ApplicationRejected")[0].message
    # As upstream: a pod of a rejected application that has no node fails, with the reason.
    [failed] = inbox_messages(shim.binder, FailPod)
    assert (failed.name, failed.reason) == ("p", "ApplicationRejected") and "root.nope" in failed.message


def test_application_states_follow_the_core(make_shim):
    shim = make_shim(core=RecordingCore(accept_applications=False))
    raw = pod_json("p", labels={"applicationId": "a1"})
    shim.list_all(pods=[raw], nodes=[node_json("n1")])
    shim.tell_and_settle(si_pb2.ApplicationResponse(accepted=[si_pb2.AcceptedApplication(applicationID="a1")]))
    assert shim.state().applications[0].state == "Accepted"
    shim.tell_and_settle(si_pb2.ApplicationResponse(updated=[si_pb2.UpdatedApplication(applicationID="a1",
                                                                                       state="Running")]))
    assert shim.state().applications[0].state == "Running"
    shim.tell_and_settle(si_pb2.ApplicationResponse(updated=[si_pb2.UpdatedApplication(applicationID="a1",
                                                                                       state="Completed")]))
    assert shim.state().applications[0].state == "Completed"
    assert [r.remove[0].applicationID for r in shim.core.of("application") if r.remove] == ["a1"]
    again = pod_json("p2", labels={"applicationId": "a1"})
    shim.change(kinds.PODS, Added(parse_pod(again)))
    assert shim.core.of("application")[-1].new[0].applicationID == "a1"
    assert shim.state().applications[0].state == "Submitted"


def test_core_scheduling_failure_becomes_event_and_condition(shim):
    raw = pod_json("p")
    shim.list_all(pods=[raw], nodes=[node_json("n1")])
    shim.tell_and_settle(si_pb2.UpdateContainerSchedulingStateRequest(
        applicationID="yunikorn-default-autogen", allocationKey=raw["metadata"]["uid"], state=si_pb2.UpdateContainerSchedulingStateRequest.FAILED,
        reason="queue root.a: max vcore 4000 reached"))
    [event] = shim.events("FailedScheduling")
    assert event.message == "queue root.a: max vcore 4000 reached" and event.type == "Warning"
    [condition] = shim.conditions()
    assert (condition.name, condition.reason) == ("p", "Unschedulable")


def test_preempted_pods_are_evicted(shim):
    raw = pod_json("victim", node="n1")
    shim.list_all(pods=[raw], nodes=[node_json("n1")])
    shim.tell_and_settle(si_pb2.AllocationResponse(released=[si_pb2.AllocationRelease(
        applicationID="yunikorn-default-autogen", allocationKey=raw["metadata"]["uid"],
        terminationType=si_pb2.PREEMPTED_BY_SCHEDULER, message="make room")]))
    [eviction] = inbox_messages(shim.binder, EvictPod)
    assert (eviction.uid, eviction.namespace, eviction.name, eviction.reason) == (
        raw["metadata"]["uid"], "default", "victim", "make room")
    assert inbox_messages(shim.binder, DeletePod) == []


def test_node_changes(shim):
    shim.list_all(nodes=[node_json("n1")])
    n1 = parse_node(node_json("n1"))
    cordoned = parse_node(node_json("n1", unschedulable=True, resource_version="2"))
    shim.change(kinds.NODES, Updated(n1, cordoned))
    bigger = parse_node(node_json("n1", cpu="16", resource_version="3"))
    shim.change(kinds.NODES, Updated(cordoned, bigger))
    same = parse_node(node_json("n1", cpu="16", resource_version="4"))
    shim.change(kinds.NODES, Updated(bigger, same))
    shim.change(kinds.NODES, Deleted(same))
    assert [action for _, action in shim.core.node_actions()] == [
        NodeInfo.CREATE_DRAIN, NodeInfo.DRAIN_TO_SCHEDULABLE,  # recovered
        NodeInfo.DRAIN_NODE,  # cordoned
        NodeInfo.DRAIN_TO_SCHEDULABLE,  # bigger, and uncordoned: each turn carries the record and its state
        NodeInfo.DECOMISSION]
    turns = (NodeInfo.DRAIN_TO_SCHEDULABLE, NodeInfo.DRAIN_NODE)
    updates = [i for r in shim.core.of("node") for i in r.nodes if i.action in turns]
    assert [u.attributes[ATTR_NODE_STATE] for u in updates] == ["Schedulable", "Draining", "Schedulable"]
    assert Resource.from_proto(updates[2].schedulableResource)["vcore"] == 16000
    shim.tell_and_settle(si_pb2.NodeResponse(accepted=[si_pb2.AcceptedNode(nodeID="n1")],
                                             rejected=[si_pb2.RejectedNode(nodeID="n2", reason="duplicate")]))
    assert shim.events("NodeAccepted")[0].name == "n1"
    assert "duplicate" in shim.events("NodeRejected")[0].message


def test_cordoned_node_is_registered_draining_and_stays_so(shim):
    state = shim.list_all(nodes=[node_json("n1", unschedulable=True), node_json("n2")])
    assert {a for a in shim.core.node_actions() if a[1] != NodeInfo.UPDATE} == {
        ("n1", NodeInfo.CREATE_DRAIN), ("n2", NodeInfo.CREATE_DRAIN), ("n2", NodeInfo.DRAIN_TO_SCHEDULABLE)}
    assert {n.name: n.state for n in state.nodes} == {"n1": "Draining", "n2": "Schedulable"}


def configmap(data, version="1"):
    return parse_configmap({"metadata": {"name": "yunikorn-configs", "resourceVersion": version}, "data": data})


def test_config_changes_are_sent_and_refusals_keep_the_old_config(shim):
    first = {"queues.yaml": "a: 1"}
    shim.list_all(nodes=[node_json("n1")], configmaps=[{"metadata": {"name": "yunikorn-configs"}, "data": first}])
    shim.core.refuse_config = "queue root.x: bad"
    shim.change(kinds.CONFIGMAPS, Updated(configmap(first), configmap({"queues.yaml": "bad"}, "2")))
    [warning] = shim.events("ConfigurationRefused")
    assert "queue root.x: bad" in warning.message and warning.kind == "ConfigMap"
    shim.core.refuse_config = ""
    shim.change(kinds.CONFIGMAPS, Updated(configmap({"queues.yaml": "bad"}), configmap({"queues.yaml": "b: 2"}, "3")))
    assert [u.config for u in shim.core.of("configuration")] == ["bad", "b: 2"]
    shim.change(kinds.CONFIGMAPS, Updated(configmap({"queues.yaml": "b: 2"}), configmap({"queues.yaml": "b: 2"}, "4")))
    assert len(shim.core.of("configuration")) == 2


def test_disabled_hot_refresh_freezes_the_config(shim):
    frozen = {"queues.yaml": "a: 1", "service.enableConfigHotRefresh": "false"}
    shim.list_all(nodes=[node_json("n1")], configmaps=[{"metadata": {"name": "yunikorn-configs"}, "data": frozen}])
    shim.change(kinds.CONFIGMAPS, Updated(configmap(frozen), configmap({"queues.yaml": "b: 2"}, "2")))
    assert shim.core.of("configuration") == []


def test_namespace_annotations_become_app_tags(shim):
    ns = {"metadata": {"name": "team", "annotations": {"yunikorn.apache.org/parentqueue": "root.teams"}}}
    shim.list_all(pods=[pod_json("p", namespace="team")], nodes=[node_json("n1")], namespaces=[ns])
    tags = shim.core.of("application")[0].new[0].tags
    assert tags["namespace.parentqueue"] == "root.teams" and tags["namespace"] == "team"


def test_a_pod_before_its_new_namespace_waits_for_the_namespace(shim):
    """kube-apiserver has the namespace before the pod, but the namespace's event can come later: the
    application is made with the namespace's annotations, as upstream's shim reads them from its lister."""
    default = {"metadata": {"name": "default"}}
    shim.list_all(nodes=[node_json("n1")], namespaces=[default])
    shim.change(kinds.PODS, Added(parse_pod(pod_json("p", namespace="team"))))
    assert shim.core.of("application") == [], "no application before its namespace is known"
    ns = {"metadata": {"name": "team", "annotations": {"yunikorn.apache.org/parentqueue": "root.teams"}}}
    shim.change(kinds.NAMESPACES, Added(parse_namespace(ns)))
    wait_for(lambda: shim.core.of("application"), message="the application made once its namespace is known")
    tags = shim.core.of("application")[0].new[0].tags
    assert tags["namespace.parentqueue"] == "root.teams" and tags["namespace"] == "team"


def test_a_pod_whose_namespace_never_shows_is_scheduled_after_a_while(shim, monkeypatch):
    monkeypatch.setattr(context_module, "NAMESPACE_WAIT_SECONDS", 0.2)
    shim.list_all(nodes=[node_json("n1")], namespaces=[{"metadata": {"name": "default"}}])
    shim.change(kinds.PODS, Added(parse_pod(pod_json("p", namespace="ghost"))))
    wait_for(lambda: shim.core.of("application"), timeout=5, message="the application made without its namespace")
    assert shim.core.of("application")[0].new[0].tags["namespace"] == "ghost"
    wait_for(lambda: shim.core.allocations(), message="its pod asked for")


def test_priority_comes_from_the_pod_or_its_class(shim):
    shim.ref.tell(Listed(kinds.PRIORITY_CLASSES, ()))
    with_class = pod_json("c", spec={"priorityClassName": "high"})
    explicit = pod_json("e", spec={"priority": 5, "priorityClassName": "high"})

    shim.ref.tell(Changes(kinds.PRIORITY_CLASSES, (Added(parse_priority_class(
        {"metadata": {"name": "high"}, "value": 1000})),)))
    shim.list_all(pods=[with_class, explicit], nodes=[node_json("n1")])
    assert {a.allocationTags["kubernetes.io/meta/podName"]: a.priority for a in shim.core.allocations()} == {
        "c": 1000, "e": 5}


def test_registration_failure_ends_in_failed(make_shim):
    shim = make_shim(core=RecordingCore(refuse_registration="core is down"))
    state = shim.list_all(nodes=[node_json("n1")])
    assert state.state == "Failed"
    assert "core is down" in shim.events("SchedulerFailed")[0].message


def test_a_stored_configuration_the_core_refuses_gives_way_to_the_default(make_shim):
    shim = make_shim(core=RecordingCore(refuse_config_with="bogus"))
    configs = {"metadata": {"name": "yunikorn-configs"}, "data": {"queues.yaml": "partitions: bogus"}}
    state = shim.list_all(nodes=[node_json("n1")], configmaps=[configs])
    assert state.state == "Running"
    assert shim.core.of("register")[0].config == ""
    [event] = shim.events("ConfigurationRefused")
    assert "bogus" in event.message and event.type == "Warning"


def test_shutdown_drains_and_ignores_the_cluster(shim):
    shim.list_all(nodes=[node_json("n1")])
    shim.ref.ask(Shutdown())
    shim.change(kinds.PODS, Added(parse_pod(pod_json("late"))))
    assert shim.core.allocations() == []
    assert wait_for(lambda: shim.board.latest().state == "Draining")


def test_constraints_reach_the_core_as_one_tag(shim):
    raw = pod_json("p", spec={"nodeSelector": {"disk": "ssd"}})
    shim.list_all(pods=[raw], nodes=[node_json("n1")])
    tag = shim.core.allocations()[0].allocationTags["yunikorn.apache.org/constraints"]
    assert json.loads(tag) == {"nodeSelector": {"disk": "ssd"}}


def test_the_collector_is_held_off_until_recovered_and_freezes_what_the_recovery_built(make_shim):
    gc.enable()
    shim = make_shim()
    shim.state()
    assert not gc.isenabled()  # listing and recovering build objects that live on
    assert shim.list_all(pods=[pod_json("bound", node="n1")], nodes=[node_json("n1")]).state == "Running"
    assert gc.isenabled() and gc.get_freeze_count() > 0
    shim.stop()
    assert gc.get_freeze_count() == 0  # a stopped scheduler's objects are collectable again


def test_a_recovery_that_waits_too_long_lets_the_collector_run(make_shim, monkeypatch):
    gc.enable()
    frozen = gc.get_freeze_count()  # what importing the command froze (actors.cli), when a test module did
    shim = make_shim()
    shim.state()
    assert not gc.isenabled()
    monkeypatch.setattr(context_module, "MAX_COLLECTOR_PAUSE", 0.0)
    shim.tell_and_settle(SendMail())
    assert shim.state().state == "New" and gc.isenabled() and gc.get_freeze_count() == frozen


def test_a_node_actor_still_stopping_after_its_node_went_has_stopped_once_the_context_has(shim, monkeypatch):
    """The node goes, its actor tells the context there is nothing left to watch, and the context stops
    it while the shared dispatcher is busy elsewhere: stopping the context waits for that actor too, so
    nothing the context started outlives it."""
    shim.list_all(nodes=[node_json("n1")])
    gate = threading.Event()
    blocker = Blocker.start()
    on_node_gone = ShimContext.on_NodeGone

    def gone_while_the_dispatcher_is_busy(context, gone):
        blocker.tell(Hold(gate))
        wait_for(lambda: blocker.actor_inbox.empty(), message="the blocker holding the dispatcher's worker")
        on_node_gone(context, gone)  # the node actor's stop waits behind the blocker

    monkeypatch.setattr(ShimContext, "on_NodeGone", gone_while_the_dispatcher_is_busy)
    shim.change(kinds.NODES, Deleted(parse_node(node_json("n1"))))
    wait_for(lambda: NodeInfo.DECOMISSION in [action for _, action in shim.core.node_actions()],
             message="the node decommissioned")
    wait_for(lambda: shim.ref.actor_inbox.empty(), message="the context took the node actor's last word")
    threading.Timer(0.5, gate.set).start()
    shim.ref.stop()
    assert pykka.ActorRegistry.get_by_class(NodeActor) == []
    blocker.stop()


@message
class Poison:
    """No actor handles it: told, it stops the actor by a failure."""


def test_a_node_actor_stopped_by_a_failure_fails_alone_as_its_node_changes(shim):
    """The actor of n1 crashed (the supervisor has it; the probes fail): what the informers bring for n1
    afterwards has nobody to act on it, and the context goes on with every other node and pod."""
    shim.list_all(nodes=[node_json("n1"), node_json("n2")])
    [crashed] = [ref for ref in pykka.ActorRegistry.get_by_class(NodeActor) if ref.proxy().node_name.get() == "n1"]
    crashed.tell(Poison())
    wait_for(lambda: not crashed.is_alive(), message="n1's actor stopped by its failure")
    n1 = parse_node(node_json("n1"))
    shim.change(kinds.NODES, Updated(n1, parse_node(node_json("n1", unschedulable=True, resource_version="2"))))
    shim.change(kinds.PODS, Added(parse_pod(pod_json("on-n1", node="n1", scheduler="default-scheduler"))))
    n2 = parse_node(node_json("n2"))
    shim.change(kinds.NODES, Updated(n2, parse_node(node_json("n2", unschedulable=True, resource_version="2"))))
    assert shim.ref.is_alive()
    assert ("n2", NodeInfo.DRAIN_NODE) in shim.core.node_actions()


def test_an_application_actor_ended_just_before_the_context_stops_has_stopped_once_the_context_has(shim, monkeypatch):
    """The last pod of app-1 goes and the context is told to stop before it sent what that step made: the
    ended application actor is stopped with the others rather than left running."""
    last = pod_json("a", labels={"applicationId": "app-1"})
    shim.list_all(pods=[last], nodes=[node_json("n1")])
    assert pykka.ActorRegistry.get_by_class(ApplicationActor) != []
    monkeypatch.setattr(ShimContext, "on_Hold", lambda context, hold: hold.gate.wait(30), raising=False)
    gate = threading.Event()
    shim.ref.tell(Hold(gate))  # the change and the stop queue up behind it, so nothing is sent between them
    shim.ref.tell(Changes(kinds.PODS, (Deleted(parse_pod(last)),)))
    stopping = shim.ref.stop(block=False)
    gate.set()
    stopping.get(timeout=10)
    assert pykka.ActorRegistry.get_by_class(ApplicationActor) == []


def test_recovery_declares_an_application_by_the_pod_its_placeholders_name_else_by_its_oldest_pod(shim):
    """upstream's Task.IsOriginator at recovery: the owner its placeholders name (even a younger pod),
    else the oldest pod (by uid among pods created together); never a placeholder."""
    from actors.shim import keys
    from actors.shim.placeholders import placeholder_name

    def uid(n: int) -> str:
        return f"00000000-0000-0000-0000-{n:012d}"

    older = pod_json("older", node="n1", labels={"applicationId": "app-1"}, uid=uid(1))
    driver = pod_json("driver", node="n1", labels={"applicationId": "app-1"}, uid=uid(3))
    holder = pod_json(placeholder_name("app-1", "g"), node="n1", labels={"applicationId": "app-1"}, uid=uid(0),
                      annotations={keys.ANNOTATION_PLACEHOLDER: "true", keys.ANNOTATION_TASK_GROUP_NAME: "g"})
    holder["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "driver", "uid": uid(3)}]
    first, second = (pod_json(f"w{n}", node="n1", labels={"applicationId": "app-2"}, uid=uid(n)) for n in (2, 4))
    # Created a second apart: the age decides before the uid.
    late, early = (pod_json(f"v{n}", node="n1", labels={"applicationId": "app-3"}, uid=uid(n)) for n in (5, 6))
    late["metadata"]["creationTimestamp"] = "2030-01-01T00:00:01Z"
    early["metadata"]["creationTimestamp"] = "2030-01-01T00:00:00Z"
    shim.list_all(pods=[second, late, driver, holder, early, first, older], nodes=[node_json("n1")])
    flagged = {a.allocationKey: a.originator for r in shim.core.of("allocation") for a in r.allocations if a.nodeID}
    assert flagged == {uid(1): False, uid(3): True, uid(0): False, uid(2): True, uid(4): False, uid(5): False,
                       uid(6): True}
