"""The protobuf wire format, read field by field: enough to walk Kubernetes' generated messages.

Only what gogo-protobuf writes for the Kubernetes API appears: varints (wire type 0), length-delimited
bytes (2) and, for completeness, fixed 64- and 32-bit values (1, 5). Groups are not used by any
Kubernetes message and are refused. Every read is bounds-checked: a truncated or garbled message raises
``WireError`` instead of reading past its end.
"""

from __future__ import annotations

from collections.abc import Iterator

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5
_MAX_VARINT_BYTES = 10


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    result = shift = 0
    for index in range(pos, min(pos + _MAX_VARINT_BYTES, len(data))):
        byte = data[index]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result & 0xFFFF_FFFF_FFFF_FFFF, index + 1
        shift += 7
    if pos + _MAX_VARINT_BYTES <= len(data):
        raise WireError(f"a varint at byte {pos} is longer than ten bytes")
    raise WireError(f"the message ends inside a varint at byte {pos}")


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """``(field number, wire type, value)`` for each field in turn: an int for varints and fixed values,
    the raw bytes for a length-delimited field."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise WireError(f"field number 0 at byte {pos}")
        if wire_type == VARINT:
            value, pos = read_varint(data, pos)
        elif wire_type == LENGTH_DELIMITED:
            length, start = read_varint(data, pos)
            pos = start + length
            if pos > end:
                raise WireError(f"field {number} claims {length} bytes at byte {start}, only {end - start} remain")
            value = data[start:pos]
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
            if pos + size > end:
                raise WireError(f"the message ends inside fixed-size field {number}")
            value, pos = int.from_bytes(data[pos:pos + size], "little"), pos + size
        else:
            raise WireError(f"field {number} has wire type {wire_type}, which Kubernetes messages do not use")
        yield number, wire_type, value


def signed(value: int, bits: int) -> int:
    """A varint as the two's-complement integer of ``bits`` bits it encodes (negative int32s take ten bytes)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value
