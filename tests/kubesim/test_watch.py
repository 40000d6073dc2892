"""List and watch through the official client: resource versions, selectors, bookmarks, 410 Gone."""

import json
import threading

import pytest
from kubernetes import client, watch
from kubernetes.client import ApiException

from kubesim import KubeSim


def pod(name, labels=None, phase=None):
    return {"metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def collect(core, count, timeout=3, **kwargs):
    """The first ``count`` events of a pod watch (ends earlier on the server's timeout)."""
    events = []
    stream = watch.Watch()
    for event in stream.stream(core.list_namespaced_pod, "default", timeout_seconds=timeout,
                               _request_timeout=timeout + 5, **kwargs):
        events.append(event)
        if len(events) >= count:
            stream.stop()
    return events


def test_watch_from_a_list_sees_exactly_the_later_changes(core):
    core.create_namespaced_pod("default", pod("before"))
    listed = core.list_namespaced_pod("default")
    core.create_namespaced_pod("default", pod("after"))
    core.patch_namespaced_pod("after", "default", {"metadata": {"labels": {"x": "1"}}})
    core.delete_namespaced_pod("before", "default")
    events = collect(core, 3, resource_version=listed.metadata.resource_version)
    assert [(e["type"], e["object"].metadata.name) for e in events] == [
        ("ADDED", "after"), ("MODIFIED", "after"), ("DELETED", "before")]


def test_watch_without_a_version_starts_with_the_current_objects(core):
    core.create_namespaced_pod("default", pod("a"))
    events = collect(core, 1, resource_version="0")
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "a")]


def test_watch_in_all_namespaces_and_in_one(kubesim, core):
    kubesim.create_namespace("other")
    core.create_namespaced_pod("other", pod("o"))
    core.create_namespaced_pod("default", pod("d"))
    everywhere = []
    stream = watch.Watch()
    for event in stream.stream(core.list_pod_for_all_namespaces, resource_version="0", timeout_seconds=1,
                               _request_timeout=5):
        everywhere.append(event["object"].metadata.name)
    assert sorted(everywhere) == ["d", "o"]
    assert [e["object"].metadata.name for e in collect(core, 5, timeout=1, resource_version="0")] == ["d"]


def test_a_watch_ends_at_its_timeout(core):
    assert collect(core, 10, timeout=1, resource_version=core.list_namespaced_pod("default").metadata.resource_version) == []


def test_bookmarks_carry_a_resource_version_to_resume_from(kubesim, core):
    listed = core.list_namespaced_pod("default")
    core.create_namespaced_pod("default", pod("a"))
    raw = []
    stream = watch.Watch()
    for event in stream.stream(core.list_namespaced_pod, "default", resource_version=listed.metadata.resource_version,
                               allow_watch_bookmarks=True, timeout_seconds=2, _request_timeout=6):
        raw.append(event)
        if event["type"] == "BOOKMARK":
            stream.stop()
    assert [e["type"] for e in raw] == ["ADDED", "BOOKMARK"]
    bookmark_rv = int(raw[1]["raw_object"]["metadata"]["resourceVersion"])
    assert bookmark_rv >= int(raw[0]["object"].metadata.resource_version)
    core.create_namespaced_pod("default", pod("b"))
    resumed = collect(core, 1, resource_version=str(bookmark_rv))
    assert [e["object"].metadata.name for e in resumed] == ["b"]


def test_410_after_history_rolls_over(kube_api):
    sim = KubeSim(history_size=5).start()
    try:
        core = client.CoreV1Api(sim.api_client())
        start = core.list_namespaced_pod("default").metadata.resource_version
        for i in range(10):
            core.create_namespaced_pod("default", pod(f"p{i}"))
        with pytest.raises(ApiException) as error:
            collect(core, 1, resource_version=start)
        assert error.value.status == 410
        latest = core.list_namespaced_pod("default").metadata.resource_version
        core.create_namespaced_pod("default", pod("fresh"))
        assert [e["object"].metadata.name for e in collect(core, 1, resource_version=latest)] == ["fresh"]
    finally:
        sim.stop()


@pytest.mark.parametrize(("selector", "expected"), [
    ("app=web", ["web1", "web2"]), ("app==web", ["web1", "web2"]), ("app!=web", ["db", "bare"]),
    ("app in (web,db)", ["web1", "web2", "db"]), ("app notin (web)", ["db", "bare"]),
    ("tier", ["web1", "db"]), ("!tier", ["web2", "bare"]), ("app=web,tier", ["web1"]),
])
def test_label_selectors(core, selector, expected):
    for name, labels in [("web1", {"app": "web", "tier": "front"}), ("web2", {"app": "web"}),
                         ("db", {"app": "db", "tier": "back"}), ("bare", {})]:
        core.create_namespaced_pod("default", pod(name, labels))
    listed = [p.metadata.name for p in core.list_namespaced_pod("default", label_selector=selector).items]
    assert sorted(listed) == sorted(expected)
    watched = [e["object"].metadata.name for e in collect(core, 10, timeout=1, resource_version="0",
                                                           label_selector=selector)]
    assert sorted(watched) == sorted(expected)


