"""Leader election on kubesim's Lease, and the write fence every write of the API client passes."""

from __future__ import annotations

import threading
import time

import pytest

from actors.cli import parse_args
from actors.shim.client import BindError, KubeClient
from actors.shim.election import ElectionSettings, LeaderElector
from actors.shim.fence import Fenced, LeaderFence
from kubesim.resources import BY_PATH
from tests.waiting import wait_for

LEASE = BY_PATH[("coordination.k8s.io", "v1", "leases")]
FAST = dict(lease_duration=2.0, renew_deadline=1.5, retry_period=0.1)


@pytest.fixture
def connect(kubesim, tmp_path):
    path = tmp_path / "kubeconfig"
    kubesim.write_kubeconfig(str(path))
    made = []

    def client(**kwargs) -> KubeClient:
        made.append(KubeClient.connect(str(path), **kwargs))
        return made[-1]

    yield client
    for one in made:
        one.close()


class Candidate:
    """One elector with its fence, counting how often it was told it leads or lost."""

    def __init__(self, connect, identity: str, **settings) -> None:
        self.fence = LeaderFence()
        self.led = threading.Event()
        self.lost = threading.Event()
        self.elector = LeaderElector(connect(), ElectionSettings(identity, **{**FAST, **settings}), self.fence,
                                     on_lead=self.led.set, on_lost=self.lost.set).start()

    @property
    def leading(self) -> bool:
        return self.elector.status().leading


def _lease(kubesim) -> dict:
    found = [lease for lease in kubesim.objects("leases") if lease["metadata"]["name"] == "yunikorn-scheduler"]
    return found[0]["spec"] if found else {}


def test_of_two_candidates_exactly_one_leads_and_only_its_fence_opens(kubesim, connect):
    # A renew deadline of seconds: the leader's fence stays open even if a loaded machine stalls its renewals.
    unhurried = dict(lease_duration=10.0, renew_deadline=8.0)
    a, b = Candidate(connect, "a", **unhurried), Candidate(connect, "b", **unhurried)
    try:
        wait_for(lambda: a.led.is_set() or b.led.is_set(), timeout=10, message="a leader")
        leader, standby = (a, b) if a.led.is_set() else (b, a)
        wait_for(lambda: standby.elector.status().leader == leader.elector.status().identity, timeout=5,
                 message="the standby seeing the leader")
        assert leader.fence.is_open() and not standby.fence.is_open()
        assert not standby.led.is_set() and not standby.leading
        spec = _lease(kubesim)
        assert spec["holderIdentity"] == leader.elector.status().identity
        assert spec["leaseDurationSeconds"] == 10 and spec["leaseTransitions"] == 0
    finally:
        a.elector.stop(release=False)
        b.elector.stop(release=False)


def test_release_hands_over_at_once_and_counts_a_transition(kubesim, connect):
    a = Candidate(connect, "a", lease_duration=60.0, renew_deadline=30.0)
    wait_for(a.led.is_set, timeout=10, message="a leading")
    b = Candidate(connect, "b", lease_duration=60.0, renew_deadline=30.0)
    try:
        wait_for(lambda: b.elector.status().leader == "a", timeout=5, message="b seeing a lead")
        a.elector.stop(release=True)
        assert not a.fence.is_open()
        wait_for(b.led.is_set, timeout=5, message="b leading long before the 60 s lease would expire")
        spec = _lease(kubesim)
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("b", 1)
    finally:
        b.elector.stop(release=False)


def test_failed_renewals_close_the_fence_within_the_renew_deadline(kubesim, connect):
    a = Candidate(connect, "a")
    try:
        wait_for(a.led.is_set, timeout=10, message="a leading")
        kubesim.faults.fail(verb="renew", resource="leases", count=None)
        wait_for(a.lost.is_set, timeout=5, message="a losing the lease")
        assert not a.fence.is_open() and not a.leading
        assert _lease(kubesim)["holderIdentity"] == "a"  # nobody released or took it
    finally:
        kubesim.faults.clear()
        a.elector.stop()


