"""The admission controller's configuration, read from the ``yunikorn-defaults``/``yunikorn-configs`` pair.

:func:`flatten` merges the two configmaps into one key/value map (configs override defaults, gzipped
``binaryData`` entries are unpacked); :func:`parse` turns that map into an immutable
:class:`AdmissionConf`. A value that does not parse keeps that key's default and the key is logged; a configmap
whose entries cannot be read at all (not strings, not base64, a gzip bomb) is a :class:`ConfigMapError`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from si import settings as registry
from si.bounded import shown
from si.kubernetes import binary_entry

log = logging.getLogger(__name__)

def _patterns(text: str) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(item.strip()) for item in text.split(",") if item.strip())


@dataclass(frozen=True)
class AdmissionConf:
    """Effective settings; regex lists are compiled and matched with ``re.search`` (unanchored)."""

    am_service_name: str = "yunikorn-admission-controller-service"
    scheduler_service_address: str = "yunikorn-service:9080"
    process_namespaces: tuple[re.Pattern, ...] = ()
    bypass_namespaces: tuple[re.Pattern, ...] = field(default_factory=lambda: _patterns("^kube-system$"))
    label_namespaces: tuple[re.Pattern, ...] = ()
    no_label_namespaces: tuple[re.Pattern, ...] = ()
    generate_unique_app_id: bool = False
    default_queue: str = "root.default"
    bypass_auth: bool = False
    trust_controllers: bool = True
    system_users: tuple[re.Pattern, ...] = field(
        default_factory=lambda: _patterns("^system:serviceaccount:kube-system:"))
    external_users: tuple[re.Pattern, ...] = ()
    external_groups: tuple[re.Pattern, ...] = ()
    policy_group: str = "queues"
    enable_config_hot_refresh: bool = True


def parse(values: Mapping[str, str]) -> AdmissionConf:
    """The configuration described by the flattened map ``values``; unknown keys are ignored."""
    changes = {}
    for setting in registry.read_by(registry.ADMISSION):
        if setting.key not in values:
            continue
        text = values[setting.key]
        try:
            changes[setting.name] = _patterns(text) if setting.kind == "regex" else registry.read(setting, text)
        except (re.error, ValueError) as error:
            log.warning("configuration key %s: %s; keeping its default", setting.key, error)
    return AdmissionConf(**changes)


class ConfigMapError(ValueError):
    """A configmap whose content is not what a configmap holds (the API server would refuse it)."""


def configmap_values(configmap: Mapping | None) -> dict[str, str]:
    """The entries of one configmap (as a plain dict): ``data``, plus ``binaryData`` read by
    :func:`si.kubernetes.binary_entry` (``.gz`` unpacked, sizes checked before anything is allocated).
    Anything that is not what a configmap holds (an entry that is not a string, not base64, not gzip,
    or too large) is a :class:`ConfigMapError`."""
    if not configmap:
        return {}
    if not isinstance(configmap, Mapping):
        raise ConfigMapError("the configmap is not an object")
    data, binary = configmap.get("data") or {}, configmap.get("binaryData") or {}
    for field_name, entries in (("data", data), ("binaryData", binary)):
        if not isinstance(entries, Mapping):
            raise ConfigMapError(f"{field_name} is not an object")
        for key, value in entries.items():
            if not isinstance(value, str):
                raise ConfigMapError(f"{field_name} {shown(key)} is not a string")
    values = dict(data)
    for key, encoded in binary.items():
        try:
            name, text = binary_entry(key, encoded)
        except ValueError as error:
            raise ConfigMapError(str(error)) from None
        values[name] = text
    return values


def flatten(defaults: Mapping | None, configs: Mapping | None) -> dict[str, str]:
    """One map from the configmap pair: ``yunikorn-configs`` entries override ``yunikorn-defaults``."""
    return {**configmap_values(defaults), **configmap_values(configs)}
