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

import pykka

from actors import loglevels
from actors.base import record
from actors.shim.client import DEFAULT_BURST, DEFAULT_QPS, KubeClient
from actors.shim.messages import InstanceTypeLabel, VolumeBindTimeout
from actors.shim.placeholders import DEFAULT_IMAGE, DEFAULT_MAX_PER_GANG, PlaceholderSettings
from actors.shim.volumes import DEFAULT_BIND_TIMEOUT
from si import settings as registry
from si.bounded import shown

log = logging.getLogger(__name__)

_SETTINGS = {s.name: s for s in registry.read_by(registry.SHIM) if s.name}
QPS, BURST = _SETTINGS["qps"].key, _SETTINGS["burst"].key
INSTANCE_TYPE_KEYS = _SETTINGS["instance_type_label"].keys
DEFAULT_INSTANCE_TYPE_LABEL = _SETTINGS["instance_type_label"].default
DISABLE_GANG, PLACEHOLDER_IMAGE = _SETTINGS["disabled"].key, _SETTINGS["image"].key
PLACEHOLDER_IDS = {s.key: s.name for s in _SETTINGS.values() if s.kind == "id"}
VOLUME_BIND_TIMEOUT = _SETTINGS["volume_bind_timeout"].key
MAX_PLACEHOLDERS = _SETTINGS["max_per_gang"].key


@record
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
        if extra.get(key, "").strip():
            ids[field] = _read(extra, key, "is not a user or group id (a whole number of at least 0)")
    disabled = _read(extra, DISABLE_GANG, "is not true or false") if DISABLE_GANG in extra else False
    return PlaceholderSettings(image=image, disabled=disabled,
                               max_per_gang=_number(extra, MAX_PLACEHOLDERS, DEFAULT_MAX_PER_GANG, int), **ids)


def _duration(extra: Mapping[str, str], key: str, default: float) -> float:
    """A positive Go duration (``30s``, ``1m30s``, ``10m``)."""
    if not extra.get(key, "").strip():
        return default
    return _read(extra, key, "is not a positive duration such as 30s or 10m")


def _number(extra: Mapping[str, str], key: str, default, kind):
    if not extra.get(key, "").strip():
        return default
    return _read(extra, key, f"is not a positive {'integer' if kind is int else 'number'}")


def _read(extra: Mapping[str, str], key: str, refusal: str):
    """``extra[key]`` read as the registry declares it; ``ValueError`` naming the key and the value."""
    try:
        return registry.read(registry.BY_KEY[key], extra[key])
    except ValueError:
        raise ValueError(f"{key}: {shown(extra[key].strip())} {refusal}") from None


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
