"""Serving the REST app in the scheduler's process, on a pool of threads.

Gunicorn workers are separate processes and cannot read the actors' snapshots, so the scheduler
serves its API with the stdlib WSGI server made threaded (one thread per connection, keep-alive,
Nagle off).
"""

from __future__ import annotations

import logging
import socketserver
import threading
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from rest.app import SchedulerView, create_app

log = logging.getLogger(__name__)


class _Handler(WSGIRequestHandler):
    disable_nagle_algorithm = True

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        log.debug("%s " + format, self.address_string(), *args)


class _ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class RestServer:
    """A running REST endpoint; ``stop()`` closes it."""

    def __init__(self, view: SchedulerView, host: str = "0.0.0.0", port: int = 9080) -> None:
        self._server = make_server(host, port, create_app(view), server_class=_ThreadingServer,
                                   handler_class=_Handler)
        self.host, self.port = host, self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="rest-server", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def start(view: SchedulerView, host: str = "0.0.0.0", port: int = 9080) -> RestServer:
    return RestServer(view, host, port)
