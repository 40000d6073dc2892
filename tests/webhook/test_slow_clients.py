"""The admission controller against slow clients: they lose their connection, others keep being served."""

import contextlib
import socket
import ssl
import time

from tests.webhook.harness import SERVER_NAME, HttpsClient, registered_bundle

STALLED_REQUEST = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"


def _stalled(port: int, bundle: bytes) -> ssl.SSLSocket:
    """A client that opens a TLS connection, sends the headers and one byte of a 1,000-byte body, and stalls."""
    context = ssl.create_default_context(cadata=bundle.decode())
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30),
                               server_hostname=SERVER_NAME)
    sock.sendall(STALLED_REQUEST)
    return sock


def test_stalled_clients_are_cut_at_the_deadline_and_do_not_starve_others(kubesim, start_controller):
    controller = start_controller("--threads", "2", "--request-timeout", "2", workers=1)
    bundle = registered_bundle(kubesim)
    with contextlib.ExitStack() as stack:
        stalled = [stack.enter_context(_stalled(controller.port, bundle)) for _ in range(4)]
        started = time.monotonic()
        assert HttpsClient(controller.port, bundle, timeout=20).get("/health") == (200, b"OK\r\n")
        assert time.monotonic() - started < 8, "twice as many stalled clients as threads delay others briefly"
        for sock in stalled:
            assert sock.recv(1024) == b"", "a stalled connection is closed"
        assert time.monotonic() - started < 10

