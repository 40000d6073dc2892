"""Where an HTTP/1.1 request ends in the bytes received so far, decided before its body is kept.

The server buffers each request whole before a thread sees it, so it must know the request's length
from its head alone: the head ends at the first empty line, the body is exactly ``Content-Length``
bytes. The declared length is only compared with the limit, never used to allocate: the buffer grows
with the bytes that actually arrive. Everything else in the head (the request line, header names,
their count and sizes) is checked by gunicorn's parser once the request is complete.
"""

from __future__ import annotations

_HEAD_END = b"\r\n\r\n"
_LENGTH_DIGITS = 18  # more significant digits than this is over any limit and over int64


class Refusal(Exception):
    """A request refused from its head: answered with ``status`` and ``reason``, then the connection closes."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(status, reason)
        self.status, self.reason = status, reason

    def response(self) -> bytes:
        text = f"{self.reason}\r\n".encode()
        return (f"HTTP/1.1 {self.status} {_PHRASES[self.status]}\r\nContent-Type: text/plain\r\n"
                f"Content-Length: {len(text)}\r\nConnection: close\r\n\r\n").encode() + text


_PHRASES = {400: "Bad Request", 411: "Length Required", 413: "Content Too Large",
            431: "Request Header Fields Too Large", 503: "Service Unavailable"}


def request_length(received: bytes | bytearray, max_head: int, max_body: int) -> int | None:
    """The length of the request at the start of ``received``; None while its head is incomplete.

    Raises :class:`Refusal`: 431 for a head longer than ``max_head``, 413 for a declared body longer
    than ``max_body``, 400 for an unreadable or contradictory ``Content-Length`` or one beside a
    ``Transfer-Encoding`` (a smuggling attempt, RFC 9112 6.3), 411 for a body sent with
    ``Transfer-Encoding`` alone (its length is known only once it has all arrived).
    """
    start = 0
    while received.startswith(b"\r\n", start):  # empty lines before a request are allowed (RFC 9112 2.2)
        start += 2
    end = received.find(_HEAD_END, start, start + max_head + len(_HEAD_END))
    if end < 0:
        if len(received) - start > max_head:
            raise Refusal(431, f"request head longer than {max_head} bytes")
        return None
    lengths, encoded = set(), False
    for line in bytes(received[start:end]).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            lengths.add(value.strip())
        elif name == b"transfer-encoding":
            encoded = True
    if encoded:
        if lengths:
            raise Refusal(400, "both Content-Length and Transfer-Encoding")
        raise Refusal(411, "a body needs a Content-Length")
    body = _declared_length(lengths, max_body)
    return end + len(_HEAD_END) + body


def _declared_length(values: set[bytes], max_body: int) -> int:
    if not values:
        return 0
    if len(values) > 1 or not next(iter(values)).isdigit():
        raise Refusal(400, "invalid Content-Length")
    digits = next(iter(values)).lstrip(b"0")
    if len(digits) > _LENGTH_DIGITS or int(digits or b"0") > max_body:
        raise Refusal(413, f"body larger than {max_body} bytes")
    return int(digits or b"0")
