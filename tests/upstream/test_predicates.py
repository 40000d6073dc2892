"""Port of upstream's test/e2e/predicates/predicates_test.go (suite: predicates_suite_test.go: BeforeSuite
applies the basic configmap with fifo apps; BeforeEach makes two namespaces, AfterEach tears them down and
waits for the scheduler to be healthy).

Not ported yet: the "PodAffinity & AntiAffinity Tests" context (its DescribeTable of pod (anti-)affinity
entries)."""

from __future__ import annotations

import re

import pytest

from tests.upstream.framework import (
    DEFAULT_PARTITION,
    SleepPodConfig,
    TestPodConfig,
    alloc_log_to_strings,
    init_sleep_pod,
    init_test_pod,
    rand_seq,
)
from tests.waiting import wait_for

LABEL_VALUE = "testing-label-value"


SCHED_POLICY = "fifo"


@pytest.fixture
def nss(suite):
    names = ("test-" + rand_seq(10), "test-" + rand_seq(10))
    for name in names:
        assert suite.kube.create_namespace(name, None).status.phase == "Active"
    yield names
    for name in names:
        suite.kube.tear_down_namespace(name)
    # WaitForSchedulerHealth: no node with negative resources, no failed health check
    def healthy() -> bool:
        nodes = suite.rest.get_nodes(DEFAULT_PARTITION)
        negative = any(v < 0 for n in nodes for key in ("capacity", "allocated", "occupied", "available")
                       for v in (n.get(key) or {}).values())
        return not negative and suite.rest.get_failed_health_checks() == ""
    wait_for(healthy, timeout=10, message="the scheduler to be healthy")


def run_test_pod(kube, conf: SleepPodConfig):
    pod = kube.create_pod(init_sleep_pod(conf), conf.ns)
    kube.wait_for_pod_running(pod.metadata.namespace, pod.metadata.name)
    return kube.get_pod(pod.metadata.name, pod.metadata.namespace)


def get_node_that_can_run_pod(kube, namespace: str) -> str:
    """GetNodeThatCanRunPod: a pod without label or toleration runs somewhere; it is deleted again."""
    pod = run_test_pod(kube, SleepPodConfig(name="without-toleration", ns=namespace))
    kube.delete_pod(pod.metadata.name, pod.metadata.namespace)
    kube.wait_for_pod_terminated(pod.metadata.namespace, pod.metadata.name)
    return pod.spec.node_name


def assert_failed_scheduling(rest, queue: str, pod: dict, pattern: str) -> None:
    app_id, name = pod["metadata"]["labels"]["applicationId"], pod["metadata"]["name"]
    rest.wait_for_allocation_log("default", queue, app_id, name)
    log = rest.get_allocation_log("default", queue, app_id, name)
    assert log is not None, "Log can't be empty"
    assert any(re.match(pattern, entry) for entry in alloc_log_to_strings(log)), "Log entry message mismatch"


def labelled_node(kube, node: str, prefix: str, value: str):
    key = f"kubernetes.io/{prefix}-{rand_seq(10)}"
    kube.set_node_label(node, key, value)
    assert kube.is_node_label_exists(node, key)
    return key


def test_verify_non_matching_nodeselector_respected(suite, nss):
    """It("Verify_Non_Matching_NodeSelector_Respected")"""
    ns = nss[0]
    pod = init_test_pod(TestPodConfig(name="blocked-pod", labels={
        "name": "blocked", "app": "blocked-app-" + rand_seq(5), "applicationId": rand_seq(10)},
        node_selector={"label": "nonempty"}))
    suite.kube.create_pod(pod, ns)
    suite.kube.wait_for_pod_pending(ns, "blocked-pod")
    assert_failed_scheduling(suite.rest, "root." + ns, pod, ".*didn't match Pod's node affinity")


