"""Preemption through kubesim, and the core's throughput with preemption enabled but never needed.

1. kubesim runs as a subprocess with ``--nodes`` nodes of 64 CPU; ``--running`` pods of queue
   ``root.b`` (no guarantee) are created already bound, ten per node, filling the cluster. The
   scheduler (core + shim) starts and recovers them. Then ``--asks`` pods of queue ``root.a``
   (guaranteed room for all of them, ``preemption.delay: 0s``) are created: each needs one victim
   evicted. Printed: seconds from the first ask created until all are bound (victims evicted through
   the Eviction API), and the core's mean time per preemption decision (its
   ``trypreemption_latency`` histogram).
2. The core alone (SI messages, no Kubernetes), ``--core-asks`` asks on ``--core-nodes`` roomy nodes
   over guaranteed queues, run with ``preemption.enabled`` false and true: allocations/s of each and
   their ratio (goal >= 0.9: nothing is paid for preemption until an ask fits no node).

    python benchmarks/preemption.py                                   # 5,000 nodes, 50,000 running, 500 asks
    python benchmarks/preemption.py --nodes 500 --running 5000 --asks 50
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPAWN = multiprocessing.get_context("spawn")
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from benchmarks_common import CountingCallback, clean_heap, create_pods, feed  # noqa: E402
from e2e_throughput import start_kubesim  # noqa: E402

from actors.base import stop_all  # noqa: E402
from actors.heap import tune_collector  # noqa: E402
from actors.shim.client import KubeClient  # noqa: E402
from si import si_pb2  # noqa: E402

PER_NODE = 10
QUEUES = """partitions:
  - name: default
    placementrules: [{{name: provided, create: false}}]
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources: {{guaranteed: {{vcore: {guarantee}}}}}
            properties: {{preemption.delay: 0s}}
          - name: b
"""


def pod(name: str, queue: str, app: str, node: str = "") -> dict:
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"queue": queue, "applicationId": app}},
            "spec": {"schedulerName": "yunikorn",
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": "6", "memory": "1Gi"}}}]}}
    if node:
        body["spec"]["nodeName"] = node
    return body


def through_kubesim(args: argparse.Namespace) -> dict:
    from actors.core.scheduler import Scheduler
    from actors.shim.predicates import KubernetesPredicates
    from actors.shim.service import SchedulerService, ServiceSettings

    with tempfile.TemporaryDirectory() as scratch:
        kubeconfig = str(Path(scratch) / "kubeconfig")
        sim = start_kubesim(args.nodes, kubeconfig)
        try:
            client = KubeClient.connect(kubeconfig, pool_size=args.threads + 16)
            client.request("POST", "/api/v1/namespaces/default/configmaps", body={
                "metadata": {"name": "yunikorn-configs"},
                "data": {"queues.yaml": QUEUES.format(guarantee=6 * args.asks)}})
            running = [pod(f"run-{i:06d}", "root.b", f"b-{i // 1000}", f"node-{i // PER_NODE:05d}")
                       for i in range(args.running)]
            began = time.monotonic()
            create_pods(client, running, args.threads)
            print(f"{args.running} running pods created in {time.monotonic() - began:.1f} s", file=sys.stderr)
            core = Scheduler(predicates=KubernetesPredicates())
            service = SchedulerService(client, core, ServiceSettings(bind_workers=16)).start()
            if not service.wait_until("Running", 600):
                raise SystemExit(f"scheduler did not reach Running: {service.latest_state()}")
            asks = [pod(f"ask-{i:04d}", "root.a", "a-app") for i in range(args.asks)]
            first = time.monotonic()
            create_pods(client, asks, args.threads)
            bound: set[str] = set()
            deadline = time.monotonic() + args.timeout
            while len(bound) < args.asks and time.monotonic() < deadline:
                # Only the asks' pods: listing the whole cluster would compete with the scheduler here.
                pods = client.request("GET", "/api/v1/namespaces/default/pods",
                                      query=[("labelSelector", "applicationId=a-app")]).get("items") or ()
                bound = {p["metadata"]["name"] for p in pods if p["spec"].get("nodeName")}
                print(f"\r{len(bound)}/{args.asks} asks bound", end="", file=sys.stderr, flush=True)
                time.sleep(args.poll)
            elapsed = time.monotonic() - first
            print(file=sys.stderr)
            pods, _ = client.list("/api/v1/pods", page_size=args.running + args.asks)
            evicted = args.running - sum(1 for p in pods if p["metadata"]["name"].startswith("run-"))
            histogram = core.snapshot().partitions[0].stats.histograms["trypreemption_latency"]
            service.stop()
            core.stop()
            client.close()
        finally:
            sim.terminate()
            sim.wait()
    return {"bound": len(bound), "seconds": elapsed, "evicted": evicted, "decisions": histogram.count,
            "ms_per_decision": histogram.total / histogram.count * 1000 if histogram.count else 0.0}


def core_rate(nodes: int, asks: int, enabled: bool) -> float:
    clean_heap()
    config = (f"partitions:\n  - name: default\n    preemption: {{enabled: {str(enabled).lower()}}}\n    queues:\n"
              "      - name: root\n        submitacl: '*'\n        queues:\n"
              + "".join(f"          - name: q{i}\n            resources: {{guaranteed: {{vcore: 1000}}}}\n"
                        "            properties: {preemption.delay: 0s}\n" for i in range(10)))
    from actors.core.scheduler import Scheduler

    callback = CountingCallback(asks)
    scheduler = Scheduler(tick_interval=1.0)
    scheduler.register(si_pb2.RegisterResourceManagerRequest(rmID="bench", config=config), callback)
    first = feed(scheduler, nodes, asks)
    if not callback.done.wait(600):
        raise SystemExit(f"only {callback.count} of {asks} allocations after 600 s")
    rate = asks / (callback.last - first)
    scheduler.stop()
    stop_all()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--running", type=int, default=50_000)
    parser.add_argument("--asks", type=int, default=500)
    parser.add_argument("--core-nodes", type=int, default=2000)
    parser.add_argument("--core-asks", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=4, help="core runs of each setting (the best counts; 0: none)")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--poll", type=float, default=0.2)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--skip-kubesim", action="store_true")
    args = parser.parse_args()
    if args.running > args.nodes * PER_NODE:
        raise SystemExit(f"--running is at most {PER_NODE} per node")
    tune_collector()
    if not args.skip_kubesim:
        r = through_kubesim(args)
        print(f"nodes {args.nodes}, running {args.running}: {r['bound']}/{args.asks} asks bound in "
              f"{r['seconds']:.1f} s (goal <= 10 s), {r['evicted']} victims evicted; {r['decisions']} preemption "
              f"decisions, {r['ms_per_decision']:.2f} ms each", flush=True)
    if not args.rounds:
        return
    rates: dict[bool, list[float]] = {False: [], True: []}
    for round_ in range(args.rounds):  # alternating which goes first, so neither always runs on a used heap
        for enabled in ((False, True) if round_ % 2 == 0 else (True, False)):
            rates[enabled].append(core_rate(args.core_nodes, args.core_asks, enabled))
    off, on = max(rates[False]), max(rates[True])
    print(f"core alone, {args.core_nodes} nodes, {args.core_asks} asks: preemption disabled {off:.0f} allocs/s, "
          f"enabled (never needed) {on:.0f} allocs/s, ratio {on / off:.2f} (goal >= 0.9)")


if __name__ == "__main__":
    main()
