"""Two scheduler processes with leader election on one kubesim: one leads, the other stands by warm;
the standby takes over on SIGTERM (released Lease), on kill -9 (expired Lease), and when the leader's
renewals fail (it stops writing and exits before the standby starts). Throughout: every pod bound
exactly once, none lost, no queue beyond its maximum, the core agreeing with the cluster."""

from __future__ import annotations

import contextlib
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest

from actors.shim.election import LEADER_LABEL
from kubesim.resources import BY_PATH, POD
from tests.queues import config, queue
from tests.reliability.invariants import HEALTH_ON_READ, assert_invariants, get_json
from tests.reliability.process import SchedulerProcess
from tests.reliability.wiretap import WireTap
from tests.reliability.workload import burst
from tests.waiting import wait_for

pytestmark = pytest.mark.slow  # scheduler processes killed, leases expiring

# Short leases, so a takeover after expiry costs seconds.
FAST = ("--leader-elect", "--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "1500ms",
        "--leader-elect-retry-period", "0.25s", "--bind-workers", "4")
CAPPED_CONFIG = config(queue("open"), queue("capped", max={"vcore": 3}), create=False)
EXPECTED = (53, 7)  # (bound, pending) of ``_workload``: 2 oversized and 5 beyond the capped queue's maximum


def _find_lease(cluster) -> dict:
    leases = [lease for lease in cluster.sim.objects("leases") if lease["metadata"]["name"] == "yunikorn-scheduler"]
    return leases[0] if leases else {}


def _holder(cluster) -> str:
    return (_find_lease(cluster).get("spec") or {}).get("holderIdentity") or ""


@contextlib.contextmanager
def _holders(cluster) -> Iterator[list[str]]:
    """The holders the Lease names in each write to it meanwhile, renewals by the same holder left out."""
    holders: list[str] = []
    last = [_holder(cluster)]

    def record(event) -> None:
        if event.kind.plural == "leases":
            holder = ((event.new or {}).get("spec") or {}).get("holderIdentity") or ""
            if holder != last[0]:
                holders.append(holder)
                last[0] = holder

    cluster.sim.store.listeners.append(record)
    try:
        yield holders
    finally:
        cluster.sim.store.listeners.remove(record)


def _leader_label(cluster, pod: str) -> str | None:
    found = [p for p in cluster.sim.objects("pods") if p["metadata"]["name"] == pod]
    return (found[0]["metadata"].get("labels") or {}).get(LEADER_LABEL)


def _pair(cluster, tmp_path, *extra: str, kubeconfigs: tuple[str, str] | None = None
          ) -> tuple[SchedulerProcess, SchedulerProcess]:
    """Start ``a``, wait until it leads, then start ``b`` and wait until it stands by with warm caches.
    Each runs as if in its pod (``POD_NAME``, the pod in kubesim), which it labels leader or not."""
    kubeconfig_a, kubeconfig_b = kubeconfigs or (cluster.kubeconfig, cluster.kubeconfig)
    for name in ("yunikorn-a", "yunikorn-b"):
        cluster.sim.store.create(POD, "default", {"metadata": {"name": name},
                                                  "spec": {"containers": [{"name": "main", "image": "busybox"}]}})
    started = [SchedulerProcess(kubeconfig_a, tmp_path / "a.log", *FAST, *extra, env={"POD_NAME": "yunikorn-a"})]
    try:
        started[0].wait_ready()
        started.append(SchedulerProcess(kubeconfig_b, tmp_path / "b.log", *FAST, *extra,
                                        env={"POD_NAME": "yunikorn-b"}))
        wait_for(lambda: started[1].readiness().get("warm"), timeout=60, interval=0.1, message="b standing by, warm")
    except BaseException:
        _stop_all(*started)
        raise
    return started[0], started[1]


def _pod_lists(cluster) -> int:
    return sum(1 for r in list(cluster.sim.request_log) if r.verb == "list" and r.resource == "pods")


def _setup(cluster) -> None:
    cluster.sim.seed_nodes(6, cpu="4")
    cluster.configure(CAPPED_CONFIG, **HEALTH_ON_READ)
    cluster.sim.faults.latency(verb="create", resource="pods/binding", seconds=0.02)  # binds in flight


def _workload(cluster, prefix: str) -> list[str]:
    """40 pods in an open queue (2 too big for any node) and 20 of 200m in a queue of at most 3 cores."""
    return (burst(cluster, prefix, 40, queue="root.open", oversized_every=20)
            + burst(cluster, f"{prefix}-capped", 20, queue="root.capped", cpu="200m"))


def _stop_all(*processes: SchedulerProcess) -> None:
    for process in processes:
        process.stop()


