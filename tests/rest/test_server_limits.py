"""The REST server against hostile clients: idle and slow connections, clients that never read,
oversized or ambiguous requests; the probes' own listener."""

import contextlib
import http.client
import os
import resource
import socket
import stat
import threading
import time

import pytest

from rest.app import SchedulerView
from rest.server import SHARED_BODY, RestServer, ServerSettings
from tests.waiting import wait_for

DUMP = "/ws/v1/fullstatedump"


@pytest.fixture
def server(core_factory):
    core = core_factory()
    settings = ServerSettings(threads=4, max_streams=2, idle_timeout=1, max_header_bytes=8 * 1024,
                              max_body_bytes=64 * 1024)
    running = RestServer(SchedulerView(core.scheduler), host="127.0.0.1", port=0, settings=settings)
    yield running
    running.stop()


def _get(server, path="/ws/v1/partitions", timeout=5.0):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _connect(server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=5)


def test_stopping_writes_no_wake_up_to_a_descriptor_waitress_closed(core_factory, monkeypatch):
    """A wake-up byte written after waitress closed its pipe lands in whatever the process opened next
    under that descriptor number: once seen as ``xPOST`` at the start of another client's request."""
    strays = []
    write = os.write

    def watched(descriptor: int, data: bytes) -> int:
        if data == b"x":
            try:
                if not stat.S_ISFIFO(os.fstat(descriptor).st_mode):
                    strays.append((descriptor, "not a pipe"))
            except OSError:
                strays.append((descriptor, "closed"))
        return write(descriptor, data)

    monkeypatch.setattr(os, "write", watched)
    core = core_factory()
    for _ in range(3):
        running = RestServer(SchedulerView(core.scheduler), host="127.0.0.1", port=0, health_port=0)
        kept = http.client.HTTPConnection("127.0.0.1", running.port, timeout=5)  # a keep-alive connection open
        kept.request("GET", "/ws/v1/partitions")
        assert kept.getresponse().read()
        running.stop()
        kept.close()
    assert strays == []


def test_idle_and_slow_connections_hold_no_thread_and_starve_no_one(server):
    threads_before = threading.active_count()
    with contextlib.ExitStack() as stack:
        for i in range(200):
            sock = stack.enter_context(_connect(server))
            if i % 2:  # a slow client: headers announce 100 bytes of body, 10 arrive
                sock.sendall(b"POST /ws/v1/validate-conf HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
                             b"partitions")
        started = time.monotonic()
        for _ in range(20):
            status, _ = _get(server)
            assert status == 200
        assert time.monotonic() - started < 5, "other clients are answered while 200 sockets hang"
        assert threading.active_count() - threads_before < 10, "a connection does not get a thread of its own"


