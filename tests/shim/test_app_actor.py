"""An application actor alone: task updates and the core's SI answers in; SI to the outlet, binds to the
binder, events to the recorder out. Each application transition is driven by what the core says."""

import pytest

from actors.shim.appactor import ApplicationActor
from actors.shim.messages import (
    BindOutcome,
    BindOutcomes,
    Binds,
    FailPod,
    Feedback,
    KubeEvent,
    PlacedElsewhere,
    Settle,
    TaskUpdate,
    TaskUpdates,
    ToCore,
)
from actors.shim.pods import parse_pod
from actors.shim.state import StateBoard
from si import si_pb2
from tests.shim.doubles import Inbox, inbox_messages
from tests.shim.factories import pod_json

APP = "app-1"


class App:
    def __init__(self, first):
        self.outlet, self.context, self.binder, self.recorder = (Inbox.start() for _ in range(4))
        self.board = StateBoard()
        self.ref = ApplicationActor.start(first, {}, first.assigned, outlet=self.outlet, context=self.context,
                                          binder=self.binder, recorder=self.recorder, board=self.board,
                                          plugin_mode=False)

    def tell(self, *messages):
        for message in messages:
            self.ref.tell(message)
        self.ref.ask(Settle())

    def sent(self):
        return [item for m in inbox_messages(self.outlet, ToCore) for item in m.items]

    def state(self):
        return {v.application_id: v.state for v in self.board.apps.all()}.get(APP)

    def tasks(self):
        return {v.name: v.state for v in self.board.pods.all()[0]}

    def events(self, reason):
        return [e for f in inbox_messages(self.recorder, Feedback) for e in f.items
                if isinstance(e, KubeEvent) and e.reason == reason]

    def stop(self):
        for ref in (self.ref, self.outlet, self.context, self.binder, self.recorder):
            ref.stop()


@pytest.fixture
def app():
    made = []

    def make(first):
        made.append(App(first))
        return made[-1]

    yield make
    for each in made:
        each.stop()


def pod(name, **kwargs):
    return parse_pod(pod_json(name, labels={"applicationId": APP}, **kwargs))


def accepted(app_id=APP):
    return si_pb2.ApplicationResponse(accepted=[si_pb2.AcceptedApplication(applicationID=app_id)])


def updated(app_id=APP, state="", message=""):
    return si_pb2.ApplicationResponse(updated=[si_pb2.UpdatedApplication(applicationID=app_id, state=state,
                                                                         message=message)])


def test_submitted_on_creation_and_asks_only_once_accepted(app):
    first = pod("p0")
    a = app(first)
    a.tell(TaskUpdates((TaskUpdate(first, 0),)))
    [add] = a.sent()
    assert isinstance(add, si_pb2.AddApplicationRequest) and add.applicationID == APP
    assert a.state() == "Submitted" and a.tasks() == {"p0": "Pending"}
    a.tell(accepted())
    ask = a.sent()[-1]
    assert isinstance(ask, si_pb2.Allocation) and ask.allocationKey == first.uid and not ask.nodeID
    assert a.state() == "Accepted" and a.tasks() == {"p0": "Scheduling"}


def test_pods_found_on_nodes_are_bound_where_they_run_and_never_asked_for(app):
    first, second = pod("p0", node="n1"), pod("p1", node="n2")
    invalid, finished = pod("bad", node="n1", cpu="lots"), pod("done", node="n2", phase="Succeeded")
    a = app(first)
    a.tell(TaskUpdates(tuple(TaskUpdate(p, 0) for p in (first, second, invalid, finished))), accepted())
    assert a.tasks() == {"p0": "Bound", "p1": "Bound", "bad": "Rejected"}
    assert {v.name: v.node for v in a.board.pods.all()[0]} == {"p0": "n1", "p1": "n2", "bad": ""}
    assert [type(item) for item in a.sent()] == [si_pb2.AddApplicationRequest]  # their nodes report them
    a.tell(TaskUpdates((TaskUpdate(second, 0, deleted=True),)))
    assert a.tasks() == {"p0": "Bound", "bad": "Rejected"}
    assert [type(item) for item in a.sent()] == [si_pb2.AddApplicationRequest]  # its node releases it

