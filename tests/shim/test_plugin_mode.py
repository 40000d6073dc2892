"""Plugin mode end to end: kubesim -> shim -> core, with a kube-scheduler stand-in that calls the extender
over HTTP with kube-scheduler's JSON and binds through the Binding API (or through the extender's bind)."""

from __future__ import annotations

import http.client
import json
from collections import Counter

import pytest
from kubernetes import client as k8s

from actors.shim import keys
from actors.shim.handoff import NOT_READY
from rest.app import SchedulerView
from rest.server import RestServer
from tests.shim.cluster import Cluster
from tests.shim.doubles import wait_for
from tests.shim.test_scheduling import small_and_big

FILTER = "/scheduler/extender/filter"
BIND = "/scheduler/extender/bind"


class KubeScheduler:
    """Plays kube-scheduler's part: the extender's filter call with Go-cased keys, then a bind."""

    def __init__(self, cluster: Cluster, url: str) -> None:
        self.cluster = cluster
        self.host, self.port = url.removeprefix("http://").split(":")
        self.nodes = sorted(node["metadata"]["name"] for node in cluster.sim.objects("nodes"))

    def post(self, path: str, body) -> tuple[int, dict]:
        connection = http.client.HTTPConnection(self.host, int(self.port), timeout=10)
        try:
            payload = body if isinstance(body, bytes) else json.dumps(body).encode()
            connection.request("POST", path, body=payload, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            return response.status, json.loads(response.read() or b"null")
        finally:
            connection.close()

    def pod(self, name: str) -> dict:
        return self.cluster.pods()[name]

    def filter(self, name: str, nodes: list[str] | None = None) -> dict:
        status, reply = self.post(FILTER, {"Pod": self.pod(name), "Nodes": None,
                                           "NodeNames": self.nodes if nodes is None else nodes})
        assert status == 200, reply
        assert set(reply) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
        return reply

    def bind(self, name: str, node: str) -> None:
        """kube-scheduler's own binding (no bind verb configured)."""
        # The API server answers a Status, not a Binding: read it raw, as kube-scheduler does.
        self.cluster.core_api.create_namespaced_pod_binding(name, "default", k8s.V1Binding(
            metadata=k8s.V1ObjectMeta(name=name), target=k8s.V1ObjectReference(kind="Node", name=node)),
            _preload_content=False).release_conn()

    def bind_through_extender(self, name: str, node: str) -> str:
        pod = self.pod(name)
        status, reply = self.post(BIND, {"PodName": name, "PodNamespace": "default",
                                         "PodUID": pod["metadata"]["uid"], "Node": node})
        assert status == 200, reply
        return reply["Error"]

    def schedule(self, names: list[str], expected: int, rounds: int = 400) -> None:
        """kube-scheduler's loop until ``expected`` of ``names`` are bound: each unbound pod is filtered,
        and bound where the filter lets it go. Refused pods wait for a change (kube-scheduler's backoff)."""
        for _ in range(rounds):
            pods = self.cluster.pods()
            waiting = [n for n in names if not pods[n]["spec"].get("nodeName")]
            if len(names) - len(waiting) >= expected:
                return
            progressed = False
            for name in waiting:
                passed = self.filter(name)["NodeNames"]
                if passed:
                    self.bind(name, passed[0])
                    progressed = True
            if not progressed:
                wait_for(lambda before=pods, names=waiting: self._approvals_changed(before, names), timeout=10)
        raise AssertionError("kube-scheduler's loop did not finish")

    def _approvals_changed(self, before: dict, waiting: list[str]) -> bool:
        now = self.cluster.pods()
        return any(approval(now[n]) != approval(before[n]) for n in waiting)


def approval(pod: dict) -> str:
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(keys.ANNOTATION_QUOTA_APPROVED, "")


def approved_node(cluster: Cluster, name: str) -> str:
    wait_for(lambda: approval(cluster.pods()[name]), timeout=15)
    return approval(cluster.pods()[name]).split(" ")[0]


@pytest.fixture
def plugin(kubesim, tmp_path):
    path = tmp_path / "kubeconfig"
    kubesim.write_kubeconfig(str(path))
    cluster = Cluster(kubesim, str(path))
    kubesim.seed_nodes(3, cpu="2")
    started = {}

    def start(queues: str | None = None) -> KubeScheduler:
        if queues:
            cluster.configure(queues)
        service = cluster.start_scheduler(plugin_mode=True)
        started["rest"] = RestServer(SchedulerView(cluster.scheduler, shim_state=service.latest_state,
                                                   extender=service.extender),
                                     host="127.0.0.1", port=0)
        return KubeScheduler(cluster, started["rest"].url)

    yield cluster, start
    if "rest" in started:
        started["rest"].stop()
    cluster.close()


def test_a_pod_without_an_application_id_passes_every_node_and_is_left_to_kube_scheduler(plugin):
    cluster, start = plugin
    kube = start()
    cluster.pod("plain", cpu="500m")
    reply = kube.filter("plain")
    assert reply["NodeNames"] == kube.nodes and reply["FailedAndUnresolvableNodes"] == {} and reply["Error"] == ""
    assert reply["Nodes"] is None
    kube.bind("plain", kube.nodes[1])
    uid = cluster.pods()["plain"]["metadata"]["uid"]
    # Bound by kube-scheduler, it is counted on its node like any pod of another scheduler.
    wait_for(lambda: uid in {a.allocation_key for a in cluster.core_node(kube.nodes[1]).foreign_allocations})
    assert all(p.uid != uid for p in cluster.service.state().pods if not p.foreign)
    assert approval(cluster.pods()["plain"]) == ""


def test_a_placed_pod_passes_only_its_node_and_is_settled_once_bound(plugin):
    cluster, start = plugin
    kube = start()
    cluster.pod("job-0", cpu="500m", labels={"applicationId": "job"})
    node = approved_node(cluster, "job-0")
    assert cluster.node_of("job-0") is None  # the scheduler itself never binds in plugin mode
    wait_for(lambda: cluster.events("QuotaApproved", "job-0"))
    reply = kube.filter("job-0")
    assert reply["NodeNames"] == [node]
    assert set(reply["FailedAndUnresolvableNodes"]) == set(kube.nodes) - {node}
    kube.bind("job-0", node)
    wait_for(lambda: cluster.node_of("job-0") == node)
    uid = cluster.pods()["job-0"]["metadata"]["uid"]
    assert [p.state for p in cluster.service.state().pods if p.uid == uid] == ["Bound"]
    assert [a.allocation_key for a in cluster.core_node(node).allocations] == [uid]
    assert cluster.binds_per_pod() == Counter({"job-0": 1})


def test_a_failed_attempt_returns_the_pod_to_the_core_and_it_is_placed_again(plugin):
    cluster, start = plugin
    kube = start()
    cluster.pod("retry", cpu="500m", labels={"applicationId": "job"})
    node = approved_node(cluster, "retry")
    first = approval(cluster.pods()["retry"])
    assert kube.filter("retry")["NodeNames"] == [node]
    # kube-scheduler's bind failed (the pod was never bound): the next filter call sees the attempt in progress.
    reply = kube.filter("retry")
    assert reply["NodeNames"] == [] and set(reply["FailedAndUnresolvableNodes"]) == set(kube.nodes)
    assert f"the attempt on {node} failed" in reply["FailedAndUnresolvableNodes"][kube.nodes[0]]
    wait_for(lambda: cluster.events("PodBindFailure", "retry"))
    # The core places the pod again, and the pod is nudged with a new approval.
    wait_for(lambda: approval(cluster.pods()["retry"]) not in ("", first), timeout=15)
    again = approval(cluster.pods()["retry"]).split(" ")[0]
    assert kube.filter("retry")["NodeNames"] == [again]
    kube.bind("retry", again)
    wait_for(lambda: cluster.node_of("retry") == again)
    cluster.assert_consistent()


def test_a_failing_extender_bind_is_followed_by_a_new_placement(plugin):
    cluster, start = plugin
    kube = start()
    cluster.pod("flaky", cpu="500m", labels={"applicationId": "job"})
    node = approved_node(cluster, "flaky")
    first = approval(cluster.pods()["flaky"])
    assert kube.filter("flaky")["NodeNames"] == [node]
    other = next(n for n in kube.nodes if n != node)
    assert "allocated to" in kube.bind_through_extender("flaky", other)  # not where YuniKorn placed it
    cluster.sim.faults.fail(verb="create", resource="pods/binding", status=500, count=None, retry_after=0)
    error = kube.bind_through_extender("flaky", node)
    assert error and "failed" in error
    cluster.sim.faults.clear()
    assert cluster.node_of("flaky") is None
    assert kube.filter("flaky")["NodeNames"] == []  # the attempt failed: placed again
    wait_for(lambda: approval(cluster.pods()["flaky"]) not in ("", first), timeout=15)
    again = approval(cluster.pods()["flaky"]).split(" ")[0]
    assert kube.filter("flaky")["NodeNames"] == [again]
    assert kube.bind_through_extender("flaky", again) == ""
    wait_for(lambda: cluster.node_of("flaky") == again)
    assert cluster.binds_per_pod()["flaky"] == 1


def test_the_extender_binds_only_what_the_core_decided_to_the_node_it_decided(plugin):
    cluster, start = plugin
    kube = start(small_and_big(1))
    names = ["q0", "q1", "q2"]
    for name in names:
        cluster.pod(name, cpu="400m", labels={"applicationId": "quota", "queue": "root.small"})
    kube.schedule(names, expected=2)  # 2 x 400m fit in the queue's 1 vcore
    (over,) = [name for name in names if not cluster.node_of(name)]
    # A pod over its queue's maximum: the core placed it nowhere.
    assert kube.bind_through_extender(over, kube.nodes[0]).startswith(f"YuniKorn has not placed pod default/{over}")
    # A pod of another scheduler.
    cluster.pod("other", scheduler="default-scheduler")
    assert "is not for yunikorn (schedulerName default-scheduler)" in kube.bind_through_extender("other", kube.nodes[0])
    # A placed pod: only to its node, only under its own name and uid.
    cluster.pod("placed", labels={"applicationId": "job", "queue": "root.big"})
    node = approved_node(cluster, "placed")
    assert kube.filter("placed")["NodeNames"] == [node]
    assert kube.bind_through_extender("placed", "no-such-node") == f"pod default/placed is allocated to {node}, not no-such-node"
    status, reply = kube.post(BIND, {"PodName": "other", "PodNamespace": "default", "Node": node,
                                     "PodUID": kube.pod("placed")["metadata"]["uid"]})
    assert status == 200 and reply["Error"].startswith("pod default/other does not have uid")
    status, reply = kube.post(BIND, {"PodName": "placed", "PodNamespace": "default", "Node": node, "PodUID": "forged"})
    assert status == 200 and reply["Error"] == "pod default/placed does not have uid forged"
    # A pod that names no application is kube-scheduler's to place, on a node that exists.
    cluster.pod("plain")
    assert kube.bind_through_extender("plain", "no-such-node") == "node no-such-node does not exist"
    assert cluster.binds_per_pod() == Counter({name: 1 for name in names if name != over})
    assert not any(cluster.node_of(name) for name in (over, "other", "placed", "plain"))
    assert kube.bind_through_extender("plain", kube.nodes[1]) == ""
    assert kube.bind_through_extender("placed", node) == ""
    wait_for(lambda: cluster.node_of("plain") == kube.nodes[1] and cluster.node_of("placed") == node)
    cluster.assert_consistent()


def test_queue_quota_is_enforced_and_its_reason_is_the_filter_answer(plugin):
    cluster, start = plugin
    kube = start(small_and_big(1))
    names = [f"q{i}" for i in range(4)]
    for name in names:
        cluster.pod(name, cpu="400m", labels={"applicationId": "quota", "queue": "root.small"})
    kube.schedule(names, expected=2)  # 2 x 400m fit in the queue's 1 vcore
    waiting = [name for name in names if not cluster.node_of(name)]
    assert len(waiting) == 2

    def quota_reason() -> str:
        reasons = kube.filter(waiting[0])["FailedAndUnresolvableNodes"]
        return reasons[kube.nodes[0]]
    wait_for(lambda: quota_reason() != NOT_READY, timeout=15)
    assert "root.small" in quota_reason()
    for name in waiting:
        assert kube.filter(name)["NodeNames"] == []
    assert all(not cluster.node_of(name) for name in waiting)
    cluster.assert_consistent()


def test_lower_cased_keys_node_objects_and_bad_requests(plugin):
    cluster, start = plugin
    kube = start()
    cluster.pod("lower", cpu="500m", labels={"applicationId": "job"})
    node = approved_node(cluster, "lower")
    node_list = {"items": [n for n in cluster.sim.objects("nodes")]}
    status, reply = kube.post(FILTER, {"pod": kube.pod("lower"), "nodes": node_list, "nodenames": None})
    assert status == 200
    assert reply["NodeNames"] is None and [n["metadata"]["name"] for n in reply["Nodes"]["items"]] == [node]
    for body, expected in ((b"{not json", "Invalid JSON"), ({"NodeNames": kube.nodes}, "Pod is missing"),
                           ({"Pod": kube.pod("lower")}, "neither NodeNames nor Nodes"),
                           ({"Pod": {"metadata": {}}, "NodeNames": []}, "Invalid pod")):
        status, reply = kube.post(FILTER, body)
        assert status == 400 and expected in json.dumps(reply)
    status, reply = kube.post(BIND, {"PodName": "lower"})
    assert status == 400 and "PodNamespace, PodUID" in reply["description"]
    assert cluster.node_of("lower") is None


@pytest.mark.timeout(120)
def test_kube_schedulers_loop_places_200_pods_across_queues_like_normal_mode(kubesim, tmp_path):
    path = tmp_path / "kubeconfig"
    kubesim.write_kubeconfig(str(path))
    cluster = Cluster(kubesim, str(path))
    kubesim.seed_nodes(10, cpu="4")
    cluster.configure(small_and_big(6))
    service = cluster.start_scheduler(plugin_mode=True)
    rest = RestServer(SchedulerView(cluster.scheduler, extender=service.extender), host="127.0.0.1", port=0)
    try:
        kube = KubeScheduler(cluster, rest.url)
        small = [f"s{i}" for i in range(40)]
        big = [f"b{i}" for i in range(160)]
        for index, name in enumerate(small):
            cluster.pod(name, cpu="200m", labels={"applicationId": f"small-{index % 4}", "queue": "root.small"})
        for index, name in enumerate(big):
            cluster.pod(name, cpu="200m", labels={"applicationId": f"big-{index % 8}", "queue": "root.big"})
        # The small queue holds 6 vcore = 30 pods of 200m; everything else fits the 40 vcore cluster.
        kube.schedule(big + small, expected=190)
        cluster.assert_consistent()
        pods = cluster.pods()
        assert sum(bool(pods[n]["spec"].get("nodeName")) for n in small) == 30
        assert all(pods[n]["spec"].get("nodeName") for n in big)
        assert set(cluster.binds_per_pod().values()) == {1}
        for name in big + small:
            if pods[name]["spec"].get("nodeName"):
                assert pods[name]["spec"]["nodeName"] == approval(pods[name]).split(" ")[0]
            else:
                assert kube.filter(name)["NodeNames"] == []
        wait_for(lambda: sum(p.state == "Bound" for p in cluster.service.state().pods if not p.foreign) == 190)
    finally:
        rest.stop()
        cluster.close()


