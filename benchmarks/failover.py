"""Failover: seconds from the leader's death to the warm standby's first bind, and to every pod bound.

kubesim runs as a subprocess with ``--nodes`` nodes and ``--running`` pods already bound to them. For
each case, two ``yunikorn-scheduler --leader-elect`` processes start (the first leads and recovers, the
second stands by until its caches are warm), ``--pending`` new pods arrive, and once a third of them
are bound the leader is killed: ``kill9`` (SIGKILL: the standby waits for the Lease to expire) or
``sigterm`` (the leader releases the Lease). A watch on the pods and the Lease times every bind and the
takeover. Printed per case: seconds from the kill to the Lease's takeover, to the standby's first bind,
and to all pods bound, beside the goals (lease duration + 3 s after SIGKILL, 3 s after SIGTERM).

    python benchmarks/failover.py                                   # 5,000 nodes, 50,000 + 5,000 pods
    python benchmarks/failover.py --nodes 500 --running 5000 --pending 500
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPAWN = multiprocessing.get_context("spawn")
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from benchmarks_common import load_client  # noqa: E402
from e2e_throughput import queues_yaml, start_kubesim  # noqa: E402
from recovery import create_range  # noqa: E402

from actors.shim.client import KubeClient  # noqa: E402

GOAL_AFTER_SIGTERM = 3.0
GOAL_AFTER_EXPIRY = 3.0  # beyond the lease duration


def pending_pod(case: str, index: int) -> dict:
    queue = index % 10
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{case}-{index:06d}", "namespace": "default",
                         "labels": {"queue": f"root.q{queue}", "applicationId": f"{case}-{queue}",
                                    "failover": case}},
            "spec": {"schedulerName": "yunikorn",
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}


def create_pending(kubeconfig: str, case: str, start: int, stop: int) -> None:
    client = load_client(kubeconfig, pool_size=8)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: client.request_retrying("POST", "/api/v1/namespaces/default/pods",
                                                        body=pending_pod(case, i)), range(start, stop)))
    client.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Candidate:
    """One scheduler process with leader election."""

    def __init__(self, kubeconfig: str, name: str, lease: str, args: argparse.Namespace, logs: Path) -> None:
        self.name = name
        self.port = free_port()
        self._log = open(logs / f"{name}.log", "ab")  # noqa: SIM115 - closed in stop
        self.process = subprocess.Popen(
            [sys.executable, "-m", "actors.cli", "--kubeconfig", kubeconfig, "--rest-host", "127.0.0.1",
             "--rest-port", str(self.port), "--log-level", os.environ.get("FAILOVER_LOG_LEVEL", "WARNING"), "--leader-elect",
             f"--leader-elect-lease-duration={args.lease_duration}s",
             f"--leader-elect-renew-deadline={args.renew_deadline}s",
             f"--leader-elect-retry-period={args.retry_period}s", f"--leader-elect-resource-name={lease}"],
            cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(REPO), "POD_NAME": name})

    def readiness(self) -> dict:
        if self.process.poll() is not None:
            raise SystemExit(f"{self.name} exited with {self.process.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/ws/v1/health/ready", timeout=5) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as error:
            return json.loads(error.read())
        except OSError:
            return {}

    def wait(self, condition, what: str, timeout: float = 1800) -> None:
        deadline = time.monotonic() + timeout
        while not condition(self.readiness()):
            if time.monotonic() > deadline:
                raise SystemExit(f"{self.name}: no {what} within {timeout} s")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


class Timeline:
    """Watches the case's pods and the Lease: when each pod was first bound, when the Lease changed hands."""

    def __init__(self, client: KubeClient, case: str, lease: str) -> None:
        self.binds: dict[str, float] = {}
        self.takeovers: dict[str, float] = {}  # holder -> when it took the Lease
        self._case, self._lease_name = case, lease
        self._lock = threading.Lock()
        self._streams = []
        for path, handle in (("/api/v1/namespaces/default/pods", self._pod),
                             ("/apis/coordination.k8s.io/v1/namespaces/default/leases", self._lease)):
            version = client.request("GET", path, query=[("limit", "1")])["metadata"]["resourceVersion"]
            stream = client.watch(path, version, timeout_seconds=3600, read_timeout=3700)
            self._streams.append(stream)
            threading.Thread(target=self._follow, args=(stream, handle), daemon=True).start()

    @staticmethod
    def _follow(stream, handle) -> None:
        for _, obj in stream:
            handle(obj)

    def _pod(self, pod: dict) -> None:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if labels.get("failover") == self._case and (pod.get("spec") or {}).get("nodeName"):
            with self._lock:
                self.binds.setdefault(pod["metadata"]["name"], time.monotonic())

    def _lease(self, lease: dict) -> None:
        if lease.get("metadata", {}).get("name") != self._lease_name:
            return
        holder = (lease.get("spec") or {}).get("holderIdentity") or ""
        with self._lock:
            self.takeovers.setdefault(holder, time.monotonic())

    def bound(self) -> int:
        with self._lock:
            return len(self.binds)

    def close(self) -> None:
        for stream in self._streams:
            stream.close()


