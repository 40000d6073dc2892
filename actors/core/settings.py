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
from dataclasses import replace
from functools import partial

from actors import loglevels
from actors.base import record
from si import settings as registry
from si.bounded import shown

log = logging.getLogger(__name__)

SHIM_KEYS = registry.all_keys(registry.SHIM)
ADMISSION_KEYS = registry.all_keys(registry.ADMISSION)  # webhook.conf reads them
NOT_YET: frozenset[str] = frozenset()
NOT_YET_PREFIXES: tuple[str, ...] = ()


class SettingsError(ValueError):
    """A setting with a value the scheduler cannot use; the configuration in force stays."""


@record
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


# key -> (CoreSettings field, parser); health.checkInterval is read as upstream reads it (scheduler.py)
CORE_KEYS: Mapping[str, tuple[str, Callable[[str], object]]] = {
    s.key: (s.name, partial(registry.read, s)) for s in registry.read_by(registry.CORE) if s.name}
OTHER_CORE_KEYS = frozenset(s.key for s in registry.read_by(registry.CORE) if not s.name)
SCHEDULING_INTERVAL = "service.schedulingInterval"


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
