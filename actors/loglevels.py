"""Log levels set in the scheduler's configmaps: ``log.level`` and ``log.<subsystem>.level``.

Upstream names its loggers by subsystem (``core.scheduler``, ``shim.context``...) and reads a level per
subsystem; a subsystem without one takes its parent's (``log.core.level`` covers ``core.scheduler``),
and ``log.level`` covers everything. This scheduler's loggers are its modules, so each upstream
subsystem maps to the modules that do its work (``SUBSYSTEMS``). Levels are upstream's names or numbers:
``debug``/``-1``, ``info``/``0``, ``warn``/``1``, ``error``/``2``, ``dpanic``/``3``, ``panic``/``4``,
``fatal``/``5``. A logger whose key is removed goes back to inheriting (from ``--log-level`` at the
top).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from si.bounded import shown

# upstream subsystem -> this scheduler's loggers (module names)
SUBSYSTEMS: Mapping[str, tuple[str, ...]] = {
    "": ("actors", "rest"),
    "core": ("actors.core",),
    "core.scheduler": ("actors.core.scheduler", "actors.core.partition"),
    "core.scheduler.application": ("actors.core.application",),
    "core.scheduler.node": ("actors.core.node",),
    "core.scheduler.queue": ("actors.core.queue",),
    "core.scheduler.placement": ("actors.core.placement",),
    "core.scheduler.ugm": ("actors.core.ugm",),
    "core.scheduler.health": ("actors.core.health",),
    "core.config": ("actors.core.config", "actors.core.settings"),
    "core.events": ("actors.core.events",),
    "core.security": ("actors.core.acl", "actors.core.usergroups"),
    "core.rest": ("rest",),
    "core.metrics": ("rest.metrics", "rest.actor_metrics"),
    "shim": ("actors.shim",),
    "shim.context": ("actors.shim.context",),
    "shim.cache.application": ("actors.shim.appactor",),
    "shim.cache.node": ("actors.shim.nodeactor", "actors.shim.nodes"),
    "shim.client": ("actors.shim.client", "actors.shim.transport", "actors.shim.informer"),
    "shim.config": ("actors.shim.schedconfig", "actors.shim.settings"),
    "shim.dispatcher": ("actors.shim.outlet", "actors.dispatch"),
    "shim.rmcallback": ("actors.shim.corelink",),
    "shim.predicates": ("actors.shim.predicates", "actors.shim.constraints"),
    "shim.scheduler": ("actors.shim.service", "actors.shim.binder"),
    "shim.events": ("actors.shim.recorder",),
}
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR,
           "dpanic": logging.CRITICAL, "panic": logging.CRITICAL, "fatal": logging.CRITICAL}
_NUMBERS = dict(zip(("-1", "0", "1", "2", "3", "4", "5"), _LEVELS.values(), strict=True))


def subsystem(key: str) -> str | None:
    """The upstream subsystem a ``log.*`` key sets ("" for ``log.level``); None for any other key."""
    if key == "log.level":
        return ""
    if key.startswith("log.") and key.endswith(".level"):
        return key[len("log."):-len(".level")]
    return None


def known(key: str) -> bool:
    return subsystem(key) in SUBSYSTEMS


def parse(extra: Mapping[str, str]) -> dict[str, int]:
    """Logger name -> level for the known ``log.*`` keys of ``extra``; ValueError naming a bad level."""
    levels: dict[str, int] = {}
    for key in sorted((k for k in extra if known(k)), key=_depth):  # a child's level wins over its parent's
        text = extra[key].strip()
        level = _LEVELS.get(text.lower(), _NUMBERS.get(text))
        if level is None:
            raise ValueError(f"{key}: {shown(text)} is not a log level (debug, info, warn, error, dpanic, "
                             "panic, fatal or -1 to 5)")
        for logger in SUBSYSTEMS[subsystem(key)]:
            levels[logger] = level
    return levels


def _depth(key: str) -> int:
    name = subsystem(key)
    return name.count(".") + 1 if name else 0


class LogLevels:
    """Applies parsed levels, resetting the loggers a previous configuration set and this one does not."""

    def __init__(self) -> None:
        self._set: set[str] = set()

    def apply(self, levels: Mapping[str, int]) -> None:
        for name in self._set - set(levels):
            logging.getLogger(name).setLevel(logging.NOTSET)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        self._set = set(levels)
