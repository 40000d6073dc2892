"""A lean HTTP transport for the shim's many small requests (binds, events, patches).

Measured on the 2-core machine against kubesim: a bind through the official client's urllib3 stack
costs about 450 us of CPU, and binding is the scheduler's throughput limit. ``FastTransport`` therefore
sends plain HTTP/1.1 requests on one keep-alive socket per thread: the request is written with one
``sendall`` and the response is parsed by ``httptools`` (llhttp, the parser under uvicorn), where
``http.client`` spent most of its time in the email package's header parser. Everything else comes from
the official client's configuration: server URL, TLS (CA, client certificate, verification) and the
authentication headers the official ``ApiClient`` computes (token refresh included). A watch has a
connection of its own (``FastTransport.stream``), whose body is read as it arrives: each read from the
socket yields every event it brought, where urllib3 yields one HTTP chunk (one event) at a time. A
request can also be sent ahead on a connection of its own and its answer read later
(``FastTransport.send_ahead``): a list asks for its next page before it parses the one it has. A cluster
reached through a proxy or with a TLS server name override uses the official client for everything
(``FastTransport.usable``).
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode, urlsplit

import httptools

RECEIVE_SIZE = 65536


class TransportError(Exception):
    """The connection failed before a whole answer arrived (refused, reset, timed out, closed, garbled)."""


class _Head:
    """The parser's callbacks for a response's status line and the headers the transport reads.

    The parser holds its callbacks and they hold the parser: a cycle, which only the collector frees.
    A recovery pauses the collector and then freezes what is alive, garbage cycles included, so every
    page of a list would have been kept for good (two copies of each: the chunks and the joined body).
    Used as a context, the pair is parted on leaving it, and what it read is freed once dropped."""

    __slots__ = ("parser", "reason", "retry_after")

    def __init__(self) -> None:
        self.parser: httptools.HttpResponseParser | None = httptools.HttpResponseParser(self)
        self.reason, self.retry_after = "", None

    def __enter__(self) -> _Head:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.part()

    def part(self) -> None:
        self.parser = None

    def on_status(self, reason: bytes) -> None:
        self.reason += reason.decode("iso-8859-1")

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"retry-after":
            self.retry_after = value.decode("iso-8859-1")


class _Answers(_Head):
    """Collects the responses on one connection from the parser's callbacks, in order (several when
    requests were pipelined)."""

    __slots__ = ("done", "_status", "_chunks", "_keep_alive")

    def __init__(self) -> None:
        super().__init__()
        self.done: list[tuple[int, str, str | None, bytes, bool]] = []  # status, reason, Retry-After, body, keep-alive

    def on_message_begin(self) -> None:
        self.reason, self.retry_after, self._chunks, self._keep_alive = "", None, [], False

    def on_headers_complete(self) -> None:
        self._status = self.parser.get_status_code()
        self._keep_alive = self.parser.should_keep_alive()  # the parser forgets it once the message ends

    def on_body(self, data: bytes) -> None:
        self._chunks.append(data)

    def on_message_complete(self) -> None:
        self.done.append((self._status, self.reason, self.retry_after, b"".join(self._chunks), self._keep_alive))


class _Streamed(_Head):
    """The parser's callbacks for one streamed response: its head, then its body as it comes."""

    __slots__ = ("status", "headed", "body", "complete")

    def __init__(self) -> None:
        super().__init__()
        self.status = 0
        self.headed = self.complete = False
        self.body: list[bytes] = []

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.headed = True

    def on_body(self, data: bytes) -> None:
        self.body.append(data)

    def on_message_complete(self) -> None:
        self.complete = True


