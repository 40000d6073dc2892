"""The sample cluster of ``yunikorn-scheduler --embedded``: a multi-queue configuration, a workload of
pending pods spread over the queues, and the summary printed once they are bound."""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

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


def sample_pod(index: int, namespace: str = "default") -> dict:
    """Pod ``index`` of the sample workload: queue round-robin, ten pods per application."""
    queue = SAMPLE_QUEUES[index % len(SAMPLE_QUEUES)]
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"sample-{index:06d}", "namespace": namespace,
                     "labels": {"queue": f"root.{queue}", "applicationId": f"{queue}-app-{index // 30:04d}"}},
        "spec": {"schedulerName": "yunikorn",
                 "containers": [{"name": "main", "image": "busybox",
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


def create_pods(client: KubeClient, pods: Iterable[dict], threads: int = 8) -> int:
    """Create the pods concurrently; returns how many were created."""
    def create(pod: dict) -> None:
        namespace = pod["metadata"]["namespace"]
        client.request_retrying("POST", f"/api/v1/namespaces/{namespace}/pods", body=pod)

    with ThreadPoolExecutor(threads, thread_name_prefix="create-pods") as pool:
        return sum(1 for _ in pool.map(create, pods))


def summary(client: KubeClient) -> str:
    """A table of pods bound per queue, and node utilisation (requests over allocatable)."""
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
