"""Values quoted in error messages, at a bounded length whatever their size.

A refusal names the offending value, but that value comes from outside: a 4 MiB string, a list that
YAML aliases make look like millions of elements, or an integer too long for ``repr`` (Python refuses
to print an int of more than 4,300 digits). :func:`shown` never builds more than it keeps.
"""

from __future__ import annotations

import reprlib
import zlib

LIMIT = 200  # characters of a quoted value
MAX_UNPACKED = 8 * 2**20  # bytes a gzipped configmap entry may unpack to
MAX_ENCODED = 4 * 2**20  # base64 characters of one binaryData entry (a whole configmap is at most 1 MiB)
_ELLIPSIS = "..."


def elide(text: str, limit: int = LIMIT) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with ``...`` and the length dropped."""
    if len(text) <= limit:
        return text
    return f"{text[:limit - len(_ELLIPSIS)]}{_ELLIPSIS} ({len(text)} characters)"


class _Repr(reprlib.Repr):
    def repr_int(self, value: int, level: int) -> str:
        if value.bit_length() > 640:  # far beyond any int64, and past 200 decimal digits
            return f"<an integer of {value.bit_length()} bits>"
        return super().repr_int(value, level)


_REPR = _Repr()
_REPR.maxstring = LIMIT
_REPR.maxother = LIMIT
_REPR.maxlevel = 3
_REPR.maxdict = _REPR.maxlist = _REPR.maxtuple = _REPR.maxset = 8


def shown(value: object, limit: int = LIMIT) -> str:
    """``repr(value)`` of at most about ``limit`` characters, computed without building the whole."""
    return elide(_REPR.repr(value), limit)


def gunzip(raw: bytes, limit: int = MAX_UNPACKED) -> bytes:
    """The content of gzip data ``raw``; ``ValueError`` when it is not gzip or unpacks past ``limit`` bytes
    (a few KiB of gzip can unpack to gigabytes)."""
    unpacker = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        content = unpacker.decompress(raw, limit + 1)
    except zlib.error as error:
        raise ValueError(f"not gzip data: {error}") from None
    if len(content) > limit:
        raise ValueError(f"unpacks to more than {limit} bytes")
    if not unpacker.eof:
        raise ValueError("gzip data is truncated")
    return content