class BodyStream:
    """The body of a streamed response on a connection of its own. ``chunks()`` yields what each read
    from the socket brought (HTTP chunks decoded and joined) until the response ends; ``close()``, from
    any thread, ends a blocked read, after which the stream ends quietly."""

    def __init__(self, connection: socket.socket, streamed: _Streamed) -> None:
        self._connection = connection
        self._streamed = streamed
        self._closed = False

    def chunks(self) -> Iterator[bytes]:
        streamed = self._streamed
        try:
            while True:
                if streamed.body:
                    data = b"".join(streamed.body)
                    streamed.body.clear()
                    yield data
                if streamed.complete:
                    return
                received = self._connection.recv(RECEIVE_SIZE)
                if not received:
                    if self._closed:  # shut down by close()
                        return
                    raise TransportError("the server closed the connection in the middle of a response")
                streamed.parser.feed_data(received)
        except (OSError, httptools.HttpParserError) as error:
            if self._closed:
                return
            raise TransportError(f"{type(error).__name__}: {error}") from error
        finally:
            self._connection.close()
            streamed.part()

    def close(self) -> None:
        self._closed = True
        try:
            self._connection.shutdown(socket.SHUT_RDWR)
        except OSError:  # already gone: closing is best effort
            pass


def _receive(connection: socket.socket, parser: httptools.HttpResponseParser) -> None:
    """Feed ``parser`` what one read from ``connection`` brings; a connection the server closed is an error."""
    received = connection.recv(RECEIVE_SIZE)
    if not received:
        raise ConnectionResetError("the server closed the connection")
    parser.feed_data(received)


class Pending:
    """A request sent on a connection of its own whose answer is read later (``answer``), so that the
    server prepares it while the caller does something else; ``close`` drops it unread."""

    def __init__(self, connection: socket.socket, name: str) -> None:
        self._connection = connection
        self._name = name

    def answer(self) -> tuple[int, str, str | None, bytes]:
        """``(status, reason, Retry-After header, body)``; ``TransportError`` when it cannot be read."""
        with _Answers() as answers:
            try:
                while not answers.done:
                    _receive(self._connection, answers.parser)
            except (OSError, httptools.HttpParserError) as error:
                raise TransportError(f"{self._name}: {type(error).__name__}: {error}") from error
            finally:
                self._connection.close()
            return answers.done[0][:4]

    def close(self) -> None:
        self._connection.close()


