"""The binder and the event recorder against kubesim: retries, conflicts, concurrency, aggregation."""

import threading

import pytest
from kubernetes import client as k8s

from actors.shim.binder import Binder
from actors.shim.client import ApiError, KubeClient, RetryPolicy
from actors.shim.messages import (
    BinderStatsRequest,
    BindOutcome,
    BindOutcomes,
    BindRequest,
    Binds,
    DeletePod,
    Drain,
    Flush,
    KubeEvent,
    PodCondition,
    RecorderStatsRequest,
)
from actors.shim.ratelimit import TokenBucket
from actors.shim.recorder import EventRecorder
from tests.shim.doubles import Inbox, inbox_messages, wait_for
from tests.shim.factories import pod_json


@pytest.fixture
def shim_client(kubesim, tmp_path):
    path = tmp_path / "kubeconfig"
    kubesim.write_kubeconfig(str(path))
    client = KubeClient.connect(str(path), pool_size=32, retry=RetryPolicy(attempts=4, deadline=10, initial=0.01,
                                                                          maximum=0.1))
    yield client
    client.close()


@pytest.fixture
def core_api(kube_api):
    return k8s.CoreV1Api(kube_api)


@pytest.fixture
def nodes(kubesim):
    kubesim.seed_nodes(2)
    return ["node-00000", "node-00001"]


def make_pod(core_api, name):
    body = pod_json(name)
    for key in ("uid", "resourceVersion", "creationTimestamp"):
        del body["metadata"][key]
    return core_api.create_namespaced_pod("default", body).metadata.uid


def bind_all(shim_client, requests, workers=8):
    inbox = Inbox.start()
    binder = Binder.start(shim_client, inbox, workers)
    for request in requests:
        binder.tell(request)
    binder.ask(Drain())
    wait_for(lambda: len(inbox_messages(inbox, BindOutcome)) == len(requests))
    outcomes = {o.uid: o for o in inbox_messages(inbox, BindOutcome)}
    binder.stop()
    inbox.stop()
    return outcomes


def test_the_outcomes_for_one_receiver_that_finish_together_are_told_as_one_message(kubesim, core_api,
                                                                                    shim_client, nodes):
    requests = [BindRequest(make_pod(core_api, f"p{i}"), "default", f"p{i}", nodes[i % 2]) for i in range(40)]
    inbox = Inbox.start()
    binder = Binder.start(shim_client, inbox, 1)
    binder.tell(Binds(tuple(requests)))  # one worker: it sends them in batches, and reports each batch at once
    binder.ask(Drain())
    wait_for(lambda: len(inbox_messages(inbox, BindOutcome)) == len(requests))
    told = inbox.ask(Inbox.ALL)
    binder.stop()
    inbox.stop()
    assert any(isinstance(m, BindOutcomes) for m in told) and len(told) < len(requests)
    assert sorted(o.uid for m in told for o in (m.outcomes if isinstance(m, BindOutcomes) else (m,))) \
        == sorted(r.uid for r in requests)


def node_of(core_api, name):
    return core_api.read_namespaced_pod(name, "default").spec.node_name


def test_binds_many_pods_concurrently(kubesim, core_api, shim_client, nodes):
    requests = [BindRequest(make_pod(core_api, f"p{i}"), "default", f"p{i}", nodes[i % 2]) for i in range(40)]
    outcomes = bind_all(shim_client, requests)
    assert all(o.bound for o in outcomes.values())
    assert [node_of(core_api, f"p{i}") for i in range(40)] == [nodes[i % 2] for i in range(40)]
    binds = [r for r in kubesim.request_log if r.subresource == "binding"]
    assert len(binds) == 40


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_failures_are_retried(kubesim, core_api, shim_client, nodes, status):
    uid = make_pod(core_api, "p")
    kubesim.faults.fail(verb="create", resource="pods/binding", status=status, count=2, retry_after=0)
    [outcome] = bind_all(shim_client, [BindRequest(uid, "default", "p", nodes[0])]).values()
    assert outcome.bound
    assert node_of(core_api, "p") == nodes[0]