def test_a_candidate_does_not_take_a_lease_renewed_within_its_duration(kubesim, connect):
    # a loses the lease 1.5 s (its renew deadline) after its last renewal, b may take it 5 s after it first
    # saw it: the gap is wide enough for a test thread descheduled a while on a loaded machine.
    a = Candidate(connect, "a", lease_duration=5.0)
    try:
        wait_for(a.led.is_set, timeout=10, message="a leading")
        kubesim.faults.fail(verb="renew", resource="leases", count=None)  # a's renewals fail, b's takeover not
        b = Candidate(connect, "b", lease_duration=5.0)
        try:
            wait_for(a.lost.is_set, timeout=5, message="a losing the lease")
            assert not b.led.is_set()  # the lease has not expired yet as b measures it
            wait_for(b.led.is_set, timeout=10, message="b taking the expired lease")
            assert (_lease(kubesim)["holderIdentity"], _lease(kubesim)["leaseTransitions"]) == ("b", 1)
        finally:
            b.elector.stop(release=False)
    finally:
        kubesim.faults.clear()
        a.elector.stop(release=False)


# The leader renews every 4 s: a leader that noticed only when renewing would keep writing for up to 4 s,
# one that notices on its watch stops well within ``NOTICED`` s even on a loaded machine.
WATCHED = dict(lease_duration=6.0, renew_deadline=5.0, retry_period=4.0)
NOTICED = 2.5


def _leader_and_standby(connect) -> tuple[Candidate, Candidate]:
    a = Candidate(connect, "a", **WATCHED)
    wait_for(a.led.is_set, timeout=10, message="a leading")
    b = Candidate(connect, "b", **WATCHED)
    wait_for(lambda: b.elector.status().leader == "a", timeout=5, message="b seeing a lead")
    return a, b


def test_a_deleted_lease_closes_the_leaders_fence_at_once_and_the_standby_waits_a_lease_duration(kubesim, connect):
    a, b = _leader_and_standby(connect)
    try:
        wait_for(lambda: _lease(kubesim)["renewTime"] != _lease(kubesim)["acquireTime"], timeout=5,
                 message="a renewing")
        kubesim.store.delete(LEASE, "default", "yunikorn-scheduler")
        deleted = time.monotonic()
        wait_for(lambda: not a.fence.is_open(), timeout=NOTICED, message="a's fence closing at the deletion")
        wait_for(a.lost.is_set, timeout=NOTICED, message="a losing the lease")
        wait_for(b.led.is_set, timeout=10, message="b taking the vanished lease")
        # b last saw a renewal at most a retry period before the deletion, and waits a lease duration from it.
        assert time.monotonic() - deleted >= WATCHED["lease_duration"] - WATCHED["retry_period"]
        assert _lease(kubesim)["holderIdentity"] == "b"
    finally:
        a.elector.stop(release=False)
        b.elector.stop(release=False)


def test_a_lease_rewritten_to_name_the_standby_closes_the_leaders_fence_and_is_held_for_a_duration(kubesim, connect):
    a, b = _leader_and_standby(connect)
    try:
        lease = kubesim.objects("leases")[0]
        lease["spec"]["holderIdentity"] = "b"
        kubesim.store.replace(LEASE, "default", "yunikorn-scheduler", lease, None)
        rewritten = time.monotonic()
        wait_for(lambda: not a.fence.is_open(), timeout=NOTICED, message="a's fence closing at the rewrite")
        wait_for(a.lost.is_set, timeout=NOTICED, message="a losing the lease")
        wait_for(b.led.is_set, timeout=10, message="b taking the lease once it was not renewed for its duration")
        assert time.monotonic() - rewritten >= WATCHED["lease_duration"]
        spec = _lease(kubesim)
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("b", 1)
    finally:
        a.elector.stop(release=False)
        b.elector.stop(release=False)


