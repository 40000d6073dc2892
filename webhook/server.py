"""Serving the webhook app with gunicorn: HTTPS, threads only for whole requests, certificates re-read.

Each worker's main loop reads each request without blocking (:class:`IntakeWorker`), and hands each
first step of a TLS handshake to threads of its own (``--threads`` of them), which compute it without the GIL;
only a request that has fully arrived, head and body, is served. A small review or health check is
answered on the main loop itself (the app's work for it is pure computation of a few tens of
microseconds, less than handing it to a thread costs); anything else goes to the pool of threads
running the app. A stalled or dribbling client therefore holds a socket, never a thread, and is cut
once its request has taken ``--request-timeout`` seconds (10) to arrive; requests that hold the app's
threads (a ``/validate-conf`` waiting on the scheduler) never delay a new connection's handshake.
What a request may be is decided from its head (:mod:`webhook.framing`: 413, 431, 411 before its body
is kept) and then by gunicorn's parser (400/431), which a plain head answered on the main loop skips
(:mod:`webhook.fastpath`); what all arriving requests may hold together, by ``--max-buffered-mib`` per
worker (503 beyond).

The parent (arbiter) process has done the startup work before :meth:`WebhookServer.run`; each worker
builds its own cluster view, informers and Falcon app after the fork (:meth:`WebhookServer.load`),
because forked workers share nothing with the parent but the certificate file.
"""

from __future__ import annotations

import errno
import selectors
import socket
import ssl
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from gunicorn import http, util
from gunicorn.app.base import BaseApplication
from gunicorn.workers.gthread import TConn, ThreadWorker

from webhook import constants as c
from webhook import fastpath
from webhook.app import MAX_BODY
from webhook.framing import Refusal, request_length
from webhook.tls import ReloadingContext

# The API server gives up on a webhook after 10 s by default: a request that takes longer than this to
# arrive, or to be answered, is of no use to anyone.
REQUEST_TIMEOUT = 10.0
# Bytes a worker holds for requests still arriving: beyond it, 503. Without a bound, a thousand clients
# each sending most of a 3 MiB body would buffer gigabytes.
MAX_BUFFERED = 64 * 1024 * 1024
_READ_SIZE = 64 * 1024
_DRAIN_LIMIT = 1024 * 1024  # what a refused client may still send (an over-long head, say) before it is cut
_STOP_LINGER = 2.0  # how long a stopping worker waits for requests still to arrive (gunicorn's choice too)
# Requests the main loop answers itself: the app only computes for these (no I/O, no lock held by another
# thread), and a review this small takes well under a millisecond; larger ones, and validate-conf (which
# asks the scheduler), go to a thread so the loop keeps taking other connections meanwhile.
_INLINE_PATHS = frozenset({c.MUTATE_PATH.encode(), c.HEALTH_PATH.encode()})
_INLINE_MAX = 64 * 1024
_ACCEPT_BATCH = 16


class _Connection(TConn):
    """A client connection, with the request arriving on it while the main loop owns it."""

    def __init__(self, cfg, sock: ssl.SSLSocket, client, server, deadline: float) -> None:
        super().__init__(cfg, sock, client, server)
        self.initialized = self.data_ready = True  # gunicorn's blocking handshake is never used
        self.parser = http.get_parser(cfg, sock, client)
        self.handshaken = False
        self.stepped = False  # the first step of its handshake is done: the rest is the main loop's
        self.shaking = False  # a step of its handshake runs on a thread: the main loop leaves it alone
        self.received = bytearray()
        self.length: int | None = None  # of the request at the start of ``received``, once its head is in
        self.deadline = deadline
        self.idle = False  # kept alive, waiting for the next request's first byte
        self.refused = False  # answered already; what the client still sends is read and discarded
        self.discarded = 0
        self.watching = 0  # the poller events it is registered for
        self.unsent = b""  # of an answer made on the main loop, while the client does not take it
        self.last = False  # that answer ends the connection


