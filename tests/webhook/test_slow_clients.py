"""The admission controller against slow clients: they hold sockets, never threads, and are cut at their deadline.

One single-worker controller with 2 threads, a 2 s request timeout and 3 MiB for requests still arriving
serves the tests here but the last (which stops its own); each stalled kind is opened several times over,
so together they outnumber the threads tenfold.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import signal
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client

from kubesim import KubeSim
from si.kubernetes import CONFIGMAP_CONFIGS, CONFIGMAP_DEFAULTS
from tests.waiting import wait_for
from tests.webhook.harness import SERVER_NAME, Controller, HttpsClient, pod, registered_bundle, review
from webhook import constants as c
from webhook.app import MAX_BODY
from webhook.validation import post_validate_conf

REQUEST_TIMEOUT = 2.0
THREADS = 2
BUFFER_MIB = 3
EACH_KIND = 4
SCHEDULER_TIMEOUT = inspect.signature(post_validate_conf).parameters["timeout"].default
HEAD = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(port, bundle) of a controller with few threads and a short request timeout, on its own kubesim."""
    sim = KubeSim().start()
    folder = tmp_path_factory.mktemp("slow-clients")
    sim.write_kubeconfig(folder / "kubeconfig")
    controller = Controller(folder / "kubeconfig", folder / "controller.log", "--threads", str(THREADS),
                            "--request-timeout", str(REQUEST_TIMEOUT), "--max-buffered-mib", str(BUFFER_MIB),
                            workers=1)
    try:
        controller.wait_healthy(lambda port: HttpsClient(port, registered_bundle(sim)))
        yield controller.port, registered_bundle(sim)
    finally:
        controller.stop()
        sim.stop()


def _tcp(port: int, bundle: bytes) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _tls(port: int, bundle: bytes, sent: bytes = b"") -> ssl.SSLSocket:
    """A connection that has done its TLS handshake and sent ``sent``."""
    context = ssl.create_default_context(cadata=bundle.decode())
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                               server_hostname=SERVER_NAME)
    sock.sendall(sent)
    return sock


