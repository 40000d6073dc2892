"""The scheduler's settings: which keys of the configmaps it reads, and the core's own keys checked.

Every key of ``yunikorn-defaults`` / ``yunikorn-configs`` but the queues YAML reaches the core as the
extra configuration. The core reads its keys (``CORE_KEYS``) from there, the shim its own
(``SHIM_KEYS``, ``log.*``: see ``actors.shim.settings``) and the admission controller the
``admissionController.*`` keys. ``NOT_YET`` are upstream's keys of features this scheduler does not
have yet. Any other key, and every ``NOT_YET`` key, is unsupported: the core logs it once and
``/ws/v1/config`` lists it, so no setting is accepted and silently ignored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from actors import loglevels
from actors.core.config import duration_seconds
from si.bounded import shown
from si.gobool import parse_bool
from si.gonumber import parse_int

log = logging.getLogger(__name__)

SHIM_KEYS = frozenset({
    "service.clusterId", "service.policyGroup", "service.enableConfigHotRefresh", "service.instanceTypeNodeLabelKey",
    "service.nodeInstanceTypeNodeLabelKey", "kubernetes.qps", "kubernetes.burst", "service.volumeBindTimeout",
    "service.disableGangScheduling", "service.placeholderImage", "service.placeholderRunAsUser",
    "service.placeholderRunAsGroup", "service.placeholderFsGroup", "service.maxPlaceholdersPerGang"})
ADMISSION_KEYS = frozenset(f"admissionController.{key}" for key in (  # webhook.conf reads them
    "webHook.amServiceName", "webHook.schedulerServiceAddress", "filtering.processNamespaces",
    "filtering.bypassNamespaces", "filtering.labelNamespaces", "filtering.noLabelNamespaces",
    "filtering.generateUniqueAppId", "filtering.defaultQueue", "accessControl.bypassAuth",
    "accessControl.trustControllers", "accessControl.systemUsers", "accessControl.externalUsers",
    "accessControl.externalGroups"))
NOT_YET: frozenset[str] = frozenset()
NOT_YET_PREFIXES: tuple[str, ...] = ()


class SettingsError(ValueError):
    """A setting with a value the scheduler cannot use; the configuration in force stays."""


@dataclass(frozen=True, slots=True)
class CoreSettings:
    """The core's settings, with upstream's defaults (durations in seconds)."""

    scheduling_interval: float = 1.0
    event_channel_capacity: int = 1_048_576
    dispatch_timeout: float = 300.0
    event_tracking: bool = True
    event_request_capacity: int = 1000
    event_ring_capacity: int = 100_000
    event_max_streams: int = 100
    event_max_streams_per_host: int = 15
    event_rest_response_size: int = 10_000


def _duration(text: str) -> float:
    seconds = duration_seconds(text)
    if seconds <= 0:
        raise ValueError("must be more than 0")
    return seconds


def _count(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = parse_int(text)
        if value < minimum:
            raise ValueError(f"must be at least {minimum}")
        return value
    return parse


# key -> (CoreSettings field, parser); health.checkInterval is read as upstream reads it (scheduler.py)
SCHEDULING_INTERVAL = "service.schedulingInterval"
CORE_KEYS: Mapping[str, tuple[str, Callable[[str], object]]] = {
    SCHEDULING_INTERVAL: ("scheduling_interval", _duration),
    "service.eventChannelCapacity": ("event_channel_capacity", _count(1)),
    "service.dispatchTimeout": ("dispatch_timeout", _duration),
    "event.trackingEnabled": ("event_tracking", parse_bool),
    "event.requestCapacity": ("event_request_capacity", _count(1)),
    "event.ringBufferCapacity": ("event_ring_capacity", _count(1)),
    "event.maxStreams": ("event_max_streams", _count(0)),
    "event.maxStreamsPerHost": ("event_max_streams_per_host", _count(0)),
    "event.RESTResponseSize": ("event_rest_response_size", _count(1)),
}
OTHER_CORE_KEYS = frozenset({"health.checkInterval"})


def parse(extra: Mapping[str, str]) -> CoreSettings:
    """The core's settings in ``extra``; ``SettingsError`` naming the first bad value."""
    changes = {}
    for key, (name, parser) in CORE_KEYS.items():
        if key in extra:
            try:
                changes[name] = parser(extra[key].strip())
            except ValueError as error:
                raise SettingsError(f"{key}: {shown(extra[key])} is not usable: {error}") from None
    return replace(CoreSettings(), **changes)


def supported(key: str) -> bool:
    if key in NOT_YET or key.startswith(NOT_YET_PREFIXES):
        return False
    return (key in CORE_KEYS or key in OTHER_CORE_KEYS or key in SHIM_KEYS or key in ADMISSION_KEYS
            or loglevels.known(key) or key.endswith(".yaml"))  # a queues YAML of another policy group


def unsupported(extra: Mapping[str, str]) -> list[str]:
    """The keys of ``extra`` the scheduler does not support, sorted."""
    return sorted(key for key in extra if not supported(key))


class UnsupportedReport:
    """Logs each unsupported key once (per key, not per configuration update)."""

    def __init__(self) -> None:
        self._logged: set[str] = set()

    def report(self, keys: list[str]) -> None:
        for key in keys:
            if key not in self._logged:
                self._logged.add(key)
                kind = "is not supported yet" if key in NOT_YET or key.startswith(NOT_YET_PREFIXES) else "is unknown"
                log.warning("configuration key %s %s: it has no effect", key, kind)
