"""Informers against kubesim: list, watch, bookmarks, and exact delivery across drops, 410s and dead
connections."""

import dataclasses
import http.server
import json
import logging
import threading
from collections import defaultdict

import orjson
import pytest
from kubernetes import client as k8s

from actors.shim.client import ApiError, KubeClient
from actors.shim.informer import Informer, WatchSettings
from actors.shim.kinds import watched_kinds
from actors.shim.messages import Added, Changes, InformerStatusRequest, Listed, Updated
from actors.shim.pods import parse_pod
from tests.shim.doubles import Inbox, inbox_messages, wait_for
from tests.shim.factories import node_json, pod_json

FAST = WatchSettings(timeout=5, read_timeout=3.0, max_backoff=0.2)


@pytest.fixture
def shim_client(kubesim, tmp_path):
    path = tmp_path / "kubeconfig"
    kubesim.write_kubeconfig(str(path))
    client = KubeClient.connect(str(path), pool_size=32)
    yield client
    client.close()


def pods_kind():
    return next(k for k in watched_kinds("default") if k.name == "pods")


def create_pod(core: k8s.CoreV1Api, name: str, **kwargs) -> str:
    body = pod_json(name, **kwargs)
    del body["metadata"]["uid"], body["metadata"]["resourceVersion"], body["metadata"]["creationTimestamp"]
    return core.create_namespaced_pod("default", body).metadata.uid


class View:
    """What a listener learns from an informer, checked for exactness as it goes."""

    def __init__(self, inbox):
        self.inbox = inbox

    def replay(self):
        """Apply every message; fail on an add of a known object or an update/delete of an unknown one."""
        known, history = {}, defaultdict(list)
        for message in inbox_messages(self.inbox):
            if isinstance(message, Listed):
                assert not known, "Listed twice"
                known = {r.key: r for r in message.records}
                continue
            assert isinstance(message, Changes)
            for change in message.changes:
                if isinstance(change, Added):
                    assert change.record.key not in known, f"duplicate add {change.record.key}"
                    known[change.record.key] = change.record
                elif isinstance(change, Updated):
                    assert known.get(change.old.key) == change.old, "update from a state not delivered"
                    known[change.new.key] = change.new
                else:
                    assert change.record.key in known, "delete of an unknown object"
                    del known[change.record.key]
                record = change.new if isinstance(change, Updated) else change.record
                history[record.key].append(type(change).__name__)
        return known, history


def start_informer(shim_client, settings=FAST):
    inbox = Inbox.start()
    informer = Informer.start(shim_client, pods_kind(), inbox, settings)
    return inbox, informer, View(inbox)


def stop(*refs):
    for ref in refs:
        ref.stop()


def in_sync(view, kubesim):
    """The listener's view equals kubesim's store (read directly: API faults may be armed)."""
    known, _ = view.replay()
    stored = {p["metadata"]["uid"]: p["metadata"]["resourceVersion"] for p in kubesim.objects("pods")}
    return {k: r.resource_version for k, r in known.items()} == stored


def test_list_then_watch_adds_updates_deletes(kubesim, kube_api, shim_client):
    core = k8s.CoreV1Api(kube_api)
    first = create_pod(core, "before")
    inbox, informer, view = start_informer(shim_client)
    wait_for(lambda: inbox_messages(inbox, Listed))
    [listed] = inbox_messages(inbox, Listed)
    assert [r.uid for r in listed.records] == [first]
    second = create_pod(core, "after")
    core.patch_namespaced_pod("after", "default", {"metadata": {"labels": {"x": "y"}}})
    core.delete_namespaced_pod("before", "default")
    wait_for(lambda: view.replay()[1].get(second) == ["Added", "Updated"] and first not in view.replay()[0])
    assert view.replay()[0][second].labels == {"x": "y"}
    stop(informer, inbox)


def test_events_that_trickle_in_are_told_together_and_the_first_at_once(kubesim, kube_api, shim_client):
    core = k8s.CoreV1Api(kube_api)
    linger = 1.0
    inbox, informer, view = start_informer(shim_client, dataclasses.replace(FAST, linger=linger))
    wait_for(lambda: inbox_messages(inbox, Listed))
    first = create_pod(core, "first")
    wait_for(lambda: first in view.replay()[0], timeout=linger / 2,
             message="the first event after a quiet spell is told at once")
    trickle = [create_pod(core, f"then-{i}") for i in range(5)]  # one by one, while the watch lingers
    wait_for(lambda: all(uid in view.replay()[0] for uid in trickle), timeout=linger * 5)
    assert [[c.record.uid for c in m.changes] for m in inbox_messages(inbox, Changes)] == [[first], trickle]
    stop(informer, inbox)


