"""The simulator tells the truth: the same small trace on the virtual clock and for real (the scheduler on
kubesim, whose kubelets run each pod for its duration, in real time) places the pods of each queue in
the same order, and each pod waits as long, within ``TOLERANCE`` seconds (measured: within 0.05 s on an
idle machine).

The trace on time is pinned on the virtual clock; the comparison replays, on the virtual clock, the
arrivals and run times the real run had (a loaded machine creates a pod late, and hears of its end
late), so that what is compared is the scheduler's decisions. The trace keeps its decisions apart (no
two within half a second), so that the latencies of a real run move times a little but never reorder
them; the tolerance covers those latencies."""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest

from actors.core.partition import Timing
from kubesim import KubeSim
from kubesim.kubelet import RUN_SECONDS
from tests import queues as built
from tests.shim.cluster import Cluster
from tests.simulator.simrun import run
from tests.waiting import wait_for

TOLERANCE = 1.0  # seconds between a pod's wait on the virtual clock and for real
QUEUES = built.config(built.queue("a"), built.queue("b"))
NODE = {"count": 1, "cpu": "2", "memory": "4Gi", "name": "node"}
# (submit, app, queue, pods, cpu, duration): a1 fills the node; b1 and a2 wait for it; a3 needs the whole
# node and reserves it once it has waited 2 s, so b2, arriving after that, waits for a3 to end.
TRACE = [(0.0, "a1", "root.a", 2, "1", 4.0), (1.0, "b1", "root.b", 1, "1", 3.0), (2.0, "a2", "root.a", 1, "1", 2.5),
         (3.0, "a3", "root.a", 1, "2", 2.0), (6.0, "b2", "root.b", 1, "1", 1.5)]


def trace_lines(submitted: dict[str, float] | None = None, ran: dict[str, float] | None = None):
    """The trace; or as a real run went: ``submitted``, when each application's first pod was created,
    ``ran``, how long its pods ran (a loaded machine creates pods late and tells their end late)."""
    submitted, ran = submitted or {}, ran or {}
    return [{"submit": round(submitted.get(app, submit), 3), "app": app, "queue": queue, "user": "u1",
             "pods": [{"count": count, "cpu": cpu, "memory": "1Gi", "duration": round(ran.get(app, duration), 3)}]}
            for submit, app, queue, count, cpu, duration in TRACE]


@pytest.fixture
def real_time_cluster(tmp_path):
    """kubesim whose kubelets run pods at once, for their real durations."""
    sim = KubeSim(bookmark_interval=0.2, kubelet_delay=0.0, time_factor=1.0).start()
    path = tmp_path / "kubeconfig"
    sim.write_kubeconfig(str(path))
    made = Cluster(sim, str(path))
    yield made
    made.close()
    sim.stop()


def real_run(cluster: Cluster) -> dict[str, tuple[str, float, float, float]]:
    """pod -> (queue, submitted, bound, ended), in seconds from the trace's start."""
    cluster.configure(QUEUES)
    cluster.node("node-0", cpu=NODE["cpu"], memory=NODE["memory"])
    cluster.start_scheduler()
    submitted, bound, ended, queues = {}, {}, {}, {}
    done = threading.Event()

    def watch(start: float) -> None:
        while not done.is_set():
            now = time.monotonic() - start
            for name, pod in cluster.pods().items():
                if name not in bound and pod.get("spec", {}).get("nodeName"):
                    bound[name] = now
                if name not in ended and pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                    ended[name] = now
            done.wait(0.01)

    start = time.monotonic()
    watcher = threading.Thread(target=watch, args=(start,), daemon=True)
    watcher.start()
    try:
        for submit, app, queue, count, cpu, duration in TRACE:
            # The workload's own schedule: each application is created at its submit time.
            delay = start + submit - time.monotonic()
            if delay > 0:
                done.wait(delay)
            for i in range(count):
                name = f"{app}-0-{i}"
                cluster.core_api.create_namespaced_pod("default", {
                    "metadata": {"name": name, "labels": {"applicationId": app, "queue": queue},
                                 "annotations": {RUN_SECONDS: f"{duration}s"}},
                    "spec": {"schedulerName": "yunikorn", "restartPolicy": "Never",
                             "containers": [{"name": "main", "image": "busybox",
                                             "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}})
                submitted[name], queues[name] = time.monotonic() - start, queue
        wait_for(lambda: len(ended) == len(submitted), timeout=40, message="every pod bound and ended")
    finally:
        done.set()
        watcher.join()
    return {name: (queues[name], submitted[name], bound[name], ended[name]) for name in submitted}


def test_the_virtual_clock_and_real_time_agree(real_time_cluster):
    # As the cluster's scheduler: timers every 0.2 s, applications completing after 0.5 s.
    settings = {"tick": 0.2, "timing": Timing(completing=0.5, retention=60.0)}
    on_time = run(QUEUES, [NODE], trace_lines(), **settings)
    assert {p.key: p.wait for p in on_time.pods} == {
        "a1-0-0": 0.0, "a1-0-1": 0.0, "b1-0-0": 3.0, "a2-0-0": 2.0, "a3-0-0": 4.0, "b2-0-0": 3.0}
    real = real_run(real_time_cluster)
    # The virtual run replays the arrivals and run times as they happened.
    app_of = {name: name.rsplit("-", 2)[0] for name in real}
    submitted = {app_of[name]: at for name, (_, at, _, _) in sorted(real.items(), key=lambda item: -item[1][1])}
    ran = {app_of[name]: end - bound for name, (_, _, bound, end) in sorted(real.items(),
                                                                        key=lambda item: item[1][3] - item[1][2])}
    virtual = run(QUEUES, [NODE], trace_lines(submitted, ran), **settings)
    # Pods of one application are alike (the binder may bind them in either order): compared by application.
    real_order = defaultdict(list)
    for name, (queue, _, _, _) in sorted(real.items(), key=lambda item: item[1][2]):
        real_order[queue].append(name.rsplit("-", 2)[0])
    virtual_order = {queue: [key.rsplit("-", 2)[0] for key in keys] for queue, keys in virtual.placements.items()}
    assert dict(real_order) == virtual_order == {"root.a": ["a1", "a1", "a2", "a3"], "root.b": ["b1", "b2"]}
    waits = {p.key: p.wait for p in virtual.pods}
    for name, (_, created, at, _) in real.items():
        assert abs((at - created) - waits[name]) <= TOLERANCE, (name, at - created, waits[name])
