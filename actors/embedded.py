"""The sample cluster of ``yunikorn-scheduler --embedded``: a kubesim whose kubelets run the pods, a
multi-queue configuration, a workload of pods that each sleep a few seconds, spread over the queues, the
summary printed once they are bound, and the progress of their applications to Completed."""

from __future__ import annotations

import logging
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from actors.core.application import COMPLETED
from actors.shim.client import ApiError, KubeClient
from actors.shim.pods import parse_pod
from si.kubernetes import CONFIGMAP_CONFIGS
from si.quantity import from_kubernetes

log = logging.getLogger(__name__)

SAMPLE_QUEUES = ("batch", "interactive", "analytics")
SAMPLE_QUEUES_YAML = """\
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: batch
            properties:
              application.sort.policy: fifo
          - name: interactive
            properties:
              application.sort.policy: fair
          - name: analytics
          - name: default
"""


KUBELET_DELAY = 0.5  # seconds from binding until a pod runs
RUN_SECONDS = (5, 15)  # the shortest and longest sleep of a sample pod


def start_cluster(nodes: int):
    """The embedded kubesim, started, with ``nodes`` ready nodes and kubelets that run the pods."""
    from kubesim import KubeSim

    sim = KubeSim(port=0, kubelet_delay=KUBELET_DELAY).start()
    sim.seed_nodes(nodes)
    return sim


def sample_pod(index: int, namespace: str = "default") -> dict:
    """Pod ``index`` of the sample workload: queue round-robin, ten pods per application, each sleeping
    5 to 15 seconds and then succeeding."""
    queue = SAMPLE_QUEUES[index % len(SAMPLE_QUEUES)]
    low, high = RUN_SECONDS
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"sample-{index:06d}", "namespace": namespace,
                     "labels": {"queue": f"root.{queue}", "applicationId": f"{queue}-app-{index // 30:04d}"}},
        "spec": {"schedulerName": "yunikorn", "restartPolicy": "Never",
                 "containers": [{"name": "main", "image": "busybox",
                                 "command": ["sleep", str(low + index * 7 % (high - low + 1))],
                                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
    }


def install_config(client: KubeClient, namespace: str, queues_yaml: str = SAMPLE_QUEUES_YAML) -> None:
    """Create (or replace) ``yunikorn-configs`` in ``namespace``."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIGMAP_CONFIGS, "namespace": namespace},
            "data": {"queues.yaml": queues_yaml}}
    try:
        client.request("POST", f"/api/v1/namespaces/{namespace}/configmaps", body=body)
    except ApiError as error:
        if error.status != 409:
            raise
        client.request("PUT", f"/api/v1/namespaces/{namespace}/configmaps/{CONFIGMAP_CONFIGS}", body=body)


def create_pods(client: KubeClient, pods: Iterable[dict], stop: threading.Event, threads: int = 8) -> None:
    """Create the pods concurrently until ``stop`` is set. A failure is logged, not raised: it ends the
    sample workload, not the scheduler."""
    def create(pod: dict) -> None:
        if not stop.is_set():
            namespace = pod["metadata"]["namespace"]
            client.request_retrying("POST", f"/api/v1/namespaces/{namespace}/pods", body=pod)

    try:
        with ThreadPoolExecutor(threads, thread_name_prefix="create-pods") as pool:
            for _ in pool.map(create, pods):
                pass
    except Exception as error:
        if not stop.is_set():  # once stopping, the cluster going away is expected
            log.error("the sample workload stopped creating pods: %s", error)


def summary(client: KubeClient) -> str:
    """A table of pods bound per queue, and node utilisation (requests of running pods over allocatable)."""
    pods, _ = client.list("/api/v1/pods")
    nodes, _ = client.list("/api/v1/nodes")
    bound: Counter[str] = Counter()
    waiting: Counter[str] = Counter()
    used: dict[str, Counter[str]] = defaultdict(Counter)
    for raw in pods:
        pod = parse_pod(raw)
        if not pod.yunikorn:
            continue
        queue = pod.queue or "(placement rules)"
        if pod.assigned:
            bound[queue] += 1
            if not pod.terminated:
                used[pod.node_name].update(pod.resource)
        else:
            waiting[queue] += 1
    lines = [f"{'queue':<24}{'bound':>8}{'pending':>9}"]
    for queue in sorted(bound.keys() | waiting.keys()):
        lines.append(f"{queue:<24}{bound[queue]:>8}{waiting[queue]:>9}")
    lines.append("")
    shares = []
    for node in nodes:
        name = node["metadata"]["name"]
        allocatable = from_kubernetes((node.get("status") or {}).get("allocatable"))
        shares.append((name, *(_share(used[name][r], allocatable.get(r, 0)) for r in ("vcore", "memory", "pods"))))
    lines.append(f"{'node':<24}{'vcore %':>9}{'memory %':>10}{'pods %':>8}")
    shown = sorted(shares, key=lambda row: -row[1])[:20]
    for name, vcore, memory, count in shown:
        lines.append(f"{name:<24}{vcore:>9.1f}{memory:>10.1f}{count:>8.1f}")
    if len(shares) > len(shown):
        lines.append(f"... {len(shares) - len(shown)} more nodes")
    if shares:
        average = [sum(row[i] for row in shares) / len(shares) for i in (1, 2, 3)]
        lines.append(f"{'average':<24}{average[0]:>9.1f}{average[1]:>10.1f}{average[2]:>8.1f}")
    return "\n".join(lines)


def _share(used: int, total: int) -> float:
    return 100.0 * used / total if total else 0.0


def show_completion(core, finished_pods, total_pods: int, stop: threading.Event) -> bool:
    """Draw the pods finishing and their applications completing (Completed follows an application's
    last pod after the core's completing timeout, 30 s) until every application has; False when
    interrupted first. ``finished_pods()`` counts the pods that have ended."""
    completed = applications = 0
    while not applications or completed < applications:
        if stop.wait(0.5):
            print(file=sys.stderr)
            return False
        states: Counter[str] = Counter()
        for partition in core.snapshot(areas=frozenset()).partitions:
            states.update(partition.applications_by_state)
        completed, applications = states[COMPLETED], sum(states.values())
        finished = finished_pods()
        filled = int(30 * finished / total_pods) if total_pods else 30
        print(f"\r[{'#' * filled}{'.' * (30 - filled)}] {finished}/{total_pods} pods finished  "
              f"{completed}/{applications} applications completed", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return True
