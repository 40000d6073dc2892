"""Port of upstream's test/e2e/bin_packing/bin_packing_test.go (suite: bin_packing_suite_test.go: BeforeSuite
applies a configmap with fifo apps and the binpacking node sort policy and restarts the scheduler)."""

from __future__ import annotations

import pytest

from tests.upstream.framework import (
    TestPodConfig,
    get_worker_nodes,
    init_job_config,
    init_test_pod,
    rand_seq,
)


@pytest.fixture(scope="module")
def suite(yk):
    def mutate(config: dict) -> None:
        config["partitions"][0]["nodesortpolicy"] = {"type": "binpacking"}
    old = yk.configmaps.update("fifo", mutate)
    yk.restart_yunikorn()  # required to change the node sort policy, upstream says
    yield yk
    yk.configmaps.restore(old)


@pytest.fixture
def ns(suite):
    with suite.kube.test_namespace("test-" + rand_seq(10)) as made:
        yield made


def sorted_by_available(kube, resource: str):
    nodes = kube.get_nodes()
    available = kube.get_nodes_avail_res(nodes)
    workers = sorted(get_worker_nodes(nodes), key=lambda n: available[n.metadata.name][resource])
    return workers, available


def test_verify_binpacking_node_order_memory(suite, ns):
    """It("Verify_BinPacking_Node_Order_Memory"): with binpacking, jobA's pods all land on the most used
    node, and jobB's (anti-affine to it) all on the second."""
    kube = suite.kube
    workers, available = sorted_by_available(kube, "memory")
    assert len(workers) >= 2, "At least 2 nodes required"
    # padding pods make the node order stable: 20% of the first node's free memory, 10% of the second's
    for node, pad_pct in zip(workers[:2], (0.2, 0.1), strict=True):
        name = node.metadata.name
        padding = int(available[name]["memory"] * pad_pct)
        pod_name = f"{name}-padding"
        kube.create_pod(init_test_pod(TestPodConfig(
            name=pod_name, namespace=ns,
            labels={"node": name, "app": "app-" + rand_seq(5), "applicationId": "appid-" + pod_name},
            node_selector={"kubernetes.io/hostname": name},
            resources={"requests": {"cpu": "0", "memory": str(padding)}})), ns)
        kube.wait_for_pod_running(ns, pod_name)

    workers, _ = sorted_by_available(kube, "memory")
    job_a = TestPodConfig(labels={"app": "sleep-" + rand_seq(5), "applicationId": "appid-joba-" + rand_seq(5)})
    job_b = TestPodConfig(
        labels={"app": "sleep-" + rand_seq(5), "applicationId": "appid-jobb-" + rand_seq(5)},
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchExpressions": [{"key": "node", "operator": "In",
                                                    "values": [workers[0].metadata.name]}]},
            "topologyKey": "kubernetes.io/hostname"}]}})
    for i, (job_name, pod_config) in enumerate((("joba-" + rand_seq(5), job_a), ("jobb-" + rand_seq(5), job_b))):
        kube.create_job(init_job_config(job_name, ns, 3, pod_config), ns)
        kube.wait_for_job_pods_created(ns, job_name, 3)
        kube.wait_for_job_pods(ns, job_name, 3)
        job_pods = kube.list_pods(ns, f"job-name={job_name}")
        assert len(job_pods.items) == 3, "Pods count should be 3"
        for pod in job_pods.items:
            assert pod.spec.node_name == workers[i].metadata.name, "job pods not scheduled to correct node"