@pytest.mark.timeout(120)
def test_one_scheduler_leads_and_the_other_stands_by_warm(cluster, tmp_path):
    _setup(cluster)
    a, b = _pair(cluster, tmp_path)
    try:
        names = burst(cluster, "e", 30, queue="root.open", cpu="200m")
        cluster.wait_bound(*names, timeout=60)
        assert _holder(cluster) == "yunikorn-a"
        spec = _find_lease(cluster)["spec"]
        assert spec["leaseDurationSeconds"] == 2 and spec["leaseTransitions"] == 0
        assert spec["acquireTime"].endswith("Z") and spec["renewTime"] >= spec["acquireTime"]
        wait_for(lambda: _find_lease(cluster)["spec"]["renewTime"] > spec["renewTime"], timeout=10,
                 message="the leader renewing its lease")
        ready = b.readiness()
        assert ready["ready"] is False and ready["standby"] is True and ready["shimState"] == "Recovering"
        assert ready["warm"] is True
        assert ready["leader"] == "yunikorn-a" and ready["identity"] == "yunikorn-b"
        assert "standby" in ready["reason"]
        assert get_json(f"{b.url}/ws/v1/health/ready?standby=ready")["ready"] is True  # the kubelet's probe
        assert (_leader_label(cluster, "yunikorn-a"), _leader_label(cluster, "yunikorn-b")) == ("true", "false")
        assert a.readiness() | {"ready": True} == a.readiness() and a.readiness()["leader"] == "yunikorn-a"
        with urllib.request.urlopen(f"{b.url}/ws/v1/health/live", timeout=5) as response:
            assert response.status == 200
        assert 'yunikorn_leader{identity="yunikorn-a"} 1.0' in _metrics(a)
        assert 'yunikorn_leader{identity="yunikorn-b"} 0.0' in _metrics(b)
        found = assert_invariants(cluster.sim, a.url, timeout=30)
        assert found.bound == 30
    finally:
        _stop_all(b, a)


def _metrics(process: SchedulerProcess) -> str:
    with urllib.request.urlopen(f"{process.url}/ws/v1/metrics", timeout=10) as response:
        return response.read().decode()


@pytest.mark.timeout(120)
def test_sigterm_hands_the_lease_over_without_waiting_for_expiry(cluster, tmp_path):
    _setup(cluster)
    slow = ("--leader-elect-lease-duration", "60s", "--leader-elect-renew-deadline", "30s")  # later flags win
    a, b = _pair(cluster, tmp_path, *slow)
    try:
        lists = _pod_lists(cluster)
        names = _workload(cluster, "t")
        wait_for(lambda: sum(map(cluster.bound, names)) >= 15, timeout=60, message="binding under way")
        terminated = time.monotonic()
        assert a.stop() == 0, (tmp_path / "a.log").read_text()[-2000:]
        b.wait_ready(timeout=20)  # far less than the 60 s lease: the lease was released, not expired
        assert time.monotonic() - terminated < 30
        spec = _find_lease(cluster)["spec"]
        assert spec["holderIdentity"] == "yunikorn-b" and spec["leaseTransitions"] == 1
        assert (_leader_label(cluster, "yunikorn-a"), _leader_label(cluster, "yunikorn-b")) == ("false", "true")
        found = assert_invariants(cluster.sim, b.url, timeout=60)
        assert (found.bound, found.pending) == EXPECTED
        assert _pod_lists(cluster) == lists, "the standby listed pods again instead of using its caches"
    finally:
        _stop_all(b, a)


@pytest.mark.timeout(120)
def test_kill_9_of_the_leader_is_taken_over_after_the_lease_expires(cluster, tmp_path):
    _setup(cluster)
    a, b = _pair(cluster, tmp_path)
    try:
        lists = _pod_lists(cluster)
        names = _workload(cluster, "k")
        wait_for(lambda: sum(map(cluster.bound, names)) >= 15, timeout=60, message="binding under way")
        with _holders(cluster) as holders:
            a.kill()
            b.wait_ready(timeout=30)
        assert holders == ["yunikorn-b"]  # taken over from a, who released nothing
        assert _holder(cluster) == "yunikorn-b"
        found = assert_invariants(cluster.sim, b.url, timeout=60)
        assert (found.bound, found.pending) == EXPECTED
        assert _pod_lists(cluster) == lists, "the standby listed pods again instead of using its caches"
    finally:
        _stop_all(b, a)