def test_an_idle_connection_is_closed_after_the_timeout(server):
    with _connect(server) as idle, _connect(server) as half_sent:
        half_sent.sendall(b"POST /ws/v1/validate-conf HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
        started = time.monotonic()
        for sock in (idle, half_sent):
            sock.settimeout(10)
            assert sock.recv(1024) == b"", "the server closes the connection"
        assert time.monotonic() - started < 8


def test_an_oversized_header_is_refused_with_431(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    connection.request("GET", "/ws/v1/partitions", headers={"X-Filler": "x" * 16 * 1024})
    assert connection.getresponse().status == 431
    connection.close()


def test_an_oversized_body_is_refused_with_413_before_it_is_read(server):
    with _connect(server) as sock:
        sock.sendall(b"POST /ws/v1/validate-conf HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
        sock.settimeout(5)
        assert sock.recv(1024).startswith(b"HTTP/1.1 413")


def test_a_short_body_does_not_block_the_answer_to_a_full_one(server):
    with _connect(server) as slow:
        slow.sendall(b"POST /ws/v1/validate-conf HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\npart")
        body = b"partitions:\n  - name: default\n    queues: [{name: root}]\n"
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        connection.request("POST", "/ws/v1/validate-conf", body=body)
        response = connection.getresponse()
        assert response.status == 200 and b'"allowed":true' in response.read().replace(b" ", b"")
        connection.close()


def test_a_request_with_both_content_length_and_transfer_encoding_is_refused_with_400(server):
    for version in (b"1.1", b"1.0"):
        with _connect(server) as sock:
            sock.sendall(b"POST /ws/v1/validate-conf HTTP/" + version + b"\r\nHost: x\r\nContent-Length: 5\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
            sock.settimeout(5)
            answer = b""
            while chunk := sock.recv(65536):  # and the connection is closed after the answer
                answer += chunk
            assert answer.startswith(b"HTTP/" + version + b" 400 ") and b"Connection: close" in answer, answer


@pytest.fixture
def big_dump(core_factory):
    """A core whose full state dump is large enough to be served from the shared copy (the core is idle
    once its allocations are made, so its snapshot and the dump built from it stay current)."""
    core = core_factory()
    core.nodes(50, vcore=64000, memory=2**40)
    core.app("big", queue="root.team")
    core.asks("big", 600, vcore=100, memory=2**20)
    wait_for(lambda: len(core.callback.new()) == 600, timeout=20, message="600 allocations")
    return SchedulerView(core.scheduler)


def _start(view, **settings) -> RestServer:
    return RestServer(view, host="127.0.0.1", port=0, settings=ServerSettings(**settings), health_port=0)


def _raw(port: int, data: bytes, receive_buffer: int = 4096) -> socket.socket:
    """A connection that sent ``data`` and reads nothing; its small receive window stops the answer early."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    sock.sendall(data)
    return sock


def _descriptors(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.skip(f"needs {needed} open files, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def test_over_a_thousand_clients_that_never_read_the_dump_leave_the_api_and_the_probes_answering(big_dump):
    clients = 1100  # with the server's ends, descriptors well past select()'s 1023
    _descriptors(2 * clients + 512)
    server = _start(big_dump, connection_limit=clients + 100, idle_timeout=60)
    try:
        status, dump = _get(server, DUMP)
        assert status == 200 and len(dump) >= SHARED_BODY
        with contextlib.ExitStack() as stack:
            for _ in range(clients):
                stack.enter_context(_raw(server.port, f"GET {DUMP} HTTP/1.1\r\nHost: x\r\n\r\n".encode()))
            wait_for(lambda: server.connections >= clients, timeout=30, message="every client connected")
            for _ in range(10):
                assert _get(server, "/ws/v1/partitions")[0] == 200
            assert _get(server, DUMP) == (200, dump), "a client that reads gets the whole dump"
            live = http.client.HTTPConnection("127.0.0.1", server.health.port, timeout=5)
            live.request("GET", "/ws/v1/health/live")
            assert live.getresponse().status == 200
            live.close()
        wait_for(lambda: server.connections == 0, timeout=30, message="the clients' connections closed")
        assert _get(server, DUMP) == (200, dump), "REST works after they left"
    finally:
        server.stop()


@contextlib.contextmanager
def _pipelining_non_readers(server, count: int = 4):
    """``count`` connections (twice the threads of the servers here) that pipeline dump requests and
    read nothing: past the connection's high watermark of waiting answers (16 MiB), the worker thread
    writing the next one waits for the client."""
    _get(server, DUMP)  # built once, then shared
    pipelined = f"GET {DUMP} HTTP/1.1\r\nHost: x\r\n\r\n".encode() * (64 * 2**20 // SHARED_BODY)
    with contextlib.ExitStack() as stack:
        for _ in range(count):
            stack.enter_context(_raw(server.port, pipelined))
        yield


def test_a_client_that_pipelines_requests_and_never_reads_is_cut_and_frees_its_thread(big_dump):
    server = _start(big_dump, threads=1, max_streams=1, idle_timeout=1)
    try:
        with _pipelining_non_readers(server):
            wait_for(lambda: server.connections == 0, timeout=20, message="the stalled connections cut")
            assert _get(server, "/ws/v1/partitions")[0] == 200
    finally:
        server.stop()


def test_a_client_reading_its_answers_slower_than_the_minimum_rate_is_cut(big_dump):
    # The rate is scaled up: loopback's send buffers take megabytes, so a client must read fast for
    # the server to send at all (a slower one leaves it nothing to send, and is cut as idle)
    server = _start(big_dump, idle_timeout=1, min_send_rate=64 * 2**20)
    try:
        _get(server, DUMP)
        pipelined = f"GET {DUMP} HTTP/1.1\r\nHost: x\r\n\r\n".encode() * (128 * 2**20 // SHARED_BODY)
        with _raw(server.port, pipelined, receive_buffer=256 * 1024) as slow:
            def read_a_little() -> bool:  # at most 64 KiB every hundredth of a second: under 8 MiB/s
                with contextlib.suppress(OSError):
                    slow.recv(64 * 1024)
                return server.connections == 0
            wait_for(read_a_little, timeout=15, message="the slow reader cut")
        assert _get(server, "/ws/v1/partitions")[0] == 200
    finally:
        server.stop()


def _unanswered(server) -> bool:
    try:
        _get(server, "/ws/v1/partitions", timeout=1)
    except TimeoutError:
        return True
    return False


def test_the_probes_answer_on_their_own_port_while_the_api_is_saturated(big_dump):
    server = _start(big_dump, threads=1, max_streams=1, idle_timeout=60)
    try:
        with _pipelining_non_readers(server):
            wait_for(lambda: _unanswered(server), timeout=30, message="every API thread waiting for a client")
            probes = http.client.HTTPConnection("127.0.0.1", server.health.port, timeout=5)
            for path in ("/ws/v1/health/live", "/ws/v1/health/ready"):
                probes.request("GET", path)
                response = probes.getresponse()
                assert (response.status, response.read()) == (200, b'{"alive": true}' if "live" in path
                                                              else b'{"ready": true, "shimState": null}')
            probes.request("GET", "/ws/v1/partitions")
            assert probes.getresponse().status == 404, "the probes' port serves the probes alone"
            probes.close()
    finally:
        server.stop()
