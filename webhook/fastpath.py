"""Answering a plain, well-formed request without gunicorn's per-request machinery.

The worker's main loop answers small reviews itself (:mod:`webhook.server`). For those, gunicorn's request
parser and WSGI layer cost more than the review: they handle every form HTTP/1.x allows and every proxy
setting. A request whose head is plain (``GET`` or ``POST``, ``HTTP/1.1``, an origin-form target without
percent-escapes, header names of token characters without ``_``, values of visible ASCII, each name once,
no ``Expect``, within the header limits) is parsed here in a few lines and given to the app; any other
goes through gunicorn as before, so every request it would refuse is still refused by it, the same way.
"""

from __future__ import annotations

import io
import re
import sys
import time
from dataclasses import dataclass
from email.utils import formatdate

_REQUEST_LINE = re.compile(rb"(GET|POST) (/[A-Za-z0-9\-._~/!$&'()*+,;=:@]*)(?:\?([A-Za-z0-9\-._~/!$&'()*+,;=:@?%]*))? HTTP/1\.1")
_HEADER = re.compile(rb"([!#$%&'*+\-.^`|~0-9A-Za-z]+):([ \t!-~]*)")
_SPECIAL = {b"CONTENT-TYPE": "CONTENT_TYPE", b"CONTENT-LENGTH": "CONTENT_LENGTH"}
_UNPLAIN = {b"EXPECT", b"TRANSFER-ENCODING", b"UPGRADE"}  # what gunicorn alone knows how to act on


@dataclass(frozen=True)
class Limits:
    request_line: int
    fields: int
    field_size: int


def answer(app, request: bytes, limits: Limits, client, server, closing: bool) -> tuple[bytes, bool] | None:
    """The answer of the WSGI ``app`` to ``request`` (whole, as :mod:`webhook.framing` delimited it) and
    whether the connection stays open (not if ``closing``); None when the head is not plain."""
    environ = _environ(request, limits, client, server)
    if environ is None:
        return None
    connection = environ.pop("HTTP_CONNECTION", "keep-alive").lower()
    if connection not in ("keep-alive", "close"):
        return None
    keep_alive = not closing and connection == "keep-alive"
    reply: list = []
    chunks = app(environ, lambda status, headers, exc_info=None: reply.extend((status, headers)))
    try:
        body = b"".join(chunks)
    finally:
        if hasattr(chunks, "close"):
            chunks.close()
    status, headers = reply
    lines = [f"HTTP/1.1 {status}\r\n", f"Date: {_date()}\r\n",
             "Connection: keep-alive\r\n" if keep_alive else "Connection: close\r\n"]
    lines += [f"{name}: {value}\r\n" for name, value in headers]
    if not any(name.lower() == "content-length" for name, _ in headers):
        lines.append(f"Content-Length: {len(body)}\r\n")
    lines.append("\r\n")
    if status[:3] in ("204", "304"):
        body = b""
    return "".join(lines).encode("latin-1") + body, keep_alive


def _environ(request: bytes, limits: Limits, client, server) -> dict | None:
    start = 0
    while request.startswith(b"\r\n", start):  # empty lines before a request are allowed (RFC 9112 2.2)
        start += 2
    head_end = request.find(b"\r\n\r\n", start)
    lines = request[start:head_end].split(b"\r\n")
    if len(lines[0]) > limits.request_line or len(lines) - 1 > limits.fields:
        return None
    line = _REQUEST_LINE.fullmatch(lines[0])
    if line is None:
        return None
    method, path, query = line.groups()
    environ = {
        "REQUEST_METHOD": method.decode(), "SCRIPT_NAME": "", "PATH_INFO": path.decode(),
        "QUERY_STRING": (query or b"").decode(), "SERVER_PROTOCOL": "HTTP/1.1",
        "SERVER_NAME": str(server[0]), "SERVER_PORT": str(server[1]),
        "REMOTE_ADDR": str(client[0]), "REMOTE_PORT": str(client[1]),
        "wsgi.version": (1, 0), "wsgi.url_scheme": "https", "wsgi.input": io.BytesIO(request[head_end + 4:]),
        "wsgi.errors": sys.stderr, "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
    }
    for field in lines[1:]:
        header = _HEADER.fullmatch(field) if len(field) <= limits.field_size else None
        if header is None:
            return None
        name = header[1].upper()
        key = _SPECIAL.get(name) or "HTTP_" + name.decode().replace("-", "_")
        if name in _UNPLAIN or key in environ:
            return None
        environ[key] = header[2].strip(b" \t").decode()
    return environ


_dated = (0, "")


def _date() -> str:
    """The Date header's value, formatted once a second."""
    global _dated
    now = int(time.time())
    if _dated[0] != now:
        _dated = (now, formatdate(now, usegmt=True))
    return _dated[1]