def test_persistent_failure_is_reported_and_nothing_is_bound(kubesim, core_api, shim_client, nodes):
    uid = make_pod(core_api, "p")
    kubesim.faults.fail(verb="create", resource="pods/binding", status=500, count=None)
    [outcome] = bind_all(shim_client, [BindRequest(uid, "default", "p", nodes[0])]).values()
    assert not outcome.bound and not outcome.gone and "500" in outcome.reason
    assert node_of(core_api, "p") is None
    attempts = [r for r in kubesim.request_log if r.subresource == "binding"]
    assert len(attempts) == 4


def test_the_first_attempt_counts_against_the_retry_deadline(kubesim, tmp_path):
    path = tmp_path / "slow-kubeconfig"
    kubesim.write_kubeconfig(str(path))
    client = KubeClient.connect(str(path), retry=RetryPolicy(attempts=10, deadline=0.5, initial=0.01, maximum=0.01))
    kubesim.faults.latency(verb="get", resource="pods", seconds=0.6)
    kubesim.faults.fail(verb="get", resource="pods", status=503, count=None, retry_after=0)
    try:
        with pytest.raises(ApiError):
            client.request_retrying("GET", "/api/v1/namespaces/default/pods/slow")
    finally:
        client.close()
    assert [r.name for r in kubesim.request_log if r.resource == "pods" and r.verb == "get"] == ["slow"]


def test_already_bound_to_that_node_counts_as_bound(core_api, shim_client, nodes):
    uid = make_pod(core_api, "p")
    bind_all(shim_client, [BindRequest(uid, "default", "p", nodes[0])])
    [again] = bind_all(shim_client, [BindRequest(uid, "default", "p", nodes[0])]).values()
    assert again.bound
    [elsewhere] = bind_all(shim_client, [BindRequest(uid, "default", "p", nodes[1])]).values()
    assert not elsewhere.bound and not elsewhere.gone and nodes[0] in elsewhere.reason
    assert node_of(core_api, "p") == nodes[0]


def test_missing_pod_is_gone(shim_client, nodes):
    [outcome] = bind_all(shim_client, [BindRequest("uid-x", "default", "ghost", nodes[0])]).values()
    assert outcome.gone and not outcome.bound


def test_a_second_request_in_flight_is_dropped(kubesim, core_api, shim_client, nodes):
    uid = make_pod(core_api, "p")
    kubesim.faults.latency(verb="create", resource="pods/binding", seconds=0.3)
    inbox = Inbox.start()
    binder = Binder.start(shim_client, inbox, 4)
    binder.tell(BindRequest(uid, "default", "p", nodes[0]))
    binder.tell(BindRequest(uid, "default", "p", nodes[0]))
    binder.ask(Drain())
    wait_for(lambda: inbox_messages(inbox, BindOutcome))
    assert len(inbox_messages(inbox, BindOutcome)) == 1
    assert len([r for r in kubesim.request_log if r.subresource == "binding"]) == 1
    binder.tell(BindRequest(uid, "default", "p", nodes[0]))
    wait_for(lambda: len(inbox_messages(inbox, BindOutcome)) == 2)
    assert "shutting down" in inbox_messages(inbox, BindOutcome)[-1].reason
    binder.stop()
    inbox.stop()


def test_delete_pod_respects_the_uid(core_api, shim_client):
    uid = make_pod(core_api, "victim")
    inbox = Inbox.start()
    binder = Binder.start(shim_client, inbox, 2)
    binder.tell(DeletePod("another-uid", "default", "victim", "preempted"))
    binder.ask(Drain())
    assert core_api.read_namespaced_pod("victim", "default").metadata.uid == uid
    binder.stop()
    binder = Binder.start(shim_client, inbox, 2)
    binder.tell(DeletePod(uid, "default", "victim", "preempted"))
    binder.ask(Drain())
    with pytest.raises(k8s.ApiException):
        core_api.read_namespaced_pod("victim", "default")
    binder.stop()
    inbox.stop()


def pod_events(core_api, name):
    return [e for e in core_api.list_namespaced_event("default").items if e.involved_object.name == name]


