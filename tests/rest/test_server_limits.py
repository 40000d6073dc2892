"""The REST server against hostile clients: idle and slow connections, oversized headers and bodies."""

import contextlib
import http.client
import socket
import threading
import time

import pytest

from rest.app import SchedulerView
from rest.server import RestServer, ServerSettings


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