@pytest.mark.timeout(120)
def test_a_leader_whose_renewals_fail_stops_binding_before_the_standby_starts(cluster, tmp_path):
    _setup(cluster)
    # The gap between the renew deadline (1.5 s) and the lease duration is the margin within which the
    # deposed leader must notice and exit: a few seconds, so that a process descheduled for a second on a
    # loaded machine still exits first.
    lease_duration = ("--leader-elect-lease-duration", "5s")
    a, b = _pair(cluster, tmp_path, *lease_duration)
    timeline: list[tuple[float, str, str]] = []  # (time, what, detail) as the cluster sees it
    lock = threading.Lock()

    def record(event) -> None:
        new = event.new or {}
        if event.kind.plural == "leases":
            with lock:
                timeline.append((time.monotonic(), "lease", (new.get("spec") or {}).get("holderIdentity") or ""))
        elif event.kind.plural == "pods" and (new.get("spec") or {}).get("nodeName") and \
                not ((event.old or {}).get("spec") or {}).get("nodeName"):
            with lock:
                timeline.append((time.monotonic(), "bind", new["metadata"]["name"]))

    cluster.sim.store.listeners.append(record)
    try:
        names = _workload(cluster, "f")
        wait_for(lambda: sum(map(cluster.bound, names)) >= 10, timeout=60, message="binding under way")
        cluster.sim.faults.fail(verb="renew", resource="leases", count=None)
        assert a.process.wait(timeout=30) == 3, (tmp_path / "a.log").read_text()[-2000:]
        a_gone = time.monotonic()
        b.wait_ready(timeout=30)
        with lock:
            taken = next(at for at, what, detail in timeline if what == "lease" and detail == "yunikorn-b")
        assert a_gone < taken, "the standby took the lease while the deposed leader still ran"
        found = assert_invariants(cluster.sim, b.url, timeout=60)
        assert (found.bound, found.pending) == EXPECTED
        assert sum(1 for _, what, _ in timeline if what == "bind") == found.bound  # each bound once
    finally:
        cluster.sim.store.listeners.remove(record)
        cluster.sim.faults.clear()
        _stop_all(b, a)


def _delete_lease(cluster) -> None:
    cluster.sim.store.delete(BY_PATH[("coordination.k8s.io", "v1", "leases")], "default", "yunikorn-scheduler")


def _name_the_standby(cluster) -> None:
    lease = _find_lease(cluster)
    lease["spec"]["holderIdentity"] = "yunikorn-b"
    cluster.sim.store.replace(BY_PATH[("coordination.k8s.io", "v1", "leases")], "default", "yunikorn-scheduler",
                              lease, None)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("disturb", [_delete_lease, _name_the_standby], ids=["deleted", "names-the-standby"])
def test_a_lease_taken_from_the_leader_stops_its_writes_before_the_standby_writes(cluster, tmp_path, disturb):
    """Each process reaches kubesim through its own tap, so every write is counted with its writer."""
    cluster.sim.seed_nodes(10, cpu="4")
    cluster.configure(CAPPED_CONFIG, **HEALTH_ON_READ)
    cluster.sim.faults.latency(verb="create", resource="pods/binding", seconds=0.1)  # 40 binds/s: still binding
    # A leader that noticed only when renewing would write on for up to 2 s after a change right after a renewal.
    # The lease and renew deadline long enough that a loaded machine does not depose the leader before the
    # test does (its renewals time out at half the renew deadline).
    slow_renewals = ("--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "5s",
                     "--leader-elect-retry-period", "2s")
    upstream = (cluster.sim.host, cluster.sim.port)
    taps = WireTap(upstream), WireTap(upstream)
    kubeconfigs = tuple(tap.write_kubeconfig(cluster.sim.kubeconfig(), tmp_path / f"kubeconfig-{name}")
                        for tap, name in zip(taps, "ab", strict=True))
    a, b = _pair(cluster, tmp_path, *slow_renewals, kubeconfigs=kubeconfigs)
    try:
        names = burst(cluster, "w", 300, queue="root.open", cpu="100m")
        wait_for(lambda: sum(map(cluster.bound, names)) >= 20, timeout=60, message="binding under way")
        renewed = _find_lease(cluster)["spec"]["renewTime"]
        wait_for(lambda: _find_lease(cluster)["spec"]["renewTime"] != renewed, timeout=10, interval=0.01,
                 message="a renewal")
        assert _holder(cluster) == "yunikorn-a", "the leader lost the Lease before the test took it"
        disturbed = time.monotonic()
        disturb(cluster)
        assert a.process.wait(timeout=30) == 3, (tmp_path / "a.log").read_text()[-2000:]
        b.wait_ready(timeout=30)
        found = assert_invariants(cluster.sim, b.url, timeout=60)
        assert found.bound == len(names)
        own_pod_or_lease = r"/leases/|/pods/yunikorn-[ab]$"
        late = taps[0].writes_since(disturbed, excluding=own_pod_or_lease)
        taken = taps[1].writes_since(disturbed, excluding=own_pod_or_lease)
        # Only what the leader had sent as it saw the change on its watch (those reach the proxy a moment
        # later; a second at most on a loaded machine), not what it would send until its next renewal 2 s on.
        assert all(w.at - disturbed < 1.0 for w in late), late
        assert taken and max((w.at for w in late), default=disturbed) < min(w.at for w in taken)
        # The standby waited a lease duration since it last saw the Lease change (a retry period before, at worst).
        assert min(w.at for w in taken) - disturbed >= 1.5, [(w.at - disturbed, w.method, w.path) for w in taken[:5]]
    finally:
        _stop_all(b, a)
        for tap in taps:
            tap.close()
