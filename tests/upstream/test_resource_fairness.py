"""Port of upstream's test/e2e/resource_fairness/resource_fairness_test.go (suite:
resource_fairness_suite_test.go; BeforeEach applies a configmap with one fair queue of 500m/500M, restarts
the scheduler, and creates the namespace; AfterEach tears it down)."""

from __future__ import annotations

import random

import pytest

from tests.upstream.framework import (
    DEFAULT_PARTITION,
    SleepPodConfig,
    YAPIError,
    add_queue,
    init_sleep_pod,
    rand_seq,
)
from tests.waiting import wait_for

MAX_CPU, MAX_MEM = 500, 500


@pytest.fixture
def ns(yk):
    name = "test-" + rand_seq(10)

    def mutate(config: dict) -> None:
        config["partitions"][0].pop("placementrules", None)
        add_queue(config, "default", "root", {
            "name": name, "parent": False,
            "resources": {"max": {"vcore": "500m", "memory": "500M"},
                          "guaranteed": {"vcore": "500m", "memory": "500M"}},
            "properties": {"application.sort.policy": "fair"}})
    old = yk.configmaps.update("fair", mutate)
    yk.restart_yunikorn()  # upstream restarts the scheduler here (required to change the node sort policy)
    assert yk.kube.create_namespace(name, {"vcore": "500m", "memory": "500M"}).status.phase == "Active"
    yield name
    yk.kube.tear_down_namespace(name)
    yk.configmaps.restore(old)


def test_wait_queue_order(yk, ns):
    """It("Test_Wait_Queue_Order"): the blocked pods run in the order of their apps' fair share
    (least CPU used first, memory breaking the tie)."""
    kube, rest, queue_path = yk.kube, yk.rest, "root." + ns
    apps = [f"app{j}-{rand_seq(5)}" for j in range(4)]
    app_pods: dict[str, list[str]] = {}
    app_allocs = {apps[0]: {"cpu": 0.3, "mem": 0.1, "pods": 1}, apps[1]: {"cpu": 0.2, "mem": 0.05, "pods": 1},
                  apps[2]: {"cpu": 0.1, "mem": 0.15, "pods": 1}, apps[3]: {"cpu": 0.4, "mem": 0.05, "pods": 4}}
    for app_id, req in app_allocs.items():
        app_pods[app_id] = []
        for i in range(int(req["pods"])):
            req_cpu = int(req["cpu"] / req["pods"] * MAX_CPU)
            req_mem = int(req["mem"] / req["pods"] * MAX_MEM)
            pod_name = f"{app_id}-pod{i}"
            app_pods[app_id].append(pod_name)
            kube.create_pod(init_sleep_pod(SleepPodConfig(name=pod_name, ns=ns, app_id=app_id, cpu=req_cpu,
                                                          mem=req_mem, labels={"queue": queue_path})), ns)
            kube.wait_for_pod_running(ns, pod_name)

    # one blocked pod for each of apps 0-2, in random order: 0.1 of the queue's CPU and 0.05 of its memory
    for i in random.sample(range(3), 3):
        app_id = apps[i]
        pod_name = f"{app_id}-pod{len(app_pods[app_id])}"
        app_pods[app_id].append(pod_name)
        kube.create_pod(init_sleep_pod(SleepPodConfig(name=pod_name, ns=ns, app_id=app_id, cpu=int(0.1 * MAX_CPU),
                                                      mem=int(0.05 * MAX_MEM), labels={"queue": queue_path})), ns)
        kube.wait_for_pod_pending(ns, pod_name)

        def one_request(app_id=app_id) -> bool:
            try:
                return len(rest.get_app_info(DEFAULT_PARTITION, queue_path, app_id).get("requests") or []) == 1
            except YAPIError:
                return False
        wait_for(one_request, timeout=10, interval=0.1, message=f"the request of {app_id}")

    wait_order = [app_pods[app_id][-1] for app_id in (apps[2], apps[1], apps[0])]
    for pod_name in wait_order:
        kube.delete_pod(app_pods[apps[3]].pop(), ns)  # an app3 pod releases its resources
        kube.wait_for_pod_running(ns, pod_name)
