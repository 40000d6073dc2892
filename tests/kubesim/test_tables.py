"""Tables for ``kubectl get``: lists, single objects and watch events as ``meta.k8s.io/v1`` Tables with the
columns kube-apiserver prints."""

import http.client
import json
import re

import pytest

from kubesim.tables import human_duration

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"


def pod(name, **spec):
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


def get(kubesim, path, accept=TABLE):
    conn = http.client.HTTPConnection(kubesim.host, kubesim.port, timeout=10)
    try:
        conn.request("GET", path, headers={"Accept": accept})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def columns(table, priority=None):
    return [c["name"] for c in table["columnDefinitions"] if priority is None or c["priority"] == priority]


def test_a_pod_list_as_a_table(kubesim, core):
    kubesim.seed_nodes(1)
    core.create_namespaced_pod("default", pod("a"))
    core.create_namespaced_pod("default", pod("b", readinessGates=[{"conditionType": "example.com/ready"}]))
    core.create_namespaced_pod_binding("a", "default", {"metadata": {"name": "a"}, "target": {"name": "node-00000"}},
                                       _preload_content=False)
    status, table = get(kubesim, "/api/v1/namespaces/default/pods")
    assert status == 200 and (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert columns(table, 0) == ["Name", "Ready", "Status", "Restarts", "Age"]
    assert columns(table, 1) == ["IP", "Node", "Nominated Node", "Readiness Gates"]
    assert table["columnDefinitions"][0]["format"] == "name"
    rows = {row["cells"][0]: row for row in table["rows"]}
    assert rows["a"]["cells"][1:4] == ["0/1", "Pending", "0"]
    assert rows["a"]["cells"][4].endswith("s")
    assert rows["a"]["cells"][5:] == ["<none>", "node-00000", "<none>", "<none>"]
    assert rows["b"]["cells"][8] == "0/1"
    assert rows["a"]["object"]["kind"] == "PartialObjectMetadata"
    assert rows["a"]["object"]["metadata"]["name"] == "a" and "spec" not in rows["a"]["object"]
    assert int(table["metadata"]["resourceVersion"]) == kubesim.store.rv


def test_pod_status_shows_container_states_and_deletion(kubesim, core):
    core.create_namespaced_pod("default", pod("p"))
    core.patch_namespaced_pod_status("p", "default", {"status": {"phase": "Running", "containerStatuses": [
        {"name": "c", "ready": False, "restartCount": 3, "image": "busybox", "imageID": "",
         "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}})
    _, table = get(kubesim, "/api/v1/namespaces/default/pods/p")
    assert [row["cells"][:4] for row in table["rows"]] == [["p", "0/1", "CrashLoopBackOff", "3"]]


def test_include_object_and_a_single_object(kubesim, core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}})
    _, table = get(kubesim, "/api/v1/namespaces/default/configmaps/cm?includeObject=Object")
    assert columns(table) == ["Name", "Data", "Age"]
    [row] = table["rows"]
    assert row["cells"][:2] == ["cm", 2]
    assert row["object"]["data"] == {"a": "1", "b": "2"}
    assert table["metadata"]["resourceVersion"] == row["object"]["metadata"]["resourceVersion"]
    _, table = get(kubesim, "/api/v1/namespaces/default/configmaps?includeObject=None")
    assert ["object" in row for row in table["rows"]] == [False]
    status, refused = get(kubesim, "/api/v1/namespaces/default/configmaps?includeObject=Everything")
    assert (status, refused["reason"]) == (400, "BadRequest")


def test_nodes_namespaces_events_and_other_kinds(kubesim, core):
    kubesim.seed_nodes(1, labels={"node-role.kubernetes.io/control-plane": ""})
    core.patch_node("node-00000", {"spec": {"unschedulable": True}})
    _, nodes = get(kubesim, "/api/v1/nodes")
    assert columns(nodes, 0) == ["Name", "Status", "Roles", "Age", "Version"]
    assert nodes["rows"][0]["cells"][:3] == ["node-00000", "Ready,SchedulingDisabled", "control-plane"]
    _, namespaces = get(kubesim, "/api/v1/namespaces")
    assert columns(namespaces) == ["Name", "Status", "Age"]
    assert sorted(row["cells"][:2] for row in namespaces["rows"]) == [["default", "Active"], ["kube-system", "Active"]]
    core.create_namespaced_event("default", {
        "metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Scheduled", "message": "assigned", "type": "Normal", "count": 2,
        "source": {"component": "yunikorn"}, "lastTimestamp": "2020-01-01T00:00:00Z"})
    _, events = get(kubesim, "/api/v1/namespaces/default/events")
    assert columns(events, 0) == ["Last Seen", "Type", "Reason", "Object", "Message"]
    assert columns(events, 1) == ["Subobject", "Source", "First Seen", "Count", "Name"]
    cells = dict(zip(columns(events), events["rows"][0]["cells"], strict=True))
    assert re.match(r"^\d+y", cells["Last Seen"]) and cells["Object"] == "pod/p" and cells["Count"] == 2
    assert (cells["Type"], cells["Reason"], cells["Message"], cells["Source"]) == ("Normal", "Scheduled", "assigned",
                                                                                 "yunikorn")
    core.create_namespaced_service_account("default", {"metadata": {"name": "sa"}})
    _, accounts = get(kubesim, "/api/v1/namespaces/default/serviceaccounts")
    assert columns(accounts) == ["Name", "Age"] and "sa" in [row["cells"][0] for row in accounts["rows"]]


def test_a_watch_sends_each_event_as_a_one_row_table(kubesim, core):
    core.create_namespaced_pod("default", pod("before"))
    conn = http.client.HTTPConnection(kubesim.host, kubesim.port, timeout=10)
    try:
        conn.request("GET", "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=5", headers={"Accept": TABLE})
        response = conn.getresponse()
        assert response.status == 200
        first = json.loads(response.readline())
        core.create_namespaced_pod("default", pod("after"))
        second = json.loads(response.readline())
    finally:
        conn.close()
    for event, name in ((first, "before"), (second, "after")):
        assert event["type"] == "ADDED" and event["object"]["kind"] == "Table"
        assert columns(event["object"], 0) == ["Name", "Ready", "Status", "Restarts", "Age"]
        assert [row["cells"][0] for row in event["object"]["rows"]] == [name]


def test_plain_json_is_unchanged(kubesim, core):
    core.create_namespaced_pod("default", pod("p"))
    _, listed = get(kubesim, "/api/v1/namespaces/default/pods", accept="application/json")
    assert listed["kind"] == "PodList" and listed["items"][0]["metadata"]["name"] == "p"


@pytest.mark.parametrize("seconds, shown", [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (200, "3m20s"), (600, "10m"),
    (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (5 * 3600 + 600, "5h10m"), (20 * 3600, "20h"),
    (2 * 86400, "2d"), (3 * 86400 + 4 * 3600, "3d4h"), (40 * 86400, "40d"), (800 * 86400, "2y70d"),
    (9 * 365 * 86400, "9y"),
])
def test_ages_read_as_kubectl_shows_them(seconds, shown):
    assert human_duration(seconds) == shown