def test_field_selectors(kubesim, core):
    for name in ("a", "b", "c"):
        core.create_namespaced_pod("default", pod(name))
    core.create_namespaced_pod_binding("a", "default", {"metadata": {"name": "a"}, "target": {"name": "n1"}},
                                       _preload_content=False)
    kubesim.complete_pod("default", "b", "Failed")

    def names(selector):
        return sorted(p.metadata.name for p in core.list_pod_for_all_namespaces(field_selector=selector).items)

    assert names("spec.nodeName=") == ["b", "c"]
    assert names("spec.nodeName!=") == ["a"]
    assert names("spec.nodeName==n1") == ["a"]
    assert names("metadata.name=c") == ["c"]
    assert names("metadata.namespace=default,status.phase!=Failed") == ["a", "c"]
    with pytest.raises(ApiException) as error:
        names("spec.bogus=1")
    assert error.value.status == 400


def test_event_field_selectors_as_kubectl_describe_sends_them(core):
    def event(name, pod, reason, kind="Pod", component="yunikorn"):
        return {"metadata": {"name": name}, "reason": reason, "type": "Normal", "message": reason,
                "involvedObject": {"kind": kind, "name": pod, "namespace": "default", "uid": f"uid-{pod}",
                                   "apiVersion": "v1", "fieldPath": "spec.containers{c}"},
                "source": {"component": component}}

    core.create_namespaced_event("default", event("e1", "web", "Scheduled"))
    core.create_namespaced_event("default", event("e2", "web", "Pulled", component="kubelet"))
    core.create_namespaced_event("default", event("e3", "db", "Scheduled"))
    core.create_namespaced_event("default", event("e4", "web", "Started", kind="Node"))

    def names(selector):
        return sorted(e.metadata.name for e in core.list_namespaced_event("default", field_selector=selector).items)

    assert names("involvedObject.name=web,involvedObject.namespace=default,involvedObject.kind=Pod,"
                 "involvedObject.uid=uid-web") == ["e1", "e2"]
    assert names("involvedObject.apiVersion=v1,reason=Scheduled") == ["e1", "e3"]
    assert names("source=kubelet") == ["e2"]
    assert names("type!=Normal") == []
    assert names(r"involvedObject.fieldPath=spec.containers{c},involvedObject.name!=db") == ["e1", "e2", "e4"]
    assert names(r"reason=Sched\uled") == ["e1", "e3"]  # an escaped character stands for itself
    with pytest.raises(ApiException) as error:
        names("involvedObject.bogus=1")
    assert error.value.status == 400 and "involvedObject.name" in error.value.body
    with pytest.raises(ApiException) as error:
        core.list_namespaced_pod("default", field_selector="involvedObject.name=web")  # an event field, not a pod's
    assert error.value.status == 400


def test_a_pending_pod_watch_sees_a_deletion_when_the_pod_gets_bound(core):
    core.create_namespaced_pod("default", pod("p"))
    start = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod_binding("p", "default", {"metadata": {"name": "p"}, "target": {"name": "n1"}},
                                       _preload_content=False)
    events = collect(core, 1, resource_version=start, field_selector="spec.nodeName=")
    assert [(e["type"], e["object"].spec.node_name) for e in events] == [("DELETED", "n1")]


def test_concurrent_creates_and_binds_are_counted_exactly_by_a_watcher(kubesim, core):
    threads, per_thread = 4, 25
    start = core.list_namespaced_pod("default").metadata.resource_version
    seen = []
    done = threading.Event()

    def watcher():
        stream = watch.Watch()
        for event in stream.stream(core.list_namespaced_pod, "default", resource_version=start,
                                   timeout_seconds=30, _request_timeout=40):
            seen.append((event["type"], event["object"].metadata.name, event["object"].metadata.resource_version))
            if len(seen) == threads * per_thread * 2:
                stream.stop()
        done.set()

    def worker(index):
        api = client.CoreV1Api(kubesim.api_client())
        for i in range(per_thread):
            name = f"w{index}-{i}"
            api.create_namespaced_pod("default", pod(name))
            api.create_namespaced_pod_binding(name, "default", {"metadata": {"name": name},
                                                                "target": {"name": f"n{i % 3}"}},
                                              _preload_content=False)

    watching = threading.Thread(target=watcher)
    watching.start()
    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    assert done.wait(30)
    watching.join()
    assert len(seen) == threads * per_thread * 2
    assert sum(1 for e in seen if e[0] == "ADDED") == threads * per_thread
    assert sum(1 for e in seen if e[0] == "MODIFIED") == threads * per_thread
    versions = [int(e[2]) for e in seen]
    assert versions == sorted(versions) and len(set(versions)) == len(versions), "in order, no duplicates"


def test_raw_watch_stream_is_chunked_json_lines(kubesim, core):
    import http.client

    core.create_namespaced_pod("default", pod("a"))
    connection = http.client.HTTPConnection("127.0.0.1", kubesim.port, timeout=5)
    connection.request("GET", "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0&timeoutSeconds=1")
    response = connection.getresponse()
    assert response.getheader("Transfer-Encoding") == "chunked"
    lines = [json.loads(line) for line in response.read().splitlines() if line]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == [("ADDED", "a")]
    connection.close()


def test_a_watch_asking_for_initial_events_is_refused_as_without_the_watch_list_feature(kubesim, core):
    """client-go (kubectl 1.35) asks first, and lists then watches on this answer."""
    with pytest.raises(ApiException) as refused:
        core.list_namespaced_pod("default", watch=True, send_initial_events=True, resource_version_match="NotOlderThan",
                                 allow_watch_bookmarks=True, timeout_seconds=1, _preload_content=False)
    assert refused.value.status == 422
    status = json.loads(refused.value.body)
    assert (status["reason"], status["details"]["kind"]) == ("Invalid", "ListOptions")
    assert "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled" in status["message"]
