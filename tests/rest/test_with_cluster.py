"""The REST API of a running scheduler fed by kubesim: pods created with the official client go through
the shim and the core, and every endpoint is read over real HTTP."""

from __future__ import annotations

import contextlib
import json
import pathlib
import urllib.error
import urllib.request
from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubesim import KubeSim
from rest.app import SchedulerView
from rest.server import RestServer
from si.kubernetes import ANNOTATION_USER_INFO
from si.quantity import from_kubernetes
from tests import queues as built
from tests.shim.cluster import Cluster
from tests.waiting import wait_for

SMALL_AND_BIG = (built.queue("small", max={"vcore": 1}), built.queue("big"))
QUEUES = built.config(*SMALL_AND_BIG, create=False)
NODES = ("node-a", "node-b", "node-c", "node-d")
SMALL = [f"small-{i}" for i in range(4)]  # 4 x 400m in a queue of 1 vcore: two wait
BIG = [f"big-{i}" for i in range(5)]


class Http:
    def __init__(self, url: str) -> None:
        self.url = url

    def raw(self, path: str, **headers):
        request = urllib.request.Request(self.url + path, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()

    def get(self, path: str, **headers):
        status, _, body = self.raw(path, **headers)
        return status, json.loads(body) if body else None

    def ok(self, path: str):
        status, body = self.get(path)
        assert status == 200, (path, body)
        return body


@contextlib.contextmanager
def served(directory: pathlib.Path, prepare: Callable[[Cluster], None] = lambda cluster: None,
           kubelet_delay: float | None = None):
    """kubesim (with kubelets that run bound pods after ``kubelet_delay`` seconds, if given), the
    scheduler on it once ``prepare(cluster)`` has run, and the REST API reading the core, the shim's
    state and the actors' failures, as the command serves it; all stopped at the end."""
    sim = KubeSim(bookmark_interval=0.2, kubelet_delay=kubelet_delay).start()
    sim.write_kubeconfig(str(directory / "kubeconfig"))
    cluster = Cluster(sim, str(directory / "kubeconfig"))
    server = None
    try:
        prepare(cluster)
        service = cluster.start_scheduler()
        server = RestServer(SchedulerView(cluster.scheduler, shim_state=service.latest_state,
                                          actor_failures=service.supervision.failures), host="127.0.0.1", port=0)
        yield cluster, Http(server.url)
    finally:
        if server is not None:
            server.stop()
        cluster.close()
        sim.stop()


def nodes_and_queues(cluster: Cluster) -> None:
    for name in NODES:
        cluster.node(name, cpu="2", memory="8Gi")
    cluster.configure(QUEUES)
    cluster.pod("foreign", cpu="500m", memory="256Mi", scheduler="default-scheduler", node="node-a")


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    with served(tmp_path_factory.mktemp("rest-cluster"), nodes_and_queues) as (cluster, http):
        for name in SMALL:
            cluster.pod(name, cpu="400m", memory="128Mi", labels={"applicationId": "small-app", "queue": "root.small"})
        for name in BIG:
            cluster.pod(name, cpu="300m", memory="256Mi", labels={"applicationId": "big-app", "queue": "root.big"})
        wait_for(lambda: sum(cluster.bound(n) for n in SMALL) == 2 and cluster.bound(*BIG), timeout=30)
        waiting = [n for n in SMALL if not cluster.bound(n)]
        wait_for(lambda: all(cluster.events("FailedScheduling", n) for n in waiting), timeout=30)
        yield cluster, http


def pods(cluster: Cluster) -> dict[str, dict]:
    return cluster.pods()


def requested(pod: dict) -> dict[str, int]:
    total: dict[str, int] = {"pods": 1}
    for container in pod["spec"]["containers"]:
        for name, value in from_kubernetes(container["resources"]["requests"]).items():
            total[name] = total.get(name, 0) + value
    return total


def test_partition_and_nodes_add_up_with_the_foreign_pod_apart(running):
    cluster, http = running
    nodes = http.ok("/ws/v1/partition/default/nodes")
    assert sorted(n["nodeID"] for n in nodes) == list(NODES)
    foreign_uid = pods(cluster)["foreign"]["metadata"]["uid"]
    for node in nodes:
        for name in node["capacity"]:
            assert node["allocated"].get(name, 0) == sum(a["resource"].get(name, 0) for a in node["allocations"])
            assert node["occupied"].get(name, 0) == sum(a["resource"].get(name, 0) for a in node["foreign_allocations"])
            assert node["available"][name] == (node["capacity"][name] - node["allocated"].get(name, 0)
                                               - node["occupied"].get(name, 0))
        assert foreign_uid not in [a["allocationKey"] for a in node["allocations"]]
        assert isinstance(node["schedulable"], bool) and isinstance(node["attributes"], dict)
    node_a = next(n for n in nodes if n["nodeID"] == "node-a")
    assert [a["allocationKey"] for a in node_a["foreign_allocations"]] == [foreign_uid]
    assert node_a["occupied"]["vcore"] == 500
    assert http.ok("/ws/v1/partition/default/node/node-a")["foreign_allocations"] == node_a["foreign_allocations"]

    (partition,) = http.ok("/ws/v1/partitions")
    capacity = partition["capacity"]
    assert capacity["capacity"]["vcore"] == 4 * 2000 and partition["totalNodes"] == 4
    for name, used in capacity["usedCapacity"].items():
        assert used == sum(n["allocated"].get(name, 0) + n["occupied"].get(name, 0) for n in nodes)
    assert partition["totalContainers"] == 7
    assert partition["applications"]["total"] == 2
    assert http.ok("/ws/v1/clusters")[0]["partition"] == "default"


def test_applications_match_the_pods_kubesim_holds(running):
    cluster, http = running
    current = pods(cluster)
    for app_id, names, queue in (("small-app", SMALL, "root.small"), ("big-app", BIG, "root.big")):
        app = http.ok(f"/ws/v1/partition/default/application/{app_id}")
        bound = {current[n]["metadata"]["uid"]: current[n]["spec"]["nodeName"] for n in names
                 if current[n]["spec"].get("nodeName")}
        assert {a["allocationKey"]: a["nodeId"] for a in app["allocations"]} == bound
        waiting = {current[n]["metadata"]["uid"] for n in names if not current[n]["spec"].get("nodeName")}
        assert {r["allocationKey"] for r in app["requests"]} == waiting
        assert app["pendingResource"].get("vcore", 0) == 400 * len(waiting)
        assert app["queueName"] == queue and app["user"] == "nobody"
        assert app["applicationState"] == "Running" and isinstance(app["stateLog"], list)
        assert http.ok(f"/ws/v1/partition/default/queue/{queue}/application/{app_id}")["applicationID"] == app_id
    active = http.ok("/ws/v1/partition/default/applications/active")
    assert sorted(a["applicationID"] for a in active) == ["big-app", "small-app"]
    assert http.ok("/ws/v1/partition/default/applications/rejected") == []
    assert [a["applicationID"] for a in http.ok("/ws/v1/partition/default/queue/root.small/applications")] == [
        "small-app"]


def test_queues_count_what_is_bound_and_the_quota_that_holds_the_rest(running):
    cluster, http = running
    current = pods(cluster)
    root = http.ok("/ws/v1/partition/default/queues")
    assert root["queuename"] == "root" and sorted(root["childNames"]) == ["big", "small"]
    for queue, names in (("root.small", SMALL), ("root.big", BIG)):
        body = http.ok(f"/ws/v1/partition/default/queue/{queue}")
        expected: dict[str, int] = {}
        for name in names:
            if current[name]["spec"].get("nodeName"):
                for resource, value in requested(current[name]).items():
                    expected[resource] = expected.get(resource, 0) + value
        assert body["allocatedResource"] == expected
        assert body["isLeaf"] is True and body["parent"] == "root"
    small = http.ok("/ws/v1/partition/default/queue/root.small")
    assert small["maxResource"] == {"vcore": 1000} and small["pendingResource"]["vcore"] == 800
    assert "children" in http.ok("/ws/v1/partition/default/queue/root?subtree")
    assert http.ok("/ws/v1/partition/default/placementrules")[0]["name"] == "provided"
    waiting = next(n for n in SMALL if not current[n]["spec"].get("nodeName"))
    assert "root.small" in cluster.events("FailedScheduling", waiting)[0].message


def test_usage_health_events_config_metrics_and_probes(running):
    cluster, http = running
    users = http.ok("/ws/v1/partition/default/usage/users")
    assert [u["userName"] for u in users] == ["nobody"]
    assert http.ok("/ws/v1/partition/default/usage/user/nobody")["userName"] == "nobody"
    assert isinstance(http.ok("/ws/v1/partition/default/usage/groups"), list)
    health = http.ok("/ws/v1/scheduler/healthcheck")
    assert health["Healthy"] is True, health
    assert http.ok("/ws/v1/scheduler/node-utilizations")[0]["utilizations"]

    first = http.ok("/ws/v1/events/batch?count=4")
    assert len(first["EventRecords"]) == 4
    following = http.ok(f"/ws/v1/events/batch?start={first['LowestID'] + 4}&count=4")
    ids = [e["id"] for e in first["EventRecords"] + following["EventRecords"]]
    assert ids == list(range(first["LowestID"], first["LowestID"] + 8))

    status, headers, body = http.raw("/ws/v1/config")
    assert status == 200 and headers["Content-Type"] == "application/x-yaml" and b"small" in body
    assert http.get("/ws/v1/config", Accept="application/json")[1]["Partitions"][0]["Name"] == "default"
    status, _, body = http.raw("/ws/v1/metrics")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    assert "yunikorn_scheduler_container_allocation_attempt" in families
    # The actor system: one actor per node and per application, on the shared dispatcher.
    actors = {s.labels["kind"]: s.value for s in families["yunikorn_actors"].samples}
    assert actors["node"] == len(NODES) and actors["application"] == 2
    assert actors["context"] == actors["outlet"] == actors["binder"] == actors["partition"] == 1
    assert actors["informer"] == 8  # pods, nodes, configmaps, namespaces, priority classes, claims, volumes, classes
    handled = {s.labels["dispatcher"]: s.value for s in families["yunikorn_dispatcher_messages"].samples
               if s.name.endswith("_total")}
    assert handled["actors"] > 0
    assert families["yunikorn_dispatcher_busy_seconds"].type == "counter"
    assert {s.labels["dispatcher"] for s in families["yunikorn_dispatcher_run_queue"].samples} >= {"actors"}
    assert http.get("/ws/v1/health/live")[0] == 200
    assert http.get("/ws/v1/health/ready") == (200, {"ready": True, "shimState": "Running"})

    def bound_in_the_shims_state():  # the shim publishes its state after the binds, not with them
        dump = http.ok("/ws/v1/fullstatedump")
        states = {p["name"]: p for p in dump["rmDiagnostics"]["pods"]}
        return dump if all(states.get(n, {}).get("state") == "Bound" for n in BIG) else None

    dump = wait_for(bound_in_the_shims_state, timeout=10, message="the big pods Bound in the shim's state")
    assert dump["rmDiagnostics"]["state"] == "Running"
    shim_pods = {p["name"]: p for p in dump["rmDiagnostics"]["pods"]}
    assert shim_pods["foreign"]["foreign"] is True


def test_unknown_names_are_404_and_bad_parameters_400(running):
    _, http = running
    for path in ("/ws/v1/partition/nowhere/nodes", "/ws/v1/partition/default/queue/root.none",
                 "/ws/v1/partition/default/application/no-app", "/ws/v1/partition/default/node/no-node",
                 "/ws/v1/partition/default/usage/group/no-group"):
        status, body = http.get(path)
        assert status == 404 and body["status_code"] == 404, path
    for path in ("/ws/v1/partition/default/applications/sleeping", "/ws/v1/events/batch?count=lots"):
        assert http.get(path)[0] == 400, path


def test_a_deleted_pod_leaves_its_node_and_queue(running):
    """Last in the module: it changes the cluster the other tests read."""
    cluster, http = running
    current = pods(cluster)
    victim = BIG[0]
    uid, node = current[victim]["metadata"]["uid"], current[victim]["spec"]["nodeName"]
    before = http.ok(f"/ws/v1/partition/default/node/{node}")
    cluster.core_api.delete_namespaced_pod(victim, "default")

    def released():
        after = http.ok(f"/ws/v1/partition/default/node/{node}")
        return uid not in [a["allocationKey"] for a in after["allocations"]] and after
    after = wait_for(released, timeout=15)
    assert after["allocated"]["vcore"] == before["allocated"]["vcore"] - 300
    big = http.ok("/ws/v1/partition/default/queue/root.big")
    assert big["allocatedResource"]["vcore"] == 300 * (len(BIG) - 1)


def test_a_gang_shows_its_placeholders_and_their_replacement(tmp_path):
    def two_nodes(cluster: Cluster) -> None:
        for name in ("node-a", "node-b"):
            cluster.node(name, cpu="2", memory="8Gi")

    groups = [{"name": "workers", "minMember": 2, "minResource": {"cpu": "500m", "memory": "256Mi"}}]
    with served(tmp_path, two_nodes) as (cluster, http):
        cluster.core_api.create_namespaced_pod("default", {
            "metadata": {"name": "worker-0", "labels": {"applicationId": "gang"},
                         "annotations": {"yunikorn.apache.org/task-groups": json.dumps(groups),
                                         "yunikorn.apache.org/task-group-name": "workers"}},
            "spec": {"schedulerName": "yunikorn", "containers": [{"name": "main", "image": "x", "resources": {
                "requests": {"cpu": "500m", "memory": "256Mi"}}}]}})
        cluster.wait_bound("worker-0")

        def gang():
            status, body = http.get("/ws/v1/partition/default/application/gang")
            return body if status == 200 else None

        app = wait_for(lambda: (a := gang()) and len(a["allocations"]) == 2 and a)
        assert app["placeholderData"] == [{"taskGroupName": "workers", "count": 2, "replaced": 1, "timedout": 0,
                                           "minResource": {"memory": 256 * 2**20, "pods": 1, "vcore": 500}}]
        flags = sorted((a["placeholder"], a["placeholderUsed"], a["taskGroupName"]) for a in app["allocations"])
        assert flags == [(False, True, "workers"), (True, False, "workers")]
        queue = http.ok("/ws/v1/partition/default/queue/root.default")
        assert queue["allocatedResource"]["vcore"] == 1000  # the placeholder left counts in the queue


FRESHNESS_QUEUES = built.config(*SMALL_AND_BIG, built.queue("team", limits=[
    {"limit": "developers", "groups": ["developers"], "maxresources": {"vcore": 100}},
    {"limit": "every other group", "groups": ["*"], "maxresources": {"vcore": 100}}]), create=False)


def test_a_read_right_after_a_pod_runs_sees_its_usage(tmp_path):
    """Upstream reads live state, and its e2e suite reads queue and group usage as soon as a pod runs."""
    def prepare(cluster: Cluster) -> None:
        cluster.node("node-a", cpu="4", memory="8Gi")
        cluster.configure(FRESHNESS_QUEUES)

    with served(tmp_path, prepare, kubelet_delay=0.0) as (cluster, http):
        assert not http.ok("/ws/v1/partition/default/queue/root.team")["allocatedResource"]
        assert http.ok("/ws/v1/partition/default/usage/groups") == []
        cluster.core_api.create_namespaced_pod("default", {
            "metadata": {"name": "fresh", "labels": {"applicationId": "fresh-app", "queue": "root.team"},
                         "annotations": {ANNOTATION_USER_INFO: '{"user": "ann", "groups": ["developers"]}'}},
            "spec": {"schedulerName": "yunikorn", "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "300m"}}}]}})
        wait_for(lambda: pods(cluster)["fresh"]["status"].get("phase") == "Running", timeout=20,
                 message="the pod runs")
        assert http.ok("/ws/v1/partition/default/queue/root.team")["allocatedResource"]["vcore"] == 300
        (group,) = http.ok("/ws/v1/partition/default/usage/groups")
        assert group["groupName"] == "developers" and group["applications"] == ["fresh-app"]
        assert group["queues"]["resourceUsage"]["vcore"] == 300


def test_an_application_whose_last_pod_goes_completes_on_the_core_timer(tmp_path):
    """As upstream: the shim keeps the application, the core moves it Completing, a pod that comes
    meanwhile runs in it again, and only the core's timer (paced here by the scheduling interval)
    makes it Completed, among the completed applications."""
    def prepare(cluster: Cluster) -> None:
        cluster.node("node-a", cpu="4", memory="8Gi")
        cluster.configure(FRESHNESS_QUEUES, **{"service.schedulingInterval": "1h"})

    with served(tmp_path, prepare) as (cluster, http):
        def state() -> str:
            status, app = http.get("/ws/v1/partition/default/application/short-app")
            return app["applicationState"] if status == 200 else "Gone"

        labels = {"applicationId": "short-app", "queue": "root.team"}
        cluster.pod("first", labels=labels)
        cluster.wait_bound("first")
        cluster.core_api.delete_namespaced_pod("first", "default")
        wait_for(lambda: state() == "Completing", message="Completing once its last pod is gone")
        cluster.pod("again", labels=labels)
        cluster.wait_bound("again")
        assert state() == "Running"
        cluster.core_api.delete_namespaced_pod("again", "default")
        wait_for(lambda: state() == "Completing", message="Completing again")
        cluster.configure(FRESHNESS_QUEUES, **{"service.schedulingInterval": "50ms"})
        wait_for(lambda: state() == "Completed", message="Completed on the core's timer")
        completed = http.ok("/ws/v1/partition/default/applications/completed")
        assert [(a["applicationID"], a["applicationState"]) for a in completed] == [("short-app", "Completed")]