def test_accepted_running_completed_and_submitted_again(app):
    first = pod("p0")
    a = app(first)
    a.tell(TaskUpdates((TaskUpdate(first, 0),)))
    a.tell(accepted())
    assert a.state() == "Accepted"
    a.tell(updated(state="Running"))
    a.tell(updated(state="Completed"))
    assert a.state() == "Completed"
    assert isinstance(a.sent()[-1], si_pb2.RemoveApplicationRequest)
    later = pod("p1")
    a.tell(TaskUpdates((TaskUpdate(later, 0),)))
    assert a.state() == "Submitted"
    assert type(a.sent()[-1]).__name__ == "AddApplicationRequest"
    a.tell(accepted())
    assert type(a.sent()[-1]).__name__ == "Allocation"


def test_allocated_bound_and_a_failed_bind_asks_again(app):
    first = pod("p0")
    a = app(first)
    a.tell(TaskUpdates((TaskUpdate(first, 0),)), accepted())
    allocation = si_pb2.Allocation(allocationKey=first.uid, applicationID=APP, nodeID="n1")
    a.tell(si_pb2.AllocationResponse(new=[allocation]))
    assert a.state() == "Running" and a.tasks() == {"p0": "Allocated"}
    [request] = inbox_messages(a.binder, Binds)[0].requests
    assert (request.uid, request.node) == (first.uid, "n1") and request.reply_to == a.ref
    a.tell(BindOutcome(first.uid, "n1", False, reason="500 boom"))
    release, ask = a.sent()[-2:]
    assert isinstance(release, si_pb2.AllocationRelease) and release.allocationKey == first.uid
    assert isinstance(ask, si_pb2.Allocation) and not ask.nodeID
    a.tell(si_pb2.AllocationResponse(new=[allocation]))
    a.tell(BindOutcome(first.uid, "n1", True))
    assert a.tasks() == {"p0": "Bound"} and a.events("Scheduled")


def test_outcomes_told_together_are_each_handled_as_if_told_alone(app):
    first, second, third = pod("p0"), pod("p1"), pod("p2")
    a = app(first)
    a.tell(TaskUpdates(tuple(TaskUpdate(p, 0) for p in (first, second, third))), accepted())
    a.tell(si_pb2.AllocationResponse(new=[si_pb2.Allocation(allocationKey=p.uid, applicationID=APP, nodeID="n1")
                                          for p in (first, second, third)]))
    asks_before = len(a.sent())
    a.tell(BindOutcomes((BindOutcome(first.uid, "n1", True), BindOutcome("not-a-pod-of-it", "n1", True),
                         BindOutcome(second.uid, "n1", False, reason="500 boom"),
                         BindOutcome(third.uid, "n1", True))))
    assert a.tasks() == {"p0": "Bound", "p1": "Scheduling", "p2": "Bound"}
    release, ask = a.sent()[asks_before:]
    assert release.allocationKey == ask.allocationKey == second.uid and not ask.nodeID
    assert len(a.events("Scheduled")) == 2 and a.events("PodBindFailure")


def test_rejected_fails_the_pods_without_a_node(app):
    waiting, running = pod("waiting"), pod("running", node="n1")
    a = app(waiting)
    a.tell(TaskUpdates((TaskUpdate(waiting, 0), TaskUpdate(running, 0))))
    a.tell(si_pb2.ApplicationResponse(rejected=[si_pb2.RejectedApplication(applicationID=APP,
                                                                           reason="queue full")]))
    assert a.state() == "Rejected"
    assert a.tasks() == {"waiting": "Rejected", "running": "Bound"}
    [failed] = inbox_messages(a.binder, FailPod)
    assert (failed.name, failed.reason) == ("waiting", "ApplicationRejected") and "queue full" in failed.message


