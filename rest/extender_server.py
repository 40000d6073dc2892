"""The extender API on a port of its own, over HTTPS, for clients holding a certificate of one CA.

kube-scheduler's extender client can present a TLS client certificate (``tlsConfig.certFile`` and
``keyFile`` of the extender's entry in ``KubeSchedulerConfiguration``, with ``enableHTTPS: true``) and
nothing else: no bearer token, no other header. So this listener authenticates kube-scheduler by its
certificate: a TLS handshake without a certificate signed by ``client_ca_file`` fails, before any
request is read. Each connection gets a thread of a bounded pool (more wait in the listen backlog) for
at most ``timeout`` seconds, handshake, request and answer together, so a client that stalls or
dribbles frees its thread on time. kube-scheduler opens a connection per call and is answered in
well under a second.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

import falcon

from rest import extender as api

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ExtenderTls:
    """The server's certificate chain and key, and the CA whose certificates clients must present."""

    cert_file: str
    key_file: str
    client_ca_file: str

    def context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert_file, self.key_file)
        context.load_verify_locations(cafile=self.client_ca_file)
        context.verify_mode = ssl.CERT_REQUIRED
        return context


class _Handler(WSGIRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        log.debug("extender %s: " + format, self.client_address[0], *args)


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, context: ssl.SSLContext, threads: int, timeout: float) -> None:
        self._context = context
        self._slots = threading.BoundedSemaphore(threads)
        self._timeout = timeout
        super().__init__(address, _Handler)

    def process_request(self, request, client_address) -> None:
        self._slots.acquire()  # past ``threads`` connections, new ones wait in the listen backlog
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def finish_request(self, request: socket.socket, client_address) -> None:
        """Shake hands on the connection's own thread, so a slow client holds up nobody else."""
        request.settimeout(self._timeout)
        # The TLS socket takes the connection over from ``request``; the deadline cuts whichever holds it.
        secured = self._context.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        deadline = threading.Timer(self._timeout, _cut, (secured,))
        deadline.start()
        try:
            secured.do_handshake()
        except (ssl.SSLError, OSError) as error:
            log.info("extender: TLS handshake with %s refused: %s", client_address[0], error)
        else:
            super().finish_request(secured, client_address)
        finally:
            deadline.cancel()
            secured.close()

    def handle_error(self, request, client_address) -> None:
        log.info("extender: connection from %s failed", client_address[0], exc_info=True)


def _cut(connection: socket.socket) -> None:
    """End a connection past its deadline: its thread's blocked read or write returns at once."""
    try:
        connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class ExtenderServer:
    """Serves ``extender`` (see ``rest.extender``) on ``host:port`` with ``tls``; ``stop()`` closes it."""

    def __init__(self, extender: api.Extender, tls: ExtenderTls, host: str = "0.0.0.0", port: int = 9443,
                 threads: int = 16, timeout: float = 10.0) -> None:
        app = falcon.App()
        api.add_routes(app, extender)
        self._server = _Server((host, port), tls.context(), threads, timeout)
        self._server.set_app(app)
        self.host, self.port = host, self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="extender-server", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"https://{host}:{self.port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
