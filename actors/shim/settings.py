"""The shim's settings in the scheduler's configmaps, checked when the configuration is read and applied
live each time it is (re)loaded.

- ``kubernetes.qps`` / ``kubernetes.burst`` (upstream: 1000 / 1000): a token bucket every request of
  the shim's Kubernetes client passes (binds, events, patches, lists and watches), as client-go's.
- ``service.instanceTypeNodeLabelKey`` (upstream's code reads ``service.nodeInstanceTypeNodeLabelKey``;
  both are accepted, the documented name winning): the node label whose value becomes a node's SI
  instance type attribute (default ``node.kubernetes.io/instance-type``).
- ``service.volumeBindTimeout`` (upstream: 10m): a Go duration; how long the binder waits for a pod's
  WaitForFirstConsumer claims to be bound on the chosen node before the pod goes back to the core.
- ``log.level``, ``log.<subsystem>.level``: see ``actors.loglevels``.
- ``service.disableGangScheduling``, ``service.placeholderImage``, ``service.placeholderRunAsUser``,
  ``service.placeholderRunAsGroup``, ``service.placeholderFsGroup``, ``service.maxPlaceholdersPerGang``
  (default 5000): gang scheduling (see ``actors.shim.placeholders``), for the applications submitted
  after the configuration is taken.

A bad value is a ``SchedulerConfigError``: the configuration in force stays.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import pykka

from actors import loglevels
from actors.shim.client import DEFAULT_BURST, DEFAULT_QPS, KubeClient
from actors.shim.messages import InstanceTypeLabel, VolumeBindTimeout
from actors.shim.placeholders import DEFAULT_IMAGE, DEFAULT_MAX_PER_GANG, PlaceholderSettings
from actors.shim.volumes import DEFAULT_BIND_TIMEOUT
from si.bounded import shown
from si.gobool import parse_bool
from si.goduration import parse_duration
from si.gonumber import parse_count, parse_decimal, parse_int

log = logging.getLogger(__name__)

QPS, BURST = "kubernetes.qps", "kubernetes.burst"
INSTANCE_TYPE_KEYS = ("service.instanceTypeNodeLabelKey", "service.nodeInstanceTypeNodeLabelKey")
DEFAULT_INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
DISABLE_GANG, PLACEHOLDER_IMAGE = "service.disableGangScheduling", "service.placeholderImage"
PLACEHOLDER_IDS = {"service.placeholderRunAsUser": "run_as_user", "service.placeholderRunAsGroup": "run_as_group",
                   "service.placeholderFsGroup": "fs_group"}
VOLUME_BIND_TIMEOUT = "service.volumeBindTimeout"
MAX_PLACEHOLDERS = "service.maxPlaceholdersPerGang"


@dataclass(frozen=True, slots=True)
class ShimSettings:
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    instance_type_label: str = DEFAULT_INSTANCE_TYPE_LABEL
    log_levels: tuple[tuple[str, int], ...] = ()  # (logger, level), see actors.loglevels
    volume_bind_timeout: float = DEFAULT_BIND_TIMEOUT
    placeholders: PlaceholderSettings = PlaceholderSettings()


def parse(extra: Mapping[str, str]) -> ShimSettings:
    """The shim's settings in ``extra``; ``ValueError`` naming the first bad value."""
    qps = _number(extra, QPS, DEFAULT_QPS, float)
    burst = _number(extra, BURST, DEFAULT_BURST, int)
    label = next((extra[key].strip() for key in INSTANCE_TYPE_KEYS if key in extra), DEFAULT_INSTANCE_TYPE_LABEL)
    if not label:
        raise ValueError(f"{INSTANCE_TYPE_KEYS[0]}: a node label key is needed")
    return ShimSettings(qps, burst, label, tuple(sorted(loglevels.parse(extra).items())),
                        _duration(extra, VOLUME_BIND_TIMEOUT, DEFAULT_BIND_TIMEOUT), _placeholders(extra))


def _placeholders(extra: Mapping[str, str]) -> PlaceholderSettings:
    image = extra.get(PLACEHOLDER_IMAGE, DEFAULT_IMAGE).strip()
    if not image:
        raise ValueError(f"{PLACEHOLDER_IMAGE}: an image is needed")
    ids = {}
    for key, field in PLACEHOLDER_IDS.items():
        text = extra.get(key, "").strip()
        if text:
            try:
                ids[field] = parse_count(text)
            except ValueError:
                raise ValueError(f"{key}: {shown(text)} is not a user or group id (a whole number of at least 0)") from None
    text = extra.get(DISABLE_GANG, "false").strip()
    try:
        disabled = parse_bool(text)
    except ValueError:
        raise ValueError(f"{DISABLE_GANG}: {shown(text)} is not true or false") from None
    return PlaceholderSettings(image=image, disabled=disabled,
                               max_per_gang=_number(extra, MAX_PLACEHOLDERS, DEFAULT_MAX_PER_GANG, int), **ids)


def _duration(extra: Mapping[str, str], key: str, default: float) -> float:
    """A positive Go duration (``30s``, ``1m30s``, ``10m``)."""
    text = extra.get(key, "").strip()
    if not text:
        return default
    try:
        seconds = parse_duration(text)
    except ValueError:
        seconds = 0.0  # refused below, with the setting's name
    if seconds <= 0:
        raise ValueError(f"{key}: {shown(text)} is not a positive duration such as 30s or 10m")
    return seconds


def _number(extra: Mapping[str, str], key: str, default, kind):
    text = extra.get(key, "").strip()
    if not text:
        return default
    try:
        value = parse_int(text) if kind is int else parse_decimal(text)
    except ValueError:
        value = None
    if value is None or value <= 0:
        raise ValueError(f"{key}: {shown(text)} is not a positive {'integer' if kind is int else 'number'}")
    return value


class SettingsApplier:
    """Applies the shim's settings to the running shim: the client's rate, the instance type label (to
    the core outlet, once it runs) and the log levels."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.outlet: pykka.ActorRef | None = None
        self.binder: pykka.ActorRef | None = None  # the binder (not the plugin-mode handoff: kube-scheduler binds)
        self._levels = loglevels.LogLevels()

    def __call__(self, settings: ShimSettings) -> None:
        self.client.rate.set_rate(settings.qps, settings.burst)
        if self.outlet is not None:
            self.outlet.tell(InstanceTypeLabel(settings.instance_type_label))
        if self.binder is not None:
            self.binder.tell(VolumeBindTimeout(settings.volume_bind_timeout))
        self._levels.apply(dict(settings.log_levels))
        log.debug("shim settings applied: %s", settings)