class _Answer:
    """The socket gunicorn writes an answer made on the main loop to: the bytes are collected, then sent
    in one go without blocking (one TLS record and one system call for head and body)."""

    def __init__(self) -> None:
        self.data = bytearray()

    def sendall(self, data: bytes) -> None:
        self.data += data

    def send(self, data: bytes) -> int:
        self.sendall(data)
        return len(data)

    def gettimeout(self) -> float:
        return 0.0

    def shutdown(self, how: int) -> None:
        raise OSError(errno.ENOTCONN, "the connection is closed by the main loop")

    def close(self) -> None:
        pass


@dataclass
class _InlineRequest:
    """What gunicorn's request handling reads of a connection, for a request answered on the main loop:
    the request's bytes, already whole, are parsed from memory and never from the socket."""

    sock: _Answer
    client: object
    server: object
    parser: object


class IntakeWorker(ThreadWorker):
    """gunicorn's gthread worker, but a connection gets a thread only with a whole request in hand.

    The main loop accepts and reads with non-blocking sockets, one poller for all connections; the
    first step of a handshake runs on a handshake thread, the socket out of the poller meanwhile. A new
    connection has ``request_timeout`` seconds for the handshake and its first request; a kept-alive one
    waits ``keepalive`` seconds for the next request's first byte, then has ``request_timeout`` seconds
    for the rest. A refused request (see :mod:`webhook.framing`) is answered
    at once, and so is a small ``/mutate`` or ``/health`` request, its answer sent without blocking (what
    the client does not take waits in the poller, and is cut ``request_timeout`` seconds after the
    request arrived). A thread writes the answer of any other request; if that has not finished
    ``request_timeout`` seconds after the request arrived (a client that does not read), the socket is
    shut down, which frees the thread.
    """

    request_timeout = REQUEST_TIMEOUT  # set in the parent before the workers are forked
    max_buffered = MAX_BUFFERED
    max_body = MAX_BODY

    def init_process(self) -> None:
        cfg = self.cfg
        self._tls = ReloadingContext(Path(cfg.certfile))
        self._max_head = cfg.limit_request_line + 2 + cfg.limit_request_fields * (cfg.limit_request_field_size + 2)
        self._limits = fastpath.Limits(cfg.limit_request_line, cfg.limit_request_fields, cfg.limit_request_field_size)
        self._arriving: set[_Connection] = set()
        self._serving: dict[_Connection, float] = {}
        self._buffered = 0  # bytes received and not yet handed to a thread, over all connections
        self._notified = 0.0
        # Handshakes have threads of their own: requests that hold the app's (a /validate-conf waiting on
        # the scheduler) never delay a new connection.
        self._handshakes = futures.ThreadPoolExecutor(self.cfg.threads, thread_name_prefix="handshake")
        super().init_process()

    def notify(self) -> None:
        """Tell the arbiter this worker is alive, at most once a second: the base worker does it on every
        turn of the main loop, a file's timestamp written each time, a sixth of the loop's work under load."""
        now = time.monotonic()
        if now >= self._notified + 1.0:
            self._notified = now
            super().notify()

    # Main loop: connections until their request is whole.
    def accept(self, listener) -> None:
        """Take the connections waiting in the listen backlog, up to ``_ACCEPT_BATCH`` and the worker's
        connection limit: one a turn would leave a new connection queued behind a burst's for many turns."""
        for _ in range(_ACCEPT_BATCH):
            if self.nr_conns >= self.worker_connections:
                return
            try:
                sock, client = listener.accept()
            except OSError as error:
                if error.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.ECONNABORTED):
                    return
                raise
            self._take(listener, sock, client)

    def _take(self, listener, sock: socket.socket, client) -> None:
        self.nr_conns += 1
        sock.setblocking(False)
        # An answer is one write, sent as soon as it is made: never held back for the client's acknowledgement
        # of what went before (a TLS session ticket, the previous answer), which a client may delay 40 ms.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            tls = self._tls.get().wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        except (OSError, ValueError) as error:
            self.log.error("cannot serve TLS: %s", error)
            self.nr_conns -= 1
            util.close(sock)
            return
        conn = _Connection(self.cfg, tls, client, listener.getsockname(), time.monotonic() + self.request_timeout)
        self._arriving.add(conn)
        self._watch(conn, selectors.EVENT_READ)  # its handshake starts on a thread once the ClientHello is in

    def _shake(self, conn: _Connection) -> None:
        """Run the first step of the connection's handshake on a handshake thread: its key exchange and
        signature are most of a new connection's cost, and OpenSSL computes them without the GIL, so the
        main loop meanwhile answers the reviews of other connections. What follows (the client's Finished,
        under TLS 1.2 its key share too) takes tens of microseconds, less than a hand-off, so the main loop
        does it rather than queue it again behind the first steps of a burst."""
        self._unwatch(conn)
        conn.shaking = True
        future = self._handshakes.submit(_handshake_step, conn.sock)
        future.add_done_callback(lambda done: self.method_queue.defer(self._shaken, conn, done))

    def _shaken(self, conn: _Connection, future) -> None:
        conn.shaking = False
        if conn not in self._arriving:  # cut while on the thread (its deadline, a stopping worker)
            return self._close(conn)
        try:
            wanted = future.result()
        except (OSError, ValueError):  # TLS errors included; ValueError: a socket closed under us
            return self._close(conn)
        conn.stepped = True
        if wanted:
            return self._watch(conn, wanted)
        conn.handshaken = True
        self._advance(conn)

    def _advance(self, conn: _Connection) -> None:
        """Take the connection as far as it goes without waiting: a whole request is answered here (see
        :meth:`_inline`) or goes to a thread."""
        if conn.refused:
            return self._drain(conn)
        try:
            if not conn.handshaken:
                if not conn.stepped:
                    return self._shake(conn)
                conn.sock.do_handshake()  # SSLWantReadError / SSLWantWriteError until it is done
                conn.handshaken = True
            if conn.unsent:
                self._send(conn)
                if conn.last:
                    return self._end(conn)
            answered = False
            while True:
                if conn.length is None:
                    conn.length = request_length(conn.received, self._max_head, self.max_body)
                if conn.length is not None and len(conn.received) >= conn.length:
                    if not self._inline(conn):
                        return self._hand_over(conn)
                    self._answer(conn)
                    self._send(conn)
                    if conn.last:
                        return self._end(conn)
                    answered = True
                    continue
                if answered and not conn.received and not conn.sock.pending():
                    break  # the usual case after an answer: nothing more has come, so no read to learn it
                missing = _READ_SIZE if conn.length is None else conn.length - len(conn.received)
                room = self.max_buffered - self._buffered
                if room <= 0:
                    raise Refusal(503, "too many requests arriving at once; try again")
                chunk = conn.sock.recv(min(missing, _READ_SIZE, room))
                if not chunk:
                    return self._close(conn)
                if conn.idle:
                    conn.idle, conn.deadline = False, time.monotonic() + self.request_timeout
                conn.received += chunk
                self._buffered += len(chunk)
        except ssl.SSLWantReadError:
            return self._watch(conn, selectors.EVENT_READ)
        except ssl.SSLWantWriteError:
            return self._watch(conn, selectors.EVENT_WRITE)
        except Refusal as refusal:
            return self._refuse(conn, refusal)
        except (OSError, ValueError):  # TLS errors included; ValueError: a socket closed under us
            return self._close(conn)
        self._watch(conn, selectors.EVENT_READ)

    def _inline(self, conn: _Connection) -> bool:
        """Whether the whole request at the start of ``received`` is one the main loop answers itself."""
        if conn.length > _INLINE_MAX:
            return False
        start = 0
        while conn.received.startswith(b"\r\n", start):
            start += 2
        line = bytes(conn.received[start:conn.received.find(b"\r\n", start, conn.length)])
        parts = line.split(b" ", 2)  # method, target, version
        return len(parts) == 3 and parts[1].partition(b"?")[0] in _INLINE_PATHS

    def _answer(self, conn: _Connection) -> None:
        """Answer the request at the start of ``received`` as a thread would, but from memory and into
        ``conn.unsent``: a plain head through :mod:`webhook.fastpath`, any other through gunicorn's parser."""
        request = bytes(conn.received[:conn.length])
        del conn.received[:conn.length]
        self._buffered -= conn.length
        conn.length = None
        answer = _Answer()
        req, keep_alive = None, False
        try:
            plain = fastpath.answer(self.wsgi, request, self._limits, conn.client, conn.server,
                                    closing=not (self.alive and self.cfg.keepalive))
            if plain:
                answer.data, keep_alive = plain
            else:
                inline = _InlineRequest(answer, conn.client, conn.server,
                                        http.get_parser(self.cfg, (request,), conn.client))
                req = next(inline.parser)
                keep_alive = self._keepalive_after(inline, self.handle_request(req, inline))
        except (http.errors.NoMoreData, StopIteration):
            pass
        except Exception as error:
            self.handle_error(req, answer, conn.client, error)
        conn.unsent = bytes(answer.data)
        conn.last = not keep_alive
        self._buffered += len(conn.unsent)
        conn.idle, conn.deadline = False, time.monotonic() + self.request_timeout

    def _send(self, conn: _Connection) -> None:
        """Send what is left of the answer; SSLWantWriteError (or SSLWantReadError) when it must wait."""
        while conn.unsent:
            sent = conn.sock.send(conn.unsent)
            conn.unsent = conn.unsent[sent:]
            self._buffered -= sent
        if not conn.received:
            conn.idle, conn.deadline = True, time.monotonic() + self.cfg.keepalive

    def _refuse(self, conn: _Connection, refusal: Refusal) -> None:
        """Answer, then end the connection (:meth:`_end`)."""
        self.log.debug("refused %s: %d %s", conn.client, refusal.status, refusal.reason)
        try:
            conn.sock.send(refusal.response())
        except OSError:
            return self._close(conn)
        self._end(conn)

    def _end(self, conn: _Connection) -> None:
        """Stop writing and read what the client still sends until it closes: closing at once with its
        bytes unread would reset the connection and could destroy the answer on the way."""
        self._buffered -= len(conn.received)
        conn.received.clear()
        try:
            conn.sock.shutdown(socket.SHUT_WR)  # from here on the socket reads plain bytes
        except OSError:
            return self._close(conn)
        conn.refused = True
        conn.deadline = min(conn.deadline, time.monotonic() + _STOP_LINGER)
        self._drain(conn)

    def _drain(self, conn: _Connection) -> None:
        try:
            while conn.discarded < _DRAIN_LIMIT:
                chunk = conn.sock.recv(_READ_SIZE)
                if not chunk:
                    break
                conn.discarded += len(chunk)
        except BlockingIOError:
            return self._watch(conn, selectors.EVENT_READ)
        except (OSError, ValueError):
            pass
        self._close(conn)

    def _watch(self, conn: _Connection, events: int) -> None:
        if conn.watching == events:
            return
        if conn.watching:
            self.poller.modify(conn.sock, events, partial(self._ready, conn))
        else:
            self.poller.register(conn.sock, events, partial(self._ready, conn))
        conn.watching = events

    def _unwatch(self, conn: _Connection) -> None:
        if conn.watching:
            self.poller.unregister(conn.sock)
            conn.watching = 0

    def _ready(self, conn: _Connection, _sock) -> None:
        self._advance(conn)

    def _close(self, conn: _Connection) -> None:
        self._arriving.discard(conn)
        if conn.shaking:
            return  # closed when its thread is done with it (:meth:`_shaken`)
        self._unwatch(conn)
        self._buffered -= len(conn.received) + len(conn.unsent)
        self.nr_conns -= 1
        conn.close()

    def _hand_over(self, conn: _Connection) -> None:
        self._unwatch(conn)
        self._arriving.discard(conn)
        conn.parser.unreader.unread(bytes(conn.received[:conn.length]))
        del conn.received[:conn.length]
        self._buffered -= conn.length
        conn.length = None
        self._serving[conn] = time.monotonic() + self.request_timeout
        self.enqueue_req(conn)

    # Main loop: a request answered by its thread.
    def finish_request(self, conn: _Connection, fs) -> None:
        self._serving.pop(conn, None)
        try:
            keep_alive = not fs.cancelled() and fs.result()
        except Exception:
            keep_alive = False
        if not keep_alive:
            return self._close(conn)
        read_ahead = conn.parser.unreader.take_buffered()  # nothing, unless the parser read past the request
        conn.received[:0] = read_ahead
        self._buffered += len(read_ahead)
        conn.sock.setblocking(False)
        conn.idle = not conn.received
        conn.deadline = time.monotonic() + (self.cfg.keepalive if conn.idle else self.request_timeout)
        self._arriving.add(conn)
        self._advance(conn)

    # Main loop: deadlines.
    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        if self._arriving:
            soonest = min(conn.deadline for conn in self._arriving)
            timeout = max(0.0, min(timeout, soonest - time.monotonic()))
        super().wait_for_and_dispatch_events(timeout)

    def murder_keepalived(self, force: bool = False) -> None:
        """Close connections whose request is late (all of them if ``force``) and shut down the sockets
        of answers that are late. A stopping worker gives requests still to arrive a short linger only:
        one already on its way is answered (with ``Connection: close``), a stalled one does not hold up
        the exit."""
        super().murder_keepalived(force)
        now = time.monotonic()
        for conn in list(self._arriving):
            if not self.alive:
                conn.deadline = min(conn.deadline, now + _STOP_LINGER)
            if force or conn.deadline <= now:
                self._close(conn)
        for conn, deadline in list(self._serving.items()):
            if deadline <= now:
                del self._serving[conn]
                try:  # the plain socket's shutdown, also under TLS: it wakes the writing thread
                    socket.socket.shutdown(conn.sock, socket.SHUT_RDWR)
                except OSError:
                    pass


