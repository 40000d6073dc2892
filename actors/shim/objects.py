"""The other kinds the shim watches, each parsed once from the API's JSON into a small frozen record:
namespaces (their YuniKorn annotations become application tags), priority classes (the priority of
pods that name one), and the scheduler's configmaps."""

from __future__ import annotations

import logging
import types
from collections.abc import Mapping
from dataclasses import dataclass, field

from actors.shim import keys
from actors.shim.namespaces import namespace_app_tags

log = logging.getLogger(__name__)

__all__ = ["ConfigMapRecord", "NamespaceRecord", "PriorityClassRecord", "namespace_app_tags", "parse_configmap",
           "parse_namespace", "parse_priority_class"]


@dataclass(frozen=True, slots=True)
class NamespaceRecord:
    name: str
    resource_version: str
    app_tags: Mapping[str, str]
    labels: Mapping[str, str] = field(default_factory=dict)  # what pod affinity namespaceSelectors match

    @property
    def key(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class PriorityClassRecord:
    name: str
    resource_version: str
    value: int
    allow_preemption: bool = True  # its pods may be victims (annotation allow-preemption)

    @property
    def key(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class ConfigMapRecord:
    name: str
    resource_version: str
    data: Mapping[str, str]
    binary_data: Mapping[str, str]

    @property
    def key(self) -> str:
        return self.name


def parse_namespace(raw: Mapping) -> NamespaceRecord:
    """A ``NamespaceRecord``; a malformed quota annotation is logged and left out of the tags."""
    metadata = raw.get("metadata") or {}
    name = metadata.get("name")
    if not name:
        raise ValueError(f"namespace without a name: {metadata!r}")
    return NamespaceRecord(name, metadata.get("resourceVersion", ""),
                           types.MappingProxyType(namespace_app_tags(name, metadata.get("annotations") or {})),
                           types.MappingProxyType(dict(metadata.get("labels") or {})))


def parse_priority_class(raw: Mapping) -> PriorityClassRecord:
    metadata = raw.get("metadata") or {}
    name = metadata.get("name")
    if not name:
        raise ValueError(f"priority class without a name: {metadata!r}")
    value = raw.get("value")
    return PriorityClassRecord(name, metadata.get("resourceVersion", ""), value if isinstance(value, int) else 0,
                               keys.allow_preemption(metadata.get("annotations") or {}) is not False)


def parse_configmap(raw: Mapping) -> ConfigMapRecord:
    metadata = raw.get("metadata") or {}
    name = metadata.get("name")
    if not name:
        raise ValueError(f"configmap without a name: {metadata!r}")
    return ConfigMapRecord(name, metadata.get("resourceVersion", ""),
                           types.MappingProxyType(dict(raw.get("data") or {})),
                           types.MappingProxyType(dict(raw.get("binaryData") or {})))
