"""Request bodies in Kubernetes' protobuf encoding, read into the JSON object a JSON client would have sent.

client-go's typed clients (``kubectl create namespace|configmap|secret|...``, and Go controllers'
evictions) write ``application/vnd.kubernetes.protobuf``: the magic ``k8s\\x00``, then a
``runtime.Unknown`` envelope {1: typeMeta {1: apiVersion, 2: kind}, 2: raw, 3: contentEncoding,
4: contentType} whose ``raw`` is the object's own message. The messages kubesim reads are listed in
``protoschema``; a body of any other kind, or with a field kubesim does not know, is refused with 415
(the same object sent as JSON works), and a malformed body with 400.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import orjson

from kubesim import errors, protoschema, protowire
from kubesim.protoschema import (
    BOOL,
    BYTES,
    FIELDS_V1,
    INT32,
    INT64,
    INT_OR_STRING,
    KEEP,
    LIST,
    MAP,
    MESSAGES,
    MICRO_TIME,
    OMIT,
    STRING,
    TIME,
    Field,
)
from kubesim.protowire import LENGTH_DELIMITED, VARINT, WireError

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
_GO_ZERO_TIME = -62135596800  # time.Time{}.Unix(): the seconds gogo writes for a zero time
_ZEROS = {STRING: "", BYTES: "", INT32: 0, INT64: 0, BOOL: False, TIME: None, MICRO_TIME: None,
          INT_OR_STRING: 0, FIELDS_V1: None}


class _Unsupported(Exception):
    """A well-formed body kubesim has no table for."""


def decode(body: bytes) -> dict:
    """The JSON object of a protobuf request body; ApiError 400 (malformed) or 415 (not readable here)."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("the body of the request could not be decoded as protobuf: it does not start "
                                 "with the magic bytes k8s\\x00")
    try:
        api_version, kind, raw = _envelope(body[len(MAGIC):])
        if (api_version, kind) not in protoschema.KINDS:
            raise _Unsupported(f"kubesim reads protobuf bodies of {_kinds()} only, not {api_version} {kind}")
        return {"kind": kind, "apiVersion": api_version, **_message(kind, raw)}
    except WireError as error:
        raise errors.bad_request(f"the body of the request could not be decoded as protobuf: {error}") from None
    except _Unsupported as error:
        raise errors.ApiError(415, "UnsupportedMediaType", f"{error}; send this object as application/json") \
            from None


def _envelope(data: bytes) -> tuple[str, str, bytes]:
    """``(apiVersion, kind, raw)`` of a ``runtime.Unknown``."""
    type_meta, raw, encoding, content_type = b"", b"", "", ""
    for number, wire_type, value in protowire.fields(data):
        _expect(wire_type, LENGTH_DELIMITED, "Unknown", number)
        if number == 1:
            type_meta = value
        elif number == 2:
            raw = value
        elif number == 3:
            encoding = _text(value)
        elif number == 4:
            content_type = _text(value)
    if encoding or content_type not in ("", MEDIA_TYPE):
        raise _Unsupported(f"kubesim does not read an object with content encoding {encoding!r} "
                           f"and content type {content_type!r} in the envelope")
    api_version = kind = ""
    for number, wire_type, value in protowire.fields(type_meta):
        _expect(wire_type, LENGTH_DELIMITED, "TypeMeta", number)
        if number == 1:
            api_version = _text(value)
        elif number == 2:
            kind = _text(value)
    if not kind or not api_version:
        raise WireError("the envelope names no apiVersion and kind")
    return api_version, kind, raw


def _message(name: str, data: bytes) -> dict:
    """A message as Go's JSON encoding writes the struct it decodes into."""
    schema = MESSAGES[name]
    present: dict[int, object] = {}
    for number, wire_type, value in protowire.fields(data):
        field = schema.get(number)
        if field is None:
            raise _Unsupported(f"kubesim does not know field {number} of {name}")
        if field.shape == MAP:
            _expect(wire_type, LENGTH_DELIMITED, name, number)
            key, item = _map_entry(field, value, name)
            present.setdefault(number, {})[key] = item
        elif field.shape == LIST:
            present.setdefault(number, []).append(_value(field, wire_type, value, name, number))
        else:
            present[number] = _value(field, wire_type, value, name, number)
    out = {}
    for number, field in schema.items():
        if number in present:
            value = present[number]
        elif field.shape == KEEP:
            value = _zero(field.type)
        else:
            continue
        if field.shape == OMIT and value in ("", 0, None):  # 0 == False: a false bool goes too
            continue
        out[field.name] = value
    return out


