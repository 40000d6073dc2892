"""Serving the webhook app with gunicorn: HTTPS, threaded workers, certificates re-read when replaced.

Each worker serves with a pool of threads; idle connections wait in its poller without a thread, and
a connection a thread has served for ``--request-timeout`` seconds (10) is cut, so slow clients cannot
hold the pool. Request lines, header counts and sizes are limited by gunicorn (400/431 beyond), bodies
by the app (413 before reading when the Content-Length is over the limit).

The parent (arbiter) process has done the startup work before :meth:`WebhookServer.run`; each worker
builds its own cluster view, informers and Falcon app after the fork (:meth:`WebhookServer.load`),
because forked workers share nothing with the parent but the certificate file.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gunicorn.app.base import BaseApplication
from gunicorn.workers.gthread import ThreadWorker

from webhook.tls import ReloadingContext

log = logging.getLogger(__name__)

_contexts: dict[str, ReloadingContext] = {}  # per worker process, keyed by certificate file
_contexts_lock = threading.Lock()


def _ssl_context(config, default_ssl_context_factory) -> ssl.SSLContext:
    """gunicorn's per-connection hook: the cached context, rebuilt only when the file changed."""
    reloading = _contexts.get(config.certfile)
    if reloading is None:
        with _contexts_lock:
            reloading = _contexts.setdefault(config.certfile, ReloadingContext(Path(config.certfile)))
    return reloading.get()


# The API server gives up on a webhook after 10 s by default: a connection busy longer than this is of
# no use to anyone, and its thread is worth more to the next request.
REQUEST_TIMEOUT = 10.0


class DeadlineWorker(ThreadWorker):
    """gunicorn's gthread worker with a deadline on every connection a thread is serving.

    gthread keeps idle kept-alive connections in its poller, but a client that sends half a request
    and stalls holds a thread for as long as it likes. Here the main loop, which wakes at least once a
    second, shuts down the socket of any connection served for longer than ``request_timeout``
    seconds: the blocked read returns at once and the thread is free again.
    """

    request_timeout = REQUEST_TIMEOUT  # set in the parent before the workers are forked

    def init_process(self):
        self._serving: dict[object, float] = {}
        super().init_process()

    def handle(self, conn):  # in a pool thread; from here on the connection holds that thread
        self._serving[conn] = time.monotonic() + self.request_timeout
        return super().handle(conn)

    def finish_request(self, conn, fs):
        self._serving.pop(conn, None)
        super().finish_request(conn, fs)

    def murder_keepalived(self, force=False):
        super().murder_keepalived(force)
        now = time.monotonic()
        for conn, deadline in list(self._serving.items()):
            if deadline < now:
                del self._serving[conn]
                try:  # the plain socket's shutdown, also under TLS: it wakes the reading thread
                    socket.socket.shutdown(conn.sock, socket.SHUT_RDWR)
                except OSError:
                    pass


@dataclass(frozen=True)
class ServerSettings:
    bind: str
    cert_file: Path
    workers: int = 2
    threads: int = 16
    keepalive: int = 5  # seconds an idle kept-alive connection waits in the poller (it holds no thread)
    worker_connections: int = 1000  # open connections per worker, most of them idle in the poller
    request_timeout: float = REQUEST_TIMEOUT
    log_level: str = "info"


class WebhookServer(BaseApplication):
    """gunicorn for the webhook: ``make_app()`` runs in every worker; ``on_exit()`` in the parent at the end."""

    def __init__(self, settings: ServerSettings, make_app: Callable[[], object],
                 on_exit: Callable[[], None] = lambda: None) -> None:
        self._settings = settings
        self._make_app = make_app
        self._on_exit = on_exit
        super().__init__()

    def load_config(self) -> None:
        s = self._settings
        DeadlineWorker.request_timeout = s.request_timeout
        for key, value in {
            "bind": [s.bind], "workers": s.workers, "worker_class": f"{__name__}.DeadlineWorker",
            "threads": s.threads, "worker_connections": s.worker_connections, "keepalive": s.keepalive,
            "timeout": 120, "graceful_timeout": 10,
            "limit_request_line": 8190, "limit_request_fields": 100, "limit_request_field_size": 16384,
            "certfile": str(s.cert_file), "ssl_context": _ssl_context,
            "loglevel": s.log_level, "accesslog": None, "proc_name": "yunikorn-admission-controller",
            "control_socket_disable": True,  # replicas on one host would fight over the default socket
            "on_exit": lambda arbiter: self._on_exit(),
        }.items():
            self.cfg.set(key, value)

    def load(self):
        return self._make_app()
