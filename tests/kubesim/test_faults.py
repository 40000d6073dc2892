"""Fault injection, through the Python API and the HTTP admin path."""

import json
import socket
import struct
import threading
import time
import urllib.request

import pytest
from kubernetes import client, watch
from kubernetes.client import ApiException

from tests.waiting import wait_for


def pod(name):
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def bind(core, name, node="n1"):
    return core.create_namespaced_pod_binding(name, "default", {"metadata": {"name": name}, "target": {"name": node}},
                                              _preload_content=False)


def test_fail_the_next_n_matching_requests(kubesim, core):
    core.create_namespaced_pod("default", pod("p"))
    kubesim.faults.fail(verb="create", resource="pods/binding", status=500, count=2)
    for _ in range(2):
        with pytest.raises(ApiException) as error:
            bind(core, "p")
        assert error.value.status == 500
    assert core.read_namespaced_pod("p", "default").spec.node_name is None, "a failed request changes nothing"
    assert bind(core, "p").status == 201
    codes = [r.code for r in kubesim.request_log if r.resource == "pods" and r.subresource == "binding"]
    assert codes == [500, 500, 201]


def test_429_carries_retry_after_and_other_verbs_pass(kubesim, core):
    kubesim.faults.fail(verb="create", resource="pods", status=429, count=1, retry_after=2)
    core.list_namespaced_pod("default")
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod("default", pod("p"))
    assert error.value.status == 429 and error.value.headers["Retry-After"] == "2"
    core.create_namespaced_pod("default", pod("p"))


def test_latency(kubesim, core):
    # A second: a list of no nodes answered without the latency takes far less, even on a loaded machine.
    kubesim.faults.latency(verb="list", resource="nodes", seconds=1.0)
    began = time.monotonic()
    core.list_node()
    assert time.monotonic() - began >= 1.0
    kubesim.faults.clear()
    began = time.monotonic()
    core.list_node()
    assert time.monotonic() - began < 1.0


def test_drop_watches_cuts_open_streams(kubesim, core):
    outcome = {}

    def watcher():
        stream = watch.Watch()
        try:
            for _ in stream.stream(core.list_namespaced_pod, "default", timeout_seconds=20, _request_timeout=30):
                pass
            outcome["ended"] = "cleanly"
        except Exception as error:  # the client sees a broken stream
            outcome["ended"] = type(error).__name__

    thread = threading.Thread(target=watcher)
    thread.start()
    wait_for(lambda: kubesim.open_watches() == 1, message="the watch to open")
    assert kubesim.faults.drop_watches() == 1
    thread.join(10)
    assert not thread.is_alive()
    assert outcome["ended"] != "cleanly"
    # The server forgets the watch once its handler returns, which may come after the client saw the cut.
    wait_for(lambda: kubesim.open_watches() == 0, message="the server to forget the cut watch")


def test_gone_next_watch(kubesim, core):
    listed = core.list_namespaced_pod("default")
    kubesim.faults.gone_next_watches(count=1, resource="pods")
    with pytest.raises(ApiException) as error:
        for _ in watch.Watch().stream(core.list_namespaced_pod, "default", resource_version=listed.metadata.resource_version,
                                      timeout_seconds=1, _request_timeout=5):
            pass
    assert error.value.status == 410
    events = list(watch.Watch().stream(core.list_namespaced_pod, "default", resource_version="0", timeout_seconds=1,
                                       _request_timeout=5))
    assert events == []


def test_http_admin_path(kubesim, core):
    request = urllib.request.Request(f"{kubesim.url}/kubesim/faults", method="POST",
                                     data=json.dumps({"action": "fail", "verb": "get", "resource": "nodes",
                                                      "status": 503, "count": 1}).encode(),
                                     headers={"Content-Type": "application/json"})
    assert json.loads(urllib.request.urlopen(request).read()) == {"ok": True}
    with pytest.raises(ApiException) as error:
        core.read_node("x")
    assert error.value.status == 503
    log = json.loads(urllib.request.urlopen(f"{kubesim.url}/kubesim/requests").read())
    assert {"verb": "get", "resource": "nodes", "subresource": "", "namespace": "", "name": "x", "code": 503} in log
    bad = urllib.request.Request(f"{kubesim.url}/kubesim/faults", method="POST", data=b'{"action": "explode"}')
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(bad)
    assert refused.value.code == 400


def test_simulated_kubelet_runs_bound_pods():
    from kubesim import KubeSim

    with KubeSim(kubelet_delay=0.05) as sim:
        core = client.CoreV1Api(sim.api_client())
        core.create_namespaced_pod("default", pod("p"))
        bind(core, "p")
        wait_for(lambda: core.read_namespaced_pod("p", "default").status.phase == "Running", message="Running")
        sim.complete_pod("default", "p", "Succeeded")
        assert core.read_namespaced_pod("p", "default").status.phase == "Succeeded"


def test_a_client_resetting_its_connection_mid_request_leaves_no_traceback(kubesim, capfd):
    raw = socket.create_connection(("127.0.0.1", kubesim.port))
    raw.sendall(b"GET /api/v1/pods HTTP/1.1\r\nHost: x\r\n")  # half a request, then a reset, as a killed process
    wait_for(lambda: kubesim._server.connections, message="the server to take the connection")
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    raw.close()
    wait_for(lambda: not kubesim._server.connections, message="the server to drop the connection")
    assert "Traceback" not in capfd.readouterr().err