def _half_hello(port: int, bundle: bytes) -> socket.socket:
    """A connection that has sent half of a real ClientHello: a handshake step that waits for the rest."""
    hello = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = ssl.create_default_context(cadata=bundle.decode()).wrap_bio(*hello, server_hostname=SERVER_NAME)
    with contextlib.suppress(ssl.SSLWantReadError):
        client.do_handshake()
    record = hello[1].read()
    sock = _tcp(port, bundle)
    sock.sendall(record[:len(record) // 2])
    return sock


STALLED = {
    "connected, no TLS handshake": _tcp,
    "half a ClientHello": _half_hello,
    "handshake, then silent": _tls,
    "half a head": lambda port, bundle: _tls(port, bundle, HEAD[:40]),
    "head, then part of the body": lambda port, bundle: _tls(port, bundle, HEAD + b'{"kind":'),
}


def _closed_by_server(sock: socket.socket, deadline: float) -> bool:
    """Whether the server closes ``sock`` before ``deadline`` (having sent nothing)."""
    while (remaining := deadline - time.monotonic()) > 0:
        sock.settimeout(remaining)
        try:
            return sock.recv(1024) == b""
        except TimeoutError:
            return False
        except (ssl.SSLError, ConnectionResetError):
            return True
    return False


class _Dribblers:
    """Clients sending a head and body one byte per interval, all from one thread, until the server cuts them."""

    def __init__(self, port: int, bundle: bytes, count: int, interval: float = 0.25) -> None:
        self.socks = [_tls(port, bundle) for _ in range(count)]
        self.cut = threading.Event()
        self._request = HEAD + b"x" * 1000
        self._interval = interval
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        alive = list(self.socks)
        for byte in self._request:
            for sock in list(alive):
                try:
                    sock.sendall(bytes([byte]))
                except OSError:
                    alive.remove(sock)
            if not alive:
                self.cut.set()
                return
            time.sleep(self._interval)

    def close(self) -> None:
        self._thread.join(timeout=10)
        for sock in self.socks:
            sock.close()


def test_a_review_is_answered_at_once_while_stalled_clients_outnumber_the_threads(server):
    port, bundle = server
    with contextlib.ExitStack() as stack:
        stalled = {f"{kind} #{n}": stack.enter_context(open_(port, bundle))
                   for kind, open_ in STALLED.items() for n in range(EACH_KIND)}
        dribblers = _Dribblers(port, bundle, EACH_KIND)
        stack.callback(dribblers.close)
        opened = time.monotonic()
        assert len(stalled) + len(dribblers.socks) >= 10 * THREADS

        body = review(pod())
        started = time.monotonic()
        client = HttpsClient(port, bundle, timeout=3)  # well under the API server's 10 s
        assert client.review(c.MUTATE_PATH, body)["uid"] == body["request"]["uid"]
        assert client.get(c.HEALTH_PATH) == (200, b"OK\r\n"), "and again on the kept-alive connection"
        client.close()
        assert time.monotonic() - started < 3

        deadline = opened + REQUEST_TIMEOUT + 3
        still_open = [name for name, sock in stalled.items() if not _closed_by_server(sock, deadline)]
        assert not still_open, f"not cut at the request timeout: {still_open}"
        assert dribblers.cut.wait(max(0.0, deadline - time.monotonic())), "a byte-per-interval dribbler is cut too"


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2], ids=["TLS 1.3", "TLS 1.2"])
def test_connections_shaking_hands_all_at_once_are_each_answered(server, version):
    """Handshakes run on the worker's threads, here ten times as many at once as there are threads."""
    port, bundle = server
    bodies = [review(pod(name=f"p{n}")) for n in range(10 * THREADS)]

    def mutate(body: dict) -> str:
        client = HttpsClient(port, bundle, timeout=5, maximum_version=version)
        try:
            return client.review(c.MUTATE_PATH, body)["uid"]
        finally:
            client.close()

    with ThreadPoolExecutor(len(bodies)) as clients:
        uids = list(clients.map(mutate, bodies))
    assert uids == [body["request"]["uid"] for body in bodies]


def test_a_client_that_speaks_plain_http_to_the_tls_port_is_cut_at_once(server):
    port, bundle = server
    with _tcp(port, bundle) as sock:
        sock.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        assert _closed_by_server(sock, time.monotonic() + REQUEST_TIMEOUT / 2), "its handshake failed"
    body = review(pod())
    assert HttpsClient(port, bundle).review(c.MUTATE_PATH, body)["uid"] == body["request"]["uid"]


