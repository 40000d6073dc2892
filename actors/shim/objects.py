"""The other kinds the shim watches, each parsed once from the API's JSON into a small frozen record:
namespaces (their YuniKorn annotations become application tags), priority classes (the priority of
pods that name one), and the scheduler's configmaps."""

from __future__ import annotations

import json
import logging
import types
from collections.abc import Mapping
from dataclasses import dataclass

from actors.shim import keys
from si import constants
from si.quantity import QuantityError, from_kubernetes

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NamespaceRecord:
    name: str
    resource_version: str
    app_tags: Mapping[str, str]

    @property
    def key(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class PriorityClassRecord:
    name: str
    resource_version: str
    value: int

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
                           types.MappingProxyType(namespace_app_tags(name, metadata.get("annotations") or {})))


def namespace_app_tags(name: str, annotations: Mapping[str, str]) -> dict[str, str]:
    """The application tags a namespace contributes: its name, parent queue, quota, guaranteed and
    maximum applications. Resources travel as SI JSON: ``{"resources": {"vcore": {"value": 1000}}}``."""
    tags = {constants.APP_TAG_NAMESPACE: name}
    parent = annotations.get(keys.ANNOTATION_PARENT_QUEUE)
    if parent:
        tags[constants.APP_TAG_PARENT_QUEUE] = parent
    for annotation, tag in ((keys.ANNOTATION_NAMESPACE_QUOTA, constants.APP_TAG_NAMESPACE_QUOTA),
                            (keys.ANNOTATION_NAMESPACE_GUARANTEED, constants.APP_TAG_NAMESPACE_GUARANTEED)):
        text = annotations.get(annotation)
        if not text:
            continue
        try:
            resources = from_kubernetes(json.loads(text))
        except (ValueError, QuantityError, TypeError, AttributeError) as error:
            log.warning("namespace %s: annotation %s ignored: %s", name, annotation, error)
            continue
        tags[tag] = json.dumps({"resources": {k: {"value": v} for k, v in sorted(resources.items())}},
                               separators=(",", ":"))
    max_apps = annotations.get(keys.ANNOTATION_NAMESPACE_MAX_APPS)
    if max_apps:
        if max_apps.isdigit():
            tags[constants.APP_TAG_NAMESPACE_MAX_APPS] = max_apps
        else:
            log.warning("namespace %s: annotation %s ignored: %r is not a count", name,
                        keys.ANNOTATION_NAMESPACE_MAX_APPS, max_apps)
    return tags


def parse_priority_class(raw: Mapping) -> PriorityClassRecord:
    metadata = raw.get("metadata") or {}
    name = metadata.get("name")
    if not name:
        raise ValueError(f"priority class without a name: {metadata!r}")
    value = raw.get("value")
    return PriorityClassRecord(name, metadata.get("resourceVersion", ""), value if isinstance(value, int) else 0)


def parse_configmap(raw: Mapping) -> ConfigMapRecord:
    metadata = raw.get("metadata") or {}
    name = metadata.get("name")
    if not name:
        raise ValueError(f"configmap without a name: {metadata!r}")
    return ConfigMapRecord(name, metadata.get("resourceVersion", ""),
                           types.MappingProxyType(dict(raw.get("data") or {})),
                           types.MappingProxyType(dict(raw.get("binaryData") or {})))