def test_recorder_aggregates_updates_and_sets_conditions(core_api, shim_client):
    uid = make_pod(core_api, "p")
    recorder = EventRecorder.start(shim_client, qps=100, burst=100, interval=60)
    event = KubeEvent("Pod", "default", "p", uid, "Warning", "FailedScheduling", "queue root.a is full")
    for _ in range(3):
        recorder.tell(event)
    recorder.tell(PodCondition("default", "p", uid, "Unschedulable", "queue root.a is full"))
    recorder.ask(Flush())
    [written] = pod_events(core_api, "p")
    assert (written.count, written.type, written.reason, written.message) == (3, "Warning", "FailedScheduling",
                                                                               "queue root.a is full")
    recorder.tell(event)
    recorder.ask(Flush())
    [updated] = pod_events(core_api, "p")
    assert updated.count == 4 and updated.metadata.name == written.metadata.name
    conditions = core_api.read_namespaced_pod_status("p", "default").status.conditions
    scheduled = [c for c in conditions if c.type == "PodScheduled"]
    assert [(c.status, c.reason, c.message) for c in scheduled] == [("False", "Unschedulable", "queue root.a is full")]
    stats = recorder.ask(RecorderStatsRequest())
    assert (stats.written, stats.updated, stats.failed) == (2, 1, 0)
    recorder.stop()


def test_recorder_rate_limit_bounds_api_writes(kubesim, shim_client):
    recorder = EventRecorder.start(shim_client, qps=1, burst=10, interval=60)
    for i in range(500):
        recorder.tell(KubeEvent("Pod", "default", f"p{i}", "", "Normal", "Scheduled", "assigned"))
    recorder.ask(Flush())
    writes = [r for r in kubesim.request_log if r.resource == "events"]
    assert len(writes) == 10
    assert recorder.ask(RecorderStatsRequest()).pending == 490
    recorder.stop()


def test_a_pod_waiting_for_its_claims_provisioner_holds_no_worker(shim_client, core_api, nodes, kube_api):
    """With one worker: a pod whose WaitForFirstConsumer claim waits for a provisioner does not keep
    the next pod from being bound; it is bound once the claim is, and a drain gives up its wait."""
    k8s.StorageV1Api(kube_api).create_storage_class({"metadata": {"name": "dynamic"}, "provisioner": "csi.example",
                                                     "volumeBindingMode": "WaitForFirstConsumer"})
    for claim in ("data", "other"):
        core_api.create_namespaced_persistent_volume_claim("default", {"metadata": {"name": claim}, "spec": {
            "accessModes": ["ReadWriteOnce"], "storageClassName": "dynamic",
            "resources": {"requests": {"storage": "1Gi"}}}})
    waiting, plain, abandoned = (make_pod(core_api, name) for name in ("waiting", "plain", "abandoned"))
    inbox = Inbox.start()
    binder = Binder.start(shim_client, inbox, 1)
    binder.tell(BindRequest(waiting, "default", "waiting", nodes[0], claims=("data",)))
    wait_for(lambda: (core_api.read_namespaced_persistent_volume_claim("data", "default").metadata.annotations
                      or {}).get("volume.kubernetes.io/selected-node") == nodes[0])
    binder.tell(BindRequest(plain, "default", "plain", nodes[1]))
    wait_for(lambda: any(o.uid == plain and o.bound for o in inbox_messages(inbox, BindOutcome)))
    assert core_api.read_namespaced_pod("waiting", "default").spec.node_name is None
    core_api.patch_namespaced_persistent_volume_claim_status("data", "default", {"status": {"phase": "Bound"}})
    wait_for(lambda: any(o.uid == waiting and o.bound for o in inbox_messages(inbox, BindOutcome)))
    assert core_api.read_namespaced_pod("waiting", "default").spec.node_name == nodes[0]
    binder.tell(BindRequest(abandoned, "default", "abandoned", nodes[0], claims=("other",)))
    wait_for(lambda: (core_api.read_namespaced_persistent_volume_claim("other", "default").metadata.annotations
                      or {}).get("volume.kubernetes.io/selected-node"))
    binder.ask(Drain())
    wait_for(lambda: any(o.uid == abandoned and not o.bound and o.volumes for o in inbox_messages(inbox, BindOutcome)))
    binder.stop()
    inbox.stop()