def _exchange(port: int, bundle: bytes, data: bytes) -> bytes:
    """Send ``data`` on a new connection and read until the server closes it."""
    with _tls(port, bundle, data) as sock:
        sock.settimeout(5)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _post(body: bytes, last: bool = False) -> bytes:
    return (b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + (b"Connection: close\r\n" if last else b"")
            + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def test_pipelined_requests_on_one_connection_are_each_answered(server):
    reviews = [review(pod(name=f"p{n}")) for n in range(3)]
    data = b"".join(_post(json.dumps(r).encode(), last=n == 2) for n, r in enumerate(reviews))
    answer = _exchange(*server, data)
    assert answer.count(b"HTTP/1.1 200 ") == 3
    uids = [json.loads(part.split(b"\r\n\r\n", 1)[1])["response"]["uid"]
            for part in answer.split(b"HTTP/1.1 ")[1:]]
    assert uids == [r["request"]["uid"] for r in reviews]


def test_a_chunked_body_is_refused_with_411(server):
    answer = _exchange(*server, b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 411 ")


def test_a_request_with_both_content_length_and_transfer_encoding_is_refused_with_400(server):
    answer = _exchange(*server, b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                b"Content-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 ") and b"Connection: close" in answer


def test_a_head_that_never_ends_is_refused_with_431(server):
    endless = b"POST /mutate HTTP/1.1\r\n" + b"X-Filler: " + b"a" * 16000 + b"\r\n"
    answer = _exchange(*server, endless * 120)  # no empty line: over the limit of 100 fields of 16 KiB
    assert answer.startswith(b"HTTP/1.1 431 ")


@pytest.mark.parametrize(("head", "status"), [
    (b"POST /mutate?" + b"q" * 8200 + b" HTTP/1.1\r\nHost: x\r\n", b"414"),  # request line over 8190
    (b"POST /mutate HTTP/1.1\r\nHost: x\r\n" + b"X-Many: 1\r\n" * 101, b"431"),  # over 100 header fields
    (b"POST /mutate HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 16400 + b"\r\n", b"431"),  # a field over 16 KiB
    (b"POST /mutate HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n", b"400"),  # not a token
    (b"POST /mutate HTTP/1.1\r\nHost: x\r\nX-Folded: 1\r\n  2\r\n", b"400"),  # obsolete line folding
    (b"POST /mutate HTTP/1.1\r\nHost: x\r\nX-Control: a\x01b\r\n", b"400"),  # a control character
], ids=["long request line", "too many fields", "long field", "bad name", "folding", "control character"])
def test_a_small_review_answered_by_the_main_loop_keeps_every_head_limit(server, head, status):
    """Small reviews are answered on the worker's main loop, plain heads without gunicorn's parser: any
    other head still gets gunicorn's refusal, and the connection ends."""
    body = json.dumps(review(pod())).encode()
    answer = _exchange(*server, head + b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
                       + body)
    assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer[:200]
    assert answer.count(b"HTTP/1.1 ") == 1


def test_a_review_gets_the_same_answer_from_the_main_loop_and_from_a_thread(server):
    """``/%6Dutate`` is ``/mutate`` to the app, but the main loop leaves it to a thread; a head that is not
    plain (a folded-free but spaced value, an HTTP/1.0 version) goes through gunicorn's parser."""
    body = review(pod())
    payload = json.dumps(body).encode()
    answers = {}
    for name, line in (("main loop", b"POST /mutate HTTP/1.1"), ("thread", b"POST /%6Dutate HTTP/1.1"),
                       ("gunicorn's parser", b"POST /mutate HTTP/1.0")):
        answer = _exchange(*server, line + b"\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
                           b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
        head, _, content = answer.partition(b"\r\n\r\n")
        assert head.split(b"\r\n")[0].endswith(b" 200 OK"), (name, head)
        assert b"content-type: application/json" in head.lower(), (name, head)
        answers[name] = json.loads(content)
    assert answers["main loop"]["response"]["uid"] == body["request"]["uid"]
    assert answers["main loop"] == answers["thread"] == answers["gunicorn's parser"]


def _established(sock: socket.socket) -> bool:
    """Whether the TCP connection is still established (the first byte of Linux's tcp_info)."""
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] == 1


def test_a_client_that_does_not_read_its_answers_is_cut_at_the_request_timeout(server):
    """Answers made on the main loop are sent without blocking: a client that sends requests and never
    reads holds a socket and its unsent answer, never the loop, and is cut once it is late."""
    port, bundle = server
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # small buffers: the test fills them quickly
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
    raw.connect(("127.0.0.1", port))
    context = ssl.create_default_context(cadata=bundle.decode())
    with context.wrap_socket(raw, server_hostname=SERVER_NAME) as greedy:
        greedy.settimeout(0.5)
        sent = 0
        with contextlib.suppress(OSError):  # a timeout, or the connection cut already (on a slow machine)
            for _ in range(1000):  # until the server stops taking requests: its answers are not read
                greedy.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" * 100)
                sent += 100
        assert sent < 1000 * 100, "the server went on reading without its answers being taken"
        client = HttpsClient(port, bundle, timeout=3)
        assert client.get(c.HEALTH_PATH) == (200, b"OK\r\n"), "others are answered meanwhile"
        client.close()
        wait_for(lambda: not _established(greedy), timeout=REQUEST_TIMEOUT + 5, interval=0.05,
                 message="the server cuts the connection whose answers are not read")


def test_bytes_arriving_beyond_the_workers_budget_are_refused_with_503(server):
    port, bundle = server
    assert MAX_BODY <= BUFFER_MIB * 2**20, "a body the app accepts, whose head takes it over the budget"
    head = HEAD.replace(b"Content-Length: 1000", b"Content-Length: %d" % MAX_BODY)
    answer = _exchange(port, bundle, head + b"x" * (BUFFER_MIB * 2**20))
    assert answer.startswith(b"HTTP/1.1 503 ")
    body = review(pod())
    assert HttpsClient(port, bundle).review(c.MUTATE_PATH, body)["uid"] == body["request"]["uid"], "freed again"


def test_a_review_on_a_new_connection_is_answered_while_every_thread_waits_on_the_scheduler(kubesim, start_controller):
    """Handshakes never wait for a thread: with each thread held by a ``/validate-conf`` call to a scheduler
    that takes the connection and never answers, a review on a new connection is answered well before those
    calls give up, and they are then allowed (fail open)."""
    scheduler = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def hold() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(scheduler.accept()[0])

    threading.Thread(target=hold, daemon=True).start()
    api = kubesim.api_client()
    client.CoreV1Api(api).create_namespaced_config_map("default", {
        "metadata": {"name": CONFIGMAP_DEFAULTS},
        "data": {"admissionController.webHook.schedulerServiceAddress": f"127.0.0.1:{scheduler.getsockname()[1]}"}})
    api.close()
    controller = start_controller("--threads", str(THREADS), workers=1)
    port, bundle = controller.port, registered_bundle(kubesim)
    configs = review({"metadata": {"name": CONFIGMAP_CONFIGS, "namespace": "default"},
                      "data": {"queues.yaml": "partitions: [{name: default, queues: [{name: root}]}]"}},
                     kind="ConfigMap")
    body = review(pod())
    try:
        with ThreadPoolExecutor(THREADS + 1) as clients:
            checks = [clients.submit(HttpsClient(port, bundle, timeout=30).review, c.VALIDATE_PATH, configs)
                      for _ in range(THREADS)]
            wait_for(lambda: len(held) == THREADS, timeout=10, message="every thread waiting on the scheduler")
            fresh = clients.submit(HttpsClient(port, bundle, timeout=30).review, c.MUTATE_PATH, body)
            answer = fresh.result(timeout=SCHEDULER_TIMEOUT / 2)  # the threads are held for SCHEDULER_TIMEOUT
            assert answer["uid"] == body["request"]["uid"]
            assert [check.result(timeout=30)["allowed"] for check in checks] == [True] * THREADS
    finally:
        scheduler.close()
        for sock in held:
            sock.close()


def test_a_stopping_server_answers_a_request_on_its_way_and_does_not_wait_for_stalled_ones(kubesim, start_controller):
    controller = start_controller(workers=1)  # the default request timeout: 10 s
    port, bundle = controller.port, registered_bundle(kubesim)
    with contextlib.ExitStack() as stack:
        stalled = [stack.enter_context(open_(port, bundle)) for open_ in STALLED.values()]
        idle = HttpsClient(port, bundle)
        assert idle.get(c.HEALTH_PATH)[0] == 200
        stack.callback(idle.close)
        request = _post(json.dumps(review(pod())).encode())
        on_its_way = stack.enter_context(_tls(port, bundle, request[:-10]))
        assert HttpsClient(port, bundle).get(c.HEALTH_PATH)[0] == 200, "the partial request has reached the server"

        stopping = time.monotonic()
        controller.process.send_signal(signal.SIGTERM)
        wait_for(lambda: "Handling signal: term" in controller.log(), timeout=5, message="the SIGTERM taken")
        on_its_way.sendall(request[-10:])
        on_its_way.settimeout(5)
        assert on_its_way.recv(65536).startswith(b"HTTP/1.1 200 ")

        assert controller.process.wait(timeout=8) == 0
        assert time.monotonic() - stopping < 6, "the stalled clients did not hold up the exit"
        assert all(_closed_by_server(sock, time.monotonic() + 1) for sock in stalled)
