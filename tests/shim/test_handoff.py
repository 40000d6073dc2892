"""The plugin-mode handoff actor, driven with its messages: pending, in progress, retracted, settled."""

import pytest
from kubernetes import client as k8s

from actors.shim import keys
from actors.shim.handoff import NOT_READY, AllocationHandoff, BindVerdict
from actors.shim.messages import (
    BindAsk,
    BindOutcome,
    BindRequest,
    Binds,
    FilterAsk,
    RetractTask,
    Settled,
    WaitingReason,
)
from tests.shim.doubles import Inbox, inbox_messages, wait_for
from tests.shim.test_binder import make_pod, shim_client  # noqa: F401 - fixtures

NODES = ("n1", "n2", "n3")


@pytest.fixture
def handoff(shim_client, kube_api):  # noqa: F811 - the fixture imported above
    listener = Inbox.start()
    actor = AllocationHandoff.start(shim_client, listener)
    uid = make_pod(k8s.CoreV1Api(kube_api), "p")
    yield actor, listener, uid
    actor.stop()
    listener.stop()


def hand_off(actor, listener, uid: str, node: str) -> None:
    actor.tell(Binds((BindRequest(uid, "default", "p", node),)))
    wait_for(lambda: [o for o in inbox_messages(listener, BindOutcome) if o.node == node])


def may_bind(actor, uid: str, node: str) -> str:
    verdict = actor.ask(BindAsk(uid, "default", "p", node))
    assert verdict.placed
    return verdict.refusal


def test_a_decision_is_announced_on_the_pod_and_reported_bound(handoff, kube_api):
    actor, listener, uid = handoff
    assert actor.ask(FilterAsk(uid, NODES)).passed == ()
    hand_off(actor, listener, uid, "n2")
    assert inbox_messages(listener, BindOutcome) == [BindOutcome(uid, "n2", True)]
    pod = k8s.CoreV1Api(kube_api).read_namespaced_pod("p", "default")
    assert pod.metadata.annotations[keys.ANNOTATION_QUOTA_APPROVED].startswith("n2 ")
    assert pod.spec.node_name is None


def test_filter_passes_only_the_pending_node_then_a_second_call_retracts(handoff):
    actor, listener, uid = handoff
    hand_off(actor, listener, uid, "n2")
    assert "not passed the filter" in may_bind(actor, uid, "n2")
    verdict = actor.ask(FilterAsk(uid, NODES))
    assert verdict.passed == ("n2",)
    assert actor.ask(BindAsk(uid, "default", "p", "n2")) == BindVerdict(True, "")
    assert may_bind(actor, uid, "n3") == "pod default/p is allocated to n2, not n3"
    assert actor.ask(BindAsk(uid, "default", "q", "n2")) == BindVerdict(True, "pod default/q does not have uid " + uid)
    again = actor.ask(FilterAsk(uid, NODES))
    assert again.passed == () and "the attempt on n2 failed" in again.reason
    wait_for(lambda: inbox_messages(listener, RetractTask))
    assert inbox_messages(listener, RetractTask)[0].uid == uid
    assert actor.ask(FilterAsk(uid, NODES)).reason == NOT_READY  # nothing pending until the core decides again


def test_a_node_kube_scheduler_found_infeasible_is_retracted(handoff):
    actor, listener, uid = handoff
    hand_off(actor, listener, uid, "n2")
    verdict = actor.ask(FilterAsk(uid, ("n1", "n3")))
    assert verdict.passed == () and "n2 was not among the feasible nodes" in verdict.reason
    wait_for(lambda: inbox_messages(listener, RetractTask))


def test_settled_allocations_are_forgotten_and_waiting_reasons_answered(handoff):
    actor, listener, uid = handoff
    actor.tell(WaitingReason(uid, "queue root.a: max reached"))
    assert actor.ask(FilterAsk(uid, NODES)).reason == "queue root.a: max reached"
    hand_off(actor, listener, uid, "n1")
    assert actor.ask(FilterAsk(uid, NODES)).passed == ("n1",)
    actor.tell(Settled(uid))
    assert actor.ask(FilterAsk(uid, NODES)).reason == NOT_READY  # no retraction: the pod was bound
    # No allocation: the extender decides on the pod itself, with the core's reason at hand.
    assert actor.ask(BindAsk(uid, "default", "p", "n3")) == BindVerdict(False, f"YuniKorn has not placed pod default/p: {NOT_READY}")
    assert inbox_messages(listener, RetractTask) == []


def test_a_pod_deleted_before_the_announcement_is_reported_gone(handoff, kube_api):
    actor, listener, uid = handoff
    k8s.CoreV1Api(kube_api).delete_namespaced_pod("p", "default", grace_period_seconds=0)
    actor.tell(Binds((BindRequest(uid, "default", "p", "n1"),)))
    wait_for(lambda: inbox_messages(listener, BindOutcome))
    (outcome,) = inbox_messages(listener, BindOutcome)
    assert not outcome.bound and outcome.gone
    assert actor.ask(FilterAsk(uid, NODES)).passed == ()