def _map_entry(field: Field, data: bytes, name: str) -> tuple[str, object]:
    key, item = "", _zero(field.type)
    for number, wire_type, value in protowire.fields(data):
        if number == 1:
            _expect(wire_type, LENGTH_DELIMITED, f"{name}.{field.name} key", number)
            key = _text(value)
        elif number == 2:
            item = _value(field, wire_type, value, f"{name}.{field.name} value", number)
    return key, item


def _value(field: Field, wire_type: int, value, name: str, number: int):
    """One field's value in its JSON form."""
    kind = field.type
    if kind in (INT32, INT64, BOOL):
        _expect(wire_type, VARINT, name, number)
        return bool(value) if kind == BOOL else protowire.signed(value, 32 if kind == INT32 else 64)
    _expect(wire_type, LENGTH_DELIMITED, name, number)
    if kind == STRING:
        return _text(value)
    if kind == BYTES:
        return base64.b64encode(value).decode()
    if kind in (TIME, MICRO_TIME):
        return _time(value, micro=kind == MICRO_TIME)
    if kind == INT_OR_STRING:
        return _int_or_string(value)
    if kind == FIELDS_V1:
        return _fields_v1(value)
    return _message(kind, value)


def _zero(kind: str):
    return _ZEROS[kind] if kind in _ZEROS else _message(kind, b"")


def _expect(wire_type: int, expected: int, name: str, number: int) -> None:
    if wire_type != expected:
        raise WireError(f"field {number} of {name} has wire type {wire_type}, not {expected}")


def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")  # as Go's JSON encoding shows invalid UTF-8


def _time(data: bytes, micro: bool) -> str | None:
    """A ``Time`` (RFC 3339, whole seconds) or ``MicroTime`` (six decimals); ``None`` for the zero time."""
    seconds = nanos = 0
    for number, wire_type, value in protowire.fields(data):
        _expect(wire_type, VARINT, "Time", number)
        if number == 1:
            seconds = protowire.signed(value, 64)
        elif number == 2:
            nanos = protowire.signed(value, 32)
    if not data or (seconds == _GO_ZERO_TIME and nanos == 0):
        return None
    try:
        moment = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        raise WireError(f"the time {seconds}s is out of range") from None
    text = f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}"
    return f"{text}.{nanos // 1000:06d}Z" if micro else f"{text}Z"


def _int_or_string(data: bytes) -> int | str:
    """An ``IntOrString`` {1: type (0 int, 1 string), 2: intVal, 3: strVal} as the number or string."""
    is_string, number_value, text = False, 0, ""
    for number, wire_type, value in protowire.fields(data):
        if number == 1:
            _expect(wire_type, VARINT, "IntOrString", number)
            is_string = value == 1
        elif number == 2:
            _expect(wire_type, VARINT, "IntOrString", number)
            number_value = protowire.signed(value, 32)
        elif number == 3:
            _expect(wire_type, LENGTH_DELIMITED, "IntOrString", number)
            text = _text(value)
    return text if is_string else number_value


def _fields_v1(data: bytes):
    """A ``FieldsV1`` {1: Raw}: its raw bytes are the JSON it stands for."""
    raw = b""
    for number, wire_type, value in protowire.fields(data):
        if number == 1:
            _expect(wire_type, LENGTH_DELIMITED, "FieldsV1", number)
            raw = value
    try:
        return orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        raise WireError("a FieldsV1 holds bytes that are not JSON") from None


def _kinds() -> str:
    return ", ".join(sorted(f"{kind} ({api_version})" for api_version, kind in protoschema.KINDS))

