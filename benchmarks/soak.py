"""Soak: the reliability suite's faults in rounds for a given time, against the real scheduler process.

kubesim runs in this process; the scheduler (``yunikorn-scheduler``) runs as a subprocess against it.
Each round injects one kind of fault (failed, throttled or late binds, cut or expired watches, slow
lists, a configmap flapping between good and hostile configurations, a SIGKILL of the scheduler and a
restart) while a burst of pods arrives, then checks the invariants of ``tests/reliability`` (every pod
bound once or pending with a reason, no node or queue over its limit, the core's view equal to the
cluster's, health green) and completes the bound pods. During most rounds a separate process measures
the scheduler's REST latency with 200 concurrent keep-alive connections on loopback (a bounded number
of requests each). At the end it prints the faults injected, the pod counts and the REST percentiles;
lost, double-bound, over-committed and the other broken invariants must all be 0.

    python benchmarks/soak.py                  # 3 minutes
    python benchmarks/soak.py --minutes 30 --seed 7
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kubesim import KubeSim  # noqa: E402
from tests.coreharness import OPEN_CONFIG  # noqa: E402
from tests.reliability.hostile import ALIAS_BOMB, DEEP_BRACKETS, HUGE_EXPONENT  # noqa: E402
from tests.reliability.invariants import HEALTH_ON_READ, Findings, survey  # noqa: E402
from tests.reliability.process import SchedulerProcess  # noqa: E402
from tests.reliability.workload import burst  # noqa: E402
from tests.shim.cluster import Cluster  # noqa: E402
from tests.waiting import wait_for  # noqa: E402

QUEUES = OPEN_CONFIG + "        queues:\n          - name: capped\n            resources: {max: {vcore: 2}}\n"
REST_PATHS = ("/ws/v1/partition/default/queues", "/ws/v1/partition/default/nodes", "/ws/v1/scheduler/healthcheck",
              "/ws/v1/clusters", "/ws/v1/partition/default/applications/active")
FAULTS = ("bind 500", "bind 429", "late bind 504", "watch cut", "watch 410", "slow list", "hostile config",
          "scheduler SIGKILL")


# ---- REST load (in its own process, so the client's threads do not share this one's interpreter) ----

def rest_load(port: int, connections: int, requests: int) -> tuple[list[float], int]:
    """``connections`` threads, each one keep-alive connection sending ``requests`` GETs; returns the
    latencies (seconds) and the number of failed requests."""
    latencies: list[float] = []
    failed = [0]
    barrier = threading.Barrier(connections)

    def client(index: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        barrier.wait()
        for n in range(requests):
            began = time.perf_counter()
            try:
                connection.request("GET", REST_PATHS[(index + n) % len(REST_PATHS)])
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    failed[0] += 1
                latencies.append(time.perf_counter() - began)
            except (OSError, http.client.HTTPException):
                failed[0] += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, failed[0]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


# ---- the soak ------------------------------------------------------------------------------------

class Soak:
    def __init__(self, args: argparse.Namespace, scratch: Path) -> None:
        self.args, self.scratch = args, scratch
        self.rng = random.Random(args.seed)
        self.sim = KubeSim(bookmark_interval=0.5, kubelet_delay=0.05).start()
        kubeconfig = scratch / "kubeconfig"
        self.sim.write_kubeconfig(str(kubeconfig))
        self.cluster = Cluster(self.sim, str(kubeconfig))
        self.sim.seed_nodes(args.nodes, cpu="4", memory="16Gi")
        self.cluster.configure(QUEUES, **HEALTH_ON_READ)
        self.scheduler = self.start_scheduler()
        self.injected: Counter = Counter()
        self.broken: Counter = Counter()  # invariant -> rounds that ended with it broken
        self.pods = 0
        self.latencies: list[float] = []
        self.rest_failures = 0

    def start_scheduler(self) -> SchedulerProcess:
        return SchedulerProcess(self.cluster.kubeconfig, self.scratch / "scheduler.log").wait_ready()

    # Rounds: inject, send a burst (``during`` runs between its waves), clear.
    def burst(self, round_no: int, during=None) -> None:
        per_wave = max(1, self.args.pods // 3)
        for wave in range(3):
            queue = "root.capped" if wave == 2 else None
            burst(self.cluster, f"r{round_no:04d}w{wave}", per_wave, apps=3, queue=queue, oversized_every=40,
                  rng=self.rng)
            self.pods += per_wave
            if during:
                during()

    def run_round(self, round_no: int, kind: str) -> None:
        faults, rng = self.sim.faults, self.rng
        if kind in ("bind 500", "bind 429", "late bind 504"):
            status = int(kind.split()[-1])
            faults.fail(verb="create", resource="pods/binding", status=status, count=rng.randint(5, 20),
                        apply_after=rng.choice([0.0, 0.2, 1.0]) if status == 504 else None)
            self.burst(round_no)
        elif kind == "watch cut":
            self.burst(round_no, during=lambda: self.count(kind, faults.drop_watches()))
        elif kind == "watch 410":
            def expire():
                faults.gone_next_watches(count=3)
                self.count(kind, 3)
                faults.drop_watches()
            self.burst(round_no, during=expire)
        elif kind == "slow list":
            lists = self.lists()
            faults.latency(verb="list", seconds=rng.choice([0.2, 0.5, 1.0]))
            self.burst(round_no, during=lambda: (faults.gone_next_watches(count=2), faults.drop_watches()))
            wait_for(lambda: self.lists() > lists, timeout=30, message="the informers listing again")
            self.count(kind, self.lists() - lists)
        elif kind == "hostile config":
            def flap():
                for text in (HUGE_EXPONENT, DEEP_BRACKETS, ALIAS_BOMB):
                    self.cluster.configure(text, **HEALTH_ON_READ)
                    self.count(kind)
                self.cluster.configure(QUEUES, **HEALTH_ON_READ)
            self.burst(round_no, during=flap)
        elif kind == "scheduler SIGKILL":
            at_wave, waves = rng.randrange(3), iter(range(3))

            def kill():
                if next(waves) != at_wave:
                    return
                self.scheduler.kill()
                self.count(kind)
                self.scheduler = SchedulerProcess(self.cluster.kubeconfig, self.scratch / "scheduler.log")
            self.burst(round_no, during=kill)
            self.scheduler.wait_ready()
        faults.clear()
        for code in (500, 429, 504):
            self.injected[f"bind {code}" if code != 504 else "late bind 504"] = self.bind_codes()[code]

    def count(self, kind: str, n: int = 1) -> None:
        self.injected[kind] += n

    def lists(self) -> int:
        return sum(1 for r in list(self.sim.request_log) if r.verb == "list")

    def bind_codes(self) -> Counter:
        return Counter(r.code for r in list(self.sim.request_log) if r.subresource == "binding")

    def settle(self, timeout: float) -> tuple[Findings, float]:
        """Wait for the invariants (up to ``timeout``); the last findings and the seconds it took."""
        began = time.monotonic()
        while True:
            try:
                found = survey(self.sim, self.scheduler.url)
            except OSError:  # the REST API of a restarting scheduler
                found = None
            if (found and found.ok) or time.monotonic() - began > timeout:
                return found or Findings(unhealthy=["REST API unreachable"]), time.monotonic() - began
            time.sleep(0.25)

    def finish_pods(self) -> None:
        """After a round's check, its bound pods end (their kubelet reports Succeeded) and its pending
        ones are deleted, so each round finds the same room; pods that ended earlier are deleted."""
        for pod in self.sim.objects("pods"):
            meta, phase = pod["metadata"], pod.get("status", {}).get("phase")
            if pod["spec"].get("nodeName") and phase != "Succeeded":
                self.sim.complete_pod(meta["namespace"], meta["name"])
            else:
                self.cluster.core_api.delete_namespaced_pod(meta["name"], meta["namespace"])

    def run(self) -> int:
        deadline = time.monotonic() + self.args.minutes * 60
        load, pending_load = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")), None
        kinds: list[str] = []
        round_no = 0
        try:
            while time.monotonic() < deadline:
                if not kinds:
                    kinds = self.rng.sample(FAULTS, len(FAULTS))
                kind = kinds.pop()
                if pending_load is None and kind != "scheduler SIGKILL":
                    pending_load = load.submit(rest_load, self.scheduler.port, self.args.connections,
                                               self.args.requests)
                began = time.monotonic()
                self.run_round(round_no, kind)
                if pending_load is not None and (kind == "scheduler SIGKILL" or pending_load.done()):
                    latencies, failed = pending_load.result()
                    if kind != "scheduler SIGKILL":
                        self.latencies += latencies
                        self.rest_failures += failed
                    pending_load = None
                found, waited = self.settle(self.args.settle)
                for name in ("lost", "double_bound", "over_committed", "view_mismatch", "unhealthy"):
                    if getattr(found, name):
                        self.broken[name] += len(getattr(found, name))
                print(f"round {round_no:3d}  {kind:<17} {time.monotonic() - began:5.1f} s  {found}"
                      + ("" if found.ok else "  <-- BROKEN"), flush=True)
                self.finish_pods()
                round_no += 1
            if pending_load is not None:
                latencies, failed = pending_load.result()
                self.latencies += latencies
                self.rest_failures += failed
        finally:
            load.shutdown()
            code = self.scheduler.stop()
            self.sim.stop()
        self.report(round_no, code)
        return 0 if not self.broken and code == 0 else 1

    def report(self, rounds: int, code: int) -> None:
        rows = [(f"faults injected: {kind}", self.injected[kind]) for kind in FAULTS]
        rows += [("rounds", rounds), ("pods", self.pods), ("lost", self.broken["lost"]),
                 ("double-bound", self.broken["double_bound"]), ("over-committed", self.broken["over_committed"]),
                 ("core/cluster mismatch", self.broken["view_mismatch"]), ("health failures", self.broken["unhealthy"]),
                 ("scheduler exit code (SIGTERM at the end)", code),
                 (f"REST requests ({self.args.connections} concurrent connections)", len(self.latencies)),
                 ("REST failed requests", self.rest_failures),
                 ("REST p50 latency (ms)", f"{percentile(self.latencies, 0.5) * 1000:.0f}"),
                 ("REST p99 latency (ms)", f"{percentile(self.latencies, 0.99) * 1000:.0f}")]
        width = max(len(name) for name, _ in rows)
        print()
        print(f"| {'what':<{width}} | value |")
        print(f"|{'-' * (width + 2)}|-------|")
        for name, value in rows:
            print(f"| {name:<{width}} | {value} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--pods", type=int, default=60, help="pods per round")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--connections", type=int, default=200, help="concurrent REST connections")
    parser.add_argument("--requests", type=int, default=10, help="REST requests per connection per measurement")
    parser.add_argument("--settle", type=float, default=60.0, help="seconds a round may take to settle")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="soak-") as scratch:
        return Soak(args, Path(scratch)).run()


if __name__ == "__main__":
    sys.exit(main())