def run_case(case: str, kubeconfig: str, client: KubeClient, args: argparse.Namespace, logs: Path) -> dict:
    lease = f"failover-{case}"
    leader = Candidate(kubeconfig, f"{case}-a", lease, args, logs)
    standby = None
    try:
        began = time.monotonic()
        leader.wait(lambda ready: ready.get("ready") is True, "leadership and recovery")
        print(f"  {case}: leader running after {time.monotonic() - began:.1f} s", flush=True)
        standby = Candidate(kubeconfig, f"{case}-b", lease, args, logs)
        began = time.monotonic()
        standby.wait(lambda ready: ready.get("warm") is True, "warm standby")
        print(f"  {case}: standby warm after {time.monotonic() - began:.1f} s", flush=True)
        timeline = Timeline(client, case, lease)
        share = -(-args.pending // args.creators)
        creators = [SPAWN.Process(target=create_pending, args=(
            kubeconfig, case, i * share, min(args.pending, (i + 1) * share))) for i in range(args.creators)]
        for creator in creators:
            creator.start()
        deadline = time.monotonic() + 1800
        while timeline.bound() < args.pending // 3:
            if time.monotonic() > deadline:
                raise SystemExit(f"{case}: {timeline.bound()} pods bound before the kill; expected {args.pending // 3}")
            time.sleep(0.01)
        killed = time.monotonic()
        leader.process.send_signal(signal.SIGKILL if case == "kill9" else signal.SIGTERM)
        bound_at_kill = timeline.bound()
        for creator in creators:
            creator.join()
        deadline = time.monotonic() + 1800
        while timeline.bound() < args.pending:
            if time.monotonic() > deadline:
                raise SystemExit(f"{case}: only {timeline.bound()} of {args.pending} pods bound")
            time.sleep(0.05)
        timeline.close()
        taken = timeline.takeovers.get(standby.name)
        first = min(at for at in timeline.binds.values() if taken is not None and at >= taken)
        leader_exit = leader.process.wait(timeout=120)
        return {"case": case, "bound_at_kill": bound_at_kill, "takeover": taken - killed, "first_bind": first - killed,
                "all_bound": max(timeline.binds.values()) - killed, "leader_exit": leader_exit}
    finally:
        if standby is not None:
            standby.stop()
        leader.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--running", type=int, default=50_000, help="pods already bound (default 50,000)")
    parser.add_argument("--pending", type=int, default=5000, help="pods arriving around the kill (default 5,000)")
    parser.add_argument("--lease-duration", type=float, default=15.0)
    parser.add_argument("--renew-deadline", type=float, default=10.0)
    parser.add_argument("--retry-period", type=float, default=2.0)
    parser.add_argument("--cases", default="kill9,sigterm", help="kill9, sigterm or both (default both)")
    parser.add_argument("--creators", type=int, default=2, help="creator processes")
    args = parser.parse_args()
    cases = [case for case in args.cases.split(",") if case]
    if not cases or set(cases) - {"kill9", "sigterm"}:
        parser.error("--cases takes kill9 and/or sigterm")

    with tempfile.TemporaryDirectory() as scratch:
        kubeconfig = str(Path(scratch) / "kubeconfig")
        sim = start_kubesim(args.nodes, kubeconfig)
        results = []
        try:
            began = time.monotonic()
            share = -(-args.running // args.creators)
            creators = [SPAWN.Process(target=create_range, args=(
                kubeconfig, i * share, min(args.running, (i + 1) * share), args.nodes, 5)) for i in range(args.creators)]
            for creator in creators:
                creator.start()
            for creator in creators:
                creator.join()
            print(f"cluster prepared: {args.nodes} nodes, {args.running} running pods in "
                  f"{time.monotonic() - began:.1f} s", flush=True)
            client = KubeClient.connect(kubeconfig, pool_size=8)
            client.request("POST", "/api/v1/namespaces/default/configmaps", body={
                "metadata": {"name": "yunikorn-configs"}, "data": {"queues.yaml": queues_yaml(10)}})
            for case in cases:
                results.append(run_case(case, kubeconfig, client, args, Path(os.environ.get("FAILOVER_LOGS", scratch))))
            client.close()
        finally:
            sim.terminate()
            sim.wait()
    print(f"\nfailover at {args.nodes} nodes, {args.running} running pods, {args.pending} pending "
          f"(lease {args.lease_duration:g} s, renew deadline {args.renew_deadline:g} s, retry {args.retry_period:g} s)")
    for result in results:
        goal = GOAL_AFTER_SIGTERM if result["case"] == "sigterm" else args.lease_duration + GOAL_AFTER_EXPIRY
        print(f"{result['case']:>8}: {result['bound_at_kill']} bound at the kill (leader exit {result['leader_exit']}); "
              f"lease taken over after {result['takeover']:.1f} s, first bind after {result['first_bind']:.1f} s "
              f"(goal <= {goal:g} s, ratio {result['first_bind'] / goal:.2f}), all bound after "
              f"{result['all_bound']:.1f} s")


if __name__ == "__main__":
    main()
