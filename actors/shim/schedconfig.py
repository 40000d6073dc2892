"""The scheduler's configuration as the configmaps hold it: ``yunikorn-defaults`` merged under
``yunikorn-configs`` (a key in both takes the value of ``yunikorn-configs``).

``binaryData`` entries are base64; a key ending in ``.gz`` is gzip-compressed (unpacking to at most
8 MiB) and counts under its name without the suffix. The queues YAML is the key ``<service.policyGroup>.yaml`` (``queues.yaml`` by
default); every other key goes to the core as extra configuration, and the shim's own keys among them
are read here too (``actors.shim.settings``).
"""

from __future__ import annotations

import types
from collections.abc import Mapping

from actors.base import record
from actors.shim import keys, settings
from actors.shim.objects import ConfigMapRecord
from si.bounded import shown
from si.kubernetes import CONF_HOT_REFRESH, CONF_POLICY_GROUP, DEFAULT_POLICY_GROUP, configmap_entries


class SchedulerConfigError(ValueError):
    """Configmap content the shim cannot read; the configuration in force stays."""


@record
class ShimConfig:
    policy_group: str
    queues_yaml: str
    extra: Mapping[str, str]
    hot_refresh: bool
    cluster_id: str
    settings: settings.ShimSettings = settings.ShimSettings()


def merge(defaults: ConfigMapRecord | None, configs: ConfigMapRecord | None) -> ShimConfig:
    """The configuration from the two configmaps (either may be missing)."""
    merged: dict[str, str] = {}
    for configmap in (defaults, configs):
        if configmap is not None:
            merged.update(flatten(configmap))
    policy_group = merged.get(CONF_POLICY_GROUP) or DEFAULT_POLICY_GROUP
    queues_key = f"{policy_group}.yaml"
    hot_refresh = merged.get(CONF_HOT_REFRESH, "true").strip().lower()
    if hot_refresh not in ("true", "false"):
        raise SchedulerConfigError(f"{CONF_HOT_REFRESH}: {shown(hot_refresh)} is not true or false")
    try:
        shim_settings = settings.parse(merged)
    except ValueError as error:
        raise SchedulerConfigError(str(error)) from None
    return ShimConfig(
        policy_group=policy_group,
        queues_yaml=merged.get(queues_key, ""),
        extra=types.MappingProxyType({k: v for k, v in merged.items() if k != queues_key}),
        hot_refresh=hot_refresh == "true",
        cluster_id=merged.get(keys.CONF_CLUSTER_ID) or keys.DEFAULT_CLUSTER_ID,
        settings=shim_settings,
    )


def flatten(configmap: ConfigMapRecord) -> dict[str, str]:
    """A configmap's entries as text (``si.kubernetes.configmap_entries``)."""
    if configmap.problems:
        raise SchedulerConfigError(f"configmap {configmap.name}: {configmap.problems}")
    try:
        return configmap_entries(configmap.data, configmap.binary_data)
    except ValueError as error:
        raise SchedulerConfigError(f"configmap {configmap.name}: {error}") from None