def test_verify_matching_nodeselector_respected(suite, nss):
    """It("Verify_Matching_NodeSelector_Respected")"""
    ns, kube = nss[0], suite.kube
    node = get_node_that_can_run_pod(kube, ns)
    key = labelled_node(kube, node, "e2e", "101")
    try:
        kube.create_pod(init_test_pod(TestPodConfig(name="with-labels", namespace=ns, labels={
            "app": "blocked-app-" + rand_seq(5), "applicationId": rand_seq(10)}, node_selector={key: "101"})), ns)
        kube.wait_for_pod_running(ns, "with-labels")
        assert kube.get_pod("with-labels", ns).spec.node_name == node
    finally:
        kube.remove_node_label(node, key, "101")


def test_verify_non_matching_nodeaffinity_respected(suite, nss):
    """It("Verify_Non_Matching_NodeAffinity_Respected")"""
    ns = nss[0]
    pod = init_test_pod(TestPodConfig(name="blocked-pod", affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar", "value2"]}]},
            {"matchExpressions": [{"key": "diffkey", "operator": "In", "values": ["wrong", "value2"]}]}]}}},
        labels={"name": "blocked", "app": "blocked-app-" + rand_seq(5), "applicationId": rand_seq(10)}))
    suite.kube.create_pod(pod, ns)
    suite.kube.wait_for_pod_pending(ns, "blocked-pod")
    assert_failed_scheduling(suite.rest, "root." + ns, pod, ".*didn't match Pod's node affinity")


