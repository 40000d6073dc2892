"""The other kinds the shim watches, each parsed once from the API's JSON into a small frozen record:
namespaces (their YuniKorn annotations become application tags), priority classes (the priority of
pods that name one), and the scheduler's configmaps."""

from __future__ import annotations

import logging
import types
from collections.abc import Mapping
from dataclasses import dataclass, field

from actors.base import record
from actors.shim import keys
from actors.shim.namespaces import namespace_app_tags, read_annotations
from si.bounded import shown
from si.gojson import mapping, string_map, text
from si.gonumber import INT32_MAX, INT32_MIN, in_range

log = logging.getLogger(__name__)

__all__ = ["ConfigMapRecord", "NamespaceRecord", "PriorityClassRecord", "namespace_app_tags", "parse_configmap",
           "parse_namespace", "parse_priority_class"]


@dataclass(frozen=True, slots=True)
class NamespaceRecord:
    name: str
    resource_version: str
    app_tags: Mapping[str, str]
    labels: Mapping[str, str] = field(default_factory=dict)  # what pod affinity namespaceSelectors match
    problems: str = ""  # annotations left out, and why (a Warning event on the namespace)

    @property
    def key(self) -> str:
        return self.name


@record
class PriorityClassRecord:
    name: str
    resource_version: str
    value: int
    allow_preemption: bool = True  # its pods may be victims (annotation allow-preemption)

    @property
    def key(self) -> str:
        return self.name


@record
class ConfigMapRecord:
    name: str
    resource_version: str
    data: Mapping[str, str]
    binary_data: Mapping[str, str]
    problems: str = ""  # entries that are not text: the configuration reader refuses the configmap

    @property
    def key(self) -> str:
        return self.name


def parse_namespace(raw: Mapping) -> NamespaceRecord:
    """A ``NamespaceRecord``; a malformed annotation is left out of the tags and named in ``problems``."""
    metadata = _metadata(raw, "namespace")
    name = metadata["name"]
    annotations, labels = (string_map(metadata.get(key) or {}) for key in ("annotations", "labels"))
    tags, problems = read_annotations(name, annotations or {})
    if annotations is None or labels is None:
        problems.append("labels and annotations must be maps of strings: ignored")
    return NamespaceRecord(name, _version(metadata), types.MappingProxyType(tags),
                           types.MappingProxyType(dict(labels or {})), "; ".join(problems))


def parse_priority_class(raw: Mapping) -> PriorityClassRecord:
    """A ``PriorityClassRecord``; a value the SI's int32 cannot carry (the API server refuses it) is 0."""
    metadata = _metadata(raw, "priority class")
    value = raw.get("value")
    return PriorityClassRecord(metadata["name"], _version(metadata), value if in_range(value, INT32_MIN, INT32_MAX) else 0,
                               keys.allow_preemption(string_map(metadata.get("annotations") or {}) or {}) is not False)


def parse_configmap(raw: Mapping) -> ConfigMapRecord:
    """A ``ConfigMapRecord``; entries that are not strings are named in ``problems``."""
    metadata = _metadata(raw, "configmap")
    entries, problems = {}, []
    for part in ("data", "binaryData"):
        entries[part] = string_map(raw.get(part) or {})
        if entries[part] is None:
            problems.append(f"{part} must be a map of strings")
    return ConfigMapRecord(metadata["name"], _version(metadata), types.MappingProxyType(dict(entries["data"] or {})),
                           types.MappingProxyType(dict(entries["binaryData"] or {})), "; ".join(problems))


def _metadata(raw: Mapping, kind: str) -> Mapping:
    """An object's metadata; ``ValueError`` (the informer skips the object) without a name."""
    metadata = mapping(raw).get("metadata")
    if not isinstance(metadata, Mapping) or not metadata.get("name") or not isinstance(metadata["name"], str):
        raise ValueError(f"{kind} without a name: {shown(metadata)}")
    return metadata


def _version(metadata: Mapping) -> str:
    return text(metadata.get("resourceVersion"))