def test_binds_sent_together_end_each_as_it_would_alone(core_api, shim_client, nodes):
    fresh = [make_pod(core_api, f"p{i}") for i in range(3)]
    bound_here, bound_there = make_pod(core_api, "here"), make_pod(core_api, "there")
    assert shim_client.bind_all([("default", "here", nodes[0], bound_here),
                                 ("default", "there", nodes[1], bound_there)]) == [None, None]
    errors = shim_client.bind_all([
        ("default", "p0", nodes[0], fresh[0]), ("default", "ghost", nodes[0], "uid-x"),
        ("default", "here", nodes[0], bound_here), ("default", "there", nodes[0], bound_there),
        ("default", "p1", nodes[1], fresh[1]), ("default", "p2", nodes[0], fresh[2])])
    assert [error is None for error in errors] == [True, False, True, False, True, True]
    assert errors[1].gone and not errors[3].gone and nodes[1] in str(errors[3])
    assert [node_of(core_api, name) for name in ("p0", "p1", "p2", "there")] == [nodes[0], nodes[1], nodes[0],
                                                                                  nodes[1]]


def test_a_transient_failure_among_binds_sent_together_is_retried_alone(kubesim, core_api, shim_client, nodes):
    uids = [make_pod(core_api, f"p{i}") for i in range(4)]
    kubesim.faults.fail(verb="create", resource="pods/binding", status=503, count=1, retry_after=0)
    assert shim_client.bind_all([("default", f"p{i}", nodes[0], uid) for i, uid in enumerate(uids)]) == [None] * 4
    assert [node_of(core_api, f"p{i}") for i in range(4)] == [nodes[0]] * 4
    assert len([r for r in kubesim.request_log if r.subresource == "binding"]) == 5


def sent_behind_a_busy_worker(core_api, shim_client, nodes, *tells):
    """One worker, held in its first exchange while the binder queues ``tells`` (each a callable making
    the message from the bind requests of the 48 pods it is given); then every bind and deletion is
    made. How many binds each exchange sent, in order (a deletion's request counts 1), and the pods left."""
    qps, sent_together, released = 1_000_000, [], threading.Event()

    def paced(delay):  # every exchange waits for its tokens (no burst): the wait names how many binds it sends
        sent_together.append(round(delay * qps))
        released.wait(10)  # the first exchange holds the only worker while the others queue up

    shim_client.rate = TokenBucket(qps, 0, sleep=paced)
    first = BindRequest(make_pod(core_api, "first"), "default", "first", nodes[0])
    backlog = [BindRequest(make_pod(core_api, f"p{i}"), "default", f"p{i}", nodes[i % 2]) for i in range(48)]
    victim = make_pod(core_api, "victim")
    inbox = Inbox.start()
    binder = Binder.start(shim_client, inbox, 1)
    binder.tell(first)
    wait_for(lambda: sent_together == [1], message="the first bind is on its way")
    for tell in tells:
        binder.tell(tell(backlog, DeletePod(victim, "default", "victim", "preempted")))
    binder.ask(BinderStatsRequest())  # the binder has queued them all for its worker
    released.set()
    binder.ask(Drain())
    assert all(o.bound for o in inbox_messages(inbox, BindOutcome)) and len(inbox_messages(inbox, BindOutcome)) == 49
    assert {p.metadata.name: p.spec.node_name for p in core_api.list_namespaced_pod("default").items} == {
        "first": nodes[0], **{r.name: r.node for r in backlog}}  # the deletion was made too
    binder.stop()
    inbox.stop()
    return sent_together


def test_binds_waiting_behind_a_busy_worker_are_sent_together(core_api, shim_client, nodes):
    sent = sent_behind_a_busy_worker(core_api, shim_client, nodes, lambda binds, _: Binds(tuple(binds[:20])),
                                     lambda binds, _: Binds(tuple(binds[20:])), lambda _, delete: delete)
    assert sent[:2] == [1, 48]  # the four groups behind the first, in one exchange (then the deletion's)


def test_binds_are_not_merged_past_other_work(core_api, shim_client, nodes):
    sent = sent_behind_a_busy_worker(core_api, shim_client, nodes, lambda binds, _: Binds(tuple(binds[:16])),
                                     lambda _, delete: delete, lambda binds, _: Binds(tuple(binds[16:])))
    assert sent[:2] == [1, 16] and sent[-1] == 32  # the deletion ends the first merge; the rest go together