def test_failing_then_failed_fails_the_pods_without_a_node(app):
    waiting = pod("waiting")
    a = app(waiting)
    a.tell(TaskUpdates((TaskUpdate(waiting, 0),)))
    a.tell(updated(state="Failing"))
    assert a.state() == "Failing"
    a.tell(updated(state="Failed", message="placeholders timed out"))
    assert a.state() == "Failed"
    [failed] = inbox_messages(a.binder, FailPod)
    assert failed.reason == "ApplicationFailed" and "placeholders timed out" in failed.message


def test_its_last_pod_deleted_the_core_completes_it(app):
    """As upstream's shim: the asks go, the application stays until the core, Completing on its timer,
    says Completed."""
    first = pod("p0")
    a = app(first)
    a.tell(TaskUpdates((TaskUpdate(first, 0),)), accepted())
    a.tell(TaskUpdates((TaskUpdate(first, 0, deleted=True),)))
    release = a.sent()[-1]
    assert isinstance(release, si_pb2.AllocationRelease) and release.allocationKey == first.uid
    assert a.state() == "Accepted"
    a.tell(updated(state="Completing"), updated(state="Completed"))
    assert a.state() == "Completed"


def test_killed_at_once_when_its_last_pod_is_deleted_before_the_core_had_an_ask(app):
    first = pod("p0")
    a = app(first)
    a.tell(TaskUpdates((TaskUpdate(first, 0),)))
    a.tell(TaskUpdates((TaskUpdate(first, 0, deleted=True),)))
    assert a.state() == "Killed"
    remove = a.sent()[-1]
    assert isinstance(remove, si_pb2.RemoveApplicationRequest) and remove.applicationID == APP


def test_a_pending_pod_bound_elsewhere_withdraws_its_ask_then_hands_the_pod_to_its_node(app):
    first = pod("p0")
    a = app(first)
    a.tell(TaskUpdates((TaskUpdate(first, 0),)), accepted())
    bound = parse_pod(pod_json("p0", uid=first.uid, node="n7", labels={"applicationId": APP}, resource_version="2"))
    a.tell(TaskUpdates((TaskUpdate(bound, 0),)))
    assert isinstance(a.sent()[-1], si_pb2.AllocationRelease)
    [handed] = inbox_messages(a.context, PlacedElsewhere)
    assert handed.placed.pod.node_name == "n7" and handed.placed.report and not handed.placed.foreign
    assert a.tasks() == {"p0": "Bound"}


def test_a_pod_bound_elsewhere_than_its_allocation_is_counted_where_the_cluster_says(app):
    """A bind the client gave up on reached the cluster after all (node A) while the core had placed the
    pod again (node B): the cluster wins, B's allocation is released and A counts the pod."""
    first = pod("p0")
    a = app(first)
    a.tell(TaskUpdates((TaskUpdate(first, 0),)), accepted())
    a.tell(si_pb2.AllocationResponse(new=[si_pb2.Allocation(allocationKey=first.uid, applicationID=APP,
                                                             nodeID="node-b")]))
    assert a.tasks() == {"p0": "Allocated"}
    on_a = parse_pod(pod_json("p0", uid=first.uid, node="node-a", labels={"applicationId": APP}, resource_version="2"))
    a.tell(TaskUpdates((TaskUpdate(on_a, 0),)))
    release = a.sent()[-1]
    assert isinstance(release, si_pb2.AllocationRelease) and release.allocationKey == first.uid
    [handed] = inbox_messages(a.context, PlacedElsewhere)
    assert handed.placed.pod.node_name == "node-a"
    a.tell(BindOutcome(first.uid, "node-b", False, reason="409: bound to node-a"))
    assert a.tasks() == {"p0": "Bound"}
    assert len([i for i in a.sent() if isinstance(i, si_pb2.Allocation) and not i.nodeID]) == 1  # never asked again