def _handshake_step(sock: ssl.SSLSocket) -> int:
    """One non-blocking step of ``sock``'s TLS handshake: the poller event it waits for next, 0 once done."""
    try:
        sock.do_handshake()
    except ssl.SSLWantReadError:
        return selectors.EVENT_READ
    except ssl.SSLWantWriteError:
        return selectors.EVENT_WRITE
    return 0


@dataclass(frozen=True)
class ServerSettings:
    bind: str
    cert_file: Path
    workers: int = 2
    threads: int = 16
    keepalive: int = 5  # seconds an idle kept-alive connection waits for its next request
    worker_connections: int = 1000  # open connections per worker; more wait in the listen backlog
    request_timeout: float = REQUEST_TIMEOUT
    max_buffered: int = MAX_BUFFERED  # per worker
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
        IntakeWorker.request_timeout, IntakeWorker.max_buffered = s.request_timeout, s.max_buffered
        for key, value in {
            "bind": [s.bind], "workers": s.workers, "worker_class": f"{__name__}.IntakeWorker",
            "threads": s.threads, "worker_connections": s.worker_connections, "keepalive": s.keepalive,
            "timeout": 120, "graceful_timeout": 10,
            "limit_request_line": 8190, "limit_request_fields": 100, "limit_request_field_size": 16384,
            "certfile": str(s.cert_file),  # marks the server HTTPS; the worker loads and reloads the file
            "loglevel": s.log_level, "accesslog": None, "proc_name": "yunikorn-admission-controller",
            "control_socket_disable": True,  # replicas on one host would fight over the default socket
            "on_exit": lambda arbiter: self._on_exit(),
        }.items():
            self.cfg.set(key, value)

    def load(self):
        return self._make_app()
