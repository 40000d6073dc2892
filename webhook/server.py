"""Serving the webhook app with gunicorn: HTTPS, threaded workers, certificates re-read when replaced.

The parent (arbiter) process has done the startup work before :meth:`WebhookServer.run`; each worker
builds its own cluster view, informers and Falcon app after the fork (:meth:`WebhookServer.load`),
because forked workers share nothing with the parent but the certificate file.
"""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gunicorn.app.base import BaseApplication

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


@dataclass(frozen=True)
class ServerSettings:
    bind: str
    cert_file: Path
    workers: int = 2
    threads: int = 4
    keepalive: int = 60
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
        for key, value in {
            "bind": [s.bind], "workers": s.workers, "worker_class": "gthread", "threads": s.threads,
            "keepalive": s.keepalive, "timeout": 120, "graceful_timeout": 10,
            "certfile": str(s.cert_file), "ssl_context": _ssl_context,
            "loglevel": s.log_level, "accesslog": None, "proc_name": "yunikorn-admission-controller",
            "control_socket_disable": True,  # replicas on one host would fight over the default socket
            "on_exit": lambda arbiter: self._on_exit(),
        }.items():
            self.cfg.set(key, value)

    def load(self):
        return self._make_app()
