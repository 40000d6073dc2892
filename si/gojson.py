"""JSON a user writes (annotations), read as upstream's Go decodes it, within bounds.

Upstream decodes ``task-groups``, ``user.info`` and the namespace quotas with ``encoding/json`` into Go
values. :func:`loads` reads the text within a size and a nesting depth (Python's decoder recurses, and a
5,000-deep document raises ``RecursionError``), refuses ``NaN``/``Infinity`` as Go does, and replaces a
lone UTF-16 surrogate escape with U+FFFD as Go does (protobuf refuses such a string later).

:func:`go_fields` matches an object's keys to a Go struct's fields as ``encoding/json`` does: the exact
name (the json tag, else the field's name) first, else a case-insensitive match (Go's folding, so
``"Name"``, ``"NAME"`` and ``"name"`` all set ``Name``); a later duplicate key wins; unknown keys are
ignored; ``null`` is absent. The ``go_*`` checks refuse a value of the wrong JSON type, as Go's decoder
does. Every refusal is a :class:`JSONError` (a ``ValueError``) whose message is short.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Iterable, Mapping

from si.bounded import elide, shown
from si.gonumber import in_range

MAX_DEPTH = 64  # a task group's affinity nests about 10 deep
MAX_SIZE = 256 * 1024  # characters: Kubernetes' limit on all of an object's annotations together
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# encoding/json compares names with bytes.EqualFold: ASCII letters, plus the four runes whose
# upper(lower(r)) is an ASCII letter.
_EMPTY: Mapping = types.MappingProxyType({})
_FOLD = {"\u212a": "K", "\u017f": "S", "\u0131": "I", "\u0130": "I"}


class JSONError(ValueError):
    """JSON that is malformed, too large or too deep, or of a shape Go's decoder refuses."""


def loads(text: str, what: str, max_depth: int = MAX_DEPTH, max_size: int = MAX_SIZE) -> object:
    """The value of JSON ``text``; ``what`` names it in the error."""
    if not isinstance(text, str):
        raise JSONError(f"{what} is not text")
    if len(text) > max_size:
        raise JSONError(f"{what} is longer than {max_size} characters")
    if _deeper_than(text, max_depth):
        raise JSONError(f"{what} nests deeper than {max_depth} levels")
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as error:
        raise JSONError(f"{what} is not valid JSON: {elide(str(error))}") from None
    return _without_surrogates(value) if _SURROGATE_ESCAPE.search(text) else value


def go_fields(document: object, fields: Iterable[str], what: str) -> dict[str, object]:
    """``document``'s values by Go field name (see the module docstring); only fields it sets."""
    if not isinstance(document, dict):
        raise JSONError(f"{what} must be a JSON object, not {_kind(document)}")
    names = tuple(fields)
    folded = {_fold(name): name for name in names}
    found: dict[str, object] = {}
    for key, value in document.items():
        field = key if key in names else folded.get(_fold(key))
        if field is None:
            continue
        if value is None:
            found.pop(field, None)
        else:
            found[field] = value
    return found


# Go types for :func:`go_decode`: a dict is a struct ({json name: type}), a one-item list a slice of it.
STRING, BOOL, INT32, INT64, STRING_MAP = "string", "bool", "int32", "int64", "map[string]string"
_INT_RANGES = {INT32: (-(2**31), 2**31 - 1), INT64: (-(2**63), 2**63 - 1)}


def go_decode(value: object, go_type: object, what: str) -> object:
    """``value`` as ``encoding/json`` decodes it into ``go_type``: struct keys matched as :func:`go_fields`
    does (so they come back in their json names), unknown keys dropped, ``null`` fields absent, a
    ``null`` in a slice Go's zero value; a value of the wrong JSON type is a :class:`JSONError`."""
    if isinstance(go_type, dict):
        return {name: go_decode(item, go_type[name], f"{what}.{name}")
                for name, item in go_fields(value, go_type, what).items()}
    if isinstance(go_type, list):
        element = go_type[0]
        zero = {} if isinstance(element, dict) else [] if isinstance(element, list) else "" if element == STRING else None
        return [zero if item is None else go_decode(item, element, f"{what}[{position}]")
                for position, item in enumerate(go_list(value, what))]
    if go_type == STRING:
        return go_string(value, what)
    if go_type == STRING_MAP:
        return go_string_map(value, what)
    if go_type == BOOL:
        if not isinstance(value, bool):
            raise JSONError(f"{what} must be true or false, not {_kind(value)}")
        return value
    return go_int(value, what, *_INT_RANGES[go_type])


def go_string(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise JSONError(f"{what} must be a string, not {_kind(value)}")
    return value


def go_int(value: object, what: str, low: int, high: int) -> int:
    """A JSON integer literal (Go refuses ``1.0`` and ``1e3`` for an integer field) in ``low..high``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise JSONError(f"{what} must be a whole number, not {_kind(value)}")
    if not in_range(value, low, high):
        raise JSONError(f"{what} is out of range ({low}..{high}): {shown(value)}")
    return value


def go_string_map(value: object, what: str) -> dict[str, str]:
    """A ``map[string]string``: an object of strings (``null`` values are Go's zero, ``""``)."""
    if not isinstance(value, dict):
        raise JSONError(f"{what} must be a JSON object of strings, not {_kind(value)}")
    if not all(isinstance(v, str) or v is None for v in value.values()):
        raise JSONError(f"{what} must be a JSON object of strings")
    return {k: v or "" for k, v in value.items()}


def go_string_list(value: object, what: str) -> list[str]:
    """A ``[]string``: a list of strings (``null`` items are Go's zero, ``""``)."""
    if not isinstance(value, list) or not all(isinstance(v, str) or v is None for v in value):
        raise JSONError(f"{what} must be a JSON list of strings, not {_kind(value)}")
    return [v or "" for v in value]


def go_list(value: object, what: str) -> list:
    if not isinstance(value, list):
        raise JSONError(f"{what} must be a JSON list, not {_kind(value)}")
    return value


def go_object(value: object, what: str) -> dict:
    if not isinstance(value, dict):
        raise JSONError(f"{what} must be a JSON object, not {_kind(value)}")
    return value


def text(value: object) -> str:
    """``value`` when it is a string, else ``""``: a field of a Kubernetes object read as absent when it
    has the wrong type."""
    return value if isinstance(value, str) else ""


def mapping(value: object) -> Mapping:
    """``value`` when it is a mapping (an object), else an empty one."""
    return value if isinstance(value, Mapping) else _EMPTY


def string_map(value: object) -> Mapping[str, str] | None:
    """``value`` when it is a mapping of strings to strings (labels, annotations), else ``None``."""
    if isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return value
    return None


def _deeper_than(text: str, limit: int) -> bool:
    """Whether ``text`` nests brackets deeper than ``limit`` (outside strings); stops at the first
    level too many, so a megabyte of ``[`` costs one scan."""
    depth = 0
    for bracket in _NOT_BRACKET.sub("", _STRING.sub('""', text)):
        if bracket in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _without_surrogates(value: object) -> object:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def _fold(name: str) -> str:
    return "".join(_FOLD.get(c, c.upper() if c.isascii() else c) for c in name)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {shown(value, 40)}"
    if isinstance(value, str):
        return f"the string {shown(value, 40)}"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__