def test_verify_matching_nodeaffinity_respected(suite, nss):
    """It("Verify_Matching_NodeAffinity_Respected")"""
    ns, kube = nss[0], suite.kube
    node = get_node_that_can_run_pod(kube, ns)
    key = labelled_node(kube, node, "e2e", "102")
    try:
        kube.create_pod(init_test_pod(TestPodConfig(
            name="with-labels", namespace=ns, labels={"app": "blocked-app-" + rand_seq(5), "applicationId": rand_seq(10)},
            affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": key, "operator": "In", "values": ["102"]}]}]}}})), ns)
        kube.wait_for_pod_running(ns, "with-labels")
        assert kube.get_pod("with-labels", ns).spec.node_name == node
    finally:
        kube.remove_node_label(node, key, "102")


def tainted_and_labelled(kube, ns: str):
    node = get_node_that_can_run_pod(kube, ns)
    taint_key = f"kubernetes.io/e2e-taint-key-{rand_seq(10)}"
    kube.taint_nodes([node], taint_key, "testing-taint-value", "NoSchedule")
    label_key = labelled_node(kube, node, "e2e-label-key", LABEL_VALUE)
    return node, taint_key, label_key


def test_verify_matching_taint_tolerations_respected(suite, nss):
    """It("Verify_Matching_Taint_Tolerations_Respected")"""
    ns, kube = nss[0], suite.kube
    node, taint_key, label_key = tainted_and_labelled(kube, ns)
    try:
        kube.create_pod(init_test_pod(TestPodConfig(
            name="with-tolerations", namespace=ns,
            labels={"app": "tolerations-app-" + rand_seq(5), "applicationId": rand_seq(10)},
            tolerations=[{"key": taint_key, "value": "testing-taint-value", "effect": "NoSchedule"}],
            node_selector={label_key: LABEL_VALUE})), ns)
        kube.wait_for_pod_running(ns, "with-tolerations")
        assert kube.get_pod("with-tolerations", ns).spec.node_name == node
    finally:
        kube.untaint_nodes([node], taint_key)
        kube.remove_node_label(node, label_key, LABEL_VALUE)


def test_verify_not_matching_taint_tolerations_respected(suite, nss):
    """It("Verify_Not_Matching_Taint_Tolerations_Respected")"""
    ns, kube = nss[0], suite.kube
    node, taint_key, label_key = tainted_and_labelled(kube, ns)
    try:
        pod = init_test_pod(TestPodConfig(
            name="with-no-tolerations", namespace=ns,
            labels={"app": "no-tolerations-app-" + rand_seq(5), "applicationId": rand_seq(10)},
            node_selector={label_key: LABEL_VALUE}))
        kube.create_pod(pod, ns)
        kube.wait_for_pod_pending(ns, "with-no-tolerations")
        assert_failed_scheduling(suite.rest, "root." + ns, pod, ".*taint.*")
        # without the taint, the pod runs on the node
        kube.untaint_nodes([node], taint_key)
        kube.wait_for_pod_running(ns, "with-no-tolerations")
        assert kube.get_pod("with-no-tolerations", ns).spec.node_name == node
    finally:
        kube.untaint_nodes([node], taint_key)
        kube.remove_node_label(node, label_key, LABEL_VALUE)


def test_verify_podfitshost_respected(suite, nss):
    """It("Verify_PodFitsHost_Respected")"""
    ns, kube = nss[0], suite.kube
    node = get_node_that_can_run_pod(kube, ns)
    kube.create_pod(init_test_pod(TestPodConfig(
        name="test-pod", node_name=node, namespace=ns,
        labels={"app": "podFitsHost-app-" + rand_seq(5), "applicationId": rand_seq(10)})), ns)
    kube.wait_for_pod_running(ns, "test-pod")
    assert kube.get_pod("test-pod", ns).spec.node_name == node


def host_port_pod(ns: str, key: str, value: str, port: int, protocol: str, host_ip: str) -> dict:
    container_port = {"hostPort": port, "containerPort": 80, "protocol": protocol}
    if host_ip:
        container_port["hostIP"] = host_ip
    return init_test_pod(TestPodConfig(
        name="same-hostport-" + rand_seq(10), namespace=ns,
        labels={"app": "sameHostPort-app-" + rand_seq(5), "applicationId": rand_seq(10)},
        node_selector={key: value}, ports=[container_port]))


def test_verify_no_conflict_with_same_hostport_diff_ip_protocol(suite, nss):
    """It("Verify_No_Conflict_With_Same_HostPort_Diff_IP_Protocol")"""
    ns, kube = nss[0], suite.kube
    node = get_node_that_can_run_pod(kube, ns)
    key = labelled_node(kube, node, "e2e-hostport", "103")
    try:
        for host_ip, protocol in (("127.0.0.1", "TCP"), ("127.0.0.2", "TCP"), ("127.0.0.2", "UDP")):
            pod = host_port_pod(ns, key, "103", 54321, protocol, host_ip)
            kube.create_pod(pod, ns)
            kube.wait_for_pod_running(ns, pod["metadata"]["name"])
    finally:
        kube.remove_node_label(node, key, "103")


def test_verify_conflict_with_same_hostport_same_ip_protocol(suite, nss):
    """It("Verify_Conflict_With_Same_HostPort_Same_IP_Protocol")"""
    (ns, another_ns), kube = nss, suite.kube
    node = get_node_that_can_run_pod(kube, ns)
    key = labelled_node(kube, node, "e2e-hostport", "104")
    try:
        pod = host_port_pod(ns, key, "104", 54322, "TCP", "")
        kube.create_pod(pod, ns)
        kube.wait_for_pod_running(ns, pod["metadata"]["name"])
        pod2 = host_port_pod(another_ns, key, "104", 54322, "TCP", "127.0.0.1")
        kube.create_pod(pod2, another_ns)
        kube.wait_for_pod_pending(another_ns, pod2["metadata"]["name"])
        assert_failed_scheduling(suite.rest, "root." + another_ns, pod2, ".*free ports.*")
    finally:
        kube.remove_node_label(node, key, "104")


# ---- Context("PodAffinity & AntiAffinity Tests") ----------------------------------------------------------

POD_LABEL = {"service": "securityscan"}
POD_LABEL2 = {"security": "S1"}
LABEL_KEY = "kubernetes.io/hostname"
SLEEP_CONTAINER = {"name": "test-container", "image": "alpine:latest", "command": ["sleep", "60"]}


def term(*expressions, namespaces=None) -> dict:
    made = {"labelSelector": {"matchExpressions": list(expressions)}, "topologyKey": LABEL_KEY}
    if namespaces:
        made["namespaces"] = namespaces
    return made


def expr(key: str, operator: str, *values: str) -> dict:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


def affinity_pod(labels: dict, affinity: list | None = None, anti: list | None = None) -> dict:
    spec_affinity = {}
    if affinity:
        spec_affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": affinity}
    if anti:
        spec_affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    return {"metadata": {"name": "fakename", "labels": dict(labels)},
            "spec": {"schedulerName": "yunikorn", "containers": [SLEEP_CONTAINER], "affinity": spec_affinity}}


EXISTING = "existing"  # the entry has the pod fakename2 (labels service=securityscan) bound to the found node
AFFINITY_ENTRIES = [
    pytest.param(affinity_pod(POD_LABEL2, [term(expr("service", "In", "securityscan"))]), False, False,
                 id="Verify_Not_Matching_Inter_Pod-Affinity_Respected"),
    pytest.param(affinity_pod(POD_LABEL2, [term(expr("service", "In", "securityscan", "value2"))]), True, True,
                 id="Verify_Matching_Inter_Pod-Affinity_Respected"),
    pytest.param(affinity_pod(POD_LABEL2, [term(expr("service", "NotIn", "securityscan3", "value3"))]), True, True,
                 id="Verify_Matching_Inter_Pod-Affinity_Respected_For_NotIn_Operator"),
    pytest.param(affinity_pod(POD_LABEL2, [term(expr("service", "In", "securityscan", "value2"),
                                                namespaces=["diff-namespace"])]), True, False,
                 id="Verify_Matching_Inter-Pod-Affinity_Under_Diff_NS"),
    pytest.param(affinity_pod(POD_LABEL, [term(expr("service", "In", "antivirusscan", "value2"))]), True, False,
                 id="Verify_Inter-Pod-Affinity_With_UnMatching_LabelSelector"),
    pytest.param(affinity_pod(POD_LABEL2, [term(expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                                           term(expr("service", "In", "securityscan"),
                                                expr("service", "NotIn", "WrongValue"))]), True, True,
                 id="Verify_Inter-Pod-Affinity_With_Multiple_Affinities"),
    pytest.param(affinity_pod(POD_LABEL2, [term(expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                                           term(expr("service", "In", "securityscan2"),
                                                expr("service", "NotIn", "WrongValue"))]), True, False,
                 id="Verify_Pod_Affinity_With_One_UnMatched_Expression"),
    pytest.param(affinity_pod(POD_LABEL2, [term(expr("service", "In", "securityscan", "value2"))],
                              [term(expr("service", "In", "antivirusscan", "value2"))]), True, True,
                 id="Verfiy_Matched_Pod_Affinity_Anti_Affinity_Respected"),
    pytest.param(affinity_pod(POD_LABEL2, [term(expr("service", "In", "securityscan", "value2"))],
                              [term(expr("service", "In", "securityscan", "value2"))]), True, False,
                 id="Verify_Matched_Pod_Affinity_Unmatched_Pod_Antiaffinity"),
]


@pytest.mark.parametrize("pod, with_existing, fits", AFFINITY_ENTRIES)
def test_pod_affinity(suite, nss, pod, with_existing, fits):
    """DescribeTable("") of Context("PodAffinity & AntiAffinity Tests"): the existing pods are launched (bound
    to the node BeforeEach found), then the pod with pod (anti-)affinity is scheduled or not."""
    ns, kube = nss[0], suite.kube
    node_name = get_node_that_can_run_pod(kube, ns)
    if with_existing:
        existing = {"metadata": {"name": "fakename2", "labels": {**POD_LABEL, "app": rand_seq(5),
                                                                 "applicationId": rand_seq(10)}},
                    "spec": {"schedulerName": "yunikorn", "containers": [SLEEP_CONTAINER], "nodeName": node_name}}
        created = kube.create_pod(existing, ns)
        kube.wait_for_pod_scheduled(created.metadata.namespace, created.metadata.name)
    pod = {**pod, "metadata": {**pod["metadata"], "labels": {**pod["metadata"]["labels"], "app": rand_seq(5),
                                                            "applicationId": rand_seq(10)}}}
    test_pod = kube.create_pod(pod, ns)
    if fits:
        kube.wait_for_pod_scheduled(test_pod.metadata.namespace, test_pod.metadata.name)
    else:
        kube.wait_for_pod_unschedulable(test_pod)
