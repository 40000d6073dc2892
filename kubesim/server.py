"""HTTP plumbing: routing paths to the API, JSON (or protobuf) in and JSON out, streaming watches.

A stdlib threaded server: one thread per connection, HTTP/1.1 keep-alive, Nagle off (without that every
request stalls ~40 ms on delayed ACKs), headers and body written in one send. Request headers are read
by a plain parser and JSON is handled by orjson: the stdlib's header parsing (the email package) and
json module were half of the emulator's time under a benchmark's load.
"""

from __future__ import annotations

import logging
import queue
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import orjson

from kubesim import auth, discovery, errors, negotiation, openapi, protobuf, rbac, tables
from kubesim.api import JOB_ORPHANS_WARNING, delete_options
from kubesim.rbac import Attributes
from kubesim.resources import BY_PATH, JOB, NAMESPACE
from kubesim.store import Watcher

log = logging.getLogger(__name__)
_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


class Route:
    __slots__ = ("kind", "namespace", "name", "subresource", "watch_path")

    def __init__(self, kind, namespace="", name="", subresource="", watch_path=False):
        self.kind, self.namespace, self.name = kind, namespace, name
        self.subresource, self.watch_path = subresource, watch_path


def route(path: str) -> Route | None:
    """``/api/v1/namespaces/ns/pods/p/status`` -> Route(pods, ns, p, status); None when not a resource."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch_path = bool(rest) and rest[0] == "watch"
    if watch_path:
        rest = rest[1:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    elif len(rest) in (2, 3) and rest[0] == "namespaces":  # the namespace object itself
        return Route(NAMESPACE, "", rest[1], rest[2] if len(rest) == 3 else "", watch_path)
    if not rest or len(rest) > 3:
        return None
    kind = BY_PATH.get((group, version, rest[0]))
    if kind is None:
        return None
    return Route(kind, namespace, rest[1] if len(rest) > 1 else "", rest[2] if len(rest) > 2 else "", watch_path)


class Headers(dict):
    """Request headers by lower-cased name."""

    def get(self, name: str, default=None):
        return super().get(name.lower(), default)


MAX_HEADER_LINE = 65536
MAX_HEADERS = 100


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "kubesim"
    sys_version = ""

    def parse_request(self) -> bool:
        """The request line and headers (what the stdlib method does, minus the email package)."""
        self.command = None
        self.request_version = self.default_request_version
        self.close_connection = True
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = self.requestline.split()
        if len(words) != 3 or words[2] not in ("HTTP/1.0", "HTTP/1.1"):
            self.send_error(400, f"Bad request line {self.requestline!r}")
            return False
        self.command, self.path, self.request_version = words
        headers = Headers()
        self.impersonation: dict[str, list[str]] = {}  # Impersonate-* headers: each may repeat
        while True:
            line = self.rfile.readline(MAX_HEADER_LINE + 1)
            if len(line) > MAX_HEADER_LINE or len(headers) > MAX_HEADERS:
                self.send_error(431, "Request header fields too large")
                return False
            if line in (b"\r\n", b"\n", b""):
                break
            name, colon, value = str(line, "iso-8859-1").partition(":")
            if not colon:
                self.send_error(400, f"Bad header line {line[:80]!r}")
                return False
            name, value = name.strip().lower(), value.strip()
            headers[name] = value
            if name.startswith("impersonate-"):
                self.impersonation.setdefault(name, []).append(value)
        self.headers = headers
        connection = headers.get("Connection", "").lower()
        self.close_connection = connection == "close" or (self.request_version == "HTTP/1.0"
                                                           and connection != "keep-alive")
        if headers.get("Expect", "").lower() == "100-continue" and self.request_version == "HTTP/1.1":
            return self.handle_expect_100()
        return True

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self):
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    # Plumbing.
    def _send(self, code: int, body: dict | list | bytes, headers: dict[str, str] | None = None) -> None:
        if self._record is not None:  # logged before the answer leaves, so a client never outruns the log
            self._record[5] = code
            self.server.sim.log_request(*self._record)
            self._record = None
        payload = body if isinstance(body, bytes) else orjson.dumps(body)
        head = [f"HTTP/1.1 {code} {self.responses.get(code, ('',))[0]}", "Content-Type: application/json",
                f"Content-Length: {len(payload)}"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)

    def _body(self, typed: bool = True):
        """The request's body as a JSON object (None when empty): JSON, or protobuf where its type says so;
        415 for a body of another type, unless not ``typed`` (the admin paths read JSON whatever the header
        says, as ``curl -d`` sends it)."""
        raw = self._raw_body()
        media = negotiation.body_type(self.command, self.headers.get("Content-Type")) if typed else None
        if not raw:
            return None
        if media == protobuf.MEDIA_TYPE:
            return protobuf.decode(raw)
        try:
            return orjson.loads(raw)
        except ValueError as error:
            raise errors.bad_request(f"the body of the request could not be decoded as JSON: {error}") from None

    def _raw_body(self) -> bytes:
        """The request body, read once (by length or in chunks) and kept for the request's later readers;
        whatever happens after, the next request on the connection starts where this one ends."""
        if self._body_read:
            return self._kept_body
        self._body_read = True
        try:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                self._kept_body = self._read_chunks()
                return self._kept_body
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True  # where the body ends is unknown: the connection cannot go on
            raise errors.bad_request("the body of the request is framed badly (Content-Length or chunks)") from None
        self._kept_body = self.rfile.read(length) if length > 0 else b""
        return self._kept_body

    def _read_chunks(self) -> bytes:
        parts = []
        while True:
            size = int(self.rfile.readline(MAX_HEADER_LINE + 1).split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline(MAX_HEADER_LINE + 1) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline()

    def _handle(self) -> None:
        sim = self.server.sim
        self._body_read = False  # per request: the handler lives as long as the keep-alive connection
        self._kept_body = b""
        self._warnings = {}
        split = urlsplit(self.path)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        verb = _VERBS.get(self.command, "unknown")
        target = None
        record = self._record = [verb, "", "", "", "", 0]
        try:
            if split.path.startswith("/kubesim/"):
                record[1] = "kubesim"
                code, body = self._admin(split.path, verb)
                self._send(code, body)
                return
            user = auth.authenticate(self.headers.get("Authorization"), sim.tokens)
            if self.impersonation:
                user = auth.impersonate(user, self.impersonation, sim.allows, self.path)
            static = discovery.answer(split.path) or openapi.answer(split.path)
            if static is not None:  # non-resource paths, which every user may read
                record[1:3] = ["discovery", split.path]
                negotiation.answer(self.headers.get("Accept"), table_allowed=False)
                self._send(200, static)
                return
            target = route(split.path)
            if target is None:
                raise errors.ApiError(404, "NotFound", "the server could not find the requested resource")
            if verb == "get" and not target.name and (target.watch_path or query.get("watch") in ("true", "1")):
                verb = "watch"
            elif verb == "get" and not target.name:
                verb = "list"
            if user is not auth.ADMIN:  # the admin may do anything: no question to ask
                asked = Attributes("deletecollection" if verb == "delete" and not target.name else verb,
                                   target.kind.group, target.kind.plural, target.subresource,
                                   target.name if target.kind is NAMESPACE else target.namespace, target.name)
                if not sim.allows(user, asked):
                    raise asked.forbidden(user)
            shape = negotiation.answer(self.headers.get("Accept"), table_allowed=verb in ("get", "list", "watch"))
            maker = (tables.TableMaker(target.kind.plural, shape.table_version, tables.include_object(query))
                     if shape.table_version else None)
            resource = target.kind.plural + (f"/{target.subresource}" if target.subresource else "")
            record[:5] = [verb, target.kind.plural, target.subresource, target.namespace, target.name]
            delay = sim.faults.delay_for(verb, resource, target.namespace or None)
            if delay:
                time.sleep(delay)
            renewal = verb == "update" and resource == "leases" and sim.faults.has_renewal_rules() \
                and self._renews_lease(target)
            failure = sim.faults.failure_for(verb, resource, target.namespace or None, renewal)
            if failure is not None:
                error, apply_after = failure
                if apply_after is not None and verb in ("create", "update", "patch", "delete"):
                    self._apply_later(verb, target, query, apply_after, user)
                raise error
            if verb == "watch":
                record[5] = 200
                sim.log_request(*record)
                self._record = None
                self._watch(target, query, maker)
                return
            code, body = self._dispatch(verb, target, query, user)
            if maker is not None:
                body = maker.of_list(body) if verb == "list" else maker.of_object(body)
            self._send(code, body, self._warnings)
        except errors.ApiError as error:
            if self.command in ("POST", "PUT", "PATCH", "DELETE"):
                self._drain()
            self._send(error.code, error.status(), error.headers)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:  # a bug in kubesim must answer 500, as a real server would, not kill the thread
            log.exception("kubesim failed on %s %s", self.command, self.path)
            self._send(500, errors.ApiError(500, "InternalError", "kubesim internal error").status())
        finally:
            if self._record is not None:  # nothing was answered (the client went away)
                sim.log_request(*self._record)
                self._record = None

    def _drain(self) -> None:
        try:
            self._raw_body()
        except (OSError, ValueError, errors.ApiError):
            self.close_connection = True

    def _renews_lease(self, target: Route) -> bool:
        """An update of a Lease by the holder it names (client-go's renewal): fault rules of verb ``renew``."""
        try:
            body = self._body()
        except errors.ApiError:
            return False
        current = self.server.sim.store.find(target.kind, target.namespace, target.name)
        holder = ((body or {}).get("spec") or {}).get("holderIdentity") if isinstance(body, dict) else None
        return bool(holder) and current is not None and (current.get("spec") or {}).get("holderIdentity") == holder

    def _apply_later(self, verb: str, target: Route, query: dict, seconds: float, user: auth.User) -> None:
        """Carry out a write whose answer is an injected error, ``seconds`` after it (its body read now)."""
        body = self._body() if verb in ("create", "update", "patch") else None
        patch_type = negotiation.body_type("PATCH", self.headers.get("Content-Type")) if verb == "patch" else None
        api = self.server.sim.api

        def apply() -> None:
            try:
                _carry_out(api, verb, target, body, patch_type, user)
            except errors.ApiError as error:
                log.info("late %s of %s refused: %s", verb, target.kind.plural, error.status().get("message"))
        timer = threading.Timer(seconds, apply)
        timer.daemon = True
        timer.start()

    def _dispatch(self, verb: str, target: Route, query: dict, user: auth.User):
        api = self.server.sim.api
        if target.kind is rbac.SELF_REVIEW:  # asked and answered, never stored
            if verb != "create":
                raise errors.method_not_allowed(f"{verb} is not supported on selfsubjectaccessreviews")
            return 201, rbac.self_review(self._body(), user, self.server.sim.allows)
        if query.get("dryRun"):
            # A server-side dry run would have to write nothing; refused rather than written for real.
            raise errors.bad_request("dryRun is not supported by kubesim; use kubectl --dry-run=client")
        if verb == "get":
            return api.get(target.kind, target.namespace, target.name)
        if verb == "list":
            return api.list(target.kind, target.namespace, query)
        body = self._body() if verb in ("create", "update", "patch", "delete") else None
        if verb == "delete":
            options = delete_options(query, body)
            if target.kind is JOB and options.propagation is None and target.name:
                self._warnings["Warning"] = JOB_ORPHANS_WARNING
            if not target.name:
                raise errors.method_not_allowed("delete needs a resource name")
            return api.delete(target.kind, target.namespace, target.name, options)
        patch_type = negotiation.body_type("PATCH", self.headers.get("Content-Type")) if verb == "patch" else None
        if verb not in ("create", "update", "patch", "delete"):
            raise errors.method_not_allowed(f"unsupported method {self.command}")
        return _carry_out(api, verb, target, body, patch_type, user)

    def _admin(self, path: str, verb: str):
        sim = self.server.sim
        if path == "/kubesim/faults" and verb == "create":
            spec = self._body(typed=False) or {}
            try:
                sim.faults.apply(spec)
            except (TypeError, ValueError) as error:
                raise errors.bad_request(str(error)) from None
            return 200, {"ok": True}
        if path == "/kubesim/requests" and verb == "get":
            return 200, [record._asdict() for record in sim.request_log]
        raise errors.ApiError(404, "NotFound", f"no admin path {path}")

    # Watches.
    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _watch(self, target: Route, query: dict, maker: tables.TableMaker | None) -> None:
        sim = self.server.sim
        kind = target.kind
        try:
            timeout = float(query.get("timeoutSeconds") or 1800)
        except ValueError:
            raise errors.bad_request("timeoutSeconds must be a number") from None
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        if "sendInitialEvents" in query:  # kube-apiserver without the WatchList feature: clients fall back to list
            raise errors.ApiError(422, "Invalid", 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: '
                                  "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature "
                                  "gate is enabled", {"group": "meta.k8s.io", "kind": "ListOptions"})
        expired = None
        watcher = None
        if sim.faults.take_gone(kind.plural):
            expired = errors.gone("too old resource version: injected by kubesim")
        else:
            try:
                watcher = sim.api.watch(kind, target.namespace, query)
            except errors.ApiError as error:
                if error.code != 410:
                    raise
                expired = error
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        if expired is not None:
            self._chunk(orjson.dumps({"type": "ERROR", "object": expired.status()}) + b"\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        sim.watch_opened(watcher)
        deadline = time.monotonic() + timeout
        try:
            self._stream(watcher, kind, deadline, bookmarks, maker)
        finally:
            sim.api.store.unwatch(watcher)
            sim.watch_closed(watcher)

    def _stream(self, watcher: Watcher, kind, deadline: float, bookmarks: bool,
                maker: tables.TableMaker | None) -> None:
        interval = self.server.sim.bookmark_interval
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or watcher.overflowed:
                self.wfile.write(b"0\r\n\r\n")
                return
            try:
                item = watcher.queue.get(timeout=min(remaining, interval))
            except queue.Empty:
                rv = self.server.sim.api.store.bookmark_rv(watcher) if bookmarks else None
                if rv is not None:
                    mark = {"type": "BOOKMARK", "object": maker.empty(str(rv)) if maker else
                            {"kind": kind.kind, "apiVersion": kind.group_version,
                             "metadata": {"resourceVersion": str(rv)}}}
                    self._chunk(orjson.dumps(mark) + b"\n")
                continue
            if item is Watcher.DROPPED or item is Watcher.CLOSED:
                self.close_connection = True
                if item is Watcher.DROPPED:  # cut mid-stream: no terminating chunk, the socket just closes
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                else:
                    self.wfile.write(b"0\r\n\r\n")
                return
            event_type, obj = item
            shown = maker.of_object(obj) if maker else obj
            self._chunk(orjson.dumps({"type": event_type, "object": shown}) + b"\n")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512

    def __init__(self, address, sim) -> None:
        self.sim = sim
        self.connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, Handler)

    def handle_error(self, request, client_address):
        """A client gone mid-request (a killed process resets its connections) is routine: no traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            log.debug("client %s went away", client_address)
            return
        super().handle_error(request, client_address)

    def process_request(self, request, client_address):
        with self._connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self._connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def close_all_connections(self) -> None:
        with self._connections_lock:
            open_now = list(self.connections)
        for connection in open_now:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _carry_out(api, verb: str, target: Route, body, patch_type, user: auth.User):
    """A write's effect on the store (by ``user``, whom admission webhooks are told of): ``(code, object)``."""
    kind, ns, name, sub = target.kind, target.namespace, target.name, target.subresource
    if verb == "create":
        if name and not sub:
            raise errors.method_not_allowed("POST to a named resource is not allowed")
        return api.create(kind, ns, body, sub, name, _user_info(user))
    if not name:
        raise errors.method_not_allowed(f"{verb} needs a resource name")
    if verb == "update":
        return api.update(kind, ns, name, body, sub, _user_info(user))
    if verb == "patch":
        return api.patch(kind, ns, name, body, patch_type, sub)
    return api.delete(kind, ns, name)


def _user_info(user: auth.User) -> dict | None:
    """The ``userInfo`` webhooks are told of (None: the admin's, which admission has ready)."""
    return None if user is auth.ADMIN else user.user_info()
