"""In-place pod resize end to end: a client resizes a running pod through ``pods/{name}/resize``, kubesim's
kubelet applies it (or finds it infeasible), and the shim tells the core the pod's size as upstream's
``GetPodResource`` reads it, so the core's node and queue usage follow."""

from __future__ import annotations

import pytest

from kubesim import KubeSim
from tests.shim.cluster import Cluster
from tests.waiting import wait_for


@pytest.fixture
def cluster(tmp_path):
    sim = KubeSim(bookmark_interval=0.2, kubelet_delay=0.0).start()
    path = tmp_path / "kubeconfig"
    sim.write_kubeconfig(str(path))
    made = Cluster(sim, str(path))
    made.node("n1", cpu="4", memory="8Gi")
    made.start_scheduler()
    yield made
    made.close()
    sim.stop()


def _usage(cluster: Cluster) -> tuple[int, int]:
    """vcore the core counts on node n1 and in the root queue."""
    partition = cluster.scheduler.snapshot().partition("default")
    node = next(n for n in partition.nodes if n.node_id == "n1")
    return node.allocated["vcore"], partition.root_queue.allocated_resource["vcore"]


def _resize(cluster: Cluster, name: str, cpu: str) -> None:
    cluster.core_api.patch_namespaced_pod_resize(name, "default", {"spec": {"containers": [
        {"name": "main", "resources": {"requests": {"cpu": cpu}}}]}})


def _running(cluster: Cluster, name: str, cpu: str) -> None:
    cluster.pod(name, cpu=cpu)
    wait_for(lambda: cluster.pods()[name].get("status", {}).get("phase") == "Running", timeout=20,
             message=f"{name} runs")


def test_a_resized_pod_changes_its_node_and_queue_usage(cluster):
    _running(cluster, "p", "1")
    wait_for(lambda: _usage(cluster) == (1000, 1000), timeout=10, message="p counted at 1 cpu")
    _resize(cluster, "p", "2")
    wait_for(lambda: _usage(cluster) == (2000, 2000), timeout=10, message="p counted at 2 cpu")
    _resize(cluster, "p", "500m")
    wait_for(lambda: _usage(cluster) == (500, 500), timeout=10, message="p counted at 500m once applied")


def test_an_infeasible_resize_is_counted_at_what_the_kubelet_kept(cluster):
    _running(cluster, "p", "1")
    wait_for(lambda: _usage(cluster) == (1000, 1000), timeout=10, message="p counted at 1 cpu")
    _resize(cluster, "p", "100")

    def infeasible() -> bool:
        conditions = cluster.pods()["p"]["status"].get("conditions") or ()
        return any(c["type"] == "PodResizePending" and c.get("reason") == "Infeasible" for c in conditions)
    wait_for(infeasible, timeout=10, message="the kubelet finds the resize infeasible")
    wait_for(lambda: _usage(cluster) == (1000, 1000), timeout=10, message="p counted at what runs: 1 cpu")


def test_a_pod_found_running_at_recovery_is_counted_at_its_new_size(cluster):
    _running(cluster, "p", "1")
    wait_for(lambda: _usage(cluster) == (1000, 1000), timeout=10, message="p counted at 1 cpu")
    cluster.stop_scheduler()
    cluster.start_scheduler()
    wait_for(lambda: _usage(cluster) == (1000, 1000), timeout=10, message="p recovered at 1 cpu")
    _resize(cluster, "p", "3")
    wait_for(lambda: _usage(cluster) == (3000, 3000), timeout=10, message="the recovered p counted at 3 cpu")


def test_a_pending_pod_resized_to_fit_is_scheduled_at_its_new_size(cluster):
    cluster.pod("p", cpu="10")
    wait_for(lambda: cluster.events("FailedScheduling", "p") or cluster.pods()["p"]["status"].get("conditions"),
             timeout=10, message="p waits: it fits no node")
    _resize(cluster, "p", "2")
    cluster.wait_bound("p", timeout=10)
    wait_for(lambda: _usage(cluster) == (2000, 2000), timeout=10, message="p counted at 2 cpu")
