"""What the webhook knows about the cluster: configuration, namespace flags, priority classes.

Informers write, request handlers read. Every update replaces a whole immutable value (one reference
assignment), so a handler always sees a consistent picture without taking a lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType

from si.kubernetes import CONFIGMAP_CONFIGS, CONFIGMAP_DEFAULTS
from webhook import constants as c
from webhook.conf import AdmissionConf, ConfigMapError, flatten, parse

log = logging.getLogger(__name__)


class TriState(Enum):
    UNSET = "unset"
    TRUE = "true"
    FALSE = "false"

    @classmethod
    def of(cls, annotations: Mapping[str, str], key: str) -> TriState:
        if key not in annotations:
            return cls.UNSET
        return cls.TRUE if annotations[key] == "true" else cls.FALSE


@dataclass(frozen=True)
class NamespaceFlags:
    """The two YuniKorn namespace annotations; UNSET lets the configured regexes decide."""

    enable_yunikorn: TriState = TriState.UNSET
    generate_app_id: TriState = TriState.UNSET

    @classmethod
    def of(cls, namespace: Mapping) -> NamespaceFlags:
        annotations = (namespace.get("metadata") or {}).get("annotations") or {}
        return cls(TriState.of(annotations, c.ANNOTATION_ENABLE_YUNIKORN),
                   TriState.of(annotations, c.ANNOTATION_GENERATE_APP_ID))


_UNSET = NamespaceFlags()
_EMPTY: Mapping = MappingProxyType({})


def _matches(patterns, text: str) -> bool:
    return any(pattern.search(text) for pattern in patterns)


class ClusterView:
    """The latest configuration, namespace flags and priority-class preemption settings."""

    def __init__(self, conf: AdmissionConf | None = None) -> None:
        self.conf = conf or AdmissionConf()
        self._configmaps: Mapping[str, Mapping] = _EMPTY
        self._namespaces: Mapping[str, NamespaceFlags] = _EMPTY
        self._preemption: Mapping[str, bool] = _EMPTY
        self._configured = False
        self._write_lock = threading.Lock()  # serialises writers only; readers never wait

    # Reading (request handlers).
    def should_process(self, namespace: str) -> bool:
        flags = self._namespaces.get(namespace, _UNSET)
        if flags.enable_yunikorn is not TriState.UNSET:
            return flags.enable_yunikorn is TriState.TRUE
        conf = self.conf
        return ((not conf.process_namespaces or _matches(conf.process_namespaces, namespace))
                and not _matches(conf.bypass_namespaces, namespace))

    def should_label(self, namespace: str) -> bool:
        flags = self._namespaces.get(namespace, _UNSET)
        if flags.generate_app_id is not TriState.UNSET:
            return flags.generate_app_id is TriState.TRUE
        conf = self.conf
        return ((not conf.label_namespaces or _matches(conf.label_namespaces, namespace))
                and not _matches(conf.no_label_namespaces, namespace))

    def allows_preemption(self, priority_class: str | None) -> bool:
        """False only for a known class annotated ``allow-preemption: "false"``."""
        return self._preemption.get(priority_class or "", True)

    def configmaps(self) -> Mapping[str, Mapping]:
        """The current ``yunikorn-defaults`` / ``yunikorn-configs`` objects by name."""
        return self._configmaps

    # Writing (informers).
    def set_configmap(self, name: str, configmap: Mapping | None) -> None:
        """Record one of the two configmaps (``None``: deleted) and recompute the configuration."""
        if name not in c.CONFIGMAP_NAMES:
            return
        with self._write_lock:
            maps = dict(self._configmaps)
            if configmap is None:
                maps.pop(name, None)
            else:
                maps[name] = configmap
            self._configmaps = MappingProxyType(maps)  # validation always merges with the latest pair
            if self._configured and not self.conf.enable_config_hot_refresh:
                log.info("configmap %s changed; hot refresh is disabled, keeping the loaded configuration", name)
                return
            try:
                self.conf = parse(flatten(maps.get(CONFIGMAP_DEFAULTS), maps.get(CONFIGMAP_CONFIGS)))
            except ConfigMapError as error:
                log.warning("configmap %s is unreadable (%s); keeping the configuration in force", name, error)
                return
            log.debug("configuration reloaded from configmap %s", name)

    def mark_configured(self) -> None:
        """The initial load is complete: from now on ``enableConfigHotRefresh=false`` freezes it."""
        self._configured = True

    def set_namespace(self, namespace: Mapping, deleted: bool = False) -> None:
        name = (namespace.get("metadata") or {}).get("name", "")
        with self._write_lock:
            spaces = dict(self._namespaces)
            if deleted:
                spaces.pop(name, None)
            else:
                spaces[name] = NamespaceFlags.of(namespace)
            self._namespaces = MappingProxyType(spaces)

    def set_priority_class(self, priority_class: Mapping, deleted: bool = False) -> None:
        name = (priority_class.get("metadata") or {}).get("name", "")
        annotations = (priority_class.get("metadata") or {}).get("annotations") or {}
        with self._write_lock:
            classes = dict(self._preemption)
            if deleted:
                classes.pop(name, None)
            else:
                classes[name] = annotations.get(c.ANNOTATION_ALLOW_PREEMPTION) != "false"
            self._preemption = MappingProxyType(classes)
