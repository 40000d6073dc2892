"""Memory under churn, with and without the history store: the scheduler command (a subprocess, as
deployed) against kubesim with ``--nodes`` nodes while pods are created at ``--rate`` per second (a new
application every 10 pods) and deleted once bound, so that applications keep finishing.

Prints the scheduler's RSS every ``--every`` seconds, then its slope after ``--warmup`` minutes (a
least-squares line, MB/min; the goal with the store is under 1) and, with the store, how many of the
finished applications it holds. ``--history-dsn none`` keeps finished applications in memory for the
retention, as upstream does: the same run shows that growth.

    python benchmarks/history_churn.py                            # 16 minutes, SQLite store
    python benchmarks/history_churn.py --minutes 5 --history-dsn none
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kubernetes import client as k8s  # noqa: E402

from actors.history.store import HistoryStore  # noqa: E402
from kubesim import KubeSim  # noqa: E402
from tests.coreharness import OPEN_CONFIG  # noqa: E402
from tests.reliability.process import SchedulerProcess  # noqa: E402
from tests.shim.cluster import Cluster  # noqa: E402

PODS_PER_APP = 10


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (minutes, MB) points, MB/min."""
    n = len(points)
    if n < 2:
        return 0.0
    mx, my = sum(p[0] for p in points) / n, sum(p[1] for p in points) / n
    var = sum((p[0] - mx) ** 2 for p in points)
    return sum((p[0] - mx) * (p[1] - my) for p in points) / var if var else 0.0


class Churn:
    def __init__(self, cluster: Cluster, rate: float) -> None:
        self.cluster, self.rate = cluster, rate
        self.created = self.deleted = 0
        self.stop = threading.Event()  # no more creations
        self.drained = threading.Event()  # no more deletions
        self.api = k8s.CoreV1Api(cluster.sim.api_client())

    def create(self) -> None:
        began = time.monotonic()
        while not self.stop.is_set():
            due = began + self.created / self.rate
            if time.monotonic() < due:
                self.stop.wait(due - time.monotonic())
                continue
            index = self.created
            self.cluster.pod(f"churn-{index:07d}", cpu="100m", memory="64Mi",
                             labels={"applicationId": f"churn-app-{index // PODS_PER_APP:06d}", "queue": "root.churn"})
            self.created += 1

    def delete(self) -> None:
        while not self.drained.wait(0.5):
            for pod in self.cluster.sim.objects("pods"):
                if pod["spec"].get("nodeName") and pod["metadata"]["name"].startswith("churn-"):
                    try:
                        self.api.delete_namespaced_pod(pod["metadata"]["name"], "default", grace_period_seconds=0)
                        self.deleted += 1
                    except k8s.ApiException:
                        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=16.0)
    parser.add_argument("--warmup", type=float, default=8.0,
                        help="minutes left out of the slope (the core's event ring of 100,000 fills first: ~7 "
                             "minutes at 50 pods/s)")
    parser.add_argument("--rate", type=float, default=50.0, help="pods created per second")
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--every", type=float, default=15.0, help="seconds between RSS samples")
    parser.add_argument("--history-dsn", default="", help="default: a SQLite file in a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        dsn = args.history_dsn or f"sqlite:///{scratch}/history.db"
        sim = KubeSim(bookmark_interval=0.5, kubelet_delay=0.05).start()
        kubeconfig = Path(scratch) / "kubeconfig"
        sim.write_kubeconfig(str(kubeconfig))
        cluster = Cluster(sim, str(kubeconfig))
        sim.seed_nodes(args.nodes, cpu="16", memory="64Gi")
        cluster.configure(OPEN_CONFIG)
        scheduler = SchedulerProcess(str(kubeconfig), Path(scratch) / "scheduler.log", "--history-dsn", dsn)
        scheduler.wait_ready()
        churn = Churn(cluster, args.rate)
        workers = [threading.Thread(target=churn.create, daemon=True), threading.Thread(target=churn.delete, daemon=True)]
        for worker in workers:
            worker.start()
        print(f"history store: {dsn}; {args.rate:g} pods/s, {args.nodes} nodes, {args.minutes:g} minutes", flush=True)
        began = time.monotonic()
        points = []
        while (elapsed := time.monotonic() - began) < args.minutes * 60:
            points.append((elapsed / 60, rss_mb(scheduler.process.pid)))
            print(f"{elapsed / 60:6.1f} min  RSS {points[-1][1]:7.1f} MB  pods created {churn.created:7d}  "
                  f"deleted {churn.deleted:7d}", flush=True)
            time.sleep(args.every)
        churn.stop.set()
        workers[0].join(timeout=30)
        while any(p["metadata"]["name"].startswith("churn-") for p in sim.objects("pods")):
            time.sleep(1)  # the last pods bound and deleted: every application can finish
        churn.drained.set()
        workers[1].join(timeout=30)
        steady = [p for p in points if p[0] >= args.warmup]
        apps = (churn.created + PODS_PER_APP - 1) // PODS_PER_APP
        print(f"RSS slope after {args.warmup:g} min: {slope(steady):.2f} MB/min "
              f"({steady[0][1] if steady else 0:.0f} -> {points[-1][1]:.0f} MB); {apps} applications", flush=True)
        if dsn != "none":
            # An application whose pods all went before its next one came finishes and runs again: each run
            # is a row; every application must have at least one.
            store = HistoryStore(dsn)
            deadline = time.monotonic() + 120
            while store.count(distinct_ids=True) < apps and time.monotonic() < deadline:
                time.sleep(2)
            print(f"finished applications in the store: {store.count(distinct_ids=True)} of {apps} "
                  f"({store.count()} runs)", flush=True)
            store.close()
        scheduler.stop()
        cluster.close()
        sim.stop()


if __name__ == "__main__":
    main()
