"""Whole numbers as Go's ``strconv`` reads them, and the integer ranges the SI's protobuf fields hold.

Python's ``int`` is lenient where Go is not: it takes ``"²"`` apart from ``str.isdigit`` (which accepts
it, then ``int`` refuses it), ``"١٢"`` (Arabic-Indic digits), ``" 7 "``, ``"1_000"``, and any size. Upstream
reads every number a user writes with ``strconv.ParseInt``/``ParseUint``/``Atoi``: ASCII digits only,
an optional sign (not for ``ParseUint``), nothing else, and a range. So do we, and a value the SI carries
in an ``int32`` or ``int64`` field is checked against that range before any message is built.
"""

from __future__ import annotations

import re

from si.bounded import shown

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1
_SIGNED = re.compile(r"[+-]?[0-9]+", re.ASCII)
_UNSIGNED = re.compile(r"[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?", re.ASCII)
_MAX_DIGITS = 40  # beyond any 64-bit value: refused before Python builds the integer


def parse_int(text: str, bits: int = 64) -> int:
    """``strconv.ParseInt(text, 10, bits)``; ``ValueError`` naming the value otherwise."""
    return _parsed(text, _SIGNED, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def parse_uint(text: str, bits: int = 64) -> int:
    """``strconv.ParseUint(text, 10, bits)``: no sign; ``ValueError`` naming the value otherwise."""
    return _parsed(text, _UNSIGNED, 0, 2**bits - 1)


def parse_count(text: str, bits: int = 64) -> int:
    """A whole number of at least 0 (``strconv.Atoi`` then a check for a negative, as upstream)."""
    value = parse_int(text, bits)
    if value < 0:
        raise ValueError(f"{shown(text)} is negative")
    return value


def parse_decimal(text: str) -> float:
    """A finite decimal number (``1000``, ``0.5``, ``1e3``) in ASCII digits, as ``strconv.ParseFloat``
    reads one; ``ValueError`` for anything else (``inf``, ``nan``, ``1_000``, ``١``)."""
    if not isinstance(text, str) or len(text) > _MAX_DIGITS or _DECIMAL.fullmatch(text) is None:
        raise ValueError(f"{shown(text)} is not a decimal number written in the digits 0-9")
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{shown(text)} is out of range")
    return value


def in_range(value: int, low: int, high: int) -> bool:
    """``value`` is a whole number (not a boolean) in ``low..high``."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _parsed(text: str, pattern: re.Pattern, low: int, high: int) -> int:
    if not isinstance(text, str) or len(text) > _MAX_DIGITS or pattern.fullmatch(text) is None:
        raise ValueError(f"{shown(text)} is not a whole number written in the digits 0-9")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"{shown(text)} is out of range ({low}..{high})")
    return value