def test_the_fence_refuses_every_write_of_a_client_that_does_not_lead(kubesim, connect):
    kubesim.seed_nodes(1)
    fence = LeaderFence()
    client = connect(fence=fence)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    with pytest.raises(Fenced):
        client.request("POST", "/api/v1/namespaces/default/pods", body=pod)
    assert client.request("GET", "/api/v1/namespaces/default/pods")["items"] == []  # reads pass
    fence.open_until(float("inf"))
    client.request("POST", "/api/v1/namespaces/default/pods", body=pod)
    fence.close()
    with pytest.raises(BindError, match="not the leader"):
        client.bind("default", "p", "node-00000")
    with pytest.raises(Fenced):
        client.delete_pod("default", "p", kubesim.objects("pods")[0]["metadata"]["uid"])
    assert not kubesim.objects("pods")[0]["spec"].get("nodeName")
    assert not [r for r in kubesim.request_log if r.verb in ("delete",) or r.subresource == "binding"]


def test_the_fence_closes_by_itself_at_its_deadline():
    now = [100.0]
    fence = LeaderFence(clock=lambda: now[0])
    fence.open_until(110.0)
    with fence.admit("POST", "/x"):
        pass
    now[0] = 110.0
    with pytest.raises(Fenced), fence.admit("POST", "/x"):
        pass


def test_close_waits_for_the_writes_under_way():
    fence = LeaderFence()
    fence.open_until(float("inf"))
    entered, finish = threading.Event(), threading.Event()

    def write() -> None:
        with fence.admit("POST", "/x"):
            entered.set()
            finish.wait(5)

    writer = threading.Thread(target=write)
    writer.start()
    entered.wait(5)
    assert fence.close(wait=0.05) is False  # still on the wire
    finish.set()
    assert fence.close(wait=5) is True
    writer.join()


@pytest.mark.parametrize("flags, message", [
    (["--leader-elect", "--leader-elect-lease-duration", "10s"], "longer than the renew deadline"),
    (["--leader-elect", "--leader-elect-retry-period", "9s"], "1.2 times the retry period"),
    (["--leader-elect", "--leader-elect-lease-duration", "soon"], "not a duration"),
    (["--leader-elect", "--leader-elect-renew-deadline", "0s"], "must be positive"),
    (["--leader-elect", "--embedded"], "--embedded runs a cluster of its own"),
])
def test_bad_leader_election_flags_are_refused(flags, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse_args(flags)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_leader_election_flags_take_go_durations_and_the_pod_name(monkeypatch):
    monkeypatch.setenv("POD_NAME", "yunikorn-scheduler-7d9f-abcde")
    args = parse_args(["--leader-elect", "--leader-elect-lease-duration", "1m30s", "--leader-elect-renew-deadline",
                       "500ms", "--leader-elect-retry-period", "0.2", "--namespace", "yk",
                       "--leader-elect-resource-name", "ha"])
    assert args.election == ElectionSettings("yunikorn-scheduler-7d9f-abcde", "yk", "ha", 90.0, 0.5, 0.2,
                                             ("yk", "yunikorn-scheduler-7d9f-abcde"))
    assert parse_args([]).election is None
    monkeypatch.delenv("POD_NAME")
    first, second = parse_args(["--leader-elect"]).election, parse_args(["--leader-elect"]).election
    assert first.identity != second.identity  # two processes on one host are two candidates
    assert (first.lease_duration, first.renew_deadline, first.retry_period) == (15.0, 10.0, 2.0)


def test_a_standby_waits_on_a_watch_so_a_release_is_taken_before_its_next_try(kubesim, connect):
    slow = dict(lease_duration=60.0, renew_deadline=30.0, retry_period=10.0)  # the next try is 10 s away
    a = Candidate(connect, "a", **slow)
    wait_for(a.led.is_set, timeout=10, message="a leading")
    b = Candidate(connect, "b", **slow)
    try:
        wait_for(lambda: b.elector.status().leader == "a", timeout=5, message="b seeing a lead")
        a.elector.stop(release=True)
        wait_for(b.led.is_set, timeout=5, message="b woken by the release, well before its next try")
        assert _lease(kubesim)["holderIdentity"] == "b"
    finally:
        b.elector.stop(release=False)
    stopped = threading.Thread(target=Candidate(connect, "c", **slow).elector.stop)
    stopped.start()  # a standby waiting on its watch stops at once too
    stopped.join(5)
    assert not stopped.is_alive()