def test_only_the_pods_watch_lingers_so_a_node_changed_twice_is_told_at_once(kubesim, kube_api, shim_client):
    """A node tainted and then labelled just before a pod is created must be seen labelled by then: a
    lingering nodes watch told the label up to ``linger`` later, after the pod (upstream's
    Verify_Not_Matching_Taint_Tolerations_Respected saw the pod fail on the node selector, not the taint)."""
    core = k8s.CoreV1Api(kube_api)
    body = node_json("tainted-later")
    del body["metadata"]["uid"], body["metadata"]["resourceVersion"]
    core.create_node(body)
    linger = 2.0
    inbox = Inbox.start()
    nodes = next(k for k in watched_kinds("default") if k.name == "nodes")
    informer = Informer.start(shim_client, nodes, inbox, dataclasses.replace(FAST, linger=linger))
    wait_for(lambda: inbox_messages(inbox, Listed))
    core.patch_node("tainted-later", {"spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}})
    core.patch_node("tainted-later", {"metadata": {"labels": {"then": "labelled"}}})

    def labelled() -> bool:
        changes = [c for m in inbox_messages(inbox, Changes) for c in m.changes]
        return any(c.new.labels.get("then") == "labelled" for c in changes if isinstance(c, Updated))

    wait_for(labelled, timeout=linger / 2, message="the second change of a node is told without lingering")
    stop(informer, inbox)


def test_bookmarks_advance_the_resource_version(kubesim, kube_api, shim_client):
    inbox, informer, _ = start_informer(shim_client)
    wait_for(lambda: inbox_messages(inbox, Listed))
    before = informer.ask(InformerStatusRequest()).resource_version
    k8s.CoreV1Api(kube_api).create_namespace({"metadata": {"name": "elsewhere"}})  # not a pod: only a bookmark
    wait_for(lambda: int(informer.ask(InformerStatusRequest()).resource_version) > int(before), timeout=15)
    assert inbox_messages(inbox, Changes) == []
    stop(informer, inbox)


def test_dropped_watches_relist_and_deliver_the_difference_exactly_once(kubesim, kube_api, shim_client):
    core = k8s.CoreV1Api(kube_api)
    doomed = [create_pod(core, f"doomed-{i}") for i in range(3)]
    kept = create_pod(core, "kept")
    inbox, informer, view = start_informer(shim_client)
    wait_for(lambda: inbox_messages(inbox, Listed))
    # while the informer cannot list, the cluster moves on
    kubesim.faults.fail(verb="list", resource="pods", status=500, count=3)
    wait_for(lambda: kubesim.faults.drop_watches() > 0, message="the informer's watch to be open, then cut")
    for i in range(3):
        core.delete_namespaced_pod(f"doomed-{i}", "default")
    core.patch_namespaced_pod("kept", "default", {"metadata": {"labels": {"moved": "on"}}})
    fresh = create_pod(core, "fresh")
    wait_for(lambda: in_sync(view, kubesim))
    known, history = view.replay()
    assert set(known) == {kept, fresh}
    assert all(history[uid] == ["Deleted"] for uid in doomed)
    assert history[kept] == ["Updated"] and history[fresh] == ["Added"]
    assert informer.ask(InformerStatusRequest()).lists >= 2
    stop(informer, inbox)


def test_410_gone_on_watch_relists(kubesim, kube_api, shim_client, caplog):
    caplog.set_level(logging.INFO, logger="actors.shim.informer")
    core = k8s.CoreV1Api(kube_api)
    inbox, informer, view = start_informer(shim_client, WatchSettings(timeout=1, read_timeout=3.0, max_backoff=0.2))
    wait_for(lambda: inbox_messages(inbox, Listed))
    kubesim.faults.gone_next_watches(count=1, resource="pods")  # the watch after the current one ends
    created = create_pod(core, "during-410")
    wait_for(lambda: informer.ask(InformerStatusRequest()).lists == 2)
    assert "410" in caplog.text
    wait_for(lambda: in_sync(view, kubesim))
    assert view.replay()[1][created] == ["Added"]
    stop(informer, inbox)


def test_a_silent_connection_times_out_instead_of_hanging(kubesim, kube_api, shim_client):
    inbox, informer, view = start_informer(shim_client, WatchSettings(timeout=30, read_timeout=1.0, max_backoff=0.2))
    wait_for(lambda: inbox_messages(inbox, Listed))
    kubesim.faults.latency(verb="watch", resource="pods", seconds=3.0)
    kubesim.faults.drop_watches()
    wait_for(lambda: informer.ask(InformerStatusRequest()).lists >= 2, timeout=20)
    kubesim.faults.clear()
    created = create_pod(k8s.CoreV1Api(kube_api), "after-silence")
    wait_for(lambda: created in view.replay()[0], timeout=20)
    stop(informer, inbox)


@pytest.mark.timeout(90)
def test_concurrent_churn_is_delivered_exactly(kubesim, kube_api, shim_client):
    inbox, informer, view = start_informer(shim_client)
    wait_for(lambda: inbox_messages(inbox, Listed))

    def churn(worker):
        with kubesim.api_client() as api:
            core = k8s.CoreV1Api(api)
            for i in range(40):
                name = f"churn-{worker}-{i}"
                create_pod(core, name)
                if i % 3 == 0:
                    core.delete_namespaced_pod(name, "default")

    threads = [threading.Thread(target=churn, args=(w,)) for w in range(3)]
    for thread in threads:
        thread.start()
    kubesim.faults.drop_watches()
    for thread in threads:
        thread.join()
    kubesim.faults.drop_watches()
    wait_for(lambda: in_sync(view, kubesim), timeout=30)
    stop(informer, inbox)


def test_a_list_follows_continue_tokens_and_keeps_the_first_pages_resource_version(kubesim, kube_api, shim_client):
    core = k8s.CoreV1Api(kube_api)
    uids = {create_pod(core, f"p{i}") for i in range(7)}
    lists_before = sum(r.verb == "list" and r.resource == "pods" for r in kubesim.request_log)
    items, resource_version = shim_client.list("/api/v1/pods", page_size=3)
    lists = sum(r.verb == "list" and r.resource == "pods" for r in kubesim.request_log) - lists_before
    assert {item["metadata"]["uid"] for item in items} == uids
    assert lists == 3, "seven pods in pages of three"
    assert resource_version == core.list_pod_for_all_namespaces(limit=3).metadata.resource_version


def pod_lists(kubesim) -> list[int]:
    """The status of every list of pods kubesim answered, in order."""
    return [r.code for r in kubesim.request_log if r.verb == "list" and r.resource == "pods"]


def test_a_page_asked_for_ahead_that_fails_for_a_while_is_asked_again(kubesim, kube_api, shim_client):
    core = k8s.CoreV1Api(kube_api)
    uids = {create_pod(core, f"p{i}") for i in range(7)}
    pages = shim_client.pages("/api/v1/pods", page_size=3)
    listed = [item["metadata"]["uid"] for item in next(pages)[0]]
    wait_for(lambda: pod_lists(kubesim) == [200, 200], message="the second page asked for before it is read")
    kubesim.faults.fail(verb="list", resource="pods", status=500, count=1)  # the third, asked for ahead
    for items, _ in pages:
        listed.extend(item["metadata"]["uid"] for item in items)
    assert sorted(listed) == sorted(uids)
    assert pod_lists(kubesim) == [200, 200, 500, 200]


def test_a_page_asked_for_ahead_that_is_refused_ends_the_list_with_the_refusal(kubesim, kube_api, shim_client):
    core = k8s.CoreV1Api(kube_api)
    for i in range(7):
        create_pod(core, f"p{i}")
    # Each list waits a moment in kubesim before its faults are looked up, so the refusal armed once the
    # first page is read meets the second, asked for ahead, however soon kubesim read that request.
    kubesim.faults.latency(verb="list", resource="pods", seconds=0.5)
    pages = shim_client.pages("/api/v1/pods", page_size=3)
    next(pages)
    kubesim.faults.fail(verb="list", resource="pods", status=403, count=1)
    with pytest.raises(ApiError) as refused:
        list(pages)
    assert refused.value.status == 403
    assert sorted(pod_lists(kubesim)) == [200, 403]


class _FixedList(http.server.BaseHTTPRequestHandler):
    """An API server that answers every list of pods with one fixed page (``server.page``) and holds every
    watch open until it stops: for pages kubesim would never serve (it refuses or cannot write them)."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):  # noqa: N802 (the handler's protocol)
        if "watch=true" in self.path:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            while not self.server.stopping.wait(0.05):
                if self.server.expire.is_set():  # the watch's resourceVersion is too old: list again
                    self.server.expire.clear()
                    line = b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}\n'
                    self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(line), line))
                    return
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.server.page)))
        self.end_headers()
        self.wfile.write(self.server.page)

    def log_message(self, *args):
        pass


@pytest.fixture
def fixed_list_client():
    """A client of a server whose list of pods is ``client.serve(page)``."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FixedList)
    server.daemon_threads = True
    server.stopping, server.expire, server.page = threading.Event(), threading.Event(), b""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = KubeClient(k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{server.server_port}")))
    client.serve = lambda page: setattr(server, "page", page)
    client.expire_watch = server.expire.set
    yield client
    server.stopping.set()
    server.shutdown()
    client.close()


ODD_PODS = {
    "uid-a-list": {"metadata": {"uid": ["x"]}},
    "labels-of-numbers": {"metadata": {"labels": {"a": 1}}},
    "node-name-a-number": {"spec": {"nodeName": 5}},
    "priority-past-64-bits": {"spec": {"priority": 2**70}},
    "status-a-string": {"status": "Running"},
    "nested-5000-deep": {"spec": {"x": json.loads("[" * 900 + "]" * 900)}},  # deepened in the text below
}


def test_a_list_page_with_odd_pods_yields_every_other_pod_as_parsed(fixed_list_client):
    """One page holding pods of wrong types, integers past 64 bits and a field nested 5,000 deep (past what
    orjson and msgspec decode, so the page is split by its brackets): every pod but the unreadable ones is
    listed, each the record ``parse_pod`` makes of it; the ones without identity or deeper than any decoder
    reads are skipped alone."""
    plain = [pod_json(f"plain-{i}", labels={"applicationId": f"app-{i % 2}"}, node=f"n{i}") for i in range(4)]
    odd = {}
    for name, changes in ODD_PODS.items():
        raw = pod_json(name, node="n9")
        for part, values in changes.items():
            raw[part] = {**raw[part], **values} if isinstance(values, dict) else values
        odd[name] = raw
    items = [json.dumps(raw, separators=(",", ":")) for raw in [plain[0], *odd.values(), *plain[1:]]]
    items = [item.replace("[" * 900, "[" * 5000).replace("]" * 900, "]" * 5000) for item in items]
    fixed_list_client.serve(
        ('{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":[' + ",".join(items)
         + "]}").encode())
    inbox = Inbox.start()
    informer = Informer.start(fixed_list_client, pods_kind(), inbox, FAST)
    wait_for(lambda: inbox_messages(inbox, Listed), message="the page listed")
    [listed] = inbox_messages(inbox, Listed)
    readable = [*plain, *(raw for name, raw in odd.items() if name not in ("uid-a-list", "nested-5000-deep"))]
    expected = {raw["metadata"]["uid"]: parse_pod(orjson.loads(json.dumps(raw))) for raw in readable}
    assert {record.uid: record for record in listed.records} == expected
    assert "priority must be a whole number" in expected[odd["priority-past-64-bits"]["metadata"]["uid"]].invalid
    assert informer.ask(InformerStatusRequest()).resource_version == "42"
    stop(informer, inbox)


@pytest.mark.parametrize("page", [b"[]", b'"items"', b'{"items":[{"metadata":{}}', b"nul"])
def test_a_list_answer_that_is_no_json_object_is_a_value_error_not_an_empty_list(fixed_list_client, page):
    """Read as an empty list, it would tell an informer listing again that every pod was deleted."""
    fixed_list_client.serve(page)
    with pytest.raises(ValueError):
        list(fixed_list_client.pages("/api/v1/pods", undecoded=True))


def _pod_list(raws, version: str) -> bytes:
    items = ",".join(raw if isinstance(raw, str) else json.dumps(raw, separators=(",", ":")) for raw in raws)
    return f'{{"metadata":{{"resourceVersion":"{version}"}},"items":[{items}]}}'.encode()


def test_a_relisted_object_no_decoder_reads_is_not_taken_as_deleted(fixed_list_client):
    """The list cannot say which object it is: every stored object the list misses stands (its pod keeps its
    room), while the others' changes are told."""
    kept, changed = pod_json("kept", node="n1"), pod_json("changed", node="n2")
    fixed_list_client.serve(_pod_list([kept, changed], "1"))
    inbox = Inbox.start()
    informer = Informer.start(fixed_list_client, pods_kind(), inbox, FAST)
    wait_for(lambda: inbox_messages(inbox, Listed), message="the first list")
    changed["metadata"]["resourceVersion"] = "2"
    deep = json.dumps(kept, separators=(",", ":"))[:-1] + ',"x":' + "[" * 5000 + "]" * 5000 + "}"
    fixed_list_client.serve(_pod_list([deep, changed], "2"))
    fixed_list_client.expire_watch()
    wait_for(lambda: informer.ask(InformerStatusRequest()).lists == 2, message="listed again")
    [told] = inbox_messages(inbox, Changes)
    assert [(type(c).__name__, c.new.name) for c in told.changes] == [("Updated", "changed")]
    assert informer.ask(InformerStatusRequest()).objects == 2
    stop(informer, inbox)