class FastTransport:
    """Keep-alive connections to the API server, one per calling thread."""

    def __init__(self, api_client: Any, timeout: float) -> None:
        configuration = api_client.configuration
        url = urlsplit(configuration.host)
        self._api_client = api_client
        https = url.scheme == "https"
        self._host = url.hostname or "localhost"
        self._port = url.port or (443 if https else 80)
        self._host_header = f"Host: {url.netloc}\r\n".encode("ascii")
        self._prefix = url.path.rstrip("/")
        self._timeout = timeout
        self._ssl = _ssl_context(configuration) if https else None
        self._local = threading.local()

    @staticmethod
    def usable(api_client: Any) -> bool:
        configuration = api_client.configuration
        return not configuration.proxy and not configuration.tls_server_name

    def exchange(self, method: str, path: str, query: list[tuple[str, str]] | None, body: bytes | None,
                 headers: dict[str, str]) -> tuple[int, str, str | None, bytes]:
        """Send one request; ``(status, reason, Retry-After header, body)``."""
        answers, error = self.exchange_all([(method, path, query, body, headers)])
        if error is not None:
            raise error
        return answers[0]

    def exchange_all(self, requests: list[tuple[str, str, list[tuple[str, str]] | None, bytes | None, dict[str, str]]]
                     ) -> tuple[list[tuple[int, str, str | None, bytes]], TransportError | None]:
        """Send ``requests`` (method, path, query, body, headers) pipelined on the calling thread's
        connection, in one write, and read their answers in order: the answers received, and the
        error that cut the rest off (``None`` when every request was answered)."""
        # Authenticated once for the batch: the official client's bookkeeping cost as much as the rest of a request.
        common = self._common(*requests[0][:2], requests[0][3]) if requests else None
        data = [self._head(method, path, query, body, headers, common)
                for method, path, query, body, headers in requests]
        with _Answers() as answers:
            try:
                connection = self._connection()
                connection.sendall(b"".join(data))
                while len(answers.done) < len(requests):
                    _receive(connection, answers.parser)
                    if answers.done and not answers.done[-1][4] and len(answers.done) < len(requests):
                        raise ConnectionResetError("the server closed the connection after an answer")
            except (OSError, httptools.HttpParserError) as error:
                self.close()
                method, path = requests[len(answers.done)][:2] if len(answers.done) < len(requests) else requests[-1][:2]
                return [a[:4] for a in answers.done], TransportError(f"{method} {path}: {type(error).__name__}: {error}")
            if not answers.done[-1][4]:
                self.close()
            return [a[:4] for a in answers.done], None

    def stream(self, path: str, query: list[tuple[str, str]] | None, headers: dict[str, str],
               read_timeout: float, connect_timeout: float) -> tuple[int, str, str | None, BodyStream | bytes]:
        """A GET whose body is read as it arrives (a watch), on a new connection that fails when silent for
        ``read_timeout`` seconds: ``(status, reason, Retry-After header, body)``, the body a
        ``BodyStream`` for a 2xx answer, else read whole."""
        request = self._head("GET", path, query, None, headers, self._common("GET", path, None))
        connection = self._connect(connect_timeout)
        streamed = _Streamed()
        try:
            connection.settimeout(read_timeout)
            connection.sendall(request)
            while not streamed.headed:
                _receive(connection, streamed.parser)
            if 200 <= streamed.status <= 299:
                # The stream parts the pair once it has ended.
                return streamed.status, streamed.reason, streamed.retry_after, BodyStream(connection, streamed)
            while not streamed.complete:
                received = connection.recv(RECEIVE_SIZE)
                if not received:
                    break
                streamed.parser.feed_data(received)
        except (OSError, httptools.HttpParserError) as error:
            connection.close()
            streamed.part()
            raise TransportError(f"GET {path}: {type(error).__name__}: {error}") from error
        connection.close()
        streamed.part()
        return streamed.status, streamed.reason, streamed.retry_after, b"".join(streamed.body)

    def send_ahead(self, path: str, query: list[tuple[str, str]] | None, headers: dict[str, str]) -> Pending:
        """Send a GET on a new connection and return without waiting for the answer (``Pending.answer``):
        ``TransportError`` when it cannot be sent."""
        request = self._head("GET", path, query, None, headers, self._common("GET", path, None))
        try:
            connection = self._connect(self._timeout)
        except OSError as error:
            raise TransportError(f"GET {path}: {type(error).__name__}: {error}") from error
        try:
            connection.sendall(request)
        except OSError as error:
            connection.close()
            raise TransportError(f"GET {path}: {type(error).__name__}: {error}") from error
        return Pending(connection, f"GET {path}")

    def close(self) -> None:
        """Close the calling thread's connection (others close when their threads end)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    def _head(self, method: str, path: str, query: list[tuple[str, str]] | None, body: bytes | None,
              headers: dict[str, str], common: dict[str, str]) -> bytes:
        """The request's bytes: its line, the ``common`` headers (``_common``), its own, and its body."""
        headers = {**common, **headers}
        target = self._prefix + path + ("?" + urlencode(query) if query else "")
        data = [f"{method} {target} HTTP/1.1\r\n".encode("ascii"), self._host_header]
        data.extend(f"{name}: {value}\r\n".encode("latin-1") for name, value in headers.items())
        data.append(b"Content-Length: %d\r\n\r\n" % len(body) if body is not None else b"\r\n")
        if body is not None:
            data.append(body)
        return b"".join(data)

    def _common(self, method: str, path: str, body: bytes | None) -> dict[str, str]:
        """The client's default headers and the authentication the official client computes (a bearer
        token, refreshed by its hook): the same for every request sent at one moment."""
        headers = dict(self._api_client.default_headers)
        self._api_client.update_params_for_auth(headers, [], ["BearerToken"], path, method, body)
        return headers

    def _connection(self) -> socket.socket:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = self._connect(self._timeout)
        return connection

    def _connect(self, timeout: float) -> socket.socket:
        connection = socket.create_connection((self._host, self._port), timeout=timeout)
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._ssl is not None:
            connection = self._ssl.wrap_socket(connection, server_hostname=self._host)
        return connection


def _ssl_context(configuration: Any) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
