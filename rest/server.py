"""Serving the REST app in the scheduler's process with waitress, bounded against hostile clients.

Gunicorn workers are separate processes and cannot read the actors' snapshots, so the scheduler serves
its API in-process. Waitress reads every request in full on one I/O thread before a worker thread sees
it, so idle or slow clients hold a socket but never a thread; requests beyond the header or body limit
are refused (431, 413), one with both ``Content-Length`` and ``Transfer-Encoding`` too (400, RFC 9112
6.3: a smuggling attempt). Each event stream keeps a worker thread for as long as it runs, so the pool
has ``threads`` workers beyond the stream limit.

What waitress leaves open is closed here:

- its I/O loop uses ``poll()``: ``select()`` fails for good once a descriptor passes 1023;
- the process may open as many descriptors as its hard limit allows, and the connection limit stays
  below what it can hold, so ``accept()`` never fails for want of one (past the limit, new connections
  wait in the listen backlog);
- a large answer is handed to the connection as its output buffer and sent in slices of it, never
  copied: a thousand readers of the same cached dump share one copy, and the worker thread is free as
  soon as the answer is queued; an answer made of pieces (the nodes' JSON) is sent as they are, as many
  of them in one system call as the socket takes, never joined;
- a connection is closed once nothing moved on it for ``idle_timeout`` seconds, also while an answer
  waits for a client that does not read (waitress alone never closes a connection with a request in
  hand, so a client pipelining requests it never reads would keep a worker thread for good), and
  once its client reads a waiting answer slower than ``min_send_rate`` over that time.

The health probes get a listener of their own (:class:`HealthServer`): its own port, I/O thread and
threads, so no load on the API delays the kubelet's probe.
"""

from __future__ import annotations

import logging
import resource
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import falcon
from waitress import trigger
from waitress.adjustments import Adjustments
from waitress.buffers import ReadOnlyFileBasedBuffer
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser, ParsingError
from waitress.server import TcpWSGIServer
from waitress.task import ThreadedTaskDispatcher
from waitress.wasyncore import _DISCONNECTED, EWOULDBLOCK

from rest.app import MAX_BODY, Cluster, SchedulerView, create_app
from rest.fragments import Pieces

log = logging.getLogger(__name__)
# Waitress warns of every request that waits for a thread: under load, a line per request
logging.getLogger("waitress.queue").setLevel(logging.ERROR)

SHARED_BODY = 256 * 1024  # answers at least this long are sent from the app's bytes, not a copy
_SPARE_DESCRIPTORS = 256  # kept for everything but REST connections: the cluster's, files, the health listener


@dataclass(frozen=True)
class ServerSettings:
    threads: int = 8  # for requests; one more per allowed event stream
    max_streams: int = 100
    connection_limit: int = 1000  # open sockets, at most the descriptor limit less a reserve; more wait
    backlog: int = 1024
    idle_timeout: int = 30  # seconds without a byte in either direction before a connection is closed
    min_send_rate: int = 16 * 1024  # bytes/s a client must read of an answer, over idle_timeout, or it is cut
    max_header_bytes: int = 64 * 1024
    max_body_bytes: int = MAX_BODY


def raise_descriptor_limit() -> int:
    """Lift the soft limit of open descriptors to the hard one (Go programs, upstream's scheduler among
    them, do this at start); the limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        wanted = 1 << 20 if hard == resource.RLIM_INFINITY else hard
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            log.debug("cannot raise the open file limit from %d", soft)
    return soft


def connection_limit(wanted: int) -> int:
    """``wanted``, or fewer when the process could not hold that many connections beside its other
    descriptors; never less than 16."""
    available = raise_descriptor_limit() - _SPARE_DESCRIPTORS
    if available < wanted:
        log.warning("REST connection limit lowered from %d to %d by the open file limit", wanted,
                    max(16, available))
    return max(16, min(wanted, available))


class _Parser(HTTPRequestParser):
    def parse_header(self, header_plus: bytes) -> None:
        super().parse_header(header_plus)
        # HTTP/1.1 headers have lost Transfer-Encoding by now (the parser took the chunked body);
        # HTTP/1.0 ones keep it
        if "CONTENT_LENGTH" in self.headers and (self.chunked or "TRANSFER_ENCODING" in self.headers):
            raise ParsingError("both Content-Length and Transfer-Encoding")


class _Channel(HTTPChannel):
    parser_class = _Parser
    sent = 0  # bytes sent on the connection
    measured_from: tuple[float, int] | None = None  # (when, ``sent`` then) while an answer waits to be sent

    def send(self, data, do_close: bool = True) -> int:
        sent = super().send(data, do_close) if type(data) is not list else self._send_pieces(data, do_close)
        self.sent += sent
        return sent

    def _send_pieces(self, pieces: list, do_close: bool) -> int:
        """``pieces`` (of a :class:`_SharedPieces`) in one system call, failing as waitress's ``send``."""
        try:
            return self.socket.sendmsg(pieces)
        except OSError as why:
            if why.args[0] == EWOULDBLOCK:
                return 0
            if why.args[0] in _DISCONNECTED:
                if do_close:
                    self.handle_close()
                return 0
            raise


