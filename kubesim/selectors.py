"""Label and field selectors, parsed once per request and matched per object."""

from __future__ import annotations

import re
from collections.abc import Callable

from kubesim.errors import bad_request

Matcher = Callable[[dict], bool]

_SET_FORM = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQUALITY = re.compile(r"^\s*([A-Za-z0-9._/-]+)\s*(==|!=|=)\s*([A-Za-z0-9._-]*)\s*$")
FIELDS = {"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase", "spec.schedulerName"}


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside a ``( ... )`` value set."""
    terms, depth, current = [], 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [t for t in terms if t.strip()]


def label_selector(text: str | None) -> Matcher | None:
    """``a=b,c!=d,e in (f,g),h notin (i),j,!k`` -> a predicate over an object's labels."""
    if not text:
        return None
    tests = []
    for term in _split_terms(text):
        equality = _EQUALITY.match(term)
        if equality:
            key, op, value = equality.groups()
            if op == "!=":
                tests.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                tests.append(lambda labels, k=key, v=value: labels.get(k) == v)
            continue
        form = _SET_FORM.match(term)
        if not form:
            raise bad_request(f"unable to parse requirement: invalid label selector term {term.strip()!r}")
        negate, key, op, values = form.groups()
        if op:
            if negate:
                raise bad_request(f"unable to parse requirement: {term.strip()!r}")
            members = {v.strip() for v in values.split(",") if v.strip()}
            if op == "in":
                tests.append(lambda labels, k=key, m=members: labels.get(k) in m)
            else:
                tests.append(lambda labels, k=key, m=members: labels.get(k) not in m)
        elif negate:
            tests.append(lambda labels, k=key: k not in labels)
        else:
            tests.append(lambda labels, k=key: k in labels)

    def matches(obj: dict) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(test(labels) for test in tests)

    return matches


def _field(obj: dict, path: str) -> str:
    value = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            return ""
    return str(value)


def field_selector(text: str | None) -> Matcher | None:
    """``spec.nodeName=,status.phase!=Failed`` -> a predicate over an object's fields."""
    if not text:
        return None
    tests = []
    for term in _split_terms(text):
        equality = _EQUALITY.match(term)
        if not equality:
            raise bad_request(f"invalid field selector term {term.strip()!r}")
        path, op, value = equality.groups()
        if path not in FIELDS:
            raise bad_request(f'"{path}" is not a known field selector: only "{", ".join(sorted(FIELDS))}"')
        if op == "!=":
            tests.append(lambda obj, p=path, v=value: _field(obj, p) != v)
        else:
            tests.append(lambda obj, p=path, v=value: _field(obj, p) == v)
    return lambda obj: all(test(obj) for test in tests)


def combine(*matchers: Matcher | None) -> Matcher | None:
    active = [m for m in matchers if m is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]
    return lambda obj: all(m(obj) for m in active)
