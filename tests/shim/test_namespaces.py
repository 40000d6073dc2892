"""Namespace annotations, from the Kubernetes API to the queue that holds the namespace's pods: the shim
turns them into application tags, the core gives them to the namespace's queue, and the quota holds."""

import json

import pytest

from actors.shim.namespaces import namespace_app_tags, read_annotations
from rest.app import SchedulerView
from rest.server import RestServer
from tests.rest.test_with_cluster import Http
from tests.shim.cluster import Cluster
from tests.shim.doubles import wait_for

GiB = 2**30


def test_the_deprecated_max_annotations_give_the_quota_when_there_is_no_namespace_quota():
    tags = namespace_app_tags("ns", {"yunikorn.apache.org/namespace.max.cpu": "1500m",
                                     "yunikorn.apache.org/namespace.max.memory": "2Gi"})
    assert json.loads(tags["namespace.resourcequota"]) == {"resources": {"memory": {"value": 2 * GiB},
                                                                         "vcore": {"value": 1500}}}
    only_cpu = namespace_app_tags("ns", {"yunikorn.apache.org/namespace.max.cpu": "2"})
    assert json.loads(only_cpu["namespace.resourcequota"]) == {"resources": {"vcore": {"value": 2000}}}


def test_namespace_quota_wins_over_the_deprecated_annotations():
    tags = namespace_app_tags("ns", {"yunikorn.apache.org/namespace.quota": '{"cpu": "1"}',
                                     "yunikorn.apache.org/namespace.max.cpu": "8",
                                     "yunikorn.apache.org/namespace.max.memory": "8Gi"})
    assert json.loads(tags["namespace.resourcequota"]) == {"resources": {"vcore": {"value": 1000}}}


@pytest.mark.parametrize("annotations", [
    {"yunikorn.apache.org/namespace.max.cpu": "lots"},
    {"yunikorn.apache.org/namespace.quota": '["cpu"]'},
    {"yunikorn.apache.org/namespace.quota": '{"cpu": "0"}'},  # all zero: no quota, as upstream
    {"yunikorn.apache.org/namespace.guaranteed": '{"memory": "0"}'},
])
def test_unusable_annotations_give_no_tag(annotations):
    assert namespace_app_tags("ns", annotations) == {"namespace": "ns"}


@pytest.mark.parametrize(("annotations", "problem"), [
    ({"yunikorn.apache.org/namespace.maxApps": "\u00b2"}, "not a whole number written in the digits 0-9"),
    ({"yunikorn.apache.org/namespace.maxApps": "-1"}, "negative"),
    ({"yunikorn.apache.org/namespace.maxApps": "99999999999999999999"}, "out of range"),
    ({"yunikorn.apache.org/namespace.quota": '{"cpu": 1}'}, "must be a JSON object of strings"),  # Go: map[string]string
    ({"yunikorn.apache.org/namespace.quota": "[" * 5000}, "nests deeper than"),
    ({"yunikorn.apache.org/namespace.guaranteed": '{"memory": "9Ei"}'}, "does not fit in int64"),
])
def test_annotations_upstream_refuses_are_left_out_and_named(annotations, problem):
    tags, problems = read_annotations("ns", annotations)
    assert tags == {"namespace": "ns"} and any(problem in p for p in problems), problems


def test_max_apps_is_read_as_go_reads_it():
    assert read_annotations("ns", {"yunikorn.apache.org/namespace.maxApps": "+5"}) == (
        {"namespace": "ns", "namespace.resourcemaxapps": "5"}, [])


def namespace(cluster: Cluster, name: str, **annotations: str) -> None:
    cluster.core_api.create_namespace({"metadata": {"name": name, "annotations": {
        f"yunikorn.apache.org/{key.replace('_', '.')}": value for key, value in annotations.items()}}})


def test_annotated_namespaces_get_their_queues_limits_end_to_end(cluster):
    """The default configuration (no yunikorn-configs): a queue per namespace, under its parent queue."""
    cluster.node("node-a", cpu="4", memory="16Gi")
    cluster.node("node-b", cpu="4", memory="16Gi")
    # Annotation keys: namespace_quota -> namespace.quota and so on (dots cannot be keyword arguments).
    namespace(cluster, "capped", namespace_quota='{"cpu": "1", "memory": "1Gi"}',
              namespace_guaranteed='{"cpu": "500m"}', parentqueue="root.tenants")
    namespace(cluster, "legacy", namespace_max_cpu="600m")
    namespace(cluster, "single", namespace_maxApps="1")
    cluster.start_scheduler()
    server = RestServer(SchedulerView(cluster.scheduler), host="127.0.0.1", port=0)
    try:
        http = Http(server.url)
        capped = [f"capped-{i}" for i in range(4)]
        for name in capped:  # 4 x 400m in a namespace with a quota of 1 vcore: two run
            cluster.pod(name, cpu="400m", memory="128Mi", namespace="capped", labels={"applicationId": "capped-app"})
        legacy = [f"legacy-{i}" for i in range(2)]
        for name in legacy:  # 2 x 400m under the deprecated 600m: one runs
            cluster.pod(name, cpu="400m", memory="64Mi", namespace="legacy", labels={"applicationId": "legacy-app"})
        cluster.pod("single-1", namespace="single", labels={"applicationId": "single-1"})
        cluster.pod("single-2", namespace="single", labels={"applicationId": "single-2"})

        wait_for(lambda: sum(cluster.bound(n) for n in capped) == 2, timeout=30)
        wait_for(lambda: sum(cluster.bound(n) for n in legacy) == 1, timeout=30)
        wait_for(lambda: sum(cluster.bound(n) for n in ("single-1", "single-2")) == 1, timeout=30)
        waiting = [n for n in capped if not cluster.bound(n)]
        wait_for(lambda: all(cluster.events("FailedScheduling", n) for n in waiting), timeout=30)
        assert "root.tenants.capped" in cluster.events("FailedScheduling", waiting[0])[0].message

        queue = http.ok("/ws/v1/partition/default/queue/root.tenants.capped")
        assert queue["maxResource"] == {"vcore": 1000, "memory": GiB}
        assert queue["guaranteedResource"] == {"vcore": 500}
        assert queue["allocatedResource"]["vcore"] == 800 and queue["absUsedCapacity"]["vcore"] == 80
        assert http.ok("/ws/v1/partition/default/queue/root.tenants")["isLeaf"] is False
        assert http.ok("/ws/v1/partition/default/queue/root.legacy")["maxResource"] == {"vcore": 600}
        assert http.ok("/ws/v1/partition/default/queue/root.single")["maxRunningApps"] == 1
        assert sum(cluster.bound(n) for n in capped) == 2, "the quota still holds"
        cluster.assert_consistent()
    finally:
        server.stop()


def test_an_annotation_left_out_is_a_warning_on_the_namespace_and_its_pods_run(cluster):
    cluster.node("node-a")
    namespace(cluster, "listed", namespace_maxApps="-1")  # seen when the scheduler lists namespaces
    cluster.start_scheduler()
    namespace(cluster, "odd", namespace_maxApps="\u00b2", namespace_quota='{"cpu": 2}')
    cluster.pod("runs", namespace="odd")
    cluster.wait_bound("runs")
    message = wait_for(lambda: cluster.events("NamespaceAnnotationIgnored", "odd"))[0].message
    assert "namespace.maxApps" in message and "namespace.quota" in message
    assert "negative" in wait_for(lambda: cluster.events("NamespaceAnnotationIgnored", "listed"))[0].message