class _WakeUp(trigger.trigger):
    """Waitress's wake-up pipe, written to by worker threads (and ``stop``) while the I/O thread may be
    closing it: a write to a closed descriptor's number lands in whatever the process opened next under
    that number, a stray ``x`` ahead of another client's request. Here a write and the close exclude each
    other, and a write after the close does nothing."""

    def __init__(self, map: dict) -> None:  # noqa: A002 - waitress's name
        self._writing = threading.Lock()
        super().__init__(map)

    def _physical_pull(self) -> None:
        with self._writing:
            if not self._closed:
                super()._physical_pull()

    def _close(self) -> None:
        with self._writing:
            super()._close()


class _Listener(TcpWSGIServer):
    channel_class = _Channel
    min_send_rate = 0  # bytes per second a client must take of a waiting answer, over ``channel_timeout``

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.trigger.close()  # waitress makes its own before a subclass can choose; nothing has used it yet
        self.trigger = _WakeUp(self._map)

    def maintenance(self, now: float) -> None:
        timeout = self.adj.channel_timeout
        for channel in list(self.active_channels.values()):
            if channel.last_activity < now - timeout:
                if channel.total_outbufs_len:  # its client stopped reading: the socket never turns writable
                    channel.handle_close()  # so close it here; a worker writing to it gets ClientDisconnected
                elif not channel.requests:
                    channel.will_close = True
            elif not channel.total_outbufs_len:
                channel.measured_from = None
            elif channel.measured_from is None:
                channel.measured_from = (now, channel.sent)
            elif now - channel.measured_from[0] >= timeout:
                began, sent = channel.measured_from
                if channel.sent - sent < self.min_send_rate * (now - began):
                    channel.handle_close()  # a client reading a byte now and then
                else:
                    channel.measured_from = (now, channel.sent)


class _SharedBody(ReadOnlyFileBasedBuffer):
    """An answer's bytes as the connection's output buffer: sent as slices of the one body, never copied.

    Waitress's own file buffer reads a copy of as much as the socket's send buffer holds (megabytes on
    loopback) at every attempt to send, however little the client's window takes.
    """

    def __init__(self, body: bytes) -> None:
        self.body, self.sent, self.remain = memoryview(body), 0, len(body)

    def prepare(self, size: int | None = None) -> int:
        return self.remain

    def get(self, numbytes: int = -1, skip: bool = False) -> memoryview:
        if numbytes == -1 or numbytes > self.remain:
            numbytes = self.remain
        chunk = self.body[self.sent:self.sent + numbytes]
        if skip:
            self.skip(numbytes)
        return chunk

    def skip(self, numbytes: int, allow_prune: bool = False) -> None:
        numbytes = min(numbytes, self.remain)
        self.sent += numbytes
        self.remain -= numbytes

    def close(self) -> None:
        self.body, self.remain = memoryview(b""), 0


_IOV_MAX = 1024  # the most pieces one sendmsg takes (Linux's IOV_MAX)


class _SharedPieces(_SharedBody):
    """An answer's :class:`Pieces` as the connection's output buffer: each attempt to send hands the socket
    the pieces from where the client is (the first one's rest, as a slice), never joined or copied; where
    that is and how many pieces the bytes asked for span is looked up in the answer's piece ends, which
    all its readers share."""

    def __init__(self, body: Pieces) -> None:
        self.body, self.sent, self.remain = body, 0, body.length

    def get(self, numbytes: int = -1, skip: bool = False) -> list:
        if numbytes == -1 or numbytes > self.remain:
            numbytes = self.remain
        if numbytes <= 0:
            return []
        ends, sent = self.body.ends, self.sent
        first = bisect_right(ends, sent)  # the piece holding the next byte
        last = min(bisect_left(ends, sent + numbytes, first), first + _IOV_MAX - 1)
        chunk = self.body.pieces[first:last + 1]  # its last piece may go beyond numbytes: send() may take it all
        begins = ends[first] - len(chunk[0])
        if sent > begins:
            chunk[0] = memoryview(chunk[0])[sent - begins:]
        if skip:
            self.skip(sum(map(len, chunk)))
        return chunk

    def close(self) -> None:
        self.body, self.remain = Pieces([]), 0


