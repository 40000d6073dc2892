"""Label and field selectors, parsed once per request and matched per object."""

from __future__ import annotations

import re
from collections.abc import Callable

from kubesim.errors import bad_request

Matcher = Callable[[dict], bool]

_SET_FORM = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQUALITY = re.compile(r"^\s*([A-Za-z0-9._/-]+)\s*(==|!=|=)\s*([A-Za-z0-9._-]*)\s*$")


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


def _path(path: str) -> Callable[[dict], str]:
    """The text of the field at a dotted path ("" when absent), as field selectors compare it."""
    parts = path.split(".")

    def value(obj: dict) -> str:
        found = obj
        for part in parts:
            found = found.get(part) if isinstance(found, dict) else None
            if found is None:
                return ""
        return str(found).lower() if isinstance(found, bool) else str(found)

    return value


def _flag(path: str) -> Callable[[dict], str]:
    """A boolean field: an absent one reads ``false``, as the API server's defaulted object would."""
    read = _path(path)
    return lambda obj: read(obj) or "false"


def _event_source(event: dict) -> str:
    return (event.get("source") or {}).get("component") or event.get("reportingComponent") or ""


_COMMON = ("metadata.name", "metadata.namespace")
# The fields each kind may be selected by, as kube-apiserver allows them (other kinds: the common two).
_SELECTABLE: dict[str, dict[str, Callable[[dict], str]]] = {
    plural: {**{f: _path(f) for f in _COMMON + fields}, **special}
    for plural, fields, special in (
        ("pods", ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                  "status.phase", "status.podIP", "status.nominatedNodeName"),
         {"spec.hostNetwork": _flag("spec.hostNetwork")}),
        ("nodes", (), {"spec.unschedulable": _flag("spec.unschedulable")}),
        ("namespaces", ("status.phase",), {}),
        ("secrets", ("type",), {}),
        ("events", ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                    "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                    "involvedObject.fieldPath", "reason", "reportingComponent", "type"),
         {"source": _event_source}),
    )
}
_COMMON_FIELDS = {f: _path(f) for f in _COMMON}


def _field_terms(text: str) -> list[str]:
    """Split on the commas that are not escaped (a value may hold ``\\,``, ``\\=`` and ``\\\\``)."""
    terms, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        raise bad_request(f"invalid field selector {text!r}: it ends in an unfinished escape")
    terms.append("".join(current))
    return [t for t in terms if t.strip()]


_FIELD_TERM = re.compile(r"^\s*([^=!\s]+)\s*(!=|==|=)(.*)$", re.DOTALL)


def _field_term(term: str) -> tuple[str, str, str]:
    """``path op value`` of one term, the value unescaped; 400 when there is no operator."""
    parsed = _FIELD_TERM.match(term)
    if not parsed:
        raise bad_request(f"invalid field selector term {term.strip()!r}")
    path, op, value = parsed.groups()
    return path, op, re.sub(r"\\(.)", r"\1", value.strip())


def field_selector(text: str | None, plural: str) -> Matcher | None:
    """``spec.nodeName=,status.phase!=Failed`` -> a predicate over the fields of one kind's objects."""
    if not text:
        return None
    fields = _SELECTABLE.get(plural, _COMMON_FIELDS)
    tests = []
    for term in _field_terms(text):
        path, op, value = _field_term(term)
        if path not in fields:
            raise bad_request(f'"{path}" is not a known field selector for {plural}: only '
                              f'"{", ".join(sorted(fields))}"')
        if op == "!=":
            tests.append(lambda obj, read=fields[path], v=value: read(obj) != v)
        else:
            tests.append(lambda obj, read=fields[path], v=value: read(obj) == v)
    return lambda obj: all(test(obj) for test in tests)


def combine(*matchers: Matcher | None) -> Matcher | None:
    active = [m for m in matchers if m is not None]
    if not active:
        return None
    if len(active) == 1:
        return active[0]
    return lambda obj: all(m(obj) for m in active)
