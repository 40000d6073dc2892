"""Serving the REST app in the scheduler's process with waitress.

Gunicorn workers are separate processes and cannot read the actors' snapshots, so the scheduler serves
its API in-process. Waitress reads every request in full on one I/O thread before a worker thread sees
it, so idle or slow clients hold a socket but never a thread; requests beyond the header or body limit
are refused (431, 413), and a connection idle past ``idle_timeout`` is closed. Each event stream keeps
a worker thread for as long as it runs, so the pool has ``threads`` workers beyond the stream limit.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from waitress.channel import HTTPChannel
from waitress.server import create_server

from rest.app import MAX_BODY, SchedulerView, create_app

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerSettings:
    threads: int = 8  # for requests; one more per allowed event stream
    max_streams: int = 100
    connection_limit: int = 1000  # open sockets; past it new connections wait in the listen backlog
    backlog: int = 1024
    idle_timeout: int = 30  # seconds without a byte in either direction before a connection is closed
    max_header_bytes: int = 64 * 1024
    max_body_bytes: int = MAX_BODY


class RestServer:
    """A running REST endpoint; ``stop()`` closes it."""

    def __init__(self, view: SchedulerView, host: str = "0.0.0.0", port: int = 9080,
                 settings: ServerSettings = ServerSettings()) -> None:
        s = settings
        self._server = create_server(
            create_app(view, s.max_streams), host=host, port=port, threads=s.threads + s.max_streams,
            connection_limit=s.connection_limit, backlog=s.backlog, channel_timeout=s.idle_timeout,
            cleanup_interval=max(1, min(s.idle_timeout, 30)), max_request_header_size=s.max_header_bytes,
            max_request_body_size=s.max_body_bytes, ident="yunikorn", clear_untrusted_proxy_headers=True,
            expose_tracebacks=False)
        self.host, self.port = host, self._server.effective_port
        self._thread = threading.Thread(target=self._server.run, name="rest-server", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    def stop(self) -> None:
        """Close the listener and every connection, end the I/O loop and the worker threads."""
        server = self._server

        def close_all() -> None:  # on the I/O thread, which ends once it has no socket left to watch
            for dispatcher in list(server._map.values()):  # connections, the listener, the wake-up pipe
                (dispatcher.handle_close if isinstance(dispatcher, HTTPChannel) else dispatcher.close)()

        try:
            server.trigger.pull_trigger(close_all)
        except OSError:  # the I/O thread, woken for another reason, ran close_all and closed the pipe first
            log.debug("REST server closed before its wake-up was written")
        self._thread.join(timeout=5)
        server.task_dispatcher.shutdown(timeout=5)


def start(view: SchedulerView, host: str = "0.0.0.0", port: int = 9080) -> RestServer:
    return RestServer(view, host, port)