def _share_large_bodies(app: Callable) -> Callable:
    """The WSGI app, but a large answer made of one bytes object goes out as a :class:`_SharedBody`, and
    one made of :class:`Pieces` as a :class:`_SharedPieces`."""
    def serve(environ: dict, start_response: Callable) -> Iterable[bytes]:
        body = app(environ, start_response)
        if type(body) is list and len(body) == 1 and len(body[0]) >= SHARED_BODY:
            return _SharedBody(body[0])
        if type(body) is Pieces:
            return _SharedPieces(body)
        return body
    return serve


class _Served:
    """A waitress listener, its worker threads and its I/O thread; ``stop()`` closes them all."""

    def __init__(self, app: Callable, name: str, min_send_rate: int, **adjustments) -> None:
        self.adj = Adjustments(asyncore_use_poll=True, ident="yunikorn", clear_untrusted_proxy_headers=True,
                               expose_tracebacks=False, **adjustments)
        dispatcher = ThreadedTaskDispatcher()
        dispatcher.set_thread_count(self.adj.threads)
        self._server = _Listener(app, {}, dispatcher=dispatcher, adj=self.adj, sockinfo=self.adj.listen[0])
        self._server.min_send_rate = min_send_rate
        self.port = int(self._server.effective_port)
        self._thread = threading.Thread(target=self._server.run, name=name, daemon=True)
        self._thread.start()

    @property
    def connections(self) -> int:
        return len(self._server.active_channels)

    def stop(self) -> None:
        """Close every connection and the listener on the I/O thread, which ends once nothing is left to
        watch; then let the worker threads end."""
        server = self._server

        def close() -> None:
            for dispatcher in list(server._map.values()):
                if isinstance(dispatcher, HTTPChannel):
                    dispatcher.handle_close()  # a worker writing to it gets ClientDisconnected
            server.close()  # the listener and the wake-up pipe

        server.trigger.pull_trigger(close)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():  # closed by the thunk, or the I/O thread had ended before it ran
            close()
        server.task_dispatcher.shutdown(timeout=5)


def _url(host: str, port: int) -> str:
    return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{port}"


class RestServer:
    """A running REST endpoint, with the probes' listener when given a ``health_port``; ``stop()`` closes it."""

    def __init__(self, view: SchedulerView, host: str = "0.0.0.0", port: int = 9080,
                 settings: ServerSettings = ServerSettings(), health_port: int | None = None) -> None:
        s = settings
        self._served = _Served(
            _share_large_bodies(create_app(view, s.max_streams)), "rest-server", s.min_send_rate, host=host, port=port,
            threads=s.threads + s.max_streams, connection_limit=connection_limit(s.connection_limit),
            backlog=s.backlog, channel_timeout=s.idle_timeout, cleanup_interval=max(1, min(s.idle_timeout, 30)),
            max_request_header_size=s.max_header_bytes, max_request_body_size=s.max_body_bytes)
        self.host, self.port = host, self._served.port
        try:
            self.health = HealthServer(view, host, health_port) if health_port is not None else None
        except OSError:
            self._served.stop()
            raise

    @property
    def url(self) -> str:
        return _url(self.host, self.port)

    @property
    def connections(self) -> int:
        """Connections open on the API's port."""
        return self._served.connections

    def stop(self) -> None:
        self._served.stop()
        if self.health is not None:
            self.health.stop()


def health_app(view: SchedulerView) -> falcon.App:
    """Only the probes: ``/ws/v1/health/live`` and ``/ws/v1/health/ready``, answered as on the API's port."""
    app = falcon.App()
    cluster = Cluster(view)
    app.add_route("/ws/v1/health/live", cluster, suffix="live")
    app.add_route("/ws/v1/health/ready", cluster, suffix="ready")
    return app


class HealthServer:
    """The probes' own listener: two threads, a few connections, short timeouts, no request body."""

    def __init__(self, view: SchedulerView, host: str = "0.0.0.0", port: int = 0) -> None:
        self._served = _Served(health_app(view), "rest-health", 1024, host=host, port=port, threads=2,
                               connection_limit=32, backlog=64, channel_timeout=5, cleanup_interval=1,
                               max_request_header_size=8 * 1024, max_request_body_size=0)
        self.host, self.port = host, self._served.port

    @property
    def url(self) -> str:
        return _url(self.host, self.port)

    def stop(self) -> None:
        self._served.stop()


def start(view: SchedulerView, host: str = "0.0.0.0", port: int = 9080, health_port: int | None = 0) -> RestServer:
    return RestServer(view, host, port, health_port=health_port)
